"""How long a user waits before the workbench answers: ``workbench --help``, a command's ``--help``, an argument
error and ``import workbench``, beside a bare Python start and ``import torch``, side by side in one run.

    .venv/bin/python benchmarks/startup.py [--repeats 7]

Each figure is the median wall time of fresh processes (the first of each is a warm-up, not counted), and
``x_python`` divides it by the bare interpreter's start. Under a second in all; about 20 s with the defaults.
"""
import argparse
import statistics
import subprocess
import sys
import time

import pandas as pd

CASES = {
    "python (bare start)": ["-c", "pass"],
    "import torch": ["-c", "import torch"],
    "import workbench": ["-c", "import workbench"],
    "workbench --help": ["-m", "workbench.cli", "--help"],
    "workbench probe --help": ["-m", "workbench.cli", "probe", "--help"],
    "workbench evaluate --help": ["-m", "workbench.cli", "evaluate", "--help"],
    "workbench train --help": ["-m", "workbench.cli", "train", "--help"],
    "workbench probe --classifier nope": ["-m", "workbench.cli", "probe", "--classifier", "nope"],
}


def wall(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    times = {name: [] for name in CASES}
    for name, argv in CASES.items():
        wall(argv)  # warm-up: the file cache
    for _ in range(args.repeats):  # interleaved, so a busy moment falls on every case alike
        for name, argv in CASES.items():
            times[name].append(wall(argv))
    medians = {name: statistics.median(values) for name, values in times.items()}
    table = pd.DataFrame({"median_s": medians, "max_s": {n: max(v) for n, v in times.items()}})
    table["x_python"] = table["median_s"] / medians["python (bare start)"]
    print(table.round(3).to_string())


if __name__ == "__main__":
    main()
