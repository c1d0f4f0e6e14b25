"""Paraphrastic sentence encoders trained on translation pairs: SP and BILSTM (Wieting et al. 2019; docs/method.md#baselines).

* **SP**: a sentence is the average of its sentencepiece embeddings (one table for both languages).
* **BILSTM**: a one-layer bidirectional LSTM over the same embeddings, states pooled over time (``pooling``:
  ``"max"`` (the default) or ``"mean"``; the paper does not say which), 2 × ``hidden`` dimensions.

Both are trained with the margin loss ``max(0, δ − cos(e_s, e_t) + cos(e_s, e_t'))``, δ = 0.4, where the negative
``t'`` is the translation most similar to ``s`` among the other pairs of the mega-batch. Here the mega-batch is
the Trainer's micro-batch (a token budget of several ordinary batches), so negatives come from hundreds of
pairs. The encoder is shared by both languages.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .base import ModelConfig, SentenceModel

SETTINGS = ("sp", "bilstm")


# SP / BILSTM (docs/method.md#baselines): Adam at a fixed lr (the paper's 1e-3; tiny uses 1e-2 to learn in seconds), no
# warmup; the micro-batch is the mega-batch the hardest negatives come from, so it is large. These replace the
# run presets' values (workbench.training.recipes.PRESETS) of the same name.
PRESETS = {
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


@dataclass
class ParaphrasticConfig(ModelConfig):
    vocab_size: int
    languages: tuple[str, str] = ("en", "fr")
    setting: str = "sp"
    dim: int = 1024  # embedding size (SP: also the sentence size)
    hidden: int = 512  # BILSTM units per direction
    pooling: str = "max"
    dropout: float = 0.0
    shuffle_prob: float = 0.0  # BILSTM input-token shuffling (Wieting & Gimpel 2017), applied in training
    margin: float = 0.4
    max_len: int = 1024
    pad_id: int = 0
    eos_id: int = 3

    def __post_init__(self):
        self.languages = tuple(self.languages)
        problems = self.size_problems()
        if problems:
            raise ValueError("; ".join(problems))
        if self.setting not in SETTINGS:
            raise ValueError(f"setting {self.setting!r} is not one of {', '.join(SETTINGS)}")
        if self.pooling not in ("max", "mean"):
            raise ValueError(f"pooling {self.pooling!r} is not 'max' or 'mean'")


class EmbeddingAverage(nn.Module):
    """Mean of the token embeddings over non-pad positions, EOS excluded: (B, T) ids -> ((B, dim), None)."""

    def __init__(self, cfg: ParaphrasticConfig):
        super().__init__()
        self.cfg, self.output_dim, self.max_len = cfg, cfg.dim, cfg.max_len
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=cfg.pad_id)
        nn.init.normal_(self.embed.weight, std=cfg.dim ** -0.5)
        with torch.no_grad():
            self.embed.weight[cfg.pad_id].zero_()
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, None]:
        keep = (tokens != self.cfg.pad_id) & (tokens != self.cfg.eos_id)
        keep[:, 0] |= tokens[:, 0] == self.cfg.eos_id  # an empty sentence keeps its EOS
        if not (self.training and self.cfg.dropout > 0):  # no per-token dropout: a fused bag mean, no (B, T, dim),
            counts = keep.sum(1)  # over the kept ids alone (2-3x faster than a padded bag with padding_idx)
            return F.embedding_bag(tokens[keep], self.embed.weight, counts.cumsum(0) - counts, mode="mean"), None
        weights = keep.float().unsqueeze(-1)
        return (self.drop(self.embed(tokens)) * weights).sum(1) / weights.sum(1).clamp_min(1.0), None

    def pooled_flat(self, ids: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """The eval-mode :meth:`forward` of sentences given unpadded: all their ids in one tensor, and where each
        sentence starts in it (the same bags, so the same vectors)."""
        keep = (ids != self.cfg.pad_id) & (ids != self.cfg.eos_id)
        keep[starts] |= ids[starts] == self.cfg.eos_id  # an empty sentence keeps its EOS
        offsets = keep.cumsum(0)[starts] - keep[starts].long()  # kept ids before each sentence
        return self.pooled_bags(ids[keep], offsets)

    def pooled_bags(self, ids: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """The mean embedding of each bag: ``ids`` the bags one after another, ``starts`` where each begins — what
        :meth:`pooled_flat` averages, as the tokenizer's ``encode_bags`` gives it (no EOS to drop)."""
        return F.embedding_bag(ids, self.embed.weight, starts, mode="mean")


