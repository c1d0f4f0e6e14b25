"""Measured distance between English and the second languages (or between a pair's two languages, when neither is
English), from URIEL+ (Khan et al., COLING 2025).

URIEL+ (the ``urielplus`` package; its knowledge base ships in the wheel, so this works offline) gives each
language typological, phylogenetic and other feature vectors; a distance is the angular distance between two
languages' vectors over the features both have values for (URIEL+'s defaults: union aggregation over sources,
missing values filled from the parent language where URIEL+ can). Three kinds are used here:

- ``syntactic``: word order and other syntactic features (WALS, SSWL, Grambank, ... via URIEL+);
- ``genetic``: membership of the Glottolog family tree (saturates at 1.0 for unrelated languages: Arabic,
  Turkish and Japanese are all equally far from English by this measure);
- ``featural``: the syntactic, phonological and inventory features together (289 here; lang2vec's "featural").

Standard Arabic is ``arb`` (URIEL+'s macrolanguage code ``ara`` has fewer features); :func:`language_distances`
reports, per language and kind, how many features it lacks, and :func:`missing_features` names them.
With five languages, a rank correlation can show little: :func:`spearman_permutation` gives Spearman's rho with its
exact permutation p-value (the smallest two-sided p for five points is 2/120 = 1/60, and ties in a distance
make even that unreachable); beyond 8 languages (your own pairs beside the five) the p-value is sampled.
"""
from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from contextlib import contextmanager
from functools import lru_cache

import numpy as np
import pandas as pd

from ..checks import WorkbenchError, check_name, check_names
from ..data.languages import iso639_3

ISO639_3 = {"en": "eng", "fr": "fra", "es": "spa", "ar": "arb", "tr": "tur", "ja": "jpn"}
KINDS = ("syntactic", "genetic", "featural")
METRIC = "angular distance over shared known features (URIEL+ 1.3 defaults: union aggregation, parent fill)"


