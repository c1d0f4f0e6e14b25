"""The networks the workbench trains, by name: the registry the Trainer, ``load`` and the CLI read.

Each name maps to its network class and config class; a model folder's ``config.json`` names its ``setting``, so
:func:`build_model` can rebuild any saved network. Models fitted in one go rather than trained by updates are
registered in :data:`FITTED` with the hooks that load and ship their folders, so no other module names them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from ..checks import WorkbenchError, check_name
from . import bgt, paraphrastic
from .bgt import BGT, BGTConfig
from .nmt import MultilingualNMT, NMTConfig
from .paraphrastic import Paraphrastic, ParaphrasticConfig

# model name -> (network, its config): what the Trainer trains (`workbench train --model`)
ARCHITECTURES = {**{name: (BGT, BGTConfig) for name in bgt.SETTINGS},
                 **{name: (Paraphrastic, ParaphrasticConfig) for name in paraphrastic.SETTINGS},
                 "nmt": (MultilingualNMT, NMTConfig)}


@dataclasses.dataclass(frozen=True)
class Fitted:
    """A kind of model fitted in one go instead of by the Trainer's updates: no checkpoints, decoders or resume.
    Its fit is registered beside the Trainer (``workbench.training.FITS``)."""
    counts: str  # what its training record's "updates" count, as a card says it
    load: Callable[[dict, dict], Any]  # (config.json, its tensors as numpy arrays) -> the model
    shipped: Callable[[dict], dict]  # its tensors (torch) -> the tensors an export writes


def _wmf():
    from . import wmf  # imports scikit-learn: only when a WMF folder is opened or shipped
    return wmf


FITTED = {"wmf": Fitted("ALS iterations", lambda meta, tensors: _wmf().WMF.from_parts(meta, tensors),
                        lambda tensors: _wmf().shipped_tensors(tensors))}
MODELS = (*ARCHITECTURES, *FITTED)  # what `workbench train --model` accepts


MAX_PARAMETERS = 2 * 10 ** 9  # 8 GB of float32 weights; the paper's BGT has 0.48 billion


def parameter_count(network: type, model_config) -> int:
    """The parameters ``network(model_config)`` would have, counted on the meta device (no memory). Each
    ``*layers`` count enters linearly, so it is counted at 1 and 2 layers and extrapolated: a config asking for
    10,000 layers is counted in milliseconds, not built."""
    def count(cfg) -> int:
        try:
            with torch.device("meta"):
                return sum(p.numel() for p in network(cfg).parameters())
        except (RuntimeError, OverflowError):  # one tensor too large even to describe: far over any bound
            return 2 ** 63 - 1

    layers = {f.name: getattr(model_config, f.name) for f in dataclasses.fields(model_config)
              if f.name.endswith("layers")}
    base = dataclasses.replace(model_config, **{name: 1 for name in layers})
    one = count(base)
    return one + sum((n - 1) * (count(dataclasses.replace(base, **{name: 2})) - one) for name, n in layers.items())


def build_model(model_config: dict | BGTConfig | ParaphrasticConfig | NMTConfig) -> torch.nn.Module:
    """The network for a model config (or its ``to_dict()`` form, as stored in ``config.json``). Its size is
    counted on the meta device first (no memory), so an absurd config is refused before it is allocated."""
    model_config = checked_config(model_config)
    return ARCHITECTURES[model_config.setting][0](model_config)


def checked_config(model_config: dict | BGTConfig | ParaphrasticConfig | NMTConfig
                   ) -> BGTConfig | ParaphrasticConfig | NMTConfig:
    """``model_config`` as its config class, refused (with a sentence) when its values are invalid or the network
    would exceed :data:`MAX_PARAMETERS`; nothing is allocated. Every door a config comes through (a recipe, a
    model folder, a package) passes here."""
    if isinstance(model_config, dict):
        _, config_class = ARCHITECTURES[check_name("model", model_config.get("setting"), tuple(ARCHITECTURES))]
        try:
            model_config = config_class.from_dict(model_config)
        except (ValueError, TypeError) as err:
            raise WorkbenchError(f"bad model settings: {err}") from None
    network = ARCHITECTURES[model_config.setting][0]
    size = parameter_count(network, model_config)
    if size > MAX_PARAMETERS:
        told = ("far more than a tensor can hold" if size >= 2 ** 62 else
                f"{size / 1e9:.1f} billion parameters ({size * 4 / 2 ** 30:.0f} GiB of float32 weights)")
        raise WorkbenchError(f"these model settings would have {told}, more than the "
                             f"{MAX_PARAMETERS / 1e9:.0f} billion parameters the workbench builds")
    return model_config
