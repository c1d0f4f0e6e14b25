"""What ``encode``, ``probe``, ``probes``, ``evaluate`` and ``cache`` do (their arguments: :mod:`.commands`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..cache import cache_dir, cache_summary, clear_cache, clear_stale, stale_temp_files
from ..checks import WorkbenchError, check_name, whole
from ..data.corpora import ship_splits
from ..data.eval_sets import STS17_TRACKS
from ..encoders import check_embeddings
from ..evaluation import SUITES, compare_hard_sts, compare_sts, evaluate, mteb_view
from ..evaluation.mteb import check_mteb_folder, write_mteb
from ..evaluation.significance import check_n_boot, p_text
from ..models.folder import load
from ..probing.baselines import text_baselines
from ..probing.build import build_task, default_sizes, ship_manifests, ship_parses
from ..probing.layers import layer_profile, probe_layers
from ..probing.own import dataset_or_card, is_own, own_task
from ..probing.probe import MAX_SEEDS, check_options, probe, task_dataset
from ..probing.result import prediction_table
from ..probing.tasks import get_task, readable_tasks, task_names
from ..paths import atomic_write, check_results_folder
from ..progress import progress_bar
from ..reports.pages import report, spreadsheet_safe
from ..reports.results import layer_table, probe_table
from ..zoo.cards import CARD_SIZES
from .commands import OWN_TASK_OPTIONS, PAIRED
from .inputs import chosen_encoder, encoder_spec, probing_sizes


def encode_command(args) -> None:
    try:
        sentences = Path(args.input).read_text(encoding="utf-8-sig").splitlines()  # a BOM is not text
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


def _control(args) -> bool | str:
    """The control ``probe()`` is asked for: none, the one named, or the default (the label word, else the first)."""
    return False if args.no_control else (args.control or True)


def _check_probe_options(args) -> None:
    """The options of ``probe`` that go together or not, checked before the encoder is built."""
    check_options(args.classifier, _control(args), args.mdl)
    if not whole(args.seeds, 1, MAX_SEEDS):
        raise WorkbenchError(f"--seeds must be a whole number from 1 to {MAX_SEEDS} (got {args.seeds})")
    if args.jobs != 1 and not args.layers:
        raise WorkbenchError("--jobs fits a layer sweep's probes side by side: give --layers too, or drop --jobs")
    if args.seeds > 1 and (args.given or args.layers):
        raise WorkbenchError("--seeds averages plain probes of one encoder: drop --given / --layers, or --seeds")
    if args.predictions is not None and (args.seeds > 1 or args.layers):
        raise WorkbenchError("--predictions keeps what one probe said of each test sentence: drop --seeds / "
                             "--layers (a sweep: probe the layer you want to read with --layer)")
    if args.predictions is not None:
        check_results_folder(args.predictions, "--predictions", "*.tsv", args.force)
    if args.given and not args.model:
        raise WorkbenchError("--given names a view of --model; give --model too")


def probe_command(args) -> None:
    _check_probe_options(args)
    sizes = probing_sizes(args)
    tasks = _tasks(args.task or [], args, sizes)  # before the encoder is built: a bad file fails at once
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
    for task in tasks:  # every task the encoder cannot read is refused before the first is probed
        if isinstance(task, str):
            get_task(task).check_encoder(encoder)
    if args.layers:
        return _probe_layers(args, encoder, given, tasks, sizes)
    rows = []
    for task in progress_bar(tasks, desc="probing", unit="task", disable=len(tasks) == 1):
        result = probe(encoder, task, classifier=args.classifier, control=_control(args),
                       mdl=args.mdl, sizes=sizes, given=given, transfer=args.transfer, seeds=args.seeds)
        rows.append(result.to_frame())
        if args.predictions is not None:
            _write_predictions(result, task, sizes, Path(args.predictions))
    df = pd.concat(rows, ignore_index=True)
    print(probe_table(df).to_string())
    if args.out:
        spreadsheet_safe(df).to_csv(args.out, index=False)


def _write_predictions(result, task, sizes: dict[str, int] | None, folder: Path) -> None:
    """The probe's word on each test sentence, as ``folder/TASK.tsv`` (the test split is the one it was fitted on:
    the same build, read back)."""
    test = task_dataset(task, **({"sizes": sizes} if sizes else {})).split("te")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{result.task}.tsv"
    atomic_write(path, lambda tmp: prediction_table(result, test).to_csv(tmp, sep="\t", index=False))
    print(f"predictions -> {path}", flush=True)


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
    df = probe_layers(encoder, tasks, layers, sizes=sizes, n_jobs=args.jobs, classifier=args.classifier,
                      control=_control(args), mdl=args.mdl)
    if df.empty:  # another torchrun process than the first: it shared the encoding, the first reports
        return
    print(layer_table(df).to_string())
    print(layer_profile(df).round(3).to_string(index=False))
    if args.out:
        spreadsheet_safe(df).to_csv(args.out, index=False)
        out = Path(args.out)
        page = report(df, out.with_name(f"{out.stem}-report.html"), title=f"Probing by layer: {encoder.name}",
                      static=False)
        print(f"report (heat map, lines and where each property lives): {page.resolve()}")


def _layer_numbers(values: list[str]) -> list[int]:
    try:
        return [int(v) for v in values]
    except ValueError:
        raise WorkbenchError(f"--layers takes layer numbers or 'all', not {' '.join(values)!r}") from None


def probes_command(args) -> None:
    """``probes build`` and ``probes baselines`` (``probes list``: :mod:`.listing`)."""
    if args.action == "baselines":
        _baselines(args)
        return
    if args.ship_parses:
        print(f"shipped splits: {ship_splits()}\nshipped parses: {ship_parses()}")
    if args.ship_manifests:
        named = args.tasks if args.tasks != task_names() else None  # --tasks: refresh only theirs
        print(f"shipped manifests: {ship_manifests([None, CARD_SIZES], named)}")
    built = {}  # one language's tasks after another: the builders of a language share its parses, read once
    for task in progress_bar(sorted(args.tasks, key=lambda name: get_task(name).language), desc="building tasks",
                             unit="task"):
        built[task] = build_task(task, sizes=probing_sizes(args), force=args.force).manifest
    print(pd.DataFrame([{"task": task, **built[task]["sizes"], "classes": len(built[task]["label_counts"]["tr"])}
                        for task in args.tasks]).to_string(index=False))


def _baselines(args) -> None:
    df = text_baselines(args.tasks, args.baselines, sizes=probing_sizes(args))
    shown = df.assign(cell=[f"{ours:.1f}" + ("" if np.isnan(paper) else f" ({paper:.1f})")
                            for ours, paper in zip(df["accuracy"], df["published"])])
    print("test accuracy (%) on our tasks (Conneau et al. 2018 on SentEval's data in brackets)")
    print(shown.pivot(index="task", columns="baseline", values="cell").loc[args.tasks, args.baselines].to_string())
    if args.out:
        spreadsheet_safe(df).to_csv(args.out, index=False)


def cache_command(args) -> None:
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


def _tracks(args) -> list[str]:
    """The STS17 tracks ``--tracks`` names ("a,b" or "a b"), checked before the encoder is made."""
    if args.suite != "sts17":
        raise WorkbenchError(f"--tracks chooses STS17 tracks; give --suite sts17 (not {args.suite})")
    tracks = [check_name("STS17 track", track, STS17_TRACKS) for given in args.tracks for track in given.split(",")
              if track]
    if not tracks:
        raise WorkbenchError(f"--tracks {' '.join(args.tracks)!r} names no STS17 track; valid: {', '.join(STS17_TRACKS)}")
    return tracks


def evaluate_command(args) -> None:
    against = None
    check_n_boot(args.n_boot)  # before the first evaluation (a bad value is refused even where it is not used)
    if args.against is not None:
        if args.suite not in PAIRED:
            raise WorkbenchError(f"--against tests STS 2012-16 and Hard STS; --suite {args.suite} has no paired "
                                 f"test (valid with --against: {', '.join(PAIRED)})")
        against = encoder_spec(args.against, args.pair)
        if args.out and _comparison_path(args.out).exists() and not args.force:
            raise WorkbenchError(f"{_comparison_path(args.out)} exists; --force replaces it")
    options = {"tracks": _tracks(args)} if args.tracks else {}
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


