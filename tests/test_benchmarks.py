"""Every benchmark's default path runs end to end (at small sizes), so none can rot: each exits 0 and prints its
table. The numbers themselves are measurements, recorded where they were taken, not asserted here."""
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
    "hf_throughput.py": (["--n", "64", "--random-llama", "tiny"], "ratio"),
    "own_task.py": (["--n", "200", "--encoder", "random-transformer", "--layers", "0", "1"], "probe + control (cached)"),
    "startup.py": (["--repeats", "1"], "x_python"),
    "probe_suite.py": (["--encoder", "random-sp-average", "--tasks", "length", "--sizes", "300", "60", "60"],
                       "results cached"),
}
# Run end to end by another test: the GPU campaign's dry run (its bench step) runs train_throughput.py on the tiny
# preset, as this test did, and asserts its table.
ELSEWHERE = {"train_throughput.py": "test_campaign.py::test_check_runs_the_gpu_tests_and_bench_the_steady_state_"
                                    "throughput_with_its_phases"}


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
