"""Benchmark: steady-state training throughput (tokens/s), model FLOPs utilisation and where an update's time goes,
for BGT per preset; the Trainer's update as it is beside the update as it was before campaign v3, in one run; and
the check that the v3 changes compute the same update.

    .venv/bin/python benchmarks/train_throughput.py [--presets cpu] [--warmup-seconds 10] [--seconds 30]
                                                    [--variants as-it-was current compiled] [--profile]
    .venv/bin/python benchmarks/train_throughput.py --check-equal      # eager vs compiled + padded, 10 updates

Takes about 2 minutes on 2 CPU cores in its default mode (the ``cpu`` preset, two variants, the profile); on a
GPU, ``--presets small --warmup-seconds 30 --seconds 20`` about a minute per preset (``scripts/gpu_campaign
bench``).

Each measurement runs real updates of the Trainer's step (forward, backward, clip, AdamW) on real micro-batches
of the preset's size: first ``--warmup-seconds`` of updates that are not timed (on a GPU the first tens of
updates pay for kernel loading, compilation and allocator growth: timing them reports the warm-up, not the
run), then updates for ``--seconds``, timed after a device synchronisation. The variants:

- ``as-it-was``: the update before campaign v3 — each micro-batch padded row by row when the update asks for
  it, no padding to fixed shapes, eager, AdamW's default implementation;
- ``current``: batches collated (vectorised) in a background thread while the previous update computes, padded
  to a multiple of 8 tokens, AdamW fused on a GPU;
- ``compiled``: ``current`` with ``compile = "inductor"`` (torch.compile of the encoders and decoder layers; on
  CPU its first updates take about a minute to compile).

``--check-equal`` trains the tiny preset with dropout 0 for 10 updates twice from the same weights and batches
— eager and unpadded, then compiled and padded to 8 — and prints the largest relative difference of the losses
(the changes alter only float rounding; tolerance 1e-4). ``--profile`` adds ``torch.profiler``'s split of a few
further updates into the phases the Trainer labels (data and batching on the host, forward, backward,
optimizer, the one sync), in milliseconds per update and as a share of the update; what no label covers is
Python between them.

FLOP formula (stated, not measured): every parameter that multiplies a token costs 2 FLOPs forward and 4
backward, so an update costs 6 × Σ_modules (matmul parameters of the module × tokens through it), where the
semantic encoder reads the English and the foreign side, each language encoder and decoder its own side, and
each translation decoder the target side; matmul parameters exclude the embedding tables (lookups) and include
the bias-free output projections. Attention scores add 12 × layers × d × T per token, with T taken as half the
preset's maximum sentence length. MFU = achieved / peak: on a GPU the dense bf16 peak (989 TFLOP/s for H100/H200
SXM); on CPU this machine's measured fp32 matmul rate (a 2048² matmul), so the fraction says how far the update
is from the fastest thing the CPU does.
"""
from __future__ import annotations

import argparse
import tempfile
import time

import pandas as pd
import torch
from torch.profiler import ProfilerActivity, profile

from workbench.data.tokenizer import PAD
from workbench.training.recipes import TrainConfig
from workbench.training.throughput import Prefetch
from workbench.training.trainer import Trainer

PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12}
PHASES = ("data", "forward", "backward", "optimizer", "sync")


def matmul_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for name, p in module.named_parameters() if "embed.embed" not in name)


def update_flops(trainer: Trainer, tokens_en: int, tokens_xx: int, width: int) -> float:
    model, cfg = trainer.model, trainer.model.cfg
    first, second = cfg.languages  # the pair's two sides, in the order the batch gives their tokens
    through = {"semantic": tokens_en + tokens_xx, first: tokens_en, second: tokens_xx}
    target = {first: tokens_en, second: tokens_xx, f"{first}->{second}": tokens_xx, f"{second}->{first}": tokens_en}
    flops = sum(6 * matmul_params(m) * through[name] for name, m in model.encoders.items())
    flops += sum(6 * matmul_params(m) * target[name] for name, m in model.decoders.items())
    attention = 12 * cfg.d_model * width  # per token per layer: QK^T and AV, forward and backward
    flops += attention * (cfg.enc_layers * sum(through[n] for n in model.encoders)
                          + cfg.dec_layers * sum(target[n] for n in model.decoders))
    return float(flops)


