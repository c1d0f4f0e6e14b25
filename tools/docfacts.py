"""The numbers the README and the docs state, each written by a generator from where it is measured.

A number in a Markdown file sits between two markers, ``<!-- fact: NAME [WORD …] -->`` and ``<!-- /fact -->``
(inline, or around a whole table); :data:`FACTS` maps NAME to the function that writes it (given the WORDs) from
the model cards, the corpora, the probing datasets' shipped manifests (``workbench/probes/builds.json``) or a recorded
measurement
(:mod:`tools.measurements`: what was measured or timed, when, on what). ``bash scripts/docs`` checks
that every marked number is what its generator gives now (the test suite runs it, so a drifted number fails CI);
``bash scripts/docs --write`` rewrites them.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from workbench.checks import WorkbenchError
from workbench.data.corpora import probe_pool, split_summary
from workbench.data.languages import LANGUAGES, PAIRS
from workbench.data.sts import load_sts_hard
from workbench.models.pins import card, shipped
from workbench.models.runlog import learning_curve
from workbench.paths import REPO_ROOT, atomic_write, trained_dir
from workbench.probing.parse import SHIPPED as PARSES
from workbench.probing.tasks import get_task, task_names
from workbench.reports.paper import our_table3, table3_cells
from workbench.zoo.catalog import summary_markdown
from tools.bundle import PART_BYTES
from tools.measured_facts import (built, control_types, figure3, minilm_layers, pair_contrasts, text_baseline,
                                  text_baselines)
from tools.measurements import measured

DOCUMENTS = ("README.md", "docs", "trained/README.md", "notebooks/README.md")
_MARKED = re.compile(r"(<!-- fact: (?P<name>[\w-]+)(?P<args>(?: [\w.>:@\[\]-]+)*) -->)(?P<body>.*?)(<!-- /fact -->)",
                     re.S)  # a WORD may be a card's key such as closer_to_source[all-MiniLM-L6-v2@6] or xx->en


def _trained_table() -> str:
    return f"\n{summary_markdown()}\n"


def _split_sizes() -> str:
    lines = ["| pair | train | valid | probe | test |", "|---|---:|---:|---:|---:|"]
    for pair in PAIRS:
        counts = split_summary(pair)
        lines.append(f"| {pair} | " + " | ".join(f"{counts[s]:,}" for s in ("train", "valid", "probe", "test")) + " |")
    return "\n" + "\n".join(lines) + "\n"


def _probe_sizes() -> str:
    """The probing datasets as ``probes build`` builds them, from their shipped manifests."""
    lines = ["| task | classes | train / valid / test | what the label is |", "|---|---:|---|---|"]
    for card in map(get_task, task_names(own=False)):
        manifest = built(card.name)
        sizes = " / ".join(f"{manifest['sizes'][s]:,}" for s in ("tr", "va", "te"))
        lines.append(f"| {card.name} | {len(manifest['label_counts']['tr'])} | {sizes} | {card.description} |")
    return "\n" + "\n".join(lines) + "\n"


def _trained_size() -> str:
    return f"{sum(p.stat().st_size for p in trained_dir().rglob('*') if p.is_file()) / 2 ** 20:.0f} MiB"


def _parses_size() -> str:
    return f"{sum(p.stat().st_size for p in PARSES.iterdir() if p.is_file()) / 2 ** 20:.1f} MiB"


def _part_size() -> str:
    return f"{PART_BYTES / 2 ** 20:.1f} MiB"


def _hard_sts_pairs(kind: str) -> str:
    """The pairs of one Hard STS file (``hard-pos``: Hard+, ``hard-neg``: Hard−)."""
    return f"{len(load_sts_hard(kind)):,}"


def _probe_pool() -> str:
    return f"{len(probe_pool()):,}"


def _count_shipped() -> str:
    return str(len(shipped()))


def _count_tasks() -> str:
    return str(len(task_names(own=False)))


def _time(name: str) -> Callable[[], str]:
    def stated() -> str:
        m = measured(name)
        seconds = m["seconds"]
        said = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min ({seconds:.0f} s)"
        return f"{said} ({m['date']}, {m['machine']}, {m['load']})"
    return stated


def _table3_winners() -> str:
    """How many of Table 3's cells have the paper's winning encoder in ours (from the cards), and per task."""
    cells = table3_cells(our_table3())
    per_task = cells.groupby("task", sort=False)["match"].agg(["sum", "size"]).sort_values("sum", ascending=False,
                                                                                         kind="stable")
    return (f"{int(cells['match'].sum())} of {len(cells)} cells ("
            + ", ".join(f"{TABLE3_TITLES.get(task, task)} {int(n)}/{size}" for task, (n, size) in per_task.iterrows())
            + ")")


TABLE3_TITLES = {"Word": "WordContent", "Len": "Length", "Depth": "Depth"}


def _tatoeba_table() -> str:
    """Tatoeba error (%, xx→en / en→xx) of every shipped model whose semantic view has it, from the cards; the
    models of one recipe trained per pair (``NAME-en-fr``, ``NAME-en-es``, …) share a row, ``NAME-en-XX``."""
    families: dict[str, list[dict]] = {}
    for name in shipped():
        info = card(name)
        if "tatoeba" in info["views"].get("semantic", {}):
            family = name.replace(info["pair"], "en-XX") if info["pair"] in PAIRS else name
            families.setdefault(family, []).append(info)
    lines = ["| name | " + " | ".join(LANGUAGES) + " |", "|---|" + "---:|" * len(LANGUAGES)]
    for family, members in sorted(families.items()):
        if len(members) == 1:
            family = members[0]["name"]
        errors = {lang: scores for info in members for lang, scores in info["views"]["semantic"]["tatoeba"].items()}
        cells = [f"{errors[lang]['xx->en']:.1f} / {errors[lang]['en->xx']:.1f}" if lang in errors else ""
                 for lang in LANGUAGES]
        said = " (each pair's own model)" if len(members) > 1 else ""
        lines.append(f"| `{family}`{said} | " + " | ".join(cells) + " |")
    return "\n" + "\n".join(lines) + "\n"


def _card_number(name: str, path: str) -> str:
    """One number of a shipped model's card, for prose (``<!-- fact: card NAME KEY.KEY… -->``), e.g.
    ``card bgt-en-fr views.semantic.sts.STS12-16`` → ``63.1`` (a list's item by its index: a measure with its CI is
    ``[value, low, high]``); a whole number is written with thousands commas."""
    value = card(name)
    for key in path.split("."):
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):  # [value, CI low, CI high]
            value = value[int(key)]
            continue
        if not isinstance(value, dict) or key not in value:
            valid = (", ".join(value) if isinstance(value, dict) else f"indices 0-{len(value) - 1}"
                     if isinstance(value, list) else "nothing (a value)")
            raise WorkbenchError(f"card {name}: no {key!r} in {path!r}; there: {valid}")
        value = value[key]
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}" if isinstance(value, float) else str(value)


def _stsb_dev(name: str, view: str) -> pd.Series:
    """STS-B dev by update (Pearson × 100) of a shipped model's run, for ``view``."""
    curve = learning_curve(name)
    dev = curve[(curve["metric"] == "stsb_dev")]
    if view not in set(dev["view"]):
        raise WorkbenchError(f"{name}'s curve has no STS-B dev of view {view!r}; views: "
                             f"{', '.join(sorted(set(dev['view'])))}")
    return dev[dev["view"] == view].set_index("update")["value"]


