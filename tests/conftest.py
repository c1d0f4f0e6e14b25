"""Shared fixtures. Every test session builds into its own temporary WORKBENCH_HOME (never the user's)."""
import atexit
import os
import shutil
import tempfile

import pytest

_HOME = tempfile.mkdtemp(prefix="workbench-test-home-")
os.environ["WORKBENCH_HOME"] = _HOME
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
# pytest-xdist workers (scripts/test) share the sentencepiece models they train: the first to need one trains it
# while the other waits on its lock, instead of both training it (about 25 s each on one core). The folder is made
# by the process that starts the workers, which removes it at its end.
if "PYTEST_XDIST_WORKER" in os.environ:
    if os.environ.get("WORKBENCH_TEST_TOKENIZERS"):
        os.symlink(os.environ["WORKBENCH_TEST_TOKENIZERS"], os.path.join(_HOME, "tokenizers"))
else:
    os.environ["WORKBENCH_TEST_TOKENIZERS"] = tempfile.mkdtemp(prefix="workbench-test-tokenizers-")
    atexit.register(shutil.rmtree, os.environ["WORKBENCH_TEST_TOKENIZERS"], ignore_errors=True)


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
def short_run(tmp_path_factory):
    """A four-update tiny BGT run with checkpoints at updates 2 and 4, trained once per session (tests use a copy,
    ``run_copy``, to damage or continue it)."""
    from workbench.training.recipes import TrainConfig
    from workbench.training.trainer import Trainer
    run = tmp_path_factory.mktemp("short") / "run"
    Trainer(TrainConfig.from_preset("tiny", max_pairs=1000, max_valid_pairs=100, max_updates=4, save_every=2,
                                    valid_every=4, eval_every=0), run, show_progress=False).run()
    return run


@pytest.fixture()
def run_copy(short_run, tmp_path):
    shutil.copytree(short_run, tmp_path / "run")
    return tmp_path / "run"
