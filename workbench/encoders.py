"""The Encoder protocol and the encoders that need no training.

Anything with ``name``, ``dim``, ``fingerprint`` and ``encode(sentences) -> float32 (n, dim)`` can be probed
and evaluated. ``fingerprint`` changes whenever the weights or the tokenizer change; caches key on it.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict
from itertools import chain
from typing import Protocol, runtime_checkable

import numpy as np
import torch
from tqdm.auto import tqdm

from .data.tokenizer import Tokenizer, pair_tokenizer
from .errors import WorkbenchError, check_name, check_sentences
from .models.transformer import SentenceEncoder, TransformerConfig

log = logging.getLogger(__name__)


@runtime_checkable
class Encoder(Protocol):
    """What every encoder offers. It may also have ``languages`` (a tuple of codes it can read)."""

    name: str
    dim: int
    fingerprint: str

    def encode(self, sentences: Sequence[str], batch_size: int = 256,
               show_progress: bool = False) -> np.ndarray: ...


def check_embeddings(encoder: Encoder, embeddings: object, n: int) -> np.ndarray:
    """Validate an encoder's output: a finite float32 array of shape (n, encoder.dim)."""
    if not isinstance(embeddings, np.ndarray):
        raise WorkbenchError(f"encoder {encoder.name!r} returned {type(embeddings).__name__}; "
                             "expected a numpy array")
    if embeddings.shape != (n, encoder.dim):
        raise WorkbenchError(f"encoder {encoder.name!r} returned shape {embeddings.shape}; "
                             f"expected ({n}, {encoder.dim})")
    if embeddings.dtype != np.float32:
        raise WorkbenchError(f"encoder {encoder.name!r} returned dtype {embeddings.dtype}; expected float32")
    if not np.isfinite(embeddings).all():
        bad = int((~np.isfinite(embeddings)).any(axis=1).sum())
        raise WorkbenchError(f"encoder {encoder.name!r} returned NaN/inf for {bad} of {n} sentences")
    return embeddings


def check_language(encoder: Encoder, language: str, what: str) -> None:
    """Raise if ``encoder`` declares the languages it reads and ``language`` is not one of them."""
    languages = getattr(encoder, "languages", None)
    if languages is not None and language not in languages:
        raise WorkbenchError(f"{what} is in {language!r} but encoder {encoder.name!r} reads "
                             f"{', '.join(languages)}")


def readable(encoder: Encoder, languages: Sequence[str], what: str, strict: bool) -> bool:
    """Whether ``encoder`` reads all ``languages``; if not, raise (``strict``) or log a warning and say no."""
    try:
        for language in languages:
            check_language(encoder, language, what)
    except WorkbenchError as err:
        if strict:
            raise
        log.warning("skipped: %s", err)
        return False
    return True


def weights_fingerprint(module: torch.nn.Module, *extra: str) -> str:
    """sha256 over every tensor of ``module`` (names, shapes, bytes) and ``extra`` strings."""
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        h.update(f"{name}{tuple(tensor.shape)}{tensor.dtype}".encode())
        h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    for item in extra:
        h.update(item.encode())
    return h.hexdigest()


def _length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    order = np.argsort(lengths, kind="stable")
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


class NetworkEncoder:
    """An Encoder view of a network mapping padded ids (B, T) to ``(embedding, _)``: a
    :class:`SentenceEncoder` (the test-time embedding is the posterior mean ``mu``) or a paraphrastic encoder. The
    network declares ``output_dim``, ``max_len`` (longer inputs are truncated, EOS kept) and a dataclass ``cfg``.
    """

    def __init__(self, name: str, module: torch.nn.Module, tokenizer: Tokenizer, max_len: int = 256,
                 languages: tuple[str, ...] | None = None):
        self.name, self.module, self.tokenizer = name, module, tokenizer
        self.max_len = min(max_len, module.max_len)
        self.dim, self.languages = module.output_dim, languages or tokenizer.languages
        self.fingerprint = weights_fingerprint(module, tokenizer.digest, json.dumps(asdict(module.cfg)))

    def encode(self, sentences: Sequence[str], batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        return self.encode_ids(self.tokenizer.encode(check_sentences(sentences), max_len=self.max_len), batch_size,
                               show_progress)

    @torch.no_grad()
    def encode_ids(self, ids: Sequence[Sequence[int]], batch_size: int = 256, show_progress: bool = False
                   ) -> np.ndarray:
        """Embeddings of already-tokenised sentences (the tokenizer's id lists, EOS included)."""
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(ids) else lengths
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        device = next(self.module.parameters()).device
        self.module.eval()
        for index in tqdm(_length_sorted_batches(lengths, batch_size), desc=f"encode {self.name}",
                          disable=not show_progress, unit="batch"):
            width = int(lengths[index].max())
            columns = np.arange(width)
            keep = columns < lengths[index, None]  # right padding, gathered from the flat id array
            tokens = np.full((len(index), width), self.tokenizer.pad_id, dtype=np.int64)
            tokens[keep] = flat[(starts[index, None] + columns)[keep]]
            mu, _ = self.module(torch.from_numpy(tokens).to(device))
            out[index] = mu.float().cpu().numpy()
        return out

    def __repr__(self) -> str:
        return f"<Encoder {self.name} dim={self.dim} fp={self.fingerprint[:10]}>"


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


class RandomEmbeddingAverage:
    """Average of a fixed random N(0, 1) sentencepiece-token embedding table (EOS excluded): SP, untrained."""

    def __init__(self, tokenizer: Tokenizer, dim: int = 512, seed: int = 0, name: str = "random-sp-average"):
        self.name, self.tokenizer, self.dim, self.languages = name, tokenizer, dim, tokenizer.languages
        rng = np.random.default_rng(seed)
        self.table = rng.standard_normal((tokenizer.vocab_size, dim), dtype=np.float32)
        self.fingerprint = hashlib.sha256(self.table.tobytes() + tokenizer.digest.encode()).hexdigest()

    def encode(self, sentences: Sequence[str], batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        sentences = check_sentences(sentences)
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        for start in tqdm(range(0, len(sentences), batch_size), desc=f"encode {self.name}",
                          disable=not show_progress, unit="batch"):
            for row, ids in enumerate(self.tokenizer.encode(sentences[start:start + batch_size]), start=start):
                ids = ids[:-1] or ids  # drop EOS unless the sentence is empty
                out[row] = self.table[ids].mean(axis=0)
        return out

    def __repr__(self) -> str:
        return f"<Encoder {self.name} dim={self.dim} fp={self.fingerprint[:10]}>"


UNTRAINED = ("random-transformer", "random-sp-average")


def untrained_encoder(name: str, pair: str = "en-fr", vocab_size: int = 8000, seed: int = 0) -> Encoder:
    """One of the encoders that need no training, on the joint sentencepiece model of ``pair``."""
    check_name("untrained encoder", name, UNTRAINED)
    tokenizer = pair_tokenizer(pair, vocab_size)
    if name == "random-transformer":
        return random_transformer(tokenizer, seed=seed)
    return RandomEmbeddingAverage(tokenizer, seed=seed)


REFERENCE = ("minilm",)  # needs the 'minilm' extra


def named_encoder(name: str, pair: str = "en-fr") -> Encoder:
    """An encoder by name: an untrained one (on ``pair``'s tokenizer) or a reference one (``minilm``)."""
    check_name("encoder", name, [*UNTRAINED, *REFERENCE])
    if name == "minilm":
        from .reference import MiniLMEncoder
        return MiniLMEncoder()
    return untrained_encoder(name, pair)
