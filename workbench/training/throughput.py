"""What keeps a GPU busy during training (docs/campaign.md#every-gpu-second-does-work): the next update's batches
collated while this one computes, and the network's static blocks compiled. Neither changes what an update
computes beyond float rounding."""
from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch

from ..data.batching import collate

log = logging.getLogger(__name__)


def compile_parts(model: torch.nn.Module, backend: str = "inductor") -> None:
    """``torch.compile`` every submodule that declares itself ``compilable`` (whole blocks with static control
    flow: the sentence encoders, the decoder layers) with ``backend``, in place, so the weights keep their names.
    What is left eager (the decoders' selection of real target tokens, the losses) has data-dependent shapes. A
    part that fails to compile runs eagerly with a warning (dynamo's ``suppress_errors``): a lent GPU's minutes
    are not spent on a compiler problem."""
    import torch._dynamo
    torch._dynamo.config.suppress_errors = True
    parts = [m for m in model.modules() if getattr(m, "compilable", False)]
    for part in parts:
        part.compile(backend=backend)
    log.info("compiling %d parts of the network (torch.compile, %s)", len(parts), backend)


class Prefetch:
    """On a GPU, the micro-batches of the next update, collated in a background thread while this one computes
    and pinned for an asynchronous copy. The next update's batches follow from the trainer's state alone, so they
    are known in advance; :meth:`take` checks that the prefetched ones are the ones asked for, and collates them
    itself otherwise (a resume, a reset): the batches an update sees never depend on the prefetch. On a CPU the
    batches are collated when asked for: there the thread would only take cycles from the update (measured:
    0.85-0.9x beside two runs on 2 cores)."""

    def __init__(self, trainer):  # the Trainer that owns it (its data, config, device, state and rank)
        self.trainer = trainer
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch")
        self.pending: tuple[list[np.ndarray], Future] | None = None

    def _collated(self, indices: list[np.ndarray]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        (en_ids, xx_ids), multiple = self.trainer.data.train, self.trainer.cfg.pad_multiple
        pin = self.trainer.device.type == "cuda"
        batches = [collate(en_ids, xx_ids, index, multiple) for index in indices]
        return [(b.en.pin_memory(), b.xx.pin_memory()) if pin else (b.en, b.xx) for b in batches]

    def take(self, indices: list[np.ndarray]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The collated micro-batches ``indices``; starts collating the update after them."""
        pending, self.pending = self.pending, None
        same = pending is not None and len(pending[0]) == len(indices) and all(
            np.array_equal(a, b) for a, b in zip(pending[0], indices))
        batches = pending[1].result() if same else self._collated(indices)
        trainer = self.trainer
        if trainer.device.type == "cuda" and trainer.state["update"] + 1 < trainer.cfg.max_updates:
            ahead = trainer.data.next_update(dict(trainer.state), trainer.cfg.update_freq * trainer.world)
            mine = ahead[trainer.rank::trainer.world]
            self.pending = (mine, self.pool.submit(self._collated, mine))
        return batches
