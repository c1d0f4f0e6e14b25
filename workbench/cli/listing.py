"""What ``probes list``, ``models list`` and ``data info`` print: read from the task cards, the models' cards and
the stored splits alone, without the torch and model stack their commands' other actions import (2 to 2.5 s on 2
cores before they can start)."""
from __future__ import annotations

import pandas as pd

from ..data.corpora import known_pairs, split_summary
from ..probing.tasks import get_task, task_names
from ..zoo.catalog import model_rows, summary_markdown


def probes_list(args) -> None:
    cards = [get_task(name) for name in task_names()]
    print(pd.DataFrame([{"task": c.name, "title": c.title, "language": c.language, "builder": c.builder,
                         "classes": len(c.labels) or "derived", "available": "no" if c.unavailable else "yes",
                         "analogue": c.analogue} for c in cards]).to_string(index=False, max_colwidth=60))
    for why in sorted({c.unavailable for c in cards if c.unavailable}):
        print(f"not available: {', '.join(c.name for c in cards if c.unavailable == why)} — {why}")


def models_list(args) -> None:
    if args.markdown:
        print(summary_markdown())
        return
    rows = model_rows()
    print(rows.to_string(index=False) if len(rows) else "no shipped models in trained/")


def data_info(args) -> None:
    rows = {pair: split_summary(pair) for pair in (args.pair or known_pairs())}
    print(pd.DataFrame(rows).T.to_string())
