"""Progress bars that suit where the output goes: tqdm's bar in a terminal, its widget in Jupyter, and plain log
lines otherwise (a file, a CI log, ``nohup``): there a redrawn bar leaves carriage returns and cursor-up escapes
(``\\x1b[A`` of nested bars) in the log, so each refresh is written as one line instead, at most every
:data:`LOG_INTERVAL` seconds."""
from __future__ import annotations

import re
import sys

import tqdm.auto
import tqdm.autonotebook
import tqdm.std

LOG_INTERVAL = 30.0  # seconds between two progress lines in a log
_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _Lines:
    """A stream for tqdm that turns each redraw into one plain line."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        line = _ESCAPES.sub("", text).replace("\r", "").strip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(iterable=None, **kwargs):
    """``tqdm(iterable, **kwargs)`` for the current output (see the module's docstring)."""
    if tqdm.autonotebook.tqdm is not tqdm.std.tqdm:  # a Jupyter kernel: tqdm's widget
        return tqdm.auto.tqdm(iterable, **kwargs)
    stream = kwargs.pop("file", None) or sys.stderr
    if getattr(stream, "isatty", lambda: False)():
        return tqdm.std.tqdm(iterable, file=stream, **kwargs)
    return tqdm.std.tqdm(iterable, file=_Lines(stream), mininterval=kwargs.pop("mininterval", LOG_INTERVAL),
                         ascii=True, position=None, **{k: v for k, v in kwargs.items() if k != "position"})