def _row_by_row(sequences):
    """``pad`` as it was before campaign v3: one tensor copy per sentence."""
    out = torch.full((len(sequences), max(len(s) for s in sequences)), PAD, dtype=torch.long)
    for i, sequence in enumerate(sequences):
        out[i, :len(sequence)] = torch.as_tensor(sequence, dtype=torch.long)
    return out


class _AsItWas(Prefetch):
    """The update's batches made when it asks for them, padded row by row (no background thread)."""

    def take(self, indices):
        en_ids, xx_ids = self.trainer.data.train
        return [(_row_by_row([en_ids[i] for i in index]), _row_by_row([xx_ids[i] for i in index]))
                for index in indices]


VARIANTS = {"as-it-was": {"pad_multiple": 1, "compile": "off"}, "current": {"pad_multiple": 8, "compile": "off"},
            "compiled": {"pad_multiple": 8, "compile": "inductor"}}


def variant_trainer(cfg: TrainConfig, variant: str, folder: str) -> Trainer:
    run = Trainer(TrainConfig(**{**cfg.__dict__, **VARIANTS[variant]}), f"{folder}/{variant}", show_progress=False)
    if variant == "as-it-was":
        run._prefetch = _AsItWas(run)
        run.optimizer = torch.optim.AdamW(run.model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                                          weight_decay=cfg.weight_decay)
    return run


def check_equal(updates: int = 10) -> float:
    """Largest relative difference of the losses of ``updates`` updates, eager and unpadded vs compiled and
    padded to 8 tokens (tiny preset, dropout 0, the same initial weights and batches)."""
    cfg = TrainConfig.from_preset("tiny", overrides={"dropout": 0.0}, max_updates=10 ** 9)
    losses = {}
    with tempfile.TemporaryDirectory(prefix="train-equal-") as folder:
        for variant in ("as-it-was", "compiled"):
            run = variant_trainer(cfg, variant, folder)
            losses[variant] = [run._update()["loss"] for _ in range(updates)]
            run._release()
    worst = max(abs(a - b) / abs(a) for a, b in zip(losses["as-it-was"], losses["compiled"]))
    for i, (a, b) in enumerate(zip(losses["as-it-was"], losses["compiled"]), 1):
        print(f"update {i}: eager {a:.6f}  compiled+padded {b:.6f}", flush=True)
    print(f"largest relative difference of the losses over {updates} updates: {worst:.2e} "
          f"({'within' if worst <= 1e-4 else 'BEYOND'} the 1e-4 tolerance)", flush=True)
    return worst


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


