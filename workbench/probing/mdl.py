"""Minimum description length probing with the online code (Voita & Titov 2020).

The labels are transmitted block by block: the first block with the uniform code (log2 K bits per label), every
later block with a probe trained on all earlier blocks, costing −log2 p(y | x) bits per label. The total is the
online codelength; *compression* = uniform codelength / online codelength (1 = nothing learnt).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# The paper's block boundaries, as fractions of the training set (0.1% … 100%).
FRACTIONS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)


def block_probabilities(probe, X: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """(n, len(classes)) probabilities that sum to one over *all* ``classes`` (sorted): the probe's, which
    knows only the labels it was fitted on, mixed with the uniform code in the share of labels it has not seen,
    ``(1 - u/K) · probe + (u/K) · 1/K`` — so an unseen label costs ``log2(K² / u)`` bits, and a probe that has
    seen every label is used as it is."""
    full = np.zeros((len(X), len(classes)))
    full[:, np.searchsorted(classes, probe.classes_)] = probe.predict_proba(X)
    unseen = (len(classes) - len(probe.classes_)) / len(classes)
    return (1 - unseen) * full + unseen / len(classes)


def online_codelength(make_probe: Callable[[], object], X: np.ndarray, y: np.ndarray,
                      fractions: Sequence[float] = FRACTIONS, seed: int = 0) -> dict[str, float]:
    """Online codelength (bits) of ``y`` given ``X``, the uniform codelength and their ratio.

    ``make_probe()`` returns an unfitted estimator with ``fit(X, y)`` and ``predict_proba``; the data are
    shuffled once with ``seed``; labels unseen in the earlier blocks are coded as :func:`block_probabilities`
    says.
    """
    order = np.random.default_rng(seed).permutation(len(y))
    X, y = X[order], np.asarray(y)[order]
    classes = np.unique(y)
    uniform_bits = np.log2(len(classes))
    ends = sorted({max(2, int(round(f * len(y)))) for f in fractions} | {len(y)})
    bits = ends[0] * uniform_bits
    for start, end in zip(ends, ends[1:]):
        if len(np.unique(y[:start])) < 2:
            bits += (end - start) * uniform_bits
            continue
        probe = make_probe().fit(X[:start], y[:start])
        proba = block_probabilities(probe, X[start:end], classes)
        p = proba[np.arange(end - start), np.searchsorted(classes, y[start:end])]
        bits += float(-np.log2(np.clip(p, 1e-12, 1.0)).sum())
    uniform = len(y) * uniform_bits
    return {"online_bits": bits, "uniform_bits": uniform, "compression": uniform / bits}
