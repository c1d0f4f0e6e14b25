"""A sweep of bad and hostile inputs through every CLI option and the public API (issue: nothing runs, nothing is
read from outside, nothing is overwritten).

Every option of every ``workbench`` subcommand (read off the argument parser, so a new option is swept too) gets
the bad values of its kind — numbers out of range or not numbers, invalid choices, and for paths missing files,
folders, empty, binary, non-UTF-8, BOM-led and FIFO files, links out of the folder, ``..`` paths — on top of a
small valid command; the public API gets the same kinds through its main entry points, plus a Hugging Face folder
whose config asks to run its own code; and the well-formed but wrong inputs of :mod:`tools.tampering` (tampered
model folders and packages, foreign Hugging Face folders, edited cache entries, misplaced results, own data that
does not mean what it seems). Each case runs in a forked child with a time limit and ends as one of:
``clear`` (exit 2 with a one-line message, or the API's own error), ``warned`` (a tampered input
that went on with a warning: :mod:`tools.tampering`), ``traceback`` (an exception escaped the
command), ``python-error`` (the API raised a Python error from inside: to be read), ``accepted`` (exit 0: to be read,
a valid value or a silent failure) or ``timeout`` (it started work). Afterwards the sweep checks that no tracked
file of the checkout changed and that the foreign code never ran.

    WORKBENCH_HOME=$(mktemp -d) python tools/hostile_sweep.py OUT.csv [--only api|cli|tamper] [--command probe] [--limit 8]

(on a throwaway clone, with PYTHONPATH set to it: it runs commands that write).
"""
from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import tempfile
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd

LIMIT = 8  # seconds a case may run before it counts as having started work
WORKERS = 2
INT_VALUES = ["0", "-1", "abc", "1e9", "99999999999999999999", "", "nan"]
FLOAT_VALUES = ["-1", "nan", "inf", "abc", "0", ""]
CHOICE_VALUES = ["nosuch", "", " ", "../x"]
PATH_VALUES = ["", " ", "{tmp}/missing", "{tmp}/adir", "{tmp}/empty.txt", "{tmp}/latin.txt", "{tmp}/binary.bin",
               "{tmp}/bom.tsv", "{tmp}/fifo", "{tmp}/link_out", "../../../../etc/passwd", "{tmp}/nul\u0000name",
               "{tmp}/evil_hf"]
# a small valid command per subcommand, to which one bad option is added (sizes tiny: accepted values finish)
SIZES = ["--train-size", "40", "--valid-size", "10", "--test-size", "10"]
BASES = {
    "demo": ["--pair", "en-fr", "--years", "2016", *SIZES, "--out", "{tmp}/demo"],
    "models list": [], "models card": ["bgt-en-fr"],
    "models export": ["{tmp}/missing_run", "--name", "sweep-x"], "models import": ["{tmp}/missing_pkg"],
    "models retrain": ["--dry-run", "--only", "sp-en-fr"],
    "curve": ["bgt-en-fr", "--out", "{tmp}/curve", "--no-static"],
    "reproduce": ["--out", "{tmp}/repro.html", "--no-static", "--years", "2016", "--no-disentanglement"],
    "transfer": ["--model", "bgt-en-fr", "--source", "A man is here.", "--style", "She left early.", "--beam", "1"],
    "data info": [], "data download": ["sts"], "data add-pair": ["en-pt", "--corpus", "{tmp}/bitext.tsv"],
    "models migrate": ["{tmp}/missing_run"], "models rename": ["{tmp}/missing_model", "sweep-y"],
    "results": ["--task", "length"],
    "train": ["--preset", "tiny", "--max-updates", "1", "--out", "{tmp}/run"],
    "encode": ["--encoder", "random-sp-average", "--input", "{tmp}/sentences.txt", "--out", "{tmp}/enc.npy"],
    "probe": ["--encoder", "random-sp-average", "--task", "length", "--no-control", *SIZES],
    "probes list": [], "probes build": ["--tasks", "length", *SIZES],
    "probes baselines": ["--tasks", "length", "--baselines", "majority", *SIZES],
    "cache ls": [], "cache clear": ["--stale"],
    "evaluate": ["--encoder", "random-sp-average", "--suite", "stsb"],
    "report": ["--results", "{tmp}/results.csv", "--out", "{tmp}/report.html"],
}


