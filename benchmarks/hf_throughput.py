"""A Hugging Face model's every layer through the workbench against a plain transformers loop, side by side.

    .venv/bin/python benchmarks/hf_throughput.py [--n 2000] [--hf PATH | --random-llama tiny|1b]
                                                 [--batch-size 64] [--device cpu|cuda] [--dtype float32|bfloat16]

The same real sentences (en-fr training split, English side), the same model (all-MiniLM-L6-v2 from the 'minilm'
extra unless ``--hf``, or a random-weight Llama-style model made here: ``tiny`` for a CPU dry run, ``1b`` — 2048
wide, 20 blocks, ~1.0 billion parameters — for #74's GPU measure) and batch size, every layer mean-pooled, on the
device and in the dtype given:

* ``workbench``: ``encoder.encode_layers(sentences, encoder.layers)`` (batches by length, one pass per batch);
* ``plain loop``: what a user writes with transformers alone — the sentences in their order, 64 at a time,
  ``model(**batch, output_hidden_states=True)``, each layer averaged over the attention mask.

Each rate is the best of three after a warm-up; the two outputs are checked to agree (within 1e-4 in float32,
2e-2 in bfloat16: padding to other lengths moves the last bits). #74's target: the workbench ≥ 0.9 × the plain
loop (on the GPU, in bfloat16: ``--random-llama 1b --device cuda --dtype bfloat16``).
"""
import argparse
import inspect
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import workbench as wb
from workbench.data.corpora import load_splits
from layer_memory import make_model  # benchmarks/, beside this file


LLAMAS = {"tiny": {"width": 64, "layers": 2, "intermediate": 128, "heads": 2},
          "1b": {"width": 2048, "layers": 20, "intermediate": 5632, "heads": 16}}


def plain_loop(folder, sentences: list[str], batch_size: int, device: str, dtype: str) -> list[np.ndarray]:
    import transformers
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = transformers.AutoModel.from_pretrained(str(folder), dtype=getattr(torch, dtype)).to(device).eval()
    accepted = set(inspect.signature(model.forward).parameters)  # Llama takes no token_type_ids

    def run() -> list[np.ndarray]:
        layers = [[] for _ in range(model.config.num_hidden_layers + 1)]
        with torch.no_grad():
            for start in range(0, len(sentences), batch_size):
                batch = tokenizer(sentences[start:start + batch_size], padding=True, truncation=True,
                                  max_length=256, return_tensors="pt").to(device)
                states = model(**{k: v for k, v in batch.items() if k in accepted}, output_hidden_states=True
                               ).hidden_states
                mask = batch["attention_mask"].unsqueeze(-1).to(states[0].dtype)
                for k, state in enumerate(states):
                    layers[k].append(((state * mask).sum(1) / mask.sum(1)).float().cpu().numpy())
        return [np.concatenate(parts) for parts in layers]
    return run


def best_of(call, repeat: int = 3) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="sentences (en-fr training split, English side)")
    parser.add_argument("--hf", help="a Hugging Face encoder folder (default: all-MiniLM-L6-v2)")
    parser.add_argument("--random-llama", choices=list(LLAMAS), help="a random-weight Llama-style model made here")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    args = parser.parse_args()
    sentences = [en for en, _ in load_splits("en-fr")["train"][: args.n]]
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.hf or (wb.minilm().folder if not args.random_llama else Path(scratch) / "llama")
        if args.random_llama:
            make_model(folder, sentences, **LLAMAS[args.random_llama], dtype=args.dtype)
        run(args, sentences, folder)


def run(args, sentences: list[str], folder) -> None:
    encoder = wb.hf_encoder(folder, max_len=256, device=args.device, dtype=args.dtype)  # plain mean pooling
    plain = plain_loop(encoder.folder, sentences, args.batch_size, args.device, args.dtype)
    encoder.encode_layers(sentences[:64], encoder.layers, batch_size=args.batch_size)  # warm-up
    plain()
    ours_s, ours = best_of(lambda: encoder.encode_layers(sentences, encoder.layers, batch_size=args.batch_size))
    plain_s, theirs = best_of(plain)
    tolerance = 1e-4 if args.dtype == "float32" else 2e-2
    for layer in encoder.layers:
        np.testing.assert_allclose(ours[layer], theirs[layer], rtol=tolerance, atol=tolerance)
    where = (torch.cuda.get_device_name() if args.device.startswith("cuda") else
             f"CPU, {torch.get_num_threads()} threads")
    print(f"{encoder.base_name}, {len(encoder.layers)} layers, {len(sentences)} sentences, batch {args.batch_size}, "
          f"{args.dtype}, {where}")
    print(f"workbench {len(sentences) / ours_s:,.0f} sentences/s, plain loop {len(sentences) / plain_s:,.0f} "
          f"sentences/s: ratio {plain_s / ours_s:.2f}")


if __name__ == "__main__":
    main()
