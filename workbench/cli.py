"""The ``workbench`` command."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .data.corpora import PAIRS, split_summary
from .data.sts import STS_DATASETS
from .errors import WorkbenchError

PLANNED = {"train": "training BGT and its baselines (issue #4)",
           "transfer": "style transfer with a trained BGT (issues #4 and #8)"}


def _demo(args) -> None:
    from .demo import run_demo
    sizes = {"train": args.train_size, "valid": args.valid_size, "test": args.test_size}
    path = run_demo(args.out, pair=args.pair, sizes=sizes, years=tuple(args.years))
    print(f"report: {path.resolve()}\nnumbers: {path.with_suffix('.csv').resolve()}")


def _data(args) -> None:
    if args.action == "info":
        rows = {pair: split_summary(pair) for pair in (args.pair or PAIRS)}
        print(pd.DataFrame(rows).T.to_string())
        return
    from .data.download import OPUS_URL, STS_URLS, download, opus_moses_to_tsv, sts_archive_to_tsv
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


def _encoder(args):
    from .encoders import untrained_encoder
    return untrained_encoder(args.encoder, args.pair)


def _encode(args) -> None:
    sentences = Path(args.input).read_text(encoding="utf-8").splitlines()
    embeddings = _encoder(args).encode(sentences, show_progress=True)
    np.save(args.out, embeddings)
    print(f"{embeddings.shape[0]} x {embeddings.shape[1]} float32 -> {args.out}")


def _probe(args) -> None:
    from .probing.probe import probe
    encoder = _encoder(args)
    sizes = {"train": args.train_size, "valid": args.valid_size, "test": args.test_size}
    for task in args.task:
        print(probe(encoder, task, sizes=sizes))


def _evaluate(args) -> None:
    from .evaluation import evaluate
    df = evaluate(_encoder(args), args.suite, show_progress=True)
    shown = df[df["metric"].isin(["pearson", "error xx->en", "error en->xx"])]
    print(shown.pivot_table(index=["task", "dataset"], columns="metric", values="value", sort=False)
          .round(1).to_string())
    if args.out:
        df.to_csv(args.out, index=False)


def _report(args) -> None:
    from .figures import report
    df = pd.read_csv(args.results)
    path = report(df, Path(args.out) / "report.html", title=args.title)
    print(f"report: {path.resolve()}")


def _planned(args) -> None:
    raise WorkbenchError(f"`workbench {args.command}` is not available yet: it arrives with "
                         f"{PLANNED[args.command]}.")


def build_parser() -> argparse.ArgumentParser:
    from .encoders import UNTRAINED
    from .evaluation import SUITES
    from .probing.tasks import task_names

    parser = argparse.ArgumentParser(
        prog="workbench", description="BGT probing workbench: train sentence encoders, probe what they encode, "
        "evaluate them on STS, and export reports.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def sizes(p, train, valid, test):
        p.add_argument("--train-size", type=int, default=train, help=f"probe training examples ({train})")
        p.add_argument("--valid-size", type=int, default=valid, help=f"probe validation examples ({valid})")
        p.add_argument("--test-size", type=int, default=test, help=f"probe test examples ({test})")

    def encoder_args(p):
        p.add_argument("--encoder", choices=UNTRAINED, default="random-transformer", help="encoder to use")
        p.add_argument("--pair", choices=PAIRS, default="en-fr", help="language pair of the tokenizer")

    p = sub.add_parser("demo", help="run the demo pipeline on real data and write an HTML report")
    p.add_argument("--out", default="reports/demo", help="output folder (reports/demo)")
    p.add_argument("--pair", choices=PAIRS, default="en-fr")
    p.add_argument("--years", type=int, nargs="+", choices=list(STS_DATASETS), default=list(STS_DATASETS))
    sizes(p, 6000, 1000, 1000)
    p.set_defaults(func=_demo)

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

    p = sub.add_parser("encode", help="encode a file of sentences (one per line) into a .npy matrix")
    encoder_args(p)
    p.add_argument("--input", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=_encode)

    p = sub.add_parser("probe", help="train probing classifiers and print test accuracy")
    encoder_args(p)
    p.add_argument("--task", nargs="+", choices=task_names(), default=task_names())
    sizes(p, 6000, 1000, 1000)
    p.set_defaults(func=_probe)

    p = sub.add_parser("evaluate", help="semantic evaluation: STS 2012-16, Hard STS, STS17, Tatoeba")
    encoder_args(p)
    p.add_argument("--suite", choices=[*SUITES, "all"], default="sts")
    p.add_argument("--out", help="also write the tidy results as CSV")
    p.set_defaults(func=_evaluate)

    p = sub.add_parser("report", help="HTML report (+ CSV/JSON) from a results CSV")
    p.add_argument("--results", required=True)
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--title", default="BGT workbench report")
    p.set_defaults(func=_report)

    for name, what in PLANNED.items():
        p = sub.add_parser(name, help=f"(not yet available: {what})")
        p.set_defaults(func=_planned)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        args.func(args)
    except (WorkbenchError, FileNotFoundError) as err:
        print(f"workbench {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
