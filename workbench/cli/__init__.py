"""The ``workbench`` command: one :class:`~.common.Command` record per subcommand in :mod:`.commands` (its
arguments, the handler that does its work in :mod:`.training`, :mod:`.models`, :mod:`.measuring` or
:mod:`.reporting`, and what its ``--out`` is); here the parser built from them, the checks every command shares,
and how errors reach the user. Only the command given is built and only its handler's modules are imported, so
``--help`` and argument errors answer at once."""
from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
import tempfile
import tomllib
from pathlib import Path

from ..checks import WorkbenchError
from ..paths import check_outside_models
from .commands import COMMANDS


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with ``only`` of that command alone (the others listed, their arguments
    not built; ``""``: none): what ``main`` does, so no command's parser waits on another's choices."""
    parser = argparse.ArgumentParser(
        prog="workbench", description="BGT probing workbench: train sentence encoders, probe what they encode, "
        "evaluate them on STS, and export reports.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error (for bug reports)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help)
        if only in (None, command.name):
            command.arguments(p)
        p.set_defaults(command_record=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # this process is the command: see _collect_less
        _collect_less()
        argv = sys.argv[1:]
    given = next((word for word in argv if not word.startswith("-")), None)  # the global options take no value
    args = build_parser(given if given in {c.name for c in COMMANDS} else "").parse_args(argv)  # "": none
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    for chatty in ("kaleido", "choreographer", "logistro"):  # the static-export browser's own bookkeeping
        logging.getLogger(chatty).setLevel(logging.WARNING)
    try:
        _check_text(args)
        _check_output(args)
        args.command_record.run(args)
    except USER_ERRORS as err:
        if args.debug or os.environ.get("WORKBENCH_DEBUG") == "1":
            raise
        print(f"workbench {args.command}: error: {_describe(err)}", file=sys.stderr)
        return 2
    return 0


def _collect_less() -> None:
    """Python's cycle collector walks its youngest objects every 700 allocations, and the whole heap each time it has
    grown by a quarter: while a command imports torch, pandas and scikit-learn and then reads a corpus or a probing
    set (hundreds of thousands of objects that live to its end), that is a tenth of its time. Every 10,000 instead:
    `workbench probe` on a shipped model 3.3 s -> 2.9 s, a two-update `workbench train` 5.9 s -> 5.3 s (five and
    three runs side by side, the same peak memory). A call from Python (``main([...])``) leaves its process's
    collector as it is."""
    gc.set_threshold(10_000, 50, 50)


# Options whose commands say themselves what an empty value lacks (a model's name, an encoder, ...), or free text
OWN_EMPTY_MESSAGE = {"model", "encoder", "against", "name", "out", "title", "source", "style"}


def _check_text(args) -> None:
    """Before any work, refuse an argument that holds a NUL character (no file name or text can), that is empty
    where a value is needed, or that names a FIFO, socket or device (reading one waits for ever)."""
    for name, value in vars(args).items():
        option = f"--{name.replace('_', '-')}"
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str):
                continue
            if "\0" in item:
                raise WorkbenchError(f"{option} {item!r} holds a NUL character; no file name or text can")
            if not item.strip() and name not in OWN_EMPTY_MESSAGE:
                raise WorkbenchError(f"{option} {item!r} is empty; give a value (`workbench {args.command} --help` "
                                     "says what it takes)")
            try:
                special = Path(item).exists() and not (Path(item).is_file() or Path(item).is_dir())
            except OSError:  # text that cannot be a path (too long for one): not a file to check
                special = False
            if special:
                raise WorkbenchError(f"{option} {item} is not a regular file or folder (a FIFO, socket or device); "
                                     "give a file or folder")


def _check_output(args) -> None:
    """Refuse, before any work starts, an ``--out`` that cannot be written or would silently replace a file."""
    out, kind = getattr(args, "out", None), args.command_record.out
    if out is not None and not out.strip():
        raise WorkbenchError(f"--out {out!r} is empty; give a "
                             f"{'file name' if kind in ('file', 'page') else 'folder'}")
    if out is None or kind is None:
        return
    path = Path(out)
    folder = kind == "folder"
    check_outside_models(path, "--out")
    if kind == "file":
        if not path.parent.is_dir():
            raise WorkbenchError(f"--out {out}: folder {path.parent} does not exist (create it first)")
        if path.is_dir():
            raise WorkbenchError(f"--out {out} is a folder; give a file name")
        if path.exists() and not args.force:
            raise WorkbenchError(f"--out {out} exists; --force replaces it")
        writable = path.parent
    else:
        if path.exists() and folder != path.is_dir():
            raise WorkbenchError(f"--out {out} is a {'file' if folder else 'folder'}; give a "
                                 f"{'folder' if folder else 'file name'}")
        if kind == "page" and path.suffix.lower() not in (".html", ".htm"):
            raise WorkbenchError(f"--out {out}: the report is an .html file (its CSV and figures go beside it); "
                                 f"give a name ending in .html, such as {path.with_suffix('.html').name}")
        writable = path if folder else path.parent
        while not writable.exists():  # the folders that will be created
            writable = writable.parent
        if not writable.is_dir():
            raise WorkbenchError(f"--out {out}: {writable} is a file, so the folder cannot be created")
        if path.exists() and (not folder or any(path.iterdir())):
            print(f"workbench {args.command}: {out} exists; " + (
                "the files the report writes replace those of the same names there" if folder else
                "the report (and its CSV and figures beside it) is replaced"), file=sys.stderr)
    try:  # a real write: permissions alone do not tell (root, read-only or virtual file systems such as /proc)
        with tempfile.TemporaryFile(dir=writable):
            pass
    except OSError as err:
        raise WorkbenchError(f"--out {out}: cannot write in {writable} ({err.strerror or err})") from None


# Errors that come from what the user gave (files, paths, settings): one line and exit 2, no traceback
# (--debug or WORKBENCH_DEBUG=1 shows it). Anything else is a bug and surfaces as one.
USER_ERRORS = (WorkbenchError, OSError, UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError)


def _describe(err: Exception) -> str:
    if isinstance(err, UnicodeDecodeError):
        return f"a file is not UTF-8 text ({err}); save it as UTF-8"
    if isinstance(err, (json.JSONDecodeError, tomllib.TOMLDecodeError)):
        return f"cannot parse the file ({type(err).__name__}: {err})"
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.strerror or err}: {err.filename}"
    return str(err)
