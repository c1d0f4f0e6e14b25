"""Results in MTEB's results layout (one JSON file per task, scores as fractions, ``main_score`` per subset), so
that the workbench's numbers sit beside the runs MTEB publishes (embeddings-benchmark/results). Only the tasks
whose data and scoring match MTEB's are written: STS12–16 (Spearman over each year's pairs pooled), STSBenchmark
(test), STS17 (the tracks MTEB has) and Tatoeba (xx→en accuracy and F1)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..checks import WorkbenchError
from ..paths import atomic_write, check_results_folder

SCRIPTS = {"en": "eng-Latn", "fr": "fra-Latn", "es": "spa-Latn", "ar": "ara-Arab", "tr": "tur-Latn", "ja": "jpn-Jpan"}
STS17_SUBSETS = {"en-en": "en-en", "es-es": "es-es", "ar-ar": "ar-ar", "en-ar": "en-ar", "en-es": "es-en",
                 "en-tr": "en-tr"}  # ours -> MTEB's (the WMT half of en-es is no MTEB subset)
TATOEBA_SUBSETS = {"fr": "fra-eng", "es": "spa-eng", "ar": "ara-eng", "tr": "tur-eng", "ja": "jpn-eng"}


def _sts_score(rows: pd.DataFrame, subset: str, languages: list[str]) -> dict:
    value = rows.set_index("metric")["value"] / 100
    return {"cosine_pearson": float(value["pearson"]), "cosine_spearman": float(value["spearman"]),
            "main_score": float(value["spearman"]), "hf_subset": subset, "languages": languages}


def mteb_results(frame: pd.DataFrame) -> dict[str, dict]:
    """MTEB task name -> its results object, from :func:`workbench.evaluate` rows of one encoder."""
    tasks: dict[str, list[dict]] = {}
    for year in range(12, 17):
        rows = frame[(frame["task"] == f"STS{year}") & (frame["dataset"] == "all (pooled)")]
        if len(rows):
            tasks[f"STS{year}"] = [_sts_score(rows, "default", [SCRIPTS["en"]])]
    rows = frame[(frame["task"] == "STS-B") & (frame["dataset"] == "test")]
    if len(rows):
        tasks["STSBenchmark"] = [_sts_score(rows, "default", [SCRIPTS["en"]])]
    sts17 = frame[frame["task"] == "STS17"]
    subsets = [_sts_score(rows, STS17_SUBSETS[track], [SCRIPTS[lang] for lang in STS17_SUBSETS[track].split("-")])
               for track, rows in sts17.groupby("dataset", sort=False) if track in STS17_SUBSETS]
    if subsets:
        tasks["STS17"] = subsets
    tatoeba = []
    for dataset, rows in frame[frame["task"] == "Tatoeba"].groupby("dataset", sort=False):
        value = rows.set_index("metric")["value"] / 100
        if "f1 xx->en" in value:
            language = dataset.split("-")[0]
            tatoeba.append({"accuracy": float(value["accuracy xx->en"]), "f1": float(value["f1 xx->en"]),
                            "main_score": float(value["f1 xx->en"]), "hf_subset": TATOEBA_SUBSETS[language],
                            "languages": [SCRIPTS[language], SCRIPTS["en"]]})
    if tatoeba:
        tasks["Tatoeba"] = tatoeba
    return {name: {"task_name": name, "scores": {"test": scores}, "evaluation_time": None,
                   "mteb_version": None, "dataset_revision": None} for name, scores in tasks.items()}


def check_mteb_folder(folder: str | Path, force: bool = False) -> Path:
    """``folder`` if MTEB results may go there (:func:`~workbench.paths.check_results_folder`)."""
    return check_results_folder(folder, "--mteb", "*.json", force)


def write_mteb(frame: pd.DataFrame, folder: str | Path, force: bool = False) -> list[Path]:
    """Write :func:`mteb_results` into ``folder`` (``TASK.json`` each, and ``model_meta.json`` naming the
    encoder; :func:`check_mteb_folder` first); returns the task files. Nothing MTEB has: refused, naming what the
    frame holds."""
    folder = check_mteb_folder(folder, force)
    results = mteb_results(frame)
    if not results:
        raise WorkbenchError(f"none of these results is an MTEB task (the frame holds "
                             f"{', '.join(frame['task'].unique()) or 'nothing'}); MTEB's are STS12-16, STS-B, "
                             "STS17 and Tatoeba")
    folder.mkdir(parents=True, exist_ok=True)
    names = list(frame["encoder"].unique())
    atomic_write(folder / "model_meta.json", json.dumps({"name": names[0] if len(names) == 1 else names,
                                                         "written_by": "bgt-workbench"}, indent=2))
    paths = []
    for name, result in results.items():
        atomic_write(folder / f"{name}.json", json.dumps(result, indent=2))
        paths.append(folder / f"{name}.json")
    return paths
