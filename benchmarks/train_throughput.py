"""Benchmark: steady-state training throughput (tokens/s), model FLOPs utilisation and where an update's time goes,
for BGT per preset; the Trainer's update as it is beside the update as it was (a host wait per loss term), in
one run.

    .venv/bin/python benchmarks/train_throughput.py [--presets cpu] [--warmup-seconds 10] [--seconds 30]
                                                    [--syncs one per-term] [--profile]

Takes about 2 minutes on 2 CPU cores in its default mode (the ``cpu`` preset, both update variants, the
profile); on a GPU, ``--presets small paper --warmup-seconds 15 --seconds 10`` about a minute per preset
(``scripts/gpu_campaign check`` runs ``small``).

Each measurement runs real updates of the Trainer's step (forward, backward, clip, AdamW) on real micro-batches
of the preset's size: first ``--warmup-seconds`` of updates that are not timed (on a GPU the first tens of
updates pay for kernel loading and allocator growth: timing them reports the warm-up, not the run), then updates
for ``--seconds``, timed after a device synchronisation. ``syncs=one`` is the current update (the loss terms stay
on the device and come back in one transfer per update); ``syncs=per-term`` is the update as it was (a
``float()`` of every loss term of every micro-batch, each waiting for the device) — the same numbers, more waits.
``--profile`` adds ``torch.profiler``'s split of a few further updates into the phases the Trainer labels
(data and batching on the host, forward, backward, optimizer, the one sync), in milliseconds per update and as
a share of the update; what no label covers is Python between them.

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
from contextlib import contextmanager, nullcontext

import pandas as pd
import torch
from torch.profiler import ProfilerActivity, profile

from workbench.training import trainer
from workbench.training.recipes import TrainConfig
from workbench.training.trainer import Trainer

PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12}
PHASES = ("data", "forward", "backward", "optimizer", "sync")


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
def per_term_syncs():
    """The update as it was: every loss term of every micro-batch read as a Python float (a wait each)."""
    def loss_terms(out, names, device):
        return torch.tensor([float(torch.as_tensor(out[k]).detach()) for k in names], dtype=torch.float64).to(device)
    saved = trainer.loss_terms
    trainer.loss_terms = loss_terms
    try:
        yield
    finally:
        trainer.loss_terms = saved


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
    parser.add_argument("--pair", default="en-fr")
    parser.add_argument("--update-freq", type=int, help="micro-batches per update (default: the preset's)")
    parser.add_argument("--warmup-seconds", type=float, default=10.0, help="untimed updates first (10)")
    parser.add_argument("--seconds", type=float, default=30.0, help="timed window per measurement (30)")
    parser.add_argument("--syncs", nargs="+", choices=("per-term", "one"), default=["per-term", "one"],
                        help="update variants to measure (one: the current update)")
    parser.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True,
                        help="the per-phase split of the current update (default on)")
    parser.add_argument("--profile-updates", type=int, default=5)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name() if cuda else f"CPU ({torch.get_num_threads()} threads)"
    peak = next((v for k, v in PEAK_BF16.items() if k in device), None) if cuda else cpu_matmul_rate()
    if not cuda:
        print(f"fp32 matmul rate of this CPU: {peak / 1e9:.1f} GFLOP/s", flush=True)
    rows, splits = [], []
    for preset in args.presets or (["small", "paper"] if cuda else ["cpu"]):
        cfg = TrainConfig.from_preset(preset, pair=args.pair, max_pairs=20000, max_valid_pairs=10,
                                      update_freq=args.update_freq, max_updates=10**9)
        with tempfile.TemporaryDirectory(prefix="train-throughput-") as folder:
            trainer = Trainer(cfg, f"{folder}/run", show_progress=False)
            for i, syncs in enumerate(args.syncs):
                with per_term_syncs() if syncs == "per-term" else nullcontext():  # warm once per trainer
                    measured = steady_state(trainer, args.warmup_seconds if i == 0 else 0, args.seconds, cuda)
                rows.append({"preset": preset, "syncs": syncs, "device": device,
                             "params_M": sum(p.numel() for p in trainer.model.parameters()) / 1e6, **measured,
                             "TFLOP_per_s": measured["flops_per_s"] / 1e12,
                             "MFU_%": 100 * measured["flops_per_s"] / peak if peak else None})
                print({k: v for k, v in rows[-1].items() if k != "flops_per_s"}, flush=True)
            if len(args.syncs) == 2:
                before, after = rows[-2]["tokens_per_s"], rows[-1]["tokens_per_s"]  # the updates' batches differ
                print(f"{preset}: tokens/s, one sync / per-term syncs = {after / before:.3f}x", flush=True)
            if args.profile:
                splits.append({"preset": preset, **phase_split(trainer, args.profile_updates, cuda)})
            trainer._release()
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
