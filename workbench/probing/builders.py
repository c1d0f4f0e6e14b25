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
from __future__ import annotations

import string
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from ..checks import check_name
from ..data.tokenizer import detokenise
from .morphology import FEATURES, japanese_predicate, japanese_words, turkish_predicates
from .parse import parse
from .trees import (depth_below, finite_tense, parsed_sentences, recased, root_of, single_rooted, top_sequence,
                    ud_number)

# The paper's punctuation set (fn. 13): ASCII punctuation plus typographic quotes and dashes.
PUNCTUATION = frozenset(string.punctuation) | frozenset("‘’‚‛“”„‟«»‹›–—―‐‑‒…")
OWN_MARKS = {"es": "¿¡", "ar": "،؛؟", "ja": "。、！？「」『』（）・〜：；"}  # a language's marks beyond the shared ones


def punctuation(language: str) -> frozenset[str]:
    """The punctuation characters of ``language``'s sentences: the shared set and the language's own marks
    (Spanish opening marks, Arabic comma and question mark, Japanese full-width marks)."""
    return PUNCTUATION | frozenset(OWN_MARKS.get(language, ""))
FINAL_MARKS = (".", "?", "!")
CLAUSE_JOINTS = (",", ";", "--", "—", "–")  # punctuation that joins two coordinated clauses

Candidate = tuple[str, str, str]  # label, sentence, label word ("" when none)
Builder = Callable[..., list[Candidate]]
BUILDERS: dict[str, Builder] = {}
PARSING: set[str] = set()  # the builders that read dependency parses (their pool is parsed once, then cached)
VERSIONS: dict[str, int] = {}  # each builder's version: part of its builds' cache key


def builder(fn: Builder | None = None, *, parses: bool = False, version: int = 8):
    """Register a builder under its function name (the ``builder`` field of a task card); ``parses``: it reads
    the pool's dependency parses. ``version``: bump it when a change alters what the builder gives, so that its
    tasks' stored builds (and only theirs) are built again; a change to the shared selection
    (:func:`workbench.probing.build.select`) bumps every builder's. (8: the version every builder shared before
    versions were kept per builder.)"""
    def register(fn: Builder) -> Builder:
        BUILDERS[fn.__name__] = fn
        VERSIONS[fn.__name__] = version
        if parses:
            PARSING.add(fn.__name__)
        return fn
    return register(fn) if fn is not None else register


def _is_punct(token: str, marks: frozenset[str] = PUNCTUATION) -> bool:
    return all(ch in marks for ch in token)


SEGMENTED = {"word_content", "bigram_shift"}  # builders that read words: Japanese ones need Sudachi to find them


def reads_morphology(builder: str, language: str) -> bool:
    """Whether ``builder`` on ``language`` needs the morphological analyser (:mod:`.morphology`)."""
    return builder == "final_predicate" or (builder in SEGMENTED and language == "ja")


def _in_words(sentences: Sequence[str], language: str) -> list[str]:
    """The sentences as space-separated words: as they are, except Japanese (written without spaces; Moses leaves
    runs of kana whole and splits kanji one by one), which Sudachi segments into words."""
    if language != "ja":
        return list(sentences)
    return [" ".join(japanese_words(detokenise(s))) for s in sentences]


# --- surface tasks -------------------------------------------------------------------------------------------

@builder
def length_bins(sentences: Sequence[str], language: str, bins: Sequence[Sequence[int]], unit: str = "tokens"
                ) -> list[Candidate]:
    """SentLen: label = index of the bin holding the length; sentences outside all bins dropped. ``unit``:
    ``"tokens"`` (Moses tokens) or ``"characters"`` (letters, no spaces or punctuation: a language written
    without spaces between words, as Japanese)."""
    check_name("length unit", unit, ("tokens", "characters"))
    marks = punctuation(language)
    out = []
    for s in sentences:
        n = len(s.split()) if unit == "tokens" else sum(not ch.isspace() and ch not in marks for ch in s)
        for label, (low, high) in enumerate(bins):
            if low <= n <= high:
                out.append((str(label), s, ""))
                break
    return out


@builder
def punct_count(sentences: Sequence[str], language: str, max_label: int = 11) -> list[Candidate]:
    """PunctNum: number of punctuation characters, ``max_label`` meaning "that many or more"; none = dropped."""
    marks, out = punctuation(language), []
    for s in sentences:
        n = sum(ch in marks for ch in s)
        if n:
            out.append((str(n) if n < max_label else f"{max_label}+", s, ""))
    return out


