"""Inputs that are well-formed but wrong: tampered model folders and packages, foreign Hugging Face folders,
edited cache entries, results written where they do not belong, own data that does not mean what it seems.

Each case makes its input under a scratch folder and hands it to the workbench; it returns ``"clear"`` when the
workbench refused it (or, for a cache, recomputed instead of returning the edit), ``"warned"`` when it went on but
said so (trust on first use: a folder of your own changed and sealed again), and ``"accepted"`` when it went on
silently — the silently wrong outcome the sweep counts. ``tools/hostile_sweep.py`` runs them beside the bad
values; ``tests/test_bad_input.py`` runs every case in CI.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pandas as pd

from workbench.checks import WorkbenchError

CASES = {}


def case(function):
    CASES[function.__name__] = function
    return function


def outcome(tmp: Path, name: str) -> tuple[str, str]:
    """Run case ``name`` in its own scratch folder under ``tmp``: (``clear``, ``warned`` or ``accepted``; the
    refusal's message)."""
    scratch = tmp / f"tamper-{name}"
    scratch.mkdir()
    try:
        return CASES[name](scratch), ""
    except WorkbenchError as refusal:
        return "clear", str(refusal)


# --- model folders --------------------------------------------------------------------------------------------

def _copy(name: str, dest: Path) -> Path:
    from workbench.models.folder import model_path
    return Path(shutil.copytree(model_path(name), dest))


def _resealed(folder: Path, change) -> None:
    """``folder``'s config.json changed by ``change(meta)``, its files' digests recomputed and sealed again: a folder
    consistent with itself, as its owner (or anyone who can write it) may make it."""
    from workbench.models.folder import file_digests
    from workbench.paths import CONFIG_SEAL, config_digest
    meta = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if k != CONFIG_SEAL}
    meta = change({**meta, "files_sha256": file_digests(folder)})
    (folder / "config.json").write_text(json.dumps({**meta, CONFIG_SEAL: config_digest(meta)}))


def _other_weights(folder: Path) -> None:
    """Every weight of ``folder`` moved a little: the network of another model of the same shape."""
    from safetensors.torch import load_file, save_file
    weights = load_file(str(folder / "model.safetensors"))
    save_file({k: v * 1.5 if v.is_floating_point() else v for k, v in weights.items()},
              str(folder / "model.safetensors"))


def _shipped_copy(scratch: Path, name: str = "sp-en-fr") -> Path:
    """A models folder holding a copy of shipped ``name`` and the committed pins."""
    from workbench.paths import trained_dir
    models = scratch / "models"
    models.mkdir()
    shutil.copyfile(trained_dir() / "pins.json", models / "pins.json")
    return _copy(name, models / name)


def _load_shipped(folder: Path) -> str:
    """Load ``folder`` by its name with its parent as the models folder (``WORKBENCH_MODELS``), as a user would."""
    from workbench.models.folder import load
    before = os.environ.get("WORKBENCH_MODELS")
    os.environ["WORKBENCH_MODELS"] = str(folder.parent)
    try:
        load(folder.name)
    finally:
        if before is None:
            os.environ.pop("WORKBENCH_MODELS")
        else:
            os.environ["WORKBENCH_MODELS"] = before
    return "accepted"


@case
def shipped_model_edited_and_resealed(scratch: Path) -> str:
    folder = _shipped_copy(scratch)
    _resealed(folder, lambda meta: {**meta, "model": {**meta["model"], "languages": ["en"]}})
    return _load_shipped(folder)


@case
def shipped_model_given_other_weights_with_its_digests_made_to_agree(scratch: Path) -> str:
    folder = _shipped_copy(scratch)
    _other_weights(folder)
    _resealed(folder, lambda meta: meta)
    return _load_shipped(folder)


@case
def folder_downgraded_to_format_1_and_resealed(scratch: Path) -> str:
    from workbench.models.folder import load
    folder = _copy("sp-en-fr", scratch / "sp")
    _other_weights(folder)
    _resealed(folder, lambda meta: {k: v for k, v in meta.items() if k != "format"})
    load(folder)
    return "accepted"


@case
def folder_of_your_own_given_other_weights_and_resealed(scratch: Path) -> str:
    from workbench.models.folder import load
    folder = _copy("sp-en-fr", scratch / "sp")
    load(folder)  # verified once: the home now knows it
    _other_weights(folder)
    _resealed(folder, lambda meta: meta)
    return _said("with another config.json", lambda: load(folder))


