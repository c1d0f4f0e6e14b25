"""Training recipes: the run presets (``tiny``, ``cpu``, ``small``, ``paper``) and :class:`TrainConfig`, the
checked settings of one run (from a preset, a TOML/JSON file, or CLI flags).

A preset is :data:`PRESETS`' run settings with the model kind's own table over them (its network sizes, and the
run settings it changes: ``workbench.models.kinds.KINDS``). A resumed run must keep
:data:`RESUME_FIELDS` (they decide the batches and the weight updates); the length of the run, logging and
checkpoint cadence may change.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..checks import WorkbenchError, check_keys, check_name, number, whole
from ..data.corpora import PAIRS
from ..data.languages import pair_name
from ..data.tokenizer import EOS, PAD, Tokenizer, pair_tokenizer
from ..models import PRESET_NAMES
from ..models.kinds import ALIKE, KINDS, can
from ..paths import read_json


COMPILE_BACKENDS = ("off", "inductor", "aot_eager")

PRESETS = {
    # CI: trains in well under a minute on CPU and the loss visibly falls.
    "tiny": {"vocab_size": 1000, "max_pairs": 3000, "tokenizer_pairs": 20000, "max_sentence_len": 32,
             "max_tokens": 1024, "update_freq": 1, "lr": 1e-3, "warmup": 10, "max_updates": 40, "kl_ramp": 1.0,
             "valid_every": 20, "save_every": 20, "max_valid_pairs": 300},
    # The CPU recipe chosen at equal CPU time (trained/HISTORY.md): 4k pieces, lr 3e-3, every training pair, the
    # KL ramp over 1,000 updates, STS-B dev every 100 updates; 4,400 updates take about 1.4 h on 2 CPU cores.
    "cpu": {"vocab_size": 4000, "max_pairs": 0, "max_sentence_len": 40, "max_tokens": 4000, "update_freq": 1,
            "lr": 3e-3, "warmup": 50, "max_updates": 4400, "kl_x0": 1000, "valid_every": 500, "eval_every": 100,
            "save_every": 100, "keep_checkpoints": 10, "max_valid_pairs": 500},
    # The GPU recipe for shipped models: minutes on one GPU.
    "small": {"max_sentence_len": 64, "max_tokens": 8000, "update_freq": 2, "lr": 8e-4, "warmup": 300,
              "max_updates": 3000, "valid_every": 500, "save_every": 500},
    # The paper's: ~25k-token updates, 20k pieces.
    "paper": {"vocab_size": 20000, "max_sentence_len": 100, "max_tokens": 500, "update_freq": 50, "lr": 5e-4,
              "warmup": 4000, "max_updates": 20000, "kl_ramp": 65536 / 20000, "valid_every": 1000,
              "save_every": 1000},  # kl_ramp: x0 = 65536 at 20k updates, the same fraction for shorter runs
}
if tuple(PRESETS) != PRESET_NAMES:  # what the CLI lists without importing this module
    raise ValueError(f"the presets {tuple(PRESETS)} are not workbench.models.PRESET_NAMES {PRESET_NAMES}")


@dataclass
class TrainConfig:
    model: str = "bgt"
    pair: str = "en-fr"  # or "all" (every pair; the multilingual NMT only)
    preset: str = "tiny"
    vocab_size: int = 8000
    overrides: dict = field(default_factory=dict)  # model config fields (d_model, enc_layers, decoder_latent, ...)
    max_pairs: int | None = None  # a seeded sample of the training pairs (None: all)
    tokenizer_pairs: int | None = None  # the sentencepiece model learns from the first N training pairs (None: all)
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
    # the KL ramp of the kinds with a KL term (BGT's run_settings fixes it when a run starts; resumes keep it):
    kl_x0: int | None = None  # KL weight min(1, update / kl_x0); None: kl_ramp × max_updates at the run's start
    kl_ramp: float = 3.0  # β ends at 1 / kl_ramp (3: near 0.3, as in the paper's run; docs/method.md#kl)
    seed: int = 1
    amp: str = "auto"  # "auto": bf16 autocast on CUDA, none on CPU; "bf16"; "off"
    log_every: int = 1
    valid_every: int = 1000
    eval_every: int | None = None  # the dev score (STS-B dev; validation retrieval without English) every N updates
    # (None: valid_every; 0: never)
    save_every: int = 1000
    keep_checkpoints: int = 2
    warm_start: str | None = None  # a trained model of another kind whose weights the new run starts from, as the
    # model kind maps them (BGT from BILINGUALTRANS): update 0 and the full schedule, unlike --init-from
    # GPU throughput (docs/campaign.md#throughput); neither changes what an update computes beyond float rounding,
    # so a resume may change them
    pad_multiple: int = 1  # batches padded to a multiple of this many tokens: few shapes for a compiled network
    compile: str = "off"  # torch.compile backend for the network's compilable parts (encoders, decoder layers):
    # "inductor" (generated kernels), "aot_eager" (graph capture and autograd tracing only: a check), or "off"

    def __post_init__(self):
        check_name("model", self.model, tuple(KINDS))
        if self.pair != "all":
            self.pair = pair_name(self.pair)  # its corpus is looked for when the run reads it (a model loads without)
            if not self.pair.startswith("en-") and not can(self.model, ALIKE):
                alike = ", ".join(name for name in KINDS if can(name, ALIKE))
                raise WorkbenchError(f"{self.model} reads English on one side, so it trains on en-XX pairs only; a "
                                     f"pair without English ({self.pair}) trains {alike}")
        if self.pair == "all" and not KINDS[self.model].multilingual:
            multilingual = ", ".join(m for m, k in KINDS.items() if k.multilingual)
            raise WorkbenchError(f"only a multilingual model ({multilingual}) trains on all pairs at once; give "
                                 f"{self.model} one pair: {', '.join(PAIRS)}")
        check_name("preset", self.preset, PRESETS)
        check_name("amp mode", self.amp, ("auto", "bf16", "off"))
        check_name("lr schedule", self.schedule, ("inverse_sqrt", "constant"))
        check_name("compile backend", self.compile, COMPILE_BACKENDS)
        self.betas = tuple(self.betas)
        wrong = [f"{name} must be {rule} (got {getattr(self, name)!r})" for name, rule, ok in _CHECKS
                 if getattr(self, name) is not None and not ok(getattr(self, name))]
        if wrong:
            raise WorkbenchError("invalid training config: " + "; ".join(wrong))
        if self.eval_every is None:
            self.eval_every = self.valid_every

    def tokenizer(self) -> Tokenizer:
        """The sentencepiece model a run of this config trains with (built once per home, then loaded)."""
        return pair_tokenizer(self.pair, self.vocab_size, language_tags=KINDS[self.model].multilingual,
                              max_pairs=self.tokenizer_pairs)

    @classmethod
    def from_preset(cls, preset: str, **changes) -> "TrainConfig":
        """The preset's values for the model kind, then ``changes`` (``None`` values are ignored). A multilingual
        kind's pair defaults to ``"all"``."""
        check_name("preset", preset, PRESETS)
        kind = KINDS[check_name("model", changes.get("model") or cls.model, tuple(KINDS))]
        if kind.multilingual and changes.get("pair") is None:
            changes["pair"] = "all"
        values = {**PRESETS[preset], **kind.presets.get(preset, {})}
        overrides = {**values.pop("model", {}), **(changes.pop("overrides", None) or {})}
        values.update({k: v for k, v in changes.items() if v is not None})
        return cls(preset=preset, overrides=overrides, **values)

    @classmethod
    def from_file(cls, path: str | Path) -> "TrainConfig":
        """A TOML or JSON file of TrainConfig fields (``preset``, default tiny, supplies what it leaves out), or a
        model folder's ``config.json``: the recipe that made it (``workbench train --config trained/NAME/config.json``
        trains it again from scratch)."""
        path = Path(path)
        if path.suffix == ".toml":
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except UnicodeDecodeError:
                raise WorkbenchError(f"{path} is not UTF-8 text; save it as UTF-8") from None
            except tomllib.TOMLDecodeError as err:
                raise WorkbenchError(f"{path}: cannot parse it as TOML ({err})") from None
        else:
            data = read_json(path)
            if path.name == "config.json" and isinstance(data, dict) and "train" in data:
                return cls.from_recorded(data["train"], path, data.get("training"))  # a model folder
        if not isinstance(data, dict):
            raise WorkbenchError(f"{path}: a training config is a table of settings, not {type(data).__name__}")
        check_keys(data, (f.name for f in fields(cls)), str(path), "training config keys")
        return cls.from_preset(data.pop("preset", "tiny"), **data)

    @classmethod
    def from_recorded(cls, recorded: dict, path: str | Path, training: dict | None = None) -> "TrainConfig":
        """The config a model folder records (``config.json``'s ``train``: every field as the run's last part had
        it), run for as many updates as the whole run went (``training``'s ``run_updates``) and no time limit: a
        run resumed with ``--max-seconds`` records that part's limit, which would otherwise cut a retraining
        short."""
        known = {f.name for f in fields(cls)}
        if not isinstance(recorded, dict) or not set(recorded) <= known:
            raise WorkbenchError(f"{path}: its 'train' section is not a training config (fields: "
                                 f"{', '.join(sorted(known))})")
        if isinstance(training, dict) and "updates" in training:
            recorded = {**recorded, "max_updates": int(training.get("run_updates", training["updates"])),
                        "max_seconds": None}
        kind, overrides = KINDS.get(recorded.get("model")), recorded.get("overrides")
        if kind is not None and kind.fitted is not None and isinstance(overrides, dict):
            names = {f.name for f in fields(kind.config)}
            if set(overrides) - names:
                # written before each kind kept its own presets: the run presets' Transformer sizes were recorded
                # (and never read), and the fit took its settings from its preset's table
                preset = kind.presets.get(recorded.get("preset"), {}).get("model", {})
                recorded = {**recorded, "overrides": {**preset, **{k: v for k, v in overrides.items() if k in names}}}
        return cls(**recorded)

    @property
    def languages(self) -> tuple[str, ...]:
        """The run's pair's two languages in its order; for ``"all"``, English and every shipped second language."""
        return ("en", *(p.split("-")[1] for p in PAIRS)) if self.pair == "all" else tuple(self.pair.split("-"))

    def model_config(self, tokenizer: Tokenizer | None = None):
        """The model's config for this run's ``tokenizer``; without one, as the recipe declares it (its
        ``vocab_size``): enough to check the settings and the size before any data is read. Overrides that are
        not fields of the kind's config are refused."""
        config_class = KINDS[self.model].config
        names = {f.name for f in fields(config_class)}
        check_keys(self.overrides, names, f"model {self.model}", "model settings")
        vocab = tokenizer.vocab_size if tokenizer else self.vocab_size + len(self.languages)
        settings = {"vocab_size": vocab, "languages": self.languages, "setting": self.model, "pad_id": PAD,
                    "eos_id": EOS, **config_class.run_settings(self, tokenizer)}
        try:
            return config_class(**{k: v for k, v in settings.items() if k in names}, **self.overrides)
        except ValueError as err:
            raise WorkbenchError(f"bad model settings for {self.model}: {err}") from None


