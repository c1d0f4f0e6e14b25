"""Semantic evaluation suites; :func:`evaluate` is the entry point."""
from __future__ import annotations

import pandas as pd

from ..encoders import Encoder
from ..errors import check_name
from .sts import evaluate_sts

SUITES = {"sts": evaluate_sts}


def evaluate(encoder: Encoder, suite: str = "sts", show_progress: bool = False) -> pd.DataFrame:
    """Run one evaluation suite on ``encoder``; returns tidy rows (encoder, task, dataset, metric, value, n)."""
    return SUITES[check_name("evaluation suite", suite, SUITES)](encoder, show_progress=show_progress)
