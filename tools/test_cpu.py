"""Where the test suite's CPU goes: a pytest plugin that charges each test the CPU time it used, in its own process
and in the child processes it waited for (the CLI, training and notebook kernels the end-to-end tests start).

    bash scripts/test -p tools.test_cpu --cpu-log=DIR

On two cores the suite keeps both busy, so its wall time is its CPU time over the cores: ``--durations`` (wall
time, stretched by whatever the other worker runs meanwhile) cannot say which test to make cheaper, nor does a
process's own CPU time hold what its children spent. Each process that runs tests (each pytest-xdist worker, or
the one process without them) appends a JSON line per test to ``DIR/<worker>.jsonl`` (nodeid, wall, own and
children's CPU seconds) and one for its start-up and collection; the run's own process prints the totals, the
tests that cost the most CPU (the xdist controller's own second or so is in neither) and those whose wall time most
exceeded their CPU time (a core the suite paid for and left idle)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

TOP = 15  # tests listed at the end
WAITED = 5  # and the tests that waited longest
_STARTED = time.time()  # this module is imported as pytest starts, before the conftest and the test modules


def pytest_addoption(parser):
    parser.addoption("--cpu-log", metavar="DIR", help="folder for the per-test CPU records (tools.test_cpu)")


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process, and of its children that have been waited for."""
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


class _Log:
    def __init__(self, folder: Path, worker: str):
        self.folder, self.worker, self.path = folder, worker, folder / f"{worker}.jsonl"

    def write(self, nodeid: str, wall: float, before: tuple[float, float], after: tuple[float, float]) -> None:
        record = {"test": nodeid, "wall": round(wall, 3), "own": round(after[0] - before[0], 3),
                  "children": round(after[1] - before[1], 3)}
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")

    def records(self) -> list[dict]:
        return [json.loads(line) for path in sorted(self.folder.glob("*.jsonl"))
                for line in path.read_text(encoding="utf-8").splitlines()]


_KEY = pytest.StashKey[_Log]()


def pytest_configure(config):
    folder = config.getoption("--cpu-log")
    if folder is None or "--cpu-log" in config.invocation_params.args:
        raise pytest.UsageError("tools.test_cpu: give --cpu-log=DIR, the folder each process writes its records to "
                                "(with '=': pytest takes a DIR after a space for a test path before it knows the "
                                "option)")
    worker = getattr(config, "workerinput", {}).get("workerid")  # an xdist worker's; None in the run's own process
    log = config.stash[_KEY] = _Log(Path(folder), worker or "main")
    if worker is None:  # an earlier run's records are not this one's
        log.folder.mkdir(parents=True, exist_ok=True)
        for old in log.folder.glob("*.jsonl"):
            old.unlink()


def pytest_collection_finish(session):
    """Start-up and collection: importing every test module (torch, pandas, spaCy ...) in this process."""
    if not session.config.getoption("collectonly"):
        log = session.config.stash[_KEY]
        log.write(f"<start-up and collection: {log.worker}>", time.time() - _STARTED, (0.0, 0.0), _cpu())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, before = time.perf_counter(), _cpu()
    yield
    item.config.stash[_KEY].write(item.nodeid, time.perf_counter() - start, before, _cpu())


def pytest_terminal_summary(terminalreporter, config):
    """The totals over every process's records, the tests that cost the most CPU, and those that waited longest
    (start-up and collection apart: a worker's start is not a test waiting)."""
    records = config.stash[_KEY].records()
    if not records:
        return
    own, children = sum(r["own"] for r in records), sum(r["children"] for r in records)
    cores = os.cpu_count() or 1
    terminalreporter.write_sep("=", "CPU time (tools.test_cpu)")
    terminalreporter.write_line(
        f"{own + children:.0f} s: {own:.0f} s in the test processes, {children:.0f} s in the children they waited "
        f"for; on {cores} cores no less than {(own + children) / cores:.0f} s of wall time")
    for r in sorted(records, key=lambda r: -(r["own"] + r["children"]))[:TOP]:
        terminalreporter.write_line(f"{r['own'] + r['children']:8.1f} s  {r['test']}")
    idle = {r["test"]: r["wall"] - r["own"] - r["children"] for r in records  # waiting: a lock, a child's start
            if not r["test"].startswith("<start-up")}
    terminalreporter.write_line(f"{sum(idle.values()):.0f} s of the tests' wall time went to no CPU of theirs "
                                "(a lock another worker held, a kernel or browser starting, a child not waited for); "
                                "the tests that waited longest:")
    for test, seconds in sorted(idle.items(), key=lambda kv: -kv[1])[:WAITED]:
        terminalreporter.write_line(f"{seconds:8.1f} s  {test}")
