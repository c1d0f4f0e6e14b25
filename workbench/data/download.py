"""Fetching the public data for users outside this environment (the shared data makes it unnecessary here).

- :func:`download`: HTTP(S) download with resume (``Range``), an optional sha256 check, a progress bar and an
  atomic final rename; a ``.part`` file survives an interruption and the next call continues it.
- :func:`opus_moses_to_tsv`: an OPUS "moses" zip (two line-aligned files) to ``parallel/en-XX.tsv.gz``.
- :func:`sts_archive_to_tsv`: an official SemEval STS test archive to ``eval/sts/STSyy/<dataset>.tsv``.
"""
from __future__ import annotations

import gzip
import logging
import os
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from ..checks import DataFormatError, WorkbenchError
from ..paths import atomic_write
from ..progress import progress_bar
from . import sha256_of
from .eval_sets import STS_DATASETS

log = logging.getLogger(__name__)

OPUS_URL = "https://object.pouta.csc.fi/OPUS-{corpus}/{version}/moses/{pair}.txt.zip"
STS_URLS = {
    2012: "http://ixa2.si.ehu.es/stswiki/images/4/40/STS2012-en-test.zip",
    2013: "http://ixa2.si.ehu.es/stswiki/images/2/2f/STS2013-en-test.zip",
    2014: "http://ixa2.si.ehu.es/stswiki/images/8/8c/STS2014-en-test.zip",
    2015: "http://ixa2.si.ehu.es/stswiki/images/d/da/STS2015-en-test.zip",
    2016: "http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip",
}


def download(url: str, dest: str | Path, sha256: str | None = None, show_progress: bool = True,
             timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` unless a verified copy is already there; resume a partial download."""
    dest = Path(dest)
    if dest.is_file() and (sha256 is None or sha256_of(dest) == sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # the part file is already complete
            response = None
        else:
            raise WorkbenchError(f"download of {url} failed: HTTP {err.code} {err.reason}") from None
    except urllib.error.URLError as err:
        raise WorkbenchError(f"download of {url} failed: {err.reason}") from None
    if response is not None:
        with response:
            resumed = offset and response.status == 206
            if offset and not resumed:
                log.info("server ignored the range request for %s; starting over", url)
                offset = 0
            length = response.headers.get("Content-Length")
            total = offset + int(length) if length is not None else None
            with open(part, "ab" if resumed else "wb") as f, progress_bar(
                    total=total, initial=offset, unit="B", unit_scale=True, desc=dest.name,
                    disable=not show_progress) as bar:
                for block in iter(lambda: response.read(1 << 16), b""):
                    f.write(block)
                    bar.update(len(block))
    if sha256 is not None:
        actual = sha256_of(part)
        if actual != sha256:
            part.unlink()
            raise WorkbenchError(f"checksum mismatch for {url}: got sha256 {actual}, expected {sha256}; "
                                 "the partial file was deleted, try again")
    os.replace(part, dest)
    return dest


def _clean(text: str) -> str:
    return " ".join(text.replace("\u200b", "").replace("\ufeff", "").split())


def _aligned_members(archive: zipfile.ZipFile, zip_path: Path, suffixes: tuple[str, str],
                     layout: str) -> tuple[list[str], list[str]]:
    """Lines of the two members ending in ``suffixes``; they must be unique and of equal length."""
    names = archive.namelist()
    members = [[n for n in names if n.endswith(suffix)] for suffix in suffixes]
    if any(len(m) != 1 for m in members):
        raise DataFormatError(zip_path, None, f"members {names}",
                              f"one '*{suffixes[0]}' and one '*{suffixes[1]}' file ({layout})")
    first, second = (archive.read(m[0]).decode("utf-8").splitlines() for m in members)
    if len(first) != len(second):
        raise DataFormatError(zip_path, None, f"{members[0][0]} has {len(first)} lines, {members[1][0]} "
                              f"{len(second)}", "line-aligned files of equal length")
    return first, second


def opus_moses_to_tsv(zip_path: str | Path, language: str, out: str | Path) -> int:
    """Write the English/``language`` files of an OPUS moses zip as ``english<TAB>foreign`` gzip lines.

    Pairs with an empty side are skipped and counted in the log. Returns the number of pairs written.
    """
    zip_path, out = Path(zip_path), Path(out)
    with zipfile.ZipFile(zip_path) as archive:
        english, foreign = _aligned_members(archive, zip_path, (".en", f".{language}"), "OPUS moses layout")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    written = skipped = 0
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for e, x in zip(english, foreign):
            e, x = _clean(e), _clean(x)
            if e and x:
                f.write(f"{e}\t{x}\n")
                written += 1
            else:
                skipped += 1
    os.replace(tmp, out)
    if skipped:
        log.info("%s: skipped %d pairs with an empty side", zip_path.name, skipped)
    return written


def sts_archive_to_tsv(zip_path: str | Path, year: int, out_dir: str | Path) -> dict[str, int]:
    """Pair ``STS.input.<ds>.txt`` with ``STS.gs.<ds>.txt`` in an official STS test zip and write
    ``score<TAB>sentence1<TAB>sentence2`` files (rows with an empty gold line are dropped, as in SentEval)."""
    if year not in STS_DATASETS:
        raise ValueError(f"no STS year {year!r}; valid: {', '.join(map(str, STS_DATASETS))}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    with zipfile.ZipFile(zip_path) as archive:
        for dataset in STS_DATASETS[year]:
            lines, scores = _aligned_members(archive, Path(zip_path), (f".input.{dataset}.txt", f".gs.{dataset}.txt"),
                                             "official STS test archive")
            rows = ["score\tsentence1\tsentence2"]
            for number, (line, score) in enumerate(zip(lines, scores), start=1):
                if not score.strip():
                    continue
                fields = line.split("\t")
                if len(fields) < 2:
                    raise DataFormatError(f"{zip_path}!STS.input.{dataset}.txt", number, f"{len(fields)} columns",
                                          "at least 2 tab-separated sentences")
                rows.append(f"{score.strip()}\t{fields[0]}\t{fields[1]}")
            atomic_write(out_dir / f"{dataset}.tsv", "\n".join(rows) + "\n")
            counts[dataset] = len(rows) - 1
    return counts
