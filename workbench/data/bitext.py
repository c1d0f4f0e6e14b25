"""Your own bitext as a language pair: a parallel file checked whole before any work, then stored under the
workbench home with its digest, so that it is split, tokenised, trained on and probed as a shipped pair is.

The file is ``first<TAB>second`` per line in the pair's order (``english<TAB>other`` for ``en-XX``; plain or
``.gz``), or a Moses pair of files (one sentence per line, the first language's file first, the same number of
lines). Registration refuses, in one sentence naming the file and line, a file that is missing, not a regular
file, not UTF-8 (or a ``.gz`` that is not gzip), with a line of another column count or an empty side, or with
fewer than :data:`MIN_PAIRS` pairs left after the length filter; a pair that ships with the data; and a file that
is already another pair's corpus. Exact duplicate pairs are dropped and counted. Nothing is written before every
check has passed.

A pair of two other languages can also be made from the shipped corpora (:func:`pivot_bitext`): ``fr-es`` from
the English sentences en-fr and en-es share, each French translation beside each Spanish one.
"""
from __future__ import annotations

import datetime
import gzip
import hashlib
import json
import logging
import shutil
import stat
from pathlib import Path

from ..checks import DataFormatError, WorkbenchError
from ..paths import atomic_write, data_dir
from . import sha256_of, utf8_lines
from .corpora import corpus_digest, corpus_path, filter_by_length, forget_read, known_pairs, own_folder, read_pairs
from .splitting import Pair, normalise
from .languages import PAIRS, language_name, languages_of_pair, pair_name
from .tokenizer import pair_tokenizer

log = logging.getLogger(__name__)
MIN_PAIRS = 1000  # after the length filter: enough for a split with validation, probing and test sentences
RECORD = "pair.json"


def read_bitext(corpus: str | Path, other: str | Path | None = None) -> list[Pair]:
    """The file's pairs in order: a TSV (``other`` None) or a Moses pair of files (``corpus`` the first language,
    ``other`` the second), every line checked (:class:`DataFormatError` names the file and line)."""
    for path in (corpus, other):
        if path is not None:
            _check_regular(Path(path))
    if other is None:
        return read_pairs(corpus)
    first, second = _sentences(Path(corpus)), _sentences(Path(other))
    if len(first) != len(second):
        raise DataFormatError(other, None, f"{len(second)} lines against {len(first)} in {corpus}",
                              "a Moses pair of files: line N of each is a translation of the other")
    return list(zip(first, second))


def _check_regular(path: Path) -> None:
    if not path.exists():
        raise WorkbenchError(f"no corpus file at {path}")
    if not stat.S_ISREG(path.stat().st_mode):
        raise WorkbenchError(f"{path} is not a regular file (a folder, pipe or device); give a parallel text file")


def _sentences(path: Path) -> list[str]:
    out = []
    for number, line in utf8_lines(path):
        if not line.strip():
            raise DataFormatError(path, number, "an empty line", "one non-empty sentence per line")
        out.append(line.strip())
    return out


def content_digest(pairs: list[Pair]) -> str:
    """sha256 of the pairs themselves (not of the file's bytes), so a recompressed copy is the same corpus."""
    h = hashlib.sha256()
    for first, second in pairs:
        h.update(f"{first}\t{second}\n".encode())
    return h.hexdigest()


def registered(pair: str) -> dict | None:
    """The record of a registered pair (source, digests, counts), or None."""
    path = own_folder(pair) / RECORD
    return json.loads(path.read_text()) if path.is_file() else None


def register_bitext(pair: str, corpus: str | Path, other: str | Path | None = None, *, force: bool = False
                    ) -> dict:
    """Check ``corpus`` whole and register it as ``pair`` (``en-XX``, or two other languages); returns the pair's
    record.

    The same corpus registered again is a no-op; another corpus for a registered pair needs ``force`` (what was
    built from the old one stays keyed on its digest and is not reused).
    """
    name = _own_pair(pair)
    source = Path(corpus)
    read = read_bitext(source, other)
    where = f"{source}" + (f" + {other}" if other else "")
    files = [sha256_of(p) for p in (source, other) if p is not None]
    return _register(name, read, where, {"source": [str(Path(p).resolve()) for p in (source, other) if p is not None],
                                         "source_sha256": files}, files, force)


