"""Token-budget batches with length bucketing, and collation into padded tensors, as BGT is trained.

As in fairseq: an example's size is ``max(len_en, len_xx)``; a batch holds as many examples of similar length
as fit in ``max_len_in_batch * n_examples <= max_tokens``, rounded down to a multiple of 8 when above 8.
Order: a seeded permutation, stable-sorted by foreign then English length; the batches themselves are shuffled
per epoch. Padding is on the right (mean pooling masks it, so this matches fairseq's left padding).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .tokenizer import PAD

log = logging.getLogger(__name__)


def token_batches(len_en: Sequence[int], len_xx: Sequence[int], max_tokens: int, seed: int = 1,
                  epoch: int = 0, multiple: int = 8) -> list[np.ndarray]:
    """Index arrays of batches whose padded size ``max(len) * n`` never exceeds ``max_tokens``.

    Examples longer than ``max_tokens`` by themselves cannot be batched: they are dropped and counted in the
    log. Deterministic in ``(lengths, max_tokens, seed, epoch)``.
    """
    sizes = np.maximum(np.asarray(len_en), np.asarray(len_xx))
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(sizes))
    order = order[np.argsort(np.asarray(len_xx)[order], kind="stable")]
    order = order[np.argsort(np.asarray(len_en)[order], kind="stable")]
    too_long = sizes[order] > max_tokens
    if too_long.any():
        log.warning("dropped %d of %d examples longer than max_tokens=%d", too_long.sum(), len(sizes), max_tokens)
        order = order[~too_long]
    batches, start = [], 0
    while start < len(order):
        longest, end = 0, start
        while end < len(order):
            longest_if_added = max(longest, sizes[order[end]])
            if longest_if_added * (end - start + 1) > max_tokens:
                break
            longest, end = longest_if_added, end + 1
        n = end - start
        if n > multiple:
            n -= n % multiple
        batches.append(order[start:start + n])
        start += n
    return [batches[i] for i in rng.permutation(len(batches))]


@dataclass
class Batch:
    """One micro-batch. ``en``/``xx``: (B, T) token ids, right-padded with PAD, EOS-terminated; ``index``: the
    examples' positions in the training split."""

    en: torch.Tensor
    xx: torch.Tensor
    index: np.ndarray


def pad(sequences: Sequence[Sequence[int]], multiple: int = 1) -> torch.Tensor:
    """Right-pad id lists into a (B, T) LongTensor, T the longest rounded up to a multiple of ``multiple``
    (fixed-shape buckets: a compiled network meets few shapes). Filled in one vectorised step."""
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    width = -(-int(lengths.max(initial=0)) // multiple) * multiple
    out = np.full((len(sequences), width), PAD, dtype=np.int64)
    out[np.arange(width) < lengths[:, None]] = np.fromiter((i for s in sequences for i in s), dtype=np.int64,
                                                           count=int(lengths.sum()))
    return torch.from_numpy(out)


def collate(ids_en: Sequence[Sequence[int]], ids_xx: Sequence[Sequence[int]], index: np.ndarray,
            multiple: int = 1) -> Batch:
    """Gather the examples ``index`` into a :class:`Batch` (each side padded to a multiple of ``multiple``)."""
    return Batch(pad([ids_en[i] for i in index], multiple), pad([ids_xx[i] for i in index], multiple),
                 np.asarray(index))
