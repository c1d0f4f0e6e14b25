"""The embedding cache: an encoder's outputs stored per (encoder fingerprint, exact sentence list).

Entries live under ``<home>/cache/embeddings/<fingerprint[:16]>/<sentences digest>.safetensors``: one file
holding the array (float32 by default; float16 on request, and then only where it round-trips every vector to
within :data:`FLOAT16_TOLERANCE` of its distance from the entry's mean) and a header with the sha256 of the array's bytes, the encoder's
name, full fingerprint and the digest of the sentence list — so an entry file copied or swapped into another
entry's place is detected, not returned. Writes go to a temp file renamed into place, under a file lock, so two
processes asking for the same entry encode it once; a read re-checks the checksum, and an entry that is
truncated or corrupted is reported, deleted and recomputed — never returned. Each fingerprint's folder records
the encoder that claimed it (``encoder.json``: name and dimension): a second encoder with the same fingerprint
but another name or dimension is refused, since it would be answered with the first one's embeddings and
results. Results computed from embeddings (:func:`remember`) carry a checksum too.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from filelock import FileLock
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from .checks import WorkbenchError, check_sentences, whole
from .encoders import Encoder, check_contract, check_embeddings
from .paths import atomic_write, home_dir, made_with, trained_dir

log = logging.getLogger(__name__)

FORMAT_VERSION = "2"  # 2: entries name their sentence list
FLOAT16_MAX = float(np.finfo(np.float16).max)
FLOAT16_TOLERANCE = 1e-3  # float16 only if no value moves by more than this × the vector's distance from the mean


def cache_dir() -> Path:
    return home_dir() / "cache" / "embeddings"


def sentences_digest(sentences: Sequence[str]) -> str:
    """sha256 of the exact, ordered sentence list (length-prefixed, so no separator can collide)."""
    h = hashlib.sha256()
    for sentence in sentences:
        raw = sentence.encode("utf-8")
        h.update(len(raw).to_bytes(8, "little"))
        h.update(raw)
    return h.hexdigest()


def _array_digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


class CachedEncoder:
    """An Encoder that answers from the cache and encodes (then stores) only on a miss.

    Same ``name``, ``dim``, ``fingerprint`` and ``languages`` as the wrapped encoder; ``hits`` and ``misses``
    count lookups. ``dtype`` is the storage type (float16 halves the disk; results come back as float32).
    """

    def __init__(self, encoder: Encoder, dtype: str = "float32", root: Path | None = None):
        if dtype not in ("float16", "float32"):
            raise WorkbenchError(f"cache dtype {dtype!r} is not valid; valid: float16, float32")
        self.encoder, self.dtype, self.root = check_contract(encoder), dtype, root
        self.name, self.dim, self.fingerprint = encoder.name, encoder.dim, check_fingerprint(encoder)
        if not whole(self.dim):
            raise WorkbenchError(f"encoder {self.name!r} declares dim {self.dim!r}; an embedding needs a whole "
                                 "number ≥ 1 of dimensions")
        self._check_claim()
        languages = getattr(encoder, "languages", None)
        if languages is not None:
            self.languages = languages
        self.hits = self.misses = 0

    def _claim_path(self) -> Path:
        return (self.root or cache_dir()) / self.fingerprint[:16] / "encoder.json"

    def _check_claim(self) -> None:
        """Refuse a fingerprint that the cache holds for another encoder (name or dimension; only the dimension for
        an encoder whose fingerprint is a digest of its weights, which may be renamed); reads only."""
        try:
            owner = json.loads(self._claim_path().read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return
        renamed = getattr(self.encoder, "content_fingerprint", False)  # the same network under another name
        if isinstance(owner, dict) and owner.get("fingerprint") == self.fingerprint:
            if owner.get("dim") != self.dim or (owner.get("name") != self.name and not renamed):
                raise WorkbenchError(
                    f"encoder {self.name!r} (dim {self.dim}) has fingerprint {self.fingerprint[:16]}…, which the "
                    f"cache already holds for encoder {owner.get('name')!r} (dim {owner.get('dim')}): it would get "
                    "that encoder's embeddings and results. Give a different network its own fingerprint (e.g. "
                    "a sha256 of its weights), or the same network the same name; `workbench cache clear "
                    f"--encoder {owner.get('name')}` forgets the old one")

    def _claim(self) -> None:
        """Record which encoder this fingerprint belongs to (with its first stored entry)."""
        path = self._claim_path()
        if path.is_file():
            return
        atomic_write(path, json.dumps({"name": self.name, "dim": int(self.dim), "fingerprint": self.fingerprint}))

    def path_for(self, sentences: Sequence[str]) -> Path:
        root = self.root or cache_dir()
        return root / self.fingerprint[:16] / f"{sentences_digest(sentences)}.safetensors"

    def encode(self, sentences: Sequence[str], batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        sentences = check_sentences(sentences)
        path = self.path_for(sentences)
        found = self._read(path, len(sentences))
        if found is not None:
            self.hits += 1
            return found
        path.parent.mkdir(parents=True, exist_ok=True)  # for the lock file
        with FileLock(str(path) + ".lock"):
            found = self._read(path, len(sentences))  # another process may have written it meanwhile
            if found is not None:
                self.hits += 1
                return found
            self.misses += 1
            embeddings = check_embeddings(self.encoder, self.encoder.encode(
                sentences, batch_size=batch_size, show_progress=show_progress), len(sentences))
            # what was stored, so a miss and a later hit give identical numbers
            return self._write(path, embeddings).astype(np.float32)

    def store(self, sentences: Sequence[str], embeddings: np.ndarray) -> None:
        """Keep ``embeddings`` of ``sentences`` computed elsewhere (one pass over all layers of a network,
        :func:`cache_layers`) as this encoder's entry; checked like the encoder's own output."""
        sentences = check_sentences(sentences)
        path = self.path_for(sentences)
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            if self._read(path, len(sentences)) is None:
                self._write(path, check_embeddings(self.encoder, embeddings, len(sentences)))

    def holds(self, sentences: Sequence[str]) -> bool:
        """Whether an entry for ``sentences`` is stored (checked when it is read: a damaged one is recomputed)."""
        return self.path_for(sentences).is_file()

    def _read(self, path: Path, n: int) -> np.ndarray | None:
        if not path.is_file():
            return None
        try:
            with safe_open(str(path), framework="numpy") as handle:  # one read: header and array
                meta = handle.metadata() or {}
                array = handle.get_tensor("embeddings")
            problem = None
            if meta.get("fingerprint") != self.fingerprint:
                problem = "it belongs to another encoder"
            elif meta.get("sentences") != path.stem:
                problem = "it was written for another sentence list"
            elif array.shape != (n, self.dim):
                problem = f"shape {array.shape} instead of ({n}, {self.dim})"
            elif _array_digest(array) != meta.get("sha256"):
                problem = "its checksum does not match"
        except (SafetensorError, OSError, ValueError, KeyError) as err:
            problem = f"it cannot be read ({err})"
        if problem is None:
            return array.astype(np.float32)
        log.warning("cache entry %s is corrupt (%s); recomputing it", path, problem)
        path.unlink(missing_ok=True)
        return None

    def _write(self, path: Path, embeddings: np.ndarray) -> np.ndarray:
        stored = np.ascontiguousarray(embeddings.astype(np.float32))
        if self.dtype == "float16" and float16_is_exact(embeddings):
            stored = np.ascontiguousarray(embeddings.astype(np.float16))
        meta = {"format": FORMAT_VERSION, "encoder": self.name, "fingerprint": self.fingerprint,
                "sha256": _array_digest(stored), "n": str(len(stored)), "sentences": path.stem}
        path.parent.mkdir(parents=True, exist_ok=True)
        self._claim()
        atomic_write(path, lambda tmp: save_file({"embeddings": stored}, str(tmp), metadata=meta))
        return stored

    def __repr__(self) -> str:
        return f"<cached {self.encoder!r}>"


SAFE_FINGERPRINT = re.compile(r"[^./\\\x00][^/\\\x00]*")  # names one folder: no separators, no leading dot


def check_fingerprint(encoder: Encoder) -> str:
    """The encoder's fingerprint, if it can name a cache folder (no path separators, not starting with ".")."""
    fingerprint = str(getattr(encoder, "fingerprint", ""))
    if not SAFE_FINGERPRINT.fullmatch(fingerprint):
        raise WorkbenchError(f"encoder {getattr(encoder, 'name', '?')!r} has fingerprint {fingerprint!r}; "
                             "fingerprints name cache folders, so they may not contain '/' or '\\' or start with "
                             "'.' (use e.g. a sha256 hex digest of the weights)")
    return fingerprint


