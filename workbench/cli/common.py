"""What the commands share: the :class:`Command` record, argument groups, and reading what the user gave."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ..checks import WorkbenchError, check_sizes
from ..data.corpora import PAIRS
from ..data.tables import read_table
from ..encoders import HF_PREFIX, NAMED_ENCODERS, named_encoder
from ..models.folder import load


@dataclass(frozen=True)
class Command:
    """One ``workbench`` command, all in one place: its name and help, the function that adds its arguments, the
    function that runs it, and what its ``--out`` is: ``"file"`` (one file, never replaced without ``--force``),
    ``"folder"`` or ``"page"`` (a report, a folder or an HTML file, that a second run rewrites, saying so)."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], None]
    out: str | None = None


def size_args(p: argparse.ArgumentParser, train: int | None = None, valid: int | None = None,
              test: int | None = None, unset: str = "default: the task card's full size, `workbench probes list`"
              ) -> None:
    """``--train-size``, ``--valid-size``, ``--test-size`` (default: the values given, else what ``unset`` says)."""
    what = unset if train is None else "{}"
    p.add_argument("--train-size", type=int, default=train, help=f"training examples ({what.format(train)})")
    p.add_argument("--valid-size", type=int, default=valid, help=f"validation examples ({what.format(valid)})")
    p.add_argument("--test-size", type=int, default=test, help=f"test examples ({what.format(test)})")


def encoder_args(p: argparse.ArgumentParser) -> None:
    """``--model``, ``--encoder``, ``--layer``, ``--pair``, ``--trust-unverified``: which encoder a command reads."""
    named = "; ".join(f"{name}: {about}" for name, (about, _) in NAMED_ENCODERS.items())
    p.add_argument("--model", help="a trained model (run directory, checkpoint, or name in trained/)")
    p.add_argument("--encoder", help=f"without --model: {named}; or {HF_PREFIX}PATH[@LAYER], a Hugging Face "
                   "encoder folder (the 'hf' extra). Default random-transformer. With --model: the view, "
                   "semantic (default) or a language (en, fr, ...)")
    p.add_argument("--layer", type=int, help="with --model: read the view at this layer (0 = embeddings … L = "
                   "top block, mean-pooled; -1, the default, its sentence embedding)")
    p.add_argument("--pair", choices=PAIRS, help="without --model: language pair of the tokenizer (en-fr)")
    p.add_argument("--trust-unverified", action="store_true",
                   help="with --model: load a model folder that records no sha256 of its files (otherwise "
                        "refused); only for folders you know the origin of")


def chosen_encoder(args, name: str | None = None):
    """``--encoder NAME`` (a named or Hugging Face encoder), or with ``--model RUN`` the view ``--encoder`` of that
    model (at ``--layer``). An empty or blank name is refused, never read as "not given"."""
    for option, value in (("--model", args.model), ("--encoder", args.encoder)):
        if value is not None and not value.strip():
            raise WorkbenchError(f"{option} {value!r} is empty: give "
                                 + ("a shipped model's name, a run directory or a checkpoint folder"
                                    if option == "--model" else "an encoder name, or a view of --model"))
    if args.model is not None and name is None:
        if args.pair is not None:
            raise WorkbenchError(f"--pair {args.pair} picks the tokenizer of an untrained --encoder; --model "
                                 f"{args.model} has its own: drop one of them")
        return load(args.model, trust_unverified=args.trust_unverified).encoder(
            args.encoder or "semantic", layer=-1 if args.layer is None else args.layer)
    for option, given in (("--layer", args.layer is not None), ("--trust-unverified", args.trust_unverified)):
        if given and name is None:
            raise WorkbenchError(f"{option} applies to a --model; for a Hugging Face --encoder give the layer as "
                                 "hf:PATH@LAYER")
    return named_encoder(name or args.encoder or "random-transformer", args.pair or "en-fr")


def encoder_spec(spec: str, pair: str | None = None):
    """The encoder one word names (``--against``): a named encoder, ``hf:PATH[@LAYER]``, or a model (a shipped
    model's name, a run or checkpoint folder) with an optional ``:VIEW`` (default semantic)."""
    if not spec.strip():
        raise WorkbenchError("--against is empty: give an encoder name, hf:PATH, or MODEL[:VIEW]")
    if spec in NAMED_ENCODERS or spec.startswith(HF_PREFIX):
        return named_encoder(spec, pair or "en-fr")
    model, _, view = spec.rpartition(":") if ":" in spec and "/" not in spec.rpartition(":")[2] else (spec, "", "")
    try:
        loaded = load(model)
    except WorkbenchError as err:
        raise WorkbenchError(f"--against {spec!r}: not a named encoder ({', '.join(NAMED_ENCODERS)}), "
                             f"{HF_PREFIX}PATH[@LAYER], or a model[:VIEW] ({err})") from None
    return loaded.encoder(view or "semantic")


def probing_sizes(args) -> dict[str, int] | None:
    given = {"train": args.train_size, "valid": args.valid_size, "test": args.test_size}
    if all(v is None for v in given.values()):
        return None  # the cards' sizes
    if any(v is None for v in given.values()):
        raise WorkbenchError("give all of --train-size, --valid-size and --test-size, or none (the cards' sizes)")
    return check_sizes(given)


def read_pairs(path: str) -> pd.DataFrame:
    """A pairs file (:func:`~workbench.data.tables.read_table`: TSV, CSV or JSONL; every cell text)."""
    return read_table(path, "pairs", "a pairs file has a header (source, style) and one pair a line")
