"""The model-kind registry: a new architecture is its module plus one registry line (and its name in KIND_NAMES for
the CLI); nothing else names a kind."""
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

import workbench
from workbench.models import kinds
from workbench.checks import WorkbenchError
from workbench.models.base import ModelConfig, SentenceModel
from workbench.training import train
from workbench.training.recipes import TrainConfig

PACKAGE = Path(workbench.__file__).parent
# each kind's own module and the registry may name it; nothing else
OWN = {"models/__init__.py", "models/kinds.py", "models/bgt.py", "models/bgt_config.py", "models/nmt.py", "models/wmf.py", "models/paraphrastic.py"}


def test_no_module_outside_a_kinds_own_names_a_kind():
    pattern = re.compile(r"""["'](nmt|wmf)["']|\bsem_en\b|\bsem_side\b""")
    named = [f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py")) if str(path.relative_to(PACKAGE)) not in OWN
             for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not named, "\n".join(named)


# --- a throwaway architecture: a bag of embeddings pulled towards its translation's --------------------------

@dataclass
class BagConfig(ModelConfig):
    vocab_size: int
    languages: tuple[str, str] = ("en", "fr")
    setting: str = "bag"
    dim: int = 16
    pad_id: int = 0
    eos_id: int = 3


class BagEncoder(nn.Module):
    """A view's network: ``cfg``, ``output_dim``, ``max_len`` and ``forward(ids) -> (embedding, _)``."""

    max_len = 64

    def __init__(self, cfg: BagConfig):
        super().__init__()
        self.cfg, self.output_dim, self.pad_id = cfg, cfg.dim, cfg.pad_id
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=cfg.pad_id)

    def forward(self, tokens):
        keep = (tokens != self.pad_id).unsqueeze(-1).float()
        return (self.embed(tokens) * keep).sum(1) / keep.sum(1).clamp(min=1), None


class Bag(SentenceModel):
    LOGGED = ("distance",)

    def __init__(self, cfg: BagConfig):
        super().__init__()
        self.cfg = cfg
        self.encoders = nn.ModuleDict({"semantic": BagEncoder(cfg)})

    def forward(self, en, xx, update=0, step=0):
        distance = ((self.encoders["semantic"](en)[0] - self.encoders["semantic"](xx)[0]) ** 2).sum()
        pad = self.cfg.pad_id
        return {"loss": distance, "distance": distance.detach(), "sentences": torch.tensor(en.shape[0]),
                "tokens_en": (en != pad).sum(), "tokens_xx": (xx != pad).sum()}


def test_a_new_architecture_trains_with_one_registry_line(monkeypatch, tmp_path):
    monkeypatch.setitem(kinds.KINDS, "bag", kinds.Kind(BagConfig, Bag, {"tiny": {"model": {"dim": 8}}}))
    cfg = TrainConfig.from_preset("tiny", model="bag", max_updates=6, save_every=3, valid_every=3, eval_every=3)
    assert cfg.overrides == {"dim": 8}  # its own preset table, nothing of BGT's sizes
    final = train(cfg, tmp_path / "run", show_progress=False)
    assert final["update"] == 6 and final["distance"] > 0 and "kl_weight" not in final
    opened = workbench.load(tmp_path / "run" / "best")  # its folder loads like any other
    assert opened.encoder().encode(["a bag of words ."]).shape == (1, 8)


def test_the_registry_refuses_a_kind_the_cli_does_not_list():
    """The CLI lists KIND_NAMES without importing torch, so the registry must hold exactly those names."""
    groups = [{name: kind} for name, kind in kinds.KINDS.items()]
    assert tuple(kinds.registry(*groups)) == kinds.KIND_NAMES
    with pytest.raises(ValueError, match="name a new kind in both"):
        kinds.registry(*groups, {"bag": kinds.Kind(BagConfig, Bag)})


def test_a_one_go_fit_refuses_settings_its_config_lacks(tmp_path):
    with pytest.raises(WorkbenchError, match="unknown model settings d_model; valid: .*iterations"):
        train(TrainConfig.from_preset("tiny", model="wmf", overrides={"d_model": 64}), tmp_path / "wmf")
    with pytest.raises(WorkbenchError, match="fitted in one go"):
        train(TrainConfig.from_preset("tiny", model="wmf"), tmp_path / "wmf", resume=True)


def test_a_shipped_wmf_recipe_keeps_the_settings_it_was_fitted_with():
    """wmf-en-fr was fitted before each kind kept its presets: its recipe recorded BGT's sizes, its fit read the
    cpu preset's 10 ALS iterations; read again, the recipe gives the fit it had."""
    cfg = TrainConfig.from_file(Path(__file__).parent.parent / "trained" / "wmf-en-fr" / "config.json")
    assert cfg.overrides == {"iterations": 10}
    assert cfg.model_config().iterations == workbench.load("wmf-en-fr").cfg.iterations == 10
