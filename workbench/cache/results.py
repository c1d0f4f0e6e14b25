"""The result store: what is computed from an encoder's embeddings (a probe's accuracy, an STS correlation), kept as
JSON per (encoder fingerprint, kind, key) with how it was made (seconds, machine, library versions) and a keyed
digest of the result, so asking again is free and an edited entry is recomputed, not returned.

The digest is an HMAC-SHA256 under a random key kept in the home (``cache/results/.key``, readable by its owner
only): an editor who recomputes a plain sha256 of the changed result, or copies an entry from another home, does
not pass. It protects against edits and tools, not against someone who reads the key."""
from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..paths import atomic_write, home_dir, made_with

log = logging.getLogger(__name__)
_KEYS: dict[Path, bytes] = {}  # the result key of each home this process has used
_KEY_LOCK = threading.Lock()  # joblib's threads store results too


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
                    and _holds(stored)):
                return stored["result"]
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            stored = None
        _say_dropped(path, stored, recomputed=True)
    start = time.perf_counter()
    result = json.loads(json.dumps(compute(), default=str))  # as a later read will return it
    made = {"seconds": round(time.perf_counter() - start, 3), **made_with(),
            "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"key": key, "result": result, "hmac_sha256": _result_digest(result), "made": made}))
    return result


def stored_results(kind: str = "probe") -> list[dict]:
    """Every stored result of ``kind`` whose checksum holds: ``{"key", "result", "made"}`` (``made``: runtime,
    versions and machine, empty for a result stored before they were recorded); an edited entry is left out."""
    entries = []
    for path in sorted(results_dir().glob(f"*/{kind}/*.json")):
        stored = None
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if _holds(stored):
                entries.append({"key": stored["key"], "result": stored["result"], "made": stored.get("made", {})})
                continue
        except (OSError, json.JSONDecodeError, UnicodeDecodeError, AttributeError, KeyError):
            pass
        _say_dropped(path, stored, recomputed=False)
    return entries


def _say_dropped(path: Path, stored, recomputed: bool) -> None:
    """Log why a stored entry is not used: stored before results were keyed (expected, once), or unreadable, edited
    or stale."""
    if isinstance(stored, dict) and "sha256" in stored and "hmac_sha256" not in stored:
        log.info("cached result %s was stored before results were keyed: %s", path,
                 "recomputing it" if recomputed else "left out (asked again, it is recomputed)")
    elif recomputed:
        log.warning("cached result %s is unreadable, edited or stale; recomputing it", path)
    else:
        log.warning("cached result %s is unreadable or edited: left out", path)


def _holds(stored: dict) -> bool:
    """Whether a stored entry's result is the one this home wrote (its keyed digest matches)."""
    return hmac.compare_digest(str(stored.get("hmac_sha256")), _result_digest(stored.get("result")))


def _result_digest(result) -> str:
    return hmac.new(_key(), json.dumps(result, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def _key() -> bytes:
    """This home's result key, made on first use (32 random bytes, mode 0600) and kept in memory per home."""
    path = results_dir() / ".key"
    with _KEY_LOCK:
        if path not in _KEYS:
            _KEYS[path] = _read_or_make_key(path)
        return _KEYS[path]


def _read_or_make_key(path: Path) -> bytes:
    """The key at ``path``; made when missing (the first process to make it wins, the others read the winner's) or
    damaged (results under a damaged key cannot be told from edited ones: they are recomputed)."""
    try:
        key = path.read_bytes()
        if len(key) == 32:
            return key
        damaged = True
    except FileNotFoundError:
        damaged = False
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key.", suffix=f".{os.getpid()}.tmp")
    try:
        os.fchmod(handle, 0o600)
        os.write(handle, secrets.token_bytes(32))
        os.close(handle)
        if damaged:
            os.replace(tmp, path)
            log.warning("%s was damaged and was made again; cached results are recomputed", path)
        else:
            try:
                os.link(tmp, path)  # atomic, and never over another process's key
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links: the rename cannot lose a key that is not there
                if not path.exists():
                    os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path.read_bytes()
