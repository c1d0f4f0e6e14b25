"""Tatoeba similarity search (LASER / Schwenk & Douze 2017 protocol): for each sentence, is its nearest
neighbour by cosine among all sentences of the other language its translation? Error rate in both directions.
Optionally the margin criterion of Artetxe & Schwenk (2019): ratio of the cosine to the mean cosine of the
k nearest neighbours of both sentences. MTEB's bitext-mining scores (accuracy and its main score, F1) are given
too, as MTEB computes them: foreign sentences search the English ones."""
from __future__ import annotations

import numpy as np

from ..data.splitting import translation_groups


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def similarity(xx: np.ndarray, en: np.ndarray, margin: bool = False, k: int = 4) -> np.ndarray:
    """(n, n) scores; row i = foreign sentence i against every English sentence."""
    sims = _normalise(xx) @ _normalise(en).T
    if not margin:
        return sims
    k = min(k, sims.shape[1])
    knn_x = -np.sort(-sims, axis=1)[:, :k].mean(1)
    knn_e = -np.sort(-sims, axis=0)[:k].mean(0)
    return sims / ((knn_x[:, None] + knn_e[None, :]) / 2)


def retrieval_errors(xx: np.ndarray, en: np.ndarray, margin: bool = False) -> dict[str, float]:
    """Error rates (%) for xx→en and en→xx, where row i of ``xx`` translates row i of ``en``."""
    sims = similarity(xx, en, margin)
    truth = np.arange(len(sims))
    return {"xx->en": 100 * float(np.mean(sims.argmax(1) != truth)),
            "en->xx": 100 * float(np.mean(sims.argmax(0) != truth))}


def pair_retrieval_accuracy(first: np.ndarray, second: np.ndarray) -> float:
    """Mean accuracy (%) of finding each sentence's translation by cosine among all of the other side, both ways,
    where row i of ``first`` translates row i of ``second`` (rows distinct on each side): the model-selection score
    of a pair without English, on its validation pairs."""
    errors = retrieval_errors(first, second)
    return 100 - (errors["xx->en"] + errors["en->xx"]) / 2


def distinct_pairs(pairs) -> list[tuple[str, str]]:
    """One pair per group of pairs that share a sentence on either side (compared normalised), the first of each:
    retrieval needs exactly one right answer per sentence. A pivot pair holds every translation of an English
    sentence beside every other (f1–s1, f1–s2, f2–s1, f2–s2), so keeping (f1, s1) and (f2, s2) would make a
    right answer an error."""
    seen, out = set(), []
    for pair, group in zip(pairs, translation_groups(pairs)):
        if group not in seen:
            seen.add(group), out.append(tuple(pair))
    return out


def mteb_scores(xx: np.ndarray, en: np.ndarray) -> dict[str, float]:
    """MTEB's bitext-mining numbers (× 100) for xx→en: accuracy (= 100 − the xx→en error) and F1, the support-
    weighted F1 over the gold targets where the target indices are the classes (each gold target has support 1,
    so it is the mean over targets of 2·P·R / (P + R), with R whether its query found it and P that hit over how
    many queries picked it)."""
    picked = similarity(xx, en).argmax(1)
    truth = np.arange(len(picked))
    hit = (picked == truth).astype(float)  # per target t: its own query found it (recall 1 or 0)
    chosen = np.bincount(picked, minlength=len(picked)).astype(float)  # how often each target was picked
    precision = np.divide(hit, chosen, out=np.zeros_like(hit), where=chosen > 0)
    f1 = np.divide(2 * precision * hit, precision + hit, out=np.zeros_like(hit), where=precision + hit > 0)
    return {"accuracy xx->en": 100 * float(hit.mean()), "f1 xx->en": 100 * float(f1.mean())}