def float16_is_exact(embeddings: np.ndarray) -> bool:
    """Whether float16 keeps every vector to within :data:`FLOAT16_TOLERANCE` of its distance from the entry's
    mean vector — what probes and similarities read. Tiny vectors (float16's smallest normal number is 6e-5)
    and vectors sharing a large offset (11 significant bits) do not survive it; an entry of one vector is
    never stored as float16."""
    if len(embeddings) < 2 or np.abs(embeddings).max(initial=0) > FLOAT16_MAX:
        return False
    error = np.abs(embeddings.astype(np.float16).astype(np.float32) - embeddings).max(axis=1)
    spread = np.linalg.norm(embeddings - embeddings.mean(axis=0), axis=1)
    return bool((error <= FLOAT16_TOLERANCE * spread).all())


def cached(encoder: Encoder, dtype: str = "float32") -> CachedEncoder:
    """``encoder`` behind the embedding cache (an already cached encoder is returned as it is)."""
    return encoder if isinstance(encoder, CachedEncoder) else CachedEncoder(encoder, dtype)


def cache_layers(encoder, sentences: Sequence[str], layers: Sequence[int], show_progress: bool = False
                 ) -> list[CachedEncoder]:
    """The cached encoder of each of ``layers`` of ``encoder`` (one that offers ``at_layer`` and
    ``encode_layers``), with ``sentences`` stored for each: the layers not cached yet come from one forward pass
    of the network, not one pass per layer."""
    views = [cached(encoder.at_layer(layer)) for layer in layers]
    missing = [view for view in views if not view.holds(sentences)]
    if missing:
        arrays = encoder.encode_layers(sentences, [view.encoder.layer for view in missing],
                                       show_progress=show_progress)
        for view in missing:
            view.store(sentences, arrays[view.encoder.layer])
    return views


