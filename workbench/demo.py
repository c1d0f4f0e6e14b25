"""The main job: probe and evaluate encoders end to end on real data and write an HTML report.

Today it compares the two encoders that need no training (a randomly initialised Transformer encoder and the
average of a fixed random sentencepiece embedding table); trained models join the list as they are shipped.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from .cache import cached
from .data.sts import STS_DATASETS
from .encoders import UNTRAINED, untrained_encoder
from .evaluation.sts import evaluate_sts
from .figures import report
from .probing.build import build_task
from .probing.probe import probe

log = logging.getLogger(__name__)

DEMO_TASKS = ("length", "punct_num", "bigram_shift", "tense")  # surface, word order, and a parse-based task
DEMO_SIZES = {"train": 6000, "valid": 1000, "test": 1000}


def run_demo(out_dir: str | Path = "reports/demo", pair: str = "en-fr", sizes: dict[str, int] = DEMO_SIZES,
             years: tuple[int, ...] = tuple(STS_DATASETS), tasks: tuple[str, ...] = DEMO_TASKS,
             encoders: tuple[str, ...] = UNTRAINED, show_progress: bool = True) -> Path:
    """Run the demo pipeline and return the path of the HTML report. Results are saved after every step
    (``results.csv`` in ``out_dir``), so an interrupted run keeps what it finished."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    steps = tqdm(total=1 + len(tasks) + len(encoders) * (len(tasks) + 1) + 1, desc="demo",
                 disable=not show_progress, unit="step")
    steps.set_postfix_str(f"tokenizer + encoders ({pair})")
    models = [cached(untrained_encoder(name, pair)) for name in encoders]
    steps.update()
    datasets = {}
    for task in tasks:
        steps.set_postfix_str(f"build {task}")
        datasets[task] = build_task(task, sizes=sizes)
        steps.update()
    frames: list[pd.DataFrame] = []

    def save() -> pd.DataFrame:
        df = pd.concat(frames, ignore_index=True)
        df.to_csv(out_dir / "results.csv", index=False)
        return df

    for encoder in models:
        for task, dataset in datasets.items():
            steps.set_postfix_str(f"probe {task} / {encoder.name}")
            result = probe(encoder, dataset)
            log.info("%s", result)
            frames.append(result.to_frame())
            save()
            steps.update()
        steps.set_postfix_str(f"STS / {encoder.name}")
        frames.append(evaluate_sts(encoder, years, show_progress=show_progress))
        save()
        steps.update()
    steps.set_postfix_str("report")
    df = save()
    sizes_text = ", ".join(f"{t}: {sum(d.manifest['sizes'].values())} sentences" for t, d in datasets.items())
    notes = (f"<p>Untrained encoders on the {pair} sentencepiece model. Probing tasks built from held-out "
             f"English sentences of the shared parallel data ({sizes_text}); STS {min(years)}–{max(years)} from "
             f"<code>eval/sts</code> (STS13 without SMT). Wall time {time.perf_counter() - start:.0f} s.</p>")
    path = report(df, out_dir / "report.html", title="BGT workbench demo", notes=notes)
    steps.update()
    steps.close()
    return path
