"""The Encoder protocol, the checks every measurement makes of an encoder, and the encoders anyone can name.

Anything with ``name``, ``dim``, ``fingerprint`` and ``encode(sentences) -> float32 (n, dim)`` can be probed
and evaluated. ``fingerprint`` changes whenever the weights or the tokenizer change; caches key on it. This module
imports no model (nor torch): the named encoders are built by their modules when one is asked for, so the cache,
the CLI's parser and everything that only checks an encoder stay light.
"""
from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from .checks import WorkbenchError, check_name

log = logging.getLogger(__name__)


@runtime_checkable
class Encoder(Protocol):
    """What every encoder offers. It may also have ``languages`` (a tuple of codes it can read)."""

    name: str
    dim: int
    fingerprint: str

    def encode(self, sentences: Sequence[str], batch_size: int = 256,
               show_progress: bool = False) -> np.ndarray: ...


@runtime_checkable
class LayeredEncoder(Encoder, Protocol):
    """An Encoder that can also be read at each of its layers: a Transformer view of a trained model
    (``load(name).encoder(view)``) or a Hugging Face encoder. Layer 0 is the token embeddings, 1…L the blocks,
    each mean-pooled over the sentence. ``layer=-1`` means one thing everywhere: the encoder's sentence
    embedding, what ``encode`` gives when no layer is asked for — BGT's ``mu`` (a projection of the top block,
    so it is offered beside 0…L), a Hugging Face model's top layer with the folder's own pooling (so -1 and L
    are the same vectors there, and ``layers`` lists L). Other negative numbers are not layers."""

    layer: int
    base_name: str  # the network's name, whichever layer is read

    @property
    def layers(self) -> tuple[int, ...]: ...

    def at_layer(self, layer: int) -> "LayeredEncoder": ...

    def encode_layers(self, sentences: Sequence[str], layers: Sequence[int], batch_size: int = 256,
                      show_progress: bool = False, out: Mapping | None = None, part: tuple[int, int] = (0, 1)
                      ) -> Mapping:
        """``{layer: (n, dim) float32}`` from one pass; with ``out``, each batch's rows written into ``out[layer]``
        (``out[layer][index] = rows``) as they are pooled, and ``out`` returned — how the cache streams a sweep
        to disk without holding every layer; ``part=(rank, world)``, only every world-th batch from the rank-th
        (how torchrun's processes share a sweep). An encoder whose ``encode_layers`` takes neither still works: its
        arrays are stored whole, by one process."""


def check_contract(encoder: object) -> Encoder:
    """``encoder`` if it keeps the :class:`Encoder` contract — a non-empty ``name``, a ``dim``, a ``fingerprint``
    and an ``encode(sentences, batch_size=..., show_progress=...)`` — else one sentence saying what is missing
    (a DataFrame or a task name passed as the encoder, an object without ``name``, an ``encode`` that takes no
    ``batch_size``), before any work."""
    what = type(encoder).__name__
    missing = [attr for attr in ("name", "dim", "fingerprint", "encode") if not hasattr(encoder, attr)]
    if missing:
        raise WorkbenchError(f"a {what} is not an encoder: it lacks {', '.join(missing)} (an encoder has name, dim, "
                             "fingerprint and encode(sentences, batch_size=256, show_progress=False); "
                             "see workbench.Encoder)")
    if not isinstance(encoder.name, str) or not encoder.name.strip():
        raise WorkbenchError(f"encoder name {encoder.name!r}: give the encoder a non-empty name (it labels results)")
    if not callable(encoder.encode):
        raise WorkbenchError(f"encoder {encoder.name!r}: its encode is not callable")
    try:
        parameters = inspect.signature(encoder.encode).parameters
    except (TypeError, ValueError):  # a builtin without a signature: trusted
        return encoder
    keywords = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    lacking = [k for k in ("batch_size", "show_progress") if k not in parameters and not keywords]
    if lacking:
        raise WorkbenchError(f"encoder {encoder.name!r}: its encode() takes no {' or '.join(lacking)}; the workbench "
                             "calls encode(sentences, batch_size=..., show_progress=...) (accept them, or **kwargs)")
    return encoder


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


