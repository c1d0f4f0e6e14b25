"""The numbers the README and the docs state, each written by a generator from where it is measured.

A number in a Markdown file sits between two markers, ``<!-- fact: NAME -->`` and ``<!-- /fact -->`` (inline, or
around a whole table); :data:`FACTS` maps NAME to the function that writes it from the model cards, the corpora,
the built probing datasets or a recorded measurement (:data:`MEASUREMENTS`: what was timed, when, on which machine
and under which load). ``workbench docs`` checks that every marked number is what its generator gives now (the
test suite runs it, so a drifted number fails CI); ``workbench docs --write`` rewrites them.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import date
from pathlib import Path

from ..checks import WorkbenchError
from ..data.corpora import PAIRS, probe_pool, split_summary
from ..models.folder import shipped
from ..paths import REPO_ROOT, atomic_write, trained_dir
from ..probing.baselines import text_baselines
from ..probing.build import build_task
from ..probing.tasks import get_task, task_names
from ..zoo.cards import card, summary_markdown
from .paper import pair_contrasts

DOCUMENTS = ("README.md", "docs", "trained/README.md", "notebooks/README.md")
MEASUREMENTS = REPO_ROOT / "docs" / "measurements.json"
_MARKED = re.compile(r"(<!-- fact: (?P<name>[\w-]+) -->)(?P<body>.*?)(<!-- /fact -->)", re.S)


def _trained_table() -> str:
    return f"\n{summary_markdown()}\n"


def _split_sizes() -> str:
    lines = ["| pair | train | valid | probe | test |", "|---|---:|---:|---:|---:|"]
    for pair in PAIRS:
        counts = split_summary(pair)
        lines.append(f"| {pair} | " + " | ".join(f"{counts[s]:,}" for s in ("train", "valid", "probe", "test")) + " |")
    return "\n" + "\n".join(lines) + "\n"


def _probe_sizes() -> str:
    """The probing datasets as ``probes build`` builds them (it builds what is missing: minutes on a fresh home)."""
    lines = ["| task | classes | train / valid / test | what the label is |", "|---|---:|---|---|"]
    for card in map(get_task, task_names()):
        manifest = build_task(card).manifest
        sizes = " / ".join(f"{manifest['sizes'][s]:,}" for s in ("tr", "va", "te"))
        lines.append(f"| {card.name} | {len(manifest['label_counts']['tr'])} | {sizes} | {card.description} |")
    return "\n" + "\n".join(lines) + "\n"


def _trained_size() -> str:
    return f"{sum(p.stat().st_size for p in trained_dir().rglob('*') if p.is_file()) / 2 ** 20:.0f} MiB"


def _probe_pool() -> str:
    return f"{len(probe_pool()):,}"


def _count_shipped() -> str:
    return str(len(shipped()))


def _count_tasks() -> str:
    return str(len(task_names()))


def measured(name: str) -> dict:
    """One recorded measurement of :data:`MEASUREMENTS`: ``seconds``, ``date``, ``machine``, ``load``, ``what``."""
    records = json.loads(MEASUREMENTS.read_text(encoding="utf-8"))
    if name not in records:
        raise WorkbenchError(f"no measurement {name!r} in {MEASUREMENTS}; recorded: {', '.join(sorted(records))}")
    return records[name]


def _time(name: str) -> Callable[[], str]:
    def stated() -> str:
        m = measured(name)
        seconds = m["seconds"]
        said = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min ({seconds:.0f} s)"
        return f"{said} ({m['date']}, {m['machine']}, {m['load']})"
    return stated


BASELINE_TITLES = {"majority": "majority", "length": "Length", "nb-uni-tfidf": "NB-uni-tfidf",
                   "nb-bi-tfidf": "NB-bi-tfidf"}  # Conneau et al.'s names, as the table's columns


def _text_baselines() -> str:
    """Conneau et al.'s text-only baselines on our tasks, beside their published numbers, from the recorded run
    (minutes; :func:`measure_text_baselines`) — refused once a task's dataset is not the one they were measured on."""
    record = measured("text_baselines")
    changed = [task for task, digest in record["datasets"].items() if build_task(task).manifest["sha256"] != digest]
    if changed:
        raise WorkbenchError(f"the text baselines in {MEASUREMENTS.name} were measured on other datasets of "
                             f"{', '.join(changed)} than these builds: measure them again with "
                             "`workbench docs --measure text-baselines`")
    lines = ["| task | " + " | ".join(BASELINE_TITLES.values()) + " | test sentences |",
             "|---|" + "---:|" * (len(BASELINE_TITLES) + 1)]
    cells = {(row["task"], row["baseline"]): row for row in record["rows"]}
    for task in record["datasets"]:
        lines.append(f"| {get_task(task).title} | " + " | ".join(
            f"{cells[task, name]['accuracy']:.1f} ({cells[task, name]['published']:.1f})" for name in BASELINE_TITLES)
            + f" | {cells[task, 'majority']['n']:,} |")
    return "\n" + "\n".join(lines) + "\n"


