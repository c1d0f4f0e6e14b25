"""Paired bootstrap resampling between two encoders scored on the same STS pairs (Koehn 2004 style)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class BootstrapResult:
    difference: float  # Pearson(a) − Pearson(b) on all pairs, × 100
    ci_low: float
    ci_high: float
    p_value: float  # two-sided: how often the resampled difference falls on the other side of zero, × 2
    n_boot: int


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row of x (B, n) with the matching row of y (B, n)."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    denominator = np.sqrt((x * x).sum(1) * (y * y).sum(1))
    return np.divide((x * y).sum(1), denominator, out=np.zeros(len(x)), where=denominator > 0)


def paired_bootstrap(gold: np.ndarray, sims_a: np.ndarray, sims_b: np.ndarray, n_boot: int = 2000,
                     seed: int = 0, chunk: int = 250) -> BootstrapResult:
    """Resample the pairs with replacement; compare the two systems' Pearson r on the same resample."""
    gold, sims_a, sims_b = (np.asarray(v, dtype=np.float64) for v in (gold, sims_a, sims_b))
    if not (len(gold) == len(sims_a) == len(sims_b)) or len(gold) < 3:
        raise ValueError("gold and both similarity vectors need the same length (at least 3 pairs)")
    rng = np.random.default_rng(seed)
    diffs = []
    for start in range(0, n_boot, chunk):
        index = rng.integers(0, len(gold), size=(min(chunk, n_boot - start), len(gold)))
        diffs.append(_pearson_rows(sims_a[index], gold[index]) - _pearson_rows(sims_b[index], gold[index]))
    diffs = 100 * np.concatenate(diffs)
    observed = 100 * float(_pearson_rows(sims_a[None], gold[None])[0] - _pearson_rows(sims_b[None], gold[None])[0])
    low, high = np.percentile(diffs, [2.5, 97.5])
    other_side = np.mean(diffs <= 0) if observed > 0 else np.mean(diffs >= 0)
    return BootstrapResult(observed, float(low), float(high), float(min(1.0, 2 * other_side)), n_boot)
