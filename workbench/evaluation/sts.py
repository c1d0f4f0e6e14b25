"""STS evaluation (BGT_SPEC §6.2–6.3): cosine of the two embeddings, Pearson's r (× 100) per dataset.

STS 2012–2016 reports per year the unweighted mean over its sub-datasets and the mean of the five years;
Hard STS uses the paper authors' files; STS17 the SemEval-2017 cross-lingual and non-English tracks."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import pearsonr, spearmanr

from ..data.sts import HARD_STS, STS_DATASETS, load_sts, load_sts17, load_sts_hard
from ..encoders import Encoder, check_embeddings, check_language, readable

PAPER_STS17_TRACKS = ("es-es", "ar-ar", "en-es", "en-ar", "en-tr")  # Figure 4


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


def score_pairs(lookup: dict[str, np.ndarray], frame: pd.DataFrame) -> dict[str, float]:
    """Pearson and Spearman (× 100) between gold scores and embedding cosines."""
    sims = cosine(np.stack([lookup[s] for s in frame["sentence1"]]), np.stack([lookup[s] for s in frame["sentence2"]]))
    return {"pearson": 100 * float(pearsonr(sims, frame["score"])[0]),
            "spearman": 100 * float(spearmanr(sims, frame["score"])[0])}


def evaluate_sts(encoder: Encoder, years: Sequence[int] = tuple(STS_DATASETS),
                 show_progress: bool = False) -> pd.DataFrame:
    """Tidy rows ``encoder, task, dataset, metric, value, n``: one per sub-dataset and metric, plus per-year
    ``dataset="all"`` rows (mean over sub-datasets) and, for several years, ``task="STS12-16"`` averages."""
    check_language(encoder, "en", "STS")
    data = {year: load_sts(year) for year in years}
    sentences = [s for sets in data.values() for f in sets.values() for s in (*f["sentence1"], *f["sentence2"])]
    lookup = embed_unique(encoder, sentences, show_progress)
    rows = []
    for year, sets in data.items():
        task = f"STS{year % 100}"
        for name, frame in sets.items():
            for metric, value in score_pairs(lookup, frame).items():
                rows.append({"encoder": encoder.name, "task": task, "dataset": name, "metric": metric,
                             "value": value, "n": len(frame)})
    frame = pd.DataFrame(rows)
    per_year = (frame.groupby(["encoder", "task", "metric"], sort=False)
                .agg(value=("value", "mean"), n=("n", "sum")).reset_index().assign(dataset="all"))
    parts = [frame, per_year]
    if len(years) > 1:
        overall = (per_year.groupby(["encoder", "metric"], sort=False)
                   .agg(value=("value", "mean"), n=("n", "sum")).reset_index()
                   .assign(task=f"STS{min(years) % 100}-{max(years) % 100}", dataset="all"))
        parts.append(overall)
    return pd.concat(parts, ignore_index=True)[["encoder", "task", "dataset", "metric", "value", "n"]]


def evaluate_hard_sts(encoder: Encoder, show_progress: bool = False) -> pd.DataFrame:
    """Pearson/Spearman on the paper authors' Hard STS files (Hard+ = ``hard-pos``, Hard− = ``hard-neg``)."""
    check_language(encoder, "en", "Hard STS")
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

    ``tracks=None`` means the paper's Figure 4 tracks that the encoder can read (the others are skipped with
    a warning); a track named explicitly that the encoder cannot read raises an error.
    """
    rows = []
    for track in tracks or PAPER_STS17_TRACKS:
        frame, lang1, lang2 = load_sts17(track)
        if not readable(encoder, (lang1, lang2), f"STS17 track {track!r}", strict=tracks is not None):
            continue
        lookup = embed_unique(encoder, [*frame["sentence1"], *frame["sentence2"]], show_progress)
        rows += [{"encoder": encoder.name, "task": "STS17", "dataset": track, "metric": metric, "value": value,
                  "n": len(frame)} for metric, value in score_pairs(lookup, frame).items()]
    return pd.DataFrame(rows, columns=["encoder", "task", "dataset", "metric", "value", "n"])
