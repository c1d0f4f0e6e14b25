"""Reading a Hugging Face model folder strictly, before and after transformers loads it: where the folder is
(never a download), what it is called and its digest, that every file read is inside it and each tensor in one
shard, that it asks for no code of its own, that its model type is its architecture's, what it declares (size,
languages, sentence-transformers head), and that the weights and tokenizer loaded are the model's own."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from safetensors import SafetensorError, safe_open

from ..checks import WorkbenchError, as_path, whole
from ..paths import read_json


WEIGHTS = re.compile(r".+\.safetensors$")


def model_folder(name_or_path: str | Path) -> Path:
    """The local folder of ``name_or_path``: the folder itself, or the snapshot of a model already in the Hugging
    Face cache (never a download)."""
    path = as_path(name_or_path, "a Hugging Face model").expanduser()
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


def display_name(folder: Path) -> str:
    """A readable name for a model folder: ORG/NAME for a Hugging Face cache snapshot, the package's name for a
    folder called ``model``, else the folder's name."""
    for part in reversed(folder.parts):
        if part.startswith("models--"):
            return part.removeprefix("models--").replace("--", "/")
    return folder.parent.name if folder.name in ("model", "models") else folder.name


def folder_digest(folder: Path) -> str:
    """sha256 over the names and bytes of the files that decide the model's outputs (weights, configs, tokenizer)."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")
                       and p.suffix in (".safetensors", ".json", ".txt", ".model")):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def check_files_inside(folder: Path) -> None:
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
        for module in modules(folder):
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


def declared_languages(folder: Path) -> tuple[str, ...] | None:
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


def modules(folder: Path) -> list[dict]:
    """``modules.json`` checked as a whole: a list of modules, each with a ``type`` and a ``path`` (strings)."""
    modules = read_json(folder / "modules.json")
    if not isinstance(modules, list) or not all(isinstance(m, dict) and isinstance(m.get("type"), str)
                                                and isinstance(m.get("path", ""), str) for m in modules):
        raise WorkbenchError(f"{folder / 'modules.json'} is not a sentence-transformers module list (a JSON list "
                             'of {"type": ..., "path": ...} objects, as sentence-transformers writes it)')
    return [{**m, "path": m.get("path", "")} for m in modules]


def sentence_transformers_head(folder: Path) -> tuple[str, bool, int | None]:
    """(pooling, normalise, max_seq_length) of a sentence-transformers folder, from its own configs."""
    pooling, normalise = "mean", False
    for module in modules(folder):
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


def refuse_foreign_code(folder: Path) -> None:
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


def declared_size(config) -> int:
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


def check_loaded(folder: Path, info: dict, allow_random_weights: bool) -> None:
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


def check_tokenizer(folder: Path, tokenizer) -> None:
    """Refuse a tokenizer that reads ordinary English as unknown tokens (a folder without its tokenizer files
    gets an empty one, and every sentence would look the same)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    ids = tokenizer("The man is playing a guitar in the street.", add_special_tokens=False)["input_ids"]
    if len(tokenizer) < 100 or not ids or (unk is not None and all(i == unk for i in ids)):
        raise WorkbenchError(f"{folder}: its tokenizer ({len(tokenizer)} tokens) reads an ordinary English sentence "
                             "as unknown tokens; the folder lacks its tokenizer files (tokenizer.json, vocab.txt "
                             "or a sentencepiece model): copy them from the model's release")


def check_vocabulary(folder: Path, tokenizer, model) -> None:
    """Refuse a tokenizer that is not the model's: one whose ids (or special ids) reach past the embedding's rows,
    or with far fewer tokens than the embedding has rows — another model's tokenizer, which encodes every sentence
    into the wrong rows. Models pad their rows by up to about 2% (Phi-2: 50,295 tokens, 51,200 rows), so less is
    let through."""
    rows, n = model.get_input_embeddings().weight.shape[0], len(tokenizer)
    beyond = sorted({i for i in tokenizer.all_special_ids if i is not None and not 0 <= i < rows})
    if n > rows or beyond:
        raise WorkbenchError(f"{folder}: its tokenizer has {n:,} tokens{f' (special ids {beyond[:3]})' if beyond else ''}"
                             f" but the model's embedding has {rows:,} rows: it is another model's tokenizer; copy "
                             "the model's own tokenizer files from its release")
    if rows - n > max(1024, rows // 50):
        raise WorkbenchError(f"{folder}: its tokenizer has {n:,} tokens but the model's embedding has {rows:,} rows "
                             f"({rows - n:,} never read): it is another model's tokenizer; copy the model's own "
                             "tokenizer files from its release")


def check_architecture(folder: Path, transformers, config) -> None:
    """Refuse a config.json whose ``model_type`` is not the one its ``architectures`` are built for (an edited
    model type loads another architecture's code over the weights wherever the tensor names agree)."""
    for name in getattr(config, "architectures", None) or ():
        built_for = getattr(getattr(getattr(transformers, name, None), "config_class", None), "model_type", None)
        if isinstance(built_for, str) and built_for != config.model_type:
            raise WorkbenchError(f"{folder}: config.json says model_type {config.model_type!r}, but the architecture "
                                 f"it names, {name}, is a {built_for!r} model; the two must agree (which one the "
                                 "weights were trained as decides how they are read)")
