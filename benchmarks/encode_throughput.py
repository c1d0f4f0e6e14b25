"""Encoding throughput (sentences/s) on the same real sentences, side by side.

    .venv/bin/python benchmarks/encode_throughput.py [--n 4000] [--models RUN_OR_CHECKPOINT ...]

Always the untrained encoders (random Transformer, random SP average) and all-MiniLM-L6-v2 when the 'minilm'
extra is installed; ``--models`` adds trained models (the semantic view of BGT/SP/BILSTM runs, WMF folders).
Each encoder gets a warm-up call first; the time includes preprocessing (Moses + sentencepiece), as a user pays it.
"""
import argparse
import time

import pandas as pd

from workbench.data.sts import STS_DATASETS, load_sts
from workbench.encoders import REFERENCE, UNTRAINED, named_encoder
from workbench.errors import WorkbenchError
from workbench.train import load


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="number of STS sentences to encode")
    parser.add_argument("--models", nargs="*", default=[], help="trained runs, checkpoints or WMF folders")
    args = parser.parse_args()
    sentences = [s for year in STS_DATASETS for f in load_sts(year).values() for s in f["sentence1"]][: args.n]
    encoders = [named_encoder(name) for name in UNTRAINED]
    for name in REFERENCE:
        try:
            encoders.append(named_encoder(name))
        except WorkbenchError as err:
            print(f"skipped {name}: {err}")
    encoders += [load(path).encoder("semantic") for path in args.models]
    rows = []
    for encoder in encoders:
        encoder.encode(sentences[:64])  # warm-up
        start = time.perf_counter()
        encoder.encode(sentences)
        rows.append({"encoder": encoder.name, "dim": encoder.dim,
                     "sentences_per_s": len(sentences) / (time.perf_counter() - start)})
    df = pd.DataFrame(rows)
    df["x_slowest"] = df.sentences_per_s / df.sentences_per_s.min()
    print(f"{len(sentences)} STS sentences, CPU\n")
    print(df.round(1).to_string(index=False))


if __name__ == "__main__":
    main()
