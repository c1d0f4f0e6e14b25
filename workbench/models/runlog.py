"""A run's log: ``metrics.jsonl`` (one JSON object per update, plus validation and the dev score where measured) and
the learning curves read from it, or from a shipped model's ``curve.csv``."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..checks import WorkbenchError
from .folder import folder_name, model_path


CURVE_COLUMNS = ["run", "update", "pairs_seen", "train_seconds", "metric", "view", "value"]
# the dev scores a run chooses its best checkpoint by: STS-B dev, or (a pair without English) the semantic view's
# retrieval of its validation pairs' translations (workbench.training.trainer.Trainer.dev_metric); each with its
# name in words and its unit
DEV_METRICS = {"stsb_dev": ("STS-B dev", "Pearson × 100"), "retrieval_dev": ("validation retrieval", "%")}


def learning_curve(path: str | Path) -> pd.DataFrame:
    """A run's learning curves, tidy: ``run, update, pairs_seen, train_seconds, metric, view, value`` with
    metric ``stsb_dev`` (Pearson × 100, per English-reading view; update 0 is the network at initialisation),
    or ``retrieval_dev`` for a pair without English (%, the semantic view), and ``valid_loss`` (per pair, view
    ``all``). ``path``: a run directory (its ``metrics.jsonl``), or a shipped
    model's folder or name (its ``curve.csv``, written by ``models export``)."""
    path = model_path(path)
    if (path / "curve.csv").is_file():  # labelled with the model's name, not the run it was exported from
        try:
            curve = pd.read_csv(path / "curve.csv")
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
            raise WorkbenchError(f"{path / 'curve.csv'} cannot be read as a CSV table ({err})") from None
        lacking = lacking_curve_columns(curve.columns)
        if lacking:
            raise WorkbenchError(f"{path / 'curve.csv'} lacks the curve's columns {', '.join(lacking)} (damaged?); "
                                 "restore it from the model's repository")
        return curve.assign(run=folder_name(path))
    if not (path / "metrics.jsonl").is_file():
        raise WorkbenchError(f"{path} has no metrics.jsonl (a training run) or curve.csv (a shipped model)")
    return metrics_curve(read_metrics(path), path.name)


def lacking_curve_columns(columns) -> list[str]:
    """The curve's columns (all but ``run``, which a reader sets to the model's name) that ``columns`` lacks."""
    return [c for c in CURVE_COLUMNS if c != "run" and c not in columns]


def metrics_curve(lines: list[dict], run: str) -> pd.DataFrame:
    """:func:`learning_curve` of a run's :func:`read_metrics` records, for a caller that has read them already."""
    seconds = pairs = 0.0
    rows = []
    for line in lines:  # as logged, else summed from the update lines (runs logged before these fields existed)
        if "tokens_per_s" in line:
            seconds, pairs = seconds + line["tokens"] / line["tokens_per_s"], pairs + line.get("sentences", 0)
        seconds, pairs = line.get("train_seconds", seconds), line.get("pairs_seen", pairs)
        at = {"run": run, "update": line["update"], "pairs_seen": int(pairs), "train_seconds": round(seconds, 2)}
        rows += [{**at, "metric": metric, "view": view, "value": value}
                 for metric in DEV_METRICS for view, value in line.get(metric, {}).items()]
        if "valid_loss" in line:
            rows.append({**at, "metric": "valid_loss", "view": "all", "value": line["valid_loss"]})
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def read_metrics(run: str | Path) -> list[dict]:
    """The records of a run's ``metrics.jsonl`` (none when it has none yet): one per update (``update``, losses,
    ``pairs_seen``, ``train_seconds``; ``valid_loss`` and the dev score where measured), or a one-go fit's single
    record. A line that is not a JSON object is refused with the file and line number."""
    path = Path(run) / "metrics.jsonl"
    if not path.is_file():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise WorkbenchError(f"{path}, line {number}: cannot parse it as JSON ({err.msg}); the run's log is "
                                 "damaged") from None
        if not isinstance(record, dict):
            raise WorkbenchError(f"{path}, line {number}: not a JSON object; the run's log is damaged")
        records.append(record)
    return records
