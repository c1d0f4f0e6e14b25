"""How a run starts from something: its own checkpoint (:func:`restore`, ``--resume``), a trained model of the same
settings (:func:`continue_from`, ``--init-from``) or of another kind (:func:`warm_start`, the recipe's
``warm_start``). Whether it may: the settings that decide the batches and the updates must be the ones it was
trained with (:data:`~workbench.training.recipes.RESUME_FIELDS`), on the same vocabulary and data. A run
initialised from a trained model may change the settings its kind's config declares ``RETUNABLE`` (BGT: how its
latents are regularised), to fine-tune it with another bottleneck."""
from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch

from ..checks import WorkbenchError
from ..models.kinds import KINDS, checked_config
from ..models.checkpoint import checkpoint_update, read_trainer_state
from ..models.folder import ModelFolder
from ..models.runlog import CURVE_COLUMNS, DEV_METRICS, learning_curve, read_metrics
from ..paths import atomic_write, read_json
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
    vocabulary, data or settings that decide the batches and the updates. A run keeps what its kind fixed when it
    started (``KEPT_FROM_START``, e.g. BGT's KL ramp: set in ``cfg`` when the recipe leaves it unset)."""
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
    for name in KINDS[cfg.model].config.KEPT_FROM_START:  # e.g. BGT's KL ramp
        saved_value, asked = meta["model"].get(name), getattr(cfg, name, None)
        if saved_value is None:
            continue
        if asked is not None and asked != saved_value:
            changed.append(f"{name} {saved_value} -> {asked}")
        elif asked is None:
            log.info("resume keeps %s = %s, which the run fixed when it started", name, saved_value)
            setattr(cfg, name, saved_value)
    if changed:
        raise WorkbenchError(f"{path} was trained with other settings, so resuming would not continue that "
                             f"run: {'; '.join(changed)}. Resume with the run's settings (its config.json) or "
                             "start a new run in another --out (only max_updates, max_seconds and the "
                             "log/valid/eval/save cadence may change on a resume)")


def restore(trainer, opened: ModelFolder) -> None:
    folder = opened.path
    saved = checked_config(opened.config["model"])  # the config alone: no second network is built to compare it
    if saved != trainer.model.cfg:
        raise WorkbenchError(f"{folder} has model config {saved}, which differs from the requested "
                             f"{trainer.model.cfg}")
    trainer.model.load_state_dict(opened.weights())
    state, optimizer, rng = read_trainer_state(folder, trainer.device)
    if state.get("world", trainer.world) != trainer.world:
        raise WorkbenchError(f"{folder} was trained by {state['world']} process(es), not {trainer.world}: an "
                             "update's batches depend on it; resume with the same number of processes")
    trainer.optimizer.load_state_dict(optimizer)
    torch.set_rng_state(rng["torch"])
    if torch.cuda.is_available() and rng["cuda"]:
        torch.cuda.set_rng_state_all(rng["cuda"])
    kept = truncate_metrics(trainer, state["update"])
    steps = [line for line in kept if "tokens_per_s" in line]  # checkpoints written before these were kept
    state.setdefault("pairs_seen", sum(line.get("sentences", 0) for line in steps))
    state.setdefault("train_seconds", sum(line["tokens"] / line["tokens_per_s"] for line in steps))
    state.setdefault("best", None)
    trainer.state = {**trainer.state, **state}
    log.info("resumed %s at update %d", folder, state["update"])


def continue_from(trainer, opened: ModelFolder) -> None:
    """Start from a trained model's weights at its update: the data position is replayed to that update and
    its curve (``curve.csv`` of an exported model, ``metrics.jsonl`` of a run) is carried into this run's
    log."""
    meta, folder = opened.config, opened.path
    if not meta.get("decoders", True):
        raise WorkbenchError(f"{folder} holds encoders only (no decoders), so training cannot continue from it")
    saved = checked_config(meta["model"])
    if without_retunable(trainer.cfg.model, saved.to_dict()) != without_retunable(trainer.cfg.model,
                                                                               trainer.model.cfg.to_dict()):
        raise WorkbenchError(f"{folder} has another model config than the one requested")
    retuned = saved != trainer.model.cfg  # another bottleneck: its STS-B dev is no candidate for best/
    fresh = _load_weights(trainer.model, opened.weights())
    training = meta.get("training")  # an exported model's; a checkpoint's trainer state otherwise
    if training is None and (folder / "trainer_state.json").is_file():
        state = read_json(folder / "trainer_state.json")
        training = {"updates": state["update"], **{k: state[k] for k in ("pairs_seen", "train_seconds")
                                                      if k in state}}
    training = training or {"updates": checkpoint_update(folder)}
    update = int(training["updates"])
    for _ in range(update):  # cheap index arithmetic: the batches the run would see next
        trainer._next_update_batches()
    logged = [p for p in (folder, folder.parent, folder.parent.parent)
              if (p / "curve.csv").is_file() or (p / "metrics.jsonl").is_file()]
    history = learning_curve(logged[0]) if logged else pd.DataFrame(columns=CURVE_COLUMNS)
    history = history[history["update"] <= update]
    metric = trainer.dev_metric
    semantic = history[(history["metric"] == metric) & (history["view"] == "semantic")
                       & (history["update"] == update)]["value"]
    trainer.state.update(update=update, pairs_seen=int(training.get("pairs_seen", 0)),
                      train_seconds=float(training.get("train_seconds", 0.0)), init_from=str(folder),
                      best={"update": update, metric: float(semantic.iloc[0])}
                      if len(semantic) and not retuned else None)
    torch.manual_seed(trainer.cfg.seed + update)
    if trainer.rank == 0 and not history.empty:
        _carry_curve(trainer.run_dir, history, training.get("hardware"))
    log.info("continuing %s from update %d (fresh optimizer moments%s)", folder, update,
             "".join(f", fresh {name}" for name in fresh))


def _load_weights(model, weights: dict) -> list[str]:
    """Load a trained model's ``weights`` into ``model``; the parts it started afresh (training-only parts the
    weights lack, e.g. BGT's adversaries exported without decoders)."""
    completed = model.completed_state(weights)
    model.load_state_dict(completed)
    return sorted({k.split(".", 1)[0] for k, v in completed.items() if k not in weights or v is not weights[k]})


def _carry_curve(run_dir: Path, history: pd.DataFrame, hardware: str | None) -> None:
    """Write the curve so far (``history``: :func:`learning_curve` rows) as the new run's ``metrics.jsonl``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for (at, pairs, seconds), rows in history.groupby(["update", "pairs_seen", "train_seconds"], sort=True):
        line = {"update": int(at), "pairs_seen": int(pairs), "train_seconds": float(seconds),
                **({"hardware": hardware} if hardware else {})}
        for dev in DEV_METRICS:
            scores = rows[rows["metric"] == dev]
            if len(scores):
                line[dev] = dict(zip(scores["view"], scores["value"]))
        if (rows["metric"] == "valid_loss").any():
            line["valid_loss"] = float(rows[rows["metric"] == "valid_loss"]["value"].iloc[0])
        lines.append(line)
    atomic_write(run_dir / "metrics.jsonl", "".join(json.dumps(line) + "\n" for line in lines))


def warm_start(trainer, source: str) -> None:
    """Start update 0 from another kind's trained model (``warm_start`` of the recipe), as the model maps it."""
    opened = ModelFolder(source)
    if opened.config["tokenizer_sha256"] != trainer.tokenizer.digest:
        raise WorkbenchError(f"warm_start {source} was trained with another vocabulary (tokenizer sha256 "
                             f"{opened.config['tokenizer_sha256'][:12]} vs {trainer.tokenizer.digest[:12]}); it "
                             "needs the same pair and vocab_size")
    taken = trainer.model.warm_start(checked_config(opened.config["model"]), opened.weights())
    log.info("warm start from %s: %d of %d tensors", opened.path, len(taken), len(trainer.model.state_dict()))


def truncate_metrics(trainer, update: int) -> list[dict]:
    """Drop metric lines written after the checkpoint, so the log reads like an uninterrupted run; returns
    the lines kept."""
    path = trainer.run_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    kept = [line for line in read_metrics(trainer.run_dir) if line["update"] <= update]
    if trainer.rank == 0:
        atomic_write(path, "".join(json.dumps(line) + "\n" for line in kept))
    return kept