@dataclass
class CacheEntry:
    encoder: str
    fingerprint: str
    n_entries: int
    n_sentences: int
    bytes: int


def cache_summary() -> pd.DataFrame:
    """One row per cached encoder: name, fingerprint prefix, embedding entries, sentences, and bytes on disk
    (embeddings and the results computed from them)."""
    rows = []
    root = cache_dir()
    for folder in sorted(p for p in root.glob("*") if p.is_dir()) if root.is_dir() else []:
        name, entries, sentences, size = "?", 0, 0, 0
        for path in folder.glob("*.safetensors"):
            size += path.stat().st_size
            entries += 1
            try:
                with safe_open(str(path), framework="numpy") as handle:
                    meta = handle.metadata() or {}
                name, sentences = meta.get("encoder", name), sentences + int(meta.get("n", 0))
            except (SafetensorError, OSError, ValueError):
                pass
        size += sum(p.stat().st_size for p in (results_dir() / folder.name).rglob("*.json"))
        if entries or size:  # a folder that holds nothing (yet) is no row
            rows.append(CacheEntry(name, folder.name, entries, sentences, size).__dict__)
    return pd.DataFrame(rows, columns=list(CacheEntry.__dataclass_fields__))


def clear_cache(encoder: str | None = None) -> int:
    """Delete every entry, or those of one encoder (its name, or a fingerprint of at least 6 hex digits);
    returns the bytes freed."""
    root = cache_dir()
    freed = 0
    summary = cache_summary()
    if encoder is not None and not any(encoder == row.encoder or (len(encoder) >= 6 and row.fingerprint.startswith(
            encoder[:16])) for row in summary.itertuples()):
        raise WorkbenchError(f"nothing cached for encoder {encoder!r}; cached: "
                             f"{', '.join(sorted(set(summary['encoder']))) or 'nothing'} (`workbench cache ls`)")
    kept = []
    for row in summary.itertuples():
        by_fingerprint = encoder is not None and len(encoder) >= 6 and row.fingerprint.startswith(encoder[:16])
        if encoder is None or encoder == row.encoder or by_fingerprint:
            for folder in (root / row.fingerprint, results_dir() / row.fingerprint):
                shutil.rmtree(folder, ignore_errors=True)
            if (root / row.fingerprint).exists():  # a read-only home: say so rather than count it as freed
                kept.append(row.encoder)
            else:
                freed += row.bytes
    if kept:
        raise WorkbenchError(f"could not delete the cached embeddings of {', '.join(sorted(set(kept)))} in {root} "
                             f"(freed {freed / 2 ** 20:.1f} MiB of the rest): is the folder read-only? "
                             "Make it writable, or set WORKBENCH_HOME to a folder you can write")
    return freed


