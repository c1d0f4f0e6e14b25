"""A Hugging Face model's every layer through the workbench against a plain transformers loop, side by side.

    .venv/bin/python benchmarks/hf_throughput.py [--n 2000] [--hf PATH] [--batch-size 64]

The same real sentences (en-fr training split, English side), the same model (all-MiniLM-L6-v2 from the 'minilm'
extra unless ``--hf``) and batch size, every layer mean-pooled, on the CPU:

* ``workbench``: ``encoder.encode_layers(sentences, encoder.layers)`` (batches by length, one pass per batch);
* ``plain loop``: what a user writes with transformers alone — the sentences in their order, 64 at a time,
  ``model(**batch, output_hidden_states=True)``, each layer averaged over the attention mask.

Each rate is the best of three after a warm-up; the two outputs are checked to agree (float32, within 1e-4:
padding to other lengths moves the last bits). #74's target: the workbench ≥ 0.9 × the plain loop.
"""
import argparse
import time

import numpy as np
import torch

import workbench as wb
from workbench.data.corpora import load_splits


def plain_loop(folder, sentences: list[str], batch_size: int) -> list[np.ndarray]:
    import transformers
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = transformers.AutoModel.from_pretrained(str(folder)).eval()

    def run() -> list[np.ndarray]:
        layers = [[] for _ in range(model.config.num_hidden_layers + 1)]
        with torch.no_grad():
            for start in range(0, len(sentences), batch_size):
                batch = tokenizer(sentences[start:start + batch_size], padding=True, truncation=True,
                                  return_tensors="pt")
                states = model(**batch, output_hidden_states=True).hidden_states
                mask = batch["attention_mask"].unsqueeze(-1).float()
                for k, state in enumerate(states):
                    layers[k].append(((state * mask).sum(1) / mask.sum(1)).numpy())
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
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    sentences = [en for en, _ in load_splits("en-fr")["train"][: args.n]]
    encoder = wb.hf_encoder(args.hf) if args.hf else wb.hf_encoder(wb.minilm().folder)  # plain mean pooling
    plain = plain_loop(encoder.folder, sentences, args.batch_size)
    encoder.encode_layers(sentences[:64], encoder.layers, batch_size=args.batch_size)  # warm-up
    plain()
    ours_s, ours = best_of(lambda: encoder.encode_layers(sentences, encoder.layers, batch_size=args.batch_size))
    plain_s, theirs = best_of(plain)
    for layer in encoder.layers:
        np.testing.assert_allclose(ours[layer], theirs[layer], rtol=1e-4, atol=1e-4)
    print(f"{encoder.base_name}, {len(encoder.layers)} layers, {len(sentences)} sentences, batch {args.batch_size}, "
          f"CPU, {torch.get_num_threads()} threads")
    print(f"workbench {len(sentences) / ours_s:,.0f} sentences/s, plain loop {len(sentences) / plain_s:,.0f} "
          f"sentences/s: ratio {plain_s / ours_s:.2f}")


if __name__ == "__main__":
    main()
