"""The Trainer every neural model uses (BGT and its ablations, SP, BILSTM, the multilingual NMT): token-budget
batches, accumulation, AdamW + inverse-sqrt (or constant) learning rate, clipping, bf16 autocast on CUDA, DDP
under ``torchrun``, JSONL metrics, STS-B dev model selection, atomic checkpoints and exact resume.

A run directory holds ``metrics.jsonl`` (one line per update with the pairs seen and the summed update time;
validation loss and STS-B dev Pearson of every English-reading view on the lines where they were measured,
and an ``update 0`` line for the network at initialisation), ``checkpoints/update-N/`` (``config.json`` with
the training config and digests of the tokenizer and the training data, ``model.safetensors``, ``spm.model``,
``trainer_state.safetensors`` + ``.json``: optimizer moments, RNG state, data position — no pickle),
``latest`` naming the newest checkpoint and ``best/`` (weights only) at the best semantic STS-B dev so far
(BGT_SPEC §8.2 selects checkpoints by STS-B dev, not by validation loss, D8). A checkpoint is written into a
temporary folder and renamed, then ``latest`` is replaced atomically, so a run killed at any moment resumes
from a complete checkpoint; on CPU the resumed run repeats the uninterrupted run's losses bit for bit (same
batches, same RNG stream, same optimizer state). SIGINT/SIGTERM and ``max_seconds`` stop after the current
update with a checkpoint.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import shutil
import signal
import threading
import time
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from safetensors.torch import load_file, save_file
from filelock import FileLock, Timeout
from tqdm.auto import tqdm

from .data import sha256_of
from .data.batching import collate, token_batches
from .data.corpora import PAIRS, language_of, load_splits, pairs_of
from .data.sts import load_stsb
from .data.tokenizer import Tokenizer, pair_tokenizer
from .errors import WorkbenchError, check_name
from .evaluation.sts import embed_unique, score_pairs
from .models import bgt, paraphrastic
from .models.bgt import BGT, BGTConfig
from .models.nmt import MultilingualNMT, NMTConfig
from .models.paraphrastic import Paraphrastic, ParaphrasticConfig

log = logging.getLogger(__name__)

# model name -> (network, its config): what the Trainer trains (`workbench train --model`)
ARCHITECTURES = {**{name: (BGT, BGTConfig) for name in bgt.SETTINGS},
                 **{name: (Paraphrastic, ParaphrasticConfig) for name in paraphrastic.SETTINGS},
                 "nmt": (MultilingualNMT, NMTConfig)}
MODELS = (*ARCHITECTURES, "wmf")  # wmf is fitted by ALS (train_wmf), not by the Trainer
# WMF (seed 003): the paper's k = 100, w_m = 0.01, λ = 20, 20 ALS iterations; tiny is a quick check.
WMF_PRESETS = {"tiny": {"k": 20, "iterations": 5, "l2": 1.0}, "cpu": {"iterations": 10}, "small": {}, "paper": {}}
PRESETS = {
    # CI: trains in well under a minute on CPU and the loss visibly falls.
    "tiny": {"model": {"d_model": 64, "ffn_dim": 128, "n_heads": 2, "enc_layers": 1, "latent_dim": 32,
                       "dropout": 0.0, "max_len": 64},
             "vocab_size": 1000, "max_pairs": 3000, "max_sentence_len": 32, "max_tokens": 1024, "update_freq": 1,
             "lr": 1e-3, "warmup": 10, "max_updates": 40, "kl_ramp": 1.0, "valid_every": 20, "save_every": 20,
             "max_valid_pairs": 300},
    # What the shipped models were trained with when no GPU was lent: minutes per model on 2 CPU cores
    # (trained/README.md); a run of "small" on a GPU replaces them.
    "cpu": {"model": {"d_model": 128, "ffn_dim": 256, "n_heads": 4, "enc_layers": 2, "latent_dim": 128,
                      "dropout": 0.1, "max_len": 64},
            "vocab_size": 8000, "max_pairs": 60000, "max_sentence_len": 40, "max_tokens": 4000, "update_freq": 1,
            "lr": 1.5e-3, "warmup": 50, "max_updates": 150, "valid_every": 75, "save_every": 75,
            "max_valid_pairs": 500},
    # The GPU recipe for shipped models (BGT_SPEC §8.2): minutes on one GPU.
    "small": {"model": {"d_model": 512, "ffn_dim": 1024, "n_heads": 8, "enc_layers": 3, "latent_dim": 512,
                        "dropout": 0.1, "max_len": 128},
              "max_sentence_len": 64, "max_tokens": 8000, "update_freq": 2, "lr": 8e-4, "warmup": 300,
              "max_updates": 3000, "valid_every": 500, "save_every": 500},
    # The paper's sizes (§2.1, §5): d=1024, 5-layer encoders, ~25k-token updates, 20k pieces.
    "paper": {"model": {"d_model": 1024, "ffn_dim": 1024, "n_heads": 8, "enc_layers": 5, "latent_dim": 1024,
                        "dropout": 0.3, "max_len": 1024},
              "vocab_size": 20000, "max_sentence_len": 100, "max_tokens": 500, "update_freq": 50, "lr": 5e-4,
              "warmup": 4000, "max_updates": 20000, "kl_ramp": 65536 / 20000, "valid_every": 1000,
              "save_every": 1000},  # kl_ramp: x0 = 65536 at 20k updates, the same fraction for shorter runs
}


# SP / BILSTM (BGT_SPEC §4): Adam at a fixed lr (the paper's 1e-3; tiny uses 1e-2 to learn in seconds), no
# warmup; the micro-batch is the mega-batch the hardest negatives come from, so it is large. These replace the
# BGT values of the same preset.
PARAPHRASTIC_PRESETS = {
    "tiny": {"model": {"dim": 256, "hidden": 64, "max_len": 64}, "max_tokens": 4096, "lr": 1e-2,
             "schedule": "constant", "warmup": 0},
    "cpu": {"model": {"dim": 512, "hidden": 256, "max_len": 128}, "max_pairs": None, "max_tokens": 16000,
            "lr": 1e-3, "schedule": "constant", "warmup": 0, "max_updates": 300},
    "small": {"model": {"dim": 512, "hidden": 256, "max_len": 128}, "max_tokens": 16000, "update_freq": 1,
              "lr": 1e-3, "schedule": "constant", "warmup": 0, "max_updates": 2000},
    "paper": {"model": {"dim": 1024, "hidden": 512, "max_len": 1024, "dropout": 0.3}, "vocab_size": 20000,
              "max_tokens": 40000, "update_freq": 1, "lr": 1e-3, "schedule": "constant", "warmup": 0,
              "max_updates": 20000},
}


# The multilingual NMT (Schwenk & Douze 2017): trained on every pair at once by default (pair "all"); Adam at
# a fixed lr (the paper: initial lr 0.01, lowered when dev perplexity stalls), gradients clipped at 2 (the
# paper's value). "paper" has its embedding/BiLSTM sizes and dropout, and LASER's 2048-unit decoder (the 2017
# paper does not give its decoder's size). These replace the BGT values of the same preset.
NMT_PRESETS = {
    "tiny": {"model": {"dim": 64, "hidden": 64, "dec_hidden": 128, "dropout": 0.0, "max_len": 64}, "lr": 3e-3,
             "schedule": "constant", "warmup": 0, "clip_norm": 2.0},
    "cpu": {"model": {"dim": 256, "hidden": 256, "dec_hidden": 512, "dropout": 0.1, "max_len": 128},
            "vocab_size": 16000, "max_pairs": None, "max_tokens": 6000, "lr": 2e-3, "schedule": "constant",
            "warmup": 0, "clip_norm": 2.0, "max_updates": 1000, "valid_every": 250, "save_every": 50},
    "small": {"model": {"dim": 384, "hidden": 512, "dec_hidden": 1024, "dropout": 0.1, "max_len": 128},
              "vocab_size": 20000, "max_tokens": 16000, "update_freq": 1, "lr": 1e-3, "schedule": "constant",
              "warmup": 0, "clip_norm": 2.0, "max_updates": 5000},
    "paper": {"model": {"dim": 384, "hidden": 512, "dec_hidden": 2048, "dropout": 0.2, "max_len": 1024},
              "vocab_size": 20000, "max_sentence_len": 100, "max_tokens": 10000, "update_freq": 1, "lr": 1e-3,
              "schedule": "constant", "warmup": 0, "clip_norm": 2.0, "max_updates": 50000},
}


@dataclass
class TrainConfig:
    model: str = "bgt"
    pair: str = "en-fr"  # or "all" (every pair; the multilingual NMT only)
    preset: str = "tiny"
    vocab_size: int = 8000
    overrides: dict = field(default_factory=dict)  # model config fields (d_model, enc_layers, decoder_latent, ...)
    max_pairs: int | None = None  # a seeded sample of the training pairs (None: all)
    max_valid_pairs: int | None = 2000
    max_sentence_len: int = 64  # sentencepiece ids per side, EOS included (longer ones are truncated)
    max_tokens: int = 8000  # per micro-batch: max(len_en, len_xx) × pairs
    update_freq: int = 1  # micro-batches accumulated per update (per process)
    lr: float = 5e-4
    schedule: str = "inverse_sqrt"  # or "constant"
    warmup: int = 4000
    warmup_init_lr: float = 1e-7
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-8
    weight_decay: float = 1e-4
    clip_norm: float = 25.0
    max_updates: int = 1000
    max_seconds: float | None = None  # stop (with a checkpoint) once this session of the run took this long
    kl_x0: int | None = None  # KL weight min(1, update / kl_x0); None: kl_ramp × max_updates at the run's start
    kl_ramp: float = 3.0  # β ends at 1 / kl_ramp (3: near 0.3, as in the paper's run; BGT_SPEC §8.1)
    seed: int = 1
    amp: str = "auto"  # "auto": bf16 autocast on CUDA, none on CPU; "bf16"; "off"
    log_every: int = 1
    valid_every: int = 1000
    eval_every: int | None = None  # STS-B dev of the English-reading views (None: valid_every; 0: never)
    save_every: int = 1000
    keep_checkpoints: int = 2

    def __post_init__(self):
        check_name("model", self.model, MODELS)
        check_name("language pair", self.pair, (*PAIRS, "all"))
        if self.pair == "all" and self.model != "nmt":
            raise WorkbenchError(f"only the multilingual NMT trains on all pairs at once; give {self.model} one "
                                 f"pair: {', '.join(PAIRS)}")
        check_name("preset", self.preset, PRESETS)
        check_name("amp mode", self.amp, ("auto", "bf16", "off"))
        check_name("lr schedule", self.schedule, ("inverse_sqrt", "constant"))
        self.betas = tuple(self.betas)
        wrong = [f"{name} must be {rule} (got {getattr(self, name)!r})" for name, rule, ok in _CHECKS
                 if getattr(self, name) is not None and not ok(getattr(self, name))]
        if wrong:
            raise WorkbenchError("invalid training config: " + "; ".join(wrong))
        if self.eval_every is None:
            self.eval_every = self.valid_every

    @property
    def kl_x0_at_start(self) -> int:
        """The KL ramp's x0 a new run fixes (kept by every resume of it, whatever ``max_updates`` becomes)."""
        return self.kl_x0 or max(1, round(self.kl_ramp * self.max_updates))

    @classmethod
    def from_preset(cls, preset: str, **changes) -> "TrainConfig":
        """The preset's values for the model, then ``changes`` (``None`` values are ignored). The NMT's pair
        defaults to ``"all"``."""
        check_name("preset", preset, PRESETS)
        model = changes.get("model")
        table = PARAPHRASTIC_PRESETS if model in paraphrastic.SETTINGS else NMT_PRESETS if model == "nmt" else {}
        if model == "nmt" and changes.get("pair") is None:
            changes["pair"] = "all"
        values = {**PRESETS[preset], **table.get(preset, {})}
        overrides = {**values.pop("model"), **(changes.pop("overrides", None) or {})}
        values.update({k: v for k, v in changes.items() if v is not None})
        return cls(preset=preset, overrides=overrides, **values)

    @classmethod
    def from_file(cls, path: str | Path) -> "TrainConfig":
        """A TOML or JSON file of TrainConfig fields; ``preset`` (default tiny) supplies what it leaves out."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise WorkbenchError(f"{path}: unknown training config keys {unknown}; valid: {', '.join(sorted(known))}")
        return cls.from_preset(data.pop("preset", "tiny"), **data)

    @property
    def languages(self) -> tuple[str, ...]:
        """English, then the foreign language(s) of the run's pair(s)."""
        return ("en", *(language_of(p) for p in pairs_of(self.pair)))

    def model_config(self, tokenizer: Tokenizer) -> BGTConfig | ParaphrasticConfig | NMTConfig:
        config_class = ARCHITECTURES[self.model][1]
        extra = {"kl_x0": self.kl_x0_at_start} if config_class is BGTConfig else {}
        if config_class is NMTConfig:
            extra = {"tag_ids": tuple(tokenizer.tag_id(lang) for lang in self.languages)}
        known = {f.name for f in fields(config_class)}
        unknown = sorted(set(self.overrides) - known)
        if unknown:
            raise WorkbenchError(f"model settings {unknown} do not apply to {self.model}; valid: "
                                 f"{', '.join(sorted(known))}")
        try:
            return config_class(vocab_size=tokenizer.vocab_size, languages=self.languages,
                                setting=self.model, pad_id=tokenizer.pad_id, eos_id=tokenizer.eos_id, **extra,
                                **self.overrides)
        except ValueError as err:
            raise WorkbenchError(f"bad model settings for {self.model}: {err}") from None


