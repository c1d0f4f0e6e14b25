"""Where data, caches and models live: the one place that decides.

- data (read-only inputs): ``$WORKBENCH_DATA``, else the ``data`` folder of a ``shared`` folder next to the
  repository's own folder, else ``<user cache>/bgt-workbench/data`` (where :mod:`workbench.data.download` puts
  what it fetches); what the data folder holds: docs/formats.md#locations;
- home (everything the workbench builds: tokenizers, splits, probing sets, embedding cache):
  ``$WORKBENCH_HOME``, else ``<user cache>/bgt-workbench`` — never inside the git tree;
- package data (task cards, the shipped pairs' splits, the probe pools' parses, the built datasets'
  manifests): ``workbench/probes/``, inside the package, so an installed wheel has them;
- trained models: ``$WORKBENCH_MODELS``, else the ``trained`` folder of the repository a checkout runs from;

and what a stored result was made with (:func:`made_with`: library versions and the machine).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import platform
import shutil
import sys
from collections.abc import Callable
from contextlib import contextmanager
from importlib import metadata, resources
from pathlib import Path

from .checks import WorkbenchError

REPO_ROOT = Path(__file__).resolve().parent.parent  # the checkout (for an installed package: its site folder)
PROBES_DIR = Path(str(resources.files("workbench") / "probes"))  # package data: cards, parses, builds.json


_LIBRARIES = ("bgt-workbench", "numpy", "scikit-learn", "torch", "transformers", "sentence-transformers")


def made_with() -> dict:
    """The versions of the workbench and of the libraries this process has loaded, and the machine (the CUDA
    device where torch has one), recorded beside each cached result."""
    loaded = {"bgt-workbench": "workbench", "scikit-learn": "sklearn", "sentence-transformers": "sentence_transformers"}
    versions = {"python": platform.python_version()}
    for name in _LIBRARIES:
        if loaded.get(name, name) in sys.modules:
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
    torch = sys.modules.get("torch")
    cuda = torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized()
    device = torch.cuda.get_device_name() if cuda else f"{platform.machine()} CPU, {os.cpu_count()} cores"
    return {"versions": versions, "device": device}


def process_rank() -> tuple[int, int]:
    """(rank, world size) of this process: (0, 1) alone; under torchrun (``WORLD_SIZE`` > 1) the process group is
    made here once, so training and encoding share one: gloo for CPU tensors and, with CUDA, nccl for CUDA tensors
    (each process on the GPU its ``LOCAL_RANK`` names)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1
    import torch  # only under torchrun
    if not torch.distributed.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        torch.distributed.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
    return torch.distributed.get_rank(), world


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/bgt-workbench`` (default ``~/.cache/bgt-workbench``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "bgt-workbench"


def data_dir() -> Path:
    """Root of the input data (``parallel/``, ``eval/``)."""
    env = os.environ.get("WORKBENCH_DATA")
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"WORKBENCH_DATA={env!r} is not a directory")
        return path
    shared = REPO_ROOT.parent / "shared" / "data"
    if shared.is_dir():
        return shared
    return user_cache_dir() / "data"


def home_dir(create: bool = True) -> Path:
    """Root for everything the workbench builds; created on first use (``create=False``: where it is or would be,
    for a reader that only looks)."""
    env = os.environ.get("WORKBENCH_HOME")
    path = Path(env).expanduser() if env else user_cache_dir()
    if not create:
        return path
    if path.exists() and not path.is_dir():
        raise WorkbenchError(f"{'WORKBENCH_HOME=' if env else 'the workbench home '}{path} is a file; it must name "
                             "a folder (created on first use) where the workbench keeps what it builds")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WorkbenchError(f"cannot create the workbench home {path} ({err.strerror or err}); set WORKBENCH_HOME "
                             "to a folder you can write") from None
    return path


def trained_dir() -> Path:
    """Folder of the shipped models: ``$WORKBENCH_MODELS``, else the checkout's ``trained`` (an installed package
    outside a checkout has none until WORKBENCH_MODELS names one)."""
    env = os.environ.get("WORKBENCH_MODELS")
    return Path(env).expanduser() if env else REPO_ROOT / "trained"


