"""Data layer: corpora, tokenizer, batching, evaluation-set readers, downloads."""
from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..checks import DataFormatError


def utf8_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, line without its newline)`` of a UTF-8 file (gzip if ``.gz``); undecodable bytes raise
    :class:`DataFormatError` naming the line."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    number = 0
    try:
        with opener(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                try:
                    yield number, raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as err:
                    raise DataFormatError(path, number, f"undecodable bytes ({err.reason} at byte {err.start})",
                                          "UTF-8 text") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:  # a damaged or cut download
        raise DataFormatError(path, number + 1, f"not readable as gzip ({err or 'cut short'})",
                              "a whole gzip file: download it again") from None


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
