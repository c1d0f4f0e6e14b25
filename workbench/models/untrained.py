"""The encoders that need no training: the paper's random-init Transformer and random sentencepiece-embedding
averages, the references a trained encoder has to beat."""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import torch

from ..checks import check_batch_size, check_name, check_sentences, check_text
from ..data.tokenizer import Tokenizer, pair_tokenizer
from ..progress import progress_bar
from .base import NamedEncoder, NetworkEncoder
from .transformer import SentenceEncoder, TransformerConfig


def random_transformer(tokenizer: Tokenizer, cfg: TransformerConfig | None = None, seed: int = 0,
                       name: str = "random-transformer") -> NetworkEncoder:
    """The paper's "random encoder": a semantic encoder at initialisation (no training), embedding = mu."""
    cfg = cfg or TransformerConfig(vocab_size=tokenizer.vocab_size, dropout=0.0)
    if cfg.vocab_size != tokenizer.vocab_size:
        raise ValueError(f"config vocab_size={cfg.vocab_size} differs from the tokenizer's {tokenizer.vocab_size}")
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        module = SentenceEncoder(cfg, with_logv=False)
    finally:
        torch.random.set_rng_state(generator_state)
    return NetworkEncoder(name, module, tokenizer)


class RandomEmbeddingAverage(NamedEncoder):
    """Average of a fixed random N(0, 1) sentencepiece-token embedding table (EOS excluded): SP, untrained."""

    def __init__(self, tokenizer: Tokenizer, dim: int = 512, seed: int = 0, name: str = "random-sp-average"):
        self.name, self.tokenizer, self.dim, self.languages = name, tokenizer, dim, tokenizer.languages
        rng = np.random.default_rng(seed)
        self.table = rng.standard_normal((tokenizer.vocab_size, dim), dtype=np.float32)
        self.fingerprint = hashlib.sha256(self.table.tobytes() + tokenizer.digest.encode()).hexdigest()

    def encode(self, sentences: Sequence[str], batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        sentences, batch_size = check_sentences(sentences), check_batch_size(batch_size)
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        for start in progress_bar(range(0, len(sentences), batch_size), desc=f"encode {self.name}",
                                  disable=not show_progress, unit="batch"):
            for row, ids in enumerate(self.tokenizer.encode(sentences[start:start + batch_size]), start=start):
                ids = ids[:-1] or ids  # drop EOS unless the sentence is empty
                out[row] = self.table[ids].mean(axis=0)
        return out


UNTRAINED = ("random-transformer", "random-sp-average")


def untrained_encoder(name: str, pair: str = "en-fr", vocab_size: int = 8000, seed: int = 0):
    """One of the encoders that need no training, on the joint sentencepiece model of ``pair``."""
    check_name("untrained encoder", name, UNTRAINED)
    tokenizer = pair_tokenizer(check_text(pair, "pair"), vocab_size)
    if name == "random-transformer":
        return random_transformer(tokenizer, seed=seed)
    return RandomEmbeddingAverage(tokenizer, seed=seed)


def random_transformer_of(pair: str) -> NetworkEncoder:
    """``--encoder random-transformer``: on ``pair``'s tokenizer."""
    return untrained_encoder("random-transformer", pair)


def random_sp_average_of(pair: str) -> RandomEmbeddingAverage:
    """``--encoder random-sp-average``: on ``pair``'s tokenizer."""
    return untrained_encoder("random-sp-average", pair)
