"""Interactive explorers for JupyterLab (ipywidgets + plotly ``FigureWidget``); the notebooks only wire these up.

Each explorer is a small class holding its controls as attributes (so tests drive them with ``.value = ...`` and
``.click()``) and a ``.widget`` to display. Figures for export come from :mod:`workbench.reports.figures`.
"""
from __future__ import annotations

import html
from collections.abc import Callable, Sequence

try:
    import ipywidgets as w
except ImportError:  # the notebooks extra
    raise ImportError("the notebook widgets need ipywidgets: pip install 'bgt-workbench[notebooks]' (or bash "
                      "scripts/setup)") from None
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..models.folder import load
from ..probing.build import default_sizes
from ..style_transfer.generation import GUIDANCE, RERANK, transfer as default_transfer
from ..zoo.cards import CARD_SIZES
from .figures import ci_bars, layer_lines, majority_marks
from .results import tidy


__all__ = ["notebook_sizes", "ProbeExplorer", "LayerExplorer", "GapExplorer", "StyleTransferApp"]

def notebook_sizes() -> dict[str, int]:
    """Probing sizes for notebooks: every probe's default (the cards' sizes), or small ones when
    ``WORKBENCH_QUICK=1`` (CI)."""
    return default_sizes()


class ProbeExplorer:
    """Grouped bars of one probing metric (accuracy with 95% CI, or selectivity) for the chosen encoders and
    tasks of a tidy result frame; ``group`` (e.g. the language pair) picks a subset when the frame has that
    column."""

    def __init__(self, results: pd.DataFrame, group: str | None = None):
        self.results = tidy(results)
        self.group_column = group if group in self.results.columns else None
        groups = sorted(self.results[self.group_column].unique()) if self.group_column else []
        self.group = w.Dropdown(options=groups, description=group or "", layout={"display": "" if groups else "none"})
        self.metric = w.ToggleButtons(options=[m for m in ("accuracy", "selectivity")
                                               if (self.results["metric"] == m).any()], description="metric")
        self.encoders = w.SelectMultiple(description="encoders", rows=5)
        self.tasks = w.SelectMultiple(description="tasks", rows=8)
        self.figure = go.FigureWidget(layout={"barmode": "group", "template": "plotly_white",
                                              "yaxis_title": "× 100", "height": 420})
        self._refresh_choices()
        self.group.observe(lambda _: self._refresh_choices(), "value")
        for control in (self.metric, self.encoders, self.tasks):
            control.observe(lambda _: self.update(), "value")
        self.update()
        self.widget = w.VBox([w.HBox([self.group, self.metric]), w.HBox([self.encoders, self.tasks]), self.figure])

    def _subset(self) -> pd.DataFrame:
        df = self.results
        if self.group_column:
            df = df[df[self.group_column] == self.group.value]
        return df

    def _refresh_choices(self) -> None:
        df = self._subset()
        probes = df[df["metric"] == "accuracy"]
        encoders, tasks = list(dict.fromkeys(probes["encoder"])), list(dict.fromkeys(probes["task"]))
        self.encoders.options, self.tasks.options = encoders, tasks
        self.encoders.value, self.tasks.value = tuple(encoders), tuple(tasks)
        self.update()

    def update(self) -> None:
        """Redraw for the current choices."""
        df = self._subset()
        rows = df[(df["metric"] == self.metric.value) & df["encoder"].isin(self.encoders.value)
                  & df["task"].isin(self.tasks.value)]
        accuracy = self.metric.value == "accuracy"  # with CIs and the majority baseline; selectivity bare
        bars = [ci_bars(encoder, part, 100) if accuracy else go.Bar(name=encoder, x=part["task"],
                                                                    y=100 * part["value"])
                for encoder, part in rows.groupby("encoder", sort=False)]
        marks = majority_marks(df, rows["task"]) if accuracy else None
        if marks is not None:
            bars.append(marks)
        with self.figure.batch_update():
            self.figure.data = ()
            if bars:
                self.figure.add_traces(bars)
            self.figure.layout.title = f"{self.metric.value} × 100" + (
                f" — {self.group.value}" if self.group_column else "")


