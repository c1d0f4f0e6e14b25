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
results.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from filelock import FileLock
from safetensors.numpy import save_file

from ..checks import WorkbenchError, check_sentences, whole
from ..encoders import Encoder, check_contract, check_embeddings
from ..paths import atomic_write, home_dir

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
    return hashlib.sha256(np.ascontiguousarray(array).data).hexdigest()  # the buffer itself: no copy of a layer


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

    def claim(self) -> None:
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
            return self._write(path, embeddings).astype(np.float32, copy=False)

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
            meta, array = read_entry(path)
            problem = None
            if meta.get("fingerprint") != self.fingerprint:
                problem = "it belongs to another encoder"
            elif meta.get("sentences") != path.stem:
                problem = "it was written for another sentence list"
            elif array.shape != (n, self.dim):
                problem = f"shape {array.shape} instead of ({n}, {self.dim})"
            elif _array_digest(array) != meta.get("sha256"):
                problem = "its checksum does not match"
        except (OSError, ValueError, KeyError, TypeError) as err:
            problem = f"it cannot be read ({err!r})"
        if problem is None:
            return array.astype(np.float32, copy=False)
        log.warning("cache entry %s is corrupt (%s); recomputing it", path, problem)
        path.unlink(missing_ok=True)
        return None

    def _write(self, path: Path, embeddings: np.ndarray) -> np.ndarray:
        stored = np.ascontiguousarray(embeddings.astype(np.float32))
        if self.dtype == "float16" and float16_is_exact(embeddings):
            stored = np.ascontiguousarray(embeddings.astype(np.float16))
        path.parent.mkdir(parents=True, exist_ok=True)
        self.claim()
        metadata = self.metadata(path, _array_digest(stored), len(stored))
        atomic_write(path, lambda tmp: save_file({"embeddings": stored}, str(tmp), metadata=metadata))
        return stored

    def metadata(self, path: Path, sha256: str, n: int) -> dict[str, str]:
        """The header of the entry at ``path``: what a read checks the array against."""
        return {"format": FORMAT_VERSION, "encoder": self.name, "fingerprint": self.fingerprint, "sha256": sha256,
                "n": str(n), "sentences": path.stem}

    def __repr__(self) -> str:
        return f"<cached {self.encoder!r}>"


ENTRY_DTYPES = {"F32": np.float32, "F16": np.float16}
MAX_HEADER = 1 << 16


def read_entry(path: Path) -> tuple[dict, np.ndarray]:
    """An entry's header metadata and its array, read from the file straight into the array (no mapping of the
    file beside it: a layer of a sweep is held once, not twice). Anything but the one float tensor the cache
    writes, whole, is refused (ValueError)."""
    with open(path, "rb") as handle:
        size = int.from_bytes(handle.read(8), "little")
        if not 2 <= size <= MAX_HEADER:
            raise ValueError(f"a header of {size} bytes")
        header = json.loads(handle.read(size))
        tensor = header.pop("embeddings", None) if isinstance(header, dict) else None
        meta = header.pop("__metadata__", {}) if isinstance(header, dict) else None
        shape = tensor.get("shape") if isinstance(tensor, dict) else None
        if (header or not isinstance(meta, dict) or tensor.get("dtype") not in ENTRY_DTYPES or not isinstance(
                shape, list) or len(shape) != 2 or not all(isinstance(k, int) and k >= 0 for k in shape)):
            raise ValueError("not the one tensor the cache writes")
        dtype, (rows, columns) = ENTRY_DTYPES[tensor["dtype"]], shape
        nbytes = rows * columns * np.dtype(dtype).itemsize
        if tensor.get("data_offsets") != [0, nbytes] or os.fstat(handle.fileno()).st_size != 8 + size + nbytes:
            raise ValueError("its size is not its header's: truncated, or bytes past its tensor")
        array = np.fromfile(handle, dtype=dtype, count=rows * columns)
    return meta, array.reshape(rows, columns)


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
