"""Task builders: each turns probe-pool sentences into ``(label, sentence, word)`` candidates (docs/probing.md#cards).

Every builder receives the pool Moses-tokenised (tokens joined by spaces, case kept, as in SentEval's files) and
the card's language and parameters, and returns sentences in the same form; :mod:`.build` detokenises them,
then caps, balances and splits the candidates. (A pair's task, ``language = "en-xx"``, receives the pair's
held-out translation pairs as they are and returns raw sentences.) ``word`` is the token the label is read
from (the subject head for SubjNum, the main verb for Tense, the root that TreeDepth and TopConst read the tree
from, …), as it appears in the returned sentence: the control task (:mod:`.control`) gives each such word type
a random label. Length and PunctNum are read from no word; they return ``""`` and their control keys on the
first word instead. Builders that change a sentence (BShift, CoordInv, SOMO, Gender) use each source sentence
once, either intact or changed, so a pair of near-identical sentences never straddles the splits. Builders
marked *analogue* approximate a SentEval task with a dependency parse (no offline constituency parser exists
here) or without SentEval's language model; their cards say so. Sentences the parser splits into several
sentences are left out of the parse-based tasks.
"""
from .registry import BUILDERS, PARSING, VERSIONS, Builder, Candidate, builder, reads_morphology
from .surface import punctuation
from . import inflection, surface, syntax  # each family registers its builders on import

__all__ = ["inflection", "surface", "syntax", "BUILDERS", "PARSING", "VERSIONS", "Builder", "Candidate", "builder",
           "punctuation", "reads_morphology"]
