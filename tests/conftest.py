"""Shared fixtures. Every test session builds into its own temporary WORKBENCH_HOME (never the user's)."""
import atexit
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from filelock import FileLock

# Collection imports torch, pandas, spaCy, Jupyter's schema validators and the test modules (~300,000 objects that
# live to the end): a young generation collected every 10,000 allocations instead of 700 keeps the collector from
# walking that growing heap again and again meanwhile (collecting every test module in one process: 11-12 s ->
# 9 s), and pytest_collection_finish moves what collection made out of its reach.
gc.set_threshold(10_000, 50, 50)
_HOME = tempfile.mkdtemp(prefix="workbench-test-home-")
os.environ["WORKBENCH_HOME"] = _HOME
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
# pytest-xdist workers (scripts/test) share what the workbench stores under its home as a pure function of its inputs
# and writes atomically: the sentencepiece models (about 25 s each on one core), the splits, the parses of sentences
# that are not a shipped pool (tests parse slices of the pools) and the probing builders' candidates. The first
# worker to need one makes it (the tokenizers under a lock; the others at worst twice, with the same bytes) instead
# of each worker making its own. Everything else in a home stays a worker's own (the embedding caches: tests count
# what they encode), but for the shipped models' embeddings and results: many tests and both workers evaluate those
# on the same data. The folder is made by the process that starts the workers, which removes it at its end.
REPO = Path(__file__).resolve().parent.parent
SHARED = ("tokenizers", "splits", "parses", "probing/candidates",
          *(f"cache/{kind}/{view['fingerprint'][:16]}" for path in sorted(REPO.glob("trained/*/card.json"))
            for view in json.loads(path.read_text())["views"].values() for kind in ("embeddings", "results")))
RESULT_KEY = "cache/results/.key"  # the shared results are keyed: every worker reads them under one key
if "PYTEST_XDIST_WORKER" in os.environ:
    for part in SHARED + (RESULT_KEY,) if os.environ.get("WORKBENCH_TEST_SHARED") else ():
        if part != RESULT_KEY:
            os.makedirs(os.path.join(os.environ["WORKBENCH_TEST_SHARED"], part), exist_ok=True)
        os.makedirs(os.path.dirname(os.path.join(_HOME, part)), exist_ok=True)
        os.symlink(os.path.join(os.environ["WORKBENCH_TEST_SHARED"], part), os.path.join(_HOME, part))
else:
    os.environ["WORKBENCH_TEST_SHARED"] = tempfile.mkdtemp(prefix="workbench-test-shared-")
    atexit.register(shutil.rmtree, os.environ["WORKBENCH_TEST_SHARED"], ignore_errors=True)
    os.makedirs(os.path.join(os.environ["WORKBENCH_TEST_SHARED"], os.path.dirname(RESULT_KEY)))
    with open(os.open(os.path.join(os.environ["WORKBENCH_TEST_SHARED"], RESULT_KEY),
                      os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as key:
        key.write(os.urandom(32))


def made_once(name: str, make) -> Path:
    """The folder ``make(folder)`` fills, made once per test session: by whichever xdist worker asks first, while
    the others wait on its lock, then read it (tests must not change it)."""
    folder = Path(os.environ["WORKBENCH_TEST_SHARED"]) / "made" / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{folder}.lock"):
        if not (folder / ".done").is_file():
            shutil.rmtree(folder, ignore_errors=True)  # a worker that failed half-way
            folder.mkdir()
            make(folder)
            (folder / ".done").touch()
    return folder


@pytest.fixture(scope="session")
def en_fr_tokenizer():
    """The real joint en-fr sentencepiece model (trained once per session on the train split)."""
    from workbench.data.tokenizer import pair_tokenizer
    return pair_tokenizer("en-fr")


@pytest.fixture(scope="session")
def small_tokenizer(tmp_path_factory):
    """A small sentencepiece model trained on 3,000 real en-tr training pairs (fast)."""
    from workbench.data.corpora import load_splits
    from workbench.data.tokenizer import preprocess, train_sentencepiece
    pairs = load_splits("en-tr")["train"][:3000]
    text = [preprocess(s) for pair in pairs for s in pair]
    return train_sentencepiece(text, tmp_path_factory.mktemp("spm"), vocab_size=500)


@pytest.fixture(scope="session")
def short_run():
    """A four-update tiny BGT run with checkpoints at updates 2 and 4, trained once per session for all workers
    (tests use a copy, ``run_copy``, to damage or continue it)."""
    from workbench.training.recipes import TrainConfig
    from workbench.training.trainer import Trainer

    def make(folder):
        Trainer(TrainConfig.from_preset("tiny", max_pairs=1000, max_valid_pairs=100, max_updates=4, save_every=2,
                                        valid_every=4, eval_every=0), folder / "run", show_progress=False).run()

    return made_once("short-run", make) / "run"


def own_home(path: Path) -> Path:
    """A workbench home of its own at ``path`` (a registered pair must not reach the other tests' tasks), sharing
    with the session's home what is a pure function of its inputs (tokenizers, splits, probing candidates: keyed on
    what they are made from), so that what the session made already is not made again."""
    for part in ("tokenizers", "splits", "probing/candidates"):
        main = Path(_HOME) / part
        main.mkdir(parents=True, exist_ok=True)
        (path / part).parent.mkdir(parents=True, exist_ok=True)
        (path / part).symlink_to(main.resolve())
    return path


def registered_pivot(home: Path, pair: str = "fr-es") -> str:
    """Register ``pair`` in ``home`` (an :func:`own_home`) as ``workbench data add-pair PAIR --pivot`` does, and
    return what that command printed. The command runs once per session, in a home of its own, and its pair's
    folder is copied here: pivoting reads two corpora and splits the pair (tens of seconds a time)."""
    def make(folder):
        env = {**os.environ, "WORKBENCH_HOME": str(own_home(folder / "home"))}
        done = subprocess.run([sys.executable, "-m", "workbench.cli", "data", "add-pair", pair, "--pivot"], env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        (folder / "said.txt").write_text(done.stdout)

    made = made_once(f"pivot-{pair}", make)
    shutil.copytree(made / "home" / "pairs" / pair, home / "pairs" / pair)
    return (made / "said.txt").read_text()


@pytest.fixture()
def run_copy(short_run, tmp_path):
    shutil.copytree(short_run, tmp_path / "run")
    return tmp_path / "run"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(items):
    """The slow tests first (each worker collects the same order): two xdist workers then share them out at the
    start and finish on short tests together, instead of one running a minute-long test while the other waits.
    The tests that read ``tiny_run`` (each worker trains its own) go to one worker: it trains once, and the exports
    two of them measure have the same encoder weights, so the second card reads the first's cached results
    (15 s against 2 s)."""
    for item in items:
        if "tiny_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("tiny-run"))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_collection_finish(session):
    """What collection imported lives to the end: moved out of the collector's reach, the collector no longer walks
    it again and again while a test builds lists of sentences or parses (on three test files in one process, 0.97x
    the time, three runs each side by side)."""
    gc.collect()
    gc.freeze()
