"""Checkpoints of a training run: ``runs/NAME/checkpoints/update-N/`` holds a model folder's files
(:mod:`workbench.models.folder`) plus ``trainer_state.safetensors`` + ``.json`` — optimizer moments, RNG states and
the data position, no pickle — so that ``--resume`` continues the run exactly."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

from ..checks import WorkbenchError, whole
from ..data.tokenizer import Tokenizer
from ..paths import atomic_write, read_json, swap_folder, temp_sibling
from .folder import read_weights, write_weights


def write_checkpoint(run_dir: Path, model: torch.nn.Module, tokenizer: Tokenizer, meta: dict,
                     optimizer: torch.optim.Optimizer, state: dict, keep: int) -> Path:
    """Write ``checkpoints/update-N`` (N = ``state["update"]``) atomically with the weights, ``meta`` in its
    config.json, the optimizer moments and the RNG states, point ``latest`` at it and remove all but the newest
    ``keep`` checkpoints."""
    folder = run_dir / "checkpoints" / f"update-{state['update']}"
    tmp = temp_sibling(folder)
    tensors, opt_json = {}, {"param_groups": optimizer.state_dict()["param_groups"], "state_keys": {}}
    for index, values in optimizer.state_dict()["state"].items():
        for key, value in values.items():
            tensors[f"optimizer.{index}.{key}"] = value.detach().cpu().contiguous()
        opt_json["state_keys"][str(index)] = sorted(values)
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        for i, rng in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = rng
    save_file(tensors, str(tmp / "trainer_state.safetensors"))
    (tmp / "trainer_state.json").write_text(json.dumps({**state, "optimizer": opt_json}, indent=2))
    write_weights(tmp, model, tokenizer, meta)  # digests all four files
    swap_folder(tmp, folder)
    atomic_write(run_dir / "latest", folder.name)
    kept = sorted((run_dir / "checkpoints").glob("update-*"), key=lambda p: int(p.name.split("-")[1]))
    for old in kept[: -keep]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def read_trainer_state(folder: Path, device: torch.device) -> tuple[dict, dict, dict]:
    """A checkpoint's trainer state (update, data position, ...), optimizer state dict (on ``device``) and RNG
    states (``torch``, ``cuda``: a list). The caller has verified the folder's files."""
    tensors = read_weights(folder / "trainer_state.safetensors")
    state = read_json(folder / "trainer_state.json")
    opt = state.pop("optimizer")
    state.pop("files_sha256", None)  # checkpoints written before config.json covered the trainer state
    optimizer = {"state": {int(i): {k: tensors[f"optimizer.{i}.{k}"].to(device) for k in keys}
                           for i, keys in opt["state_keys"].items()},
                 "param_groups": opt["param_groups"]}
    rng = {"torch": tensors["rng.torch"],
           "cuda": [tensors[k] for k in sorted(k for k in tensors if k.startswith("rng.cuda."))]}
    return state, optimizer, rng


def checkpoint_update(folder: Path) -> int:
    """The update a checkpoint folder (``checkpoints/update-N`` or ``best/``) holds."""
    state = folder / "trainer_state.json"
    meta = read_json(state if state.is_file() else folder / "config.json")
    return int(meta["update"])


def kept_checkpoint(run: Path, update: int) -> Path:
    """The checkpoint folder of ``update`` that the Trainer run ``run`` keeps; an error lists those it keeps."""
    folder = run / "checkpoints" / f"update-{update}"
    if not folder.is_dir():
        kept = sorted(checkpoint_update(f) for f in (run / "checkpoints").glob("update-*") if f.is_dir())
        raise WorkbenchError(f"{run} has no checkpoint of update {update}; it keeps updates "
                             f"{', '.join(map(str, kept)) or 'none'} (or give best or latest)")
    return folder


def run_and_checkpoint(run: Path, checkpoint: str | int) -> tuple[Path, str | int]:
    """A Trainer run and which of its checkpoints: ``checkpoint`` is ``"best"``, ``"latest"`` or an update number
    (an int, or its digits); a checkpoint folder given as the run (``RUN/checkpoints/update-N``) is that run's
    update N."""
    if isinstance(checkpoint, str) and checkpoint.isdigit():
        checkpoint = int(checkpoint)
    if not (checkpoint in ("best", "latest") or whole(checkpoint)):
        raise WorkbenchError(f"checkpoint must be best, latest or an update number, not {checkpoint!r}")
    if run.parent.name == "checkpoints" and (run.parent.parent / "latest").is_file():
        return run.parent.parent, checkpoint_update(run)
    return run, checkpoint
