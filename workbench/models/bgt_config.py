"""What a BGT is configured with: its settings (:mod:`.bgt`'s table as data), the network sizes of each
training preset, and :class:`BGTConfig` with the checks a config must pass before a network is built.

How the BGT variants bottleneck their latents (defaults: the released code):

=========================  ========================================================================================
``decoder_latent``         what the decoders read in training: ``"mean"``, ``"sample"`` (all latents sampled) or
                           ``"sample_language"`` (only z_en / z_xx sampled; z_sem stays the mean)
``language_latent_dim``    the size of z_en / z_xx (default: ``latent_dim``)
``language_kl_weight``     multiplies the language latents' KL term (default 1)
``language_free_bits``     a floor, in nats, under each language latent's KL: below it the KL costs nothing
                           (free bits at the latent's level; default 0, no floor)
``word_dropout``           share of the generative decoders' input tokens replaced by padding (default 0)
``content_adversary``      λ of an adversary that reads content from z_en / z_xx behind a gradient-reversal
                           layer (:mod:`.adversary`; default 0, none)
``adversary_target``       the content it reads: ``"translation"`` (the other side's semantic mean) or
                           ``"words"`` (the sentence's own content words as a bag)
``language_independence``  λ of a penalty on the language latents' directions following the sentence's content
                           words: their linear CKA over the batch (default 0, none)
``hide_punctuation``       share of pairs whose z_sem, on the generative path, reads its sentence without its
                           punctuation marks (default 0, none)
=========================  ========================================================================================

The first three limit what the language latents can carry, so that the content must pass through z_sem (the
style-transfer premise). The floor does the opposite at the small end: a latent under a KL can collapse to
carrying nothing, and the floor leaves it a few nats it may spend for free (meaningful with sampled language
latents, where the KL is a real limit). Word dropout makes the decoders rely on the latents rather than on the
words before. The adversary takes from the language latents what the translation shares, the content that a
looser bottleneck lets in. The independence penalty aims at what the English view's STS reads: the cosine of two
latents, which neither the KL (it shortens a latent, and a cosine ignores length) nor an adversary that finds no
content to predict takes away. Hiding punctuation from z_sem works from the other side: the decoders must then
take the marks (and whether a sentence asks or exclaims) from the language latents, as style transfer does when
it reads the source without them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..checks import number, whole
from .base import ModelConfig
from .transformer import TransformerConfig


@dataclass(frozen=True)
class Setting:
    """What one setting is made of — :mod:`.bgt`'s table as data, so that the network, the loss and other
    modules ask what a setting has instead of comparing its name."""
    gaussian: bool = False  # posteriors with a variance and a KL to N(0, I), annealed (the prior)
    language_latents: bool = False  # q(z_en | x_en) and q(z_xx | x_xx) beside z_sem
    reconstructs: str | None = None  # generative decoders: "languages" (one per language) or "en" (English alone)
    translates: tuple[str, ...] = ()  # translation decoders from z_sem: "en->xx", "xx->en" (the first, second side)
    samples: bool = False  # its decoders always read a sampled z (a VAE), whatever decoder_latent says
    trans_weight: float | None = None  # the translation loss's weight when fixed by the setting (None: the config's)
    abilities: frozenset[str] = frozenset()  # beyond encoding, e.g. "style_transfer"

    @property
    def english_only(self) -> bool:  # its semantic encoder reads English alone (nothing maps the other language in),
        return self.reconstructs != "languages" and "xx->en" not in self.translates  # so its first side is English


BOTH_WAYS = ("en->xx", "xx->en")
STYLE = frozenset({"style_transfer"})  # needs language latents beside the semantic one and decoders that read both
SETTINGS = {
    "bgt": Setting(gaussian=True, language_latents=True, reconstructs="languages", translates=BOTH_WAYS,
                   abilities=STYLE),
    "bgt_no_prior": Setting(language_latents=True, reconstructs="languages", translates=BOTH_WAYS, abilities=STYLE),
    "bgt_no_langvars": Setting(gaussian=True, reconstructs="languages", translates=BOTH_WAYS),
    "bilingual_trans": Setting(translates=BOTH_WAYS, trans_weight=0.5),  # 0.5 × (en→xx + xx→en)
    "english_trans": Setting(translates=("en->xx",)),
    "english_ae": Setting(reconstructs="en"),
    "english_vae": Setting(gaussian=True, reconstructs="en", samples=True),
}
DECODER_LATENTS = ("mean", "sample", "sample_language")
SEM_SIDES = ("example", "microbatch")
ADVERSARY_TARGETS = ("translation", "words")

# The network sizes of each training preset (the run settings: workbench.training.recipes.PRESETS). cpu: the
# CPU recipe chosen at equal CPU time (trained/HISTORY.md); small: minutes on one GPU; paper: the paper's d=1024,
# 5-layer encoders.
PRESETS = {
    "tiny": {"model": {"d_model": 64, "ffn_dim": 128, "n_heads": 2, "enc_layers": 1, "latent_dim": 32,
                       "dropout": 0.0, "max_len": 64}},
    "cpu": {"model": {"d_model": 128, "ffn_dim": 256, "n_heads": 4, "enc_layers": 2, "latent_dim": 128,
                      "dropout": 0.1, "max_len": 64}},
    "small": {"model": {"d_model": 512, "ffn_dim": 1024, "n_heads": 8, "enc_layers": 3, "latent_dim": 512,
                        "dropout": 0.1, "max_len": 128}},
    "paper": {"model": {"d_model": 1024, "ffn_dim": 1024, "n_heads": 8, "enc_layers": 5, "latent_dim": 1024,
                        "dropout": 0.3, "max_len": 1024}},
}


@dataclass
class BGTConfig(ModelConfig):
    KEPT_FROM_START: ClassVar[tuple[str, ...]] = ("kl_x0",)  # the KL ramp (run_settings)
    # settings that change how the latents are regularised or the losses weighed but no shipped parameter: a run
    # initialised from a trained model (``train --init-from``) may change them, to fine-tune it with another
    # bottleneck (an adversary is trained only, TRAINING_ONLY: kept from a model shipped with it, else it starts
    # afresh)
    RETUNABLE: ClassVar[tuple[str, ...]] = ("decoder_latent", "language_kl_weight", "language_free_bits", "word_dropout",
                                            "content_adversary", "adversary_target", "language_independence",
                                            "hide_punctuation", "recon_weight", "trans_weight")
    vocab_size: int
    languages: tuple[str, str] = ("en", "fr")
    setting: str = "bgt"
    d_model: int = 512
    ffn_dim: int = 1024
    n_heads: int = 8
    enc_layers: int = 3
    dec_layers: int = 1
    latent_dim: int = 512
    dropout: float = 0.1
    max_len: int = 1024
    pad_id: int = 0
    eos_id: int = 3
    decoder_latent: str = "mean"  # what the decoders read in training: the module docstring's table
    language_latent_dim: int | None = None  # size of z_en / z_xx (None: latent_dim); a smaller one holds less
    language_kl_weight: float = 1.0  # multiplies the language latents' KL (with β): a tighter bottleneck above 1
    language_free_bits: float = 0.0  # nats of each language latent's KL (batch mean) that cost nothing
    word_dropout: float = 0.0  # share of the generative decoders' input tokens replaced by padding in training
    content_adversary: float = 0.0  # λ of the adversaries reading content from z_en / z_xx
    language_independence: float = 0.0  # λ of z_en's / z_xx's CKA with their content words (method.md#independence)
    hide_punctuation: float = 0.0  # share of pairs whose z_sem is read without punctuation (method.md#hide-punctuation)
    adversary_target: str = "translation"  # what they read: the translation's semantic mean, or "words"
    sem_side: str = "example"  # "example" | "microbatch" (docs/method.md#semantic-side)
    attention_relu: bool = False  # the released code's sublayer is linear (docs/method.md#attention-relu)
    kl_x0: int = 65536  # KL weight min(1, update / kl_x0)
    recon_weight: float = 1.0
    trans_weight: float = 1.0
    label_smoothing: float = 0.1
    extra: dict = field(default_factory=dict)  # free-form notes carried in config.json

    def __post_init__(self):
        self.languages = tuple(self.languages)
        problems = self.size_problems()
        if not problems and self.d_model % self.n_heads:
            problems.append(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        for name, ok, rule in (("setting", self.setting in SETTINGS, f"one of {', '.join(SETTINGS)}"),
                               ("decoder_latent", self.decoder_latent in DECODER_LATENTS,
                                f"one of {', '.join(DECODER_LATENTS)}"),
                               ("language_latent_dim", self.language_latent_dim is None
                                or whole(self.language_latent_dim), "a positive integer or None"),
                               ("language_kl_weight", number(self.language_kl_weight, 0), "a number ≥ 0"),
                               ("language_free_bits", number(self.language_free_bits, 0), "a number of nats ≥ 0"),
                               ("word_dropout", number(self.word_dropout, 0, 1, open_high=True), "a number in [0, 1)"),
                               ("content_adversary", number(self.content_adversary, 0), "a number ≥ 0"),
                               ("language_independence", number(self.language_independence, 0), "a number ≥ 0"),
                               ("hide_punctuation", number(self.hide_punctuation, 0, 1), "a share in [0, 1]"),
                               ("adversary_target", self.adversary_target in ADVERSARY_TARGETS,
                                f"one of {', '.join(ADVERSARY_TARGETS)}"),
                               ("sem_side", self.sem_side in SEM_SIDES, "'example' or 'microbatch'")):
            if not ok:
                problems.append(f"{name} must be {rule}, not {getattr(self, name)!r}")
        if len(self.languages) != 2 or self.languages[0] == self.languages[1]:
            problems.append(f"languages must be two different languages, not {self.languages}")
        elif self.setting in SETTINGS and SETTINGS[self.setting].english_only and self.languages[0] != "en":
            problems.append(f"{self.setting} reads English on its first side: languages must be ('en', xx), not "
                            f"{self.languages}")
        for name in ("content_adversary", "language_independence", "hide_punctuation"):
            if (self.setting in SETTINGS and getattr(self, name) and not
                    (SETTINGS[self.setting].language_latents and SETTINGS[self.setting].reconstructs == "languages")):
                problems.append(f"{name} needs language latents beside z_sem, which {self.setting} has not "
                                "(it applies to bgt and bgt_no_prior)")
        if problems:
            raise ValueError("; ".join(problems))

    @classmethod
    def run_settings(cls, run, tokenizer=None) -> dict:
        """The KL ramp a new run fixes (x0: ``kl_x0``, else ``kl_ramp`` × ``max_updates``, so β ends near 1 / kl_ramp:
        docs/method.md#kl); every resume keeps it (``KEPT_FROM_START``)."""
        return {"kl_x0": run.kl_x0 or max(1, round(run.kl_ramp * run.max_updates))}

    def direction(self, symbolic: str) -> str:
        """A translation decoder's name for this pair: ``"en->xx"`` -> ``"en->fr"`` (``"fr->es"`` in fr-es)."""
        return "->".join(dict(zip(("en", "xx"), self.languages))[side] for side in symbolic.split("->"))

    @property
    def language_dim(self) -> int:
        """The size of the language latents z_en and z_xx."""
        return self.language_latent_dim or self.latent_dim

    def encoder_config(self, n_layers: int | None = None, latent_dim: int | None = None) -> TransformerConfig:
        return TransformerConfig(vocab_size=self.vocab_size, d_model=self.d_model, ffn_dim=self.ffn_dim,
                                 n_heads=self.n_heads, n_layers=n_layers or self.enc_layers,
                                 latent_dim=latent_dim or self.latent_dim, dropout=self.dropout,
                                 max_len=self.max_len, pad_id=self.pad_id)