def atomic_write(path: Path, content: str | Callable[[Path], object]) -> None:
    """Write ``path`` whole or not at all: into a temporary sibling ``.NAME.PID.tmp`` (which the cache's cleaning
    recognises as a leftover of a killed process), then renamed over ``path``. ``content`` is text (UTF-8), or a
    function that writes the temporary path it is given (safetensors, binary files)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if callable(content):
            content(tmp)
        else:
            tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _model_config(path: Path) -> bool:
    """Whether ``path`` is the config.json of a model folder: the workbench's (sealed digests) or a Hugging Face
    one (``model_type`` or ``architectures``) — not any project's settings file of that name."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return False
    return isinstance(meta, dict) and bool({"files_sha256", CONFIG_SEAL, "model_type", "architectures"} & set(meta))


def check_outside_models(path: str | Path, option: str) -> None:
    """Refuse to write ``path`` inside ``trained/`` or any model or checkpoint folder (one with a model's
    ``config.json``): the folder's digests would no longer cover what it holds, and it would be refused when next
    loaded."""
    resolved = Path(path).resolve()
    models = trained_dir().resolve()
    inside = next((p for p in (resolved, *resolved.parents) if _model_config(p / "config.json")), None)
    if resolved == models or models in resolved.parents or inside is not None:
        raise WorkbenchError(f"{option} {path} is inside {'trained/' if inside is None else f'the model folder {inside}'}"
                             ", whose files are checked against their digests: write the results elsewhere")


def check_results_folder(folder: str | Path, option: str, written: str, force: bool = False) -> Path:
    """``folder`` if results may be written there, checked before any work: not a file, not inside ``trained/`` or
    any model or checkpoint folder (one with a ``config.json``: its digests would no longer cover it), and holding
    no files matching ``written`` (a glob) unless ``force``. ``option`` names the folder in messages."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise WorkbenchError(f"{option} {folder} is a file; give a folder")
    check_outside_models(folder, option)
    there = sorted(p.name for p in folder.glob(written)) if folder.is_dir() else []
    if there and not force:
        raise WorkbenchError(f"{option} {folder} already holds {', '.join(there[:3])}{', …' if len(there) > 3 else ''}; "
                             "--force replaces them, or give another folder")
    return folder


def read_json(path: Path) -> object:
    """A JSON file's content; a file that is not UTF-8 or not JSON is refused with its path and the line."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise WorkbenchError(f"{path} is not UTF-8 text (damaged or not a JSON file)") from None
    except json.JSONDecodeError as err:
        raise WorkbenchError(f"{path}, line {err.lineno}, column {err.colno}: cannot parse it as JSON ({err.msg})"
                             ) from None
    except RecursionError:
        raise WorkbenchError(f"{path} nests its JSON deeper than Python's parser goes: not a file the workbench "
                             "wrote") from None


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


SHIPPED_MANIFEST = "manifest.json"  # beside files the package ships in place of work a fresh home would do


def shipped_file(folder: Path, name: str) -> Path | None:
    """``folder/name`` where the package ships it with the sha256 its folder's manifest records; None where it
    ships none, or (with a warning) one damaged or edited since, which is then made again, never used."""
    path = folder / name
    if not path.is_file():
        return None
    manifest = folder / SHIPPED_MANIFEST
    recorded = read_json(manifest).get("files", {}) if manifest.is_file() else {}
    if recorded.get(name) != sha256_of(path):
        logging.getLogger(__name__).warning("%s does not match its sha256 in %s; making it again", path, manifest)
        return None
    return path


def ship_files(folder: Path, files: dict[str, Path | Callable[[Path], object]], what: str, pattern: str) -> Path:
    """Make ``files`` (name → a file to copy, or a function writing it) what the package ships in ``folder``,
    with their sha256 in its manifest (``what``: what they are); shipped files matching ``pattern`` and not among
    them are removed. Returns the manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(pattern):
        if old.name not in files:
            old.unlink()
    for name, source in files.items():
        if source != folder / name:
            atomic_write(folder / name, source if callable(source) else
                         lambda tmp, source=source: shutil.copyfile(source, tmp))
    manifest = {"what": what, "files": {name: sha256_of(folder / name) for name in sorted(files)}}
    atomic_write(folder / SHIPPED_MANIFEST, json.dumps(manifest, indent=1) + "\n")
    return folder / SHIPPED_MANIFEST


CONFIG_SEAL = "config_sha256"


def config_digest(meta: dict) -> str:
    """sha256 of a model folder's config.json content less its own seal, in a canonical form: config.json cannot
    list its own sha256, so it carries this instead (a model folder's identity is all of its files, its config
    included). From format 2 the seal covers ``files_sha256`` too, so another file's bytes cannot be swapped in by
    updating its digest alone; a format-1 folder's seal (written before) leaves the digests out, as it did."""
    left_out = (CONFIG_SEAL,) if meta.get("format", 1) >= 2 else (CONFIG_SEAL, "files_sha256")
    body = {k: v for k, v in meta.items() if k not in left_out}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# The layout of a model folder's config.json, recorded in it as ``format``. Every folder is written in the current
