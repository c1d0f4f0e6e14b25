"""Semantic evaluation suites; :func:`evaluate` is the entry point."""
from __future__ import annotations

import pandas as pd

from ..data.sts import TATOEBA_CODES, load_tatoeba
from ..encoders import Encoder, check_embeddings, readable
from ..errors import check_name
from .retrieval import retrieval_errors
from .sts import evaluate_hard_sts, evaluate_sts, evaluate_sts17


def evaluate_tatoeba(encoder: Encoder, languages=None, margin: bool = False,
                     show_progress: bool = False) -> pd.DataFrame:
    """Tatoeba similarity-search error rates (%) in both directions, for each language the encoder reads
    (``languages=None``; others skipped with a warning) or for the ones named (an unreadable one raises)."""
    rows = []
    for language in languages or TATOEBA_CODES:
        if not readable(encoder, (language,), f"Tatoeba {language}-en", strict=bool(languages)):
            continue
        frame = load_tatoeba(language)
        xx = check_embeddings(encoder, encoder.encode(list(frame["xx"]), show_progress=show_progress), len(frame))
        en = check_embeddings(encoder, encoder.encode(list(frame["en"]), show_progress=show_progress), len(frame))
        rows += [{"encoder": encoder.name, "task": "Tatoeba", "dataset": f"{language}-en", "metric": f"error {d}",
                  "value": value, "n": len(frame)} for d, value in retrieval_errors(xx, en, margin).items()]
    return pd.DataFrame(rows, columns=["encoder", "task", "dataset", "metric", "value", "n"])


SUITES = {"sts": evaluate_sts, "hard_sts": evaluate_hard_sts, "sts17": evaluate_sts17,
          "tatoeba": evaluate_tatoeba}


def evaluate(encoder: Encoder, suite: str = "sts", show_progress: bool = False) -> pd.DataFrame:
    """Run one evaluation suite (or ``"all"``) on ``encoder``; tidy rows (encoder, task, dataset, metric,
    value, n). Suites: sts (STS 2012–16), hard_sts, sts17, tatoeba."""
    check_name("evaluation suite", suite, [*SUITES, "all"])
    names = list(SUITES) if suite == "all" else [suite]
    return pd.concat([SUITES[name](encoder, show_progress=show_progress) for name in names], ignore_index=True)
