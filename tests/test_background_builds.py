"""Probing sets built by another process (workbench/probing/background.py), as the demo's first run builds them."""
import subprocess
import sys
import time

import pytest

from workbench.checks import WorkbenchError
from workbench.probing.background import SetBuilder
from workbench.probing.build import build_task, pending

SIZES = {"train": 211, "valid": 23, "test": 23}  # sizes no other test builds


def test_sets_built_by_another_process_are_those_built_here_and_a_script_without_a_main_guard_runs_once(tmp_path):
    script = tmp_path / "unguarded.py"  # what multiprocessing's spawn would run again in its child
    script.write_text("from workbench.probing.background import SetBuilder\n"
                      f"print('script ran', flush=True)\nwith SetBuilder(['length', 'punct_num'], {SIZES!r}) as s:\n"
                      "    print(s['length'].result(), s['punct_num'].result())\n")
    assert pending(("length", "punct_num"), SIZES)[0] == ["length", "punct_num"]
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["script ran", "length punct_num"]
    assert pending(("length", "punct_num"), SIZES) == ([], {})  # stored where this process reads them
    stored = build_task("length", sizes=SIZES).manifest
    assert build_task("length", sizes=SIZES, force=True).manifest == stored  # the same set as one built here


def test_a_failed_build_fails_its_task_and_those_after_it_with_the_other_processs_words():
    with pytest.raises(WorkbenchError, match="probing sizes must give train, valid, test"):
        SetBuilder(["length"], {"train": 10})
    with SetBuilder(["punct_first", "no_such_task", "length"], SIZES) as sets:
        assert sets["punct_first"].result(timeout=300) == "punct_first"
        for task in ("no_such_task", "length"):
            with pytest.raises(WorkbenchError, match=r"(?s)another process stopped \(exit 1\).*no_such_task"):
                sets[task].result(timeout=60)


def test_leaving_the_block_or_stop_ends_a_build_still_running_and_what_waits_on_it_hears_at_once():
    with SetBuilder(["word_content", "length"], {"train": 5002, "valid": 1002, "test": 1002}) as sets:
        sets.stop()  # as the demo does when a step fails while others wait on their sets
        with pytest.raises(WorkbenchError, match="another process stopped"):
            sets["length"].result(timeout=30)
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        with SetBuilder(["word_content"], {"train": 5001, "valid": 1001, "test": 1001}) as sets:
            raise KeyboardInterrupt  # as Ctrl-C in the demo's main thread
    assert sets.process.poll() is not None and time.perf_counter() - start < 30
    with pytest.raises(WorkbenchError, match="another process stopped"):
        sets["word_content"].result(timeout=10)
