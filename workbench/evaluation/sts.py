"""STS evaluation (docs/method.md#evaluation): cosine of the two embeddings, Pearson's r (× 100) per dataset.

STS 2012–2016 reports per year the unweighted mean over its sub-datasets and the mean of the five years (the
paper's), beside the two other conventions in use (:data:`AGGREGATIONS`);
Hard STS uses the paper authors' files; STS17 the SemEval-2017 tracks; STS-B its test split."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..checks import check_names
from ..data.eval_sets import HARD_STS, STS17_TRACKS, STS_DATASETS
from ..data.sts import load_sts, load_sts17, load_sts_hard, load_stsb
from ..encoders import Encoder, check_embeddings, check_reads

PAPER_STS17_TRACKS = ("es-es", "ar-ar", "en-es", "en-ar", "en-tr")  # Figure 4
COLUMNS = ["encoder", "task", "dataset", "metric", "value", "n"]  # every suite's tidy rows


def years_task(years: Sequence[int]) -> str:
    """The task name of STS over ``years``: ``"STS16"`` for one year, ``"STS12-16"`` for the span of several."""
    years = sorted(years)
    return f"STS{years[0] % 100}" if len(years) == 1 else f"STS{years[0] % 100}-{years[-1] % 100}"


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity; a zero vector gives 0 (as the reference code's ``nan_to_num``)."""
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def embed_unique(encoder: Encoder, sentences: Sequence[str], show_progress: bool = False) -> dict[str, np.ndarray]:
    """Encode each distinct sentence once; returns ``{sentence: vector}``."""
    unique = list(dict.fromkeys(sentences))
    vectors = check_embeddings(encoder, encoder.encode(unique, show_progress=show_progress), len(unique))
    return dict(zip(unique, vectors))


def embed_by_year(encoder: Encoder, data: dict[int, dict[str, pd.DataFrame]], show_progress: bool = False
                  ) -> dict[int, dict[str, np.ndarray]]:
    """:func:`embed_unique` of each year's sentences on their own, so that a cached encoder keeps an entry per year:
    STS16 alone (quick runs, the reproduction) and STS12–16 (the cards) then encode STS16 once."""
    return {year: embed_unique(encoder, [s for f in sets.values() for s in (*f["sentence1"], *f["sentence2"])],
                                show_progress) for year, sets in data.items()}


def _similarities(lookup: dict[str, np.ndarray], frame: pd.DataFrame) -> np.ndarray:
    return cosine(np.stack([lookup[s] for s in frame["sentence1"]]), np.stack([lookup[s] for s in frame["sentence2"]]))


def year_similarities(encoder: Encoder, data: dict[int, dict[str, pd.DataFrame]]) -> np.ndarray:
    """The cosine similarity of every pair of ``data`` (each year's sub-datasets, in order), each year encoded on its
    own (:func:`embed_by_year`)."""
    lookups = embed_by_year(encoder, data)
    return np.concatenate([_similarities(lookups[year], frame) for year, sets in data.items()
                           for frame in sets.values()])


def _correlations(sims: np.ndarray, gold) -> dict[str, float]:
    """Pearson's and Spearman's r (× 100). Spearman's is Pearson's on the ranks, ties sharing their mean rank, as
    scipy computes it; written out so that the CLI's suites do not import scipy.stats (a second of start-up)."""
    sims, gold = pd.Series(np.asarray(sims, dtype=float)), pd.Series(np.asarray(gold, dtype=float))
    return {"pearson": 100 * _pearson(sims, gold), "spearman": 100 * _pearson(sims.rank(), gold.rank())}


def _pearson(a: pd.Series, b: pd.Series) -> float:
    return float(np.corrcoef(a, b)[0, 1])


def score_pairs(lookup: dict[str, np.ndarray], frame: pd.DataFrame) -> dict[str, float]:
    """Pearson and Spearman (× 100) between gold scores and embedding cosines."""
    return _correlations(_similarities(lookup, frame), frame["score"])


# How the STS 2012–16 numbers of the literature combine sub-datasets (docs/method.md#sts-aggregation):
AGGREGATIONS = {
    "mean": "all",  # the unweighted mean of the sub-datasets' correlations: the BGT paper's (and SentEval's 'mean')
    "wmean": "all (wmean)",  # weighted by each sub-dataset's number of pairs: SentEval's 'wmean'
    "pooled": "all (pooled)",  # one correlation over every pair pooled: sentence-transformers', SimCSE's 'all'
}


