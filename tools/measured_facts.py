"""The docs' facts that come from recorded measurements (:mod:`tools.measurements`: minutes-long runs kept in
``docs/measurements.json``): each generator refuses a record measured on other datasets or models than the ones
shipped now, naming what to measure again."""
from __future__ import annotations

from collections import Counter

import pandas as pd

from workbench.checks import WorkbenchError
from workbench.models.pins import card, shipped
from workbench.probing.build import build_task, shipped_manifest
from workbench.probing.control import FEW_TYPES
from workbench.probing.layers import layer_profile
from workbench.probing.tasks import get_task
from workbench.reports.paper import FIGURE3_MODELS, GPU_FIGURE3_MODELS
from workbench.zoo.cards import CARD_SIZES
from tools.measurements import MEASUREMENTS, measured


BASELINE_TITLES = {"majority": "majority", "length": "Length", "nb-uni-tfidf": "NB-uni-tfidf",
                   "nb-bi-tfidf": "NB-bi-tfidf"}  # Conneau et al.'s names, as the table's columns


def _check_datasets(digests: dict[str, str], said: str, measure: str, card_sizes: bool = False) -> None:
    """Refuse a record (``said``: what it holds and how it was made, e.g. "the text baselines … were measured")
    whose datasets (``digests``: task → sha256, as ``probes build`` builds them or at the model cards' sizes) are
    not today's."""
    sizes = CARD_SIZES if card_sizes else None
    changed = [task for task, digest in digests.items() if built(task, sizes)["sha256"] != digest]
    if changed:
        raise WorkbenchError(f"{said} on other datasets of {', '.join(changed)} than these builds: run "
                             f"`bash scripts/docs --measure {measure}` again")


def text_baselines() -> str:
    """Conneau et al.'s text-only baselines on our tasks, beside their published numbers, from the recorded run
    (minutes; :func:`~tools.measurements.measure_text_baselines`) — refused once a task's dataset is
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


def text_baseline(task: str, baseline: str, field: str = "accuracy") -> str:
    """One cell of the recorded text baselines, for prose (``<!-- fact: text-baseline TASK BASELINE [FIELD] -->``):
    ``accuracy`` and ``published`` (%), ``gap`` (ours − published, signed) or ``ci`` (accuracy % with its Wilson
    95% interval over the test sentences)."""
    text_baselines()  # refused, as the table is, once a dataset is not the one measured
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


def figure3(scale: str) -> str:
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


def minilm_layers() -> str:
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


def control_types(task: str) -> str:
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
                             f"measure them again with `bash scripts/docs --measure {measure}`")


def pair_contrasts() -> str:
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


def built(task: str, sizes: dict[str, int] | None = None) -> dict:
    """The manifest of ``task`` as ``probes build`` builds it now (at ``sizes``, default the card's): the one
    ``builds.json`` ships where it is of today's card, pool and builders, else built now (and stored in the home
    like any build). The shipped file is a cache that spares the docs every build; a new card needs no entry."""
    manifest = shipped_manifest(task, sizes)
    return manifest if manifest is not None else build_task(task, sizes=sizes).manifest
