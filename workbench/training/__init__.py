"""Training: recipes (what a run does), the Trainer (updates, checkpoints, resume) and the one-go fit, behind one
:func:`train`."""
from __future__ import annotations

from pathlib import Path

from ..checks import WorkbenchError
from ..models.kinds import KINDS
from .fit import fit
from .recipes import TrainConfig
from .trainer import Trainer


def train(cfg: TrainConfig, out: str | Path, resume: bool = False, init_from: str | Path | None = None,
          show_progress: bool = True) -> dict:
    """Train ``cfg`` into the run folder ``out``: the Trainer's updates, or the one-go fit of a kind that has one
    (which keeps no checkpoints, so it cannot resume or start from a model). Returns the run's last metrics line
    (``{"finished": True, ...}`` when a resume found it done)."""
    if KINDS[cfg.model].fitted is None:
        return Trainer(cfg, out, resume=resume, init_from=init_from, show_progress=show_progress).run()
    if resume or init_from:
        raise WorkbenchError(f"{cfg.model} is fitted in one go (minutes on a CPU) and keeps no checkpoints, so "
                             "there is nothing to resume or start from: train it anew in an empty --out")
    return fit(cfg, out, show_progress=show_progress)