@case
def folder_with_another_pairs_tokenizer_and_its_digest_updated(scratch: Path) -> str:
    from workbench.models.folder import load, model_path
    folder = _copy("bgt-en-fr", scratch / "bgt")
    shutil.copyfile(model_path("bgt-en-es") / "spm.model", folder / "spm.model")
    _resealed(folder, lambda meta: meta)
    load(folder)
    return "accepted"


@case
def folder_with_a_file_its_digests_do_not_list(scratch: Path) -> str:
    from workbench.models.folder import load
    folder = _copy("sp-en-fr", scratch / "sp")
    (folder / "trainer_state.safetensors").write_bytes(b"planted")
    load(folder)
    return "accepted"


@case
def folder_whose_weights_lack_a_tensor(scratch: Path) -> str:
    from safetensors.torch import load_file, save_file
    from workbench.models.folder import load
    folder = _copy("sp-en-fr", scratch / "sp")
    weights = load_file(str(folder / "model.safetensors"))
    save_file(dict(list(weights.items())[1:]), str(folder / "model.safetensors"))
    _resealed(folder, lambda meta: meta)
    load(folder)
    return "accepted"


def _said(words: str, action) -> str:
    """``warned`` if ``action()`` logged ``words``, else ``accepted``."""
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logging.getLogger("workbench").addHandler(handler)
    try:
        action()
    finally:
        logging.getLogger("workbench").removeHandler(handler)
    return "warned" if any(words in message for message in seen) else "accepted"


# --- caches ---------------------------------------------------------------------------------------------------

@case
def cached_result_edited_with_its_checksum_recomputed(scratch: Path) -> str:
    import hashlib
    from workbench.cache import remember, results_dir
    remember("probe", "tampered-fp", {"case": "edit"}, lambda: {"accuracy": 0.5}, refresh=True)
    (path,) = (results_dir() / "tampered-fp" / "probe").glob("*.json")
    stored = json.loads(path.read_text())
    edited = {"accuracy": 0.99}
    digest = hashlib.sha256(json.dumps(edited, sort_keys=True).encode()).hexdigest()
    path.write_text(json.dumps({**stored, "result": edited, "sha256": digest, "hmac_sha256": digest}))
    again = remember("probe", "tampered-fp", {"case": "edit"}, lambda: {"accuracy": 0.5})
    return "clear" if again == {"accuracy": 0.5} else "accepted"


# --- packages -------------------------------------------------------------------------------------------------

@case
def package_with_a_tensor_in_two_shards(scratch: Path) -> str:
    """A package made by hand (manifest, one shard, spm.model), then a second listed shard planting a tensor."""
    import hashlib

    import torch
    from safetensors.torch import load_file, save_file
    from workbench.models.folder import model_path
    from workbench.zoo.packaging import FIRST_SHARDS_FORMAT, unpack_shards
    source = model_path("sp-en-fr")
    weights = {k: v.half() for k, v in load_file(str(source / "model.safetensors")).items()}
    package = scratch / "package"
    package.mkdir()
    save_file(weights, str(package / "model-00001.safetensors"))
    key = next(iter(weights))
    save_file({key: torch.zeros_like(weights[key])}, str(package / "model-00002.safetensors"))
    shutil.copyfile(source / "spm.model", package / "spm.model")
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(package.iterdir())}
    config = {k: v for k, v in json.loads((source / "config.json").read_text()).items()
              if k not in ("files_sha256", "config_sha256")}
    (package / "manifest.json").write_text(json.dumps({"format": FIRST_SHARDS_FORMAT, "name": "planted",
                                                       "config": config, "files": files, "split": {}}))
    unpack_shards(package, scratch / "unpacked")
    return "accepted"


# --- Hugging Face folders -------------------------------------------------------------------------------------

