"""Readers for the evaluation sets in ``eval/`` (layout and column orders: ``eval/SOURCES.md``).

Every file is tab-separated UTF-8 with one header line and is read with a plain ``split('\\t')``: default
csv quoting would merge lines in several STS files whose sentences contain ``"``.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..checks import DataFormatError, check_name
from ..paths import data_dir
from . import utf8_lines
from .eval_sets import HARD_STS, STS17_TRACKS, STS_DATASETS, STSB_SPLITS, TATOEBA_CODES


def read_tsv(path: str | Path, header: tuple[str, ...]) -> list[list[str]]:
    """Rows of a headed TSV with exactly ``len(header)`` non-empty fields per line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no evaluation file at {path} (data root: {data_dir()}; set WORKBENCH_DATA "
                                "or run `workbench data download`)")
    expected = "\t".join(header)
    rows = []
    for number, line in utf8_lines(path):
        if number == 1:
            if line != expected:
                raise DataFormatError(path, 1, f"header {line!r}", f"header {expected!r}")
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataFormatError(path, number, f"{len(fields)} tab-separated columns",
                                  f"{len(header)} columns: {expected}")
        if any(not field.strip() for field in fields):
            raise DataFormatError(path, number, "an empty field", f"non-empty {expected}")
        rows.append(fields)
    return rows


def read_scored_pairs(path: str | Path) -> pd.DataFrame:
    """A ``score, sentence1, sentence2`` file as a DataFrame; scores must be numbers in [0, 5]."""
    rows = read_tsv(path, ("score", "sentence1", "sentence2"))
    scores = []
    for number, (score, _, _) in enumerate(rows, start=2):
        try:
            value = float(score)
        except ValueError:
            raise DataFormatError(path, number, f"score {score!r} is not a number", "a gold score in [0, 5]") from None
        if not 0 <= value <= 5:
            raise DataFormatError(path, number, f"score {value} out of range", "a gold score in [0, 5]")
        scores.append(value)
    return pd.DataFrame({"score": scores, "sentence1": [r[1] for r in rows], "sentence2": [r[2] for r in rows]})


def load_sts(year: int) -> dict[str, pd.DataFrame]:
    """The sub-datasets of STS ``year`` (2012–2016) as ``{name: DataFrame}``."""
    if year not in STS_DATASETS:
        raise ValueError(f"no STS year {year!r}; valid: {', '.join(map(str, STS_DATASETS))}")
    folder = data_dir() / "eval" / "sts" / f"STS{year % 100}"
    return {name: read_scored_pairs(folder / f"{name}.tsv") for name in STS_DATASETS[year]}


def load_sts17(track: str) -> tuple[pd.DataFrame, str, str]:
    """One SemEval-2017 track: ``(pairs, language of sentence1, language of sentence2)``."""
    file, lang1, lang2 = STS17_TRACKS[check_name("STS17 track", track, STS17_TRACKS)]
    return read_scored_pairs(data_dir() / "eval" / "sts17" / file), lang1, lang2


def load_stsb(split: str = "test") -> pd.DataFrame:
    return read_scored_pairs(data_dir() / "eval" / "stsb" / f"{check_name('STS-B split', split, STSB_SPLITS)}.tsv")


def load_sts_hard(kind: str) -> pd.DataFrame:
    """The paper authors' Hard STS files: ``hard-pos`` (Hard+) or ``hard-neg`` (Hard−)."""
    return read_scored_pairs(data_dir() / "eval" / "sts_hard" / f"{check_name('Hard STS file', kind, HARD_STS)}.tsv")


def load_tatoeba(language: str) -> pd.DataFrame:
    """LASER's 1000 Tatoeba test pairs for ``language`` with columns ``xx`` and ``en`` (row i ↔ row i)."""
    code = TATOEBA_CODES[check_name("Tatoeba language", language, TATOEBA_CODES)]
    rows = read_tsv(data_dir() / "eval" / "tatoeba" / f"{code}-eng.tsv", ("xx", "en"))
    return pd.DataFrame(rows, columns=["xx", "en"])
