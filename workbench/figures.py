"""Plotly figures built from tidy result frames, and the self-contained HTML report.

Result frames have the columns ``encoder, task, metric, value`` and optionally ``dataset, ci_low, ci_high, n``.
Probe rows carry ``metric == "accuracy"`` (and ``"majority"``, ``"selectivity"``, ...); STS rows
``metric == "pearson"``.
"""
from __future__ import annotations

import html
import json
import os
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

RESULT_COLUMNS = ("encoder", "task", "dataset", "metric", "value", "ci_low", "ci_high", "n")


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Add the optional result columns that are missing; standard columns first, any others after."""
    missing = {"encoder", "task", "metric", "value"} - set(df.columns)
    if missing:
        raise ValueError(f"result frame lacks columns {sorted(missing)}; needs at least encoder, task, metric, value")
    df = df.copy()
    for column in RESULT_COLUMNS:
        if column not in df.columns:
            df[column] = "all" if column == "dataset" else float("nan")
    return df[[*RESULT_COLUMNS, *(c for c in df.columns if c not in RESULT_COLUMNS)]]


def probe_figure(df: pd.DataFrame) -> go.Figure:
    """Grouped bars of probe accuracy (×100) per task and encoder, 95% CI whiskers, majority baseline marks."""
    df = tidy(df)
    acc = df[df["metric"] == "accuracy"]
    fig = go.Figure()
    for encoder, rows in acc.groupby("encoder", sort=False):
        fig.add_bar(name=encoder, x=rows["task"], y=100 * rows["value"],
                    error_y=dict(type="data", symmetric=False, array=100 * (rows["ci_high"] - rows["value"]),
                                 arrayminus=100 * (rows["value"] - rows["ci_low"])))
    majority = df[df["metric"] == "majority"].drop_duplicates("task")
    if not majority.empty:
        fig.add_scatter(name="majority class", x=majority["task"], y=100 * majority["value"], mode="markers",
                        marker=dict(symbol="line-ew-open", size=40, color="black", line=dict(width=3)))
    fig.update_layout(barmode="group", title="Probing accuracy (test split, 95% bootstrap CI)",
                      yaxis_title="accuracy × 100", xaxis_title="task", template="plotly_white")
    return fig


def selectivity_figure(df: pd.DataFrame) -> go.Figure:
    """Grouped bars of selectivity (task minus control-task accuracy, ×100) per task and encoder."""
    rows = tidy(df)
    rows = rows[rows["metric"] == "selectivity"]
    fig = go.Figure()
    for encoder, part in rows.groupby("encoder", sort=False):
        fig.add_bar(name=encoder, x=part["task"], y=100 * part["value"])
    fig.update_layout(barmode="group", title="Selectivity: accuracy minus control-task accuracy (Hewitt & Liang)",
                      yaxis_title="selectivity × 100", xaxis_title="task", template="plotly_white")
    return fig


def sts_figure(df: pd.DataFrame) -> go.Figure:
    """Grouped bars of Pearson's r × 100 per STS year (dataset == "all" rows) and encoder."""
    df = tidy(df)
    rows = df[(df["metric"] == "pearson") & (df["dataset"] == "all")]
    fig = go.Figure()
    for encoder, part in rows.groupby("encoder", sort=False):
        fig.add_bar(name=encoder, x=part["task"], y=part["value"])
    fig.update_layout(barmode="group", title="STS: Pearson's r × 100 (per-year mean over sub-datasets)",
                      yaxis_title="Pearson r × 100", template="plotly_white")
    return fig


def figures_for(df: pd.DataFrame) -> dict[str, go.Figure]:
    """The figures a result frame supports, by file stem."""
    df = tidy(df)
    figures = {}
    if (df["metric"] == "accuracy").any():
        figures["probing"] = probe_figure(df)
    if (df["metric"] == "selectivity").any():
        figures["selectivity"] = selectivity_figure(df)
    if ((df["metric"] == "pearson") & (df["dataset"] == "all")).any():
        figures["sts"] = sts_figure(df)
    return figures


def report(df: pd.DataFrame, path: str | Path, title: str = "BGT workbench report", notes: str = "") -> Path:
    """Write a self-contained HTML report (plotly.js embedded: works offline) with the CSV and JSON of the
    numbers beside it (``<stem>.csv``, ``<stem>.json``). Returns the HTML path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    df = tidy(df)
    figures = figures_for(df)
    if not figures:
        raise ValueError("nothing to plot: the results have no 'accuracy' (probe) or 'pearson' (STS) rows")
    parts = [fig.to_html(full_html=False, include_plotlyjs="inline" if i == 0 else False, div_id=f"fig-{name}")
             for i, (name, fig) in enumerate(figures.items())]
    table = df.to_html(index=False, float_format=lambda v: f"{v:.4f}", na_rep="", classes="results")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}}
table.results{{border-collapse:collapse;font-size:0.85em}} table.results td,table.results th{{border:1px solid #ccc;padding:2px 6px}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
{notes}
{''.join(parts)}
<h2>Numbers</h2>
<p>Also in <code>{html.escape(path.stem)}.csv</code> and <code>{html.escape(path.stem)}.json</code> beside this file.</p>
{table}
</body></html>
"""
    _write(path, page)
    _write(path.with_suffix(".csv"), df.to_csv(index=False))
    _write(path.with_suffix(".json"), json.dumps(json.loads(df.to_json(orient="records")), indent=1))
    return path


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
