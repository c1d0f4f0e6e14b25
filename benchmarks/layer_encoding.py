"""One pass for all layers vs one pass per layer: the cost of a layer sweep's encoding, side by side.

    .venv/bin/python benchmarks/layer_encoding.py [--n 4000] [--model bgt-en-fr] [--hf PATH]

For each encoder (BGT's semantic view; with ``--hf`` a Hugging Face encoder folder, by default all-MiniLM-L6-v2
when the 'minilm' extra is installed): the seconds to encode the same real sentences at every layer with
``encode_layers`` (one forward pass per batch, every layer pooled from it) and with one ``at_layer(k).encode``
per layer, and their ratio. Each time is the best of three after a warm-up; the outputs are checked to be
identical. The embedding cache is not involved (it would make the second run free).
"""
import argparse
import time

import numpy as np
import pandas as pd

from workbench.data.corpora import load_splits
from workbench.checks import WorkbenchError
from workbench.models.folder import load


def best_of(call, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def compare(encoder, sentences: list[str]) -> dict:
    layers = list(encoder.layers)
    encoder.encode_layers(sentences[:64], layers)  # warm-up
    together = encoder.encode_layers(sentences, layers)
    for layer in layers:
        np.testing.assert_array_equal(together[layer], encoder.at_layer(layer).encode(sentences))
    one_pass = best_of(lambda: encoder.encode_layers(sentences, layers))
    per_layer = best_of(lambda: [encoder.at_layer(layer).encode(sentences) for layer in layers])
    return {"encoder": getattr(encoder, "base_name", encoder.name), "layers": len(layers), "sentences": len(sentences),
            "one_pass_s": round(one_pass, 2), "per_layer_s": round(per_layer, 2),
            "per_layer / one_pass": round(per_layer / one_pass, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="sentences (en-fr training split, English side)")
    parser.add_argument("--model", default="bgt-en-fr", help="a shipped model or run (its semantic view)")
    parser.add_argument("--hf", help="a Hugging Face encoder folder (default: all-MiniLM-L6-v2 if installed)")
    args = parser.parse_args()
    sentences = [en for en, _ in load_splits("en-fr")["train"][: args.n]]
    encoders = [load(args.model).encoder("semantic")]
    try:
        if args.hf:
            from workbench.models.huggingface import hf_encoder
            encoders.append(hf_encoder(args.hf))
        else:
            from workbench.models.huggingface import minilm
            encoders.append(minilm())
    except WorkbenchError as err:
        print(f"skipped the Hugging Face encoder: {err}")
    print(pd.DataFrame([compare(encoder, sentences) for encoder in encoders]).to_string(index=False))


if __name__ == "__main__":
    main()
