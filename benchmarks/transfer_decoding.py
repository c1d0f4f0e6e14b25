"""Style transfer's beam search step by step with each layer's keys and values kept, beside the same search
feeding the whole prefix through the decoder at every step (how it decoded before 2026-12-07), side by side.

    .venv/bin/python benchmarks/transfer_decoding.py [--n 200] [--model bgt-en-fr] [--beam 5] [--repeat 2]

The same fixed held-out pairs (the cards' style-transfer sample: ``transfer_pairs``), the default decoding
(re-ranked, guided, the source read without its punctuation) and the paper's, each timed both ways; the outputs
are checked to be the same sentences. ``--model`` takes a shipped BGT with decoders, a run or a model folder (an
unpacked campaign package: ``workbench.zoo.packaging.unpack_shards``). Each time is the best of ``--repeat``.
"""
import argparse
import time

import pandas as pd
import torch

from workbench.models import transformer
from workbench.models.folder import load
from workbench.style_transfer.evaluation import transfer_pairs
from workbench.style_transfer.generation import PAPER_DECODING, transfer


class WholePrefix:
    """The search's decoding state as it was: the prefix so far, run through the whole decoder at each step."""

    def __init__(self, decoder, cond):
        self.decoder, self.cond, self.prefix = decoder, cond, None

    def step(self, token):
        self.prefix = token[:, None] if self.prefix is None else torch.cat([self.prefix, token[:, None]], dim=1)
        return self.decoder(self.prefix, self.cond)[:, -1]

    def reorder(self, rows):
        self.prefix, self.cond = self.prefix[rows], self.cond[rows]


def timed(call, repeat: int) -> tuple[float, list[str]]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = call()
        best = min(best, time.perf_counter() - start)
    return best, out


def compare(model, sources: list[str], styles: list[str], beam: int, repeat: int) -> list[dict]:
    rows, kept = [], transformer.LatentDecoder.incremental
    for decoding, options in (("default", {}), ("paper's", PAPER_DECODING)):
        options = {**options, "beam": beam}
        transfer(model, sources[:4], styles[:4], **options)  # warm-up
        step_s, stepped = timed(lambda: transfer(model, sources, styles, **options), repeat)
        transformer.LatentDecoder.incremental = lambda self, cond: WholePrefix(self, cond)
        try:
            whole_s, whole = timed(lambda: transfer(model, sources, styles, **options), repeat)
        finally:
            transformer.LatentDecoder.incremental = kept
        same = sum(a == b for a, b in zip(stepped, whole))
        rows.append({"decoding": decoding, "pairs": len(sources), "same outputs": f"{same}/{len(sources)}",
                     "whole_prefix_s": round(whole_s, 2), "kept_keys_values_s": round(step_s, 2),
                     "x_faster": round(whole_s / step_s, 2)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="pairs (the cards' fixed sample: 200)")
    parser.add_argument("--model", default="bgt-en-fr", help="a BGT with decoders: shipped name, run or folder")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2, help="timings of each, the best kept")
    args = parser.parse_args()
    model = load(args.model)
    pairs = transfer_pairs(args.n)
    print(f"{args.model}: d_model {model.cfg.d_model}, {torch.get_num_threads()} threads")
    with pd.option_context("display.width", 200):
        print(pd.DataFrame(compare(model, list(pairs["source"]), list(pairs["style"]), args.beam, args.repeat))
              .to_string(index=False))


if __name__ == "__main__":
    main()
