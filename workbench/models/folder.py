"""Model folders: what a checkpoint, a training run and a shipped model hold on disk, how each is verified,
and :class:`ModelFolder` (behind :func:`load`), which opens any of them once — config read once, each file read
and hashed once — and turns it into a ready model.

- A **checkpoint** (``runs/NAME/checkpoints/update-N/``, or a run's ``best/``) holds ``config.json`` (the model
  config, the training config, the sha256 of the tokenizer, of the training data and of every other file of the
  folder), ``model.safetensors``, ``spm.model`` and, except ``best/``, the trainer's state
  (:mod:`workbench.models.checkpoint`).
- A **run** (``runs/NAME/``) holds ``metrics.jsonl`` (:mod:`workbench.models.runlog`), ``checkpoints/``,
  ``latest`` (the name of its newest checkpoint, ``update-N``) and ``best/``.
- A **shipped model** (``trained/NAME/``) holds float16 ``model.safetensors``, ``spm.model``, ``config.json``
  (as a checkpoint's, plus the training record and whether the decoders were kept), ``curve.csv`` (the run's
  learning curve) and its card (``card.json`` / ``card.md``).

Every folder's ``config.json`` lists the sha256 of all its files (:data:`DIGESTED`); :func:`verify_files` refuses a
folder whose files differ, or that has files the list does not cover, before anything reads them. Folders are
written in a temporary sibling and swapped in whole (:func:`workbench.paths.swap_folder`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..checks import WorkbenchError, as_path, plain_name, sha256_hex
from ..data import sha256_of
from ..data.tokenizer import Tokenizer
from ..paths import CONFIG_SEAL, FORMAT, atomic_write, config_digest, current_format, sealed_config, trained_dir
from .kinds import build_model, fitted
from .pins import NONE_SHIPPED, check_pinned, is_pinned, pin, remember_verified, shipped

log = logging.getLogger(__name__)


def write_weights(tmp: Path, model: torch.nn.Module, tokenizer: Tokenizer, meta: dict) -> None:
    """``model.safetensors``, ``spm.model`` and ``config.json`` (``meta`` + the model config, tokenizer digest and
    the sha256 of every other file in ``tmp``, checked by :func:`verify_files` on load and resume)."""
    tmp.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors"))
    shutil.copyfile(tokenizer.model_file, tmp / "spm.model")
    (tmp / "config.json").write_text(sealed_config({**meta, "model": model.cfg.to_dict(),
                                                    "tokenizer_sha256": tokenizer.digest,
                                                    "files_sha256": file_digests(tmp)}))


def read_weights(path: Path, device: str = "cpu") -> dict[str, torch.Tensor]:
    """A safetensors file's tensors; a file that is not one (a pickle under the name, a header that lies about
    its sizes) is refused with a sentence naming it."""
    try:
        return load_file(str(path), device=device)
    except SafetensorError as err:
        raise WorkbenchError(f"{path} is not a readable safetensors file ({err})") from None


def read_config(folder: Path, data: bytes | None = None) -> dict:
    """A model or checkpoint folder's ``config.json`` as written (``data``: its bytes, where the caller read them
    already), refused by name unless it is a JSON object whose ``model`` is an object naming its ``setting``;
    :func:`workbench.paths.current_format` reads an older format's fields in today's layout."""
    path = folder / "config.json"
    try:
        meta = json.loads(data.decode("utf-8") if data is not None else path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkbenchError(f"{path} is missing: {folder} is not a model or checkpoint folder") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise WorkbenchError(f"{path}: cannot parse the file ({type(err).__name__}: {str(err)[:200]})") from None
    if not (isinstance(meta, dict) and isinstance(meta.get("model"), dict)
            and isinstance(meta["model"].get("setting"), str)):
        raise WorkbenchError(f"{path}: not a model config (a JSON object whose 'model' object names its 'setting')")
    digests = meta.get("files_sha256")
    if digests is not None and not (isinstance(digests, dict) and all(
            plain_name(name) and sha256_hex(digest) for name, digest in digests.items())):
        raise WorkbenchError(f"{path}: files_sha256 must map the folder's own file names to sha256 digests (64 hex "
                             "digits); restore the file, or re-export the folder")
    return meta


# every file of a model, checkpoint or run folder that config.json's files_sha256 covers (those present)
DIGESTED = ("model.safetensors", "spm.model", "trainer_state.safetensors", "trainer_state.json", "curve.csv",
            "card.json", "card.md")


def file_digests(folder: Path, names: tuple[str, ...] = DIGESTED) -> dict[str, str]:
    """sha256 of the files ``names`` of ``folder`` that exist."""
    return {name: sha256_of(folder / name) for name in names if (folder / name).is_file()}


def check_digests(folder: Path, digests: dict[str, str], recorded_in: str, sha256=None) -> None:
    """Refuse ``folder`` unless each named file has its recorded sha256 (``sha256(name)``: how to get one; default:
    hash the file on disk)."""
    sha256 = sha256 or (lambda name: sha256_of(folder / name))
    for name, digest in digests.items():
        if not (folder / name).is_file() or sha256(name) != digest:
            raise WorkbenchError(f"{folder / name} is missing or does not match the sha256 recorded in "
                                 f"{folder / recorded_in} (damaged or replaced); restore it, or use another "
                                 "checkpoint or model")


def verify_files(folder: Path, meta: dict, trust_unverified: bool = False, sha256=None) -> None:
    """Refuse a model or checkpoint folder whose files differ from the sha256 its config recorded, that holds a
    file the config does not cover, whose config was edited or lost its seal, whose ``spm.model`` is
    not the tokenizer it was trained with, or whose config records no digests at all (unless
    ``trust_unverified``). ``sha256(name)``: a file's digest (default: hash it on disk; :class:`ModelFolder` passes
    the digests of the bytes it read, so each file is read once)."""
    sha256 = sha256 or (lambda name: sha256_of(folder / name))
    if CONFIG_SEAL not in meta and not trust_unverified:  # every folder the workbench writes is sealed
        raise WorkbenchError(f"{folder / 'config.json'} carries no {CONFIG_SEAL} (removed, or written by hand), so an "
                             "edit to it cannot be detected; re-export the folder, or, if you know where it came "
                             "from, pass --trust-unverified (workbench.load(path, trust_unverified=True))")
    if CONFIG_SEAL in meta and meta[CONFIG_SEAL] != config_digest(meta):
        raise WorkbenchError(f"{folder / 'config.json'} was edited after the folder was written (its content no "
                             f"longer matches its {CONFIG_SEAL}); restore it, or re-export the folder")
    if meta.get("format", 1) == 1 and not trust_unverified and not is_pinned(folder):
        raise WorkbenchError(f"{folder / 'config.json'} is format 1, whose seal leaves out the files' digests (a file "
                             "swapped with its digest updated would pass); `workbench models migrate "
                             f"{folder}` checks it as written and seals it in format {FORMAT}, or pass "
                             "--trust-unverified (workbench.load(path, trust_unverified=True))")
    digests = meta.get("files_sha256")
    if digests is not None:
        check_digests(folder, digests, "config.json", sha256)  # damage first: it names the damaged file
    spm = folder / "spm.model"
    known = (digests or {}).get("spm.model")  # verified just above: no second hashing
    if spm.is_file() and "tokenizer_sha256" in meta and (known or sha256("spm.model")) != meta["tokenizer_sha256"]:
        raise WorkbenchError(f"{spm} is not the sentencepiece model this model was trained with (its sha256 "
                             "differs from tokenizer_sha256 in config.json)")
    if digests is None:
        if not trust_unverified:
            raise WorkbenchError(f"{folder / 'config.json'} records no sha256 of the folder's files, so nothing "
                                 "can be verified; re-export it, or, if you know where it came from, pass "
                                 "--trust-unverified (workbench.load(path, trust_unverified=True))")
        log.warning("%s: no file digests; loaded unverified as asked", folder)
        return
    covered = set(digests)
    state = folder / "trainer_state.json"
    if meta.get("format", 1) == 1 and "trainer_state.json" not in digests and state.is_file():
        legacy = json.loads(state.read_text()).get("files_sha256")  # the earliest checkpoints: its own list
        if legacy is not None:
            check_digests(folder, legacy, "trainer_state.json", sha256)
            covered |= {"trainer_state.json", *legacy}
    extra = sorted(name for name in DIGESTED if (folder / name).is_file() and name not in covered)
    if extra:
        raise WorkbenchError(f"{folder}: {', '.join(extra)} not covered by the sha256 list in config.json (added or "
                             "replaced after the folder was written); remove it or re-export the folder")


def latest_checkpoint(path: str | Path) -> Path:
    """The checkpoint folder ``path`` names: itself, or a run directory's ``latest``."""
    path = Path(path)
    if (path / "model.safetensors").is_file():
        return path
    if (path / "latest").is_file():
        pointer = (path / "latest").read_text().strip()
        if not re.fullmatch(r"update-\d+", pointer) or not (path / "checkpoints" / pointer).is_dir():
            raise WorkbenchError(f"{path / 'latest'} names {pointer[:80]!r}, not a checkpoint of this run "
                                 f"(checkpoints/update-N); the run folder is damaged")
        return path / "checkpoints" / pointer
    raise WorkbenchError(f"{path} is neither a checkpoint (no model.safetensors) nor a run directory (no latest)")