def pivot_bitext(pair: str, via: str = "en", *, force: bool = False) -> dict:
    """Register ``pair`` (two languages other than ``via``) from the corpora of ``via``-XX and ``via``-YY: every
    sentence of one language beside every sentence of the other that translate the same ``via`` sentence (compared
    normalised), sides that are the same text dropped. Returns the pair's record, with how many ``via`` sentences
    the two corpora share."""
    name = _own_pair(pair)
    first, second = languages_of_pair(name)
    if via in (first, second):
        raise WorkbenchError(f"{name} has {language_name(via)} in it; a pivot pair is of two other languages")
    sources = [f"{via}-{lang}" for lang in (first, second)]
    missing = [p for p in sources if p not in known_pairs()]
    if missing:
        raise WorkbenchError(f"pivoting {name} through {via} needs the corpora of {' and '.join(sources)}; "
                             f"{', '.join(missing)} has none (known pairs: {', '.join(known_pairs())})")
    sides = []
    for source in sources:
        by_pivot: dict[str, list[str]] = {}
        for pivot, sentence in read_pairs(corpus_path(source)):
            by_pivot.setdefault(normalise(pivot), []).append(sentence)
        sides.append(by_pivot)
    shared = [key for key in sides[0] if key and key in sides[1]]
    read = [(a, b) for key in shared for a in dict.fromkeys(sides[0][key]) for b in dict.fromkeys(sides[1][key])
            if a != b]
    files = [corpus_digest(source) for source in sources]
    return _register(name, read, f"the {via} pivot of {' and '.join(sources)}",
                     {"source": [str(corpus_path(p)) for p in sources], "source_sha256": files,
                      "pivot": {"via": via, "pairs": sources, "shared_sentences": len(shared)}}, [], force)


def _own_pair(pair: str) -> str:
    """The pair's name, refused where it ships with the data or the data folder already has its corpus."""
    name = pair_name(pair)
    if name in PAIRS:
        raise WorkbenchError(f"{name} ships with the data ({corpus_path(name)}); a corpus of your own is registered "
                             "under its own language pair")
    if (data_dir() / "parallel" / f"{name}.tsv.gz").is_file():
        raise WorkbenchError(f"{name} already has a corpus in the data folder ({corpus_path(name)}), which is what "
                             "its runs read; move that file away to register another")
    return name


def _register(name: str, read: list[Pair], where: str, source: dict, files: list[str], force: bool) -> dict:
    """Deduplicate, length-filter and store ``read`` as the pair ``name`` (nothing written unless every check
    passes); ``source`` says where the pairs came from, ``files`` the digests another pair's corpus is matched on."""
    first, second = languages_of_pair(name)
    unique = list(dict.fromkeys(read))
    kept = filter_by_length(unique, second, first=first)
    if len(kept) < MIN_PAIRS:
        raise WorkbenchError(f"{where}: {len(kept)} pairs left after removing {len(read) - len(unique)} duplicates "
                             f"and keeping 3-100 tokens a side; a pair needs at least {MIN_PAIRS:,} to split into "
                             "training, validation, probing and test sentences")
    digest = content_digest(unique)
    _check_not_known(name, digest, files, where, force)
    if (before := registered(name)) and before["content_sha256"] == digest:
        return before
    record = {"pair": name, "language": second, "language_name": language_name(second),
              **({} if first == "en" else {"languages": [first, second],
                                           "language_names": [language_name(first), language_name(second)]}),
              **source, "content_sha256": digest, "lines": len(read), "duplicates_dropped": len(read) - len(unique),
              "pairs": len(unique), "pairs_after_length_filter": len(kept),
              "registered": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    folder = own_folder(name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    atomic_write(folder / "corpus.tsv.gz", lambda tmp: _write_corpus(tmp, unique))
    atomic_write(folder / RECORD, json.dumps(record, indent=2, ensure_ascii=False))  # last: a pair exists once
    log.info("registered %s: %d pairs from %s", name, len(unique), where)
    forget_read()  # a replaced corpus keeps its path: forget what this process read or built of the old one
    pair_tokenizer.cache_clear()
    return record


def _check_not_known(name: str, digest: str, files: list[str], where: str, force: bool) -> None:
    """Refuse a corpus that is already another pair's, or another corpus for a registered pair without force."""
    for other_pair in known_pairs():
        record = registered(other_pair)
        if other_pair in PAIRS and corpus_path(other_pair).is_file() and corpus_digest(other_pair) in files:
            raise WorkbenchError(f"{where} is the corpus of the shipped pair {other_pair}; a corpus is one language "
                                 "pair")
        if other_pair != name and record and record["content_sha256"] == digest:
            raise WorkbenchError(f"{where} is already registered as {other_pair} ({record['language_name']}); a "
                                 "corpus is one language pair")
    record = registered(name)
    if record and record["content_sha256"] != digest and not force:
        raise WorkbenchError(f"{name} is registered from {', '.join(record['source'])} ({record['pairs']:,} pairs, "
                             f"{record['registered']}); to replace it with {where}, add --force")


def _write_corpus(path: Path, pairs: list[Pair]) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        for first, second in pairs:
            out.write(f"{first}\t{second}\n".encode())
