"""Commands that measure encoders: ``encode``, ``probe``, ``probes``, ``evaluate``, ``cache``."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from ..cache import cache_dir, cache_summary, clear_cache, clear_stale, stale_temp_files
from ..checks import WorkbenchError, check_name, whole
from ..encoders import NAMED_ENCODERS, check_embeddings
from ..data.sts import STS17_TRACKS
from ..evaluation import SUITES, compare_hard_sts, compare_sts, evaluate, mteb_view
from ..evaluation.mteb import check_mteb_folder, write_mteb
from ..evaluation.significance import check_n_boot, p_text
from ..models.folder import load
from ..probing.baselines import BASELINES, SENTEVAL_NAMES, text_baselines
from ..probing.build import build_task, default_sizes, ship_manifests, ship_parses
from ..probing.layers import layer_profile, probe_layers
from ..probing.own import dataset_or_card, is_own, own_task
from ..probing.probe import MAX_SEEDS, check_options, probe
from ..probing.tasks import get_task, readable_tasks, task_names
from ..paths import atomic_write
from ..progress import progress_bar
from ..reports.pages import spreadsheet_safe
from ..zoo.cards import CARD_SIZES
from .common import Command, chosen_encoder, encoder_args, encoder_spec, probing_sizes, size_args


def _encode_arguments(p: argparse.ArgumentParser) -> None:
    encoder_args(p)
    p.add_argument("--input", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--force", action="store_true", help="replace --out if it exists")


def _encode(args) -> None:
    try:
        sentences = Path(args.input).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise WorkbenchError(f"{args.input} is not UTF-8 text; save it as UTF-8 (one sentence per line)") from None
    if not sentences:
        raise WorkbenchError(f"{args.input} holds no sentences (one sentence per line)")
    encoder = chosen_encoder(args)
    embeddings = check_embeddings(encoder, encoder.encode(sentences, show_progress=True), len(sentences))
    def save(tmp: Path) -> None:
        with open(tmp, "wb") as handle:  # the path as given (np.save would append .npy to a bare name)
            np.save(handle, embeddings)

    atomic_write(Path(args.out), save)  # a full disk or a kill leaves the old file whole, never a partial one
    print(f"{embeddings.shape[0]} x {embeddings.shape[1]} float32 -> {args.out}")


ENCODE_COMMAND = Command(
    "encode", "encode a file of sentences (one per line) into a .npy matrix",
    _encode_arguments, _encode, out="file")


OWN_TASK_OPTIONS = {"sentence_column": "sentence", "label_column": "label", "task_language": "en"}  # and defaults


def _probe_arguments(p: argparse.ArgumentParser) -> None:
    encoder_args(p)
    p.add_argument("--task", nargs="+", metavar="TASK",
                   help="task names (`workbench probes list`; default: every task in the languages the encoder "
                        "reads) or files of your own labelled sentences (.tsv/.csv/.jsonl with sentence and label "
                        "columns, optionally split and word; or a SentEval file)")
    for option, default in OWN_TASK_OPTIONS.items():
        p.add_argument(f"--{option.replace('_', '-')}", help=f"own task files: the {option.replace('_', ' ')} "
                                                             f"({default})")
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
    p.add_argument("--seeds", type=int, default=1,
                   help="fit the probe with this many seeds and report the mean and the seed sd (default 1; the "
                        "logistic probe is seed-free, the MLP is not)")
    p.add_argument("--layers", nargs="+", metavar="LAYER",
                   help="probe at each of these layers of the encoder (numbers, or 'all'): one row per task and "
                        "layer, with where each property peaks and is lost")
    p.add_argument("--out", help="also write the tidy results as CSV")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    size_args(p, unset="default: the model cards' 6000/1000/1000 for named tasks, all of an own task's sentences")


def _probe(args) -> None:

    check_options(args.classifier, not args.no_control and args.control, args.mdl)  # before the encoder is built
    if not whole(args.seeds, 1, MAX_SEEDS):
        raise WorkbenchError(f"--seeds must be a whole number from 1 to {MAX_SEEDS} (got {args.seeds})")
    if args.seeds > 1 and (args.given or args.layers):
        raise WorkbenchError("--seeds averages plain probes of one encoder: drop --given / --layers, or --seeds")
    sizes = probing_sizes(args)
    tasks = _tasks(args.task or [], args, sizes)  # before the encoder is built: a bad file fails at once
    if args.given and not args.model:
        raise WorkbenchError("--given names a view of --model; give --model too")
    if args.given:  # two views of one model, loaded once
        model = load(args.model)
        encoder, given = model.encoder(args.encoder or "semantic"), model.encoder(args.given)
    else:
        encoder, given = chosen_encoder(args), None
    if not tasks:
        readable = readable_tasks(encoder)
        left_out = [name for name in readable if get_task(name).unavailable]
        tasks = [name for name in readable if name not in left_out]
        if left_out:
            print(f"left out, their analysers are not installed: {', '.join(left_out)} (`workbench probes list` "
                  "says what to install)", flush=True)
    if sizes is None and any(isinstance(task, str) for task in tasks):
        sizes = default_sizes()
        print(f"probing at the default sizes, {sizes['train']}/{sizes['valid']}/{sizes['test']} sentences per "
              "task, as Python's probe(), the demo and the notebooks do (--train-size/--valid-size/--test-size for "
              "others; a task's full size: `workbench probes list`)", flush=True)
    if args.layers:
        return _probe_layers(args, encoder, given, tasks, sizes)
    rows = []
    for task in progress_bar(tasks, desc="probing", unit="task", disable=len(tasks) == 1):
        result = probe(encoder, task, classifier=args.classifier, control=not args.no_control and args.control,
                       mdl=args.mdl, sizes=sizes, given=given, transfer=args.transfer, seeds=args.seeds)
        rows.append(result.to_frame())
    df = pd.concat(rows, ignore_index=True)
    table = df.pivot_table(index="task", columns="metric", values="value", sort=False)
    percent = [c for c in table.columns if c not in ("mdl_bits", "compression")]
    table[percent] *= 100  # accuracies in %
    print(table.round(2).to_string())
    if args.out:
        spreadsheet_safe(df).to_csv(args.out, index=False)


def _tasks(given: list[str], args, sizes: dict[str, int] | None) -> list:
    """The task names given, checked, and the own task files among them read (:func:`own_task`)."""
    own_options = [f"--{name.replace('_', '-')}" for name in OWN_TASK_OPTIONS if getattr(args, name) is not None]
    if own_options and not any(is_own(task) for task in given):
        raise WorkbenchError(f"{', '.join(own_options)} describe a task file of your own; no --task names one "
                             "(give --task PATH.tsv/.csv/.jsonl)")
    options = {name: default if getattr(args, name) is None else getattr(args, name)
               for name, default in OWN_TASK_OPTIONS.items()}
    tasks = []
    for task in given:
        if is_own(task):
            tasks.append(own_task(task, sentence=options["sentence_column"], label=options["label_column"],
                                  language=options["task_language"], sizes=sizes))
        else:
            tasks.append(dataset_or_card(task)[1].name)
    return tasks


def _probe_layers(args, encoder, given, tasks, sizes) -> None:
    if given is not None or args.transfer:
        raise WorkbenchError("--layers sweeps one encoder: drop --given / --transfer, or probe one layer at a time "
                             "(--layer)")
    if args.layer is not None:
        raise WorkbenchError("--layer reads one layer, --layers sweeps several: give one of them")
    layers = "all" if args.layers == ["all"] else _layer_numbers(args.layers)
    df = probe_layers(encoder, tasks, layers, sizes=sizes, classifier=args.classifier,
                      control=not args.no_control and args.control, mdl=args.mdl)
    table = df[df["metric"] == "accuracy"].pivot_table(index="task", columns="layer", values="value", sort=False)
    print((100 * table).round(1).to_string())
    print(layer_profile(df).round(3).to_string(index=False))
    if args.out:
        spreadsheet_safe(df).to_csv(args.out, index=False)


def _layer_numbers(values: list[str]) -> list[int]:
    try:
        return [int(v) for v in values]
    except ValueError:
        raise WorkbenchError(f"--layers takes layer numbers or 'all', not {' '.join(values)!r}") from None


PROBE_COMMAND = Command(
    "probe", "train probing classifiers and print test accuracy, selectivity, ...",
    _probe_arguments, _probe, out="file")


def _probes_arguments(p: argparse.ArgumentParser) -> None:
    psub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    psub.add_parser("list", help="the task cards")
    q = psub.add_parser("build", help="build datasets (already built ones are reused: resumable)")
    q.add_argument("--tasks", nargs="+", choices=task_names(), default=task_names())
    q.add_argument("--force", action="store_true", help="rebuild even if built")
    q.add_argument("--ship-parses", action="store_true",
                   help="write the probe pools' parses into workbench/probes/parses/ (what a fresh clone reads "
                        "instead of parsing; for maintainers, after a pool, pipeline or parse change)")
    q.add_argument("--ship-manifests", action="store_true",
                   help="build every task (or those of --tasks) at its card's sizes and at the model cards' "
                        "probing sizes and record the manifests in workbench/probes/builds.json (what the docs "
                        "state; for maintainers, after a card, pool or builder change)")
    size_args(q)
    q = psub.add_parser("baselines", help="Conneau et al. (2018)'s text-only baselines on our tasks, beside their "
                                          "published accuracies on SentEval's data (an external check)")
    q.add_argument("--tasks", nargs="+", choices=task_names(), default=list(SENTEVAL_NAMES),
                   help="tasks (default: the ten SentEval tasks)")
    q.add_argument("--baselines", nargs="+", choices=list(BASELINES), default=list(BASELINES),
                   help="; ".join(f"{name}: {what}" for name, (what, _, _) in BASELINES.items()))
    q.add_argument("--out", help="also write the tidy results as CSV")
    q.add_argument("--force", action="store_true", help="replace --out if it exists")
    size_args(q)


def _probes(args) -> None:

    if args.action == "list":
        cards = [get_task(name) for name in task_names()]
        print(pd.DataFrame([{"task": c.name, "title": c.title, "language": c.language, "builder": c.builder,
                             "classes": len(c.labels) or "derived", "available": "no" if c.unavailable else "yes",
                             "analogue": c.analogue} for c in cards]).to_string(index=False, max_colwidth=60))
        for why in sorted({c.unavailable for c in cards if c.unavailable}):
            print(f"not available: {', '.join(c.name for c in cards if c.unavailable == why)} — {why}")
        return
    if args.action == "baselines":
        _baselines(args)
        return
    if args.ship_parses:
        print(f"shipped parses: {ship_parses()}")
    if args.ship_manifests:
        named = args.tasks if args.tasks != task_names() else None  # --tasks: refresh only theirs
        print(f"shipped manifests: {ship_manifests([None, CARD_SIZES], named)}")
    rows = []
    for task in progress_bar(args.tasks, desc="building tasks", unit="task"):
        manifest = build_task(task, sizes=probing_sizes(args), force=args.force).manifest
        rows.append({"task": task, **manifest["sizes"], "classes": len(manifest["label_counts"]["tr"])})
    print(pd.DataFrame(rows).to_string(index=False))


def _baselines(args) -> None:
    df = text_baselines(args.tasks, args.baselines, sizes=probing_sizes(args))
    shown = df.assign(cell=[f"{ours:.1f}" + ("" if np.isnan(paper) else f" ({paper:.1f})")
                            for ours, paper in zip(df["accuracy"], df["published"])])
    print("test accuracy (%) on our tasks (Conneau et al. 2018 on SentEval's data in brackets)")
    print(shown.pivot(index="task", columns="baseline", values="cell").loc[args.tasks, args.baselines].to_string())
    if args.out:
        spreadsheet_safe(df).to_csv(args.out, index=False)


PROBES_COMMAND = Command(
    "probes", "list or build the probing datasets; run the text-only baselines",
    _probes_arguments, _probes, out="file")


def _cache_arguments(p: argparse.ArgumentParser) -> None:
    csub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    csub.add_parser("ls", help="entries and size per encoder")
    q = csub.add_parser("clear", help="delete cached embeddings and results")
    q.add_argument("--encoder", help="only this encoder (name or fingerprint prefix)")
    q.add_argument("--stale", action="store_true", help="only the temporary files that killed writers left behind")


def _cache(args) -> None:
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
    if args.stale and args.encoder is not None:
        raise WorkbenchError("give --stale or --encoder, not both")
    freed = clear_stale() if args.stale else clear_cache(args.encoder)
    print(f"freed {freed / 2**20:.1f} MiB")


CACHE_COMMAND = Command(
    "cache", "show or clear the embedding cache",
    _cache_arguments, _cache)


def _evaluate_arguments(p: argparse.ArgumentParser) -> None:
    encoder_args(p)
    p.add_argument("--suite", choices=[*SUITES, "all"], default="sts",
                   help="; ".join(f"{s.name}: {s.about} (reads {s.describe_reads()})" for s in SUITES.values())
                   + "; all: every suite the encoder can take (default sts)")
    p.add_argument("--out", help="also write the tidy results as CSV")
    p.add_argument("--force", action="store_true", help="replace --out (and the results in --mteb) if they exist")
    p.add_argument("--force-languages", action="store_true",
                   help="evaluate a suite in languages the encoder does not declare (as MTEB does; rows marked)")
    p.add_argument("--against", metavar="ENCODER",
                   help="paired bootstrap test against this encoder on STS 2012-16 (--suite sts), Hard STS "
                        f"(--suite hard_sts) or both (--suite all): {', '.join(NAMED_ENCODERS)}, hf:PATH[@LAYER], "
                        "or MODEL[:VIEW] (a shipped model, run or checkpoint; e.g. bgt-en-fr-lang128:en); with "
                        "--out also written to OUT-comparison.csv")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples (2000)")
    p.add_argument("--tracks", nargs="+", metavar="TRACK",
                   help=f"the STS17 tracks to run, separated by spaces or commas (--suite sts17; default every one "
                        f"the encoder reads): "
                        f"{', '.join(STS17_TRACKS)}")
    p.add_argument("--mteb", metavar="DIR",
                   help="also write the results in MTEB's results layout (TASK.json per MTEB task) into DIR")


def _evaluate(args) -> None:
    against = None
    check_n_boot(args.n_boot)  # before the first evaluation (a bad value is refused even where it is not used)
    if args.against is not None:
        if args.suite not in PAIRED:
            raise WorkbenchError(f"--against tests STS 2012-16 and Hard STS; --suite {args.suite} has no paired "
                                 f"test (valid with --against: {', '.join(PAIRED)})")
        against = encoder_spec(args.against, args.pair)
        if args.out and _comparison_path(args.out).exists() and not args.force:
            raise WorkbenchError(f"{_comparison_path(args.out)} exists; --force replaces it")
    options = {}
    if args.tracks:
        if args.suite != "sts17":
            raise WorkbenchError(f"--tracks chooses STS17 tracks; give --suite sts17 (not {args.suite})")
        options["tracks"] = [check_name("STS17 track", track, STS17_TRACKS)  # "a,b" or "a b"
                             for given in args.tracks for track in given.split(",") if track]
    if args.mteb:
        check_mteb_folder(args.mteb, args.force)  # before minutes of evaluation, as --out is
    encoder = chosen_encoder(args)
    df = evaluate(encoder, args.suite, show_progress=True, force_languages=args.force_languages, **options)
    shown = df[df["metric"].isin(["pearson", "spearman", "error xx->en", "error en->xx", "f1 xx->en"])
               & ~df["dataset"].str.startswith("all (")]
    print(shown.pivot_table(index=["task", "dataset"], columns="metric", values="value", sort=False)
          .round(1).to_string())
    both = mteb_view(df)
    if len(both):
        print("\nSTS in both conventions (the paper's figure and the one MTEB's leaderboard shows):")
        print(both.round(1).to_string())
    main = pd.concat([suite.main_rows(df).assign(suite=suite.name) for suite in SUITES.values()])
    if len(main) and args.suite != "sts":  # (STS 2012-16's is the MTEB column above)
        print("\nMTEB's main score of each task (× 100):")
        print(main.set_index(["task", "dataset"])["value"].round(2).to_string())
    if "note" in df:
        print(f"\nnote: {df['note'].iloc[0]}")
    if args.out:
        spreadsheet_safe(df).to_csv(args.out, index=False)
    if args.mteb:
        written = write_mteb(df, args.mteb, args.force)
        print(f"MTEB results layout -> {Path(args.mteb).resolve()} ({', '.join(p.stem for p in written)})")
    if against is not None:
        tests = [test for suite, test in (("sts", compare_sts), ("hard_sts", compare_hard_sts))
                 if args.suite in (suite, "all")]
        comparison = pd.concat([test(encoder, against, n_boot=args.n_boot) for test in tests], ignore_index=True)
        print(f"\npaired bootstrap ({args.n_boot} resamples), {comparison.a[0]} minus {comparison.b[0]}:")
        shown = comparison.drop(columns=["a", "b", "n_boot", "encoder", "metric", "value"]).round(4)
        shown["p_value"] = [p_text(p, args.n_boot) for p in comparison["p_value"]]
        print(shown.to_string(index=False))
        if args.out:
            spreadsheet_safe(comparison).to_csv(_comparison_path(args.out), index=False)
            print(f"comparison -> {_comparison_path(args.out)}")


def _comparison_path(out: str) -> Path:
    return Path(out).with_name(Path(out).stem + "-comparison.csv")


PAIRED = ("sts", "hard_sts", "all")  # the suites --against can test


EVALUATE_COMMAND = Command(
    "evaluate", "semantic evaluation: STS 2012-16, Hard STS, STS17, Tatoeba",
    _evaluate_arguments, _evaluate, out="file")
