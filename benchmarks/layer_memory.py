"""Peak memory of an all-layer sweep: each layer streamed to the cache against every layer's array held whole.

    .venv/bin/python benchmarks/layer_memory.py [--n 120000] [--width 384] [--layers 4] [--max-len 8]

Makes a random-weight Llama-style model (``--layers`` blocks, ``--width`` wide with a narrow feed-forward, a
byte-level BPE learned from the sentences; nothing downloaded) and encodes ``--n`` real sentences (en-fr training
split, both sides, cut at ``--max-len`` tokens) at every layer into an empty cache, then reads each layer back as a
probe does, in a fresh process per way. The defaults make the layers' arrays, not the network's arithmetic, what
costs memory (one layer 176 MiB, all five 0.9 GiB), as in a sweep of a wide model over many sentences:

* ``streamed``: :func:`workbench.cache.cache_layers` as it runs (each batch's rows written to each layer's entry);
* ``whole``: the same call through an encoder whose ``encode_layers`` returns every layer's array (how a sweep
  ran before, and how a layered encoder without ``out=`` still runs).

Each process loads the model once to warm the libraries up (their imports and thread pools), then reports its
resident memory before the model is loaded again and its peak (``ru_maxrss``); the growth is set against the budget ``model + one layer's array`` (#74's target: growth ≤ 1.5 × budget). Besides what scales with
the sentences, a forward pass holds ~50–100 MiB of its own (the tokenizer's and torch's working memory, measured
with a sink that keeps nothing). Takes ~4 minutes with its defaults on 2 CPU cores.
"""
import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


def make_model(folder: Path, sentences: list[str], width: int, layers: int, intermediate: int | None = None,
               heads: int = 4, dtype: str = "float32") -> None:
    """A random-weight Llama-style model and a byte-level BPE learned from ``sentences``, saved in ``folder``."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(sentences[:20000], trainers.BpeTrainer(
        vocab_size=2000, special_tokens=["<unk>", "<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", eos_token="<eos>")
    torch.manual_seed(0)
    model = transformers.LlamaModel(transformers.LlamaConfig(
        vocab_size=len(fast), hidden_size=width, intermediate_size=intermediate or max(width // 3, 16),
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=256))
    model.to(getattr(torch, dtype)).save_pretrained(folder)
    fast.save_pretrained(folder)


def sweep(way: str, folder: str, n: int, max_len: int) -> dict:
    """One way, in this process: the sweep into an empty cache, then each layer read back."""
    import workbench as wb
    from workbench.cache import cache_layers
    from workbench.data.corpora import load_splits
    sentences = list(dict.fromkeys(s for pair in load_splits("en-fr")["train"] for s in pair))[:n]
    warm = wb.hf_encoder(folder, pooling="last", max_len=max_len)  # the libraries' own lazy imports and thread pools
    warm.encode_layers(sentences[:64], warm.layers)
    del warm
    gc.collect()
    before = _rss_mib()
    encoder = wb.hf_encoder(folder, pooling="last", max_len=max_len)
    parameters = sum(p.numel() for p in encoder.model.parameters())

    class Whole:  # the layered encoder of old: every layer's array made, then stored
        name, layers, base_name = encoder.name, encoder.layers, encoder.base_name

        def at_layer(self, layer):
            return encoder.at_layer(layer)

        def encode_layers(self, sentences, layers, show_progress=False):
            return encoder.encode_layers(sentences, layers, show_progress=show_progress)

    views = cache_layers(encoder if way == "streamed" else Whole(), sentences, encoder.layers)
    encoded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for view in views:  # as a sweep's probes read them: one layer at a time
        view.encode(sentences)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"way": way, "sentences": len(sentences), "layers": len(views), "width": encoder.dim,
            "model_mib": round(4 * parameters / 2**20, 1), "layer_mib": round(4 * len(sentences) * encoder.dim / 2**20, 1),
            "rss_before_mib": round(before, 1), "peak_encoding_mib": round(encoded, 1), "peak_mib": round(peak, 1), "growth_mib": round(peak - before, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=120000, help="sentences (en-fr training split, both sides)")
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--max-len", type=int, default=8, help="tokens read of each sentence")
    parser.add_argument("--way", choices=("streamed", "whole"), help=argparse.SUPPRESS)  # the child process
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.way:
        print(json.dumps(sweep(args.way, args.folder, args.n, args.max_len)))
        return
    import pandas as pd
    from workbench.data.corpora import load_splits
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "model"
        make_model(folder, [s for pair in load_splits("en-fr")["train"][:10000] for s in pair], args.width,
                   args.layers)
        rows = []
        for way in ("streamed", "whole"):
            env = {**os.environ, "WORKBENCH_HOME": str(Path(scratch) / way)}  # an empty cache each
            done = subprocess.run([sys.executable, __file__, "--way", way, "--folder", str(folder), "--n",
                                   str(args.n), "--max-len", str(args.max_len)], env=env, capture_output=True,
                                  text=True, check=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    df = pd.DataFrame(rows)
    df["growth / (model + layer)"] = (df["growth_mib"] / (df["model_mib"] + df["layer_mib"])).round(2)
    print(df.to_string(index=False))


if __name__ == "__main__":
    main()
