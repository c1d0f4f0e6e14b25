"""The workbench's exceptions and the checks every kind of input shares, in one place.

Every problem with a user's input, configuration or data raises a :class:`WorkbenchError` (or a subclass) that
says what was wrong and what is valid. The checks: names against the valid ones, sentences, whole numbers,
numbers in a range and the three probing sizes. A predicate leaves the wording to the caller; where the message is
the same everywhere, the check raises it. ``True`` is not a number here (Python counts it as 1): a flag given
where a count belongs is a mistake.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Set
from pathlib import Path


class WorkbenchError(Exception):
    """Base class: a problem with the user's input, configuration or data (not a bug)."""


class DataFormatError(WorkbenchError, ValueError):
    """A data file does not have the expected format; names the file, line and expectation."""

    def __init__(self, path: str | Path, line: int | None, problem: str, expected: str):
        self.path, self.line, self.problem, self.expected = Path(path), line, problem, expected
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}; expected {expected}")


class UnknownNameError(WorkbenchError, KeyError):
    """A name (language pair, task, model, preset, ...) that the workbench does not know."""

    def __init__(self, kind: str, name: object, valid: Iterable[str]):
        self.kind, self.name, self.valid = kind, name, sorted(valid)
        super().__init__(f"unknown {kind} {name!r}; valid: {', '.join(self.valid)}")

    def __str__(self) -> str:  # KeyError would otherwise print the repr of the message
        return self.args[0]


def check_name(kind: str, name: str, valid: Iterable[str]) -> str:
    """Return ``name`` if it is one of ``valid``, else raise :class:`UnknownNameError`."""
    valid = list(valid)
    if name not in valid:
        raise UnknownNameError(kind, name, valid)
    return name


def check_text(value: object, what: str) -> str:
    """``value`` if it is text, else one sentence naming what was wanted (before a dict or a cache meets a list)."""
    if not isinstance(value, str):
        raise WorkbenchError(f"{what} is a name (text), not {type(value).__name__} {value!r:.60}")
    return value


def as_path(value: object, what: str) -> Path:
    """``value`` as a Path if it is one or text, else one sentence naming what was wanted (not pathlib's
    TypeError)."""
    if not isinstance(value, (str, Path)):
        raise WorkbenchError(f"{what} is a path (text or a pathlib.Path), not {type(value).__name__} {value!r:.60}")
    return Path(value)


def check_names(kind: str, names: str | Iterable[str], valid: Iterable[str]) -> list[str]:
    """``names`` as a list — one name given alone is one name, never its letters — each one of ``valid``; none at
    all is refused (an empty list asks for nothing, and must not run everything)."""
    if not isinstance(names, (str, list, tuple, set, frozenset)):
        raise WorkbenchError(f"{kind}: give a name or a list of names, not {type(names).__name__} {names!r:.60}")
    names, valid = ([names] if isinstance(names, str) else list(names)), list(valid)
    if not names:
        raise WorkbenchError(f"no {kind} given (an empty list); valid: {', '.join(map(str, valid))}")
    return [check_name(kind, name, valid) for name in names]


def check_keys(given: Iterable[str], valid: Iterable[str], where: str, kind: str = "keys") -> None:
    """Refuse the names in ``given`` that ``valid`` lacks, all of them in one sentence that lists the valid ones
    ("<where>: unknown <kind> a, b; valid: ...")."""
    valid = sorted(set(valid))
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise WorkbenchError(f"{where}: unknown {kind} {', '.join(unknown)}; valid: {', '.join(valid) or 'none'}")


def check_batch_size(batch_size: object) -> int:
    """``batch_size`` if it is a whole number ≥ 1 (before any sentence is encoded)."""
    if not whole(batch_size):
        raise WorkbenchError(f"batch_size must be a whole number ≥ 1 (got {batch_size!r})")
    return batch_size


def check_sentences(sentences: object) -> list[str]:
    """The sentences as a list; a bare string is refused (iterating it would encode one row per character)."""
    if isinstance(sentences, (str, bytes)):
        raise WorkbenchError(f"encode takes a list of sentences, not one string ({str(sentences)[:40]!r}); "
                             "wrap a single sentence in a list: encode([sentence])")
    if isinstance(sentences, (Mapping, Set)) or not isinstance(sentences, Iterable):  # no order, or not many
        raise WorkbenchError(f"encode takes a list of sentences (an ordered sequence of strings); got "
                             f"{type(sentences).__name__}")
    sentences = list(sentences)
    bad = next((i for i, s in enumerate(sentences) if not isinstance(s, str)), None)  # an index: None may be the item
    if bad is not None:
        raise WorkbenchError(f"encode takes sentences as strings; item {bad} is a {type(sentences[bad]).__name__} "
                             f"({str(sentences[bad])[:40]!r})")
    return sentences


SPLITS = ("train", "valid", "test")


PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # a file or model name that stays inside its folder


def plain_name(value: object) -> bool:
    """Is ``value`` a name of one file or folder, with no path in it (letters, digits, ``_ . -``)?"""
    return isinstance(value, str) and PLAIN_NAME.fullmatch(value) is not None and value not in (".", "..")


def sha256_hex(value: object) -> bool:
    """Is ``value`` a sha256 digest as the workbench writes it (64 lowercase hex digits)?"""
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def whole(value, low: int = 1, high: float = math.inf) -> bool:
    """Is ``value`` an ``int`` (not a bool) in [low, high]?"""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def number(value, low: float = -math.inf, high: float = math.inf, open_low: bool = False,
           open_high: bool = False) -> bool:
    """Is ``value`` a finite int or float (not a bool) in the range, each end closed unless ``open_*``?"""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return False
    return (value > low if open_low else value >= low) and (value < high if open_high else value <= high)


MAX_SIZE = 10_000_000  # sentences in one split: far more than any pool holds, and a bound before any work


def check_sizes(given: Mapping, where: str = "probing sizes") -> dict[str, int]:
    """``given`` as a dict if it gives train, valid and test as whole numbers from 1 to MAX_SIZE, else a clear error."""
    given = dict(given) if isinstance(given, Mapping) else given
    if not isinstance(given, dict) or set(given) != set(SPLITS) or not all(
            whole(v, 1, MAX_SIZE) for v in given.values()):
        raise WorkbenchError(f"{where} must give {', '.join(SPLITS)} as whole numbers from 1 to {MAX_SIZE:,} "
                             f"(got {given})")
    return given