@builder
def punct_first(sentences: Sequence[str], language: str, marks: Sequence[str]) -> list[Candidate]:
    """PunctFirst: the first punctuation character; marks not in ``marks`` fold into ``other``; none = dropped."""
    punct, out = punctuation(language), []
    for s in sentences:
        first = next((ch for ch in s if ch in punct), None)
        if first is not None:
            out.append((first if first in marks else "other", s, first))
    return out


@builder
def word_content(sentences: Sequence[str], language: str, first_rank: int, n_words: int) -> list[Candidate]:
    """WordContent: target words are the ``n_words`` alphabetic words from frequency rank ``first_rank`` on;
    a sentence qualifies when it holds exactly one occurrence of exactly one target; the label is that word."""
    sentences = _in_words(sentences, language)
    counts = Counter(t for s in sentences for t in s.lower().split() if t.isalpha())
    ranked = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    targets = set(ranked[first_rank:first_rank + n_words])
    out = []
    for s in sentences:
        hits = [t for t in s.lower().split() if t in targets]
        if len(hits) == 1:
            out.append((hits[0], s, hits[0]))
    return out


@builder
def bigram_shift(sentences: Sequence[str], language: str, seed: int = 0) -> list[Candidate]:
    """BShift: of the sentences where two adjacent word tokens can be swapped, half (chosen at random) get such a
    swap (``I``) and the rest stay intact (``O``); the final punctuation never moves. Sentences without a
    possible swap are left out of both classes, so the classes differ in the swap alone."""
    rng, marks = np.random.default_rng(seed), punctuation(language)
    out = []
    for s in _in_words(sentences, language):
        tokens = s.split()
        spots = [i for i in range(len(tokens) - 1)
                 if not _is_punct(tokens[i], marks) and not _is_punct(tokens[i + 1], marks)
                 and tokens[i].lower() != tokens[i + 1].lower()]
        if not spots:
            continue
        i = spots[rng.integers(len(spots))]
        if rng.integers(2):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
            out.append(("I", " ".join(tokens), tokens[i]))
        else:
            out.append(("O", s, tokens[i]))
    return out


# --- parse-based tasks ---------------------------------------------------------------------------------------