def _count(low: int):
    return lambda v: whole(v, low)


def _number(low: float, high: float = math.inf, open_low: bool = False):
    return lambda v: number(v, low, high, open_low=open_low)


# What each numeric TrainConfig field accepts (checked when a config is built: presets, files, CLI flags).
_CHECKS = [(name, "an integer ≥ 1", _count(1)) for name in (
               "vocab_size", "max_tokens", "update_freq", "max_updates", "log_every", "valid_every", "save_every",
               "keep_checkpoints", "max_valid_pairs", "kl_x0", "pad_multiple")] + [
           ("max_sentence_len", "an integer ≥ 2 (EOS included)", _count(2)),
           ("max_pairs", "an integer ≥ 0 (0: all pairs)", _count(0)),
           ("tokenizer_pairs", "an integer ≥ 1 (unset: every training pair)", _count(1)),
           ("eval_every", "an integer ≥ 0 (0: never)", _count(0)), ("warmup", "an integer ≥ 0", _count(0)),
           ("seed", "an integer from 0 to 2**32 - 1", lambda v: whole(v, 0, 2 ** 32 - 1)), ("lr", "a number > 0", _number(0, open_low=True)),
           ("warmup_init_lr", "a number ≥ 0", _number(0)), ("eps", "a number > 0", _number(0, open_low=True)),
           ("weight_decay", "a number ≥ 0", _number(0)), ("clip_norm", "a number > 0", _number(0, open_low=True)),
           ("kl_ramp", "a number > 0", _number(0, open_low=True)),
           ("max_seconds", "a number > 0", _number(0, open_low=True)),
           ("betas", "two numbers in [0, 1)", lambda v: len(v) == 2 and all(_number(0, 0.999999)(b) for b in v))]


# TrainConfig fields that decide which batches come next and how the weights move: a resume must keep them
# (the run length, logging and checkpoint cadence may change; the KL ramp is fixed when the run starts).
RESUME_FIELDS = ("model", "pair", "vocab_size", "tokenizer_pairs", "overrides", "max_pairs", "max_valid_pairs",
                 "max_sentence_len", "max_tokens", "update_freq", "lr", "schedule", "warmup", "warmup_init_lr", "betas", "eps",
                 "weight_decay", "clip_norm", "seed", "amp")


def learning_rate(update: int, cfg: TrainConfig) -> float:
    """fairseq's inverse_sqrt: linear warmup from ``warmup_init_lr`` to ``lr``, then lr·sqrt(warmup/update)
    (``schedule="constant"``: always ``lr``)."""
    if cfg.schedule == "constant":
        return cfg.lr
    if update < cfg.warmup:
        return cfg.warmup_init_lr + (cfg.lr - cfg.warmup_init_lr) * update / cfg.warmup
    return cfg.lr * math.sqrt(cfg.warmup / max(update, 1))