def _curve(name: str, update: str, view: str = "semantic") -> str:
    """A shipped model's STS-B dev at one update of its run (``<!-- fact: curve NAME UPDATE [VIEW] -->``), from the
    curve it ships (``curve.csv``)."""
    dev = _stsb_dev(name, view)
    if int(update) not in dev.index:
        raise WorkbenchError(f"{name}'s run has no STS-B dev at update {update}; it has updates "
                             f"{', '.join(map(str, dev.index[:3]))}, …, {dev.index[-1]}")
    return f"{dev[int(update)]:.1f}"


def _curve_range(name: str, first: str, last: str, view: str = "semantic") -> str:
    """The lowest and the highest STS-B dev of a shipped model's run over updates FIRST…LAST, as ``low–high``
    (``<!-- fact: curve-range NAME FIRST LAST [VIEW] -->``)."""
    dev = _stsb_dev(name, view).loc[int(first):int(last)]
    if dev.empty:
        raise WorkbenchError(f"{name}'s run has no STS-B dev between updates {first} and {last}")
    return f"{dev.min():.1f}–{dev.max():.1f}"


FACTS: dict[str, Callable[..., str]] = {  # NAME -> its generator, given the marker's words after NAME
    "trained-table": _trained_table,
    "trained-size": _trained_size,
    "split-sizes": _split_sizes,
    "probe-sizes": _probe_sizes,
    "probe-pool": _probe_pool,
    "parses-size": _parses_size,
    "part-size": _part_size,
    "hard-sts-pairs": _hard_sts_pairs,
    "shipped-count": _count_shipped,
    "task-count": _count_tasks,
    "time-setup": _time("setup"),
    "time-demo": _time("demo_first_run"),
    "time-demo-again": _time("demo_second_run"),
    "time-suite": _time("suite"),
    "time-probes-build": _time("probes_build_first_run"),
    "time-notebook-00": _time("notebook_00_run_all"),
    "time-notebook-01": _time("notebook_01_run_all"),
    "time-notebook-02": _time("notebook_02_run_all"),
    "time-notebook-03": _time("notebook_03_run_all"),
    "time-notebook-04": _time("notebook_04_run_all"),
    "text-baselines": text_baselines,
    "text-baseline": text_baseline,
    "pair-contrasts": pair_contrasts,
    "minilm-layers": minilm_layers,
    "control-types": control_types,
    "figure3": figure3,
    "card": _card_number,
    "tatoeba-table": _tatoeba_table,
    "curve": _curve,
    "curve-range": _curve_range,
    "table3-winners": _table3_winners,
}