class BiLSTMEncoder(nn.Module):
    """Bidirectional LSTM over the token embeddings, max- or mean-pooled over non-pad positions."""

    def __init__(self, cfg: ParaphrasticConfig):
        super().__init__()
        self.cfg, self.output_dim, self.max_len = cfg, 2 * cfg.hidden, cfg.max_len
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=cfg.pad_id)
        nn.init.normal_(self.embed.weight, std=cfg.dim ** -0.5)
        self.lstm = nn.LSTM(cfg.dim, cfg.hidden, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, None]:
        keep = tokens != self.cfg.pad_id
        lengths = keep.sum(1).clamp_min(1)
        if self.training and self.cfg.shuffle_prob > 0:
            tokens = shuffle_tokens(tokens, lengths, self.cfg.shuffle_prob)
        packed = nn.utils.rnn.pack_padded_sequence(self.drop(self.embed(tokens)), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        states, _ = self.lstm(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=tokens.shape[1])
        mask = keep.unsqueeze(-1)
        if self.cfg.pooling == "max":
            return states.masked_fill(~mask, float("-inf")).max(1).values, None
        return (states * mask).sum(1) / lengths.unsqueeze(-1), None


def shuffle_tokens(tokens: torch.Tensor, lengths: torch.Tensor, prob: float) -> torch.Tensor:
    """With probability ``prob`` per sentence, permute its tokens before the final EOS."""
    out = tokens.clone()
    for row in torch.nonzero(torch.rand(len(tokens)) < prob).flatten().tolist():
        n = int(lengths[row]) - 1
        if n > 1:
            out[row, :n] = tokens[row, torch.randperm(n)]
    return out


class Paraphrastic(SentenceModel):
    """SP or BILSTM with the mega-batch margin loss; ``encoder("semantic")`` is the sentence encoder."""

    def __init__(self, cfg: ParaphrasticConfig):
        super().__init__()
        self.cfg = cfg
        self.encoders = nn.ModuleDict({"semantic": EmbeddingAverage(cfg) if cfg.setting == "sp"
                                       else BiLSTMEncoder(cfg)})

    LOGGED = ("margin_violations",)

    def forward(self, en: torch.Tensor, xx: torch.Tensor, update: int = 0, step: int = 0
                ) -> dict[str, torch.Tensor]:
        """Margin loss of one mega-batch, summed over its pairs: each English sentence against its translation
        and the hardest other translation in the batch."""
        source = F.normalize(self.encoders["semantic"](en)[0], dim=-1)
        target = F.normalize(self.encoders["semantic"](xx)[0], dim=-1)
        cosines = source @ target.t()  # (B, B): row i = sentence i against every translation
        positive = cosines.diagonal()
        others = cosines.masked_fill(torch.eye(len(cosines), dtype=torch.bool, device=cosines.device), float("-inf"))
        hardest = others.max(dim=1).values if len(cosines) > 1 else torch.full_like(positive, -1.0)
        hinge = F.relu(self.cfg.margin - positive + hardest)
        pad = self.cfg.pad_id
        return {"loss": hinge.sum(), "margin_violations": (hinge > 0).sum(),
                "sentences": torch.tensor(en.shape[0]), "tokens_en": (en != pad).sum(), "tokens_xx": (xx != pad).sum()}