def _hf_folder(scratch: Path, vocab: int = 300, kind: str = "gpt2") -> Path:
    """A tiny random GPT-2 or Llama with a byte-level BPE of ``vocab`` tokens trained on real STS sentences."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from workbench.data.sts import load_sts
    sentences = [s for df in load_sts(2016).values() for s in df["sentence1"]][:300]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator(sentences, trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<unk>", "<eos>"],
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>", eos_token="<eos>")
    torch.manual_seed(0)
    if kind == "gpt2":
        model = transformers.GPT2Model(transformers.GPT2Config(vocab_size=len(fast), n_embd=16, n_layer=1,
                                                               n_head=2, n_positions=64))
    else:
        model = transformers.LlamaModel(transformers.LlamaConfig(
            vocab_size=len(fast), hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=1, max_position_embeddings=64))
    folder = scratch / f"{kind}-{vocab}"
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def _encode_hf(folder: Path) -> str:
    import workbench as wb
    wb.hf_encoder(folder, pooling="last").encode(["A man is playing a guitar."])
    return "accepted"


@case
def hugging_face_folder_with_another_models_tokenizer(scratch: Path) -> str:
    folder = _hf_folder(scratch, 300)
    other = _hf_folder(scratch, 900)
    for file in other.glob("tokenizer*"):
        shutil.copyfile(file, folder / file.name)
    return _encode_hf(folder)


@case
def hugging_face_folder_whose_model_type_is_not_its_weights(scratch: Path) -> str:
    folder = _hf_folder(scratch, kind="llama")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "mistral"}))
    return _encode_hf(folder)


@case
def hugging_face_folder_with_a_tensor_in_two_shards(scratch: Path) -> str:
    from safetensors.torch import load_file, save_file
    folder = _hf_folder(scratch)
    weights = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    names = sorted(weights)
    half = len(names) // 2
    save_file({k: weights[k] for k in names[:half]}, str(folder / "model-00001-of-00002.safetensors"))
    save_file({k: weights[k] * 0 for k in names[:1] + names[half:]},
              str(folder / "model-00002-of-00002.safetensors"))  # the first tensor again, planted
    index = {k: "model-00001-of-00002.safetensors" for k in names[:half]}
    index.update({k: "model-00002-of-00002.safetensors" for k in names[half:]})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": index}))
    return _encode_hf(folder)


# --- where results are written ----------------------------------------------------------------------------------

def _cli(argv: list[str]) -> str:
    """``accepted`` if the command ran; its refusal (exit 2) as a WorkbenchError with what it said."""
    import io
    from contextlib import redirect_stderr

    from workbench.cli import main
    said = io.StringIO()
    with redirect_stderr(said):
        code = main(argv)
    if code == 2:
        raise WorkbenchError(said.getvalue().strip())
    return "accepted"


@case
def mteb_results_into_the_models_folder(scratch: Path) -> str:
    from workbench.paths import trained_dir
    return _cli(["evaluate", "--encoder", "random-sp-average", "--suite", "sts17", "--mteb", str(trained_dir())])


@case
def mteb_results_over_existing_ones_without_force(scratch: Path) -> str:
    (scratch / "STS17.json").write_text("{}")
    return _cli(["evaluate", "--encoder", "random-sp-average", "--suite", "sts17", "--mteb", str(scratch)])


# --- own data ---------------------------------------------------------------------------------------------------

SIZES = {"train": 40, "valid": 10, "test": 10}


def _labelled(rows: int = 80) -> pd.DataFrame:
    from workbench.data.sts import load_sts
    sentences = list(dict.fromkeys(s for df in load_sts(2016).values() for s in df["sentence1"]))[:rows]
    return pd.DataFrame({"sentence": sentences, "label": [("short", "long")[len(s) > 60] for s in sentences]})


@case
def word_control_on_data_without_a_word_column(scratch: Path) -> str:
    import workbench as wb
    task = wb.own_task(_labelled(), name="lengthish")
    wb.probe(wb.untrained_encoder("random-sp-average", pair="en-fr"), task, control="word", sizes=SIZES)
    return "accepted"


@case
def own_data_whose_sentences_are_lists(scratch: Path) -> str:
    import workbench as wb
    data = _labelled()
    wb.own_task(data.assign(sentence=[s.split() for s in data["sentence"]]), name="lists")
    return "accepted"


@case
def transfer_between_tasks_whose_labels_only_look_alike(scratch: Path) -> str:
    import workbench as wb
    wb.probe_across(wb.untrained_encoder("random-sp-average", pair="en-fr"), "length", "punct_num", sizes=SIZES)
    return "accepted"