def documents(root: Path = REPO_ROOT) -> list[Path]:
    """The Markdown files whose facts are kept: :data:`DOCUMENTS` (a folder: its ``*.md``)."""
    paths = []
    for entry in DOCUMENTS:
        path = root / entry
        paths += sorted(path.glob("*.md")) if path.is_dir() else [path] if path.is_file() else []
    return paths


def refresh(paths: list[Path] | None = None, write: bool = False) -> list[str]:
    """The marked facts of ``paths`` (default :func:`documents`) that differ from what their generators give now,
    as ``file: NAME``; with ``write``, rewrite them. An unknown NAME is an error (it would never be checked)."""
    drifted, cache, rewritten = [], {}, {}
    for path in paths if paths is not None else documents():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise WorkbenchError(f"{path} is not UTF-8 text (byte {err.start}: {err.reason}); no file was "
                                 "changed") from None
        check_markers(path, text)

        def fresh(match: re.Match) -> str:
            name, args = match["name"], tuple(match["args"].split())
            if name not in FACTS:
                raise WorkbenchError(f"{path}: unknown fact {name!r}; known: {', '.join(FACTS)}")
            if (name, args) not in cache:
                cache[name, args] = FACTS[name](*args)
            if match["body"] != cache[name, args]:
                drifted.append(f"{path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}: "
                               + " ".join((name, *args)))
            return match.group(1) + cache[name, args] + match.group(5)

        new = _MARKED.sub(fresh, text)
        if new != text:
            rewritten[path] = new
    if write:  # only once every file has been read and checked: a bad marker anywhere changes nothing
        for path, new in rewritten.items():
            atomic_write(path, new)
    return drifted


_ANY_MARKER = re.compile(r"<!--\s*(/?)\s*fact\b[^\n]*?(?:-->|$)", re.M)


def check_markers(path: Path, text: str) -> None:
    """Refuse a file whose fact markers do not pair up one after another (an opener, its closer, the next opener,
    ...) or do not read as ``<!-- fact: NAME [WORD …] -->``: rewriting it would swallow the text between them."""
    open_line = None
    for marker in _ANY_MARKER.finditer(text):
        line = text.count("\n", 0, marker.start()) + 1
        closing = marker[1] == "/"
        if not closing and not re.fullmatch(r"<!-- fact: [\w-]+(?: [\w.>:@\[\]-]+)* -->", marker[0]):
            raise WorkbenchError(f"{path}, line {line}: malformed fact marker {marker[0][:60]!r}; write "
                                 "<!-- fact: NAME [WORD ...] --> ... <!-- /fact -->")
        if closing and marker[0] != "<!-- /fact -->":
            raise WorkbenchError(f"{path}, line {line}: malformed closing marker {marker[0][:60]!r}; write "
                                 "<!-- /fact -->")
        if closing == (open_line is None):
            raise WorkbenchError(f"{path}, line {line}: " + (
                "a closing <!-- /fact --> with no fact open" if closing else
                f"a fact opens while the one opened at line {open_line} is not closed (nested or unclosed)"))
        open_line = None if closing else line
    if open_line is not None:
        raise WorkbenchError(f"{path}, line {open_line}: a fact marker is never closed with <!-- /fact -->")
