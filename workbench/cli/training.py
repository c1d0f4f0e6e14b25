"""Commands that make and package models: ``train``, ``models``, ``curve``, ``data``."""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from ..checks import WorkbenchError
from ..data.corpora import PAIRS, language_of, split_summary
from ..data.download import OPUS_URL, STS_URLS, download, opus_moses_to_tsv, sts_archive_to_tsv
from ..data.sts import STS_DATASETS
from ..models import KINDS
from ..models.folder import latest_checkpoint, read_config, shipped
from ..models.runlog import learning_curve
from ..paths import data_dir, trained_dir
from ..progress import progress_bar
from ..reports.pages import curve_report
from ..training import train
from ..training.recipes import PRESETS, TrainConfig
from ..zoo.cards import (card, halves_won, remeasure_halves, remeasure_languages, remeasure_transfer, rename,
                         summary_markdown)
from ..zoo.packaging import export, import_shards, retrain, retrain_plan
from .common import Command


def _models_arguments(p: argparse.ArgumentParser) -> None:
    msub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = msub.add_parser("list", help="the models in trained/ with their headline numbers")
    q.add_argument("--markdown", action="store_true", help="trained/README.md's table, from the cards "
                                                           "(`bash scripts/docs --write` puts it there)")
    q = msub.add_parser("export", help="copy a run into trained/NAME (fp16) and measure it for its card")
    q.add_argument("run", help="run directory or checkpoint folder")
    q.add_argument("--name", required=True, help="model name, e.g. bgt-en-fr (letters, digits, _ . -)")
    q.add_argument("--force", action="store_true", help="replace an existing model of that name (once the new "
                                                         "one is measured)")
    q.add_argument("--keep-decoders", action=argparse.BooleanOptionalAction, default=None,
                   help="keep the decoders (default: only for bgt-en-fr, the style-transfer model)")
    q.add_argument("--checkpoint", choices=("best", "latest"), default="best",
                   help="best: the run's best semantic STS-B dev (best/), where it has one; latest: its last")
    q = msub.add_parser("card", help="measure one section of shipped models' cards again (after its evaluation "
                                     "or its tasks changed); the other numbers stay as measured")
    q.add_argument("names", nargs="+", metavar="NAME", help="shipped BGTs")
    q.add_argument("--section", choices=("style_transfer", "languages", "halves"), default="style_transfer",
                   help="style_transfer (BGTs with decoders), languages (each view on the pair's other "
                        "language's own tasks) or halves (English minus semantic view on the form tasks and STS)")
    q = msub.add_parser("retrain", help="train shipped models again from scratch with their recorded recipes "
                                        "(config.json) and export them (scripts/train_shipped)")
    q.add_argument("--only", nargs="+", metavar="NAME", help="these shipped models (default: all)")
    q.add_argument("--runs", default="runs/shipped", help="where the runs go (runs/shipped; resumable)")
    q.add_argument("--dry-run", action="store_true", help="print the plan and the hours it took, train nothing")
    q.add_argument("--force", action="store_true", help="replace the shipped models with the retrained ones")
    q = msub.add_parser("import", help="rebuild trained/NAME from a model package (scripts/gpu_campaign's shards), "
                                       "checking every file's sha256, and measure it for its card")
    q.add_argument("package", help="package folder (manifest.json, model-*.safetensors, spm.model)")
    q.add_argument("--name", help="model name (default: the package's)")
    q.add_argument("--force", action="store_true", help="replace an existing model of that name (once the new "
                                                         "one is measured)")
    q = msub.add_parser("rename", help="give a model of trained/ another name (its folder, card and pin; the weights "
                                       "and numbers stay)")
    q.add_argument("name", help="the model's name now")
    q.add_argument("new", help="its new name (free: move the model of that name aside first)")


