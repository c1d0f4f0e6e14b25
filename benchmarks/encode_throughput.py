"""Encoding throughput (sentences/s) of the untrained encoders on the same real sentences, side by side.

    .venv/bin/python benchmarks/encode_throughput.py [--n 4000]
"""
import argparse
import time

from workbench.data.sts import STS_DATASETS, load_sts
from workbench.encoders import UNTRAINED, untrained_encoder


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=4000, help="number of STS sentences to encode")
    args = parser.parse_args()
    sentences = [s for year in STS_DATASETS for f in load_sts(year).values() for s in f["sentence1"]][: args.n]
    rates = {}
    for name in UNTRAINED:
        encoder = untrained_encoder(name)
        encoder.encode(sentences[:64])  # warm-up
        start = time.perf_counter()
        encoder.encode(sentences)
        rates[name] = len(sentences) / (time.perf_counter() - start)
    slowest = min(rates.values())
    print(f"{len(sentences)} STS sentences")
    for name, rate in rates.items():
        print(f"{name:>20}: {rate:10.0f} sentences/s  ({rate / slowest:.1f}x the slowest)")


if __name__ == "__main__":
    main()