def unread(encoder: Encoder, languages: Sequence[str]) -> list[str]:
    """Which of ``languages`` ``encoder`` cannot read: none when it does not declare its languages (an encoder
    that does not say is trusted to read what it is given)."""
    reads = getattr(encoder, "languages", None)
    return [] if reads is None else [lang for lang in dict.fromkeys(languages) if lang not in reads]


def check_reads(encoder: Encoder, languages: Sequence[str], what: str, strict: bool = True) -> bool:
    """Whether ``encoder`` reads every language of ``what`` (the one place this is decided); if not, raise a
    message naming both sides (``strict``) or log it as a skip and say no."""
    if not unread(encoder, languages):
        return True
    languages = list(dict.fromkeys(languages))
    holds = (f"is in {languages[0]!r}" if len(languages) == 1 else
             f"holds {' and '.join(languages)} sentences")
    message = f"{what} {holds} but encoder {encoder.name!r} reads {', '.join(encoder.languages) or 'nothing'}"
    if len(languages) > 1:
        message += ": use an encoder that reads all of them (e.g. BGT's semantic view), not a language encoder"
    if strict:
        raise WorkbenchError(message)
    log.warning("skipped: %s", message)
    return False


# Encoders anyone can name (``--encoder NAME``, ``--against NAME``): name -> (what it is, the function that builds
# it from a language pair, as "module:function", imported only when the encoder is asked for).
NAMED_ENCODERS = {
    "random-transformer": ("an untrained Transformer encoder on the pair's sentencepiece model (the random-init "
                           "reference)", "workbench.models.untrained:random_transformer_of"),
    "random-sp-average": ("the average of random sentencepiece embeddings",
                          "workbench.models.untrained:random_sp_average_of"),
    "minilm": ("all-MiniLM-L6-v2, offline (the 'minilm' extra)", "workbench.models.huggingface:minilm_of"),
}
HF_PREFIX = "hf:"  # hf:PATH[@LAYER]: any Hugging Face model folder (the 'hf' extra)
HF_POOLINGS = ("mean", "last", "cls", "model")  # how a Hugging Face model's token states become one vector
HF_DTYPES = ("float32", "bfloat16", "float16")  # the precisions a Hugging Face model can run in


def named_encoder(name: str, pair: str = "en-fr", **hf_options) -> Encoder:
    """An encoder by name (:data:`NAMED_ENCODERS`, untrained ones on ``pair``'s tokenizer), or
    ``hf:PATH[@LAYER]``: the Hugging Face model in folder PATH (or already in the Hugging Face cache) at LAYER
    (default: its top layer), mean-pooled unless ``hf_options`` say otherwise (``pooling``, ``dtype``,
    ``device``: :func:`workbench.hf_encoder`'s)."""
    if name.startswith(HF_PREFIX):
        path, _, layer = name[len(HF_PREFIX):].rpartition("@")
        if not path or not layer.lstrip("-").isdigit():
            path, layer = name[len(HF_PREFIX):], "-1"
        if not path:
            raise WorkbenchError("hf: needs a model folder or name, e.g. hf:path/to/model@3")
        return _built_by("workbench.models.huggingface:hf_encoder")(path, layer=int(layer), **hf_options)
    check_name("encoder", name, [*NAMED_ENCODERS, f"{HF_PREFIX}PATH[@LAYER]"])
    if hf_options:
        raise WorkbenchError(f"{', '.join(hf_options)} apply to a Hugging Face encoder ({HF_PREFIX}PATH), not to "
                             f"{name}")
    return _built_by(NAMED_ENCODERS[name][1])(pair)


def _built_by(where: str):
    """The function ``"module:function"`` names (its module imported now, not with this one)."""
    module, _, function = where.partition(":")
    return getattr(importlib.import_module(module), function)
