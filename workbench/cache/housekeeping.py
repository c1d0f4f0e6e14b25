"""What the cache holds and what to free: one row per cached encoder, clearing an encoder's entries, and the leftovers
of writers killed mid-write (temporary files and folders, locks) under the home and the models folder."""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from safetensors import SafetensorError, safe_open

from ..checks import WorkbenchError
from ..paths import home_dir, trained_dir
from .embeddings import cache_dir
from .results import results_dir


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
