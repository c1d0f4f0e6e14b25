"""Models fitted in one go (WMF's alternating least squares): no updates, so not the Trainer. Whatever the kind,
the fit reads the pair's training split (a seeded sample of ``max_pairs``), fits, and saves the model with its
recipe, as a Trainer run's folder would hold it."""
from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ..checks import WorkbenchError
from ..data.corpora import load_splits
from ..models.kinds import KINDS
from ..paths import atomic_write
from .recipes import TrainConfig
from .trainer import hardware


def fit(cfg: TrainConfig, run_dir: str | Path, show_progress: bool = True) -> dict:
    """Fit ``cfg.model`` (a kind with ``fitted``) on the pair's training split and save it in ``run_dir``
    (config.json with the recipe, model.safetensors); returns the summary that ``metrics.jsonl`` holds."""
    run_dir = Path(run_dir)
    if (run_dir / "model.safetensors").exists():
        raise WorkbenchError(f"{run_dir} already holds a model; choose another --out")
    model = KINDS[cfg.model].fitted.build(cfg.model_config())  # unknown settings refused before the data is read
    pairs = load_splits(cfg.pair)["train"]
    if cfg.max_pairs and cfg.max_pairs < len(pairs):
        pick = np.random.default_rng(cfg.seed).choice(len(pairs), cfg.max_pairs, replace=False)
        pairs = [pairs[i] for i in sorted(pick)]
    start = time.perf_counter()
    model.fit([en for en, _ in pairs], [xx for _, xx in pairs], show_progress=show_progress)
    model.save(run_dir, train=asdict(cfg))  # the recipe goes with the model, as a Trainer run's does
    result = {"model": cfg.model, "preset": cfg.preset, "pairs": len(pairs), "iterations": len(model.history),
              "loss": model.history[-1], "seconds": time.perf_counter() - start,
              "hardware": hardware(torch.device("cpu"))}
    atomic_write(run_dir / "metrics.jsonl", json.dumps(result) + "\n")
    return result
