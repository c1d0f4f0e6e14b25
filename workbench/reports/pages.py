"""Writing results out: the self-contained HTML report, each figure's data, PNG and PDF, and spreadsheet-safe CSV.

The figures come from :mod:`.figures`; this module only lays them out as pages and files.
"""
from __future__ import annotations

import html
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from ..checks import WorkbenchError, as_path
from ..paths import atomic_write
from ..probing.layers import layer_profile
from .figures import curve_figure, figures_for
from .results import tidy, unit_of

log = logging.getLogger(__name__)


def curve_report(curves: pd.DataFrame, folder: str | Path, static: bool = True) -> Path:
    """``curve.html`` (the curves against updates and against training seconds, self-contained), ``curve.csv``
    and, where Chromium is, PNGs in ``folder``. Returns the HTML path."""
    folder = Path(folder)
    if curves.empty:
        raise ValueError("no learning-curve rows: the runs logged no dev score or validation loss yet")
    figures = {name: (curve_figure(curves, x), curves) for name, x in (("updates", "update"),
                                                                         ("seconds", "train_seconds"))}
    problems = export_figures(figures, folder, stem="curve", formats=("png",) if static else ())
    for problem in problems:
        log.warning("%s", problem)
    runs = ", ".join(dict.fromkeys(curves["run"]))
    path = folder / "curve.html"
    atomic_write(path, page(f"Learning curves: {runs}", "".join(f'<p class="warn">{html.escape(p)}</p>' for p in problems)
                      + figure_html({k: f for k, (f, _) in figures.items()})))
    atomic_write(folder / "curve.csv", curves.to_csv(index=False))
    return path


# kaleido's Chromium can hang without ever answering (plotly/Kaleido#134 and others), so the images are drawn in a
# child process that is killed, with its browser, past STATIC_SECONDS plus a few seconds per image. All of them in
# one browser session: plotly's write_image starts a browser per image (the demo's 8 images: ~27 s against ~5 s).
STATIC_SECONDS = 120
_DRAW = ("import json, sys\nimport kaleido\n"
         "kaleido.write_fig_from_object_sync([{'fig': json.loads(job['figure']), 'path': job['path'],\n"
         "    'opts': {'format': job['format'], 'width': 1100, 'height': 600}} for job in json.load(open(sys.argv[1]))],\n"
         "    cancel_on_error=True)")


