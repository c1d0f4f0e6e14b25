"""The models shipped in ``trained/``: export a training run into a model folder with its card, and list them.

A shipped model is a folder ``trained/<model>-<pair>`` (``bgt-en-fr``, ``bilingual_trans-en-ja``, ``sp-en-fr``,
...) holding ``config.json`` (model config, training config, tokenizer sha256, whether the decoders were kept),
float16 ``model.safetensors``, ``spm.model``, ``card.md`` for people and ``card.json`` with the same numbers for
tests and reports. Decoders are dropped by default except where style transfer needs them (:data:`WITH_DECODERS`);
an export that keeps them (``keep_decoders=True``) can be trained on with ``workbench train --init-from``.
``workbench.load("bgt-en-fr")`` resolves these names. A model trained elsewhere (a lent GPU) travels as a package
of checksummed shards (:func:`export_shards` there, :func:`import_shards` here; ``scripts/gpu_campaign``).
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
from pathlib import Path

import pandas as pd
import torch
from safetensors.torch import load_file, save_file

from .data import sha256_of
from .data.sts import TATOEBA_CODES
from .errors import WorkbenchError, check_name
from .evaluation import evaluate
from .paths import trained_dir
from .probing.probe import probe
from .probing.tasks import get_task

WITH_DECODERS = ("bgt-en-fr",)  # the style-transfer model (paper §5.3 uses the en–fr model)
# Table 3's tasks (Gender is added for encoders that read French or Spanish).
TABLE3_TASKS = ("subj_num", "obj_num", "tree_depth", "top_const", "word_content", "length", "punct_num",
                "punct_first")
GENDER_TASKS = {"fr": "gender_fr", "es": "gender_es"}
TABLE3_MODELS = ("bgt", "bilingual_trans")
CARD_SIZES = {"train": 6000, "valid": 1000, "test": 1000}  # probing sizes for cards, demo and reproduction
SHARDS_FORMAT = "bgt-workbench model package 1"
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def shipped(root: str | Path | None = None) -> list[str]:
    """Names of the models in ``trained/`` (folders with a ``card.json``)."""
    root = Path(root) if root else trained_dir()
    return sorted(p.name for p in root.iterdir() if (p / "card.json").is_file()) if root.is_dir() else []


def card(name: str, root: str | Path | None = None) -> dict:
    """The ``card.json`` of a shipped model, once its sha256 matches the one its ``config.json`` records (a card
    is measured from the weights when the model is exported; an edited card is refused, not shown)."""
    from .data import sha256_of
    folder = (Path(root) if root else trained_dir()) / name
    path = folder / "card.json"
    if not path.is_file():
        raise WorkbenchError(f"no shipped model {name!r}; shipped: {', '.join(shipped(root)) or 'none'}")
    recorded = json.loads((folder / "config.json").read_text()).get("files_sha256", {}).get("card.json")
    if recorded != sha256_of(path):
        raise WorkbenchError(f"{path} does not match the sha256 recorded in {folder / 'config.json'} (edited or "
                             f"replaced); restore it (git checkout), or measure it again with workbench.zoo.write_card({name!r})")
    return json.loads(path.read_text(encoding="utf-8"))


def _training_record(run: Path, update: int | None = None) -> dict:
    """Updates, pairs seen and summed update time up to ``update`` (default: the end) from a run's
    ``metrics.jsonl``; ``run_updates`` says how long the run went on."""
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    steps = [line for line in lines if "tokens_per_s" in line]
    if steps:
        upto = [s for s in steps if update is None or s["update"] <= update]
        return {"updates": upto[-1]["update"], "run_updates": steps[-1]["update"],  # as logged, else summed
                "pairs_seen": int(upto[-1].get("pairs_seen", sum(s.get("sentences", 0) for s in upto))),
                "train_seconds": round(upto[-1].get("train_seconds",
                                                    sum(s["tokens"] / s["tokens_per_s"] for s in upto)), 1)}
    last = lines[-1]  # WMF: one line for the whole fit
    return {"updates": last.get("iterations"), "pairs_seen": last.get("pairs"), "preset": last.get("preset"),
            "train_seconds": round(last.get("seconds", float("nan")), 1)}


def hardware() -> str:
    """A short description of this machine (where a run exported here was trained, unless stated)."""
    if torch.cuda.is_available():
        return f"1 × {torch.cuda.get_device_name(0)}"
    return f"CPU ({platform.machine()}, {os.cpu_count()} cores)"


def check_model_name(name: str) -> str:
    """``name`` if it can be a model folder's name (letters, digits, ``_ . -``; not ``.``/``..``)."""
    if not SAFE_NAME.fullmatch(name or ""):
        raise WorkbenchError(f"{name!r} is not a valid model name: use letters, digits, '_', '.' and '-' "
                             "(e.g. bgt-en-fr), starting with a letter or digit")
    return name