def folder_name(path: Path) -> str:
    """A model's own name, from the folder it was loaded from: a shipped or exported model's name, a run's name,
    or ``RUN@update-N`` / ``RUN@best`` for one checkpoint of a run."""
    path = path.resolve()
    if path.parent.name == "checkpoints" or (path.name == "best" and (path.parent / "latest").is_file()):
        run = path.parent.parent if path.parent.name == "checkpoints" else path.parent
        return f"{run.name}@{path.name}"
    return path.name


def model_path(path_or_name: str | Path) -> Path:
    """``path_or_name`` as a path, or the folder of the model of that name in ``trained/``."""
    path, named = Path(path_or_name), trained_dir() / str(path_or_name)
    return named if not path.exists() and named.exists() else path


class ModelFolder:
    """One model folder — a checkpoint, a run (its latest checkpoint), a shipped model or a one-go fit — opened
    once: ``config.json`` parsed once, each file hashed once and checked against the sha256 the config records
    before anything uses it; the tokenizer is loaded from the very bytes that were hashed.

    ``ModelFolder("bgt-en-fr").model()`` is what :func:`load` returns."""

    def __init__(self, path_or_name: str | Path, trust_unverified: bool = False):
        if not isinstance(path_or_name, Path) and not str(path_or_name).strip():
            raise WorkbenchError(f"an empty model name ({path_or_name!r}): give a run directory, a checkpoint "
                                 f"folder, or a name in {trained_dir()} ({', '.join(shipped()) or NONE_SHIPPED})")
        path = model_path(path_or_name)
        if not path.exists():
            raise WorkbenchError(f"no model at {path_or_name!r}: give a run directory, a checkpoint folder, or a "
                                 f"name in {trained_dir()} ({', '.join(shipped()) or NONE_SHIPPED})")
        self.path = path if (path / "config.json").is_file() else latest_checkpoint(path)
        self.name = folder_name(path)
        self._bytes: dict[str, bytes] = {}
        self._digests: dict[str, str] = {}
        written = read_config(self.path, self.read("config.json") if (self.path / "config.json").is_file()
                              else None)
        self.config = current_format(written, self.path / "config.json")  # what every reader below sees
        check_pinned(self.path, self.sha256("config.json"))
        verify_files(self.path, written, trust_unverified, sha256=self.sha256)  # as written: the seal covers it
        remember_verified(self.path, self.sha256("config.json"))  # a folder of your own: trust on first use

    def read(self, name: str) -> bytes:
        """A file's bytes, read once (and hashed from the same bytes by :meth:`sha256`)."""
        if name not in self._bytes:
            self._bytes[name] = (self.path / name).read_bytes()
        return self._bytes[name]

    def sha256(self, name: str) -> str:
        """A file's sha256, computed once: of the bytes :meth:`read` holds for small files, streamed from disk for
        the weights (which :meth:`weights` then maps, so they are never held twice in memory)."""
        if name not in self._digests:
            self._digests[name] = (sha256_of(self.path / name) if name.endswith(".safetensors")
                                   else hashlib.sha256(self.read(name)).hexdigest())
        return self._digests[name]

    def weights(self) -> dict[str, torch.Tensor]:
        """The tensors of ``model.safetensors`` (a file that is not one is refused by name)."""
        return read_weights(self.path / "model.safetensors")

    def model(self, device: str | torch.device = "cpu") -> torch.nn.Module:
        """The network with its tokenizer attached, in eval mode; the file bytes are released afterwards."""
        meta, folder = self.config, self.path
        try:
            one_go = fitted(meta["model"]["setting"])
            if one_go:
                model = one_go.load(meta, {k: v.numpy() for k, v in self.weights().items()})
                model.name = self.name
                return model
            try:
                model = build_model(meta["model"], decoders=meta.get("decoders", True))  # False: encoder-only
            except WorkbenchError as err:
                raise WorkbenchError(f"{folder / 'config.json'}: {err}") from None
            tokenizer = Tokenizer(folder / "spm.model", tuple(meta["model"]["languages"]), data=self.read("spm.model"))
            state = self.weights()  # float16 in trained/: copied into float32 parameters
            try:
                model.load_state_dict(model.completed_state(state))
            except RuntimeError as err:  # missing, unexpected or mis-shaped tensors: never a partly random model
                first = str(err).strip().splitlines()[:2]
                raise WorkbenchError(f"{folder / 'model.safetensors'} does not hold the network its config.json "
                                     f"describes ({' '.join(first)[:300]})") from None
            model.tokenizer, model.name = tokenizer, self.name
            return model.to(device).eval()
        finally:
            self._bytes.clear()