def _record(name: str, record: dict) -> dict:
    records = json.loads(MEASUREMENTS.read_text(encoding="utf-8"))
    atomic_write(MEASUREMENTS, json.dumps({**records, name: record}, indent=1, ensure_ascii=False) + "\n")
    return record


def measure_text_baselines(show_progress: bool = True) -> dict:
    """Run the text-only baselines on every task as ``probes build`` builds it and record the result (with each
    dataset's sha256) in :data:`MEASUREMENTS` for :func:`_text_baselines`; returns the record."""
    frame = text_baselines(show_progress=show_progress)
    tasks = list(dict.fromkeys(frame["task"]))
    return _record("text_baselines", {
        "date": date.today().isoformat(),
        "what": "workbench.probing.baselines.text_baselines() on the datasets as `probes build` builds them",
        "datasets": {task: build_task(task).manifest["sha256"] for task in tasks},
        "rows": [{"task": r.task, "baseline": r.baseline, "accuracy": round(r.accuracy, 2),
                  "published": r.published, "n": int(r.n)} for r in frame.itertuples()]})


def measure_pair_contrasts() -> dict:
    """Measure :func:`~workbench.reports.paper.pair_contrasts` (1,000 resamples; minutes: it encodes STS12–16 with
    three encoders per pair, from the cache where they were encoded before) and record it for
    :func:`_pair_contrasts`, with the encoders' fingerprints; returns the record."""
    frame = pair_contrasts(n_boot=1000)
    return _record("pair_contrasts", {
        "date": date.today().isoformat(),
        "what": "workbench.reports.paper.pair_contrasts(n_boot=1000): paired bootstrap over STS12-16's sentence pairs",
        "rows": frame.to_dict(orient="records")})


def _pair_contrasts() -> str:
    """Each pair's BGT against its English view and against BILINGUALTRANS, from the recorded bootstrap, beside the
    cards' STS12–16 and updates — refused once a shipped model is not the one measured."""
    record = measured("pair_contrasts")
    cards = {name: card(name) for name in shipped()}
    rows = {(row["pair"], row["contrast"]): row for row in record["rows"]}
    lines = ["| pair | BGT updates | semantic | English view | semantic − English [95% CI] (paper) "
             "| BGT − BILINGUALTRANS [95% CI] (paper) |", "|---|---:|---:|---:|---|---|"]
    for pair in dict.fromkeys(pair for pair, _ in rows):
        bgt, bilingual = cards.get(f"bgt-{pair}"), cards.get(f"bilingual_trans-{pair}")
        now = bgt and bilingual and {
            "semantic − English": f"{bgt['views']['semantic']['fingerprint']} {bgt['views']['en']['fingerprint']}",
            "BGT − BILINGUALTRANS": f"{bgt['views']['semantic']['fingerprint']} "
                                    f"{bilingual['views']['semantic']['fingerprint']}"}
        if not now or any(rows[pair, contrast]["fingerprints"] != now[contrast] for contrast in now):
            raise WorkbenchError(f"the {pair} contrasts in {MEASUREMENTS.name} were measured on other models than "
                                 "the shipped ones: measure them again with `workbench docs --measure pair-contrasts`")
        cells = [f"{r['ours']:+.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}] ({r['paper']:+.1f})"
                 for r in (rows[pair, contrast] for contrast in now)]
        views = bgt["views"]
        lines.append(f"| {pair} | {bgt['training']['updates']:,} | {views['semantic']['sts']['STS12-16']:.1f} | "
                     f"{views['en']['sts']['STS12-16']:.1f} | " + " | ".join(cells) + " |")
    return "\n" + "\n".join(lines) + "\n"


MEASURES: dict[str, Callable[..., dict]] = {"text-baselines": measure_text_baselines,
                                            "pair-contrasts": measure_pair_contrasts}


FACTS: dict[str, Callable[[], str]] = {
    "trained-table": _trained_table,
    "trained-size": _trained_size,
    "split-sizes": _split_sizes,
    "probe-sizes": _probe_sizes,
    "probe-pool": _probe_pool,
    "shipped-count": _count_shipped,
    "task-count": _count_tasks,
    "time-setup": _time("setup"),
    "time-demo": _time("demo_first_run"),
    "time-demo-again": _time("demo_second_run"),
    "time-suite": _time("suite"),
    "text-baselines": _text_baselines,
    "pair-contrasts": _pair_contrasts,
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
    drifted, cache = [], {}
    for path in paths if paths is not None else documents():
        text = path.read_text(encoding="utf-8")

        def fresh(match: re.Match) -> str:
            name = match["name"]
            if name not in FACTS:
                raise WorkbenchError(f"{path}: unknown fact {name!r}; known: {', '.join(FACTS)}")
            if name not in cache:
                cache[name] = FACTS[name]()
            if match["body"] != cache[name]:
                drifted.append(f"{path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}: {name}")
            return match.group(1) + cache[name] + match.group(4)

        new = _MARKED.sub(fresh, text)
        if write and new != text:
            atomic_write(path, new)
    return drifted
