"""Reading the tables a user hands over (pairs for style transfer, labelled sentences for an own probing task).

Every cell stays text as written: a TSV's cells are literal (a leading quote is part of the sentence), a CSV
follows the CSV quoting rules, a JSONL file holds one JSON object a line; "NA" is a sentence, not a missing
value. A UTF-8 byte-order mark is no part of the header. What cannot be read is refused in one sentence that
names the file and the line.
"""
from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pandas as pd

from ..checks import WorkbenchError


def read_table(path: str | Path, rows: str, layout: str) -> pd.DataFrame:
    """The table in ``path`` as a frame of strings: ``.tsv`` and ``.jsonl`` files (optionally ``.gz``) as such,
    any other as CSV. ``rows`` names what a line holds ("pairs") and ``layout`` what the file should look like,
    both for the errors."""
    path = str(path)
    if not path.strip():
        raise WorkbenchError(f"the {rows} file's name {path!r} is empty; give a .tsv, .csv or .jsonl file ({layout})")
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:
            if path.endswith((".jsonl", ".jsonl.gz")):
                return _jsonl(path, handle, rows, layout)
            return _delimited(path, handle, rows, layout)
    except FileNotFoundError:
        raise WorkbenchError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise WorkbenchError(f"{path} is a folder; give a .tsv, .csv or .jsonl file") from None
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError):
        raise WorkbenchError(f"{path} is not UTF-8 text; save it as UTF-8") from None


def _delimited(path: str, handle, rows: str, layout: str) -> pd.DataFrame:
    tsv = path.endswith((".tsv", ".tsv.gz"))
    kind = "TSV" if tsv else "CSV"
    try:
        lines = list(csv.reader(handle, delimiter="\t" if tsv else ",",
                                quoting=csv.QUOTE_NONE if tsv else csv.QUOTE_MINIMAL))
    except csv.Error as err:
        raise WorkbenchError(f"{path}: cannot read it as {kind} ({err})") from None
    if not lines:
        raise WorkbenchError(f"{path} is empty; {layout}")
    header, body = lines[0], [line for line in lines[1:] if line]
    ragged = [number for number, line in enumerate(lines[1:], 2) if line and len(line) != len(header)]
    if ragged:
        raise WorkbenchError(f"{path}: line {ragged[0]} has another number of {kind} cells than the header's "
                             f"{len(header)} ({len(ragged)} such line(s)); {layout}")
    if not body:
        raise WorkbenchError(f"{path} has a header but no {rows}; {layout}")
    return pd.DataFrame(body, columns=header, dtype=str)


def _jsonl(path: str, handle, rows: str, layout: str) -> pd.DataFrame:
    records = []
    for number, line in enumerate(handle, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise WorkbenchError(f"{path}: line {number} is not JSON ({err.msg}); {layout}") from None
        if not isinstance(record, dict) or any(isinstance(v, (dict, list)) for v in record.values()):
            raise WorkbenchError(f"{path}: line {number} is not a JSON object of plain values; {layout}")
        records.append({key: "" if value is None else str(value) for key, value in record.items()})
    if not records:
        raise WorkbenchError(f"{path} has no {rows}; {layout}")
    return pd.DataFrame(records, dtype=str).fillna("")
