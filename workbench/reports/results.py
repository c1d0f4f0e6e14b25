"""The tidy result frame every measurement returns and every report reads: its columns, the unit of each metric,
and reading one back from a CSV, checked; and every probe result the cache holds, as one table to browse.

Result frames have the columns ``encoder, task, metric, value`` and optionally ``dataset, ci_low, ci_high, n``.
Probe rows carry ``metric == "accuracy"`` (and ``"majority"``, ``"selectivity"``, ...); STS rows
``metric == "pearson"``.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..cache import stored_results
from ..checks import WorkbenchError, check_text

RESULT_COLUMNS = ("encoder", "task", "dataset", "metric", "value", "ci_low", "ci_high", "n")
SHARE_METRICS = ("accuracy", "majority", "control_accuracy", "given_accuracy", "transfer_accuracy",
                 "accuracy_seen_word", "accuracy_unseen_word")  # in [0, 1]
UNITS = {**dict.fromkeys(SHARE_METRICS, "share (0-1)"),
         **dict.fromkeys(("selectivity", "conditional_gain", "seed_std"), "share difference (-1 to 1)"),
         **dict.fromkeys(("pearson", "spearman", "pearson difference"), "correlation x 100"),
         "transfer_ratio": "ratio", "compression": "ratio", "mdl_bits": "bits"}


def unit_of(metric: str) -> str:
    """The unit a metric's values are in (a report's ``unit`` column): probes give shares of 1, STS gives
    correlations × 100, Tatoeba error rates in percent."""
    return "percent" if metric.startswith("error") else UNITS.get(metric, "")


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Add the optional result columns that are missing; standard columns first, any others after."""
    if not isinstance(df, pd.DataFrame):
        raise WorkbenchError(f"results must be a pandas DataFrame (rows of encoder, task, metric, value: what probe_all "
                             f"and evaluate return; pd.read_csv reads a saved one), got {type(df).__name__}")
    missing = {"encoder", "task", "metric", "value"} - set(df.columns)
    if missing:
        raise WorkbenchError(f"result frame lacks columns {sorted(missing)}; needs at least encoder, task, metric, "
                             f"value (it has {', '.join(map(str, df.columns)) or 'none'})")
    numbers = pd.to_numeric(df["value"], errors="coerce")
    bad = df["value"][numbers.isna() & df["value"].notna()]
    if len(bad):
        raise WorkbenchError(f"result column 'value' must hold numbers; row {bad.index[0]} has {bad.iloc[0]!r}")
    df = df.assign(value=numbers)
    shares = df["metric"].isin(SHARE_METRICS) & ~df["value"].between(0, 1)
    if shares.any():
        row = df[shares].iloc[0]
        raise WorkbenchError(f"a {row['metric']} must lie in [0, 1]; row {df[shares].index[0]} ({row['encoder']}, "
                             f"{row['task']}) has {row['value']!r}")
    if not np.isfinite(df["value"].dropna()).all():
        raise WorkbenchError(f"result column 'value' must hold finite numbers; row "
                             f"{df.index[~np.isfinite(df['value'].fillna(0))][0]} does not")
    for column in RESULT_COLUMNS:
        if column not in df.columns:
            df[column] = "all" if column == "dataset" else float("nan")
    key = [c for c in ("encoder", "task", "dataset", "metric", "layer", "seed") if c in df.columns]
    repeated = df.duplicated(subset=key, keep=False)
    if repeated.any():
        row = df[repeated].iloc[0]
        raise WorkbenchError(f"the results hold the same ({', '.join(key)}) more than once, e.g. "
                             f"{tuple(str(row[c]) for c in key)}: one value per key, please")
    return df[[*RESULT_COLUMNS, *(c for c in df.columns if c not in RESULT_COLUMNS)]]


def read_results(path: str | Path) -> pd.DataFrame:
    """A results CSV (as ``probe``/``evaluate``/``demo`` write them), checked against the tidy schema."""
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise WorkbenchError(f"{path}: not a results CSV ({err})") from None
    except UnicodeDecodeError:
        raise WorkbenchError(f"{path} is not UTF-8 text; save it as UTF-8") from None
    if df.empty:
        raise WorkbenchError(f"{path}: the results CSV has no rows")
    try:
        return tidy(df)
    except WorkbenchError as err:
        raise WorkbenchError(f"{path}: {err}") from None


_LAYER = re.compile(r"@(-?\d+)$")
_PROBE_FIELDS = {"encoder", "task", "classifier", "accuracy", "ci_low", "ci_high", "majority", "n_test", "words"}
BROWSE_COLUMNS = ("encoder", "layer", "task", "classifier", "seed", "accuracy", "ci_low", "ci_high", "majority",
                  "control_accuracy", "n_test", "best", "seconds", "device", "versions", "data")


