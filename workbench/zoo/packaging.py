"""Packaging the models shipped in ``trained/``: export a training run into a model folder (its card is measured
by :mod:`workbench.zoo.cards`), or carry it between machines as checksummed shards.

A shipped model is a folder ``trained/<model>-<pair>`` (``bgt-en-fr``, ``bilingual_trans-en-ja``, ``sp-en-fr``,
...) holding ``config.json`` (model config, training config, tokenizer sha256, whether the decoders were kept),
float16 ``model.safetensors``, ``spm.model``, ``card.md`` for people and ``card.json`` with the same numbers for
tests and reports. Decoders are dropped by default except where style transfer needs them (:data:`WITH_DECODERS`);
an export that keeps them (``keep_decoders=True``) can be trained on with ``workbench train --init-from``.
``workbench.load("bgt-en-fr")`` (:mod:`workbench.models.folder`) resolves these names. A model trained elsewhere
(a lent GPU) travels as a package of checksummed shards (:func:`export_shards` there, :func:`import_shards` here;
``scripts/gpu_campaign``).
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import torch
from safetensors.torch import save_file

from ..checks import WorkbenchError, check_keys, plain_name, sha256_hex, whole
from ..data import sha256_of
from ..models.kinds import KINDS, checked_config, fitted
from ..models.checkpoint import checkpoint_update, kept_checkpoint, run_and_checkpoint
from ..models.folder import ModelFolder, file_digests, latest_checkpoint, read_weights
from ..models.pins import pin, shipped
from ..models.runlog import (CURVE_COLUMNS, DEV_METRICS, lacking_curve_columns, learning_curve, metrics_curve,
                             read_metrics)
from ..paths import only_writer, read_json, sealed_config, swap_folder, temp_sibling, trained_dir
from ..training import train
from ..training.recipes import TrainConfig
from ..training.trainer import hardware
from .cards import CARD_SIZES, CARD_TRANSFER_PAIRS, write_card
from .transport import PRECISIONS, fingerprint, pack_tensors, restore_tensors

WITH_DECODERS = ("bgt-en-fr",)  # the style-transfer model (paper §5.3 uses the en–fr model)
SHARDS_FORMAT = "bgt-workbench model package 2"  # 2: a precision, int8 scales and the restored weights' fingerprint
FIRST_SHARDS_FORMAT = "bgt-workbench model package 1"  # float16 shards (the campaigns of 2026-11-26/27)


def _training_record(run: Path, lines: list[dict], update: int | None = None) -> dict:
    """Updates, pairs seen, summed update time and hardware up to ``update`` (default: the end) from the records
    of a run's ``metrics.jsonl``; ``run_updates`` says how long the run went on. Runs logged before the trainer
    recorded its hardware are said to have run on this machine."""
    if not lines:
        raise WorkbenchError(f"{run} has no metrics.jsonl (or an empty one): not a training run to export")
    steps = [line for line in lines if "tokens_per_s" in line]
    here = hardware()  # for lines logged before the trainer recorded it
    if steps:
        # the run's own update lines up to ``update``; for a model the run started from (its best when no update
        # of the run beat it), the line the run carried over for that update
        upto = [s for s in steps if update is None or s["update"] <= update] or [
            line for line in lines if line["update"] == update and "train_seconds" in line][-1:]
        # the hardware of every update line, and of the lines a run started from a trained model carried over
        machines = [line.get("hardware") or here for line in lines
                    if (update is None or line["update"] <= update) and ("tokens_per_s" in line or "hardware" in line)]
        last = upto[-1]  # its totals as logged, else summed over the lines
        pairs = last["pairs_seen"] if "pairs_seen" in last else sum(s.get("sentences", 0) for s in upto)
        seconds = last["train_seconds"] if "train_seconds" in last else sum(s["tokens"] / s["tokens_per_s"]
                                                                            for s in upto)
        return {"updates": last["update"], "run_updates": steps[-1]["update"], "pairs_seen": int(pairs),
                "train_seconds": round(seconds, 1), "hardware": " then ".join(dict.fromkeys(machines))}
    last = lines[-1]  # a one-go fit: one line for the whole fit
    return {"updates": last.get("iterations"), "pairs_seen": last.get("pairs"), "preset": last.get("preset"),
            "train_seconds": round(last.get("seconds", float("nan")), 1),
            "hardware": last.get("hardware") or here}


def check_model_name(name: str) -> str:
    """``name`` if it can be a model folder's name (letters, digits, ``_ . -``; not ``.``/``..``)."""
    if not plain_name(name):
        raise WorkbenchError(f"{name!r} is not a valid model name: use letters, digits, '_', '.' and '-' "
                             "(e.g. bgt-en-fr), starting with a letter or digit")
    return name