# one; an older folder is verified as written and then read through one step per format (FORMAT_STEPS: N -> N + 1).
FORMAT = 2


def _from_format_1(meta: dict) -> dict:
    """Format 1: folders written before config.json recorded its ``format`` (until 2026-11-28). The fields mean
    what they mean in format 2; what differs is how they were sealed and checked: the seal leaves out
    ``files_sha256`` (:func:`config_digest`), and the trainer state of the earliest checkpoints listed its own
    files' digests (:func:`workbench.models.folder.verify_files` checks those as such)."""
    return {**meta, "format": 2}


FORMAT_STEPS = {1: _from_format_1}


def current_format(meta: dict, where: str | Path = "config.json") -> dict:
    """``meta`` in today's layout (:data:`FORMAT`); a format this workbench does not know is refused."""
    version = meta.get("format", 1)
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT:
        raise WorkbenchError(f"{where}: format {version!r} is not one this workbench reads (1 to {FORMAT}); a newer "
                             "workbench wrote it, so upgrade the workbench, or re-export the model with this one")
    while version < FORMAT:
        meta = FORMAT_STEPS[version](meta)
        version = meta["format"]
    return meta


def sealed_config(meta: dict) -> str:
    """config.json's text for ``meta`` (today's layout: its writers say what it holds) marked with the current
    :data:`FORMAT`, with the library versions that wrote it (kept from ``meta`` where it has them: an export keeps
    its run's), and sealed with :func:`config_digest` (an edit that leaves the seal is refused on load)."""
    meta = {"written_with": made_with()["versions"],  # the libraries of the process that first wrote the folder
            **{k: v for k, v in meta.items() if k != CONFIG_SEAL}, "format": FORMAT}
    return json.dumps({**meta, CONFIG_SEAL: config_digest(meta)}, indent=2)


def temp_sibling(folder: Path) -> Path:
    """A new, empty temporary folder beside ``folder`` to build its replacement in (then :func:`swap_folder`). It is
    named with this process's id, as every temporary file of the workbench is, so two writers never share one."""
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


@contextmanager
def only_writer(folder: Path):
    """Hold ``.NAME.lock`` beside ``folder`` while this process builds its replacement: a second writer of the same
    folder (another export or import to that name) is refused at once instead of silently replacing the first's
    work. A lock left by a process that no longer runs (killed) is taken over."""
    lock = folder.with_name(f".{folder.name}.lock")
    folder.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            holder = lock.read_text().strip() if lock.is_file() else ""
            if holder.isdigit() and _running(int(holder)):
                raise WorkbenchError(f"{folder} is being written by process {holder} (another export or import); "
                                     f"wait for it to finish, or remove {lock} if that process is gone") from None
            lock.unlink(missing_ok=True)  # its writer was killed
    else:
        raise WorkbenchError(f"cannot take {lock}: another writer keeps taking it")
    try:
        os.write(descriptor, str(os.getpid()).encode())
        os.close(descriptor)
        yield
    finally:
        lock.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 checks without sending; another user's process exists too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2`` with ``RENAME_EXCHANGE``); False where the system or the
    file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_cwd, exchange = -100, 2
    return renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), exchange) == 0


def swap_folder(tmp: Path, folder: Path) -> None:
    """Put the complete folder ``tmp`` in the place of ``folder`` (the old one is removed only afterwards): the one
    way a model, checkpoint or package folder is replaced, so a reader finds the old folder or the new one. The
    two are exchanged in one step where the system can (Linux), so even a kill -9 leaves one of them in place;
    elsewhere the old folder is renamed aside first, and a kill between the two renames leaves it as
    ``.NAME.PID.old`` (``workbench cache ls`` reports it)."""
    if folder.exists() and _exchange(tmp, folder):
        shutil.rmtree(tmp, ignore_errors=True)  # it holds the old folder now
        return
    old = folder.with_name(f".{folder.name}.{os.getpid()}.old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        os.replace(folder, old)
    os.replace(tmp, folder)
    shutil.rmtree(old, ignore_errors=True)
