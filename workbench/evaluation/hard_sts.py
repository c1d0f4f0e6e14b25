"""Hard STS (BGT paper §4.3, App. D; docs/method.md#hard-sts): pairs whose wording and meaning disagree.

``SWER(s1, s2) = ½·WER(s1→s2) + ½·WER(s2→s1)`` with ``WER(a→b) = word-Levenshtein(a, b) / len(a)`` on
lower-cased tokens with punctuation split off. Over the pooled STS 2012–16 pairs, Hard+ = SWER percentile
≥ 80 and gold in [4, 5] (different words, same meaning); Hard− = percentile ≤ 20 and gold in [0, 1] (shared
words, different meaning). The negation split keeps pairs where exactly one sentence has "not", "cannot" or
"n't" (also written with a typographic apostrophe).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

_TOKEN = re.compile(r"\w+|[^\w\s]")


def words(sentence: str) -> list[str]:
    """Lower-cased word and punctuation tokens."""
    return _TOKEN.findall(sentence.lower())


def edit_distance(a: list[str], b: list[str]) -> int:
    """Word-level Levenshtein distance (insertions, deletions, substitutions all cost 1)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def wer(a: str, b: str) -> float:
    """Word error rate of ``b`` against reference ``a``: edits / len(a)."""
    ref, hyp = words(a), words(b)
    return edit_distance(ref, hyp) / max(len(ref), 1)


def swer(a: str, b: str) -> float:
    """Symmetric WER: the mean of both directions."""
    return 0.5 * wer(a, b) + 0.5 * wer(b, a)


def hard_splits(pool: pd.DataFrame, high: float = 80.0, low: float = 20.0) -> dict[str, pd.DataFrame]:
    """Hard+ and Hard− of a ``score, sentence1, sentence2`` pool, with ``swer`` and ``percentile`` columns."""
    pool = pool.copy()
    pool["swer"] = [swer(a, b) for a, b in zip(pool["sentence1"], pool["sentence2"])]
    pool["percentile"] = 100.0 * pool["swer"].rank(method="max") / len(pool)
    return {"hard+": pool[(pool["percentile"] >= high) & (pool["score"] >= 4)],
            "hard-": pool[(pool["percentile"] <= low) & (pool["score"] <= 1)]}


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})


def has_negation(sentence: str) -> bool:
    """Whether ``sentence`` says "not", "cannot" or a "n't" contraction (typographic apostrophes included)."""
    text = sentence.lower().translate(_APOSTROPHES)
    return "n't" in text or not {"not", "cannot"}.isdisjoint(words(text))


def negation_split(pool: pd.DataFrame) -> pd.DataFrame:
    """Pairs where exactly one of the two sentences contains a negation (:func:`has_negation`)."""
    one = np.array([has_negation(a) != has_negation(b) for a, b in zip(pool["sentence1"], pool["sentence2"])])
    return pool[one] if len(pool) else pool