def _checkpoint(run: Path, checkpoint: str | int) -> tuple[ModelFolder, int, bool]:
    """The folder a Trainer run ships (opened), the update it holds and whether it is the run's best. ``"best"``:
    the run's ``best/``; for a run started from a trained model (``--init-from``) that none of its own updates beat
    on its dev score (STS-B dev, or a pair without English's validation retrieval), that model, as long as it is
    still the one the run started from (same update and dev score); else (and for ``"latest"``) the latest
    checkpoint. An update number: the run's checkpoint of that update."""
    if not isinstance(checkpoint, str):
        return ModelFolder(kept_checkpoint(run, checkpoint)), checkpoint, False
    latest = latest_checkpoint(run)
    if checkpoint == "best":
        if (run / "best").is_dir():
            return ModelFolder(run / "best"), checkpoint_update(run / "best"), True
        state = read_json(latest / "trainer_state.json")
        best, source = state.get("best"), state.get("init_from")
        if best and source and (Path(source) / "curve.csv").is_file():
            metric = next(m for m in DEV_METRICS if m in best)
            dev = learning_curve(source)
            dev = dev[(dev["metric"] == metric) & (dev["view"] == "semantic") & (dev["update"] == best["update"])]
            start = ModelFolder(source)
            if (start.config.get("training", {}).get("updates") == best["update"] and len(dev)
                    and abs(float(dev["value"].iloc[0]) - best[metric]) < 1e-6):
                return start, best["update"], True
    return ModelFolder(latest), checkpoint_update(latest), False


def _exported(run: str | Path, name: str | None, keep_decoders: bool | None, checkpoint: str,
              hardware_text: str | None) -> tuple[str, dict, dict, bytes | None, pd.DataFrame | None]:
    """What a shipped model of ``run`` holds: (name, float16 state dict, config.json, spm.model's bytes, curve).
    The folder is opened once (:class:`ModelFolder`: config read and files verified once), and so is the run's
    ``metrics.jsonl``."""
    run, checkpoint = run_and_checkpoint(Path(run), checkpoint)
    single = (run / "config.json").is_file()  # a one-go fit's single folder, else a Trainer run
    # opened once, never a damaged or replaced checkpoint
    opened, update, is_best = (ModelFolder(run), None, False) if single else _checkpoint(run, checkpoint)
    meta, setting = opened.config, opened.config["model"]["setting"]
    pair = meta.get("train", {}).get("pair") or "-".join(meta["model"]["languages"])
    name = check_model_name(name or f"{setting}-{pair}")
    keep = name in WITH_DECODERS if keep_decoders is None else keep_decoders
    lines = read_metrics(run)
    record = _training_record(run, lines, update)
    if hardware_text:
        record["hardware"] = hardware_text
    one_go = fitted(setting)
    if one_go:
        return name, one_go.shipped(opened.weights()), {**meta, "training": record}, None, None
    chosen_by = DEV_METRICS[next((m for m in DEV_METRICS if m in meta), "stsb_dev")][0]
    record["checkpoint"] = (f"best {chosen_by} (semantic)" if is_best
                            else "latest" if update == record.get("run_updates") else f"update {update}")
    # what only training reads (BGT's adversaries) goes with the decoders, into a model meant to train on: a
    # continuation that began them afresh gave back in 400 updates what they had taken out of z_en in 2,800
    training_only = () if keep else KINDS[setting].network.TRAINING_ONLY
    state = {k: (v.half() if v.is_floating_point() else v) for k, v in opened.weights().items()
             if (keep or not k.startswith("decoders.")) and k.split(".", 1)[0] not in training_only}
    meta = {k: v for k, v in meta.items() if k not in ("update", *DEV_METRICS, "files_sha256")}  # the run's own
    return (name, state, {**meta, "decoders": keep, "training": record}, opened.read("spm.model"),
            metrics_curve(lines, run.name).assign(run=name))


