"""Plotly figures built from tidy result frames (:mod:`.results`; :mod:`.pages` writes them out as reports)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from ..checks import check_name
from ..models.runlog import DEV_METRICS
from ..probing.tasks import get_task
from .results import tidy

def probe_figure(df: pd.DataFrame) -> go.Figure:
    """Grouped bars of probe accuracy (×100) per task and encoder, 95% CI whiskers, majority baseline marks."""
    df = tidy(df)
    acc = df[df["metric"] == "accuracy"]
    fig = go.Figure()
    for encoder, rows in acc.groupby("encoder", sort=False):
        _ci_bars(fig, encoder, rows, 100)
    marks = majority_marks(df, acc["task"])
    if marks is not None:
        fig.add_trace(marks)
    fig.update_layout(barmode="group", title="Probing accuracy (test split, 95% bootstrap CI)",
                      yaxis_title="accuracy × 100", xaxis_title="task", template="plotly_white")
    return fig


def majority_marks(df: pd.DataFrame, tasks) -> go.Scatter | None:
    """A black bar per task at its majority-class accuracy (× 100): what always guessing the commonest label
    scores (None where the frame has none for ``tasks``)."""
    majority = df[(df["metric"] == "majority") & df["task"].isin(tasks)].drop_duplicates("task")
    if majority.empty:
        return None
    return go.Scatter(name="majority class", x=majority["task"], y=100 * majority["value"], mode="markers",
                      marker=dict(symbol="line-ew-open", size=40, color="black", line=dict(width=3)))


def ci_bars(name: str, rows: pd.DataFrame, scale: float) -> go.Bar:
    """One series of bars per task, ``value × scale`` with its 95% CI as whiskers."""
    return go.Bar(name=name, x=rows["task"], y=scale * rows["value"],
                  error_y=dict(type="data", symmetric=False, array=scale * (rows["ci_high"] - rows["value"]),
                               arrayminus=scale * (rows["value"] - rows["ci_low"])))


def _ci_bars(fig: go.Figure, name: str, rows: pd.DataFrame, scale: float) -> None:
    fig.add_trace(ci_bars(name, rows, scale))


def selectivity_figure(df: pd.DataFrame) -> go.Figure:
    """Grouped bars of selectivity (task minus control-task accuracy, ×100) per task and encoder; a cell whose
    control is uninformative (a ``note`` says why) is hatched and faded, with the reason on hover."""
    rows = tidy(df)
    rows = rows[rows["metric"] == "selectivity"].reset_index(drop=True)
    notes = rows["note"].fillna("").astype(str) if "note" in rows else pd.Series("", index=rows.index)
    fig = go.Figure()
    for encoder, part in rows.groupby("encoder", sort=False):
        caveat = notes[part.index]
        fig.add_bar(name=encoder, x=part["task"], y=100 * part["value"],
                    hovertext=[f"uninformative: {note}" if note else "" for note in caveat],
                    marker=dict(pattern_shape=["/" if note else "" for note in caveat],
                                opacity=[0.35 if note else 1.0 for note in caveat]))
    title = "Selectivity: accuracy minus control-task accuracy (Hewitt & Liang)"
    if notes.astype(bool).any():
        title += "<br><sup>hatched: the control cannot separate property from memory there (hover for why)</sup>"
    fig.update_layout(barmode="group", title=title, yaxis_title="selectivity × 100", xaxis_title="task",
                      template="plotly_white")
    return fig


def erasure_figure(effects: pd.DataFrame) -> go.Figure:
    """Grouped bars of the STS change (Pearson × 100) when each concept is erased (LEACE), per encoder;
    ``effects`` as :func:`workbench.probing.erase.erasure_effects` returns."""
    rows = effects[effects["metric"].str.startswith("STS")]
    fig = go.Figure()
    for encoder, part in rows.groupby("encoder", sort=False):  # a change that is not a number is said, not dropped
        fig.add_bar(name=encoder, x=part["erased"], y=part["change"].fillna(0),
                    text=[note if pd.isna(v) else "" for v, note in zip(part["change"], part.get(
                        "note", pd.Series("undefined (no number before or after)", index=part.index)))],
                    customdata=part[["before", "after"]], hovertemplate="%{x}: %{customdata[0]:.2f} → "
                    "%{customdata[1]:.2f}<extra>%{fullData.name}</extra>")
    metric = rows["metric"].iloc[0] if len(rows) else "STS"
    fig.update_layout(barmode="group", title=f"What {metric} costs when you erase a concept (LEACE)",
                      yaxis_title=f"{metric} change (Pearson × 100)", xaxis_title="erased concept",
                      template="plotly_white")
    return fig


def conditional_figure(df: pd.DataFrame) -> go.Figure:
    """Grouped bars (with 95% CIs) of conditional-probe gains (``metric == "conditional_gain"``, × 100) per task,
    one bar group per encoder ("[a ; b]": what ``a`` adds beyond ``b``)."""
    rows = tidy(df)
    rows = rows[rows["metric"] == "conditional_gain"]
    fig = go.Figure()
    for encoder, part in rows.groupby("encoder", sort=False):
        a, _, b = encoder.strip("[]").partition(" ; ")
        _ci_bars(fig, f"{a} beyond {b}", part, 100)
    fig.update_layout(barmode="group", title="Conditional probing: accuracy gained by adding a view (Hewitt et al.)",
                      yaxis_title="accuracy gain × 100", xaxis_title="task", template="plotly_white")
    return fig


def pair_figure(effects: pd.DataFrame, metric: str, value: str, title: str, yaxis: str) -> go.Figure:
    """Grouped bars per language pair (``pair`` column), one bar per model (the encoder name's first part), of
    column ``value`` in the rows whose metric starts with ``metric`` (e.g. :func:`erasure_effects` rows)."""
    rows = effects[effects["metric"].str.startswith(metric)]
    fig = go.Figure()
    for model, part in rows.assign(model=rows["encoder"].str.split("-").str[0]).groupby("model", sort=False):
        fig.add_bar(name=model, x=part["pair"], y=part[value])
    fig.update_layout(barmode="group", title=title, template="plotly_white", xaxis_title="language pair",
                      yaxis_title=yaxis)
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


def table3_figure(table: pd.DataFrame, title: str = "Probing accuracy by encoder (Table 3 layout)",
                  majority: pd.DataFrame | pd.Series | None = None) -> go.Figure:
    """Heat map of a Table-3-shaped frame (rows ``language / encoder``, columns tasks, values × 100). With the
    majority baseline (× 100, per column or per cell) each cell is coloured by its gain over it — tasks differ in
    chance level (a two-class task at chance and a 1,000-word one far above it would otherwise look alike) — and
    still shows its accuracy; a cell without a baseline (STS) is grey."""
    values = table.to_numpy(dtype=float)
    axes = dict(x=list(table.columns), y=list(table.index), texttemplate="%{text}",
                text=table.map(lambda v: "" if pd.isna(v) else f"{v:.1f}").to_numpy())
    if majority is None:
        return _table_layout(go.Figure(go.Heatmap(z=values, colorscale="Viridis", colorbar=dict(title="× 100"),
                                                  **axes)), title, len(table))
    base = (majority.reindex(index=table.index, columns=table.columns) if isinstance(majority, pd.DataFrame)
            else pd.DataFrame([majority.reindex(table.columns).to_numpy()] * len(table), index=table.index,
                              columns=table.columns)).to_numpy(dtype=float)
    gain = values - base
    span = max(float(np.nanmax(np.abs(gain))) if np.isfinite(gain).any() else 1.0, 1.0)
    fig = go.Figure(go.Heatmap(z=gain, colorscale="RdBu", zmid=0, zmin=-span, zmax=span, customdata=base,
                               colorbar=dict(title="points over<br>majority"), name="gain over majority",
                               hovertemplate="%{y}, %{x}: %{text} (majority %{customdata:.1f})<extra></extra>",
                               **axes))
    fig.add_trace(go.Heatmap(z=np.where(np.isnan(base) & ~np.isnan(values), 0.0, np.nan), showscale=False,
                             colorscale=[[0, "#eeeeee"], [1, "#eeeeee"]], hoverinfo="skip", name="no baseline",
                             **axes))
    return _table_layout(fig, title, len(table))


def _table_layout(fig: go.Figure, title: str, rows: int) -> go.Figure:
    fig.update_layout(title=title, template="plotly_white", yaxis=dict(autorange="reversed"),
                      height=max(300, 28 * rows + 150), margin=dict(t=90))  # plotly's buttons above the cells
    return fig


def halves_figure(cards: dict[str, dict]) -> go.Figure:
    """Both halves of BGT's story for the BGTs of ``cards`` whose card has a ``halves`` section: the English view
    minus the semantic view on the form tasks and the semantic view minus the English view on STS12–16, with
    95% CIs. Above zero everywhere is the paper's pattern (its language encoder wins every form task)."""
    fig = go.Figure()
    for name, info in cards.items():
        halves = info.get("halves")
        if not halves:
            continue
        cells = {**{get_task(t).title: v for t, v in halves["english_minus_semantic"].items()},
                 "STS12–16 (semantic − English)": halves["semantic_minus_english_sts"]}
        rows = pd.DataFrame([(task, *v) for task, v in cells.items()], columns=["task", "value", "ci_low", "ci_high"])
        fig.add_trace(ci_bars(name, rows, 1.0))
    fig.add_hline(y=0, line_color="grey")
    fig.update_layout(barmode="group", title="Both halves: English − semantic view on form, semantic − English on STS",
                      yaxis_title="difference (accuracy or Pearson × 100)", legend_title="model")
    return fig


def overview(df: pd.DataFrame) -> pd.DataFrame:
    """Encoders × tasks (accuracy × 100, tasks in their row order), with each encoder's STS (Pearson × 100, the
    widest span of years there, e.g. ``STS12-16``) as the first column where the frame has STS rows: Table 3's
    layout."""
    acc = df[df["metric"] == "accuracy"]
    table = 100 * acc.pivot_table(index="encoder", columns="task", values="value", sort=False)
    sts = df[(df["metric"] == "pearson") & (df["dataset"] == "all") & df["task"].str.match(r"STS\d\d(-\d\d)?$")]
    if len(sts):
        span = max(sts["task"].unique(), key=lambda t: int(t[-2:]) - int(t[3:5]))  # STS12-16 over STS16
        table.insert(0, span, sts[sts["task"] == span].set_index("encoder")["value"].reindex(table.index))
    return table


def _layer_label(layer: int) -> str:
    return "embedding (mu)" if layer == -1 else f"layer {int(layer)}"


def layer_heatmap(df: pd.DataFrame, encoder: str | None = None) -> go.Figure:
    """Heat map of a layer sweep (:func:`workbench.probe_layers` rows) for one encoder: tasks × layers, accuracy
    × 100, with a toggle to selectivity (accuracy minus control-task accuracy) where the sweep has it."""
    df = tidy(df)
    encoder = encoder or df["encoder"].iloc[0]
    rows = df[(df["encoder"] == encoder) & df["layer"].notna()]
    layers = sorted(rows["layer"].unique(), key=lambda layer: (layer == -1, layer))
    tables = {metric: rows[rows["metric"] == metric].pivot_table(index="task", columns="layer", values="value",
                                                                 sort=False).reindex(columns=layers) * 100
              for metric in ("accuracy", "selectivity") if (rows["metric"] == metric).any()}
    fig = go.Figure()
    for i, (metric, table) in enumerate(tables.items()):
        fig.add_heatmap(z=table.to_numpy(dtype=float), x=[_layer_label(layer) for layer in layers],
                        y=list(table.index), visible=i == 0, colorscale="Viridis" if metric == "accuracy" else "RdBu",
                        colorbar=dict(title="× 100"),  # one fixed scale: heat maps of encoders compare
                        **(dict(zmin=0, zmax=100) if metric == "accuracy" else dict(zmin=-50, zmid=0, zmax=50)),
                        text=table.map(lambda v: "" if pd.isna(v) else f"{v:.1f}").to_numpy(), texttemplate="%{text}",
                        name=metric)
    if len(tables) > 1:
        fig.update_layout(updatemenus=[dict(type="buttons", direction="right", x=1, xanchor="right", y=1.12, buttons=[
            dict(label=metric, method="update", args=[{"visible": [m == metric for m in tables]}])
            for metric in tables])])
    fig.update_layout(title=f"Probing by layer: {encoder}", template="plotly_white",
                      yaxis=dict(autorange="reversed"), height=max(300, 40 * len(next(iter(tables.values()))) + 180))
    return fig


def layer_lines(df: pd.DataFrame, metric: str = "accuracy", depth: str = "layer") -> go.Figure:
    """``metric`` × 100 against layer, one line per (encoder, task), each in its own colour with its 95% bootstrap
    CI band (accuracy) in that colour; the sentence embedding (mu, layer -1) is the last point, after the top.
    ``depth="relative"``: each encoder's layers as a share of its own top layer (0 = embeddings, 1 = top), so
    encoders of different depths line up."""
    check_name("depth", depth, ("layer", "relative"))
    df = tidy(df)
    rows = df[(df["metric"] == metric) & df["layer"].notna()]
    if depth == "relative":
        deepest = rows["layer"].where(rows["layer"] >= 0).groupby(rows["encoder"]).transform("max").clip(lower=1)
        rows = rows.assign(x=(rows["layer"] / deepest).where(rows["layer"] >= 0, 1.1))
        ticks, labels = [0, 0.25, 0.5, 0.75, 1.0], ["0", "¼", "½", "¾", "top"]
        if (rows["layer"] == -1).any():
            ticks, labels = [*ticks, 1.1], [*labels, "mu"]
        axis = "relative depth (layer / the encoder's top layer; mu = the sentence embedding)"
    else:
        top = int(rows["layer"].max()) + 1 if len(rows) else 0
        rows = rows.assign(x=rows["layer"].where(rows["layer"] >= 0, top))
        ticks = sorted(rows["x"].unique())
        labels = ["mu" if x == top and (rows["layer"] == -1).any() else str(int(x)) for x in ticks]
        axis = "layer (0 = embeddings; mu = the sentence embedding)"
    rows = rows.sort_values("x")
    fig = go.Figure()
    for i, ((encoder, task), part) in enumerate(rows.groupby(["encoder", "task"], sort=False)):
        name, colour = f"{task} · {encoder}" if rows["encoder"].nunique() > 1 else task, _colour(i)
        if metric == "accuracy":
            band = pd.concat([part["x"], part["x"][::-1]])
            fig.add_scatter(x=band, y=100 * pd.concat([part["ci_high"], part["ci_low"][::-1]]), fill="toself",
                            fillcolor=colour, opacity=0.2, line=dict(width=0, color=colour), hoverinfo="skip",
                            showlegend=False, legendgroup=name)
        fig.add_scatter(name=name, x=part["x"], y=100 * part["value"], mode="lines+markers", legendgroup=name,
                        line=dict(color=colour), customdata=part["layer"], hovertemplate="layer %{customdata}: "
                        "%{y:.1f}<extra>" + name + "</extra>")
    fig.update_layout(title=f"Probing {metric} by layer" + (" (95% bootstrap CI)" if metric == "accuracy" else ""),
                      xaxis=dict(title=axis, tickvals=ticks, ticktext=labels),
                      yaxis_title=f"{metric} × 100", template="plotly_white")
    return fig


def _colour(i: int) -> str:
    """The i-th of 24 distinct colours (plotly's Dark24), so series do not share a colour before the 25th."""
    return qualitative.Dark24[i % len(qualitative.Dark24)]


def gap_figure(gaps: pd.DataFrame, title: str = "Semantic minus English language encoder, by language",
               x: str = "language") -> go.Figure:
    """Lines of a gap (``language, task, gap`` rows, × 100), one per task: against the languages in their row
    order (the stated distance order), or with ``x="distance"`` against a measured distance column of that
    name (points labelled with their language)."""
    fig = go.Figure()
    for task, rows in gaps.groupby("task", sort=False):
        if x == "distance":
            rows = rows.sort_values("distance")
            fig.add_scatter(name=task, x=rows["distance"], y=rows["gap"], text=rows["language"],
                            mode="lines+markers+text", textposition="top center")
        else:
            fig.add_scatter(name=task, x=rows["language"], y=rows["gap"], mode="lines+markers")
    fig.add_hline(y=0, line=dict(color="grey", dash="dot"))
    fig.update_layout(title=title, template="plotly_white", yaxis_title="semantic − language encoder (× 100)",
                      xaxis_title="distance from English" if x == "distance" else "language (ordered by distance)")
    return fig


def curve_figure(curves: pd.DataFrame, x: str = "update") -> go.Figure:
    """Learning curves (:func:`workbench.models.runlog.learning_curve` rows of one or more runs) against ``x``
    (``update``, ``train_seconds`` or ``pairs_seen``): the dev score per run and view on the left (STS-B dev
    Pearson × 100; for a pair without English, the retrieval of its validation pairs, %), validation loss per run on
    the right; dotted lines mark each view's value at initialisation (the random-init reference of the same
    shape)."""
    labels = {"update": "updates", "train_seconds": "training seconds", "pairs_seen": "sentence pairs seen"}
    scored = [m for m in DEV_METRICS if (curves["metric"] == m).any()] or ["stsb_dev"]
    names = {m: f"{words} ({unit})" for m, (words, unit) in DEV_METRICS.items()}
    fig = make_subplots(rows=1, cols=2, subplot_titles=(" / ".join(names[m] for m in scored),
                                                        "validation loss per pair"))
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
    dev = curves[curves["metric"].isin(list(DEV_METRICS))]
    for i, ((run, view), rows) in enumerate(dev.groupby(["run", "view"], sort=False)):
        color = palette[i % len(palette)]
        fig.add_scatter(x=rows[x], y=rows["value"], name=f"{run}: {view}", mode="lines+markers",
                        line=dict(color=color), marker=dict(size=4), row=1, col=1)
        init = rows[rows["update"] == 0]
        if not init.empty:
            fig.add_hline(y=float(init["value"].iloc[0]), line=dict(color=color, dash="dot", width=1), row=1, col=1,
                          annotation_text=f"{view} at init", annotation_position="bottom right")
    loss = curves[curves["metric"] == "valid_loss"]
    for i, (run, rows) in enumerate(loss.groupby("run", sort=False)):
        fig.add_scatter(x=rows[x], y=rows["value"], name=f"{run}: validation loss", mode="lines+markers",
                        line=dict(color="grey", dash=["solid", "dash", "dot", "dashdot"][i % 4]), marker=dict(size=4),
                        row=1, col=2)
    fig.update_xaxes(title_text=labels.get(x, x))
    fig.update_layout(title=f"Learning curves against {labels.get(x, x)}", template="plotly_white", height=480)
    return fig


def figures_for(df: pd.DataFrame) -> dict[str, tuple[go.Figure, pd.DataFrame]]:
    """The figures a result frame supports, by file stem, each with the rows behind it: a layer sweep's heat maps
    and lines, and for the other rows probing, selectivity, STS and paired-comparison bars (any mix)."""
    df = tidy(df)
    figures = {}
    layered = df["layer"].notna() if "layer" in df.columns else pd.Series(False, index=df.index)
    if layered.any():  # a layer sweep: a heat map per encoder, then lines
        sweep = df[layered]
        swept = sweep[sweep["metric"].isin(["accuracy", "selectivity"])]
        for i, encoder in enumerate(swept["encoder"].unique()):
            figures[f"layers-{i}"] = (layer_heatmap(sweep, encoder), swept[swept["encoder"] == encoder])
        figures["layer-lines"] = (layer_lines(sweep), sweep[sweep["metric"] == "accuracy"])
    df = df[~layered]
    accuracy = df[df["metric"] == "accuracy"]
    if accuracy["encoder"].nunique() > 1 and accuracy["task"].nunique() > 1:  # Table 3's layout first
        majority = 100 * df[df["metric"] == "majority"].groupby("task")["value"].mean()
        figures["overview"] = (table3_figure(overview(df), "Encoders × tasks (Table 3 layout, × 100; colour: gain "
                                             "over the majority baseline)", majority), accuracy)
    if (df["metric"] == "accuracy").any():
        figures["probing"] = (probe_figure(df), df[df["metric"].isin(["accuracy", "majority"])])
    if (df["metric"] == "selectivity").any():
        figures["selectivity"] = (selectivity_figure(df), df[df["metric"] == "selectivity"])
    sts = (df["metric"] == "pearson") & (df["dataset"] == "all")
    if sts.any():
        figures["sts"] = (sts_figure(df), df[sts])
    compared = df["metric"] == "pearson difference"
    if compared.any():
        figures["comparison"] = (comparison_figure(df[compared]), df[compared])
    return figures


def comparison_figure(rows: pd.DataFrame) -> go.Figure:
    """Bars of paired differences (:func:`workbench.compare_sts` rows) per task, one series per pair of
    encoders, with their 95% bootstrap CIs."""
    fig = go.Figure()
    for pair, part in rows.groupby("encoder", sort=False):
        _ci_bars(fig, pair, part, 1)
    fig.update_layout(barmode="group", title="Paired bootstrap: A − B, Pearson × 100 (95% CI)",
                      yaxis_title="difference × 100", template="plotly_white")
    return fig
