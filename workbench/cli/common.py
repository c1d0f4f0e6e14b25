"""What the commands' parsers share: the :class:`Command` record and the argument groups. Light on purpose (no
torch, no models): ``workbench --help`` and argument errors import only this, :mod:`.commands` and the names the
choices list."""
from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..data.languages import PAIRS
from ..encoders import HF_DTYPES, HF_POOLINGS, HF_PREFIX, NAMED_ENCODERS


@dataclass(frozen=True)
class Command:
    """One ``workbench`` command, all in one place: its name and help, the function that adds its arguments, the
    function that runs it (``"module:function"`` in this package, imported only when the command runs: the work's
    modules load torch and the models), and what its ``--out`` is: ``"file"`` (one file, never replaced without
    ``--force``), ``"folder"`` or ``"page"`` (a report, a folder or an HTML file, that a second run rewrites,
    saying so). ``actions``: the handlers of the actions whose work is lighter than the rest of the command's
    (``{"list": "listing:probes_list"}``), so that a listing need not wait for what the other actions load."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    handler: str
    out: str | None = None
    actions: Mapping[str, str] = field(default_factory=dict)

    def run(self, args: argparse.Namespace) -> None:
        handler = self.actions.get(getattr(args, "action", None), self.handler)
        module, _, function = handler.partition(":")
        getattr(importlib.import_module(f"{__package__}.{module}"), function)(args)


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
    p.add_argument("--pair", metavar="PAIR", help=f"without --model: language pair of the tokenizer (en-fr; "
                   f"{', '.join(PAIRS)} or one registered from your own bitext)")
    p.add_argument("--trust-unverified", action="store_true",
                   help="with --model: load a model folder that records no sha256 of its files (otherwise "
                        "refused); only for folders you know the origin of")
    hf = p.add_argument_group(f"a Hugging Face --encoder {HF_PREFIX}PATH")
    hf.add_argument("--pooling", choices=HF_POOLINGS, help="how token states become one vector: mean (default), "
                    "last (the last real token: for decoder-only language models), cls, or model (a "
                    "sentence-transformers folder's own)")
    hf.add_argument("--dtype", choices=HF_DTYPES, help="the precision the model runs in (default float32; "
                    "bfloat16 on a CPU or GPU, float16 on a GPU); vectors are float32 either way")
    hf.add_argument("--device", help="where the model runs: cpu (default), cuda, cuda:N")
