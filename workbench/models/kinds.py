"""The kinds of model the workbench trains, by name: the one registry the Trainer, ``load`` and the CLI read.

Each name maps to a :class:`Kind`: its config class, its network (trained by the Trainer's updates) or its fit
(models fitted in one go), its presets and how its folders load and ship. Adding a kind is its module, one line
in :data:`KINDS` and its name in :data:`workbench.models.KIND_NAMES` (what the CLI lists without importing torch;
the registry refuses to load when the two disagree). Nothing else names a kind: what a kind can do beyond encoding
is declared with it (``abilities``, read with :func:`can`), and a name registered twice is refused.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..checks import WorkbenchError, check_name
from . import KIND_NAMES, bgt, bgt_config, nmt, paraphrastic, wmf


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of model. ``network`` is updated by the Trainer; a kind with ``fitted`` instead is fitted in one
    go by its model's ``fit(english, foreign)`` (no checkpoints, decoders or resume). ``presets``: per training
    preset, the run settings it changes (``"model"``: the config fields). ``multilingual``: it trains on every
    pair at once (pair ``"all"``) and its pieces carry a language tag."""
    config: type
    network: type | None = None
    presets: dict = dataclasses.field(default_factory=dict)
    multilingual: bool = False
    fitted: "Fitted | None" = None
    abilities: frozenset = frozenset()  # e.g. "style_transfer"


@dataclasses.dataclass(frozen=True)
class Fitted:
    """How a kind fitted in one go is built, loaded and shipped."""
    counts: str  # what its training record's "updates" count, as a card says it
    build: Callable[[Any], Any]  # its config -> an unfitted model with fit(english, foreign, show_progress)
    load: Callable[[dict, dict], Any]  # (config.json, its tensors as numpy arrays) -> the model
    shipped: Callable[[dict], dict]  # its tensors (torch) -> the tensors an export writes


def registry(*groups: dict[str, Kind]) -> dict[str, Kind]:
    """The kinds by name, from each module's group; a name given twice is refused (the later would silently win),
    and so is a set of names that is not :data:`KIND_NAMES` in its order (what the CLI lists)."""
    kinds: dict[str, Kind] = {}
    for group in groups:
        for name, kind in group.items():
            if name in kinds:
                raise ValueError(f"model kind {name!r} is registered twice; each kind needs a name of its own")
            kinds[name] = kind
    if tuple(kinds) != KIND_NAMES:
        raise ValueError(f"the registered kinds {tuple(kinds)} are not workbench.models.KIND_NAMES {KIND_NAMES}: "
                         "name a new kind in both")
    return kinds


ALIKE = "pairs_without_english"  # both sides alike: it trains on any two languages (fr-es as well as en-fr)
KINDS = registry(
    {name: Kind(bgt_config.BGTConfig, bgt.BGT, bgt_config.PRESETS,
                abilities=setting.abilities | ({ALIKE} if not setting.english_only else frozenset()))
     for name, setting in bgt_config.SETTINGS.items()},
    {name: Kind(paraphrastic.ParaphrasticConfig, paraphrastic.Paraphrastic, paraphrastic.PRESETS)
     for name in paraphrastic.SETTINGS},
    {"nmt": Kind(nmt.NMTConfig, nmt.MultilingualNMT, nmt.PRESETS, multilingual=True)},
    {"wmf": Kind(wmf.WMFConfig, presets=wmf.PRESETS,
                 fitted=Fitted("ALS iterations", wmf.WMF, wmf.WMF.from_parts, wmf.shipped_tensors))})


def can(setting: str, ability: str) -> bool:
    """Whether the kind ``setting`` names declares ``ability`` (False for no kind)."""
    kind = KINDS.get(setting)
    return kind is not None and ability in kind.abilities


def fitted(setting: str) -> Fitted | None:
    """The one-go fit hooks of the kind ``setting`` names (None for a kind the Trainer trains, or no kind)."""
    kind = KINDS.get(setting)
    return kind.fitted if kind is not None else None