def results_dir() -> Path:
    return home_dir() / "cache" / "results"


def remember(kind: str, fingerprint: str, key: dict, compute: Callable[[], dict | list],
             refresh: bool = False) -> dict | list:
    """The JSON result of ``compute()`` for the encoder with ``fingerprint``, stored under (``kind``, ``key``)
    and computed only on a miss (or always, with ``refresh``). ``key`` names everything else the result
    depends on (data, options, version).
    """
    key = {"fingerprint": fingerprint, **key}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:24]
    path = results_dir() / fingerprint[:16] / kind / f"{digest}.json"
    if path.is_file() and not refresh:
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if (stored.get("key") == json.loads(json.dumps(key, default=str))
                    and stored.get("sha256") == _result_digest(stored.get("result"))):
                return stored["result"]
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            pass
        log.warning("cached result %s is unreadable, edited or stale; recomputing it", path)
    start = time.perf_counter()
    result = json.loads(json.dumps(compute(), default=str))  # as a later read will return it
    made = {"seconds": round(time.perf_counter() - start, 3), **made_with(),
            "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"key": key, "result": result, "sha256": _result_digest(result), "made": made}))
    return result


def stored_results(kind: str = "probe") -> list[dict]:
    """Every stored result of ``kind`` whose checksum holds: ``{"key", "result", "made"}`` (``made``: runtime,
    versions and machine, empty for a result stored before they were recorded); an edited entry is left out."""
    entries = []
    for path in sorted(results_dir().glob(f"*/{kind}/*.json")):
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored.get("sha256") == _result_digest(stored.get("result")):
                entries.append({"key": stored["key"], "result": stored["result"], "made": stored.get("made", {})})
                continue
        except (OSError, json.JSONDecodeError, UnicodeDecodeError, AttributeError, KeyError):
            pass
        log.warning("cached result %s is unreadable or edited: left out", path)
    return entries


def _result_digest(result) -> str:
    return hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()


TEMP_FILE = re.compile(r"\..+\.(\d+)\.(?:tmp|old)")  # what every atomic write or folder swap leaves while it runs
LOCK_FILE = re.compile(r"\..+\.lock")  # a models writer's lock (paths.only_writer): its content is the writer's pid


def stale_temp_files(roots: Sequence[Path] | None = None) -> list[Path]:
    """What writers killed mid-write left behind under the workbench home and the models folder (or ``roots``):
    temporary files, the temporary folders an export or import builds a model in, and their locks, each only where
    the process that wrote it is gone."""
    stale = []
    for root in roots or (home_dir(), trained_dir()):
        for path in root.rglob(".*") if root.is_dir() else []:
            match = TEMP_FILE.fullmatch(path.name)
            if match and not _alive(int(match.group(1))):
                stale.append(path)
            elif LOCK_FILE.fullmatch(path.name) and path.is_file():
                holder = path.read_text().strip()
                if holder.isdigit() and not _alive(int(holder)):
                    stale.append(path)
    return sorted(p for p in stale if not any(parent in stale for parent in p.parents))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or a number no pid can be): leave it alone
    return True


def clear_stale(roots: Sequence[Path] | None = None) -> int:
    """Delete :func:`stale_temp_files` (folders with what they hold); returns the bytes freed."""
    freed = 0
    for path in stale_temp_files(roots):
        if path.is_dir():
            freed += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            shutil.rmtree(path, ignore_errors=True)
        else:
            freed += path.stat().st_size
            path.unlink(missing_ok=True)
    return freed