def _models(args) -> None:
    if args.action == "retrain":
        if Path(args.runs).exists() and not Path(args.runs).is_dir():
            raise WorkbenchError(f"--runs {args.runs} is a file; give the folder the runs go to (runs/shipped)")
        plan = retrain_plan(args.only)
        print(plan.drop(columns=["config"]).to_string(index=False))
        print(f"{len(plan)} models, {plan['hours'].sum():.1f} hours of training as recorded (each on the hardware "
              "its row names); each retrains with: workbench train --config trained/NAME/config.json "
              "(UPDATES updates, no time limit), then models export --checkpoint CHECKPOINT", flush=True)
        if not args.dry_run:
            for path in retrain(plan, args.runs, force=args.force):
                print(f"shipped: {path.resolve()}")
        return
    if args.action == "rename":
        print(f"renamed: {rename(args.name, args.new).resolve()}")
        return
    if args.action == "card":
        for name in progress_bar(args.names, desc="cards", unit="model", disable=len(args.names) == 1):
            if args.section == "languages":
                tasks = remeasure_languages(name)["languages"]["tasks"]
                print(f"{name}: {len(tasks)} own-language tasks measured again", end="")
            elif args.section == "halves":
                won = halves_won(remeasure_halves(name)["halves"])
                print(f"{name}: both halves measured again (English view wins {', '.join(won) or 'no form task'})",
                      end="")
            else:
                form = remeasure_transfer(name)["style_transfer"]["form_follows_style"]
                print(f"{name}: style transfer measured again (form follows the style {form[0]}%)", end="")
            print(f": {(trained_dir() / name / 'card.md').resolve()}")
        return
    if args.action in ("export", "import"):
        path = (export(args.run, name=args.name, keep_decoders=args.keep_decoders, checkpoint=args.checkpoint,
                       force=args.force)
                if args.action == "export" else import_shards(args.package, name=args.name, force=args.force))
        print(f"shipped: {path.resolve()}\ncard: {(path / 'card.md').resolve()}")
        return
    if args.markdown:
        print(summary_markdown())
        return
    rows = []
    for name in shipped():
        info = card(name)
        sem = info["views"].get("semantic", {})
        tatoeba = [v for errors in sem.get("tatoeba", {}).values() for v in errors.values()]
        rows.append({"name": name, "model": info["model"], "pair": info["pair"], "MB": info["megabytes"],
                     "updates": info["training"]["updates"], "STS12-16": sem.get("sts", {}).get("STS12-16"),
                     "Hard STS": sem.get("hard_sts", {}).get("avg"),
                     "Tatoeba err %": sum(tatoeba) / len(tatoeba) if tatoeba else None, "decoders": info["decoders"]})
    print(pd.DataFrame(rows).to_string(index=False) if rows else "no shipped models in trained/")


MODELS_COMMAND = Command(
    "models", "list the shipped models, export a training run into trained/, or retrain them",
    _models_arguments, _models)


def _curve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories or shipped model names")
    p.add_argument("--out", default="reports/curve", help="output folder (reports/curve)")
    p.add_argument("--no-static", action="store_true", help="skip the PNG export (needs Chromium)")


def _curve(args) -> None:
    curves = pd.concat([learning_curve(run) for run in args.runs], ignore_index=True)
    path = curve_report(curves, args.out, static=not args.no_static)
    last = curves[curves["metric"] == "stsb_dev"].sort_values("update").groupby(["run", "view"], sort=False).last()
    if not last.empty:
        print("latest STS-B dev (Pearson × 100):")
        print(last[["update", "value"]].to_string())
    print(f"report: {path.resolve()}\ndata: {(path.parent / 'curve.csv').resolve()}")


CURVE_COMMAND = Command(
    "curve", "learning curves of training runs or shipped models (STS-B dev, valid loss)",
    _curve_arguments, _curve, out="folder")


def _train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", choices=tuple(KINDS), help="the kind of model (default bgt)")
    p.add_argument("--pair", choices=[*PAIRS, "all"],
                   help="language pair (default en-fr; nmt: all, every pair through one encoder)")
    p.add_argument("--preset", choices=list(PRESETS),
                   help="tiny (default; CI, <1 min CPU), cpu (what trained/ holds), small (the GPU recipe), paper")
    p.add_argument("--config", help="TOML/JSON file of training settings (instead of --model/--pair/--preset)")
    p.add_argument("--out", help="run directory (runs/MODEL-PAIR-PRESET)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out from its latest checkpoint, with the recipe it records")
    p.add_argument("--init-from", metavar="MODEL",
                   help="start a new run from a trained model of the same settings (a name in trained/ or a folder): "
                        "its weights, update count and curve go on, the optimizer starts afresh (when the run "
                        "directory is lost)")
    p.add_argument("--max-updates", type=int, help="override the preset's number of updates")
    p.add_argument("--max-seconds", type=float,
                   help="stop after this many seconds with a checkpoint (continue with --resume); so do Ctrl-C and "
                        "SIGTERM, after the update in progress")
    p.add_argument("--seed", type=int)