def _draw_static(jobs: list[tuple[go.Figure, Path, str]], timeout: float, code: str | None = None) -> str | None:
    """Write each ``(figure, path, format)`` through kaleido in a child process (``code``, default
    :data:`_DRAW`, runs there on a JSON file of the jobs), killed with its process group after ``timeout`` s;
    why it failed, or None."""
    with tempfile.TemporaryDirectory(prefix="workbench-static-") as tmp:
        spec = Path(tmp) / "jobs.json"
        spec.write_text(json.dumps([{"figure": fig.to_json(), "path": str(path), "format": fmt}
                                    for fig, path, fmt in jobs]))
        child = subprocess.Popen([sys.executable, "-c", code or _DRAW, str(spec)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return f"the browser did not finish within {timeout:.0f} s"
    if child.returncode != 0:
        lines = [line.strip() for line in err.splitlines() if line.strip()]
        return lines[-1] if lines else ("no browser answered" if shutil.which("chromium") is None
                                        else "the browser gave no reason")
    return None


def export_figures(figures: dict[str, tuple[go.Figure, pd.DataFrame]], folder: str | Path,
                   stem: str = "figure", formats: tuple[str, ...] = ("png", "pdf")) -> list[str]:
    """Write ``<stem>-<name>.csv``/``.json`` (the numbers behind each figure) and, through kaleido and a
    Chromium (in a child process with a time limit), ``.png``/``.pdf``. Returns problems as messages (no
    Chromium, or one that hangs: the static images are skipped, the data files are still written)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    jobs = []
    for name, (fig, data) in figures.items():
        base = folder / f"{stem}-{name}"
        atomic_write(base.with_suffix(".csv"), spreadsheet_safe(data).to_csv(index=False))
        atomic_write(base.with_suffix(".json"), json.dumps(json.loads(data.to_json(orient="records")), indent=1))
        jobs += [(fig, base.with_suffix(f".{fmt}"), fmt) for fmt in formats]
    reason = _draw_static(jobs, STATIC_SECONDS + 5 * len(jobs)) if jobs else None
    if reason is None:
        return []
    return [f"static {' and '.join(f.upper() for f in formats)} export skipped: plotly/kaleido could not render "
            f"({reason}). Install Chromium (Debian: apt-get install chromium) and kaleido>=1.5 for PNG/PDF; "
            "the HTML and the CSV/JSON are complete without it."]


def html_table(df: pd.DataFrame) -> str:
    """A report table: numbers to one decimal, missing values as a dash."""
    return df.to_html(index=False, float_format=lambda v: f"{v:.1f}", na_rep="–", border=0)


def html_check(ok: bool, text: str) -> str:
    """One line of a report's checklist: ✔ or ✘ and what was checked."""
    return f'<li class="{"ok" if ok else "miss"}">{"✔" if ok else "✘"} {html.escape(text)}</li>'


def page(title: str, body: str) -> str:
    """A self-contained HTML page around ``body``."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}}
table{{border-collapse:collapse;font-size:0.85em}} td,th{{border:1px solid #ccc;padding:2px 6px}}
.ok{{color:#1a7f37}} .miss{{color:#c0392b}} .warn{{background:#fff3cd;padding:0.5em}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
{body}
</body></html>
"""


def figure_html(figures: dict[str, go.Figure]) -> str:
    """The figures as HTML divs, plotly.js embedded once (offline)."""
    return "".join(fig.to_html(full_html=False, include_plotlyjs="inline" if i == 0 else False, div_id=f"fig-{name}")
                   for i, (name, fig) in enumerate(figures.items()))


def numbers_table(df: pd.DataFrame) -> str:
    """All numbers as one collapsed table (a report reads its finding first), the ``note`` column's texts as
    numbered footnotes below it rather than a wrapped paragraph in every row."""
    notes = df["note"].fillna("").astype(str) if "note" in df else pd.Series("", index=df.index)
    numbered = {text: i for i, text in enumerate(dict.fromkeys(t for t in notes if t), 1)}
    shown = df.assign(note=[f"[{numbered[t]}]" if t else "" for t in notes]) if numbered else df
    table = shown.to_html(index=False, float_format=lambda v: f"{v:.4f}", na_rep="", classes="results")
    footnotes = "".join(f"<li value='{i}'>{html.escape(text)}</li>" for text, i in numbered.items())
    return (f"<details><summary>All {len(df):,} numbers (click to open)</summary>{table}"
            + (f"<ol class='footnotes'>{footnotes}</ol>" if footnotes else "") + "</details>")


def report(df: pd.DataFrame, path: str | Path, title: str = "BGT workbench report", notes: str = "",
           static: bool = True, notes_html: str = "", after_figures_html: str = "") -> Path:
    """Write a self-contained HTML report (plotly.js embedded: works offline) with the CSV and JSON of all
    numbers beside it (``<stem>.csv``, ``<stem>.json``) and, per figure, its data and (``static``, needs
    Chromium) PNG and PDF. Returns the HTML path. The page reads: ``notes`` (plain text, escaped) and
    ``notes_html`` (inserted as it is, for HTML the caller built and trusts: the finding first), the figures,
    ``after_figures_html``, then every number in a collapsed table with its notes as footnotes."""
    path = as_path(path, "the report's path")
    if path.is_dir() or path.suffix.lower() not in (".html", ".htm"):
        example = path / "report.html" if path.is_dir() else path.with_suffix(".html")
        raise WorkbenchError(f"the report goes to an .html file (its CSV, JSON and figures beside it), not "
                             f"{path}{' (a folder)' if path.is_dir() else ''}: e.g. {example}")
    path.parent.mkdir(parents=True, exist_ok=True)
    df = tidy(df)
    df = df.assign(unit=df["metric"].map(unit_of)) if "unit" not in df else df  # one column, several units
    figures = figures_for(df)
    if not figures:
        raise WorkbenchError("nothing to plot: the results have no 'accuracy' (probe) or 'pearson' (STS) rows")
    problems = export_figures(figures, path.parent, stem=path.stem, formats=("png", "pdf") if static else ())
    for problem in problems:
        log.warning("%s", problem)
    warnings = "".join(f'<p class="warn">{html.escape(p)}</p>' for p in problems)
    notes = "".join(f"<p>{html.escape(p)}</p>" for p in notes.split("\n\n") if p.strip()) + notes_html
    swept = df[df["layer"].notna() & (df["metric"] == "accuracy")] if "layer" in df else df.iloc[:0]
    if len(swept):  # a layer sweep: where each property peaks, is lost and (if gained) its expected layer
        after_figures_html = (f"<h2>Where each property lives</h2>{html_table(layer_profile(swept).round(3))}"
                              + after_figures_html)
    body = (f"{notes}{warnings}{figure_html({k: f for k, (f, _) in figures.items()})}{after_figures_html}"
            f"<h2>Numbers</h2><p>Also in <code>{html.escape(path.stem)}.csv</code> and "
            f"<code>{html.escape(path.stem)}.json</code> beside this file; each figure's own numbers in "
            f"<code>{html.escape(path.stem)}-FIGURE.csv</code>.</p>{numbers_table(df)}")
    atomic_write(path, page(title, body))
    atomic_write(path.with_suffix(".csv"), spreadsheet_safe(df).to_csv(index=False))
    atomic_write(path.with_suffix(".json"), json.dumps(json.loads(df.to_json(orient="records")), indent=1))
    return path


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each text cell that a spreadsheet would run as a formula (starting with ``= + - @`` or a tab)
    prefixed by an apostrophe; numbers stay numbers."""
    def safe(cell):
        return f"'{cell}" if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell
    return df.assign(**{c: df[c].map(safe) for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])})
