"""Benchmark: training throughput (tokens/s) and model FLOPs utilisation of BGT per preset.

    .venv/bin/python benchmarks/train_throughput.py [--presets small paper] [--updates 5] [--pair en-fr]

Runs real updates of the Trainer's step (forward, backward, clip, AdamW) on real en-fr micro-batches of each
preset's size, after one warm-up update, and prints tokens/s and achieved FLOP/s side by side.

FLOP formula (stated, not measured): every parameter that multiplies a token costs 2 FLOPs forward and 4
backward, so an update costs 6 × Σ_modules (matmul parameters of the module × tokens through it), where the
semantic encoder reads the English and the foreign side, each language encoder and decoder its own side, and
each translation decoder the target side; matmul parameters exclude the embedding tables (lookups) and include
the bias-free output projections V × (C + d), which dominate. Attention scores add 12 × layers × d × T per
token, with T taken as half the preset's maximum sentence length. MFU = achieved / peak, with peak bf16 dense
989 TFLOP/s for H100/H200 SXM; on CPU there is no meaningful peak, so MFU is left empty.
"""
from __future__ import annotations

import argparse
import time

import pandas as pd
import torch

from workbench.train import TrainConfig, Trainer

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["small", "paper"])
    parser.add_argument("--updates", type=int, default=5)
    parser.add_argument("--pair", default="en-fr")
    parser.add_argument("--update-freq", type=int, default=1, help="micro-batches per update (paper preset: 50)")
    args = parser.parse_args()
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    peak = next((v for k, v in PEAK_BF16.items() if k in device), None)
    rows = []
    for preset in args.presets:
        cfg = TrainConfig.from_preset(preset, pair=args.pair, max_pairs=20000, max_valid_pairs=10,
                                      update_freq=args.update_freq, max_updates=10**9)
        trainer = Trainer(cfg, f"/tmp/train-throughput-{preset}", show_progress=False)
        trainer._update()  # warm-up (allocator, kernels)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        tokens = flops = 0.0
        start = time.perf_counter()
        for _ in range(args.updates):
            record = trainer._update()
            tokens += record["tokens"]
            flops += update_flops(trainer, record["tokens_en"], record["tokens"] - record["tokens_en"],
                                  width=cfg.max_sentence_len // 2)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        n_params = sum(p.numel() for p in trainer.model.parameters())
        rows.append({"preset": preset, "device": device, "params_M": n_params / 1e6, "updates": args.updates,
                     "tokens_per_update": tokens / args.updates, "tokens_per_s": tokens / seconds,
                     "TFLOP_per_s": flops / seconds / 1e12,
                     "MFU_%": 100 * flops / seconds / peak if peak else None})
        print(rows[-1], flush=True)
    print()
    print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
