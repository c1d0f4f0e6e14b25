"""The CUDA path (``pytest -m gpu``; skipped without CUDA): bf16 updates learn, SDPA with padding masks on CUDA
matches the CPU, one-process NCCL DDP equals the plain update, and a resume on CUDA keeps the schedule.
``scripts/gpu_campaign check`` runs these first on a lent GPU."""
import json
import os
import socket

import numpy as np
import pytest
import torch

from workbench.data.batching import collate
from workbench.models.kinds import build_model
from workbench.training.recipes import TrainConfig
from workbench.training.trainer import Trainer

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (a GPU); runs in the GPU campaign")]

QUICK = {"max_pairs": 2000, "max_valid_pairs": 100, "eval_every": 0}


@pytest.fixture(scope="module")
def tokenizer():
    return TrainConfig.from_preset("tiny").tokenizer()


def metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_a_bf16_update_on_cuda_gives_a_finite_loss_that_falls(tmp_path, tokenizer):
    trainer = Trainer(TrainConfig.from_preset("tiny", max_updates=40, valid_every=40, save_every=40, **QUICK),
                      tmp_path / "run", show_progress=False)
    assert trainer.device.type == "cuda" and trainer.cfg.amp == "auto"  # bf16 autocast on CUDA
    trainer.run()
    steps = [r for r in metrics(tmp_path / "run") if "loss" in r]
    per_token = [r["recon_per_token"] + r["trans_per_token"] for r in steps]
    assert np.isfinite(per_token).all() and np.mean(per_token[-5:]) < 0.8 * np.mean(per_token[:3])


def test_sdpa_with_padding_masks_on_cuda_matches_the_cpu(tokenizer):
    torch.manual_seed(0)
    model = build_model(TrainConfig.from_preset("tiny").model_config(tokenizer)).eval()
    sentences = ["A man is playing a guitar.", "Tom is here.", "Un homme joue de la guitare dans la rue ce soir.",
                 "No."]
    cpu = model.encoder("semantic", tokenizer).encode(sentences)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        cuda = model.cuda().encoder("semantic", tokenizer).encode(sentences)
    cosine = (cpu * cuda).sum(1) / np.linalg.norm(cpu, axis=1) / np.linalg.norm(cuda, axis=1)
    assert cosine.min() > 0.999  # bf16 rounding only: padding is masked the same way on both devices
    np.testing.assert_allclose(cuda, cpu, rtol=0.05, atol=0.02)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_one_process_nccl_ddp_update_equals_the_plain_update(tokenizer):
    torch.manual_seed(0)
    plain = build_model(TrainConfig.from_preset("tiny").model_config(tokenizer)).cuda()
    wrapped = build_model(plain.cfg).cuda()
    wrapped.load_state_dict(plain.state_dict())
    batch = collate(tokenizer.encode(["A man is playing a guitar.", "Tom is here."]),
                    tokenizer.encode(["Un homme joue de la guitare.", "Tom est ici."]), np.arange(2))
    en, xx = batch.en.cuda(), batch.xx.cuda()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    try:
        ddp = torch.nn.parallel.DistributedDataParallel(wrapped)
        plain(en, xx, 5)["loss"].backward()
        ddp(en, xx, 5)["loss"].backward()
        for (name, a), b in zip(plain.named_parameters(), wrapped.parameters()):
            if a.grad is not None:
                torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-5, msg=name)
    finally:
        torch.distributed.destroy_process_group()


def test_resume_on_cuda_continues_the_same_schedule(tmp_path, tokenizer):
    cfg = dict(valid_every=10, save_every=5, kl_x0=10, **QUICK)
    Trainer(TrainConfig.from_preset("tiny", max_updates=10, **cfg), tmp_path / "whole", show_progress=False).run()
    Trainer(TrainConfig.from_preset("tiny", max_updates=5, **cfg), tmp_path / "parts", show_progress=False).run()
    Trainer(TrainConfig.from_preset("tiny", max_updates=10, **cfg), tmp_path / "parts", resume=True,
            show_progress=False).run()
    whole, parts = metrics(tmp_path / "whole"), metrics(tmp_path / "parts")
    assert [r["update"] for r in parts] == [r["update"] for r in whole]
    for a, b in zip(whole, parts):  # same batches, learning rate and KL weight; CUDA sums may differ
        assert (a["sentences"], a["tokens"], a["lr"], a["kl_weight"]) == (b["sentences"], b["tokens"], b["lr"],
                                                                          b["kl_weight"])
        assert b["loss"] == pytest.approx(a["loss"], rel=0.02)


def test_a_compiled_padded_update_on_cuda_matches_the_eager_one(tmp_path):
    """Campaign v3's update (torch.compile, batches padded to 8 tokens, fused AdamW) against the plain one, from
    the same weights and batches (dropout 0: the compiled dropout draws other masks)."""
    cfg = TrainConfig.from_preset("tiny", overrides={"dropout": 0.0}, max_updates=10 ** 9, **QUICK)
    losses = {}
    for name, changes in (("eager", {}), ("v3", {"compile": "inductor", "pad_multiple": 8})):
        trainer = Trainer(TrainConfig(**{**cfg.__dict__, **changes}), tmp_path / name, show_progress=False)
        losses[name] = [trainer._update()["loss"] for _ in range(3)]
        trainer._release()
    np.testing.assert_allclose(losses["v3"], losses["eager"], rtol=2e-2)  # bf16 rounding only
