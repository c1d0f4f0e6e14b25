"""Fitting cross-lingual WMF (b-WMF, x-WMF) by alternating least squares: no updates, so not the Trainer."""
from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ..checks import WorkbenchError
from ..data.corpora import language_of, load_splits
from ..models.wmf import WMF, WMFConfig
from ..paths import atomic_write
from .recipes import TrainConfig
from .trainer import hardware

# the presets of TrainConfig, for WMF: the paper's k = 100, w_m = 0.01, λ = 20, 20 ALS iterations; tiny is a quick
# check
WMF_PRESETS = {"tiny": {"k": 20, "iterations": 5, "l2": 1.0}, "cpu": {"iterations": 10}, "small": {}, "paper": {}}


def train_wmf(cfg: TrainConfig, run_dir: str | Path, show_progress: bool = True) -> dict:
    """Fit b-WMF (or ``overrides={"variant": "x-wmf"}``) on the pair's training split and save it in
    ``run_dir`` (config.json with the vocabularies, model.safetensors with the factors and idf)."""
    run_dir = Path(run_dir)
    if (run_dir / "model.safetensors").exists():
        raise WorkbenchError(f"{run_dir} already holds a model; choose another --out")
    pairs = load_splits(cfg.pair)["train"]
    if cfg.max_pairs and cfg.max_pairs < len(pairs):
        pick = np.random.default_rng(cfg.seed).choice(len(pairs), cfg.max_pairs, replace=False)
        pairs = [pairs[i] for i in sorted(pick)]
    settings = {**WMF_PRESETS[cfg.preset], **{k: v for k, v in cfg.overrides.items() if k in ("variant", "k",
                                                                                         "missing_weight", "l2",
                                                                                         "iterations", "min_df")}}
    start = time.perf_counter()
    model = WMF(WMFConfig(languages=("en", language_of(cfg.pair)), seed=cfg.seed, **settings))
    model.fit([en for en, _ in pairs], [xx for _, xx in pairs], show_progress=show_progress)
    model.save(run_dir, train=asdict(cfg))  # the recipe goes with the model, as a Trainer run's does
    result = {"model": "wmf", "preset": cfg.preset, "pairs": len(pairs), "iterations": len(model.history),
              "loss": model.history[-1], "seconds": time.perf_counter() - start,
              "hardware": hardware(torch.device("cpu"))}
    atomic_write(run_dir / "metrics.jsonl", json.dumps(result) + "\n")
    return result