def fixtures(tmp: Path) -> None:
    """The files the bad values name."""
    (tmp / "adir").mkdir()
    (tmp / "empty.txt").write_text("")
    (tmp / "latin.txt").write_bytes("café\n".encode("latin-1"))
    (tmp / "binary.bin").write_bytes(bytes(range(256)) * 8)
    (tmp / "bom.tsv").write_text("\ufeffsentence\tlabel\nA b.\tx\n", encoding="utf-8")
    os.mkfifo(tmp / "fifo")
    (tmp / "link_out").symlink_to("/etc/passwd")
    (tmp / "sentences.txt").write_text("A man is playing a guitar.\nShe left early.\n")
    (tmp / "results.csv").write_text("encoder,task,metric,value\nx,length,accuracy,0.5\n")
    (tmp / "bitext.tsv").write_text("".join(f"A sentence number {i} here .\tUma frase número {i} aqui .\n"
                                            for i in range(1200)))
    evil = tmp / "evil_hf"
    evil.mkdir()
    (evil / "config.json").write_text('{"model_type": "bert", "auto_map": {"AutoModel": "evil.Model"}}')
    (evil / "evil.py").write_text(f"open({str(tmp / 'FOREIGN_CODE_RAN')!r}, 'w').write('x')\n")


def options(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """(subcommand, option, kind) for every option of every subcommand."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        for name, sub in subs[0].choices.items():
            yield from options(sub, (*prefix, name))
        return
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.nargs == 0:
            continue
        kind = ("choice" if action.choices else "int" if action.type is int else "float" if action.type is float
                else "path")
        yield " ".join(prefix), (action.option_strings[:1] or [None])[0], kind


def cli_cases(tmp: Path) -> list[tuple[str, list[str]]]:
    from workbench.cli import build_parser

    values = {"int": INT_VALUES, "float": FLOAT_VALUES, "choice": CHOICE_VALUES, "path": PATH_VALUES}
    cases = []
    for command, option, kind in options(build_parser()):
        base = [part.format(tmp=tmp) for part in BASES[command]]
        for value in values[kind]:
            value = value.format(tmp=tmp)
            if option is None:  # a positional: the bad value replaces the base's first word
                argv = [*command.split(), value, *base[1:]]
            else:
                argv = [*command.split(), *base, option, value]
            cases.append((f"cli {command} {option or 'positional'}", argv))
    return cases


def api_cases(tmp: Path) -> list[tuple[str, str]]:
    """Python statements, each run with ``wb`` imported and ``enc`` an untrained encoder."""
    bad = ["None", "''", "' '", "'nosuch'", "-1", "0", "1e9", "float('nan')", "[]", "{}", "b'x'",
           f"{str(tmp / 'missing')!r}", f"{str(tmp / 'adir')!r}", f"{str(tmp / 'latin.txt')!r}",
           f"{str(tmp / 'binary.bin')!r}", f"{str(tmp / 'link_out')!r}", "'../../../etc/passwd'"]
    calls = {
        "probe task": "wb.probe(enc, {v}, sizes=S)", "probe sizes": "wb.probe(enc, 'length', sizes={v})",
        "probe classifier": "wb.probe(enc, 'length', sizes=S, classifier={v})",
        "probe control": "wb.probe(enc, 'length', sizes=S, control={v})",
        "probe seeds": "wb.probe(enc, 'length', sizes=S, seeds={v})",
        "probe encoder": "wb.probe({v}, 'length', sizes=S)",
        "predictions task": "wb.predictions(enc, {v}, sizes=S)",
        "predictions seeds": "wb.predictions(enc, 'length', sizes=S, seeds={v})",
        "probe_layers jobs": "wb.probe_layers(enc, ['length'], sizes=S, n_jobs={v})",
        "probe_all tasks": "wb.probe_all([enc], {v}, sizes=S)",
        "probe_layers layers": "wb.probe_layers(enc, ['length'], {v}, sizes=S)",
        "probe_across target": "wb.probe_across(enc, 'subj_num', {v}, sizes=S)",
        "evaluate suite": "wb.evaluate(enc, {v})", "evaluate tracks": "wb.evaluate(enc, 'sts17', tracks={v})",
        "load name": "wb.load({v})", "hf_encoder folder": "wb.hf_encoder({v})",
        "own_task file": "wb.own_task({v})", "encode sentences": "enc.encode({v})",
        "encode batch": "enc.encode(['a b'], batch_size={v})",
        "report results": "wb.report({v}, TMP / 'r.html')", "report path": "wb.report(R, {v})",
        "untrained kind": "wb.untrained_encoder({v}, pair='en-fr')",
        "untrained pair": "wb.untrained_encoder('random-sp-average', pair={v})",
    }
    return [(f"api {name}", call.format(v=value)) for name, call in calls.items() for value in bad] + [
        ("api hf_encoder foreign code", f"wb.hf_encoder({str(tmp / 'evil_hf')!r})")]


def tamper_cases() -> list[tuple[str, str]]:
    """The cases of :mod:`tools.tampering`, its imports made here once (transformers, where installed, for the
    Hugging Face folders; without it those cases are left out)."""
    from tools import tampering
    try:
        __import__("transformers")
    except ImportError:
        print("transformers is not installed (the hf extra): the Hugging Face folder cases are left out")
        return [(f"tamper {name}", name) for name in tampering.CASES if not name.startswith("hugging_face")]
    return [(f"tamper {name}", name) for name in tampering.CASES]


def _start(case, tmp: Path) -> tuple[int, int]:
    """Fork a child that runs ``case`` and reports "outcome<TAB>message" on a pipe: (pid, read end)."""
    name, what = case
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return pid, read
    os.close(read)
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            if name.startswith("tamper"):
                from tools import tampering
                os.write(write, "\t".join(tampering.outcome(tmp, what)).encode("utf-8", "replace")[:4000])
                os._exit(0)
            if name.startswith("cli"):
                from workbench.cli import main
                rc = main(what)
            else:
                import workbench as wb
                namespace = {"wb": wb, "S": {"train": 40, "valid": 10, "test": 10}, "TMP": tmp, "enc": ENCODER,
                             "R": pd.DataFrame({"encoder": ["x"], "task": ["length"], "metric": ["accuracy"],
                                                "value": [0.5]})}
                exec(what, namespace)
                rc = 0
        text = f"{'accepted' if rc == 0 else 'clear'}\t{' '.join(err.getvalue().strip().splitlines()[-1:])}"
    except SystemExit as stop:
        text = f"{'accepted' if not stop.code else 'clear'}\t{err.getvalue().strip()[-300:]}"
    except Exception as error:  # noqa: BLE001 — what the sweep counts
        from workbench.checks import WorkbenchError
        # the API's own refusals are clear; Python's errors from inside (TypeError, KeyError, ...) are read
        kind = ("clear" if isinstance(error, WorkbenchError) else "python-error" if name.startswith("api")
                else "traceback")
        text = f"{kind}\t{type(error).__name__}: {str(error)[:300]}" + (
            "" if kind == "clear" else "\t" + traceback.format_exc()[-600:].replace("\n", " | "))
    os.write(write, text.encode("utf-8", "replace")[:4000])
    os._exit(0)


def _finish(case, pid: int, read: int, timed_out: bool) -> dict:
    name, what = case
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as pipe:
        outcome, _, message = ("timeout\t" if timed_out else pipe.read().decode("utf-8", "replace")).partition("\t")
    return {"case": name, "input": str(what), "outcome": outcome or "crashed", "message": message}


def sweep(cases: list, tmp: Path) -> list[dict]:
    """Every case, ``WORKERS`` children at a time, each killed after ``LIMIT`` seconds."""
    pending, running, rows = list(reversed(cases)), {}, []
    while pending or running:
        while pending and len(running) < WORKERS:
            case = pending.pop()
            running[_start(case, tmp)] = (case, time.monotonic())
        time.sleep(0.05)
        for (pid, read), (case, start) in list(running.items()):
            timed_out = time.monotonic() - start > LIMIT
            if timed_out or _exited(pid):
                del running[pid, read]
                rows.append(_finish(case, pid, read, timed_out and not _exited(pid)))
                if len(rows) % 100 == 0:
                    print(f"{len(rows)}/{len(cases)}", flush=True)
    return rows


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has ended (without reaping it)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


ENCODER = None  # made once, before the children fork (each would take seconds to make its own)


def main() -> None:
    global ENCODER, LIMIT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the cases' outcomes as CSV")
    parser.add_argument("--only", choices=("cli", "api", "tamper"),
                        help="only the CLI, the API or the tampered-input cases (tools/tampering.py)")
    parser.add_argument("--limit", type=float, default=LIMIT, help=f"seconds a case may run ({LIMIT})")
    parser.add_argument("--command", help="only this subcommand's CLI cases (e.g. 'probe', 'models export')")
    args = parser.parse_args()
    out, LIMIT = Path(args.out), args.limit
    tmp = Path(tempfile.mkdtemp(prefix="sweep-"))
    fixtures(tmp)
    import workbench as wb  # once, before the children fork
    ENCODER = wb.untrained_encoder("random-sp-average", pair="en-fr")
    from workbench.data.corpora import probe_pool
    probe_pool()  # the corpora read once here: a case that times out started work of its own, not the data's
    tracked = subprocess.run(["git", "ls-files", "-s"], capture_output=True, text=True).stdout
    cases = ([] if args.only in ("api", "tamper") else cli_cases(tmp)) + (
        [] if args.only in ("cli", "tamper") else api_cases(tmp)) + (
        [] if args.only in ("cli", "api") else tamper_cases())
    if args.command:
        cases = [case for case in cases if case[0].startswith(f"cli {args.command} ")]
    df = pd.DataFrame(sweep(cases, tmp))
    df.to_csv(out, index=False)
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                             text=True).stdout
    print(df["outcome"].value_counts().to_string())
    print("foreign code ran:", (tmp / "FOREIGN_CODE_RAN").exists())
    print("tracked files changed:", changed or "none", "| index unchanged:",
          tracked == subprocess.run(["git", "ls-files", "-s"], capture_output=True, text=True).stdout)
    print(f"{len(df)} cases ({df['case'].str.startswith('cli').sum()} CLI); rows in {out}")


if __name__ == "__main__":
    main()
