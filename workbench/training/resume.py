"""Whether a run may continue from a checkpoint or a trained model: the settings that decide the batches and the
updates must be the ones it was trained with (:data:`~workbench.training.recipes.RESUME_FIELDS`), on the same
vocabulary and data. A run initialised from a trained model may change the settings its kind's config declares
``RETUNABLE`` (BGT: how its latents are regularised), to fine-tune it with another bottleneck."""
from __future__ import annotations

import json
import logging
from dataclasses import asdict

from ..checks import WorkbenchError
from ..models import KINDS
from ..models.folder import ModelFolder
from .recipes import RESUME_FIELDS, TrainConfig

log = logging.getLogger(__name__)


def without_retunable(model: str, settings: dict) -> dict:
    """Model settings less those a run initialised from a trained ``model`` may change, in the config's JSON
    form (so defaults and stored values compare equal)."""
    full = json.loads(json.dumps(settings))
    return {k: v for k, v in full.items() if k not in KINDS[model].config.RETUNABLE}


def check_resumable(folder: ModelFolder, cfg: TrainConfig, tokenizer_digest: str, data_digest: str,
                    initialising: bool = False) -> None:
    """Refuse to continue ``folder`` with ``cfg`` when that would not continue its run: another model,
    vocabulary, data or settings that decide the batches and the updates. A run keeps the KL ramp it started
    with (``cfg.kl_x0`` is set to it when not given)."""
    meta, path = folder.config, folder.path
    if meta["model"]["setting"] != cfg.model:
        raise WorkbenchError(f"{path} is a checkpoint of model {meta['model']['setting']!r}, not {cfg.model!r}")
    if meta["tokenizer_sha256"] != tokenizer_digest:
        raise WorkbenchError(f"{path} was trained with another vocabulary (tokenizer sha256 "
                             f"{meta['tokenizer_sha256'][:12]} vs {tokenizer_digest[:12]} now); resume "
                             "needs the same pair, vocab_size and data")
    saved, now = meta.get("train", {}), json.loads(json.dumps(asdict(cfg)))
    if initialising and "overrides" in saved:
        saved = {**saved, "overrides": without_retunable(cfg.model, saved["overrides"])}
        now["overrides"] = without_retunable(cfg.model, now["overrides"])
    changed = [f"{name} {saved[name]!r} -> {now[name]!r}" for name in RESUME_FIELDS
               if name in saved and saved[name] != now[name]]
    if meta.get("data_sha256", data_digest) != data_digest:
        changed.append(f"training data (sha256 {meta['data_sha256'][:12]} -> {data_digest[:12]})")
    if "data_sha256" not in meta:
        log.warning("%s predates training-data digests: the data cannot be checked on this resume", path)
    saved_x0 = meta["model"].get("kl_x0")
    if saved_x0 is not None:
        if cfg.kl_x0 is not None and cfg.kl_x0 != saved_x0:
            changed.append(f"kl_x0 {saved_x0} -> {cfg.kl_x0}")
        elif cfg.kl_x0 is None:
            log.info("resume keeps the KL ramp the run started with: x0 = %d updates", saved_x0)
            cfg.kl_x0 = saved_x0
    if changed:
        raise WorkbenchError(f"{path} was trained with other settings, so resuming would not continue that "
                             f"run: {'; '.join(changed)}. Resume with the run's settings (its config.json) or "
                             "start a new run in another --out (only max_updates, max_seconds and the "
                             "log/valid/eval/save cadence may change on a resume)")