MAX_PARAMETERS = 2 * 10 ** 9  # 8 GB of float32 weights; the paper's BGT has 0.48 billion


def parameter_count(network: type, model_config) -> int:
    """The parameters ``network(model_config)`` would have, counted on the meta device (no memory). Each
    ``*layers`` count enters linearly, so it is counted at 1 and 2 layers and extrapolated: a config asking for
    10,000 layers is counted in milliseconds, not built."""
    def count(cfg) -> int:
        with torch.device("meta"):
            return sum(p.numel() for p in network(cfg).parameters())

    layers = {f.name: getattr(model_config, f.name) for f in fields(model_config) if f.name.endswith("layers")}
    base = dataclasses.replace(model_config, **{name: 1 for name in layers})
    one = count(base)
    return one + sum((n - 1) * (count(dataclasses.replace(base, **{name: 2})) - one) for name, n in layers.items())


def build_model(model_config: dict | BGTConfig | ParaphrasticConfig | NMTConfig) -> torch.nn.Module:
    """The network for a model config (or its ``to_dict()`` form, as stored in ``config.json``). Its size is
    counted on the meta device first (no memory), so an absurd config is refused before it is allocated."""
    if isinstance(model_config, dict):
        _, config_class = ARCHITECTURES[check_name("model", model_config.get("setting"), tuple(ARCHITECTURES))]
        try:
            model_config = config_class.from_dict(model_config)
        except (ValueError, TypeError) as err:
            raise WorkbenchError(f"bad model settings: {err}") from None
    network = ARCHITECTURES[model_config.setting][0]
    size = parameter_count(network, model_config)
    if size > MAX_PARAMETERS:
        raise WorkbenchError(f"these model settings would have {size / 1e9:.1f} billion parameters "
                             f"({size * 4 / 2 ** 30:.0f} GiB of float32 weights), more than the "
                             f"{MAX_PARAMETERS / 1e9:.0f} billion the workbench builds")
    return network(model_config)