MAX_PARAMETERS = 2 * 10 ** 9  # 8 GB of float32 weights; the paper's BGT has 0.48 billion
_COUNTS: dict[tuple[type, str], int] = {}  # parameter_count's


class _Uninitialised(TorchFunctionMode):
    """Tensors' in-place initialisation left out: a meta tensor holds no values, and filling one ran PyTorch's
    Python reference kernels, which import the compiler (0.9 s the first time in a process)."""

    FILLS = frozenset({torch.Tensor.normal_, torch.Tensor.uniform_, torch.Tensor.zero_, torch.Tensor.fill_,
                       *(getattr(torch.nn.init, name) for name in dir(torch.nn.init)  # normal_, xavier_uniform_, ...
                         if name.endswith("_") and not name.startswith("_"))})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in self.FILLS:
            return args[0] if args else kwargs["tensor"]  # nn.init's functions name it ``tensor``
        return func(*args, **(kwargs or {}))


def parameter_count(network: type, model_config) -> int:
    """The parameters ``network(model_config)`` would have, counted on the meta device (no memory). Each
    ``*layers`` count enters linearly, so it is counted at 1 and 2 layers and extrapolated: a config asking for
    10,000 layers is counted in milliseconds, not built. Counts are remembered per network and config: building
    even on the meta device took half of loading a shipped model, and a session loads the same ones often."""
    def count(cfg) -> int:
        key = (network, repr(cfg))  # configs are dataclasses: their repr names every field
        if key not in _COUNTS:
            try:
                with torch.device("meta"), _Uninitialised():
                    _COUNTS[key] = sum(p.numel() for p in network(cfg).parameters())
            except (RuntimeError, OverflowError):  # one tensor too large even to describe: far over any bound
                _COUNTS[key] = 2 ** 63 - 1
        return _COUNTS[key]

    layers = {f.name: getattr(model_config, f.name) for f in dataclasses.fields(model_config)
              if f.name.endswith("layers")}
    base = dataclasses.replace(model_config, **{name: 1 for name in layers})
    one = count(base)
    return one + sum((n - 1) * (count(dataclasses.replace(base, **{name: 2})) - one) for name, n in layers.items())


def build_model(model_config, decoders: bool = True) -> torch.nn.Module:
    """The network for a model config (or its ``to_dict()`` form, as stored in ``config.json``), without its
    decoders when ``decoders`` is False (an encoder-only model): not built at all by a network that takes
    ``decoders`` (BGT, the NMT), built and dropped by one that does not (any registered architecture). Its size is
    counted on the meta device first (no memory), so an absurd config is refused before it is allocated."""
    model_config = checked_config(model_config)
    network = KINDS[model_config.setting].network
    if not decoders and "decoders" in inspect.signature(network).parameters:
        return network(model_config, decoders=False)
    model = network(model_config)
    if not decoders:
        model.decoders = torch.nn.ModuleDict()
    return model


def checked_config(model_config):
    """``model_config`` (a trainable kind's) as its config class, refused (with a sentence) when its values are
    invalid or the network would exceed :data:`MAX_PARAMETERS`; nothing is allocated. Every door a config comes
    through (a recipe, a model folder, a package) passes here."""
    if isinstance(model_config, dict):
        trained = tuple(name for name, kind in KINDS.items() if kind.network is not None)
        kind = KINDS[check_name("model", model_config.get("setting"), trained)]
        try:
            model_config = kind.config.from_dict(model_config)
        except (ValueError, TypeError) as err:
            raise WorkbenchError(f"bad model settings: {err}") from None
    size = parameter_count(KINDS[model_config.setting].network, model_config)
    if size > MAX_PARAMETERS:
        told = ("far more than a tensor can hold" if size >= 2 ** 62 else
                f"{size / 1e9:.1f} billion parameters ({size * 4 / 2 ** 30:.0f} GiB of float32 weights)")
        raise WorkbenchError(f"these model settings would have {told}, more than the "
                             f"{MAX_PARAMETERS / 1e9:.0f} billion parameters the workbench builds")
    return model_config