class LayerExplorer:
    """A layer sweep (:func:`workbench.probe_layers` rows of one or more encoders): one line per chosen encoder
    and task across the layers, accuracy with its CI band or selectivity; encoders of different depths are drawn
    on relative depth (each one's layers as a share of its own top) unless the layer number is asked for."""

    def __init__(self, results: pd.DataFrame):
        self.results = tidy(results)
        probes = self.results[self.results["metric"] == "accuracy"]
        encoders, tasks = list(dict.fromkeys(probes["encoder"])), list(dict.fromkeys(probes["task"]))
        self.encoders = w.SelectMultiple(options=encoders, value=tuple(encoders), description="encoders", rows=4)
        self.tasks = w.SelectMultiple(options=tasks, value=tuple(tasks[:3]), description="tasks", rows=6)
        self.metric = w.ToggleButtons(options=[m for m in ("accuracy", "selectivity")
                                               if (self.results["metric"] == m).any()], description="metric")
        tops = probes[probes["layer"] >= 0].groupby("encoder")["layer"].max()
        self.depth = w.ToggleButtons(options=[("layer", "layer"), ("relative depth", "relative")],
                                     value="relative" if tops.nunique() > 1 else "layer", description="x axis",
                                     tooltips=["layer number", "each encoder's layers as a share of its own top "
                                               "(encoders of different depths side by side)"])
        self.figure = go.FigureWidget(layout={"template": "plotly_white", "height": 420,
                                              "xaxis_title": "layer (0 = embeddings)", "yaxis_title": "× 100"})
        for control in (self.encoders, self.tasks, self.metric, self.depth):
            control.observe(lambda _: self.update(), "value")
        self.update()
        self.widget = w.VBox([w.HBox([self.encoders, self.tasks]), w.HBox([self.metric, self.depth]), self.figure])

    def update(self) -> None:
        """Redraw for the current choices."""
        df = self.results
        rows = df[df["encoder"].isin(self.encoders.value) & df["task"].isin(self.tasks.value)]
        with self.figure.batch_update():
            self.figure.data = ()
            if not rows.empty:
                drawn = layer_lines(rows, self.metric.value, self.depth.value)
                self.figure.add_traces(drawn.data)
                self.figure.layout.xaxis = drawn.layout.xaxis  # its ticks name the last point mu
            self.figure.layout.title = f"{self.metric.value} × 100 by layer"


class GapExplorer:
    """A gap between two encoder roles (e.g. semantic − en language encoder) per language, languages ordered by
    a distance measure, ours beside the paper's; pick the task and the two roles."""

    def __init__(self, ours: pd.DataFrame, paper: pd.DataFrame, distance: dict[str, float],
                 roles: Sequence[str] = ("semantic", "en", "bilingual_trans")):
        self.ours, self.paper, self.distance = ours, paper, distance
        self.order = sorted(distance, key=distance.get, reverse=True)
        tasks = [c for c in ours.columns if c not in ("lang", "role") and ours[c].notna().any()]
        self.task = w.Dropdown(options=tasks, value="Word" if "Word" in tasks else tasks[0], description="task")
        self.minuend = w.Dropdown(options=list(roles), value=roles[0], description="encoder A")
        self.subtrahend = w.Dropdown(options=list(roles), value=roles[1], description="minus B")
        self.figure = go.FigureWidget(layout={"template": "plotly_white", "height": 400,
                                              "xaxis_title": "language (closest to English first)",
                                              "yaxis_title": "A − B (× 100)"})
        for control in (self.task, self.minuend, self.subtrahend):
            control.observe(lambda _: self.update(), "value")
        self.update()
        self.widget = w.VBox([w.HBox([self.task, self.minuend, self.subtrahend]), self.figure])

    def gaps(self, table: pd.DataFrame) -> pd.Series:
        """A − B for the current task per language, in distance order (NaN where a cell is missing)."""
        pivot = table.pivot_table(index="lang", columns="role", values=self.task.value, aggfunc="first")
        if self.minuend.value not in pivot or self.subtrahend.value not in pivot:
            return pd.Series(index=self.order, dtype=float)
        return (pivot[self.minuend.value] - pivot[self.subtrahend.value]).reindex(self.order)

    def update(self) -> None:
        """Redraw; a choice that leaves nothing to draw (A = B, or roles without this task's cells) is said."""
        a, b, task = self.minuend.value, self.subtrahend.value, self.task.value
        gaps = {} if a == b else {name: self.gaps(table) for name, table in (("ours", self.ours),
                                                                              ("paper", self.paper))}
        empty = ("pick two different encoders" if a == b else
                 f"no {task} cells for {a} and {b} (e.g. Gender is read by the fr/es encoder, role xx)"
                 if all(gap.isna().all() for gap in gaps.values()) else "")
        with self.figure.batch_update():
            self.figure.data = ()
            for name, gap in gaps.items():
                error = None
                if name == "ours" and task != "STS" and not empty:  # binomial 95% CI of a difference of accuracies
                    error = dict(type="data", array=list(self.ci_halfwidth(gap.index, a, b)))
                self.figure.add_scatter(name=name, x=list(gap.index), y=list(gap.values), mode="lines+markers",
                                        error_y=error)
            self.figure.layout.annotations = [dict(text=empty, showarrow=False, x=0.5, y=0.5, xref="paper",
                                                   yref="paper", font=dict(size=16))] if empty else []
            self.figure.layout.title = f"{task}: {a} − {b}" + ("" if task == "STS" or empty else
                                                                " (ours: ±95% CI, unpaired binomial)")

    def ci_halfwidth(self, languages, a: str, b: str, n: int = CARD_SIZES["test"]) -> np.ndarray:
        """Half the 95% CI of A − B (× 100) per language, from each accuracy's binomial variance on ``n`` test
        sentences; unpaired, so wider than a paired bootstrap on the same sentences would give."""
        pivot = self.ours.pivot_table(index="lang", columns="role", values=self.task.value, aggfunc="first")
        p = {role: pivot[role].reindex(languages).to_numpy() / 100 for role in (a, b)}
        return 100 * 1.96 * np.sqrt(sum(q * (1 - q) for q in p.values()) / n)


