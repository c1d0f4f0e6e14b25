"""What ``probes list`` prints: read from the task cards alone, so that it answers in about half a second instead of
waiting for the torch and model stack the command's other actions import (3 s on 2 cores)."""
from __future__ import annotations

import pandas as pd

from ..probing.tasks import get_task, task_names


def probes_list(args) -> None:
    cards = [get_task(name) for name in task_names()]
    print(pd.DataFrame([{"task": c.name, "title": c.title, "language": c.language, "builder": c.builder,
                         "classes": len(c.labels) or "derived", "available": "no" if c.unavailable else "yes",
                         "analogue": c.analogue} for c in cards]).to_string(index=False, max_colwidth=60))
    for why in sorted({c.unavailable for c in cards if c.unavailable}):
        print(f"not available: {', '.join(c.name for c in cards if c.unavailable == why)} — {why}")