def _sync(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()


def steady_state(trainer: Trainer, warmup_seconds: float, seconds: float, cuda: bool) -> dict:
    """Updates for ``warmup_seconds`` (at least 2), untimed; then timed updates for ``seconds`` (at least 3)."""
    start = time.perf_counter()
    warm = 0
    while warm < 2 or time.perf_counter() - start < warmup_seconds:
        trainer._update()
        warm += 1
    _sync(cuda)
    cfg = trainer.cfg
    tokens = flops = 0.0
    updates = 0
    start = time.perf_counter()
    while updates < 3 or time.perf_counter() - start < seconds:
        record = trainer._update()
        updates += 1
        tokens += record["tokens"]
        flops += update_flops(trainer, record["tokens_en"], record["tokens"] - record["tokens_en"],
                              width=cfg.max_sentence_len // 2)
    _sync(cuda)
    elapsed = time.perf_counter() - start
    return {"warmup_updates": warm, "updates": updates, "tokens_per_update": tokens / updates,
            "s_per_update": elapsed / updates, "tokens_per_s": tokens / elapsed, "flops_per_s": flops / elapsed}


def phase_split(trainer: Trainer, updates: int, cuda: bool) -> dict:
    """Milliseconds per update of each labelled phase (host time; on a GPU the device time too) under
    ``torch.profiler``, and the update's wall time, over ``updates`` updates."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    _sync(cuda)
    start = time.perf_counter()
    with profile(activities=activities) as prof:
        for _ in range(updates):
            trainer._update()
        _sync(cuda)
    wall = (time.perf_counter() - start) / updates * 1e3
    events = {e.key: e for e in prof.key_averages() if e.key in PHASES}
    split = {"update_ms": wall}
    for phase in PHASES:
        event = events.get(phase)
        split[f"{phase}_ms"] = event.cpu_time_total / 1e3 / updates if event else 0.0
        if cuda:
            split[f"{phase}_device_ms"] = (getattr(event, "device_time_total", 0.0) / 1e3 / updates
                                           if event else 0.0)
    split["other_ms"] = wall - sum(split[f"{p}_ms"] for p in PHASES)
    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", help="default: cpu on a CPU, small and paper on a GPU")
    parser.add_argument("--config", help="a recipe file to measure instead of presets (e.g. recipes/campaign/"
                                         "bgt-small-en-fr.toml)")
    parser.add_argument("--pair", default="en-fr")
    parser.add_argument("--update-freq", type=int, help="micro-batches per update (default: the preset's)")
    parser.add_argument("--warmup-seconds", type=float, default=10.0, help="untimed updates first (10)")
    parser.add_argument("--seconds", type=float, default=30.0, help="timed window per measurement (30)")
    parser.add_argument("--variants", nargs="+", choices=tuple(VARIANTS), default=["as-it-was", "current"],
                        help="update variants to measure side by side (default: as-it-was current)")
    parser.add_argument("--check-equal", action="store_true", help="only check that the v3 update computes the same "
                        "losses (eager vs compiled and padded)")
    parser.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True,
                        help="the per-phase split of the last variant (default on)")
    parser.add_argument("--profile-updates", type=int, default=5)
    args = parser.parse_args()
    if args.check_equal:
        raise SystemExit(0 if check_equal() <= 1e-4 else 1)
    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name() if cuda else f"CPU ({torch.get_num_threads()} threads)"
    peak = next((v for k, v in PEAK_BF16.items() if k in device), None) if cuda else cpu_matmul_rate()
    if not cuda:
        print(f"fp32 matmul rate of this CPU: {peak / 1e9:.1f} GFLOP/s", flush=True)
    rows, splits = [], []
    presets = [args.config] if args.config else args.presets or (["small", "paper"] if cuda else ["cpu"])
    for preset in presets:
        quick = {"max_pairs": 20000, "max_valid_pairs": 10, "max_updates": 10 ** 9}
        if args.config:
            recipe = TrainConfig.from_file(args.config)
            cfg = TrainConfig(**{**recipe.__dict__, **quick, "update_freq": args.update_freq or recipe.update_freq})
        else:
            cfg = TrainConfig.from_preset(preset, pair=args.pair, update_freq=args.update_freq, **quick)
        with tempfile.TemporaryDirectory(prefix="train-throughput-") as folder:
            for variant in args.variants:
                run = variant_trainer(cfg, variant, folder)
                measured = steady_state(run, args.warmup_seconds, args.seconds, cuda)
                rows.append({"preset": preset, "variant": variant, "device": device,
                             "params_M": sum(p.numel() for p in run.model.parameters()) / 1e6, **measured,
                             "TFLOP_per_s": measured["flops_per_s"] / 1e12,
                             "MFU_%": 100 * measured["flops_per_s"] / peak if peak else None})
                print({k: v for k, v in rows[-1].items() if k != "flops_per_s"}, flush=True)
                if variant == args.variants[-1] and args.profile:
                    splits.append({"preset": preset, **phase_split(run, args.profile_updates, cuda)})
                run._release()
            base = rows[-len(args.variants)]["tokens_per_s"]  # each variant's own batches: tokens/s compares
            for row in rows[-len(args.variants) + 1:]:
                print(f"{preset}: tokens/s, {row['variant']} / {args.variants[0]} = "
                      f"{row['tokens_per_s'] / base:.3f}x", flush=True)
    print()
    print(pd.DataFrame(rows).drop(columns="flops_per_s").round(3).to_string(index=False))
    if splits:
        frame = pd.DataFrame(splits).set_index("preset")
        share = frame[[f"{p}_ms" for p in (*PHASES, "other")]].div(frame["update_ms"], axis=0) * 100
        print("\nwhere an update's time goes (ms per update; profiled, so slower than the timed rate):")
        print(frame.round(1).to_string())
        print("\nshare of the update (%):")
        print(share.rename(columns=lambda c: c[:-3]).round(1).to_string())


if __name__ == "__main__":
    main()