@builder(parses=True)
def dependency_depth(sentences: Sequence[str], language: str, min_depth: int, max_depth: int,
                     length_bin: int = 4, min_cell: int = 20) -> list[Candidate]:
    """TreeDepth (*dependency analogue*): nodes on the longest root-to-leaf path of the dependency tree,
    ``max_depth`` meaning "that or deeper"; shallower than ``min_depth`` dropped. Decorrelated from length as
    SentEval did: within each band of ``length_bin`` tokens, every depth class with at least ``min_cell``
    sentences is cut to the size of the smallest, so length alone cannot tell the depth."""
    cells: dict[tuple[int, str], list[tuple[str, str]]] = defaultdict(list)
    for doc in parsed_sentences(sentences, language):
        root = root_of(doc)
        depth = depth_below(root)
        if depth >= min_depth:
            label = str(depth) if depth < max_depth else f"{max_depth}+"
            cells[(len(doc) // length_bin, label)].append((doc.text, root.text))
    out = []
    for band in sorted({band for band, _ in cells}):
        kept = {label: items for (b, label), items in cells.items() if b == band and len(items) >= min_cell}
        if len(kept) >= 2:
            size = min(len(items) for items in kept.values())
            out += [(label, s, root) for label, items in sorted(kept.items()) for s, root in items[:size]]
    return out


@builder(parses=True)
def top_constituents(sentences: Sequence[str], language: str, n_classes: int) -> list[Candidate]:
    """TopConst (*dependency analogue*): :func:`top_sequence`; the ``n_classes - 1`` most frequent sequences
    are labels, every other sequence is ``OTHER``."""
    docs = parsed_sentences(sentences, language)
    sequences = [top_sequence(doc) for doc in docs]
    frequent = {seq for seq, _ in Counter(sequences).most_common(n_classes - 1)}
    return [(seq if seq in frequent else "OTHER", doc.text, root_of(doc).text) for seq, doc in zip(sequences, docs)]


@builder(parses=True)
def main_tense(sentences: Sequence[str], language: str) -> list[Candidate]:
    """Tense: ``PAST`` when the main verb (the root, or its first finite auxiliary when the root is
    non-finite) is VBD, ``PRES`` for VBZ/VBP; modal, imperative and verbless sentences dropped."""
    out = []
    for doc in parsed_sentences(sentences, language):
        root = root_of(doc)
        tense = finite_tense(root)
        if tense:
            out.append((tense, doc.text, root.text))
    return out


def _argument_number(sentences, language, relations) -> list[Candidate]:
    out = []
    for doc in parsed_sentences(sentences, language):
        root = root_of(doc)
        argument = next((c for c in root.children if c.dep_ in relations), None)
        if argument is not None and argument.tag_ in ("NN", "NNS"):
            out.append((argument.tag_, doc.text, argument.text))
    return out


@builder(parses=True)
def subject_number(sentences: Sequence[str], language: str) -> list[Candidate]:
    """SubjNum: the tag (NN/NNS) of the main clause's subject; pronoun and proper-noun subjects dropped."""
    return _argument_number(sentences, language, ("nsubj", "nsubjpass"))


@builder(parses=True)
def object_number(sentences: Sequence[str], language: str) -> list[Candidate]:
    """ObjNum: the tag (NN/NNS) of the main clause's direct object; pronoun and proper-noun objects dropped."""
    return _argument_number(sentences, language, ("dobj",))


@builder(parses=True)
def argument_number_ud(sentences: Sequence[str], language: str, relation: str) -> list[Candidate]:
    """SubjNum/ObjNum for a language whose pipeline tags Universal Dependencies (fr, es): the number (``Sing`` /
    ``Plur``, the pipeline's UD morphology) of the common noun that is the main clause's ``relation`` (``nsubj`` or
    ``obj``); pronoun and proper-noun arguments dropped, as in English."""
    out = []
    for doc in parsed_sentences(sentences, language):
        argument = next((c for c in root_of(doc).children if c.dep_ == relation), None)
        if argument is not None and argument.pos_ == "NOUN" and ud_number(argument):
            out.append((ud_number(argument), doc.text, argument.text))
    return out


@builder(parses=True)
def coordination_inversion(sentences: Sequence[str], language: str, seed: int = 0) -> list[Candidate]:
    """CoordInv: sentences made of two coordinated clauses, each with its own subject ("clause1 cc clause2 .");
    half of them (chosen at random) become "clause2 cc clause1 ." (``I``), the rest stay intact (``O``). A comma
    or dash before the conjunction stays before it, so punctuation does not tell the classes apart."""
    rng = np.random.default_rng(seed)
    out = []
    for doc in parsed_sentences(sentences, language):
        root = root_of(doc)
        cc = next((c for c in root.children if c.dep_ == "cc"), None)
        conj = next((c for c in root.children if c.dep_ == "conj" and c.pos_ in ("VERB", "AUX")), None)
        if cc is None or conj is None or not any(c.dep_ in ("nsubj", "nsubjpass") for c in conj.children):
            continue
        tokens = [t.text for t in doc]
        end = len(tokens) - 1 if tokens[-1] in FINAL_MARKS else len(tokens)
        if not (cc.i + 1 == conj.left_edge.i and conj.right_edge.i >= end - 1 and root.left_edge.i == 0):
            continue
        first, second = tokens[:cc.i], tokens[cc.i + 1:end]
        joint = first[-1:] if first and first[-1] in CLAUSE_JOINTS else []  # stays before the conjunction:
        first = first[:len(first) - len(joint)]  # moved with its clause, it would tell inverted sentences apart
        if len(first) < 2 or len(second) < 2:
            continue
        if rng.integers(2):
            inverted = recased(second, True) + joint + [tokens[cc.i]] + recased(first, False) + tokens[end:]
            out.append(("I", " ".join(inverted), root.text))
        else:
            out.append(("O", doc.text, root.text))
    return out


@builder(parses=True)
def odd_man_out(sentences: Sequence[str], language: str, tolerance: float = 0.1, seed: int = 0
                ) -> list[Candidate]:
    """SOMO (*frequency-matched analogue*; SentEval also filtered with a language model, which we lack): of the
    sentences where one noun or verb can be replaced by another word with the same tag, a pool frequency
    within ±``tolerance`` and both new bigrams attested in the pool, half (chosen at random) get that
    replacement (``C``) and the rest stay intact (``O``). Sentences without a possible replacement are left out
    of both classes, so the classes differ in the replacement alone."""
    rng = np.random.default_rng(seed)
    docs = parse(sentences, language)  # frequencies and bigrams from the whole pool
    lowered = [[t.text.lower() for t in doc] for doc in docs]
    counts = Counter(word for words in lowered for word in words)
    after: dict[str, set[str]] = defaultdict(set)  # the attested bigrams, as each word's followers
    for words in lowered:
        for a, b in zip(words, words[1:]):
            after[a].add(b)
    tag_of: dict[str, Counter] = defaultdict(Counter)
    for doc in docs:
        for t in doc:
            if t.pos_ in ("NOUN", "VERB") and t.text.isalpha():
                tag_of[t.text.lower()][t.tag_] += 1
    tag_words: dict[str, set[str]] = defaultdict(set)
    for word, tags in tag_of.items():
        tag_words[tags.most_common(1)[0][0]].add(word)
    out = []
    for doc in single_rooted(docs):
        spots = [t for t in doc if t.pos_ in ("NOUN", "VERB") and t.text.isalpha() and 0 < t.i < len(doc) - 1]
        rng.shuffle(spots)
        change = None
        for t in spots:
            word, words, freq = t.text.lower(), tag_words.get(t.tag_, set()), counts[t.text.lower()]
            low, high = (int(freq * (1 - tolerance)), ""), (int(freq * (1 + tolerance)), "\uffff")
            left, right = doc[t.i - 1].text.lower(), doc[t.i + 1].text.lower()
            # the words after ``left`` (few) that have the tag, the frequency band and ``right`` after them, in
            # (frequency, word) order, so the random pick among them does not depend on set order
            options = [w for _, w in sorted((counts[w], w) for w in after[left] & words
                                            if w != word and low <= (counts[w], w) <= high and right in after[w])]
            if options:
                change = (t.i, options[rng.integers(len(options))])
                break
        if change is None:
            continue
        if rng.integers(2):
            tokens = [x.text for x in doc]
            tokens[change[0]] = change[1]
            out.append(("C", " ".join(tokens), change[1]))
        else:
            out.append(("O", doc.text, doc[change[0]].text))
    return out


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


@builder
def language_identity(pairs: Sequence[tuple[str, str]], language: str, seed: int = 0) -> list[Candidate]:
    """LanguageID (a pair's task, ``language = "en-xx"``): each held-out translation pair gives *one* of its two
    sentences, chosen at random, labelled with that sentence's language — so no meaning appears in both classes
    (or in two splits), and a probe cannot tell the languages apart by content. Read from no single word."""
    first, second = language.split("-")
    rng = np.random.default_rng(seed)
    return [(second, foreign, "") if rng.integers(2) else (first, english, "") for english, foreign in pairs]


# Article swaps for the Gender task (BGT paper §5.2): masculine ↔ feminine counterpart.
ARTICLE_SWAPS = {"fr": {"le": "la", "la": "le", "un": "une", "une": "un"},
                 "es": {"el": "la", "la": "el", "los": "las", "las": "los"}}


@builder(parses=True)
def article_gender(sentences: Sequence[str], language: str, seed: int = 0) -> list[Candidate]:
    """Gender: sentences with a definite/indefinite article — a DET attached as ``det`` to a following noun,
    adjective or numeral, so clitic pronouns (which fr_core_news_sm sometimes tags DET) are not touched;
    half of them (chosen at random) get one article swapped with its other-gender form (``incorrect``), the
    rest stay intact (``correct``). Capitalisation is preserved."""
    if language not in ARTICLE_SWAPS:
        raise ValueError(f"the Gender task exists for {', '.join(ARTICLE_SWAPS)}, not {language!r}")
    swaps = ARTICLE_SWAPS[language]
    rng = np.random.default_rng(seed)
    out = []
    for doc in parsed_sentences(sentences, language):
        articles = [t for t in doc if t.pos_ == "DET" and t.dep_ == "det" and t.text.lower() in swaps
                    and t.head.i > t.i and t.head.pos_ in ("NOUN", "PROPN", "ADJ", "NUM")]
        if not articles:
            continue
        t = articles[rng.integers(len(articles))]
        if not rng.integers(2):
            out.append(("correct", doc.text, t.text))
            continue
        swapped = swaps[t.text.lower()]
        if t.text[:1].isupper():
            swapped = swapped[:1].upper() + swapped[1:]
        tokens = [x.text for x in doc]
        tokens[t.i] = swapped
        out.append(("incorrect", " ".join(tokens), swapped))
    return out