def _count(low: int):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _number(low: float, high: float = math.inf, open_low: bool = False):
    return lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                      and (v > low if open_low else v >= low) and v <= high)


# What each numeric TrainConfig field accepts (checked when a config is built: presets, files, CLI flags).
_CHECKS = [(name, "an integer ≥ 1", _count(1)) for name in (
               "vocab_size", "max_tokens", "update_freq", "max_updates", "log_every", "valid_every", "save_every",
               "keep_checkpoints", "max_valid_pairs", "kl_x0")] + [
           ("max_sentence_len", "an integer ≥ 2 (EOS included)", _count(2)),
           ("max_pairs", "an integer ≥ 0 (0: all pairs)", _count(0)),
           ("eval_every", "an integer ≥ 0 (0: never)", _count(0)), ("warmup", "an integer ≥ 0", _count(0)),
           ("seed", "an integer ≥ 0", _count(0)), ("lr", "a number > 0", _number(0, open_low=True)),
           ("warmup_init_lr", "a number ≥ 0", _number(0)), ("eps", "a number > 0", _number(0, open_low=True)),
           ("weight_decay", "a number ≥ 0", _number(0)), ("clip_norm", "a number > 0", _number(0, open_low=True)),
           ("kl_ramp", "a number > 0", _number(0, open_low=True)),
           ("max_seconds", "a number > 0", _number(0, open_low=True)),
           ("betas", "two numbers in [0, 1)", lambda v: len(v) == 2 and all(_number(0, 0.999999)(b) for b in v))]

# TrainConfig fields that decide which batches come next and how the weights move: a resume must keep them
# (the run length, logging and checkpoint cadence may change; the KL ramp is fixed when the run starts).
RESUME_FIELDS = ("model", "pair", "vocab_size", "overrides", "max_pairs", "max_valid_pairs", "max_sentence_len",
                 "max_tokens", "update_freq", "lr", "schedule", "warmup", "warmup_init_lr", "betas", "eps",
                 "weight_decay", "clip_norm", "seed", "amp")

LOCK = ".lock"  # the run folder's lock file (held by the training process; see Trainer)

SUMMED = ("loss", "recon", "trans", "kl", "kl_semantic", "kl_language", "margin_violations", "sentences", "tokens_en",
          "tokens_xx")


def _without_regularisers(settings: dict) -> dict:
    """Model settings less those a run initialised from a trained model may change (see ``bgt.REGULARISERS``),
    in the config's JSON form (so defaults and stored values compare equal)."""
    full = json.loads(json.dumps(settings))
    return {k: v for k, v in full.items() if k not in bgt.REGULARISERS}


def learning_rate(update: int, cfg: TrainConfig) -> float:
    """fairseq's inverse_sqrt: linear warmup from ``warmup_init_lr`` to ``lr``, then lr·sqrt(warmup/update)
    (``schedule="constant"``: always ``lr``)."""
    if cfg.schedule == "constant":
        return cfg.lr
    if update < cfg.warmup:
        return cfg.warmup_init_lr + (cfg.lr - cfg.warmup_init_lr) * update / cfg.warmup
    return cfg.lr * math.sqrt(cfg.warmup / max(update, 1))


# --- checkpoints ---------------------------------------------------------------------------------------------

def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _write_weights(tmp: Path, model: torch.nn.Module, tokenizer: Tokenizer, meta: dict) -> None:
    """``model.safetensors``, ``spm.model`` and ``config.json`` (``meta`` + the model config, tokenizer digest and
    the sha256 of every other file in ``tmp``, checked by :func:`verify_files` on load and resume)."""
    tmp.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors"))
    shutil.copyfile(tokenizer.model_file, tmp / "spm.model")
    (tmp / "config.json").write_text(json.dumps({**meta, "model": model.cfg.to_dict(),
                                                 "tokenizer_sha256": tokenizer.digest,
                                                 "files_sha256": file_digests(tmp)}, indent=2))


def read_config(folder: Path) -> dict:
    """A model or checkpoint folder's ``config.json``, refused by name unless it is a JSON object whose ``model``
    is an object naming its ``setting``."""
    path = folder / "config.json"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkbenchError(f"{path} is missing: {folder} is not a model or checkpoint folder") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise WorkbenchError(f"{path}: cannot parse the file ({type(err).__name__}: {err})") from None
    if not (isinstance(meta, dict) and isinstance(meta.get("model"), dict)
            and isinstance(meta["model"].get("setting"), str)):
        raise WorkbenchError(f"{path}: not a model config (a JSON object whose 'model' object names its 'setting')")
    return meta