@contextmanager
def _root_logging_kept():
    """urielplus configures the root logger as it loads and logs through it (``logging.info``, which adds a stderr
    handler when there is none): every library's INFO would then print, red in a notebook. Inside this, its INFO
    lines are dropped, and the process's logging is left as its owner set it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    root.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@lru_cache(maxsize=1)
def _uriel():
    with _root_logging_kept():
        try:
            from urielplus import urielplus
        except ImportError:
            raise WorkbenchError("language distances need the urielplus package: pip install urielplus "
                                 "(or bash scripts/setup)") from None
        return urielplus.URIELPlus()


def _vectors(kind: str, code: str, reference: str = "eng") -> tuple[list[str], np.ndarray, np.ndarray]:
    """Feature names and the ``reference`` (English) and ``code`` vectors of ``kind`` (-1: no value)."""
    u = _uriel()
    with _root_logging_kept():
        vectors = u.get_vector(kind, reference, code)
        index = u.map_new_distance_to_loaded_features(kind) if kind == "syntactic" else None
    names = [f"{kind}_{i}" for i in range(len(vectors[reference]))]
    if kind == "syntactic":
        index = index[0] if isinstance(index, (list, tuple)) else index
        syntactic = [str(f) for f in u.feats[index] if str(f).startswith("S_")]
        if len(syntactic) == len(names):
            names = syntactic
    return names, np.asarray(vectors[reference], dtype=float), np.asarray(vectors[code], dtype=float)


@lru_cache(maxsize=None)
def _distance(kind: str, code: str, reference: str = "eng") -> float:
    u = _uriel()
    with _root_logging_kept():
        return float(u.new_distance(kind, [reference, code]))


def language_distances(languages: Sequence[str] = ("fr", "es", "ar", "tr", "ja"),
                       kinds: Sequence[str] = KINDS, reference: str = "en") -> pd.DataFrame:
    """``reference``-to-``language`` distances (English by default; ``reference="fr"`` for fr–es): rows ``language,
    code, kind, distance, features, missing, metric, reference`` (``features``: the kind's vector length;
    ``missing``: how many of them the language has no value for)."""
    rows = []
    kinds = check_names("distance kind", kinds, KINDS)
    known = _languages([*languages, reference])
    reference_code = _code(check_name("reference language", reference, ["en", *known]))
    for language in check_names("language", languages, [lang for lang in ["en", *known] if lang != reference]):
        code = _code(language)
        for kind in kinds:
            names, _, vector = _vectors(kind, code, reference_code)
            rows.append({"language": language, "code": code, "kind": kind,
                         "distance": _distance(kind, code, reference_code), "features": len(names),
                         "missing": int((vector < 0).sum()), "metric": METRIC, "reference": reference})
    return pd.DataFrame(rows)


def _languages(asked) -> list[str]:
    """The languages a distance can be asked for: the shipped ones, and any other ISO 639 code among ``asked`` that
    URIEL+ knows (a registered pair's language)."""
    known = set(np.ravel(_uriel().langs).tolist()) if any(x not in ISO639_3 for x in asked if isinstance(x, str)) else set()
    own = [x for x in asked if isinstance(x, str) and x not in ISO639_3 and _known_code(x) in known]
    return [*(x for x in ISO639_3 if x != "en"), *own]


def _known_code(language: str) -> str | None:
    try:
        return iso639_3(language)
    except WorkbenchError:
        return None


def _code(language: str) -> str:
    return ISO639_3.get(language) or iso639_3(language)


def missing_features(language: str, kind: str = "syntactic") -> list[str]:
    """The features of ``kind`` that URIEL+ has no value for in ``language`` (e.g. ``"ar"``: Standard Arabic)."""
    code = _code(check_name("language", language, _languages([language])))
    names, _, vector = _vectors(check_name("distance kind", kind, KINDS), code)
    return [name for name, value in zip(names, vector) if value < 0]


EXACT_UP_TO = 8  # points; 8! = 40,320 orderings, 9! would be 362,880
SAMPLED = 20_000  # random orderings (seeded) beyond that


def spearman_permutation(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Spearman's rho of ``x`` and ``y`` and its two-sided permutation p-value: exact (every ordering of ``y``) up
    to :data:`EXACT_UP_TO` points, else from :data:`SAMPLED` seeded random orderings, counting the observed one
    ((1 + as extreme) / (1 + sampled), so never 0)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) != len(y) or len(x) < 3:
        raise WorkbenchError(f"spearman_permutation needs two sequences of the same length, at least 3 points (got "
                             f"{len(x)} and {len(y)})")
    rx, ry = (pd.Series(v).rank().to_numpy() for v in (x, y))  # Spearman: Pearson on the (mean-tied) ranks
    rx, ry = rx - rx.mean(), ry - ry.mean()
    scale = np.linalg.norm(rx) * np.linalg.norm(ry)
    if scale == 0:  # a constant sequence: no rank correlation
        return float("nan"), float("nan")
    rho = float(rx @ ry / scale)
    exact = len(x) <= EXACT_UP_TO
    orderings = (ry[np.array(list(itertools.permutations(range(len(ry)))))] if exact
                 else np.random.default_rng(0).permuted(np.tile(ry, (SAMPLED, 1)), axis=1))
    extreme = np.abs(orderings @ rx / scale) >= abs(rho) - 1e-12
    return rho, float(np.mean(extreme) if exact else (1 + np.sum(extreme)) / (1 + SAMPLED))


def gap_correlations(gaps: pd.DataFrame, distances: pd.DataFrame) -> pd.DataFrame:
    """For each task's gap (``language, task, gap`` rows, e.g. :func:`workbench.reports.paper.language_gaps`) and each
    distance kind: Spearman's rho across languages, its permutation p-value (:func:`spearman_permutation`) and the
    number of languages."""
    rows = []
    for (task, kind) in itertools.product(dict.fromkeys(gaps["task"]), dict.fromkeys(distances["kind"])):
        gap = gaps[gaps["task"] == task].set_index("language")["gap"]
        distance = distances[distances["kind"] == kind].set_index("language")["distance"]
        shared = [lang for lang in gap.index if lang in distance.index]
        if len(shared) < 3:
            continue
        rho, p = spearman_permutation(distance[shared], gap[shared])
        rows.append({"task": task, "kind": kind, "rho": rho, "p_value": p, "n": len(shared)})
    return pd.DataFrame(rows, columns=["task", "kind", "rho", "p_value", "n"])
