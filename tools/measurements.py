"""The measurements the docs state that take minutes to make, each recorded once in ``docs/measurements.json``
with what ran, when and on what (``bash scripts/docs --measure NAME``): the docs generator
(:mod:`tools.docfacts`) writes tables and numbers from a record, and refuses one whose datasets or
models are no longer the ones measured. Times (setup, demo, suite) are recorded by hand, with the machine and load.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date

from workbench.checks import WorkbenchError
from workbench.models.pins import card, shipped
from workbench.models.huggingface import minilm
from workbench.paths import REPO_ROOT, atomic_write, read_json
from workbench.probing.baselines import text_baselines
from workbench.probing.build import build_task
from workbench.probing.control import effective_types, training_word_counts
from workbench.probing.layers import probe_layers
from workbench.probing.tasks import task_names
from workbench.zoo.cards import CARD_SIZES
from workbench.reports.paper import FIGURE3_MODELS, GPU_FIGURE3_MODELS, figure3_differences, figure3_orderings, pair_contrasts

MEASUREMENTS = REPO_ROOT / "docs" / "measurements.json"
MINILM_LAYER_TASKS = ("word_content", "bigram_shift")  # one property lost with depth, one gained


def _records() -> dict:
    """:data:`MEASUREMENTS` checked as a whole: a JSON object of named records, each saying what and when."""
    records = read_json(MEASUREMENTS)
    bad = [str(k) for k, v in records.items() if not (isinstance(v, dict) and isinstance(v.get("what"), str)
                                                       and isinstance(v.get("date"), str))] \
        if isinstance(records, dict) else ["(the file is not a JSON object)"]
    if bad:
        raise WorkbenchError(f"{MEASUREMENTS} is damaged: {', '.join(bad[:5])} not a record with 'what' and 'date'; "
                             "restore it from git")
    return records


def measured(name: str) -> dict:
    """One recorded measurement of :data:`MEASUREMENTS`: a time (``seconds``, ``date``, ``machine``, ``load``,
    ``what``) or a measured table (``date``, ``what``, ``rows`` and what they were measured on)."""
    records = _records()
    if name not in records:
        raise WorkbenchError(f"no measurement {name!r} in {MEASUREMENTS}; recorded: {', '.join(sorted(records))}")
    return records[name]


def record(name: str, entry: dict) -> dict:
    """Store ``entry`` as measurement ``name`` (replacing the one before) and return it."""
    records = _records()
    atomic_write(MEASUREMENTS, json.dumps({**records, name: entry}, indent=1, ensure_ascii=False) + "\n")
    return entry


def measure_text_baselines(show_progress: bool = True) -> dict:
    """Run the text-only baselines on every task as ``probes build`` builds it and record the result (with each
    dataset's sha256) in :data:`MEASUREMENTS` for the docs' text-baselines table; returns the record."""
    frame = text_baselines(show_progress=show_progress)
    tasks = list(dict.fromkeys(frame["task"]))
    return record("text_baselines", {
        "date": date.today().isoformat(),
        "what": "workbench.probing.baselines.text_baselines() on the datasets as `probes build` builds them",
        "datasets": {task: build_task(task).manifest["sha256"] for task in tasks},
        "rows": [{"task": r.task, "baseline": r.baseline, "accuracy": round(r.accuracy, 2),
                  "published": r.published, "n": int(r.n)} for r in frame.itertuples()]})


def measure_pair_contrasts() -> dict:
    """Measure :func:`~workbench.reports.paper.pair_contrasts` (1,000 resamples; minutes: it encodes STS12–16 with
    three encoders per pair, from the cache where they were encoded before) and record it for
    the docs' pair-contrasts table, with the encoders' fingerprints; returns the record."""
    frame = pair_contrasts(n_boot=1000, show_progress=True)
    return record("pair_contrasts", {
        "date": date.today().isoformat(),
        "what": "workbench.reports.paper.pair_contrasts(n_boot=1000): paired bootstrap over STS12-16's sentence pairs",
        "rows": frame.to_dict(orient="records")})


def measure_figure3() -> dict:
    """The paper's Figure 3 orderings (BGT minus each model on STS12–16, Hard+ and Hard−, paired bootstrap with
    1,000 resamples) for the CPU-trained en–fr models and for the GPU-trained pair beside SP, with each pair of
    encoders' fingerprints; minutes (the embeddings come from the cache where they were made before)."""
    cards = {name: card(name) for name in shipped()}
    rows = []
    for scale, models in (("cpu", FIGURE3_MODELS), ("gpu", GPU_FIGURE3_MODELS)):
        differences = figure3_differences(cards, 1000, models=models, show_progress=True)
        prints = dict(zip(differences["model"], differences["fingerprints"]))
        rows += [{"scale": scale, **row, "fingerprints": prints[row["model"]]}
                 for row in figure3_orderings(differences).to_dict(orient="records")]
    return record("figure3", {"date": date.today().isoformat(),
                              "what": "figure3_orderings(figure3_differences(cards, 1000, models=...)) for the CPU "
                                      "and the GPU en-fr models", "rows": rows})


def measure_minilm_layers() -> dict:
    """Probe every layer of all-MiniLM-L6-v2 (the ``minilm`` extra) on :data:`MINILM_LAYER_TASKS` at the cards'
    sizes (logistic probe, no control task; minutes) and record the accuracies with each dataset's sha256: the
    layer-profile example of docs/probing.md."""
    frame = probe_layers(minilm(), MINILM_LAYER_TASKS, sizes=CARD_SIZES, control=False)
    rows = frame[frame["metric"] == "accuracy"]
    return record("minilm_layers", {
        "date": date.today().isoformat(),
        "what": f"probe_layers(minilm(), {list(MINILM_LAYER_TASKS)}, sizes=CARD_SIZES, control=False)",
        "datasets": {task: build_task(task, sizes=CARD_SIZES).manifest["sha256"] for task in MINILM_LAYER_TASKS},
        "rows": [{"encoder": r.encoder, "task": r.task, "layer": int(r.layer), "value": round(float(r.value), 4),
                  "ci_low": round(float(r.ci_low), 4), "ci_high": round(float(r.ci_high), 4)}
                 for r in rows.itertuples()]})


def measure_control_types() -> dict:
    """The effective word types (:func:`~workbench.probing.control.effective_types`) of each task's control words
    over its training split at the cards' sizes, with each dataset's sha256: docs/probing.md's account of which
    controls are uninformative (seconds once the datasets are built)."""
    datasets, rows = {}, []
    for task in task_names(own=False):
        built = build_task(task, sizes=CARD_SIZES)
        counts, control = training_word_counts(built.data)
        datasets[task] = built.manifest["sha256"]
        rows.append({"task": task, "control": control, "effective_types": round(effective_types(counts), 1)})
    return record("control_types", {
        "date": date.today().isoformat(),
        "what": "effective_types(training_word_counts(build_task(task, sizes=CARD_SIZES).data)[0]) of every task",
        "datasets": datasets, "rows": rows})


MEASURES: dict[str, Callable[..., dict]] = {"text-baselines": measure_text_baselines,
                                            "pair-contrasts": measure_pair_contrasts,
                                            "minilm-layers": measure_minilm_layers,
                                            "figure3": measure_figure3,
                                            "control-types": measure_control_types}
