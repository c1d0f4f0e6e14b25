"""The Bilingual Generative Transformer and the paper's Transformer baselines (docs/method.md).

One model class, configured by ``setting``:

========================  ===============================================================================
``bgt``                   q(z_sem | x_en or x_xx), q(z_en | x_en), q(z_xx | x_xx); decoders p(x_en | z_en, z_sem)
                          and p(x_xx | z_xx, z_sem); KL of all three latents to N(0, I), annealed; plus the
                          BILINGUALTRANS translation loss from z_sem of each side
``bgt_no_prior``          ``bgt`` without the KL term (no logv)
``bgt_no_langvars``       no language encoders: both decoders read z_sem only; KL on z_sem; translation loss
``bilingual_trans``       the semantic encoder and two translation decoders, 0.5 × (en→xx + xx→en), no KL
``english_trans``         English encoder, one decoder to the foreign language
``english_ae``            English encoder, one decoder reconstructing the English sentence
``english_vae``           ``english_ae`` with a Gaussian posterior, sampled z and the annealed KL
========================  ===============================================================================

The semantic encoder alternates its input language for the generative path (``sem_side``) and reads both
sides for the translation loss. Decoders have one post-LN layer and no cross-attention: the latent enters by
concatenation before a linear sublayer ("Attention") and again before the output projection ("Logit").
Losses are summed over tokens and latent dimensions and divided by the number of sentence pairs (docs/method.md#normalisation).

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
=========================  ========================================================================================

The first three limit what the language latents can carry, so that the content must pass through z_sem (the
style-transfer premise). The floor does the opposite at the small end: a latent under a KL can collapse to
carrying nothing, and the floor leaves it a few nats it may spend for free (meaningful with sampled language
latents, where the KL is a real limit). Word dropout makes the decoders rely on the latents rather than on the
words before. The adversary takes from the language latents what the translation shares, the content that a
looser bottleneck lets in.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import nn

from ..checks import number, whole
from .adversary import ContentAdversary, ContentWordsAdversary, content_bag, content_pieces
from .base import ModelConfig, SentenceModel, evaluating
from .bgt_warm_start import from_translation
from .losses import drop_words, free_bits, kl_to_standard_normal, token_loss
from .transformer import LatentDecoder, SentenceEncoder, TransformerConfig, beam_hypotheses, shift_right


@dataclass(frozen=True)
class Setting:
    """What one setting is made of — the module docstring's table as data, so that the network, the loss and other
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
    # settings that change how the latents are regularised but no shipped parameter: a run initialised from a
    # trained model (``train --init-from``) may change them, to fine-tune it with another bottleneck (an adversary
    # is trained only, TRAINING_ONLY, and starts afresh)
    RETUNABLE: ClassVar[tuple[str, ...]] = ("decoder_latent", "language_kl_weight", "language_free_bits", "word_dropout",
                                            "content_adversary", "adversary_target")
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
        if (self.setting in SETTINGS and self.content_adversary and not
                (SETTINGS[self.setting].language_latents and SETTINGS[self.setting].reconstructs == "languages")):
            problems.append(f"content_adversary needs language latents beside z_sem, which {self.setting} has not "
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


def semantic_side(batch_size: int, sem_side: str = "example", step: int = 0,
                  device: torch.device | str = "cpu") -> torch.Tensor:
    """(B,) bool: which examples feed English to the semantic encoder's generative path.

    ``"example"`` alternates within the batch (even positions English, odd foreign): the 50/50 mix the code
    gets per update, without needing accumulation. ``"microbatch"`` reproduces the code: the whole
    micro-batch takes one side, English on even ``step`` (the forward-call counter), foreign on odd.
    """
    if sem_side == "example":
        return torch.arange(batch_size, device=device) % 2 == 0
    if sem_side == "microbatch":
        return torch.full((batch_size,), step % 2 == 0, device=device)
    raise ValueError(f"unknown sem_side {sem_side!r}; valid: {', '.join(SEM_SIDES)}")


class BGT(SentenceModel):
    """The Bilingual Generative Transformer and its ablations/baselines (see the module docstring)."""

    def __init__(self, cfg: BGTConfig):
        super().__init__()
        self.cfg = cfg
        self.setting = setting = SETTINGS[cfg.setting]
        self.has_kl = setting.gaussian
        self.encoders = nn.ModuleDict({"semantic": SentenceEncoder(cfg.encoder_config(), with_logv=setting.gaussian)})
        if setting.language_latents:
            for lang in cfg.languages:
                self.encoders[lang] = SentenceEncoder(cfg.encoder_config(latent_dim=cfg.language_dim),
                                                      with_logv=setting.gaussian)
        self.decoders = nn.ModuleDict()

        def decoder(cond_dim: int) -> LatentDecoder:
            return LatentDecoder(cfg.encoder_config(cfg.dec_layers), cond_dim, cfg.attention_relu)

        language = cfg.language_dim if setting.language_latents else 0
        for lang in {"languages": cfg.languages, "en": ("en",), None: ()}[setting.reconstructs]:
            self.decoders[lang] = decoder(language + cfg.latent_dim)  # on [z_lang ; z_sem], or z_sem alone
        for direction in setting.translates:
            self.decoders[cfg.direction(direction)] = decoder(cfg.latent_dim)
        adversary = {"translation": lambda: ContentAdversary(cfg.language_dim, cfg.d_model, cfg.latent_dim),
                     "words": lambda: ContentWordsAdversary(cfg.language_dim, cfg.d_model, cfg.vocab_size)}
        self.adversaries = nn.ModuleDict({lang: adversary[cfg.adversary_target]() for lang in cfg.languages}
                                         if cfg.content_adversary else {})
        self.content_words: dict[str, torch.Tensor] = {}  # per language, from the tokenizer (use_tokenizer)

    # --- encoders ------------------------------------------------------------------------------------------

    def view_languages(self, view: str) -> tuple[str, ...]:
        """The languages an encoder view was trained to read (``encoder(view)`` gives the Encoder)."""
        if view == "semantic":
            return ("en",) if self.setting.english_only else self.cfg.languages
        return (view,)

    def latent(self, mu: torch.Tensor, logv: torch.Tensor | None, language: bool = False) -> torch.Tensor:
        """What the decoders see in training: a reparameterised sample ``mu + σ·ε`` for ENGLISHVAE (what makes
        it a VAE rather than ENGLISHAE with an L2 penalty), for BGT variants with ``decoder_latent="sample"``
        (the paper) and for the language latents with ``"sample_language"``; ``mu`` otherwise (the released
        code). Fed the mean, a decoder can undo the KL's pull toward zero by scaling, so the KL is then only an
        L2 penalty and limits nothing; a sample's noise makes it a real limit on what the latent carries.
        Always ``mu`` in eval mode."""
        mode = self.cfg.decoder_latent
        sample = self.setting.samples or mode == "sample" or (mode == "sample_language" and language)
        if logv is None or not self.training or not sample:
            return mu
        return mu + torch.exp(0.5 * logv) * torch.randn_like(mu)

    # a fresh adversary joins trained encoders late in a run: from bgt-en-fr's 6,400 updates the inverse-sqrt rate is
    # 1.2e-4, at which one on its frozen latents reads 3% of the translation's semantic variance after 400 updates;
    # at ten times the rate, 10%
    ADVERSARY_LR_SCALE = 10.0
    TRAINING_ONLY = ("adversaries",)

    def use_tokenizer(self, tokenizer) -> None:
        """The content-words adversaries need to know which pieces start a content word of each language."""
        if self.adversaries and self.cfg.adversary_target == "words":
            pieces = [tokenizer.sp.id_to_piece(i) for i in range(tokenizer.vocab_size)]
            device = next(self.parameters()).device
            self.content_words = {lang: content_pieces(pieces, lang).to(device) for lang in self.cfg.languages}

    def parameter_groups(self) -> list[dict]:
        groups = [{"params": [p for name, p in self.named_parameters() if not name.startswith("adversaries.")]}]
        if self.adversaries:
            groups.append({"params": list(self.adversaries.parameters()), "lr_scale": self.ADVERSARY_LR_SCALE})
        return groups

    # --- warm start -----------------------------------------------------------------------------------------

    def warm_start(self, source_config, weights: dict) -> list[str]:
        """Start from a trained BILINGUALTRANS of the same pair and shape (:func:`.bgt_warm_start.from_translation`:
        the order of learning the paper's scale reaches and a small CPU run does not). Returns the parameters taken."""
        return from_translation(self, source_config, weights)

    # --- training loss -------------------------------------------------------------------------------------

    # what the Trainer logs of each forward pass: terms summed over the update's micro-batches (also per token
    # where named), and values of the last micro-batch
    LOGGED = ("recon", "trans", "kl", "kl_semantic", "kl_language", "adversary")
    PER_TOKEN = ("recon", "trans")
    LAST = ("active_units",)

    def kl_weight(self, update: int) -> float:
        """β(update) = min(1, update / kl_x0): linear annealing (docs/method.md#kl)."""
        return min(1.0, update / self.cfg.kl_x0) if self.has_kl else 0.0

    def schedule(self, update: int) -> dict[str, float]:
        return {"kl_weight": self.kl_weight(update)}

    def forward(self, en: torch.Tensor, xx: torch.Tensor, update: int = 0, step: int = 0
                ) -> dict[str, torch.Tensor]:
        """Loss terms of one micro-batch, each summed over tokens/dims and examples (not yet divided).

        en, xx: (B, T) EOS-terminated, right-padded ids; ``update`` sets the KL weight, ``step`` (the forward
        counter) the semantic side under ``sem_side="microbatch"`` (:func:`semantic_side`). Returns ``loss`` (the
        weighted sum), the :data:`LOGGED` terms ``recon``, ``trans``, ``kl`` (the sum of ``kl_semantic`` and
        ``kl_language``, both language latents, unweighted), ``adversary`` (the content adversaries' error: squared, or
        the cross-entropy of the words; in training: :mod:`.adversary`), ``sentences``, ``tokens_en``, ``tokens_xx``, and
        ``active_units`` (dimensions of the concatenated posterior means whose variance over the batch is ≥ 0.01:
        a posterior-collapse check).
        """
        cfg, setting = self.cfg, self.setting
        zero = en.new_zeros((), dtype=torch.float)
        t = {"recon": zero, "trans": zero, "kl_sem": zero, "kl_lang": zero, "kl_lang_cost": zero, "adversary": zero}
        if setting.reconstructs == "en":
            mu, logv = self.encoders["semantic"](en)
            means = [mu]
            t["recon"] = self._decoded("en", en, self.latent(mu, logv), cfg.label_smoothing)
            if logv is not None:
                t["kl_sem"] = kl_to_standard_normal(mu, logv).sum()
        elif setting.english_only:  # English to the other language only
            mu, _ = self.encoders["semantic"](en)
            means = [mu]
            t["trans"] = self._decoded(cfg.direction("en->xx"), xx, mu, cfg.label_smoothing)
        else:
            means = self._bilingual_terms(en, xx, step, t)
        beta = self.kl_weight(update)
        trans_weight = cfg.trans_weight if setting.trans_weight is None else setting.trans_weight  # docs/method.md#translation-loss
        kl = t["kl_sem"] + t["kl_lang"]
        loss = (cfg.recon_weight * t["recon"] + beta * (t["kl_sem"] + cfg.language_kl_weight * t["kl_lang_cost"])
                + trans_weight * t["trans"] + t["adversary"])  # the adversary's own loss; its encoder's is reversed
        active = (torch.cat(means, dim=-1).detach().float().var(dim=0) >= 0.01).sum() if en.shape[0] > 1 else 0
        return {"loss": loss, "recon": t["recon"].detach(), "trans": t["trans"].detach(), "kl": kl.detach(),
                "kl_semantic": t["kl_sem"].detach(), "kl_language": t["kl_lang"].detach(),
                "adversary": t["adversary"].detach(),
                "active_units": torch.as_tensor(active), "sentences": torch.tensor(en.shape[0]),
                "tokens_en": (en != cfg.pad_id).sum(), "tokens_xx": (xx != cfg.pad_id).sum()}

    def _decoded(self, decoder: str, tokens: torch.Tensor, cond: torch.Tensor, smoothing: float,
                 word_dropout: float = 0.0) -> torch.Tensor:
        """The loss of ``decoders[decoder]`` teacher-forced on ``tokens`` given ``cond``."""
        pad = self.cfg.pad_id
        keep = tokens != pad
        prev = shift_right(tokens, self.cfg.eos_id, pad)
        if word_dropout and self.training:
            prev = drop_words(prev, word_dropout, pad)
        logits = self.decoders[decoder](prev, cond, keep)
        return token_loss(logits, tokens[keep], pad, smoothing)

    def _bilingual_terms(self, en: torch.Tensor, xx: torch.Tensor, step: int, t: dict) -> list[torch.Tensor]:
        """The translation loss from z_sem of each side, then (BGT and its ablations) the generative path:
        z_sem from one side (:func:`semantic_side`), each language's decoder on ``[z_lang ; z_sem]`` (or z_sem
        alone without language variables), the KL terms and, in training, the content adversaries (each language
        latent against the other side's semantic mean: the translation's meaning). Fills ``t``; returns the
        posterior means."""
        cfg = self.cfg
        mu_en, logv_en = self.encoders["semantic"](en)
        mu_xx, logv_xx = self.encoders["semantic"](xx)
        t["trans"] = (self._decoded(cfg.direction("en->xx"), xx, mu_en, cfg.label_smoothing)
                      + self._decoded(cfg.direction("xx->en"), en, mu_xx, cfg.label_smoothing))
        if self.setting.reconstructs is None:  # translation alone (BILINGUALTRANS)
            return [mu_en, mu_xx]
        side = semantic_side(en.shape[0], cfg.sem_side, step, en.device)[:, None]
        mu_sem = torch.where(side, mu_en, mu_xx)
        means = [mu_sem]
        logv_sem = None if logv_en is None else torch.where(side, logv_en, logv_xx)
        z_sem = self.latent(mu_sem, logv_sem)
        if logv_sem is not None:
            t["kl_sem"] = kl_to_standard_normal(mu_sem, logv_sem).sum()
        for lang, target, translation in zip(cfg.languages, (en, xx), (mu_xx, mu_en)):
            cond = z_sem
            if self.setting.language_latents:
                mu_l, logv_l = self.encoders[lang](target)
                means.append(mu_l)
                if self.training and lang in self.adversaries:
                    t["adversary"] = t["adversary"] + self.adversaries[lang](
                        mu_l, self._adversary_target(lang, target, translation), cfg.content_adversary)
                cond = torch.cat([self.latent(mu_l, logv_l, language=True), z_sem], dim=-1)  # [language ; semantic]
                if logv_l is not None:
                    kl_l = kl_to_standard_normal(mu_l, logv_l)
                    t["kl_lang"] = t["kl_lang"] + kl_l.sum()
                    t["kl_lang_cost"] = t["kl_lang_cost"] + free_bits(kl_l, cfg.language_free_bits)
            # un-smoothed NLL (docs/method.md#losses)
            t["recon"] = t["recon"] + self._decoded(lang, target, cond, 0.0, cfg.word_dropout)
        return means

    def _adversary_target(self, lang: str, tokens: torch.Tensor, translation: torch.Tensor) -> torch.Tensor:
        if self.cfg.adversary_target == "translation":
            return translation
        if lang not in self.content_words:
            raise RuntimeError("a content-words adversary needs the run's tokenizer: call use_tokenizer first")
        return content_bag(tokens, self.content_words[lang])

    # --- generation (style transfer) -----------------------------------------------------------------------

    def generate(self, z_sem: torch.Tensor, z_lang: torch.Tensor | None = None, decoder: str = "en",
                 max_len: int = 100, beam: int = 1, no_repeat_ngram: int = 0) -> list[list[int]]:
        """Decode sentences from latents with ``decoders[decoder]`` (a language, or e.g. ``"en->fr"``), conditioned
        on ``[z_lang ; z_sem]`` for BGT's generative decoders (style transfer: z_lang from the style sentence) and
        on ``z_sem`` alone otherwise: greedy (``beam=1``) or beam search as :func:`.transformer.beam_search`; id
        lists without the final EOS (the best of :meth:`hypotheses`)."""
        return [found[0][1] if found else [] for found in self.hypotheses(z_sem, z_lang, decoder, max_len, beam,
                                                                          no_repeat_ngram)]

    @torch.no_grad()
    def hypotheses(self, z_sem: torch.Tensor, z_lang: torch.Tensor | None = None, decoder: str = "en",
                   max_len: int = 100, beam: int = 1, no_repeat_ngram: int = 0) -> list[list[tuple[float, list[int]]]]:
        """:meth:`generate`'s finished beam hypotheses per row, best first, as ``(score, ids)``: for re-ranking."""
        if not self.decoders:
            raise ValueError("this model was shipped without its decoders (encoders only); style transfer needs a "
                             "model with decoders, such as the shipped bgt-en-fr or a training run")
        if decoder not in self.decoders:
            raise ValueError(f"no decoder {decoder!r}; this {self.cfg.setting} model has {', '.join(self.decoders)}")
        dec, cond = self.decoders[decoder], z_sem if z_lang is None else torch.cat([z_lang, z_sem], dim=-1)
        if cond.shape[-1] != dec.cond_dim:
            raise ValueError(f"decoder {decoder!r} is conditioned on {dec.cond_dim} dimensions, got {cond.shape[-1]}"
                             + ("; pass z_lang as well" if z_lang is None else ""))
        with evaluating(self):
            return beam_hypotheses(dec, cond, self.cfg.eos_id, max_len, beam, no_repeat_ngram)
