"""Data layer: corpora, tokenizer, batching, evaluation-set readers, downloads."""
from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..checks import DataFormatError
from ..paths import sha256_of  # (here too: the data layer's readers check digests)


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


