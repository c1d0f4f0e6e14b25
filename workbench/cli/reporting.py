"""What ``demo``, ``reproduce``, ``transfer`` and ``report`` do (their arguments: :mod:`.commands`)."""
from __future__ import annotations

import time
from pathlib import Path

from ..checks import WorkbenchError, check_sizes
from ..data.corpora import PAIRS
from ..models.folder import load
from ..reports.demo import first_run_line, run_demo
from ..reports.results import cached_probes, read_results
from ..reports.pages import report, spreadsheet_safe
from ..reports.reproduction import reproduce
from ..style_transfer.evaluation import transfer_pairs, transfer_scores
from ..style_transfer.generation import GUIDANCE, PAPER_DECODING, RERANK, transfer, transfer_table
from .inputs import read_pairs


def demo_command(args) -> None:
    sizes = check_sizes({"train": args.train_size, "valid": args.valid_size, "test": args.test_size})
    pairs = tuple(PAIRS) if args.all else tuple(args.pair)
    start = time.perf_counter()
    print(first_run_line(pairs, sizes), flush=True)
    path = run_demo(args.out, pairs=pairs, sizes=sizes, years=tuple(args.years))
    print(f"report: {path.resolve()}\nnumbers: {path.with_suffix('.csv').resolve()}\n"
          f"done in {time.perf_counter() - start:.0f} s")


def reproduce_command(args) -> None:
    sizes = check_sizes({"train": args.train_size, "valid": args.valid_size, "test": args.test_size})
    path = reproduce(args.out, recompute=args.recompute, disentangle=() if args.no_disentanglement else None,
                     years=args.years, static=not args.no_static, sizes=sizes)
    print(f"report: {Path(path).resolve()}")


def transfer_command(args) -> None:
    batch = args.pairs is not None
    if args.eval and (args.source or args.style):
        raise WorkbenchError("--eval scores a set of pairs (--pairs FILE, or the fixed held-out sample by default); "
                             "it does not take --source/--style")
    if batch and (args.source or args.style):
        raise WorkbenchError("give either --pairs FILE or --source/--style, not both")
    if args.n is not None and (not args.eval or batch):  # an option that would change nothing is refused
        raise WorkbenchError("--n sets the size of --eval's held-out sample; it does nothing with "
                             + ("--pairs (all its rows are scored)" if batch else "one --source/--style transfer"))
    if args.out is not None and not (batch or args.eval):
        raise WorkbenchError("--out writes the batch table (--pairs FILE) or --eval's scores; one --source/--style "
                             "transfer is printed")
    model = load(args.model)
    if args.eval:
        if args.language != "en":
            raise WorkbenchError("--eval judges transfers into English (meaning by English encoders, form by English "
                                 f"features); --language {args.language} transfers are not scored")
        _transfer_eval(model, args)
        return
    if batch:
        table = read_pairs(args.pairs)
        out = transfer_table(model, table, beam=args.beam, max_len=args.max_len, language=args.language,
                             **_decoding(args))
        if args.out:
            spreadsheet_safe(out).to_csv(args.out, index=False)
        print(out.to_string(index=False))
        return
    if not (args.source and args.style):
        raise WorkbenchError("give --source and --style sentences, or --pairs FILE with source and style columns")
    print(transfer(model, [args.source], [args.style], beam=args.beam, max_len=args.max_len, language=args.language,
                   **_decoding(args))[0])


def _decoding(args) -> dict:
    """The search's options from --rerank, --guidance, --keep-punctuation, or --paper alone."""
    if args.paper:
        if args.rerank is not None or args.guidance is not None or args.keep_punctuation:
            raise WorkbenchError("--paper is the paper's decoding (--rerank none --guidance 0 --keep-punctuation); "
                                 "give it alone or give those options instead")
        return dict(PAPER_DECODING)
    return {"rerank": _rerank(args.rerank), "guidance": GUIDANCE if args.guidance is None else args.guidance,
            "strip_punctuation": not args.keep_punctuation}


def _rerank(given: str | None) -> tuple[float, float] | None:
    """--rerank's weights: absent (the measured default), none (the decoder's best) or MEANING,FORM."""
    if given is None or given.lower() == "none":
        return RERANK if given is None else None
    try:
        meaning, form = (float(w) for w in given.split(","))
    except ValueError:
        raise WorkbenchError(f"--rerank takes two weights MEANING,FORM (e.g. 2,1), or none for the decoder's own "
                             f"best; got {given!r}") from None
    return meaning, form


def _transfer_eval(model, args) -> None:
    pairs = read_pairs(args.pairs) if args.pairs is not None else transfer_pairs(200 if args.n is None else args.n)
    summary, scored = transfer_scores(model, pairs, beam=args.beam, **_decoding(args))
    print(f"style transfer of {args.model} on {len(pairs)} pairs (shares with bootstrap 95% CIs):")
    print(summary.round(3).to_string(index=False))
    if args.out:
        out = Path(args.out)
        spreadsheet_safe(summary).to_csv(out, index=False)
        spreadsheet_safe(scored).to_csv(out.with_name(f"{out.stem}-pairs.csv"), index=False)
        print(f"summary: {out.resolve()}\nper pair: {out.with_name(f'{out.stem}-pairs.csv').resolve()}")


def report_command(args) -> None:
    df = read_results(args.results)
    path = report(df, Path(args.out) / "report.html", title=args.title)
    print(f"report: {path.resolve()}")


def results_command(args) -> None:
    table = cached_probes(task=args.task, encoder=args.encoder, layer=args.layer)
    if table.empty:
        print("the cache holds no probe results" + (" that match" if args.task or args.encoder or args.layer is not None
                                                   else "; `workbench probe` stores each one it makes"))
        return
    shown = table.assign(accuracy=[f"{a:.1%} [{lo:.1%}, {hi:.1%}]" for a, lo, hi in
                                   zip(table["accuracy"], table["ci_low"], table["ci_high"])],
                         majority=table["majority"].map("{:.1%}".format), best=table["best"].map({True: "best"}))
    columns = ["task", "encoder", "accuracy", "majority", "n_test", "classifier", "seed", "best"]
    print(shown[columns].fillna("").to_string(index=False))
    print(f"{len(table)} results, {table['encoder'].nunique()} encoders, {table['task'].nunique()} tasks; 'best': "
          "its 95% CI lies above every other encoder's on the same data")
    if args.out:
        spreadsheet_safe(table).to_csv(args.out, index=False)
        print(f"table: {Path(args.out).resolve()}")
