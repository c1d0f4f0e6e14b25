"""Paired bootstrap resampling between two encoders scored on the same STS pairs (Koehn 2004 style)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import WorkbenchError, whole


@dataclass
class BootstrapResult:
    difference: float  # Pearson(a) − Pearson(b) (mean over groups), × 100
    ci_low: float
    ci_high: float
    p_value: float  # two-sided: how often the resampled difference falls on the other side of zero, × 2
    n_boot: int


MAX_BOOT = 1_000_000  # resamples: far past where the p-value's third digit settles


def check_n_boot(n_boot) -> int:
    """``n_boot`` if it is a whole number of at least 100 resamples, else a clear error."""
    if not whole(n_boot, 100, MAX_BOOT):
        raise WorkbenchError(f"n_boot must be a whole number of resamples from 100 to {MAX_BOOT:,} (got {n_boot}); "
                             "2000 is the default")
    return n_boot


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row of x (B, n) with the matching row of y (B, n)."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    denominator = np.sqrt((x * x).sum(1) * (y * y).sum(1))
    return np.divide((x * y).sum(1), denominator, out=np.zeros(len(x)), where=denominator > 0)


def _resampled_differences(gold, sims_a, sims_b, n_boot, rng, chunk) -> np.ndarray:
    diffs = []
    for start in range(0, n_boot, chunk):
        index = rng.integers(0, len(gold), size=(min(chunk, n_boot - start), len(gold)))
        diffs.append(_pearson_rows(sims_a[index], gold[index]) - _pearson_rows(sims_b[index], gold[index]))
    return 100 * np.concatenate(diffs)


def bootstrap_differences(gold, sims_a, sims_b, groups=None, n_boot: int = 2000, seed: int = 0,
                          chunk: int = 250) -> tuple[float, np.ndarray]:
    """The observed difference Pearson(a) − Pearson(b) (× 100) and its ``n_boot`` paired resamples.

    With ``groups`` (a dataset label per pair) the statistic is the mean over groups of the per-group Pearson
    r — how STS years are reported — and pairs are resampled within their group.
    """
    check_n_boot(n_boot)
    gold, sims_a, sims_b = (np.asarray(v, dtype=np.float64) for v in (gold, sims_a, sims_b))
    if not (len(gold) == len(sims_a) == len(sims_b)) or len(gold) < 3:
        raise ValueError("gold and both similarity vectors need the same length (at least 3 pairs)")
    groups = np.zeros(len(gold), dtype=int) if groups is None else np.asarray(groups)
    if len(groups) != len(gold):
        raise ValueError(f"groups has {len(groups)} labels for {len(gold)} pairs")
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(groups == g) for g in dict.fromkeys(groups.tolist())]
    diffs = np.mean([_resampled_differences(gold[m], sims_a[m], sims_b[m], n_boot, rng, chunk)
                     for m in members], axis=0)
    observed = 100 * float(np.mean([_pearson_rows(sims_a[None, m], gold[None, m])[0]
                                    - _pearson_rows(sims_b[None, m], gold[None, m])[0] for m in members]))
    return observed, diffs


def p_text(p: float, n_boot: int) -> str:
    """A bootstrap p-value as it may be read: below the test's resolution (no resample, or one, crossed zero) it
    is ``< 2/n_boot`` (``< 0.001`` for 2000 resamples), never ``0``."""
    floor = 2 / n_boot
    return f"< {floor:.2g}" if p < floor else f"{p:.3f}"


def summarise(observed: float, diffs: np.ndarray) -> BootstrapResult:
    """Percentile 95% CI and two-sided p-value of resampled differences."""
    low, high = np.percentile(diffs, [2.5, 97.5])
    other_side = np.mean(diffs <= 0) if observed > 0 else np.mean(diffs >= 0)
    return BootstrapResult(observed, float(low), float(high), float(min(1.0, 2 * other_side)), len(diffs))


def paired_bootstrap(gold, sims_a, sims_b, groups=None, n_boot: int = 2000, seed: int = 0) -> BootstrapResult:
    """Paired bootstrap test of two systems' Pearson r on the same pairs (see :func:`bootstrap_differences`)."""
    return summarise(*bootstrap_differences(gold, sims_a, sims_b, groups, n_boot, seed))