def cached_probes(task: str | None = None, encoder: str | None = None, layer: int | None = None) -> pd.DataFrame:
    """Every plain probe result in the cache, one row per (encoder, task, data, classifier, seed), with its 95% CI
    and what made it (seconds, device, library versions; empty for results stored before those were recorded).

    ``best`` marks, among the encoders probed on the same data with the same classifier and seed, the most
    accurate one only where its CI lies above every other's (otherwise none is marked: the data cannot tell them
    apart). Filters: ``task`` (exact), ``encoder`` (a part of its name), ``layer`` (the ``@L`` of a layer's name).
    Conditional and cross-lingual probes are left out (they measure something else), and so are results stored in
    the form before ``PROBE_VERSION`` 10 (their parts were flat fields). A filter that matches no
    stored result (a misspelt task, an encoder never probed) is refused, naming what the cache holds.
    """
    rows = []
    for entry in stored_results("probe"):
        key, result, made = entry["key"], entry["result"], entry["made"]
        if not (isinstance(result, dict) and isinstance(key, dict) and _PROBE_FIELDS <= set(result)):
            continue  # not a probe's result as probe() stores it
        if key.get("transfer") or result.get("conditional"):
            continue
        found = _LAYER.search(result["encoder"])
        rows.append({"encoder": result["encoder"], "layer": int(found.group(1)) if found else None,
                     "task": result["task"], "classifier": result["classifier"], "seed": key.get("seed"),
                     **{k: result.get(k) for k in ("accuracy", "ci_low", "ci_high", "majority", "n_test")},
                     "control_accuracy": (result.get("control") or {}).get("accuracy"),
                     "seconds": made.get("seconds"), "device": made.get("device", ""),
                     "versions": ", ".join(f"{k} {v}" for k, v in made.get("versions", {}).items()),
                     "data": key.get("data", "")})
    table = pd.DataFrame(rows, columns=[c for c in BROWSE_COLUMNS if c != "best"])
    table = table.drop_duplicates(subset=["encoder", "task", "classifier", "seed", "data"], keep="last")
    _check_filters(table, task, encoder, layer)
    if task is not None:
        table = table[table["task"] == task]
    if encoder is not None:
        table = table[table["encoder"].str.contains(encoder, regex=False)]
    if layer is not None:
        table = table[table["layer"] == layer]
    table = table.assign(best=False)
    for _, group in table.groupby(["task", "data", "classifier", "seed"], dropna=False):
        if len(group) > 1:
            top = group["accuracy"].idxmax()
            table.loc[top, "best"] = bool(group.loc[top, "ci_low"] > group.drop(top)["ci_high"].max())
    return table[list(BROWSE_COLUMNS)].sort_values(["task", "accuracy"], ascending=[True, False],
                                                   ignore_index=True)


def probe_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per task as a terminal shows it: each metric in its unit (shares as %), a metric that has a 95% CI
    followed by it as ``[low, high]``, and the test sentences behind the accuracy (``n``) — a number alone says
    nothing of how far it can be trusted."""
    columns: dict[str, pd.Series] = {}
    for metric, rows in df.drop_duplicates(["task", "metric"]).groupby("metric", sort=False):  # a task given twice
        rows = rows.set_index("task")
        scale = 1 if metric in ("mdl_bits", "compression", "transfer_ratio") else 100
        columns[metric] = (scale * rows["value"]).round(2)
        if rows["ci_low"].notna().any():  # each CI on its own task's row, whichever tasks have the metric
            columns[f"{metric} 95% CI"] = pd.Series([f"[{scale * lo:.1f}, {scale * hi:.1f}]" if pd.notna(lo)
                                                     else "" for lo, hi in zip(rows["ci_low"], rows["ci_high"])],
                                                    index=rows.index)
        if metric == "accuracy":
            columns["n"] = rows["n"].astype("Int64")
    return pd.DataFrame(columns).reindex(df["task"].unique())


def layer_table(df: pd.DataFrame) -> pd.DataFrame:
    """A layer sweep's accuracies (%) as tasks × layers, with each task's test sentences (``n``) and the widest 95% CI
    half-width over its layers (``±CI``): whether two layers' numbers differ at all."""
    acc = df[df["metric"] == "accuracy"]
    table = (100 * acc.pivot_table(index="task", columns="layer", values="value", sort=False)).round(1)
    by_task = acc.groupby("task", sort=False)
    table["n"] = by_task["n"].max().astype("Int64")
    table["±CI"] = (100 * (acc["ci_high"] - acc["ci_low"]) / 2).groupby(acc["task"]).max().round(1)
    return table


def _check_filters(table: pd.DataFrame, task: str | None, encoder: str | None, layer: int | None) -> None:
    """Refuse a filter that no stored result matches on its own, naming the values the cache holds."""
    def listed(values) -> str:
        values = sorted({str(v) for v in values})
        return ", ".join(values[:12]) + (f" and {len(values) - 12} more" if len(values) > 12 else "")

    for name, value in (("task", task), ("encoder", encoder)):
        if value is not None and not check_text(value, name).strip():
            raise WorkbenchError(f"{name} {value!r} is blank: give part of a name, or leave the filter out")
    wrong = []
    if task is not None and task not in set(table["task"]):
        wrong.append(f"task {task!r} (tasks probed: {listed(table['task']) or 'none'})")
    if encoder is not None and not table["encoder"].str.contains(encoder, regex=False).any():
        wrong.append(f"an encoder named like {encoder!r} (encoders probed: {listed(table['encoder']) or 'none'})")
    if layer is not None and layer not in set(table["layer"].dropna()):
        wrong.append(f"layer {layer} (layers probed: {listed(int(v) for v in table['layer'].dropna()) or 'none'})")
    if wrong:
        raise WorkbenchError("the cache holds no probe results for " + "; nor for ".join(wrong)
                             + ("" if len(table) else "; `workbench probe` (or wb.probe) stores each result it makes"))