def _exported(run: str | Path, name: str | None, keep_decoders: bool | None, checkpoint: str,
              hardware_text: str | None) -> tuple[str, dict, dict, Path | None, pd.DataFrame | None]:
    """What a shipped model of ``run`` holds: (name, float16 state dict, config.json, spm.model, curve)."""
    from .train import checkpoint_update, latest_checkpoint, learning_curve, verify_files
    check_name("checkpoint", checkpoint, ("best", "latest"))
    run = Path(run)
    folder = None
    if not (run / "config.json").is_file():  # not WMF's single folder: a Trainer run
        folder = run / "best" if checkpoint == "best" and (run / "best").is_dir() else latest_checkpoint(run)
    meta = json.loads(((run / "config.json") if folder is None else folder / "config.json").read_text())
    verify_files(run if folder is None else folder, meta)  # never ship a damaged or replaced checkpoint
    setting, train = meta["model"]["setting"], meta.get("train", {})
    name = check_model_name(name or f"{setting}-{train.get('pair') or '-'.join(meta['model']['languages'])}")
    keep = name in WITH_DECODERS if keep_decoders is None else keep_decoders
    record = {**_training_record(run, None if folder is None else checkpoint_update(folder)),
              "hardware": hardware_text or hardware()}
    curve = None
    if folder is not None:
        record["checkpoint"] = "best STS-B dev (semantic)" if folder.name == "best" else "latest"
        curve = learning_curve(run).assign(run=name)
    if setting == "wmf":  # word factors in float16 (upcast on load); idf as it is
        tensors = load_file(str(run / "model.safetensors"))
        return (name, {k: v.half() if k.startswith("factor.") else v for k, v in tensors.items()},
                {**meta, "training": record}, None, None)
    state = load_file(str(folder / "model.safetensors"))
    state = {k: (v.half() if v.is_floating_point() else v) for k, v in state.items()
             if keep or not k.startswith("decoders.")}
    meta = {k: v for k, v in meta.items() if k not in ("update", "stsb_dev", "files_sha256")}  # the run's own
    return name, state, {**meta, "decoders": keep, "training": record}, folder / "spm.model", curve


def _install(name: str, root: Path, state: dict, config: dict, spm_model: Path | None, curve: pd.DataFrame | None,
             sizes: dict[str, int], show_progress: bool, force: bool, transfer_pairs: int = 200) -> Path:
    """Write the model into a temporary folder beside ``root/name``, measure its card there, then swap it in:
    an existing model is replaced only with ``force`` and only once the new one is complete."""
    from .train import file_digests, swap_folder
    dest = root / name
    if dest.exists() and not force:
        raise WorkbenchError(f"{dest} exists; pass --force (force=True) to replace it, or choose another --name")
    tmp = root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        save_file(state, str(tmp / "model.safetensors"))
        if spm_model is not None:
            shutil.copyfile(spm_model, tmp / "spm.model")
        if curve is not None and not curve.empty:
            curve.to_csv(tmp / "curve.csv", index=False)
        (tmp / "config.json").write_text(json.dumps({**config, "files_sha256": file_digests(tmp)}, indent=2))
        write_card(name, folder=tmp, sizes=sizes, show_progress=show_progress, transfer_pairs=transfer_pairs)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    swap_folder(tmp, dest)
    return dest


def export(run: str | Path, name: str, keep_decoders: bool | None = None, root: str | Path | None = None,
           hardware_text: str | None = None, sizes: dict[str, int] = CARD_SIZES, show_progress: bool = True,
           checkpoint: str = "best", force: bool = False) -> Path:
    """Copy a run into ``trained/<name>`` (float16 weights, decoders dropped unless needed), then measure it
    (probes at ``sizes``) and write its card; an existing model of that name is replaced only with ``force``.
    ``checkpoint="best"`` takes the run's ``best/`` (best semantic STS-B dev) where it has one, else the latest
    checkpoint (``"latest"``: always that). The run's learning curve goes with it (``curve.csv``). Returns the
    model folder."""
    if not name:
        raise WorkbenchError("name the model to export (e.g. bgt-en-fr): the name decides which folder of trained/ "
                             "it becomes")
    check_model_name(name)  # before reading the run
    name, state, config, spm_model, curve = _exported(run, name, keep_decoders, checkpoint, hardware_text)
    return _install(name, Path(root) if root else trained_dir(), state, config, spm_model, curve, sizes,
                    show_progress, force)


