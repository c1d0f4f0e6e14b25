"""What the trainable sentence models share: config (de)serialisation and their Encoder views."""
from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, fields
from itertools import chain
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from ..checks import WorkbenchError, check_batch_size, check_name, check_sentences, number, whole
from ..data.tokenizer import Tokenizer
from ..progress import progress_bar


class ModelConfig:
    """Mixin for the model config dataclasses: the dict stored in ``config.json`` and back, and the checks every
    config shares."""

    RETUNABLE: ClassVar[tuple[str, ...]] = ()  # fields a run initialised from a trained model may change
    # fields a run fixes from its recipe when it starts (run_settings) and every resume keeps, whatever the recipe
    # says then (a recipe that names another value is refused: it would not continue the run)
    KEPT_FROM_START: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def run_settings(cls, run, tokenizer=None) -> dict:
        """Fields a training run sets beyond its ``overrides`` (``run``: the TrainConfig; ``tokenizer``: the run's,
        None when the recipe is only checked)."""
        return {}

    def size_problems(self) -> list[str]:
        """What is wrong with the sizes: each ``int`` field (the token ids aside) must be a positive integer,
        the token ids integers below ``vocab_size``, each dropout-like rate a number in [0, 1)."""
        problems = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int" and f.name not in ("pad_id", "eos_id"):
                if not whole(value):
                    problems.append(f"{f.name} must be a positive integer, not {value!r}")
            elif f.name in ("dropout", "shuffle_prob") and not number(value, 0, 1, open_high=True):
                problems.append(f"{f.name} must be a number in [0, 1), not {value!r}")
        vocab = getattr(self, "vocab_size", None)
        for name in ("pad_id", "eos_id"):
            value = getattr(self, name, 0)
            if not whole(value, 0, vocab - 1 if isinstance(vocab, int) else math.inf):
                problems.append(f"{name} must be an integer in [0, vocab_size), not {value!r}")
        return problems

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict):
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise WorkbenchError(f"unknown model config keys {unknown}; valid: {', '.join(sorted(known))}")
        return cls(**data)


