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

How the language latents are bottlenecked (``decoder_latent``, ``language_latent_dim``, the KL weight and floor,
word dropout, the content adversary) is configured in :mod:`.bgt_config`.
"""
from __future__ import annotations

import torch
from torch import nn

from .adversary import LanguageAdversaries, content_bag, content_pieces
from .base import SentenceModel, evaluating
from .bgt_config import SEM_SIDES, SETTINGS, BGTConfig
from .bgt_warm_start import from_translation
from .losses import (direction_overlap, drop_words, free_bits, kl_to_standard_normal, punctuation_pieces, token_loss,
                     without_pieces)
from .transformer import IncrementalDecoding, LatentDecoder, SentenceEncoder, beam_hypotheses, shift_right


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

    def __init__(self, cfg: BGTConfig, decoders: bool = True):
        """``decoders=False``: the encoders alone (an encoder-only export: building decoders only to drop them cost
        most of loading one)."""
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
        for lang in {"languages": cfg.languages, "en": ("en",), None: ()}[setting.reconstructs] if decoders else ():
            self.decoders[lang] = decoder(language + cfg.latent_dim)  # on [z_lang ; z_sem], or z_sem alone
        for direction in setting.translates if decoders else ():
            self.decoders[cfg.direction(direction)] = decoder(cfg.latent_dim)
        self.adversaries = LanguageAdversaries(cfg.languages if cfg.content_adversary else (), cfg.adversary_target,
                                               cfg.language_dim, cfg.d_model, cfg.latent_dim, cfg.vocab_size)
        self.content_words: dict[str, torch.Tensor] = {}  # per language, from the run's tokenizer (use_tokenizer)
        self.punctuation: torch.Tensor | None = None  # (V,) the marks hide_punctuation hides (use_tokenizer)

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
        """Which pieces start a content word of each language (:func:`.adversary.content_pieces`): what the
        content-words adversaries predict, and what the independence penalty holds the language latents apart from;
        and which are punctuation marks (:func:`.losses.punctuation_pieces`), for ``hide_punctuation``."""
        if not (self._reads_content_words or self.cfg.hide_punctuation):
            return
        pieces = [tokenizer.sp.id_to_piece(i) for i in range(tokenizer.vocab_size)]
        device = next(self.parameters()).device
        if self._reads_content_words:
            self.content_words = {lang: content_pieces(pieces, lang).to(device) for lang in self.cfg.languages}
        if self.cfg.hide_punctuation:
            self.punctuation = punctuation_pieces(pieces).to(device)

    @property
    def _reads_content_words(self) -> bool:
        return bool(self.cfg.language_independence or (len(self.adversaries) and self.adversaries.target == "words"))

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
    LOGGED = ("recon", "trans", "kl", "kl_semantic", "kl_language", "adversary", "independence")
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
        the cross-entropy of the words; in training: :mod:`.adversary`), ``independence`` (the language latents' CKA
        with their sentences' content words, summed; in training), ``sentences``, ``tokens_en``, ``tokens_xx``, and
        ``active_units`` (dimensions of the concatenated posterior means whose variance over the batch is ≥ 0.01:
        a posterior-collapse check).
        """
        cfg, setting = self.cfg, self.setting
        zero = en.new_zeros((), dtype=torch.float)
        t = {"recon": zero, "trans": zero, "kl_sem": zero, "kl_lang": zero, "kl_lang_cost": zero, "adversary": zero,
             "independence": zero}
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
                + trans_weight * t["trans"] + t["adversary"]  # the adversary's own loss; its encoder's is reversed
                + cfg.language_independence * t["independence"])
        active = (torch.cat(means, dim=-1).detach().float().var(dim=0) >= 0.01).sum() if en.shape[0] > 1 else 0
        return {"loss": loss, "recon": t["recon"].detach(), "trans": t["trans"].detach(), "kl": kl.detach(),
                "kl_semantic": t["kl_sem"].detach(), "kl_language": t["kl_lang"].detach(),
                "adversary": t["adversary"].detach(), "independence": t["independence"].detach(),
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
        logv_sem = None if logv_en is None else torch.where(side, logv_en, logv_xx)
        if self.training and cfg.hide_punctuation:
            mu_sem, logv_sem = self._without_punctuation(en, xx, side[:, 0], mu_sem, logv_sem)
        means = [mu_sem]
        z_sem = self.latent(mu_sem, logv_sem)
        if logv_sem is not None:
            t["kl_sem"] = kl_to_standard_normal(mu_sem, logv_sem).sum()
        for lang, target, translation in zip(cfg.languages, (en, xx), (mu_xx, mu_en)):
            cond = z_sem
            if self.setting.language_latents:
                mu_l, logv_l = self.encoders[lang](target)
                means.append(mu_l)
                bag = self._content_bag(lang, target) if self.training and self._reads_content_words else None
                if self.training and lang in self.adversaries:
                    t["adversary"] = t["adversary"] + self.adversaries.loss(lang, mu_l, translation, bag,
                                                                            cfg.content_adversary)
                if self.training and cfg.language_independence:  # per sentence, as every term (÷ the pairs)
                    t["independence"] = t["independence"] + target.shape[0] * direction_overlap(mu_l, bag)
                cond = torch.cat([self.latent(mu_l, logv_l, language=True), z_sem], dim=-1)  # [language ; semantic]
                if logv_l is not None:
                    kl_l = kl_to_standard_normal(mu_l, logv_l)
                    t["kl_lang"] = t["kl_lang"] + kl_l.sum()
                    t["kl_lang_cost"] = t["kl_lang_cost"] + free_bits(kl_l, cfg.language_free_bits)
            # un-smoothed NLL (docs/method.md#losses)
            t["recon"] = t["recon"] + self._decoded(lang, target, cond, 0.0, cfg.word_dropout)
        return means

    def _without_punctuation(self, en: torch.Tensor, xx: torch.Tensor, side: torch.Tensor, mu: torch.Tensor,
                             logv: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """z_sem's posterior with a ``hide_punctuation`` share of the pairs (drawn anew each batch) read again
        from their semantic side's sentence without its punctuation marks (docs/method.md#hide-punctuation)."""
        if self.punctuation is None:
            raise RuntimeError("hide_punctuation needs the run's tokenizer (which pieces are marks): call "
                               "use_tokenizer first")
        hide = torch.rand(side.shape, device=side.device) < self.cfg.hide_punctuation
        mu, logv = mu.clone(), None if logv is None else logv.clone()
        for rows, tokens in ((hide & side, en), (hide & ~side, xx)):
            if rows.any():
                mu_b, logv_b = self.encoders["semantic"](without_pieces(tokens[rows], self.punctuation,
                                                                        self.cfg.pad_id))
                mu[rows] = mu_b
                if logv is not None:
                    logv[rows] = logv_b
        return mu, logv

    def _content_bag(self, lang: str, tokens: torch.Tensor) -> torch.Tensor:
        if lang not in self.content_words:
            raise RuntimeError("the content words of the sentences (a words adversary, the independence penalty) "
                               "need the run's tokenizer: call use_tokenizer first")
        return content_bag(tokens, self.content_words[lang])

    # --- generation (style transfer) -----------------------------------------------------------------------

    def generate(self, z_sem: torch.Tensor, z_lang: torch.Tensor | None = None, decoder: str = "en",
                 max_len: int = 100, beam: int = 1, no_repeat_ngram: int = 0, z_away: torch.Tensor | None = None,
                 guidance: float = 0.0) -> list[list[int]]:
        """Decode sentences from latents with ``decoders[decoder]`` (a language, or e.g. ``"en->fr"``), conditioned
        on ``[z_lang ; z_sem]`` for BGT's generative decoders (style transfer: z_lang from the style sentence) and
        on ``z_sem`` alone otherwise: greedy (``beam=1``) or beam search as :func:`.transformer.beam_search`; id
        lists without the final EOS (the best of :meth:`hypotheses`, which also says what ``z_away`` and
        ``guidance`` do)."""
        return [found[0][1] if found else [] for found in self.hypotheses(z_sem, z_lang, decoder, max_len, beam,
                                                                          no_repeat_ngram, z_away, guidance)]

    @torch.no_grad()
    def hypotheses(self, z_sem: torch.Tensor, z_lang: torch.Tensor | None = None, decoder: str = "en",
                   max_len: int = 100, beam: int = 1, no_repeat_ngram: int = 0, z_away: torch.Tensor | None = None,
                   guidance: float = 0.0) -> list[list[tuple[float, list[int]]]]:
        """:meth:`generate`'s finished beam hypotheses per row, best first, as ``(score, ids)``: for re-ranking.
        With ``guidance`` γ > 0 and ``z_away`` (another language latent per row), each step's log-probabilities
        are ``(1 + γ) log p(y | z_lang, z_sem) − γ log p(y | z_away, z_sem)``, renormalised (:class:`Guided`)."""
        if not self.decoders:
            raise ValueError("this model was shipped without its decoders (encoders only); style transfer needs a "
                             "model with decoders, such as the shipped bgt-en-fr or a training run")
        if decoder not in self.decoders:
            raise ValueError(f"no decoder {decoder!r}; this {self.cfg.setting} model has {', '.join(self.decoders)}")
        dec, cond = self.decoders[decoder], z_sem if z_lang is None else torch.cat([z_lang, z_sem], dim=-1)
        if cond.shape[-1] != dec.cond_dim:
            raise ValueError(f"decoder {decoder!r} is conditioned on {dec.cond_dim} dimensions, got {cond.shape[-1]}"
                             + ("; pass z_lang as well" if z_lang is None else ""))
        if guidance:
            if z_away is None or z_lang is None or z_away.shape != z_lang.shape:
                raise ValueError("guidance needs z_lang and a z_away of the same shape to steer away from")
            dec, cond = Guided(dec, guidance), torch.cat([cond, torch.cat([z_away, z_sem], dim=-1)], dim=-1)
        with evaluating(self):
            return beam_hypotheses(dec, cond, self.cfg.eos_id, max_len, beam, no_repeat_ngram)


class Guided:
    """A decoder steered toward one language latent and away from another (contrastive guidance, as
    classifier-free guidance steers a diffusion model): called with ``cond = [c_toward ; c_away]``, it returns at
    the last position ``(1 + γ) log p(y | c_toward) − γ log p(y | c_away)``. In style transfer ``c_away`` holds the
    source's own language latent: what the source's form alone makes likely is discounted, so the style's form
    weighs more than the decoder's habit of following the semantic latent (docs/method.md#guidance)."""

    def __init__(self, decoder: LatentDecoder, guidance: float):
        self.decoder, self.guidance = decoder, guidance

    def incremental(self, cond: torch.Tensor) -> GuidedDecoding:
        """Decoding position by position from ``cond = [c_toward ; c_away]`` (B, 2C), for a search."""
        toward, away = cond.chunk(2, dim=-1)
        return GuidedDecoding(self.decoder.incremental(torch.cat([toward, away])), self.guidance)


class GuidedDecoding:
    """:class:`Guided`'s search state: one :class:`~.transformer.IncrementalDecoding` of the B rows conditioned
    toward (rows 0..B-1) and the same rows conditioned away (rows B..2B-1)."""

    def __init__(self, both: IncrementalDecoding, guidance: float):
        self.both, self.guidance = both, guidance

    def step(self, token: torch.Tensor) -> torch.Tensor:
        """token (B,) -> the guided log-probabilities (B, V) of the next position."""
        logp_toward, logp_away = torch.log_softmax(self.both.step(token.repeat(2)).float(), dim=-1).chunk(2)
        return (1 + self.guidance) * logp_toward - self.guidance * logp_away

    def reorder(self, rows: torch.Tensor) -> None:
        self.both.reorder(torch.cat([rows, rows + len(rows)]))
