"""Benchmark: the full evaluation suite uncached vs on cached embeddings, and encode throughput vs MiniLM.

    .venv/bin/python benchmarks/eval_suite.py [--pair en-fr] [--throughput-sentences 5000]

For each encoder (the untrained ones, and all-MiniLM-L6-v2 when the 'minilm' extra is installed), in one run:
``evaluate(encoder, "all")`` with no cache (every sentence encoded), the same suites on cached embeddings
(metrics recomputed, encoding skipped), and answered from the result cache; then encoding throughput on the
same STS sentences for every encoder, with the ratio to MiniLM. Needs 2 CPU cores' worth of patience for the
uncached random Transformer (~1-2 min).
"""
from __future__ import annotations

import argparse
import time

import pandas as pd

from workbench.cache import cached
from workbench.data.sts import load_sts
from workbench.encoders import named_encoder, NAMED_ENCODERS
from workbench.checks import WorkbenchError
from workbench.evaluation import evaluate, SUITES


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="en-fr")
    parser.add_argument("--throughput-sentences", type=int, default=5000)
    parser.add_argument("--encoders", nargs="+", choices=list(NAMED_ENCODERS), default=list(NAMED_ENCODERS))
    args = parser.parse_args()
    encoders = []
    for name in args.encoders:
        try:
            encoders.append(named_encoder(name, args.pair))
        except WorkbenchError as err:
            print(f"skipped {name}: {err}")
    rows = []
    for encoder in encoders:
        store = cached(encoder)
        evaluate(store, "all")  # fill the embedding and result caches (not timed)
        rows.append({"encoder": encoder.name,
                     "uncached_s": timed(lambda: evaluate(encoder, "all", cache=False)),
                     "cached_embeddings_s": timed(lambda: [suite.run(store) for suite in SUITES.values()]),
                     "cached_results_s": timed(lambda: evaluate(store, "all"))})
        print(rows[-1], flush=True)
    suite_times = pd.DataFrame(rows)
    suite_times["speedup_embeddings"] = suite_times.uncached_s / suite_times.cached_embeddings_s
    print("\nfull suite (STS12-16, Hard STS, STS17, Tatoeba; languages an encoder cannot read are skipped)\n")
    print(suite_times.round(2).to_string(index=False))

    frames = load_sts(2012) | load_sts(2014)
    sentences = list(dict.fromkeys(s for f in frames.values() for s in (*f.sentence1, *f.sentence2)))
    sentences = sentences[: args.throughput_sentences]
    speed = pd.DataFrame([{"encoder": e.name, "sentences_per_s": len(sentences) / timed(lambda: e.encode(sentences))}
                          for e in encoders])
    if (speed.encoder == "all-MiniLM-L6-v2").any():
        minilm = speed.loc[speed.encoder == "all-MiniLM-L6-v2", "sentences_per_s"].item()
        speed["vs_minilm"] = speed.sentences_per_s / minilm
    print(f"\nencode throughput on the same {len(sentences)} STS sentences (CPU)\n")
    print(speed.round(2).to_string(index=False))


if __name__ == "__main__":
    main()