class SentenceModel(nn.Module):
    """A model whose ``encoders`` (a ModuleDict of networks mapping ids to ``(embedding, _)``) give sentence
    embeddings; subclasses say which languages each view reads (:meth:`view_languages`).

    What the Trainer sees of a trainable model: ``forward(en, xx, update, step)`` returns ``loss`` (summed over the
    micro-batch's pairs), the counts ``sentences``, ``tokens_en``, ``tokens_xx`` and the terms named here: the
    :data:`LOGGED` ones are summed over an update's micro-batches and logged per pair (and per token where in
    :data:`PER_TOKEN`), the :data:`LAST` ones logged as the last micro-batch gave them; :meth:`schedule` adds
    values that depend on the update alone."""

    LOGGED: tuple[str, ...] = ()
    PER_TOKEN: tuple[str, ...] = ()
    LAST: tuple[str, ...] = ()
    # submodules a run trains but the model never needs afterwards (BGT's content adversaries): an encoder-only
    # model goes without them, one shipped with its decoders keeps them for a run started from it, and a run
    # started from a model without them (or with another shape of them) begins them afresh (:meth:`completed_state`)
    TRAINING_ONLY: ClassVar[tuple[str, ...]] = ()

    def use_tokenizer(self, tokenizer) -> None:
        """What a training run's model takes from its tokenizer beyond the ids (default: nothing)."""

    def parameter_groups(self) -> list[dict]:
        """The optimiser's parameter groups; a group's ``lr_scale`` multiplies the schedule's learning rate."""
        return [{"params": list(self.parameters())}]

    def completed_state(self, state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``state`` fit for a strict ``load_state_dict``: a training-only part (e.g. one language's adversary)
        that ``state`` lacks, or holds in another shape (another adversary target), is this model's own (fresh),
        and what this model has no place for is left out; every other tensor must still match."""
        def training_only(key: str) -> bool:
            return key.split(".", 1)[0] in self.TRAINING_ONLY

        def part(key: str) -> str:
            return ".".join(key.split(".", 2)[:2])
        own = self.state_dict()
        misfits = {part(k) for k, v in own.items()
                   if training_only(k) and (k not in state or state[k].shape != v.shape)}
        return {**{k: v for k, v in own.items() if training_only(k) and part(k) in misfits},
                **{k: v for k, v in state.items() if not training_only(k) or (k in own and part(k) not in misfits)}}

    def schedule(self, update: int) -> dict[str, float]:
        return {}

    def warm_start(self, source_config, weights: dict) -> list[str]:
        """Initialise from a trained model of another kind (``source_config``, its ``weights``) before update 0;
        returns the names of the parameters taken. A kind that cannot start from another refuses."""
        raise WorkbenchError(f"a {self.cfg.setting} model cannot start from a {source_config.setting} model")

    @property
    def views(self) -> tuple[str, ...]:
        """Names of the networks that give sentence embeddings (``semantic``, and language encoders)."""
        return tuple(self.encoders)

    def view_languages(self, view: str) -> tuple[str, ...]:
        return self.cfg.languages

    def encoder(self, view: str = "semantic", tokenizer=None, layer: int = -1):
        """An Encoder (``name``, ``dim``, ``fingerprint``, ``encode``) over one network: ``"semantic"`` or a
        language encoder (``"en"``, ``"fr"``, ...). Uses the tokenizer :func:`workbench.load` attached.
        ``layer``: -1 (default) the sentence embedding ``mu``; 0…L one layer's mean-pooled states (Transformer
        encoders; see :class:`NetworkEncoder`)."""
        check_name("encoder view", view, self.views)
        tokenizer = tokenizer or getattr(self, "tokenizer", None)
        if tokenizer is None:
            raise ValueError("this model has no tokenizer attached; load it with workbench.load or pass tokenizer=")
        return NetworkEncoder(view_name(self, self.cfg.setting, view), self.encoders[view], tokenizer,
                              languages=self.view_languages(view), layer=layer)


@contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """``model`` in eval mode (no dropout) for the block, then in the mode it was in, whatever the block raised."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def view_name(model, kind: str, view: str) -> str:
    """An encoder's name: the model's own (``model.name``, which :func:`~workbench.load` sets from its folder: a
    shipped or exported model's name, a run's) and the view, so two models' results never share a name; a model
    built in memory is named by its kind and languages."""
    return f"{getattr(model, 'name', None) or kind + '-' + '-'.join(model.cfg.languages)}:{view}"


def weights_fingerprint(module: torch.nn.Module, *extra: str) -> str:
    """sha256 over every tensor of ``module`` (names, shapes, bytes) and ``extra`` strings."""
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        h.update(f"{name}{tuple(tensor.shape)}{tensor.dtype}".encode())
        h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    for item in extra:
        h.update(item.encode())
    return h.hexdigest()


def module_fingerprint(module: torch.nn.Module, *extra: str) -> str:
    """:func:`weights_fingerprint`, remembered on ``module`` until a tensor of it is replaced or changed in place
    (an optimizer step bumps each tensor's version counter), so every view, layer and widget over unchanged weights
    shares one hashing."""
    state = module.state_dict()
    key = (tuple((name, t.data_ptr(), t._version) for name, t in state.items()), extra)
    memo = getattr(module, "_workbench_fingerprint", None)
    if memo is None or memo[0] != key:
        memo = (key, weights_fingerprint(module, *extra))
        module._workbench_fingerprint = memo
    return memo[1]


def _check_layer(module: torch.nn.Module, layer: int, name: str) -> int:
    """``layer`` if ``module`` has it: -1 (the sentence embedding) always, 0…L for a Transformer encoder."""
    if layer == -1 and isinstance(layer, int):
        return layer
    if not hasattr(module, "pooled_layers"):
        raise WorkbenchError(f"{name} has no layers to choose from ({type(module).__name__}): only layer=-1, its "
                             "sentence embedding; layers exist for the Transformer encoders (BGT and its ablations)")
    top = len(module.layers)
    if not whole(layer, 0, top):
        raise WorkbenchError(f"layer {layer!r} does not exist in {name}: 0 (embeddings) to {top} (the top block's "
                             "mean), or -1 (the sentence embedding, mu)")
    return layer


def check_parts(out, part, repeated: bool) -> None:
    """``encode_layers``' ``out`` and ``part`` taken together: a share of the batches leaves the other rows unset,
    so it writes only into ``out``; and ``out`` gets each layer once."""
    if not (isinstance(part, tuple) and len(part) == 2 and whole(part[1]) and whole(part[0], 0, part[1] - 1)):
        raise WorkbenchError(f"part={part!r}: give (rank, world size), 0 <= rank < world size")
    if part != (0, 1) and out is None:
        raise WorkbenchError("part= encodes a share of the batches, whose rows go into out=; give out= too")
    if out is not None and repeated:
        raise WorkbenchError("with out=, give each layer once (a Hugging Face model's -1 is its top layer)")


# At most this many token positions (padding included) in a batch on a CPU: sorted by length, a batch of 256
# sentences is as wide as its longest, and the longest few of a short list widen the last batch several times over
# (200 probe-pool sentences: 5.3x their tokens). Capped, the random Transformer encodes those 200 in 0.9 s instead
# of 3.9 s, 1,000 in 3.2 s instead of 7.2 s and STS16 in 5.5 s instead of 6.8 s (1 thread; bgt-en-fr 1.1-2.4x).
# On a GPU, where a batch's padding costs little and each batch a launch, batches stay ``batch_size`` sentences.
CPU_BATCH_TOKENS = 2048


def batch_tokens(device: str | torch.device) -> int | None:
    """The cap :func:`length_sorted_batches` puts on a batch's padded positions on ``device``."""
    return CPU_BATCH_TOKENS if torch.device(device).type == "cpu" else None


def length_sorted_batches(lengths: np.ndarray, batch_size: int, max_tokens: int | None = None
                           ) -> list[np.ndarray]:
    """The indices of ``lengths`` sorted by length, cut into batches of at most ``batch_size`` sentences and (if
    given) ``max_tokens`` positions once padded (a longer sentence alone)."""
    batch_size = check_batch_size(batch_size)
    order = np.argsort(lengths, kind="stable")
    if max_tokens is None:
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    ordered, batches, start = np.asarray(lengths)[order], [], 0
    while start < len(order):  # a batch's width is its last (longest) sentence's length
        rows = np.arange(1, min(batch_size, len(order) - start) + 1)
        end = start + max(1, int(np.count_nonzero(rows * ordered[start:start + len(rows)] <= max_tokens)))
        batches.append(order[start:end])
        start = end
    return batches


class NamedEncoder:
    """Base of the workbench's Encoder classes: one way to show an encoder (name, size, fingerprint)."""

    # the fingerprint is a digest of what the encoder computes with (weights, tokenizer, config): the same
    # fingerprint under another name is the same network renamed (a copied or exported model), not a clash
    content_fingerprint = True

    def __repr__(self) -> str:
        return f"<Encoder {self.name} dim={self.dim} fp={self.fingerprint[:10]}>"


class NetworkEncoder(NamedEncoder):
    """An Encoder view of a network mapping padded ids (B, T) to ``(embedding, _)``: a
    :class:`SentenceEncoder` (the test-time embedding is the posterior mean ``mu``) or a paraphrastic encoder. The
    network declares ``output_dim``, ``max_len`` (longer inputs are truncated, EOS kept) and a dataclass ``cfg``.

    ``layer``: -1 (default) is the network's sentence embedding (``mu``); for a Transformer encoder, 0…L is the
    masked mean of one layer's token states instead (0: the embedding layer, k: block k), see
    :meth:`SentenceEncoder.pooled_layers`. Each layer is its own encoder, with its own fingerprint.
    """

    def __init__(self, name: str, module: torch.nn.Module, tokenizer: Tokenizer, max_len: int = 256,
                 languages: tuple[str, ...] | None = None, layer: int = -1):
        self.module, self.tokenizer, self.base_name = module, tokenizer, name
        self.max_len = min(max_len, module.max_len)
        self.languages = languages or tokenizer.languages
        self._read_at(layer)

    def _read_at(self, layer: int) -> None:
        self.layer = _check_layer(self.module, layer, self.base_name)
        self.name = self.base_name if layer == -1 else f"{self.base_name}@{layer}"
        self.dim = self._dim(layer)

    @property
    def weights(self) -> str:
        """The digest of the network's tensors, tokenizer and config: hashed when first asked for (a view that is
        only encoded with, as in the Trainer's STS-B dev, hashes nothing) and once per state of the weights."""
        return module_fingerprint(self.module, self.tokenizer.digest, json.dumps(asdict(self.module.cfg)))

    @property
    def fingerprint(self) -> str:
        return (self.weights if self.layer == -1  # as before layers existed: cached entries stay valid
                else hashlib.sha256(f"{self.weights}|layer {self.layer}".encode()).hexdigest())

    def _dim(self, layer: int) -> int:
        return self.module.output_dim if layer == -1 else self.module.cfg.d_model

    @property
    def layers(self) -> tuple[int, ...]:
        """The layers this network offers: 0…L where it has them, and -1 (its sentence embedding)."""
        blocks = getattr(self.module, "layers", None) if hasattr(self.module, "pooled_layers") else None
        return (*range(len(blocks) + 1), -1) if blocks is not None else (-1,)

    def at_layer(self, layer: int) -> "NetworkEncoder":
        """The same network read at another layer (the weights' digest is shared)."""
        other = copy.copy(self)
        other._read_at(layer)
        return other

    def encode(self, sentences: Sequence[str], batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        return self.encode_layers(sentences, (self.layer,), batch_size, show_progress)[self.layer]

    def encode_ids(self, ids: Sequence[Sequence[int]], batch_size: int = 256, show_progress: bool = False
                   ) -> np.ndarray:
        """Embeddings of already-tokenised sentences (the tokenizer's id lists, EOS included)."""
        return self._encode_ids(ids, (self.layer,), batch_size, show_progress)[self.layer]

    def encode_layers(self, sentences: Sequence[str], layers: Sequence[int], batch_size: int = 256,
                      show_progress: bool = False, out: Mapping | None = None, part: tuple[int, int] = (0, 1)
                      ) -> Mapping:
        """Every layer of ``layers`` from one forward pass per batch: ``{layer: (n, dim of that layer)}``, or the
        rows written into ``out[layer]`` (anything that takes ``out[layer][index] = rows``: the cache's streamed
        entries) and ``out`` returned. ``part=(rank, world)``: only every world-th batch from the rank-th (the
        batches are the same in every process, so torchrun's processes together write what one would)."""
        for layer in layers:
            _check_layer(self.module, layer, self.base_name)
        check_parts(out, part, len(set(layers)) < len(layers))
        sentences, layers = check_sentences(sentences), tuple(dict.fromkeys(layers))
        if layers == (-1,) and hasattr(self.module, "pooled_bags"):  # an average of piece embeddings
            flat, lengths = self.tokenizer.encode_bags(sentences, self.max_len)
            return self._encode_arrays(flat, lengths, layers, batch_size, show_progress, out, part, bags=True)
        ids = self.tokenizer.encode(sentences, max_len=self.max_len)
        return self._encode_ids(ids, layers, batch_size, show_progress, out, part)

    def _encode_ids(self, ids: Sequence[Sequence[int]], layers: tuple[int, ...], batch_size: int,
                    show_progress: bool, out: Mapping | None = None, part: tuple[int, int] = (0, 1)) -> Mapping:
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        return self._encode_arrays(flat, lengths, layers, batch_size, show_progress, out, part)

    @torch.no_grad()
    def _encode_arrays(self, flat: np.ndarray, lengths: np.ndarray, layers: tuple[int, ...], batch_size: int,
                       show_progress: bool, out: Mapping | None = None, part: tuple[int, int] = (0, 1),
                       bags: bool = False) -> Mapping:
        """:meth:`_encode_ids` of the ids as one array and each sentence's length; ``bags``: the tokenizer's
        ``encode_bags`` (pieces without EOS) for a module's ``pooled_bags``."""
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(lengths) else lengths
        if out is None:
            out = {layer: np.empty((len(lengths), self._dim(layer)), dtype=np.float32) for layer in layers}
        device = next(self.module.parameters()).device
        self.module.eval()
        if bags or (layers == (-1,) and hasattr(self.module, "pooled_flat") and lengths.all()):  # no padding
            pool = self.module.pooled_bags if bags else self.module.pooled_flat
            return self._encode_flat(flat, lengths, starts, batch_size, show_progress, out, part, device, pool)
        batches = length_sorted_batches(lengths, batch_size, batch_tokens(device))[part[0]::part[1]]
        for index in progress_bar(batches, desc=f"encode {self.name}", disable=not show_progress, unit="batch"):
            width = int(lengths[index].max())
            columns = np.arange(width)
            keep = columns < lengths[index, None]  # right padding, gathered from the flat id array
            tokens = np.full((len(index), width), self.tokenizer.pad_id, dtype=np.int64)
            tokens[keep] = flat[(starts[index, None] + columns)[keep]]
            tokens = torch.from_numpy(tokens).to(device)
            if layers == (-1,):
                pooled = {-1: self.module(tokens)[0]}
            else:
                hidden = self.module.pooled_layers(tokens)
                pooled = {layer: (self.module.hidden2mean(hidden[-1]) if layer == -1 else hidden[layer])
                          for layer in layers}
            for layer, vectors in pooled.items():
                out[layer][index] = vectors.float().cpu().numpy()
        return out

    def _encode_flat(self, flat: np.ndarray, lengths: np.ndarray, starts: np.ndarray, batch_size: int,
                     show_progress: bool, out: Mapping, part: tuple[int, int], device, pool) -> Mapping:
        """:meth:`_encode_arrays` of a module that pools a bag of its ids (``pool``: its ``pooled_flat`` or
        ``pooled_bags``): consecutive batches straight from the flat id array (SP on raw text spent a third of its
        time padding batches)."""
        chunks = range(0, len(lengths), check_batch_size(batch_size))[part[0]::part[1]]
        for start in progress_bar(chunks, desc=f"encode {self.name}", disable=not show_progress, unit="batch"):
            end = min(start + batch_size, len(lengths))
            first, last = int(starts[start]), int(starts[end - 1] + lengths[end - 1])
            vectors = pool(torch.from_numpy(flat[first:last]).to(device),
                           torch.from_numpy(starts[start:end] - first).to(device))
            out[-1][start:end] = vectors.float().cpu().numpy()
        return out