def evaluate_sts(encoder: Encoder, years: Sequence[int] = tuple(STS_DATASETS),
                 show_progress: bool = False) -> pd.DataFrame:
    """Tidy rows ``encoder, task, dataset, metric, value, n, aggregation``: one per sub-dataset and metric, and per
    year (and, for several years, ``task="STS12-16"``) one row per aggregation in :data:`AGGREGATIONS`:
    ``dataset="all"`` is the unweighted mean (the paper's; over years, the mean of the year means),
    ``"all (wmean)"`` the pair-weighted mean, ``"all (pooled)"`` the correlation over all pairs pooled."""
    check_reads(encoder, ("en",), "STS")
    data = {year: load_sts(year) for year in years}
    lookups = embed_by_year(encoder, data, show_progress)
    rows, scored = [], {}
    for year, sets in data.items():
        task = f"STS{year % 100}"
        for name, frame in sets.items():
            scored[task, name] = (_similarities(lookups[year], frame), frame["score"].to_numpy())
            for metric, value in _correlations(*scored[task, name]).items():
                rows.append({"encoder": encoder.name, "task": task, "dataset": name, "metric": metric,
                             "value": value, "n": len(frame)})
    frame = pd.DataFrame(rows)
    tasks = {years_task([year]): [years_task([year])] for year in years}
    if len(years) > 1:
        tasks[years_task(years)] = list(tasks)
    summary = []
    for task, members in tasks.items():
        parts = frame[frame["task"].isin(members)]
        pairs = [scored[key] for key in scored if key[0] in members]
        pooled = _correlations(np.concatenate([s for s, _ in pairs]), np.concatenate([g for _, g in pairs]))
        for metric, part in parts.groupby("metric", sort=False):
            year_means = part.groupby("task", sort=False)["value"].mean()  # over years: the mean of the year means
            values = {"mean": float(year_means.mean()), "wmean": float(np.average(part["value"], weights=part["n"])),
                      "pooled": pooled[metric]}
            summary += [{"encoder": encoder.name, "task": task, "dataset": AGGREGATIONS[aggregation],
                         "metric": metric, "value": value, "n": int(part["n"].sum()), "aggregation": aggregation}
                        for aggregation, value in values.items()]
    return pd.concat([frame, pd.DataFrame(summary)], ignore_index=True).reindex(columns=[*COLUMNS, "aggregation"])


def evaluate_stsb(encoder: Encoder, show_progress: bool = False) -> pd.DataFrame:
    """The STS Benchmark's test split (1,379 pairs): Pearson and Spearman (× 100; MTEB's main score is the
    Spearman)."""
    check_reads(encoder, ("en",), "STS-B")
    frame = load_stsb("test")
    lookup = embed_unique(encoder, [*frame["sentence1"], *frame["sentence2"]], show_progress)
    return pd.DataFrame([{"encoder": encoder.name, "task": "STS-B", "dataset": "test", "metric": metric,
                          "value": value, "n": len(frame)} for metric, value in score_pairs(lookup, frame).items()],
                        columns=COLUMNS)


def evaluate_hard_sts(encoder: Encoder, show_progress: bool = False) -> pd.DataFrame:
    """Pearson/Spearman on the paper authors' Hard STS files (Hard+ = ``hard-pos``, Hard− = ``hard-neg``)."""
    check_reads(encoder, ("en",), "Hard STS")
    data = {kind: load_sts_hard(kind) for kind in HARD_STS}
    lookup = embed_unique(encoder, [s for f in data.values() for s in (*f["sentence1"], *f["sentence2"])],
                          show_progress)
    rows = [{"encoder": encoder.name, "task": "Hard STS", "dataset": {"hard-pos": "hard+", "hard-neg": "hard-"}[kind],
             "metric": metric, "value": value, "n": len(frame)}
            for kind, frame in data.items() for metric, value in score_pairs(lookup, frame).items()]
    return pd.DataFrame(rows)


def evaluate_sts17(encoder: Encoder, tracks: Sequence[str] | None = None,
                   show_progress: bool = False) -> pd.DataFrame:
    """SemEval-2017 tracks, both sides through the same encoder (for BGT: the semantic encoder).

    ``tracks=None`` means every track of the data that the encoder can read (the others are skipped with a
    warning): the paper's Figure 4 tracks (:data:`PAPER_STS17_TRACKS`), en-en and the WMT half of en-es; a track
    named explicitly that the encoder cannot read raises an error.
    """
    rows = []
    tracks = None if tracks is None else check_names("STS17 track", tracks, STS17_TRACKS)
    for track in tracks or STS17_TRACKS:
        frame, lang1, lang2 = load_sts17(track)
        if not check_reads(encoder, (lang1, lang2), f"STS17 track {track!r}", strict=tracks is not None):
            continue
        lookup = embed_unique(encoder, [*frame["sentence1"], *frame["sentence2"]], show_progress)
        rows += [{"encoder": encoder.name, "task": "STS17", "dataset": track, "metric": metric, "value": value,
                  "n": len(frame)} for metric, value in score_pairs(lookup, frame).items()]
    return pd.DataFrame(rows, columns=COLUMNS)
