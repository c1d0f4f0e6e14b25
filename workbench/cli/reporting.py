"""Commands that write reports or generate text: ``demo``, ``reproduce``, ``transfer``, ``report``."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..checks import WorkbenchError, check_sizes
from ..data.corpora import PAIRS
from ..data.sts import STS_DATASETS
from ..models.folder import load
from ..reports.demo import first_run_line, run_demo
from ..reports.figures import read_results
from ..reports.pages import report, spreadsheet_safe
from ..reports.reproduction import reproduce
from ..style_transfer.evaluation import transfer_pairs, transfer_scores
from ..style_transfer.generation import transfer, transfer_table
from .common import Command, read_pairs, size_args


def _demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="reports/demo", help="output folder (reports/demo)")
    p.add_argument("--pair", choices=PAIRS, nargs="+", default=["en-fr"], help="language pairs (en-fr)")
    p.add_argument("--all", action="store_true", help="every language pair")
    p.add_argument("--years", type=int, nargs="+", choices=list(STS_DATASETS), default=list(STS_DATASETS))
    size_args(p, 6000, 1000, 1000)


def _demo(args) -> None:
    sizes = check_sizes({"train": args.train_size, "valid": args.valid_size, "test": args.test_size})
    pairs = tuple(PAIRS) if args.all else tuple(args.pair)
    start = time.perf_counter()
    print(first_run_line(pairs, sizes), flush=True)
    path = run_demo(args.out, pairs=pairs, sizes=sizes, years=tuple(args.years))
    print(f"report: {path.resolve()}\nnumbers: {path.with_suffix('.csv').resolve()}\n"
          f"done in {time.perf_counter() - start:.0f} s")


DEMO_COMMAND = Command(
    "demo", "run the demo pipeline on real data and write an HTML report",
    _demo_arguments, _demo, out="folder")


def _reproduce_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="reports/reproduction.html")
    p.add_argument("--recompute", action="store_true", help="measure the models again instead of reading their cards")
    p.add_argument("--no-disentanglement", action="store_true",
                   help="leave out the disentanglement section (language ID and erasing it: minutes per pair)")
    p.add_argument("--years", type=int, nargs="+", choices=list(STS_DATASETS), default=list(STS_DATASETS),
                   help="the STS years of the paired bootstraps (default all five, the paper's STS12-16; encoding "
                        "them is most of the report's time, and --years 2016 alone is a quick look)")
    p.add_argument("--no-static", action="store_true", help="skip the figures' PNG/PDF export (needs Chromium; "
                                                            "the HTML and the CSVs are complete without it)")


def _reproduce(args) -> None:
    path = reproduce(args.out, recompute=args.recompute, disentangle=() if args.no_disentanglement else None,
                     years=args.years, static=not args.no_static)
    print(f"report: {Path(path).resolve()}")


REPRODUCE_COMMAND = Command(
    "reproduce", "our shipped models next to the paper's tables (reports/reproduction.html)",
    _reproduce_arguments, _reproduce, out="page")


def _transfer_arguments(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--n", type=int, help="--eval: pairs in the held-out sample (200)")


def _transfer(args) -> None:
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
        _transfer_eval(model, args)
        return
    if batch:
        table = read_pairs(args.pairs)
        out = transfer_table(model, table, beam=args.beam, max_len=args.max_len)
        if args.out:
            spreadsheet_safe(out).to_csv(args.out, index=False)
        print(out.to_string(index=False))
        return
    if not (args.source and args.style):
        raise WorkbenchError("give --source and --style sentences, or --pairs FILE with source and style columns")
    print(transfer(model, [args.source], [args.style], beam=args.beam, max_len=args.max_len)[0])


def _transfer_eval(model, args) -> None:
    pairs = read_pairs(args.pairs) if args.pairs is not None else transfer_pairs(200 if args.n is None else args.n)
    summary, scored = transfer_scores(model, pairs, beam=args.beam)
    print(f"style transfer of {args.model} on {len(pairs)} pairs (shares with bootstrap 95% CIs):")
    print(summary.round(3).to_string(index=False))
    if args.out:
        out = Path(args.out)
        spreadsheet_safe(summary).to_csv(out, index=False)
        spreadsheet_safe(scored).to_csv(out.with_name(f"{out.stem}-pairs.csv"), index=False)
        print(f"summary: {out.resolve()}\nper pair: {out.with_name(f'{out.stem}-pairs.csv').resolve()}")


TRANSFER_COMMAND = Command(
    "transfer", "style transfer with BGT: meaning from --source, style from --style",
    _transfer_arguments, _transfer, out="file")


def _report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", required=True)
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--title", default="BGT workbench report")


def _report(args) -> None:
    df = read_results(args.results)
    path = report(df, Path(args.out) / "report.html", title=args.title)
    print(f"report: {path.resolve()}")


REPORT_COMMAND = Command(
    "report", "HTML report (+ CSV/JSON) from a results CSV",
    _report_arguments, _report, out="folder")