# every file of a model, checkpoint or run folder that config.json's files_sha256 covers (those present)
DIGESTED = ("model.safetensors", "spm.model", "trainer_state.safetensors", "trainer_state.json", "curve.csv",
            "card.json", "card.md")


def file_digests(folder: Path, names: tuple[str, ...] = DIGESTED) -> dict[str, str]:
    """sha256 of the files ``names`` of ``folder`` that exist."""
    return {name: sha256_of(folder / name) for name in names if (folder / name).is_file()}


def _check_digests(folder: Path, digests: dict[str, str], recorded_in: str) -> None:
    for name, digest in digests.items():
        if not (folder / name).is_file() or sha256_of(folder / name) != digest:
            raise WorkbenchError(f"{folder / name} is missing or does not match the sha256 recorded in "
                                 f"{folder / recorded_in} (damaged or replaced); restore it, or use another "
                                 "checkpoint or model")


def verify_files(folder: Path, meta: dict, trust_unverified: bool = False) -> None:
    """Refuse a model or checkpoint folder whose files differ from the sha256 its config recorded, that holds a
    file the config does not cover, or whose config records no digests at all (unless ``trust_unverified``)."""
    digests = meta.get("files_sha256")
    if digests is None:
        if not trust_unverified:
            raise WorkbenchError(f"{folder / 'config.json'} records no sha256 of the folder's files, so nothing "
                                 "can be verified; re-export it, or, if you know where it came from, load it with "
                                 "workbench.load(path, trust_unverified=True)")
        log.warning("%s: no file digests; loaded unverified as asked", folder)
        spm = folder / "spm.model"
        if spm.is_file() and "tokenizer_sha256" in meta and sha256_of(spm) != meta["tokenizer_sha256"]:
            raise WorkbenchError(f"{spm} is not the sentencepiece model this model was trained with (its sha256 "
                                 "differs from tokenizer_sha256 in config.json)")
        return
    _check_digests(folder, digests, "config.json")
    covered = set(digests)
    state = folder / "trainer_state.json"
    if "trainer_state.json" not in digests and state.is_file():  # a checkpoint written before config.json
        legacy = json.loads(state.read_text()).get("files_sha256")  # covered the trainer state: its own list
        if legacy is not None:
            _check_digests(folder, legacy, "trainer_state.json")
            covered |= {"trainer_state.json", *legacy}
    extra = sorted(name for name in DIGESTED if (folder / name).is_file() and name not in covered)
    if extra:
        raise WorkbenchError(f"{folder}: {', '.join(extra)} not covered by the sha256 list in config.json (added or "
                             "replaced after the folder was written); remove it or re-export the folder")


