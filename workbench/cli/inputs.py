"""Reading what the user gave a command: the encoder it names, the probing sizes, a file of sentence pairs."""
from __future__ import annotations

import pandas as pd

from ..checks import WorkbenchError, check_sizes
from ..data.tables import read_table
from ..encoders import HF_PREFIX, NAMED_ENCODERS, named_encoder
from ..models.folder import load


def chosen_encoder(args, name: str | None = None):
    """``--encoder NAME`` (a named or Hugging Face encoder), or with ``--model RUN`` the view ``--encoder`` of that
    model (at ``--layer``). An empty or blank name is refused, never read as "not given"."""
    for option, value in (("--model", args.model), ("--encoder", args.encoder)):
        if value is not None and not value.strip():
            raise WorkbenchError(f"{option} {value!r} is empty: give "
                                 + ("a shipped model's name, a run directory or a checkpoint folder"
                                    if option == "--model" else "an encoder name, or a view of --model"))
    hf_options = {key: getattr(args, key) for key in ("pooling", "dtype", "device")
                  if getattr(args, key, None) is not None}
    chosen = name or args.encoder or "random-transformer"
    if hf_options and (args.model is not None and name is None or not chosen.startswith(HF_PREFIX)):
        raise WorkbenchError(f"--pooling, --dtype and --device apply to a Hugging Face --encoder ({HF_PREFIX}PATH"
                             f"[@LAYER]); drop {', '.join('--' + key for key in hf_options)} for "
                             + (f"--model {args.model}" if args.model is not None and name is None else chosen))
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
    return named_encoder(chosen, args.pair or "en-fr", **hf_options)


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
