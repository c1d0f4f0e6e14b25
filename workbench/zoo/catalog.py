"""The shipped models side by side, read from their cards alone (no model is loaded, nor torch): the rows
``workbench models list`` prints and ``trained/README.md``'s table."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..models.pins import card, shipped

SUMMARY_PROBES = {"subj_num": "SubjNum", "word_content": "WordContent", "length": "Length", "punct_num": "PunctNum"}


def summary_markdown(root: str | Path | None = None) -> str:
    """``trained/README.md``'s table of the shipped models, written from their cards (the test suite compares
    the README with it, so the stated numbers cannot drift from the weights' cards)."""
    lines = ["| name | MB | updates | pairs seen | update time | hardware | STS12–16 (semantic) | STS12–16 (en "
             "encoder) | Hard STS avg | " + " | ".join(SUMMARY_PROBES.values()) + " |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|" + "---:|" * len(SUMMARY_PROBES)]
    for name in shipped(root):
        info = card(name, root)
        sem, en, record = info["views"]["semantic"], info["views"].get("en", {}), info["training"]

        def number(value) -> str:  # blank where the model has nothing to read it (a pair without English)
            return "" if value is None else f"{value:.1f}"
        cells = [f"`{name}`", f"{info['megabytes']:.1f}", f"{record['updates']:,}", f"{record['pairs_seen']:,}",
                 f"{record['train_seconds']:,.0f} s", record["hardware"], number(sem.get("sts", {}).get("STS12-16")),
                 number(en.get("sts", {}).get("STS12-16")), number(sem.get("hard_sts", {}).get("avg")),
                 *(number(sem["probing"].get(task)) for task in SUMMARY_PROBES)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def model_rows(root: str | Path | None = None) -> pd.DataFrame:
    """One row per shipped model: its kind, pair, size, updates and the semantic view's headline numbers."""
    rows = []
    for name in shipped(root):
        info = card(name, root)
        sem = info["views"].get("semantic", {})
        tatoeba = [v for errors in sem.get("tatoeba", {}).values() for v in errors.values()]
        rows.append({"name": name, "model": info["model"], "pair": info["pair"], "MB": info["megabytes"],
                     "updates": info["training"]["updates"], "STS12-16": sem.get("sts", {}).get("STS12-16"),
                     "Hard STS": sem.get("hard_sts", {}).get("avg"),
                     "Tatoeba err %": sum(tatoeba) / len(tatoeba) if tatoeba else None, "decoders": info["decoders"]})
    return pd.DataFrame(rows)