def export_shards(run: str | Path, out: str | Path, name: str | None = None, keep_decoders: bool = False,
                  checkpoint: str = "best", shard_mib: float = 15) -> Path:
    """A run's model as a package to carry between machines: ``out/<name>/`` with float16 safetensors shards of
    at most ``shard_mib`` MiB each (encoders only unless ``keep_decoders``; a tensor larger than a shard is
    split by rows), ``spm.model`` and ``manifest.json`` (config, training record, learning curve, sha256 of
    every file). :func:`import_shards` rebuilds the shipped model from it."""
    name, state, config, spm_model, curve = _exported(run, name, keep_decoders, checkpoint, None)
    if spm_model is None:
        raise WorkbenchError("WMF trains on CPU in minutes: ship it with `workbench models export`")
    limit = int(shard_mib * 2 ** 20)
    pieces, split = {}, {}
    for key, tensor in state.items():
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
    tmp = package.with_name(f".{name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for i, shard in enumerate(shards, 1):
        save_file(shard, str(tmp / f"model-{i:05d}-of-{len(shards):05d}.safetensors"))
    shutil.copyfile(spm_model, tmp / "spm.model")
    manifest = {"format": SHARDS_FORMAT, "name": name, "config": config, "split": split,
                "curve": None if curve is None else curve.to_dict("records"),
                "files": {p.name: sha256_of(p) for p in sorted(tmp.iterdir())}}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
    shutil.rmtree(package, ignore_errors=True)
    os.replace(tmp, package)
    return package


def import_shards(package: str | Path, name: str | None = None, root: str | Path | None = None,
                  sizes: dict[str, int] = CARD_SIZES, show_progress: bool = True, force: bool = False,
                  transfer_pairs: int = 200) -> Path:
    """Rebuild ``trained/<name>`` (default: the package's name) from a package of :func:`export_shards` (every
    file's sha256 checked first), then measure it here for its card, exactly as :func:`export` does (and, like
    it, replace an existing model only with ``force``). Returns the model folder."""
    package = Path(package)
    if not (package / "manifest.json").is_file():
        raise WorkbenchError(f"{package} is not a model package (no manifest.json); packages are written by "
                             "export_shards (scripts/gpu_campaign)")
    manifest = json.loads((package / "manifest.json").read_text())
    if manifest.get("format") != SHARDS_FORMAT:
        raise WorkbenchError(f"{package}: unknown package format {manifest.get('format')!r} (expected "
                             f"{SHARDS_FORMAT!r})")
    for file, digest in manifest["files"].items():
        if not (package / file).is_file():
            raise WorkbenchError(f"{package} lacks {file}; copy the whole package again")
        if sha256_of(package / file) != digest:
            raise WorkbenchError(f"{package / file} does not match its sha256 in manifest.json (damaged in "
                                 "transfer?); copy it again")
    state = {}
    for file in sorted(f for f in manifest["files"] if f.endswith(".safetensors")):
        state.update(load_file(str(package / file)))
    for key, n in manifest["split"].items():
        state[key] = torch.cat([state.pop(f"{key}#part{i}") for i in range(n)])
    name = check_model_name(name or manifest["name"])
    curve = pd.DataFrame(manifest["curve"]).assign(run=name) if manifest.get("curve") else None
    return _install(name, Path(root) if root else trained_dir(), state, manifest["config"], package / "spm.model",
                    curve, sizes, show_progress, force, transfer_pairs)


def measure(model, sizes: dict[str, int] = CARD_SIZES, show_progress: bool = False) -> pd.DataFrame:
    """STS 2012–16 and Hard STS for every view of ``model`` that reads English, Tatoeba error rates (both
    directions) for every view that reads English and a Tatoeba language, and the Table 3 probes (at ``sizes``,
    no control task) for every view of the Table 3 models (BGT, BILINGUALTRANS) or the semantic view of the
    others: tidy rows with a ``view`` column."""
    frames = []
    for view in model.views:
        encoder = model.encoder(view)
        rows = []
        if "en" in encoder.languages:
            rows += [evaluate(encoder, "sts", show_progress=show_progress),
                     evaluate(encoder, "hard_sts", show_progress=show_progress)]
            if set(encoder.languages) & set(TATOEBA_CODES):
                rows.append(evaluate(encoder, "tatoeba", show_progress=show_progress))
        probed = view == "semantic" or getattr(model.cfg, "setting", "wmf") in TABLE3_MODELS
        tasks = [*(TABLE3_TASKS if "en" in encoder.languages else ()),
                 *(GENDER_TASKS[lang] for lang in encoder.languages if lang in GENDER_TASKS)] if probed else []
        rows += [probe(encoder, task, control=False, sizes=sizes).to_frame() for task in tasks]
        if rows:
            frames.append(pd.concat(rows, ignore_index=True).assign(view=view, fingerprint=encoder.fingerprint))
    return pd.concat(frames, ignore_index=True)


def summarise_views(df: pd.DataFrame) -> dict:
    """Per view: fingerprint, STS per year + average, Hard STS, Tatoeba error rates (%), probe accuracies
    (× 100)."""
    out = {}
    for view, rows in df.groupby("view", sort=False):
        entry = {"fingerprint": rows["fingerprint"].iloc[0]}
        sts = rows[(rows["metric"] == "pearson") & (rows["dataset"] == "all")]
        if not sts.empty:
            entry["sts"] = {task: round(float(v), 2) for task, v in zip(sts["task"], sts["value"])}
            hard = rows[(rows["task"] == "Hard STS") & (rows["metric"] == "pearson")]
            entry["hard_sts"] = {d: round(float(v), 2) for d, v in zip(hard["dataset"], hard["value"])}
            entry["hard_sts"]["avg"] = round(float(hard["value"].mean()), 2)
        tatoeba = rows[rows["task"] == "Tatoeba"]
        if not tatoeba.empty:
            entry["tatoeba"] = {dataset.split("-")[0]: {m.removeprefix("error "): round(float(v), 2)
                                                        for m, v in zip(group["metric"], group["value"])}
                                for dataset, group in tatoeba.groupby("dataset", sort=False)}
        acc = rows[rows["metric"] == "accuracy"]
        entry["probing"] = {t: round(100 * float(v), 2) for t, v in zip(acc["task"], acc["value"])}
        out[view] = entry
    return out


def write_card(name: str, root: str | Path | None = None, sizes: dict[str, int] = CARD_SIZES,
               show_progress: bool = False, folder: Path | None = None, transfer_pairs: int = 200) -> dict:
    """Measure the shipped model ``name`` (in ``root``, or in ``folder``) and write its ``card.json`` and
    ``card.md``."""
    from .train import file_digests, load
    folder = folder or (Path(root) if root else trained_dir()) / name
    config = json.loads((folder / "config.json").read_text())
    model = load(folder)
    views = summarise_views(measure(model, sizes=sizes, show_progress=show_progress))
    transfer = (_transfer_summary(model, transfer_pairs) if config.get("decoders") and config["model"]["setting"] == "bgt"
                else None)
    train, record = config.get("train", {}), config["training"]
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    info = {"name": name, "model": config["model"]["setting"], "pair": train.get("pair", "-".join(
                config["model"]["languages"])), "preset": train.get("preset", record.get("preset")), "training": record,
            "decoders": config.get("decoders", False), "megabytes": round(size / 2 ** 20, 1),
            "curve": (folder / "curve.csv").is_file(),
            "probing_sizes": sizes, "views": views, **({"style_transfer": transfer} if transfer else {})}
    (folder / "card.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    (folder / "card.md").write_text(_card_markdown(info, config), encoding="utf-8")
    # the folder was verified by load() above; the new card joins its sha256 list
    config["files_sha256"] = file_digests(folder)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return info


def _transfer_summary(model, n: int) -> dict:
    """The style-transfer evaluation of a BGT with decoders (``transfer_scores`` on ``n`` fixed held-out pairs,
    200 for shipped cards; beam 5): each share × 100 with its bootstrap CI, and the KL of each latent in nats."""
    from .evaluation.style_transfer import transfer_pairs, transfer_scores
    summary, _ = transfer_scores(model, transfer_pairs(n))
    return {row.metric: ([round(100 * row.value, 1), round(100 * row.ci_low, 1), round(100 * row.ci_high, 1)]
                         if not row.metric.startswith("kl_") else round(row.value, 2))
            for row in summary.itertuples()}


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 3600:.2f} h ({seconds:.0f} s)"


def _kept_decoders(name: str) -> str:
    why = "style transfer; " if name in WITH_DECODERS else ""
    return f"kept ({why}`workbench train --init-from {name}` continues its training)"


def _card_markdown(info: dict, config: dict) -> str:
    train, record = config.get("train", {}), info["training"]
    model_cfg = {k: v for k, v in config["model"].items() if k not in ("languages", "setting", "pad_id", "eos_id")}
    lines = [f"# {info['name']}", "",
             f"- **model**: `{info['model']}` on **"
             + ("every pair (en–fr, es, ar, tr, ja)" if info["pair"] == "all" else info["pair"])
             + "** (the shared parallel data's training split)",
             f"- **preset**: `{info['preset']}`; model settings: "
             + ", ".join(f"{k}={v}" for k, v in model_cfg.items() if not isinstance(v, (list, dict))),
             (f"- **training**: {record['updates']} ALS iterations on {record['pairs_seen']} pairs"
              if info["model"] == "wmf" else
              f"- **training**: {record['updates']} updates, {record['pairs_seen']} pairs seen"
              + (f" (sampled from {train['max_pairs']} pairs)" if train.get("max_pairs") else "")
              + (f"; the checkpoint with the best semantic STS-B dev of a run of {record['run_updates']} updates"
                 if record.get("checkpoint", "").startswith("best") else ""))
             + f", {_duration(record['train_seconds'])} of update time on {record['hardware']}",
             *([f"- **learning curve**: `curve.csv` (STS-B dev per view, validation loss); "
                f"`workbench curve {info['name']}` draws it"] if info.get("curve") else []),
             f"- **weights**: float16, {info['megabytes']} MB"
             + ("" if info["model"] == "wmf" else "; decoders " + (_kept_decoders(info["name"]) if info["decoders"]
                                                                    else "dropped (encoders only)")), "",
             "Numbers: Pearson's r × 100 (STS) and test accuracy × 100 (logistic-regression probes, "
             f"{info['probing_sizes']['train']}/{info['probing_sizes']['valid']}/{info['probing_sizes']['test']} "
             "sentences). Recomputed by the tests from these weights.", ""]
    if info.get("style_transfer"):
        lines += ["## style transfer", "", "`workbench transfer --eval` on its fixed held-out pairs (200 for shipped "
                  "models; beam 5): share of pairs, % with bootstrap 95% CI; KL in nats per sentence.", "",
                  "| metric | value |", "|---|---|"]
        lines += [f"| {metric} | {value if not isinstance(value, list) else f'{value[0]} ({value[1]}–{value[2]})'} |"
                  for metric, value in info["style_transfer"].items()]
        lines.append("")
    for view, entry in info["views"].items():
        lines += [f"## view `{view}`", "", f"fingerprint `{entry['fingerprint'][:16]}`", ""]
        if "sts" in entry:
            lines += ["| " + " | ".join(entry["sts"]) + " | Hard+ | Hard− | Hard avg |",
                      "|" + "---|" * (len(entry["sts"]) + 3),
                      "| " + " | ".join(f"{v:.1f}" for v in entry["sts"].values())
                      + f" | {entry['hard_sts'].get('hard+', float('nan')):.1f} | "
                        f"{entry['hard_sts'].get('hard-', float('nan')):.1f} | {entry['hard_sts']['avg']:.1f} |", ""]
        if "tatoeba" in entry:
            lines += ["Tatoeba similarity-search error (%, 1000 pairs per language):", "",
                      "| " + " | ".join(f"{lang}→en | en→{lang}" for lang in entry["tatoeba"]) + " |",
                      "|" + "---|" * (2 * len(entry["tatoeba"])),
                      "| " + " | ".join(f"{e['xx->en']:.1f} | {e['en->xx']:.1f}" for e in entry["tatoeba"].values())
                      + " |", ""]
        if entry["probing"]:
            lines += ["| " + " | ".join(get_task(t).title for t in entry["probing"]) + " |",
                      "|" + "---|" * len(entry["probing"]),
                      "| " + " | ".join(f"{v:.1f}" for v in entry["probing"].values()) + " |", ""]
    return "\n".join(lines)