def swap_folder(tmp: Path, folder: Path) -> None:
    """Put the complete folder ``tmp`` in the place of ``folder`` (the old one is removed only afterwards)."""
    old = folder.with_name(f".{folder.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        os.replace(folder, old)
    os.replace(tmp, folder)
    shutil.rmtree(old, ignore_errors=True)


def save_checkpoint(run_dir: Path, model: torch.nn.Module, tokenizer: Tokenizer, cfg: TrainConfig,
                    optimizer: torch.optim.Optimizer, state: dict, data_digest: str) -> Path:
    """Write ``checkpoints/update-N`` atomically and point ``latest`` at it; older ones beyond
    ``keep_checkpoints`` are removed."""
    folder = run_dir / "checkpoints" / f"update-{state['update']}"
    tmp = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tensors, opt_json = {}, {"param_groups": optimizer.state_dict()["param_groups"], "state_keys": {}}
    for index, values in optimizer.state_dict()["state"].items():
        for key, value in values.items():
            tensors[f"optimizer.{index}.{key}"] = value.detach().cpu().contiguous()
        opt_json["state_keys"][str(index)] = sorted(values)
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        for i, rng in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = rng
    save_file(tensors, str(tmp / "trainer_state.safetensors"))
    (tmp / "trainer_state.json").write_text(json.dumps({**state, "optimizer": opt_json}, indent=2))
    _write_weights(tmp, model, tokenizer, {"train": asdict(cfg), "data_sha256": data_digest})  # digests all four
    swap_folder(tmp, folder)
    _atomic_text(run_dir / "latest", folder.name)
    kept = sorted((run_dir / "checkpoints").glob("update-*"), key=lambda p: int(p.name.split("-")[1]))
    for old in kept[: -cfg.keep_checkpoints]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def latest_checkpoint(path: str | Path) -> Path:
    """The checkpoint folder ``path`` names: itself, or a run directory's ``latest``."""
    path = Path(path)
    if (path / "model.safetensors").is_file():
        return path
    if (path / "latest").is_file():
        pointer = (path / "latest").read_text().strip()
        if not re.fullmatch(r"update-\d+", pointer) or not (path / "checkpoints" / pointer).is_dir():
            raise WorkbenchError(f"{path / 'latest'} names {pointer[:80]!r}, not a checkpoint of this run "
                                 f"(checkpoints/update-N); the run folder is damaged")
        return path / "checkpoints" / pointer
    raise WorkbenchError(f"{path} is neither a checkpoint (no model.safetensors) nor a run directory (no latest)")


def checkpoint_update(folder: Path) -> int:
    """The update a checkpoint folder (``checkpoints/update-N`` or ``best/``) holds."""
    state = folder / "trainer_state.json"
    meta = json.loads((state if state.is_file() else folder / "config.json").read_text())
    return int(meta["update"])


CURVE_COLUMNS = ["run", "update", "pairs_seen", "train_seconds", "metric", "view", "value"]


def learning_curve(path: str | Path) -> pd.DataFrame:
    """A run's learning curves, tidy: ``run, update, pairs_seen, train_seconds, metric, view, value`` with
    metric ``stsb_dev`` (Pearson × 100, per English-reading view; update 0 is the network at initialisation)
    and ``valid_loss`` (per pair, view ``all``). ``path``: a run directory (its ``metrics.jsonl``), or a shipped
    model's folder or name (its ``curve.csv``, written by ``models export``)."""
    path = model_path(path)
    if (path / "curve.csv").is_file():
        return pd.read_csv(path / "curve.csv")
    if not (path / "metrics.jsonl").is_file():
        raise WorkbenchError(f"{path} has no metrics.jsonl (a training run) or curve.csv (a shipped model)")
    lines = [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines() if line.strip()]
    seconds = pairs = 0.0
    rows = []
    for line in lines:  # as logged, else summed from the update lines (runs logged before these fields existed)
        if "tokens_per_s" in line:
            seconds, pairs = seconds + line["tokens"] / line["tokens_per_s"], pairs + line.get("sentences", 0)
        seconds, pairs = line.get("train_seconds", seconds), line.get("pairs_seen", pairs)
        at = {"run": path.name, "update": line["update"], "pairs_seen": int(pairs), "train_seconds": round(seconds, 2)}
        rows += [{**at, "metric": "stsb_dev", "view": view, "value": value}
                 for view, value in line.get("stsb_dev", {}).items()]
        if "valid_loss" in line:
            rows.append({**at, "metric": "valid_loss", "view": "all", "value": line["valid_loss"]})
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def train_wmf(cfg: TrainConfig, run_dir: str | Path, show_progress: bool = True) -> dict:
    """Fit b-WMF (or ``overrides={"variant": "x-wmf"}``) on the pair's training split and save it in
    ``run_dir`` (config.json with the vocabularies, model.safetensors with the factors and idf)."""
    from .models.wmf import WMF, WMFConfig
    run_dir = Path(run_dir)
    if (run_dir / "model.safetensors").exists():
        raise WorkbenchError(f"{run_dir} already holds a model; choose another --out")
    pairs = load_splits(cfg.pair)["train"]
    if cfg.max_pairs and cfg.max_pairs < len(pairs):
        pick = np.random.default_rng(cfg.seed).choice(len(pairs), cfg.max_pairs, replace=False)
        pairs = [pairs[i] for i in sorted(pick)]
    settings = {**WMF_PRESETS[cfg.preset], **{k: v for k, v in cfg.overrides.items() if k in ("variant", "k",
                                                                                         "missing_weight", "l2",
                                                                                         "iterations", "min_df")}}
    start = time.perf_counter()
    model = WMF(WMFConfig(languages=("en", language_of(cfg.pair)), seed=cfg.seed, **settings))
    model.fit([en for en, _ in pairs], [xx for _, xx in pairs], show_progress=show_progress)
    model.save(run_dir)
    result = {"model": "wmf", "preset": cfg.preset, "pairs": len(pairs), "iterations": len(model.history),
              "loss": model.history[-1], "seconds": time.perf_counter() - start}
    _atomic_text(run_dir / "metrics.jsonl", json.dumps(result) + "\n")
    return result


def model_path(path_or_name: str | Path) -> Path:
    """``path_or_name`` as a path, or the folder of the model of that name in ``trained/``."""
    from .paths import trained_dir
    path, named = Path(path_or_name), trained_dir() / str(path_or_name)
    return named if not path.exists() and named.exists() else path


def load(path_or_name: str | Path, device: str | torch.device = "cpu", trust_unverified: bool = False
         ) -> torch.nn.Module:
    """A trained model (run directory, checkpoint folder, or the name of a model in ``trained/``) with its
    tokenizer attached, in eval mode: ``load(p).encoder("semantic").encode([...])``. Its files are checked
    against the sha256 list in its ``config.json``; a folder without one is refused unless
    ``trust_unverified``."""
    from .paths import trained_dir
    path = model_path(path_or_name)
    if not path.exists():
        from .zoo import shipped
        raise WorkbenchError(f"no model at {path_or_name!r}: give a run directory, a checkpoint folder, or a name "
                             f"in {trained_dir()} ({', '.join(shipped()) or 'none shipped'})")
    if (path / "config.json").is_file() and read_config(path)["model"]["setting"] == "wmf":
        from .models.wmf import WMF
        verify_files(path, read_config(path), trust_unverified)
        return WMF.load(path)
    folder = latest_checkpoint(path)
    meta = read_config(folder)
    verify_files(folder, meta, trust_unverified)
    try:
        model = build_model(meta["model"])
    except WorkbenchError as err:
        raise WorkbenchError(f"{folder / 'config.json'}: {err}") from None
    tokenizer = Tokenizer(folder / "spm.model", tuple(meta["model"]["languages"]))
    state = load_file(str(folder / "model.safetensors"))  # float16 in trained/: copied into float32 parameters
    if not meta.get("decoders", True):  # a shipped encoder-only model
        model.decoders = torch.nn.ModuleDict()
    model.load_state_dict(state)
    model.tokenizer = tokenizer
    return model.to(device).eval()


# --- the trainer ---------------------------------------------------------------------------------------------

def _distributed() -> tuple[int, int]:
    """(rank, world size), initialising the process group under torchrun (gloo on CPU, nccl on CUDA)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return (torch.distributed.get_rank(), world) if world > 1 else (0, 1)


def _tokenised(pairs, tokenizer: Tokenizer, max_len: int, tagged: bool) -> tuple[list[list[int]], list[list[int]]]:
    """Ids of the (en, xx, language) triples' two sides; ``tagged``: xx ids start with their language tag."""
    en = tokenizer.encode([en for en, _, _ in pairs], max_len=max_len)
    xx = tokenizer.encode([xx for _, xx, _ in pairs], max_len=max_len)
    if tagged:
        tags = {lang: tokenizer.tag_id(lang) for lang in {lang for _, _, lang in pairs}}
        xx = [[tags[lang]] + ids for (_, _, lang), ids in zip(pairs, xx)]
    return en, xx


class Trainer:
    """Train ``cfg.model`` on ``cfg.pair`` into ``run_dir``; :meth:`run` returns the final metrics line."""

    def __init__(self, cfg: TrainConfig, run_dir: str | Path, resume: bool = False, show_progress: bool = True,
                 init_from: str | Path | None = None):
        """``init_from``: a trained model of this run's settings (a name in ``trained/``, a model or checkpoint
        folder) whose weights, update count and curve a new run continues — for when the run directory is lost;
        the optimizer moments start afresh, and the learning rate and KL ramp go on from its update."""
        self.cfg, self.run_dir, self.show_progress = cfg, Path(run_dir), show_progress
        self.rank, self.world = _distributed()
        self.device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available()
                                   else "cpu")
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise WorkbenchError(f"--out {self.run_dir} is a file; give a run directory")
        checkpoint = latest_checkpoint(self.run_dir) if resume else None  # both found before any work
        if checkpoint is None and (self.run_dir / "latest").exists():
            raise WorkbenchError(f"{self.run_dir} already holds a run; pass --resume to continue it, or choose "
                                 "another --out")
        left = sorted(p.name for p in self.run_dir.iterdir() if p.name != LOCK) if self.run_dir.is_dir() else []
        if checkpoint is None and left and self.rank == 0:
            raise WorkbenchError(f"{self.run_dir} is not empty ({', '.join(left[:3])}{', …' if len(left) > 3 else ''}) "
                                 "and holds no run to resume; a new run needs a new or empty --out")
        created = not self.run_dir.exists()
        self._lock = self._own_run_folder()
        try:
            self._prepare(cfg, checkpoint, init_from)
        except BaseException:
            self._release(remove=created)
            raise

    def _own_run_folder(self) -> FileLock | None:
        """Lock the run folder for this process (rank 0 under DDP) for the Trainer's life: a second trainer in the
        same folder is refused. The lock is the operating system's, so a killed process leaves none behind."""
        if self.rank != 0:
            return None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.run_dir / LOCK))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise WorkbenchError(f"another process is training in {self.run_dir}; wait for it to finish (or stop "
                                 "it), or choose another --out") from None
        return lock

    def _release(self, remove: bool = False) -> None:
        """Give the run folder back; ``remove``: it was made by this trainer, which failed before any work."""
        if getattr(self, "_lock", None) is not None:
            self._lock.release()
            self._lock = None
        if remove and self.rank == 0:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __del__(self):
        self._release()

    def _prepare(self, cfg: TrainConfig, checkpoint: Path | None, init_from: str | Path | None) -> None:
        # a resume of a run that was itself initialised wins over init_from
        start = latest_checkpoint(model_path(init_from)) if init_from is not None and checkpoint is None else None
        self.tokenizer = pair_tokenizer(cfg.pair, cfg.vocab_size, language_tags=cfg.model == "nmt")
        self._prepare_data()
        if checkpoint is not None:
            self._check_resumable(checkpoint)
        if start is not None:
            self._check_resumable(start, initialising=True)
        torch.manual_seed(cfg.seed)
        self.model = build_model(cfg.model_config(self.tokenizer)).to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                                           weight_decay=cfg.weight_decay)
        self.state = {"update": 0, "epoch": 0, "position": 0, "world": self.world, "pairs_seen": 0,
                      "train_seconds": 0.0, "best": None}
        if checkpoint is not None:
            self._restore(checkpoint)
        elif start is not None:
            self._continue(start)
        self.net = self.model
        if self.world > 1:
            self.net = torch.nn.parallel.DistributedDataParallel(self.model, find_unused_parameters=False)

    def _check_resumable(self, folder: Path, initialising: bool = False) -> None:
        """Refuse a resume that would continue another run: other model, vocabulary, data or settings that decide
        the batches and the updates. The KL ramp stays the one the run started with. A run initialised from a
        trained model (``initialising``) may change how the latents are regularised (``bgt.REGULARISERS``)."""
        meta = read_config(folder)
        cfg = self.cfg
        if meta["model"]["setting"] != cfg.model:
            raise WorkbenchError(f"{folder} is a checkpoint of model {meta['model']['setting']!r}, not {cfg.model!r}")
        if meta["tokenizer_sha256"] != self.tokenizer.digest:
            raise WorkbenchError(f"{folder} was trained with another vocabulary (tokenizer sha256 "
                                 f"{meta['tokenizer_sha256'][:12]} vs {self.tokenizer.digest[:12]} now); resume "
                                 "needs the same pair, vocab_size and data")
        saved, now = meta.get("train", {}), json.loads(json.dumps(asdict(cfg)))
        if initialising and "overrides" in saved:
            saved = {**saved, "overrides": _without_regularisers(saved["overrides"])}
            now["overrides"] = _without_regularisers(now["overrides"])
        changed = [f"{name} {saved[name]!r} -> {now[name]!r}" for name in RESUME_FIELDS
                   if name in saved and saved[name] != now[name]]
        if meta.get("data_sha256", self.data_digest) != self.data_digest:
            changed.append(f"training data (sha256 {meta['data_sha256'][:12]} -> {self.data_digest[:12]})")
        if "data_sha256" not in meta:
            log.warning("%s predates training-data digests: the data cannot be checked on this resume", folder)
        saved_x0 = meta["model"].get("kl_x0")
        if saved_x0 is not None:
            if cfg.kl_x0 is not None and cfg.kl_x0 != saved_x0:
                changed.append(f"kl_x0 {saved_x0} -> {cfg.kl_x0}")
            elif cfg.kl_x0 is None:
                log.info("resume keeps the KL ramp the run started with: x0 = %d updates", saved_x0)
                cfg.kl_x0 = saved_x0
        if changed:
            raise WorkbenchError(f"{folder} was trained with other settings, so resuming would not continue that "
                                 f"run: {'; '.join(changed)}. Resume with the run's settings (its config.json) or "
                                 "start a new run in another --out (only max_updates, max_seconds and the "
                                 "log/valid/eval/save cadence may change on a resume)")

    def _restore(self, folder: Path) -> None:
        meta = read_config(folder)
        verify_files(folder, meta)
        saved = build_model(meta["model"]).cfg
        if saved != self.model.cfg:
            raise WorkbenchError(f"{folder} has model config {saved}, which differs from the requested "
                                 f"{self.model.cfg}")
        self.model.load_state_dict(load_file(str(folder / "model.safetensors"), device=str(self.device)))
        tensors = load_file(str(folder / "trainer_state.safetensors"))
        state = json.loads((folder / "trainer_state.json").read_text())
        opt = state.pop("optimizer")
        state.pop("files_sha256", None)  # checkpoints written before config.json covered the trainer state
        if state.get("world", self.world) != self.world:
            raise WorkbenchError(f"{folder} was trained by {state['world']} process(es), not {self.world}: an "
                                 "update's batches depend on it; resume with the same number of processes")
        opt_state = {int(i): {k: tensors[f"optimizer.{i}.{k}"].to(self.device) for k in keys}
                     for i, keys in opt["state_keys"].items()}
        self.optimizer.load_state_dict({"state": opt_state, "param_groups": opt["param_groups"]})
        torch.set_rng_state(tensors["rng.torch"])
        if torch.cuda.is_available():
            cuda = [tensors[k] for k in sorted(k for k in tensors if k.startswith("rng.cuda."))]
            if cuda:
                torch.cuda.set_rng_state_all(cuda)
        kept = self._truncate_metrics(state["update"])
        steps = [line for line in kept if "tokens_per_s" in line]  # checkpoints written before these were kept
        state.setdefault("pairs_seen", sum(line.get("sentences", 0) for line in steps))
        state.setdefault("train_seconds", sum(line["tokens"] / line["tokens_per_s"] for line in steps))
        state.setdefault("best", None)
        self.state = {**self.state, **state}
        log.info("resumed %s at update %d", folder, state["update"])

    def _continue(self, folder: Path) -> None:
        """Start from ``folder``'s weights at its update: the data position is replayed to that update and its
        curve (``curve.csv`` of an exported model, ``metrics.jsonl`` of a run) is carried into this run's log."""
        meta = read_config(folder)
        verify_files(folder, meta)
        if not meta.get("decoders", True):
            raise WorkbenchError(f"{folder} holds encoders only (no decoders), so training cannot continue from it")
        saved = ARCHITECTURES[meta["model"]["setting"]][1].from_dict(meta["model"])
        if _without_regularisers(saved.to_dict()) != _without_regularisers(self.model.cfg.to_dict()):
            raise WorkbenchError(f"{folder} has another model config than the one requested")
        retuned = saved != self.model.cfg  # another bottleneck: its STS-B dev is no candidate for best/
        self.model.load_state_dict(load_file(str(folder / "model.safetensors"), device=str(self.device)))
        training = meta.get("training")  # an exported model's; a checkpoint's trainer state otherwise
        if training is None and (folder / "trainer_state.json").is_file():
            state = json.loads((folder / "trainer_state.json").read_text())
            training = {"updates": state["update"], **{k: state[k] for k in ("pairs_seen", "train_seconds")
                                                          if k in state}}
        training = training or {"updates": checkpoint_update(folder)}
        update = int(training["updates"])
        for _ in range(update):  # cheap index arithmetic: the batches the run would see next
            self._next_update_batches()
        logged = [p for p in (folder, folder.parent, folder.parent.parent)
                  if (p / "curve.csv").is_file() or (p / "metrics.jsonl").is_file()]
        history = learning_curve(logged[0]) if logged else pd.DataFrame(columns=CURVE_COLUMNS)
        history = history[history["update"] <= update]
        semantic = history[(history["metric"] == "stsb_dev") & (history["view"] == "semantic")
                           & (history["update"] == update)]["value"]
        self.state.update(update=update, pairs_seen=int(training.get("pairs_seen", 0)),
                          train_seconds=float(training.get("train_seconds", 0.0)), init_from=str(folder),
                          best={"update": update, "stsb_dev": float(semantic.iloc[0])}
                          if len(semantic) and not retuned else None)
        torch.manual_seed(self.cfg.seed + update)
        if self.rank == 0 and not history.empty:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            lines = []
            for (at, pairs, seconds), rows in history.groupby(["update", "pairs_seen", "train_seconds"], sort=True):
                line = {"update": int(at), "pairs_seen": int(pairs), "train_seconds": float(seconds)}
                scores = rows[rows["metric"] == "stsb_dev"]
                if len(scores):
                    line["stsb_dev"] = dict(zip(scores["view"], scores["value"]))
                if (rows["metric"] == "valid_loss").any():
                    line["valid_loss"] = float(rows[rows["metric"] == "valid_loss"]["value"].iloc[0])
                lines.append(line)
            _atomic_text(self.run_dir / "metrics.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
        log.info("continuing %s from update %d (fresh optimizer moments)", folder, update)

    def _truncate_metrics(self, update: int) -> list[dict]:
        """Drop metric lines written after the checkpoint, so the log reads like an uninterrupted run; returns
        the lines kept."""
        path = self.run_dir / "metrics.jsonl"
        if not path.is_file():
            return []
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        kept = [line for line in lines if line["update"] <= update]
        if self.rank == 0:
            _atomic_text(path, "".join(json.dumps(line) + "\n" for line in kept))
        return kept

    def _prepare_data(self) -> None:
        cfg = self.cfg
        pairs = pairs_of(cfg.pair)
        train, valid = [], []
        for pair in pairs:  # (en, xx, language) triples; with several pairs the validation pairs are shared out
            splits, language = load_splits(pair), language_of(pair)
            train += [(en, xx, language) for en, xx in splits["train"]]
            valid += [(en, xx, language) for en, xx in splits["valid"][: (cfg.max_valid_pairs or 10 ** 9)
                                                                           // len(pairs)]]
        if cfg.max_pairs and cfg.max_pairs < len(train):
            pick = np.random.default_rng(cfg.seed).choice(len(train), cfg.max_pairs, replace=False)
            train = [train[i] for i in sorted(pick)]
        digest = hashlib.sha256()
        for part in (train, valid):
            digest.update("\n".join("\t".join(triple) for triple in part).encode())
            digest.update(b"\0")
        self.data_digest = digest.hexdigest()
        tagged = cfg.model == "nmt"
        self.train_ids = _tokenised(train, self.tokenizer, cfg.max_sentence_len, tagged)
        self.valid_ids = _tokenised(valid, self.tokenizer, cfg.max_sentence_len, tagged)
        self.n_train = len(train)

    def _epoch_batches(self, epoch: int) -> list[np.ndarray]:
        """The epoch's micro-batches (deterministic in seed and epoch; computed once per epoch)."""
        if getattr(self, "_batches", (None,))[0] != epoch:
            en, xx = self.train_ids
            self._batches = (epoch, token_batches([len(s) for s in en], [len(s) for s in xx], self.cfg.max_tokens,
                                                  self.cfg.seed, epoch))
        return self._batches[1]

    def _next_update_batches(self) -> list[np.ndarray]:
        """The micro-batches of the next update for every process (update_freq × world), advancing the
        data position; an epoch's leftover that cannot fill an update is skipped."""
        need = self.cfg.update_freq * self.world
        while True:
            batches = self._epoch_batches(self.state["epoch"])
            start = self.state["position"]
            if start + need <= len(batches):
                self.state["position"] = start + need
                return batches[start:start + need]
            if len(batches) < need:
                raise WorkbenchError(f"an epoch has {len(batches)} micro-batches, fewer than the {need} one update "
                                     "needs; lower max_tokens or update_freq")
            self.state["epoch"] += 1
            self.state["position"] = 0

    def _autocast(self):
        use = self.cfg.amp == "bf16" or (self.cfg.amp == "auto" and self.device.type == "cuda")
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=use)

    def _update(self) -> dict:
        cfg, update = self.cfg, self.state["update"]
        batches = self._next_update_batches()
        n_sentences = sum(len(b) for b in batches)  # the gradient is divided by all pairs in the update
        mine = batches[self.rank::self.world]
        en_ids, xx_ids = self.train_ids
        self.model.train()
        totals = torch.zeros(len(SUMMED), dtype=torch.float64)
        sem_side = getattr(self.model.cfg, "sem_side", "example")
        for micro, index in enumerate(mine):
            step = update * len(mine) + micro  # the forward counter of sem_side="microbatch"
            batch = collate(en_ids, xx_ids, index, sem_side, step)
            with self._autocast():
                out = self.net(batch.en.to(self.device), batch.xx.to(self.device), batch.sem_en, update)
            (out["loss"] * (self.world / n_sentences)).backward()  # DDP averages over processes
            totals += torch.tensor([float(out[k].detach()) if k in out else 0.0 for k in SUMMED], dtype=torch.float64)
        if self.world > 1:
            torch.distributed.all_reduce(totals)
        lr = learning_rate(update + 1, cfg)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.state["update"] = update + 1
        sums = dict(zip(SUMMED, totals.tolist()))
        n, tokens = sums["sentences"], sums["tokens_en"] + sums["tokens_xx"]
        self.state["pairs_seen"] += int(n)
        record = {"update": update + 1, "epoch": self.state["epoch"], "loss": sums["loss"] / n}
        for term in ("recon", "trans", "kl", "kl_semantic", "kl_language", "margin_violations"):
            if term in out:
                record[term] = sums[term] / n
        for term in ("recon", "trans"):
            if term in out:
                record[f"{term}_per_token"] = sums[term] / tokens
        if hasattr(self.model, "kl_weight"):
            record["kl_weight"] = self.model.kl_weight(update)
        record.update({"lr": lr, "grad_norm": float(grad_norm), "sentences": int(n), "tokens": int(tokens),
                       "tokens_en": int(sums["tokens_en"]), "pairs_seen": self.state["pairs_seen"]})
        if "active_units" in out:
            record["active_units"] = int(out["active_units"])  # of the last micro-batch
        return record

    @torch.no_grad()
    def validate(self) -> float:
        """Validation loss per sentence pair (same terms and KL weight as training; eval mode)."""
        self.model.eval()
        en, xx = self.valid_ids
        total, n = 0.0, 0
        for index in token_batches([len(s) for s in en], [len(s) for s in xx], self.cfg.max_tokens, 0, 0):
            batch = collate(en, xx, index)
            with self._autocast():
                out = self.model(batch.en.to(self.device), batch.xx.to(self.device), batch.sem_en,
                                 self.state["update"])
            total, n = total + out["loss"].item(), n + len(index)
        return total / max(n, 1)

    def evaluate_views(self) -> dict[str, float]:
        """STS-B dev Pearson's r × 100 of every view that reads English (the cheap model-selection signal)."""
        frame = load_stsb("dev")
        sentences = [*frame["sentence1"], *frame["sentence2"]]
        return {view: round(score_pairs(embed_unique(self.model.encoder(view, self.tokenizer), sentences),
                                        frame)["pearson"], 3)
                for view in self.model.views if "en" in self.model.view_languages(view)}

    def _save_best(self, scores: dict[str, float]) -> None:
        """Keep ``best/`` (weights only, loadable) at the best semantic STS-B dev so far (trained networks only:
        update 0 is the reference, not a candidate)."""
        score = scores.get("semantic")
        best = self.state["best"]
        if score is None or self.state["update"] == 0 or (best is not None and score <= best["stsb_dev"]):
            return
        self.state["best"] = {"update": self.state["update"], "stsb_dev": score}
        tmp = self.run_dir / ".best.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        _write_weights(tmp, self.model, self.tokenizer, {"train": asdict(self.cfg), "data_sha256": self.data_digest,
                                                         "update": self.state["update"], "stsb_dev": scores})
        swap_folder(tmp, self.run_dir / "best")

    def _log(self, record: dict) -> None:
        if self.rank == 0:
            with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")

    def _measure(self, record: dict) -> None:
        """Add validation loss and STS-B dev to ``record`` where due (and update ``best/``)."""
        cfg, update = self.cfg, record["update"]
        last = update == cfg.max_updates or record.get("stopped")
        if update % cfg.valid_every == 0 or last:
            record["valid_loss"] = self.validate()
        if cfg.eval_every and (update % cfg.eval_every == 0 or last) and self.rank == 0:
            record["stsb_dev"] = self.evaluate_views()
            self._save_best(record["stsb_dev"])

    def run(self) -> dict:
        """Train until ``max_updates`` (or ``max_seconds``, or SIGINT/SIGTERM: the update in progress ends, then a
        checkpoint is written and the run returns, ready for ``resume``)."""
        cfg = self.cfg
        if self.state["update"] >= cfg.max_updates:
            self._release()
            log.info("%s is finished: update %d of max_updates %d", self.run_dir, self.state["update"],
                     cfg.max_updates)
            return {"update": self.state["update"], "finished": True}
        try:
            return self._run()
        finally:
            self._release()

    def _run(self) -> dict:
        cfg = self.cfg
        started = time.perf_counter()
        if self.rank == 0:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            n_params = sum(p.numel() for p in self.model.parameters())
            log.info("%s on %s: %.1fM parameters, %d training pairs, device %s, %d process(es)", cfg.model,
                     cfg.pair, n_params / 1e6, self.n_train, self.device, self.world)
        if self.state["update"] == 0 and cfg.eval_every:  # the network at initialisation: the curves' reference
            record = {"update": 0, "pairs_seen": 0, "train_seconds": 0.0}
            self._measure(record)
            self._log(record)
        stop = {}
        signals = (signal.SIGINT, signal.SIGTERM) if threading.current_thread() is threading.main_thread() else ()
        previous = {sig: signal.signal(sig, lambda number, _: stop.setdefault("signal", signal.Signals(number).name))
                    for sig in signals}
        bar = tqdm(total=cfg.max_updates, initial=self.state["update"], desc=f"train {cfg.model} {cfg.pair}",
                   unit="update", disable=not self.show_progress or self.rank != 0)
        record: dict = {}
        try:
            while self.state["update"] < cfg.max_updates:
                start = time.perf_counter()
                record = self._update()
                if not math.isfinite(record["loss"]) or not math.isfinite(record["grad_norm"]):
                    kept = (self.run_dir / "latest").read_text().strip() if (self.run_dir / "latest").is_file() \
                        else "none yet"
                    raise WorkbenchError(
                        f"update {record['update']}: the loss became {record['loss']} (gradient norm "
                        f"{record['grad_norm']}); nothing was saved after it, the last good checkpoint is {kept}. "
                        "Lower lr or raise warmup in a new run, or check the weights and data it resumed from")
                seconds = time.perf_counter() - start
                self.state["train_seconds"] += seconds
                record.update(tokens_per_s=record["tokens"] / seconds,
                              train_seconds=round(self.state["train_seconds"], 3))
                if cfg.max_seconds and time.perf_counter() - started >= cfg.max_seconds:
                    stop.setdefault("time", f"max_seconds={cfg.max_seconds:g}")
                # read once: a signal landing later (while this update is measured, or after the processes
                # agreed below) stops the next update, on every process alike
                stopped = next(iter(stop.values()), None)
                if self.world > 1:  # every process stops at the same update
                    flag = torch.tensor([float(stopped is not None)], device=self.device)
                    torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
                    if flag.item() and stopped is None:
                        stopped = "another process stopped"
                if stopped:
                    record["stopped"] = stopped
                self._measure(record)
                update = record["update"]
                if update % cfg.log_every == 0 or "valid_loss" in record or "stsb_dev" in record or stopped:
                    self._log(record)
                bar.update()
                bar.set_postfix(loss=f"{record['loss']:.3f}")
                if (update % cfg.save_every == 0 or update == cfg.max_updates or stopped) and self.rank == 0:
                    save_checkpoint(self.run_dir, self.model, self.tokenizer, cfg, self.optimizer, self.state,
                                    self.data_digest)
                if stopped:
                    log.warning("stopped at update %d (%s); continue with --resume", update, stopped)
                    break
        finally:
            bar.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if self.world > 1:
            torch.distributed.barrier()
        return record
