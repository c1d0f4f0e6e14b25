"""Surface tasks: read from the tokens alone (length, punctuation, which words, word order) or, for a pair's
LanguageID, from which side of a translation pair a sentence is."""
from __future__ import annotations

import string
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ...checks import check_name
from ...data.tokenizer import detokenise
from ..morphology import japanese_words
from .registry import Candidate, builder

# The paper's punctuation set (fn. 13): ASCII punctuation plus typographic quotes and dashes.
PUNCTUATION = frozenset(string.punctuation) | frozenset("‘’‚‛“”„‟«»‹›–—―‐‑‒…")
OWN_MARKS = {"es": "¿¡", "ar": "،؛؟", "ja": "。、！？「」『』（）・〜：；"}  # a language's marks beyond the shared ones


def punctuation(language: str) -> frozenset[str]:
    """The punctuation characters of ``language``'s sentences: the shared set and the language's own marks
    (Spanish opening marks, Arabic comma and question mark, Japanese full-width marks)."""
    return PUNCTUATION | frozenset(OWN_MARKS.get(language, ""))


def _is_punct(token: str, marks: frozenset[str] = PUNCTUATION) -> bool:
    return all(ch in marks for ch in token)


def _in_words(sentences: Sequence[str], language: str) -> list[str]:
    """The sentences as space-separated words: as they are, except Japanese (written without spaces; Moses leaves
    runs of kana whole and splits kanji one by one), which Sudachi segments into words."""
    if language != "ja":
        return list(sentences)
    return [" ".join(japanese_words(detokenise(s))) for s in sentences]


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


@builder
def language_identity(pairs: Sequence[tuple[str, str]], language: str, seed: int = 0) -> list[Candidate]:
    """LanguageID (a pair's task, ``language = "en-xx"``): each held-out translation pair gives *one* of its two
    sentences, chosen at random, labelled with that sentence's language — so no meaning appears in both classes
    (or in two splits), and a probe cannot tell the languages apart by content. Read from no single word."""
    first, second = language.split("-")
    rng = np.random.default_rng(seed)
    return [(second, foreign, "") if rng.integers(2) else (first, english, "") for english, foreign in pairs]
