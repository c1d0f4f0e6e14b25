"""Benchmark: training throughput (tokens/s) and model FLOPs utilisation of BGT per preset, with the decoder
output head as it is and as it was (side by side, in one run).

    .venv/bin/python benchmarks/train_throughput.py [--presets cpu] [--updates 5] [--pair en-fr] [--heads split]

Runs real updates of the Trainer's step (forward, backward, clip, AdamW) on real en-fr micro-batches of each
preset's size, after one warm-up update, and prints tokens/s and achieved FLOP/s. ``head=split`` is the
current decoder head: logits only at real target tokens, ``W_out [c ; x] = W_c c + W_x x`` with the
conditioning's share once per sentence, fused cross-entropy; ``head=concat`` is the head before that change
(logits ``[c ; x] @ W_out`` at every position, padding included, then log-softmax over all of them) — the same
losses, more work.

FLOP formula (stated, not measured; the same for both heads, so a faster head shows as a higher rate): every
parameter that multiplies a token costs 2 FLOPs forward and 4 backward, so an update costs 6 × Σ_modules
(matmul parameters of the module × tokens through it), where the semantic encoder reads the English and the
foreign side, each language encoder and decoder its own side, and each translation decoder the target side;
matmul parameters exclude the embedding tables (lookups) and include the bias-free output projections
V × (C + d). Attention scores add 12 × layers × d × T per token, with T taken as half the preset's maximum
sentence length. MFU = achieved / peak: on a GPU the dense bf16 peak (989 TFLOP/s for H100/H200 SXM); on CPU
this machine's measured fp32 matmul rate (a 2048² matmul), so the fraction says how far the update is from
the fastest thing the CPU does.
"""
from __future__ import annotations

import argparse
import time
from contextlib import contextmanager, nullcontext

import pandas as pd
import torch
import torch.nn.functional as F

from workbench.models import bgt
from workbench.recipes import TrainConfig
from workbench.train import Trainer

PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12}


def matmul_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for name, p in module.named_parameters() if "embed.embed" not in name)


def update_flops(trainer: Trainer, tokens_en: int, tokens_xx: int, width: int) -> float:
    model, cfg = trainer.model, trainer.model.cfg
    through = {"semantic": tokens_en + tokens_xx, "en": tokens_en, cfg.foreign: tokens_xx}
    target = {"en": tokens_en, cfg.foreign: tokens_xx, f"en->{cfg.foreign}": tokens_xx,
              f"{cfg.foreign}->en": tokens_en}
    flops = sum(6 * matmul_params(m) * through[name] for name, m in model.encoders.items())
    flops += sum(6 * matmul_params(m) * target[name] for name, m in model.decoders.items())
    attention = 12 * cfg.d_model * width  # per token per layer: QK^T and AV, forward and backward
    flops += attention * (cfg.enc_layers * sum(through[n] for n in model.encoders)
                          + cfg.dec_layers * sum(target[n] for n in model.decoders))
    return float(flops)


@contextmanager
def concat_head():
    """The decoder head as it was: full-width logits at every position, log-softmax over all of them."""
    def forward(self, prev, cond, keep=None):
        x = self.embed(prev)
        for layer in self.layers:
            x = layer(x, cond)
        logits = torch.cat([cond[:, None, :].expand(-1, x.shape[1], -1), x], dim=-1) @ self.out.t()
        logp = F.log_softmax(logits.float(), dim=-1)
        return logp if keep is None else logp[keep]

    def token_loss(logp, target, pad_id, smoothing):  # the old arithmetic on log-probabilities
        nll = -logp.gather(-1, target.unsqueeze(-1)).sum()
        return nll if smoothing == 0 else (1 - smoothing) * nll - smoothing * logp.sum() / logp.shape[-1]

    saved = bgt.LatentDecoder.forward, bgt.token_loss
    bgt.LatentDecoder.forward, bgt.token_loss = forward, token_loss
    try:
        yield
    finally:
        bgt.LatentDecoder.forward, bgt.token_loss = saved


def cpu_matmul_rate(n: int = 2048, repeats: int = 10) -> float:
    """FLOP/s of an fp32 n × n matmul on this CPU (the best of ``repeats``)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * n ** 3 / best


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", help="default: cpu on a CPU, small and paper on a GPU")
    parser.add_argument("--updates", type=int, default=5)
    parser.add_argument("--pair", default="en-fr")
    parser.add_argument("--update-freq", type=int, help="micro-batches per update (default: the preset's)")
    parser.add_argument("--heads", nargs="+", choices=("concat", "split"), default=["concat", "split"],
                        help="decoder heads to measure (split: the current one)")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name() if cuda else f"CPU ({torch.get_num_threads()} threads)"
    peak = next((v for k, v in PEAK_BF16.items() if k in device), None) if cuda else cpu_matmul_rate()
    if not cuda:
        print(f"fp32 matmul rate of this CPU: {peak / 1e9:.1f} GFLOP/s", flush=True)
    rows = []
    for preset in args.presets or (["small", "paper"] if cuda else ["cpu"]):
        cfg = TrainConfig.from_preset(preset, pair=args.pair, max_pairs=20000, max_valid_pairs=10,
                                      update_freq=args.update_freq, max_updates=10**9)
        for head in args.heads:
            trainer = Trainer(cfg, f"/tmp/train-throughput-{preset}", show_progress=False)
            with concat_head() if head == "concat" else nullcontext():
                trainer._update()  # warm-up (allocator, kernels)
                if cuda:
                    torch.cuda.synchronize()
                tokens = flops = 0.0
                start = time.perf_counter()
                for _ in range(args.updates):
                    record = trainer._update()
                    tokens += record["tokens"]
                    flops += update_flops(trainer, record["tokens_en"], record["tokens"] - record["tokens_en"],
                                          width=cfg.max_sentence_len // 2)
                if cuda:
                    torch.cuda.synchronize()
                seconds = time.perf_counter() - start
            n_params = sum(p.numel() for p in trainer.model.parameters())
            rows.append({"preset": preset, "head": head, "device": device, "params_M": n_params / 1e6,
                         "updates": args.updates, "tokens_per_update": tokens / args.updates,
                         "s_per_update": seconds / args.updates, "tokens_per_s": tokens / seconds,
                         "TFLOP_per_s": flops / seconds / 1e12, "MFU_%": 100 * flops / seconds / peak if peak else None})
            print(rows[-1], flush=True)
        if len(args.heads) == 2:
            before, after = rows[-2]["tokens_per_s"], rows[-1]["tokens_per_s"]
            print(f"{preset}: split head / concat head = {after / before:.2f}x tokens/s", flush=True)
    print()
    print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
