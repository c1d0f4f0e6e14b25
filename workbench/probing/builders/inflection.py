"""The morphological analysers' task: a head-final language's final predicate, as Sudachi (Japanese) or Zeyrek
(Turkish) reads it."""
from __future__ import annotations

from collections.abc import Sequence

from ...checks import check_name
from ...data.tokenizer import detokenise
from ..morphology import FEATURES, japanese_predicate, turkish_predicates
from .registry import Candidate, builder

@builder
def final_predicate(sentences: Sequence[str], language: str, feature: str, values: Sequence[str] = ()
                    ) -> list[Candidate]:
    """Tense (ja, tr), Person (tr) or Politeness (ja) of a head-final language's main clause, read from its final
    predicate by the language's morphological analyser (:mod:`.morphology`): ``PAST``/``PRES``, the subject's person
    ``1``/``2``/``3`` as the verb agrees, ``polite`` (です/ます) or ``plain``. Sentences whose predicate has no such
    value (a fragment, a future, an imperative) or that the analyser reads two ways are dropped. The label word is
    the predicate's lemma, so a lexical split puts every form of a verb in one split. ``values``: only these
    labels (e.g. leaving out a person too rare to balance); empty: all."""
    check_name("morphological feature", feature, FEATURES)
    if language not in ("ja", "tr"):
        raise ValueError(f"final_predicate reads Japanese or Turkish, not {language!r}")
    if language == "ja":
        predicates = [japanese_predicate(detokenise(s)) for s in sentences]
    else:
        finals = [next((t for t in reversed(s.split()) if any(ch.isalpha() for ch in t)), "") for s in sentences]
        words = sorted(set(finals) - {""})
        read = dict(zip(words, turkish_predicates(words)))
        predicates = [read.get(word) for word in finals]
    out = []
    for s, predicate in zip(sentences, predicates):
        label = FEATURES[feature](predicate) if predicate is not None else None
        if label is not None and (not values or label in values):
            out.append((label, s, predicate.lemma))
    return out
