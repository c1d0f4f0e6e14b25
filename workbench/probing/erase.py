"""Concept erasure with LEACE (Belrose et al. 2023, "LEACE: Perfect linear concept erasure in closed form").

``erase(encoder, task)`` fits the least-squares eraser of the task's labels on the task's *training* split
(the ``concept-erasure`` package's ``LeaceEraser``) and returns an Encoder whose embeddings have that concept
linearly removed: no linear probe does better than predicting the majority label, while the embeddings move as
little as possible otherwise. ``evaluate(erased, "sts")`` then shows what STS loses with the concept;
:func:`erasure_effects` tabulates that for several encoders and concepts.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from ..cache import cached
from ..checks import WorkbenchError
from ..data.eval_sets import STS_DATASETS
from ..encoders import Encoder
from ..evaluation import evaluate_tatoeba
from ..evaluation.sts import evaluate_sts, years_task
from ..models.base import NamedEncoder
from ..progress import progress_bar
from .build import build_task, probing_sizes
from .own import dataset_or_card
from .probe import probe


class ErasedEncoder(NamedEncoder):
    """``encoder`` followed by a fitted LEACE eraser (an Encoder: ``name``, ``dim``, ``fingerprint``,
    ``languages``, ``encode``)."""

    def __init__(self, encoder: Encoder, eraser, task: str, fitted_on: str):
        self.encoder, self.eraser, self.task = encoder, eraser, task
        self.name = f"{encoder.name}-erased[{task}]"
        self.dim, self.languages = encoder.dim, getattr(encoder, "languages", None)
        self.fingerprint = hashlib.sha256(f"{encoder.fingerprint}|leace|{task}|{fitted_on}".encode()).hexdigest()

    @torch.no_grad()
    def encode(self, sentences: Sequence[str], batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        x = self.encoder.encode(sentences, batch_size=batch_size, show_progress=show_progress)
        return self.eraser(torch.from_numpy(np.asarray(x, dtype=np.float64))).float().numpy()


def erase(encoder: Encoder, task, sizes: dict[str, int] | str | None = None, seed: int = 0) -> ErasedEncoder:
    """``encoder`` with the concept of probing task ``task`` (a name, or an own task as :func:`probe` takes)
    linearly erased (LEACE fitted on the task's train split at ``sizes``, as for :func:`.probe.probe`)."""
    try:
        from concept_erasure import LeaceEraser
    except ImportError:
        raise WorkbenchError("concept erasure needs the concept-erasure package: pip install concept-erasure "
                             "(or bash scripts/setup)") from None
    dataset, card = dataset_or_card(task, **({"sizes": sizes} if sizes else {}))
    card.check_encoder(encoder)
    train = (dataset if dataset is not None else build_task(card, sizes=probing_sizes(sizes), seed=seed)).split("tr")
    labels = sorted(set(train["label"]))
    if len(labels) < 2:
        raise WorkbenchError(f"task {card.name!r} has one label in its train split: nothing to erase")
    encoder = cached(encoder)  # the erased encoder reads the original embeddings from the cache
    x = torch.from_numpy(np.asarray(encoder.encode(list(train["sentence"])), dtype=np.float64))
    z = torch.nn.functional.one_hot(torch.tensor([labels.index(v) for v in train["label"]]), len(labels))
    eraser = LeaceEraser.fit(x, z.double())
    digest = hashlib.sha256("\n".join(f"{a}\t{b}" for a, b in zip(train["label"], train["sentence"]))
                            .encode()).hexdigest()
    return ErasedEncoder(encoder, eraser, card.name, digest)


def erasure_effects(encoders: Sequence[Encoder], tasks: Sequence[str], sizes: dict[str, int] | None = None,
                    years: Sequence[int] = tuple(STS_DATASETS), tatoeba: Sequence[str] = (), seed: int = 0,
                    show_progress: bool = True) -> pd.DataFrame:
    """What erasing each task's concept costs each encoder: tidy rows ``encoder, erased, metric, before,
    after, change, note`` (``note``: why a change is not a number, where it is not), the metrics being the probe's accuracy on the erased task (× 100; it should fall to the
    majority baseline), the STS average over ``years`` (Pearson × 100) and, for each language in ``tatoeba``,
    the Tatoeba similarity-search error (%, mean of both directions). Erasing ``language_id_en_xx`` from a shared
    encoder asks whether meaning is language-free: STS should barely move and Tatoeba error should not rise."""
    label = years_task(years)

    def sts(encoder) -> float:
        df = evaluate_sts(encoder, years)
        return float(df.loc[(df["metric"] == "pearson") & (df["dataset"] == "all") & (df["task"] == label),
                            "value"].iloc[0])

    def retrieval(encoder) -> dict[str, float]:
        if not tatoeba:
            return {}
        df = evaluate_tatoeba(encoder, languages=list(tatoeba))
        df = df[df["metric"].str.startswith("error")]  # both directions' error rates (not MTEB's scores)
        return {f"Tatoeba {dataset} error": float(part["value"].mean()) for dataset, part in df.groupby("dataset")}

    rows = []
    steps = progress_bar(total=len(encoders) * len(tasks), desc="erasure", unit="concept", disable=not show_progress)
    for encoder in map(cached, encoders):  # the STS/Tatoeba embeddings, read again through each erased encoder
        sts_before, errors_before = sts(encoder), retrieval(encoder)
        for task in tasks:
            erased = erase(encoder, task, sizes=sizes, seed=seed)
            name = erased.task
            steps.set_postfix_str(f"{name} / {encoder.name}")
            before, after = (100 * probe(e, task, sizes=sizes, seed=seed, control=False).accuracy
                             for e in (encoder, erased))
            rows += [{"encoder": encoder.name, "erased": name, "metric": f"{name} accuracy", "before": before,
                      "after": after},
                     {"encoder": encoder.name, "erased": name, "metric": label, "before": sts_before,
                      "after": sts(erased)}]
            rows += [{"encoder": encoder.name, "erased": name, "metric": metric, "before": errors_before[metric],
                      "after": after} for metric, after in retrieval(erased).items()]
            steps.update()
    steps.close()
    effects = pd.DataFrame(rows).assign(change=lambda d: d["after"] - d["before"])
    return effects.assign(note=[_undefined(row) for row in effects.itertuples()])


def _undefined(row) -> str:
    """Why a change is not a number ("" where it is): a correlation of similarities that do not vary."""
    if not pd.isna(row.change):
        return ""
    when = "after erasure" if pd.isna(row.after) else "before erasure"
    if str(row.metric).startswith("STS"):
        return (f"undefined {when}: every sentence pair gets the same cosine similarity, and Pearson's r of a "
                "constant is not a number")
    return f"undefined {when}: no number was measured"
