"""Every benchmark's default path runs end to end (at small sizes), so none can rot: each exits 0 and prints its
table (and the suite's CPU plugin, tools.test_cpu, records what it says). The numbers themselves are measurements,
recorded where they were taken, not asserted here."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

CASES = {
    "encode_throughput.py": (["--n", "300", "--models", "sp-en-fr", "bgt-en-fr", "--named", "random-sp-average",
                              "--rounds", "2"], "side by side: sp-en-fr:semantic"),
    "eval_suite.py": (["--encoders", "random-sp-average", "--throughput-sentences", "300"], "sentences_per_s"),
    "layer_encoding.py": (["--n", "8"], "one_pass_s"),
    "layer_memory.py": (["--n", "300", "--width", "32", "--layers", "1"], "growth / (model + layer)"),
    "own_task.py": (["--n", "200", "--encoder", "random-transformer", "--layers", "0", "1"], "probe + control (cached)"),
    "startup.py": (["--repeats", "1"], "x_python"),
    "transfer_decoding.py": (["--n", "12", "--repeat", "1"], "x_faster"),
    "probe_suite.py": (["--encoder", "random-sp-average", "--tasks", "length", "--sizes", "300", "60", "60"],
                       "results cached"),
}
# Run end to end by another test: the GPU campaign's dry run runs train_throughput.py on the tiny preset (its bench
# step) and hf_throughput.py on the tiny Llama (its layers step), as this test did, and asserts their output.
ELSEWHERE = dict.fromkeys(("train_throughput.py", "hf_throughput.py"),
                          "test_campaign.py::test_check_runs_the_gpu_tests_bench_the_steady_state_throughput_and_"
                          "layers_a_language_model")


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(CASES))
def test_a_benchmark_runs_end_to_end(script, tmp_path):
    args, expected = CASES[script]
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=900,  # the threads scripts/test gives each worker
                            env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert expected in result.stdout


def test_every_benchmark_is_run_by_the_test_above_or_by_the_one_named():
    assert sorted(p.name for p in (REPO / "benchmarks").glob("*.py")) == sorted({*CASES, *ELSEWHERE})
    for test in ELSEWHERE.values():  # it exists (and asserts the script's table)
        module, name = test.split("::")
        assert f"def {name}(" in (REPO / "tests" / module).read_text(), test


BUSY = "sum(i * i for i in range(4_000_000))"  # about a third of a CPU second


def test_the_cpu_plugin_charges_each_test_its_own_and_its_childrens_cpu(tmp_path):
    """tools.test_cpu, as `bash scripts/test -p tools.test_cpu --cpu-log=DIR` runs it: in two xdist workers, a test
    that computes is charged its own CPU, one that waits for a computing child process that child's, and the run
    ends with the totals over both workers and the test that waited without computing (a sleep) first among those
    that left a core idle; an earlier run's records are dropped, and without --cpu-log=DIR it says what to give."""
    (tmp_path / "test_busy.py").write_text(
        f"import subprocess, sys, time\n\ndef test_computes():\n    {BUSY}\n\n\ndef test_waits_for_a_child():\n"
        f"    subprocess.run([sys.executable, '-c', {BUSY!r}], check=True)\n\n\ndef test_sleeps():\n"
        "    time.sleep(1)\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the repository's settings
    log = tmp_path / "cpu"
    log.mkdir()
    (log / "gw7.jsonl").write_text('{"test": "stale", "wall": 1, "own": 99, "children": 0}\n')
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tools.test_cpu"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([*pytest_run, "-n", "2", f"--cpu-log={log}", "test_busy.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(p.name for p in log.iterdir()) == ["gw0.jsonl", "gw1.jsonl"]
    records = {r["test"]: r for path in log.iterdir() for r in map(json.loads, path.read_text().splitlines())}
    assert set(records) == {"<start-up and collection: gw0>", "<start-up and collection: gw1>",
                            "test_busy.py::test_computes", "test_busy.py::test_waits_for_a_child",
                            "test_busy.py::test_sleeps"}
    computes, waits = records["test_busy.py::test_computes"], records["test_busy.py::test_waits_for_a_child"]
    assert computes["own"] > 0.1 and computes["children"] == 0
    assert waits["children"] > 0.1 and waits["children"] > 2 * waits["own"]
    assert "CPU time (tools.test_cpu)" in done.stdout and "test_busy.py::test_computes" in done.stdout
    assert "stale" not in done.stdout
    waited = done.stdout.split("the tests that waited longest:\n")[1].splitlines()
    assert waited[0].endswith("test_busy.py::test_sleeps") and 0.9 < float(waited[0].split()[0]) < 2
    for wrong in ([], ["--cpu-log", str(log)]):  # none, or one pytest would read DIR of as a test path
        refused = subprocess.run([*pytest_run, *wrong, "test_busy.py"], cwd=tmp_path, env=env, capture_output=True,
                                 text=True, timeout=120)
        assert refused.returncode == 4 and "give --cpu-log=DIR" in refused.stderr, refused.stderr
