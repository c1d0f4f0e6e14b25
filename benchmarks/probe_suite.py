"""Benchmark: every probing task at full (card) size on one encoder, uncached vs cached, side by side.

    .venv/bin/python benchmarks/probe_suite.py [--encoder random-transformer] [--pair en-fr]

Per task it measures, in one run: encoding the task's sentences (cache miss, then stored), reading them back
(cache hit), training the probe + control probe on the cached embeddings (what a researcher re-running a probe
with other options pays), and answering from the result cache. It prints the table and the ratios
uncached/cached. Tasks in a language the encoder does not read are skipped. Datasets are built first (not
timed). Embeddings go to a temporary cache so earlier runs do not flatter the numbers.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from workbench.cache import CachedEncoder
from workbench.encoders import named_encoder
from workbench.probing.build import build_task
from workbench.probing.probe import probe
from workbench.probing.tasks import readable_tasks, task_names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="random-transformer")
    parser.add_argument("--pair", default="en-fr")
    parser.add_argument("--tasks", nargs="+", default=task_names())
    parser.add_argument("--sizes", nargs=3, type=int, metavar=("TRAIN", "VALID", "TEST"),
                        help="probing set sizes (default: each card's)")
    args = parser.parse_args()
    encoder = named_encoder(args.encoder, args.pair)
    tasks = [t for t in args.tasks if t in readable_tasks(encoder)]
    sizes = dict(zip(("train", "valid", "test"), args.sizes)) if args.sizes else None
    datasets = {task: build_task(task, sizes=sizes) for task in tasks}
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for task, dataset in datasets.items():
            sentences = list(dict.fromkeys(dataset.data["sentence"]))
            store = CachedEncoder(encoder, root=Path(root))
            start = time.perf_counter()
            store.encode(sentences)
            encode_s = time.perf_counter() - start
            start = time.perf_counter()
            CachedEncoder(encoder, root=Path(root)).encode(sentences)
            read_s = time.perf_counter() - start
            start = time.perf_counter()
            result = probe(store, dataset, refit=True)  # classifier + control on cached embeddings
            fit_s = time.perf_counter() - start
            start = time.perf_counter()
            probe(store, dataset)
            remembered_s = time.perf_counter() - start
            rows.append({"task": task, "sentences": len(sentences), "train": result.n_train, "test": result.n_test,
                         "encode_s": encode_s, "cache_read_s": read_s, "probe_fit_s": fit_s,
                         "result_cache_s": remembered_s, "accuracy": 100 * result.accuracy,
                         "selectivity": 100 * result.selectivity})
            print(f"{task}: {rows[-1]}", flush=True)
    df = pd.DataFrame(rows)
    total = df[["encode_s", "cache_read_s", "probe_fit_s", "result_cache_s"]].sum()
    print(f"\n{encoder.name}, {len(df)} tasks at {'card size' if sizes is None else sizes}\n")
    print(df.round(3).to_string(index=False))
    uncached = total.encode_s + total.probe_fit_s
    cached = total.cache_read_s + total.probe_fit_s
    print(f"\nembeddings: encode {total.encode_s:.1f} s vs cache read {total.cache_read_s:.2f} s "
          f"-> {total.encode_s / total.cache_read_s:.0f}x")
    print(f"all tasks, probes trained: uncached {uncached:.1f} s vs cached embeddings {cached:.1f} s "
          f"-> {uncached / cached:.1f}x")
    print(f"all tasks, results cached: {total.result_cache_s:.2f} s -> {uncached / total.result_cache_s:.0f}x")


if __name__ == "__main__":
    main()
