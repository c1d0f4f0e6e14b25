"""The builders' registry: the ``@builder`` decorator files each function under its name (a card's ``builder``), with
its version (part of its builds' cache key) and whether it reads dependency parses."""
from __future__ import annotations

from collections.abc import Callable

Candidate = tuple[str, str, str]  # label, sentence, label word ("" when none)
Builder = Callable[..., list[Candidate]]
BUILDERS: dict[str, Builder] = {}
PARSING: set[str] = set()  # the builders that read dependency parses (their pool is parsed once, then cached)
VERSIONS: dict[str, int] = {}  # each builder's version: part of its builds' cache key


def builder(fn: Builder | None = None, *, parses: bool = False, version: int = 8):
    """Register a builder under its function name (the ``builder`` field of a task card); ``parses``: it reads
    the pool's dependency parses. ``version``: bump it when a change alters what the builder gives, so that its
    tasks' stored builds (and only theirs) are built again; a change to the shared selection
    (:func:`workbench.probing.build.select`) bumps every builder's. (8: the version every builder shared before
    versions were kept per builder.)"""
    def register(fn: Builder) -> Builder:
        BUILDERS[fn.__name__] = fn
        VERSIONS[fn.__name__] = version
        if parses:
            PARSING.add(fn.__name__)
        return fn
    return register(fn) if fn is not None else register


SEGMENTED = {"word_content", "bigram_shift"}  # builders that read words: Japanese ones need Sudachi to find them


def reads_morphology(builder: str, language: str) -> bool:
    """Whether ``builder`` on ``language`` needs the morphological analyser (:mod:`..morphology`)."""
    return builder == "final_predicate" or (builder in SEGMENTED and language == "ja")
