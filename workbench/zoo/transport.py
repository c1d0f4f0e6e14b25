"""The precision a model package travels in (:func:`workbench.zoo.packaging.export_shards`): float16, or int8 with
one scale per tensor, which halves a package so that a GPU-scale BGT with its decoders fits one device return.

int8 maps every floating matrix (two or more dimensions) to ``round(w / s)`` with ``s = max|w| / 127``; vectors
(biases, layer norms) and integer tensors travel as they are, in float16. What arrives is *restored* to float16
(``q × s`` in float32, then float16) by the same arithmetic on both machines, and the package records the
fingerprint of the restored weights, computed where it was made: an import that restores different numbers (a
damaged part, another rounding) is refused. Measured on ``bgt-small-en-fr`` (docs/campaign.md): the int8 round
trip moves STS12–16 by less than 0.01 Pearson points in both views.
"""
from __future__ import annotations

import hashlib

import torch

from ..checks import WorkbenchError, check_name

PRECISIONS = ("fp16", "int8")


def _quantised(tensor: torch.Tensor) -> bool:
    return tensor.is_floating_point() and tensor.dim() >= 2


def pack_tensors(state: dict[str, torch.Tensor], precision: str) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """The tensors to write for ``precision`` and the int8 tensors' scales (``{}`` for fp16)."""
    check_name("package precision", precision, PRECISIONS)
    packed, scales = {}, {}
    for key, tensor in state.items():
        if precision == "int8" and _quantised(tensor):
            scale = tensor.float().abs().max().clamp_min(torch.finfo(torch.float32).tiny) / 127
            packed[key] = (tensor.float() / scale).round().clamp(-127, 127).to(torch.int8)
            scales[key] = float(scale)  # a float32 value: exact as a Python float, so exact in JSON
        else:
            packed[key] = tensor.half() if tensor.is_floating_point() else tensor
    return packed, scales


def restore_tensors(packed: dict[str, torch.Tensor], scales: dict[str, float]) -> dict[str, torch.Tensor]:
    """float16 weights from :func:`pack_tensors`' output (the same numbers on every machine)."""
    wrong = sorted(set(scales) - set(packed)) + sorted(k for k, t in packed.items()
                                                       if (k in scales) != (t.dtype == torch.int8))
    if wrong:
        raise WorkbenchError(f"the package's scales do not match its int8 tensors ({', '.join(wrong[:3])}); export "
                             "the package again")
    return {key: (tensor.float() * torch.tensor(scales[key], dtype=torch.float32)).half() if key in scales
            else tensor for key, tensor in packed.items()}


def fingerprint(state: dict[str, torch.Tensor]) -> str:
    """sha256 over every tensor's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for key in sorted(state):
        tensor = state[key].detach().cpu().contiguous()
        digest.update(f"{key}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()