def _recorded_recipe(args) -> Path | None:
    """What a bare ``--resume --out RUN`` continues with: the recipe RUN's latest checkpoint records, so a resume
    cannot silently switch to the default preset. --model/--pair/--preset beside it must agree with the record."""
    if not (args.resume and args.out):
        return None
    try:
        folder = latest_checkpoint(args.out)
    except WorkbenchError:
        return None  # no run there: the Trainer says so with the options that start one
    recorded = read_config(folder).get("train")
    if not isinstance(recorded, dict):
        return None  # a checkpoint from before recipes were recorded: the flags decide, as they did
    given = {"model": args.model, "pair": args.pair, "preset": args.preset}
    clash = [f"--{k} {v} (the run has {recorded.get(k)})" for k, v in given.items()
             if v is not None and v != recorded.get(k)]
    if clash:
        raise WorkbenchError(f"--resume continues {args.out} with the recipe it records; {', '.join(clash)} would "
                             "change it: drop those options, or start a new run in another --out")
    return folder / "config.json"


def _train(args) -> None:
    if args.resume and args.init_from:
        raise WorkbenchError(f"--resume continues the run in --out; --init-from {args.init_from} starts a new run "
                             "from a trained model: give one of them")
    changes = {"max_updates": args.max_updates, "max_seconds": args.max_seconds, "seed": args.seed}
    recipe = args.config or _recorded_recipe(args)
    if recipe:
        cfg = TrainConfig.from_file(recipe)
        cfg = TrainConfig(**{**cfg.__dict__, **{k: v for k, v in changes.items() if v is not None}})
    else:
        cfg = TrainConfig.from_preset(args.preset or "tiny", model=args.model or "bgt", pair=args.pair, **changes)
    out = Path(args.out or f"runs/{cfg.model}-{cfg.pair}-{cfg.preset}")
    final = train(cfg, out, resume=args.resume, init_from=args.init_from)
    if KINDS[cfg.model].fitted is not None:
        print(f"{cfg.model} {cfg.pair} ({cfg.preset}): {final['pairs']} pairs, weighted loss "
              f"{final['loss']:.1f}, {final['seconds']:.0f} s\nmodel: {out.resolve()}")
    elif final.get("finished"):
        print(f"{out.resolve()} is already finished at update {final['update']} (max_updates {cfg.max_updates}); "
              "a larger --max-updates with --resume continues it")
    else:
        print(f"{cfg.model} {cfg.pair} ({cfg.preset}): update {final.get('update')}, loss {final.get('loss', 0):.3f}, "
              f"valid loss {final.get('valid_loss', float('nan')):.3f}\nrun: {out.resolve()}")


TRAIN_COMMAND = Command(
    "train", f"train a model: {', '.join(KINDS)}",
    _train_arguments, _train)


def _data_arguments(p: argparse.ArgumentParser) -> None:
    dsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = dsub.add_parser("info", help="pairs per split for each language pair")
    q.add_argument("--pair", choices=PAIRS, nargs="+")
    q = dsub.add_parser("download", help="download OPUS parallel data or the STS test sets")
    q.add_argument("what", choices=("opus", "sts"))
    q.add_argument("--pair", choices=PAIRS, nargs="+")
    q.add_argument("--corpus", default="OpenSubtitles", help="OPUS corpus (OpenSubtitles)")
    q.add_argument("--version", default="v2018", help="OPUS corpus version (v2018)")
    q.add_argument("--years", type=int, nargs="+", choices=list(STS_DATASETS), default=list(STS_DATASETS))
    q.add_argument("--dest", help="data root to write into (default: the workbench data folder)")


def _data(args) -> None:
    if args.action == "info":
        rows = {pair: split_summary(pair) for pair in (args.pair or PAIRS)}
        print(pd.DataFrame(rows).T.to_string())
        return
    root = Path(args.dest) if args.dest else data_dir()
    if args.what == "opus":
        for pair in args.pair or PAIRS:
            language = language_of(pair)
            url = OPUS_URL.format(corpus=args.corpus, version=args.version, pair=pair)
            archive = download(url, root / "downloads" / f"{args.corpus}-{args.version}-{pair}.zip")
            n = opus_moses_to_tsv(archive, language, root / "parallel" / f"{pair}.tsv.gz")
            print(f"{pair}: {n} pairs -> {root / 'parallel' / f'{pair}.tsv.gz'}")
    else:
        for year in args.years:
            archive = download(STS_URLS[year], root / "downloads" / f"STS{year}-en-test.zip")
            counts = sts_archive_to_tsv(archive, year, root / "eval" / "sts" / f"STS{year % 100}")
            print(f"STS{year % 100}: {counts}")


DATA_COMMAND = Command(
    "data", "inspect the corpora or download public data",
    _data_arguments, _data)
