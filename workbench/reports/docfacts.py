"""The numbers the README and the docs state, each written by a generator from where it is measured.

A number in a Markdown file sits between two markers, ``<!-- fact: NAME [WORD …] -->`` and ``<!-- /fact -->``
(inline, or around a whole table); :data:`FACTS` maps NAME to the function that writes it (given the WORDs) from
the model cards, the corpora, the probing datasets' shipped manifests (``workbench/probes/builds.json``) or a recorded
measurement
(:mod:`workbench.reports.measurements`: what was measured or timed, when, on what). ``workbench docs`` checks
that every marked number is what its generator gives now (the test suite runs it, so a drifted number fails CI);
``workbench docs --write`` rewrites them.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..checks import WorkbenchError
from ..data.corpora import LANGUAGES, PAIRS, probe_pool, split_summary
from ..data.sts import load_sts_hard
from ..models.folder import shipped
from ..models.runlog import learning_curve
from ..paths import REPO_ROOT, atomic_write, trained_dir
from ..probing.build import SHIPPED_BUILDS, shipped_manifest
from ..probing.control import FEW_TYPES
from ..probing.layers import layer_profile
from ..probing.parse import SHIPPED as PARSES
from ..probing.tasks import get_task, task_names
from ..zoo.bundle import PART_BYTES
from ..zoo.cards import CARD_SIZES, card, summary_markdown
from .measurements import MEASUREMENTS, measured
from .paper import FIGURE3_MODELS, GPU_FIGURE3_MODELS, our_table3, table3_cells

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


def _built(task: str, sizes: dict[str, int] | None = None) -> dict:
    """The shipped manifest of ``task`` as ``probes build`` builds it now (at ``sizes``, default the card's),
    refused where the card, the pool or the builders changed since it was recorded."""
    manifest = shipped_manifest(task, sizes)
    if manifest is None:
        raise WorkbenchError(f"{SHIPPED_BUILDS.relative_to(REPO_ROOT)} holds no build of {task} from today's card, "
                             "probe pool and builders: record them again with "
                             "`workbench probes build --ship-manifests`")
    return manifest


def _probe_sizes() -> str:
    """The probing datasets as ``probes build`` builds them, from their shipped manifests."""
    lines = ["| task | classes | train / valid / test | what the label is |", "|---|---:|---|---|"]
    for card in map(get_task, task_names()):
        manifest = _built(card.name)
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
    return str(len(task_names()))


def _time(name: str) -> Callable[[], str]:
    def stated() -> str:
        m = measured(name)
        seconds = m["seconds"]
        said = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min ({seconds:.0f} s)"
        return f"{said} ({m['date']}, {m['machine']}, {m['load']})"
    return stated


BASELINE_TITLES = {"majority": "majority", "length": "Length", "nb-uni-tfidf": "NB-uni-tfidf",
                   "nb-bi-tfidf": "NB-bi-tfidf"}  # Conneau et al.'s names, as the table's columns


def _check_datasets(digests: dict[str, str], said: str, measure: str, card_sizes: bool = False) -> None:
    """Refuse a record (``said``: what it holds and how it was made, e.g. "the text baselines … were measured")
    whose datasets (``digests``: task → sha256, as ``probes build`` builds them or at the model cards' sizes) are
    not today's."""
    sizes = CARD_SIZES if card_sizes else None
    changed = [task for task, digest in digests.items() if _built(task, sizes)["sha256"] != digest]
    if changed:
        raise WorkbenchError(f"{said} on other datasets of {', '.join(changed)} than these builds: run "
                             f"`workbench docs --measure {measure}` again")


def _text_baselines() -> str:
    """Conneau et al.'s text-only baselines on our tasks, beside their published numbers, from the recorded run
    (minutes; :func:`~workbench.reports.measurements.measure_text_baselines`) — refused once a task's dataset is
    not the one they were measured on."""
    record = measured("text_baselines")
    _check_datasets(record["datasets"], f"the text baselines in {MEASUREMENTS.name} were measured", "text-baselines")
    lines = ["| task | " + " | ".join(BASELINE_TITLES.values()) + " | test sentences |",
             "|---|" + "---:|" * (len(BASELINE_TITLES) + 1)]
    cells = {(row["task"], row["baseline"]): row for row in record["rows"]}
    for task in record["datasets"]:
        lines.append(f"| {get_task(task).title} | " + " | ".join(
            f"{cells[task, name]['accuracy']:.1f} ({cells[task, name]['published']:.1f})" for name in BASELINE_TITLES)
            + f" | {cells[task, 'majority']['n']:,} |")
    return "\n" + "\n".join(lines) + "\n"


def _text_baseline(task: str, baseline: str, field: str = "accuracy") -> str:
    """One cell of the recorded text baselines, for prose (``<!-- fact: text-baseline TASK BASELINE [FIELD] -->``):
    ``accuracy`` and ``published`` (%), ``gap`` (ours − published, signed) or ``ci`` (accuracy % with its Wilson
    95% interval over the test sentences)."""
    _text_baselines()  # refused, as the table is, once a dataset is not the one measured
    cells = {(row["task"], row["baseline"]): row for row in measured("text_baselines")["rows"]}
    fields = ("accuracy", "published", "gap", "ci")
    if (task, baseline) not in cells or field not in fields:
        tasks = ", ".join(dict.fromkeys(t for t, _ in cells))
        raise WorkbenchError(f"no text baseline {task} {baseline} {field}: tasks {tasks}; baselines "
                             f"{', '.join(BASELINE_TITLES)}; fields {', '.join(fields)}")
    row = cells[task, baseline]
    if field == "ci":
        low, high = _wilson(row["accuracy"] / 100, row["n"])
        return f"{row['accuracy']:.1f}% [{100 * low:.1f}–{100 * high:.1f}]"
    return f"{row['accuracy'] - row['published']:+.1f}" if field == "gap" else f"{row[field]:.1f}"


MEASURE_TITLES = {"STS12-16": "STS12–16", "hard+": "Hard+", "hard-": "Hard−"}


def _figure3(scale: str) -> str:
    """The paper's Figure 3 orderings at ``scale`` (``cpu``: the en–fr models trained on CPU; ``gpu``: the pair
    trained on one GPU, beside SP): BGT minus each model with its 95% CI and the paper's difference, from the
    recorded bootstrap — refused once a shipped model is not the one measured."""
    rows = [row for row in measured("figure3")["rows"] if row["scale"] == scale]
    if not rows:
        raise WorkbenchError(f"no Figure 3 orderings at scale {scale!r}; recorded: cpu, gpu")
    models = FIGURE3_MODELS if scale == "cpu" else GPU_FIGURE3_MODELS
    for row in rows:
        names = (models["bgt"], models[row["model"]])
        _check_measured_on(row["fingerprints"], [(name, "semantic") for name in names],
                           f"the Figure 3 orderings of {' and '.join(names)}", "figure3")
    cells = {(row["model"], row["measure"]): row for row in rows}
    measures = list(dict.fromkeys(row["measure"] for row in rows))
    titles = [MEASURE_TITLES.get(measure, measure) for measure in measures]
    lines = ["| BGT minus | " + " | ".join(titles) + f" | {titles[0]} verdict |",
             "|---|" + "---|" * (len(measures) + 1)]
    for model in dict.fromkeys(row["model"] for row in rows):
        said = [f"{c['ours']:+.1f} [{c['ci_low']:.1f}, {c['ci_high']:.1f}] ({c['paper']:+.1f})"
                for c in (cells[model, m] for m in measures)]
        lines.append(f"| `{models[model]}` | " + " | ".join(said) + f" | {cells[model, measures[0]]['verdict']} |")
    verdicts = Counter(row["verdict"] for row in rows)
    lines.append("")
    lines.append(f"{len(rows)} orderings: {verdicts['reproduced']} reproduced, {verdicts['within noise']} within "
                 f"noise, {verdicts['reversed']} reversed.")
    return "\n" + "\n".join(lines) + "\n"



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


def _minilm_layers() -> str:
    """all-MiniLM-L6-v2's accuracy at every layer on the recorded tasks, and :func:`layer_profile`'s summary of each
    — refused once a task's dataset at the cards' sizes is not the one measured."""
    entry = measured("minilm_layers")
    _check_datasets(entry["datasets"], f"the MiniLM layer sweep in {MEASUREMENTS.name} was measured", "minilm-layers",
                    card_sizes=True)
    frame = pd.DataFrame(entry["rows"]).assign(metric="accuracy")
    layers = sorted(set(frame["layer"]))
    lines = ["| task | " + " | ".join(f"layer {layer}" for layer in layers)
             + " | peak layer | lost at | trend | expected layer |",
             "|---|" + "---:|" * (len(layers) + 2) + "---|---:|"]
    accuracy = frame.pivot(index="task", columns="layer", values="value")
    for row in layer_profile(frame).itertuples():
        said = [f"{100 * accuracy.loc[row.task, layer]:.1f}" for layer in layers]
        lost = "kept" if pd.isna(row.lost_layer) else str(int(row.lost_layer))
        expected = "—" if pd.isna(row.expected_layer) else f"{row.expected_layer:.1f}"
        lines.append(f"| {get_task(row.task).title} | " + " | ".join(said)
                     + f" | {row.peak_layer} | {lost} | {row.trend} | {expected} |")
    return "\n" + "\n".join(lines) + "\n"


def _control_types(task: str) -> str:
    """The effective word types of ``task``'s control words (``rest``: the fewest of the tasks at or above
    :data:`~workbench.probing.control.FEW_TYPES`), from the recorded count — refused once a dataset at the cards'
    sizes is not the one counted."""
    entry = measured("control_types")
    _check_datasets(entry["datasets"], f"the control types in {MEASUREMENTS.name} were counted", "control-types",
                    card_sizes=True)
    types = {row["task"]: row["effective_types"] for row in entry["rows"]}
    if task == "rest":
        return f"{min(v for v in types.values() if v >= FEW_TYPES):.0f}"
    if task not in types:
        raise WorkbenchError(f"no control types of {task!r}; tasks: {', '.join(types)}, or rest")
    return f"{types[task]:.0f}"


def _wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``p`` of ``n`` (inside 0…1 near the ends, unlike p ± z·se)."""
    centre, spread = p + z * z / (2 * n), z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)


def _check_measured_on(recorded: str, views: list[tuple[str, str]], what: str, measure: str) -> None:
    """Refuse a recorded comparison whose encoders (``recorded``: their fingerprints, space-separated) are not the
    shipped models' ``views`` (``(model, view)`` pairs) as their cards state them now."""
    shipped_now = set(shipped())
    now = " ".join(card(name)["views"][view]["fingerprint"] if name in shipped_now else "-" for name, view in views)
    if recorded != now:
        raise WorkbenchError(f"{what} in {MEASUREMENTS.name} were measured on other models than the shipped ones: "
                             f"measure them again with `workbench docs --measure {measure}`")


def _pair_contrasts() -> str:
    """Each pair's BGT against its English view and against BILINGUALTRANS, from the recorded bootstrap, beside the
    cards' STS12–16 and updates — refused once a shipped model is not the one measured."""
    rows = {(row["pair"], row["contrast"]): row for row in measured("pair_contrasts")["rows"]}
    against = {"semantic − English": lambda pair: (f"bgt-{pair}", "en"),
               "BGT − BILINGUALTRANS": lambda pair: (f"bilingual_trans-{pair}", "semantic")}
    lines = ["| pair | BGT updates | semantic | English view | " + " | ".join(
        f"{contrast} [95% CI] (paper)" for contrast in against) + " |", "|---|---:|---:|---:|---|---|"]
    for pair in dict.fromkeys(pair for pair, _ in rows):
        for contrast, other in against.items():
            _check_measured_on(rows[pair, contrast]["fingerprints"], [(f"bgt-{pair}", "semantic"), other(pair)],
                               f"the {pair} contrasts", "pair-contrasts")
        cells = [f"{r['ours']:+.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}] ({r['paper']:+.1f})"
                 for r in (rows[pair, contrast] for contrast in against)]
        bgt = card(f"bgt-{pair}")
        views = bgt["views"]
        lines.append(f"| {pair} | {bgt['training']['updates']:,} | {views['semantic']['sts']['STS12-16']:.1f} | "
                     f"{views['en']['sts']['STS12-16']:.1f} | " + " | ".join(cells) + " |")
    return "\n" + "\n".join(lines) + "\n"


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
    "time-notebook-01": _time("notebook_01_run_all"),
    "time-notebook-02": _time("notebook_02_run_all"),
    "text-baselines": _text_baselines,
    "text-baseline": _text_baseline,
    "pair-contrasts": _pair_contrasts,
    "minilm-layers": _minilm_layers,
    "control-types": _control_types,
    "figure3": _figure3,
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
        text = path.read_text(encoding="utf-8")
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