class StyleTransferApp:
    """Two text boxes (Source → z_sem, Style → z_en), decoding options, live output, a swap button, a button that
    draws an example pair from held-out data and, given ``choices`` (model names: e.g. every shipped BGT with
    decoders, :func:`~workbench.zoo.cards.with_decoders`), a menu that switches the model."""

    def __init__(self, model, examples: Sequence[str] = (), transfer: Callable | None = None,
                 choices: Sequence[str] = ()):
        self.model, self.examples = model, list(examples)
        self._transfer = transfer or default_transfer
        self._loaded = {getattr(model, "name", ""): model}
        names = list(dict.fromkeys([*([model.name] if getattr(model, "name", None) in choices else []), *choices]))
        self.chooser = w.Dropdown(options=names, value=names[0] if names else None, description="model",
                                  layout={"display": "flex" if names else "none"})
        self.chooser.observe(lambda change: self._switch(change["new"]), "value")
        first = self.examples[:2] if len(self.examples) >= 2 else ["", ""]
        self.source = w.Textarea(value=first[0], description="Source", placeholder="meaning comes from here",
                                 continuous_update=False, layout={"width": "95%"})
        self.style = w.Textarea(value=first[1], description="Style", placeholder="form comes from here",
                                continuous_update=False, layout={"width": "95%"})
        self.search = w.ToggleButtons(options=["greedy", "beam", "beam, re-ranked"], value="beam, re-ranked",
                                      description="decoding",
                                      tooltips=["the likeliest piece each step", "the likeliest sentence",
                                                "the beam's sentence nearest the source's meaning and the style's "
                                                "form by the model's own encoders"])
        self.beam = w.IntSlider(value=5, min=2, max=10, description="beam size")
        self.max_len = w.IntSlider(value=40, min=5, max=model.cfg.max_len, description="max pieces")
        self.guidance = w.FloatSlider(value=GUIDANCE, min=0.0, max=1.0, step=0.1, description="style push",
                                      tooltip="guidance: toward the style's form and away from the source's; more "
                                              "form, less meaning (docs/method.md#guidance)")
        self.strip = w.Checkbox(value=True, description="source without punctuation",
                                tooltip="the semantic encoder reads the source without its marks, so they come from "
                                        "the style (docs/method.md#decoding)")
        self.swap = w.Button(description="Swap", icon="exchange")
        self.example = w.Button(description="Random held-out pair", disabled=len(self.examples) < 2)
        self.output = w.HTML()
        self._draw, self._quiet = 0, False
        self.swap.on_click(lambda _: self._set(self.style.value, self.source.value))
        self.example.on_click(lambda _: self._random_example())
        for control in (self.source, self.style, self.search, self.beam, self.max_len, self.guidance, self.strip):
            control.observe(lambda _: None if self._quiet else self.update(), "value")
        self.update()
        self.widget = w.VBox([self.chooser, self.source, self.style,
                              w.HBox([self.search, self.beam, self.max_len]), w.HBox([self.guidance, self.strip]),
                              w.HBox([self.swap, self.example]), self.output])

    def _switch(self, name: str) -> None:
        """Transfer with the model ``name`` (loaded once)."""
        if name not in self._loaded:
            self._loaded[name] = load(name)
        self.model = self._loaded[name]
        self.max_len.max = self.model.cfg.max_len
        self.update()

    def _set(self, source: str, style: str) -> None:
        """Set both boxes, then generate once."""
        self._quiet = True
        self.source.value, self.style.value = source, style
        self._quiet = False
        self.update()

    def _random_example(self) -> None:
        self._draw += 1
        i, j = np.random.default_rng(self._draw).choice(len(self.examples), 2, replace=False)
        self._set(self.examples[i], self.examples[j])

    @property
    def result(self) -> str:
        """The last generated sentence ('' when an input is empty)."""
        return self._result

    def update(self) -> None:
        if not (self.source.value.strip() and self.style.value.strip()):
            self._result = ""
            self.output.value = "<i>type a Source and a Style sentence</i>"
            return
        beam = 1 if self.search.value == "greedy" else self.beam.value
        self.output.value = "<i>decoding…</i>"
        self._result = self._transfer(self.model, [self.source.value], [self.style.value], beam=beam,
                                      max_len=self.max_len.value,
                                      rerank=RERANK if self.search.value == "beam, re-ranked" else None,
                                      guidance=self.guidance.value, strip_punctuation=self.strip.value)[0]
        cut = len(self.model.tokenizer.encode([self._result])[0]) > self.max_len.value  # no end of sentence came
        self.output.value = f"<b>Output:</b> {html.escape(self._result)}" + (
            f" <i>[cut at {self.max_len.value} pieces: raise max pieces]</i>" if cut else "")