def load(path_or_name: str | Path, device: str | torch.device = "cpu", trust_unverified: bool = False
         ) -> torch.nn.Module:
    """A trained model (run directory, checkpoint folder, or the name of a model in ``trained/``) with its
    tokenizer attached, in eval mode: ``load(p).encoder("semantic").encode([...])``. Its files are checked
    against the sha256 list in its ``config.json`` (:class:`ModelFolder`); a folder without one is refused unless
    ``trust_unverified``."""
    as_path(path_or_name, "the model to load (a shipped name or a folder)")  # of a type a path can be
    return ModelFolder(path_or_name, trust_unverified).model(device)


def migrate(path_or_name: str | Path) -> list[Path]:
    """Check each older-format model or checkpoint folder under ``path_or_name`` (a folder, a run directory's
    checkpoints and best/, or a name in ``trained/``) as written — its seal and every file's sha256 — and write its
    config.json in the current format, whose seal covers the files' digests (a shipped model is pinned anew; its
    weights, and so its fingerprint, are untouched). Returns the folders migrated; current ones are left alone."""
    root = model_path(path_or_name)
    folders = [root] if (root / "config.json").is_file() else sorted(p.parent for p in root.glob("*/config.json")) + \
        sorted(p.parent for p in root.glob("checkpoints/*/config.json"))
    if not folders:
        raise WorkbenchError(f"no model or checkpoint folder at {root} (a folder with config.json, or a run directory)")
    migrated = []
    for folder in folders:
        written = read_config(folder)
        if written.get("format", 1) >= FORMAT:
            continue
        if CONFIG_SEAL not in written or not written.get("files_sha256"):
            raise WorkbenchError(f"{folder / 'config.json'} records no seal or no file digests: nothing to check it "
                                 "against, so it cannot be migrated; export it again from its run")
        verify_files(folder, written, trust_unverified=True)  # the seal and every digest, as format 1 wrote them
        digests = file_digests(folder, tuple(name for name in DIGESTED if (folder / name).is_file()))
        atomic_write(folder / "config.json", sealed_config({**current_format(written), "files_sha256": digests,
                                                             "migrated_from_format": written.get("format", 1)}))
        pin(folder)
        migrated.append(folder)
    return migrated
