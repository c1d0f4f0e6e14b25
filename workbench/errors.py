"""Exceptions the workbench raises on bad input: each says what was wrong and what is valid."""
from __future__ import annotations

from collections.abc import Iterable
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


def check_sentences(sentences: object) -> list[str]:
    """The sentences as a list; a bare string is refused (iterating it would encode one row per character)."""
    if isinstance(sentences, (str, bytes)):
        raise WorkbenchError(f"encode takes a list of sentences, not one string ({str(sentences)[:40]!r}); "
                             "wrap a single sentence in a list: encode([sentence])")
    sentences = list(sentences)
    bad = next((i for i, s in enumerate(sentences) if not isinstance(s, str)), None)  # an index: None may be the item
    if bad is not None:
        raise WorkbenchError(f"encode takes sentences as strings; item {bad} is a {type(sentences[bad]).__name__} "
                             f"({str(sentences[bad])[:40]!r})")
    return sentences
