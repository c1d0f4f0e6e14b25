"""The result store: what is computed from an encoder's embeddings (a probe's accuracy, an STS correlation), kept as
JSON per (encoder fingerprint, kind, key) with a checksum of the result and how it was made (seconds, machine,
library versions), so asking again is free and an entry edited by hand is recomputed, not returned."""
from __future__ import annotations

import datetime
import hashlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

from ..paths import atomic_write, home_dir, made_with

log = logging.getLogger(__name__)


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