def _install(name: str, root: Path, state: dict, config: dict, spm_model: bytes | None,
             curve: pd.DataFrame | None, sizes: dict[str, int], show_progress: bool, force: bool,
             transfer_pairs: int) -> Path:
    """Write the model into a temporary folder beside ``root/name``, measure its card there, then swap it in:
    an existing model is replaced only with ``force`` and only once the new one is complete."""
    dest = root / name
    if dest.exists() and not force:
        raise WorkbenchError(f"{dest} exists; pass --force (force=True) to replace it, or choose another --name")
    with only_writer(dest):  # a second export or import to this name is refused, not silently swapped in later
        tmp = temp_sibling(dest)
        try:
            save_file(state, str(tmp / "model.safetensors"))
            if spm_model is not None:
                (tmp / "spm.model").write_bytes(spm_model)
            if curve is not None and not curve.empty:
                curve.to_csv(tmp / "curve.csv", index=False)
            (tmp / "config.json").write_text(sealed_config({**config, "files_sha256": file_digests(tmp)}))
            write_card(name, folder=tmp, sizes=sizes, show_progress=show_progress, transfer_pairs=transfer_pairs)
            if dest.exists() and not force:  # written meanwhile by a writer that took no lock
                raise WorkbenchError(f"{dest} appeared while this model was measured; pass --force to replace it")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        swap_folder(tmp, dest)
        pin(dest)  # in trained/: the model's config.json is pinned, so the change shows in git
    return dest


def export(run: str | Path, name: str, keep_decoders: bool | None = None, root: str | Path | None = None,
           hardware_text: str | None = None, sizes: dict[str, int] = CARD_SIZES, show_progress: bool = True,
           checkpoint: str = "best", force: bool = False, transfer_pairs: int = CARD_TRANSFER_PAIRS) -> Path:
    """Copy a run into ``trained/<name>`` (float16 weights, decoders dropped unless needed), then measure it
    (probes at ``sizes``; a model with decoders also transfers style on ``transfer_pairs`` held-out pairs) and
    write its card; an existing model of that name is replaced only with ``force``.
    ``checkpoint="best"`` takes the run's ``best/`` (best semantic dev score) where it has one; a run started
    ``--init-from`` a trained model that none of its updates beat ships that model (with this run's curve and
    length); else the latest checkpoint (``"latest"``: always that). The run's learning curve goes with it
    (``curve.csv``). Returns the model folder."""
    if not name:
        raise WorkbenchError("name the model to export (e.g. bgt-en-fr): the name decides which folder of trained/ "
                             "it becomes")
    check_model_name(name)  # before reading the run
    name, state, config, spm_model, curve = _exported(run, name, keep_decoders, checkpoint, hardware_text)
    return _install(name, Path(root) if root else trained_dir(), state, config, spm_model, curve, sizes,
                    show_progress, force, transfer_pairs)


def export_shards(run: str | Path, out: str | Path, name: str | None = None, keep_decoders: bool = False,
                  checkpoint: str = "best", shard_mib: float = 15, precision: str = "fp16") -> Path:
    """A run's model as a package to carry between machines: ``out/<name>/`` with safetensors shards of at most
    ``shard_mib`` MiB each in ``precision`` (float16, or int8 with a scale per tensor: :mod:`.transport`;
    encoders only unless ``keep_decoders``; a tensor larger than a shard is split by rows), ``spm.model`` and
    ``manifest.json`` (config, training record, learning curve, the scales, the fingerprint of the restored
    weights and the sha256 of every file). :func:`import_shards` rebuilds the shipped model from it."""
    name, state, config, spm_model, curve = _exported(run, name, keep_decoders, checkpoint, None)
    if spm_model is None:
        raise WorkbenchError(f"{config['model']['setting']} is fitted on a CPU in minutes: ship it with "
                             "`workbench models export`")
    packed, scales = pack_tensors(state, precision)
    limit = int(shard_mib * 2 ** 20)
    pieces, split = {}, {}
    for key, tensor in packed.items():
        if tensor.nbytes <= limit:
            pieces[key] = tensor
            continue
        rows = max(1, limit // (tensor[0].nbytes or 1))
        parts = torch.split(tensor, rows)
        split[key] = len(parts)
        pieces.update({f"{key}#part{i}": part.contiguous() for i, part in enumerate(parts)})
    shards, size = [{}], 0
    for key, tensor in pieces.items():
        if shards[-1] and size + tensor.nbytes > limit:
            shards, size = shards + [{}], 0
        shards[-1][key] = tensor
        size += tensor.nbytes
    package = Path(out) / name
    tmp = temp_sibling(package)
    for i, shard in enumerate(shards, 1):
        save_file(shard, str(tmp / f"model-{i:05d}-of-{len(shards):05d}.safetensors"))
    (tmp / "spm.model").write_bytes(spm_model)
    manifest = {"format": SHARDS_FORMAT, "name": name, "config": config, "split": split,
                "precision": precision, "scales": scales, "restored_sha256": fingerprint(restore_tensors(packed,
                                                                                                        scales)),
                "curve": None if curve is None else curve.to_dict("records"),
                "files": {p.name: sha256_of(p) for p in sorted(tmp.iterdir())}}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
    swap_folder(tmp, package)
    return package


def _checked_manifest(package: Path) -> dict:
    """A package's manifest.json, refused as a whole (every problem named) unless it is the shape
    :func:`export_shards` writes. Its files are plain names inside the package: a manifest is data, never a path
    to read elsewhere."""
    manifest = read_json(package / "manifest.json")
    if not isinstance(manifest, dict):
        raise WorkbenchError(f"{package}/manifest.json is not a package manifest (a JSON object)")
    if manifest.get("format") not in (SHARDS_FORMAT, FIRST_SHARDS_FORMAT):
        raise WorkbenchError(f"{package}: unknown package format {manifest.get('format')!r} (expected "
                             f"{SHARDS_FORMAT!r} or the older {FIRST_SHARDS_FORMAT!r})")
    if manifest["format"] == FIRST_SHARDS_FORMAT:  # float16 shards, before packages recorded their precision
        manifest = {**manifest, "precision": "fp16", "scales": {}, "restored_sha256": None}
    problems = []
    scales = manifest.get("scales")
    if manifest.get("precision") not in PRECISIONS:
        problems.append(f"'precision' must be one of {', '.join(PRECISIONS)}")
    if not isinstance(scales, dict) or not all(isinstance(v, float) and math.isfinite(v) and v > 0
                                               for v in scales.values()):
        problems.append("'scales' must map int8 tensor names to positive numbers")
    if manifest["format"] == SHARDS_FORMAT and not sha256_hex(manifest.get("restored_sha256")):
        problems.append("'restored_sha256' must be the restored weights' fingerprint (64 hex digits)")
    files, split = manifest.get("files"), manifest.get("split", {})
    if not isinstance(files, dict) or not files:
        problems.append("'files' must map file names to sha256 digests")
        files = {}
    for file, digest in files.items():
        if not plain_name(file):
            problems.append(f"file {file!r} is not a plain file name inside the package")
        if not sha256_hex(digest):
            problems.append(f"the sha256 of {file!r} is not 64 hex digits")
    if "spm.model" not in files:
        problems.append("'files' lacks spm.model")
    if not any(isinstance(f, str) and f.endswith(".safetensors") for f in files):
        problems.append("'files' names no .safetensors weights")
    if not isinstance(split, dict) or not all(whole(n, 1, 10_000) for n in split.values()):
        problems.append("'split' must map tensor names to part counts (1 to 10,000)")
    if not isinstance(manifest.get("config"), dict) or not all(isinstance(manifest["config"].get(k), dict)
                                                               for k in ("model", "training")):
        problems.append("'config' must hold the model's config ('model') and its training record ('training')")
    curve = manifest.get("curve")
    if curve is not None and not (isinstance(curve, list) and all(
            isinstance(row, dict) and not lacking_curve_columns(row) for row in curve)):
        problems.append(f"'curve' must be a list of rows with {', '.join(CURVE_COLUMNS[1:])}")
    if not isinstance(manifest.get("name"), str):
        problems.append("'name' must be the model's name")
    if problems:
        raise WorkbenchError(f"{package}/manifest.json is not a valid package manifest: {'; '.join(problems)}")
    return manifest


def _restored(package: Path) -> tuple[str, dict, dict, bytes, pd.DataFrame | None]:
    """What a package of :func:`export_shards` holds, every file's sha256 checked first and the weights restored
    to float16 and checked against the fingerprint taken where the package was made: (name, state, config,
    spm.model's bytes, curve)."""
    if not (package / "manifest.json").is_file():
        raise WorkbenchError(f"{package} is not a model package (no manifest.json); packages are written by "
                             "export_shards (scripts/gpu_campaign)")
    manifest = _checked_manifest(package)
    checked_config(manifest["config"]["model"])  # a package declaring a huge network is refused before loading
    for file, digest in manifest["files"].items():
        if not (package / file).is_file():
            raise WorkbenchError(f"{package} lacks {file}; copy the whole package again")
        if (package / file).is_symlink() or not (package / file).resolve().is_relative_to(package.resolve()):
            raise WorkbenchError(f"{package / file} is a link ({(package / file).resolve()}); a package holds its "
                                 "own files: copy the file itself in")
        if sha256_of(package / file) != digest:
            raise WorkbenchError(f"{package / file} does not match its sha256 in manifest.json (damaged in "
                                 "transfer?); copy it again")
    packed, shard_of = {}, {}
    for file in sorted(f for f in manifest["files"] if f.endswith(".safetensors")):
        for key, tensor in read_weights(package / file).items():
            if key in packed:  # one of the two would silently win
                raise WorkbenchError(f"{package}: tensor {key!r} is in two shards ({shard_of[key]} and {file}); a "
                                     "package holds each tensor once: export the package again")
            packed[key], shard_of[key] = tensor, file
    for key, n in manifest["split"].items():
        missing = [f"{key}#part{i}" for i in range(n) if f"{key}#part{i}" not in packed]
        if missing:
            raise WorkbenchError(f"{package}: the shards lack {', '.join(missing[:3])} of the {n} parts of {key} "
                                 "that manifest.json lists; export the package again")
        packed[key] = torch.cat([packed.pop(f"{key}#part{i}") for i in range(n)])
    state = restore_tensors(packed, manifest["scales"])
    if manifest["restored_sha256"] is not None and fingerprint(state) != manifest["restored_sha256"]:
        raise WorkbenchError(f"{package}: the restored {manifest['precision']} weights differ from those the "
                             "package was made from (fingerprint mismatch); export the package again")
    name = check_model_name(manifest["name"])
    curve = pd.DataFrame(manifest["curve"]).assign(run=name) if manifest.get("curve") else None
    return name, state, manifest["config"], (package / "spm.model").read_bytes(), curve


def import_shards(package: str | Path, name: str | None = None, root: str | Path | None = None,
                  sizes: dict[str, int] = CARD_SIZES, show_progress: bool = True, force: bool = False,
                  transfer_pairs: int = CARD_TRANSFER_PAIRS) -> Path:
    """Rebuild ``trained/<name>`` (default: the package's name) from a package of :func:`export_shards` (every
    file's sha256 and the restored weights' fingerprint checked first), then measure it here for its card,
    exactly as :func:`export` does (and, like it, replace an existing model only with ``force``). Returns the
    model folder."""
    packaged, state, config, spm_model, curve = _restored(Path(package))
    name = check_model_name(name or packaged)
    if curve is not None:
        curve = curve.assign(run=name)
    return _install(name, Path(root) if root else trained_dir(), state, config, spm_model, curve, sizes,
                    show_progress, force, transfer_pairs)


def unpack_shards(package: str | Path, dest: str | Path) -> Path:
    """A package as a model folder at ``dest`` without a card (nothing measured): what ``workbench train
    --init-from DEST`` continues, on a machine that only trains (the campaign's device)."""
    _, state, config, spm_model, curve = _restored(Path(package))
    dest = Path(dest)
    tmp = temp_sibling(dest)
    try:
        save_file(state, str(tmp / "model.safetensors"))
        (tmp / "spm.model").write_bytes(spm_model)
        if curve is not None and not curve.empty:
            curve.to_csv(tmp / "curve.csv", index=False)
        (tmp / "config.json").write_text(sealed_config({**config, "files_sha256": file_digests(tmp)}))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    swap_folder(tmp, dest)
    return dest


def retrain_plan(names: list[str] | None = None, root: str | Path | None = None) -> pd.DataFrame:
    """How to make each shipped model (default: all) again from scratch, one row each: the recipe recorded in its
    ``config.json`` (``train``; ``workbench train --config trained/NAME/config.json`` reads it), run for as many
    updates as its run went, exported from the same checkpoint with or without decoders as shipped, and the
    hours its training took (the card's time to the exported update, scaled to the whole run, on the hardware
    it names). A model that was trained in phases (``--init-from`` with other settings) is retrained with its
    last phase's settings from the start."""
    root = Path(root) if root else trained_dir()
    shipped_names = shipped(root)
    check_keys(names or (), shipped_names, str(root), "models")
    rows = []
    for name in dict.fromkeys(names or shipped_names):  # a name given twice is planned once
        config = read_json(root / name / "config.json")
        if "train" not in config:
            raise WorkbenchError(f"{root / name / 'config.json'} records no training recipe ('train')")
        record = config["training"]
        recipe = TrainConfig.from_recorded(config["train"], root / name / "config.json", record)
        updates = recipe.max_updates  # the whole run's length
        seconds = record["train_seconds"] * updates / max(1, record["updates"])  # the card times the export's updates
        rows.append({"name": name, "config": str(root / name / "config.json"), "model": recipe.model,
                     "updates": updates,
                     "checkpoint": "best" if str(record.get("checkpoint", "")).startswith("best") else "latest",
                     "keep_decoders": bool(config.get("decoders", False)),
                     "hours": round(seconds / 3600, 2), "hardware": record["hardware"]})
    return pd.DataFrame(rows)


def retrain(plan: pd.DataFrame, runs: str | Path = "runs/shipped", force: bool = False) -> list[Path]:
    """Train and export every row of :func:`retrain_plan`, resumably: a finished run (``DONE``) is not trained
    again, an interrupted one resumes from its last checkpoint; each export replaces the shipped model only with
    ``force``. Returns the model folders."""
    root, done = trained_dir(), []
    if not force:
        present = [name for name in plan["name"] if (root / name / "card.json").is_file()]
        if present:
            raise WorkbenchError(f"{', '.join(present)} are shipped already; --force replaces them with the "
                                 "retrained models (each once its new card is measured)")
    for row in plan.itertuples():
        run = Path(runs) / row.name
        cfg = TrainConfig.from_file(row.config)
        if not (run / "DONE").is_file():
            if fitted(cfg.model):
                shutil.rmtree(run, ignore_errors=True)  # a fit keeps no checkpoints: a broken one starts again
            # the recipe, for as many updates as the shipped run went (TrainConfig.from_recorded)
            train(cfg, run, resume=(run / "latest").is_file())
            (run / "DONE").write_text("trained\n")
        done.append(export(run, row.name, keep_decoders=row.keep_decoders, checkpoint=row.checkpoint, force=force))
    return done
