"""``bash scripts/docs``: check (or ``--write``) the numbers the README and docs state against their generators
(:mod:`tools.docfacts`), after running a recorded measurement again with ``--measure NAME``
(:mod:`tools.measurements`); ``--figures`` draws the docs' figures again from the shipped models' cards."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from workbench.checks import WorkbenchError
from workbench.paths import REPO_ROOT
from workbench.reports.figures import halves_figure
from workbench.models.pins import card
from tools.docfacts import FACTS, documents, refresh
from tools.measurements import MEASURES

HALVES_MODELS = ("bgt-en-fr", "bgt-en-fr-lang16", "bgt-small-en-fr")  # the README's figure: the en-fr BGTs


def write_figures() -> list[Path]:
    """The README's figure (``docs/images/halves.png``) from the cards of :data:`HALVES_MODELS` (needs Chromium)."""
    path = REPO_ROOT / "docs" / "images" / "halves.png"
    path.parent.mkdir(exist_ok=True)
    figure = halves_figure({name: card(name) for name in HALVES_MODELS})
    figure.update_layout(width=900, height=420, margin=dict(t=60, b=40, l=70, r=20))
    figure.write_image(str(path), scale=1.5)
    return [path]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scripts/docs", description=__doc__.split("\n\n")[0].replace("``", ""))
    p.add_argument("--write", action="store_true", help="rewrite the numbers that drifted (default: only check)")
    p.add_argument("--figures", action="store_true", help="draw the docs' figures again from the cards (Chromium)")
    p.add_argument("--measure", choices=list(MEASURES),
                   help="first run a recorded measurement again and record it in docs/measurements.json "
                        "(text-baselines: Conneau et al.'s text-only baselines on every task; pair-contrasts: each "
                        "pair's BGT against its English view and BILINGUALTRANS on STS12-16; minutes each)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.measure:
            record = MEASURES[args.measure]()
            print(f"recorded {args.measure} ({record['date']}) in docs/measurements.json")
        if args.figures:
            print(f"drew {', '.join(str(p.relative_to(REPO_ROOT)) for p in write_figures())}")
        drifted = refresh(write=args.write)
        checked = f"{len(FACTS)} kinds of fact in {len(documents())} documents"
        if drifted and not args.write:
            raise WorkbenchError(f"these numbers in the docs drifted from what they state ({checked}): "
                                 f"{'; '.join(drifted)}. Rewrite them with: bash scripts/docs --write")
    except WorkbenchError as err:
        print(f"scripts/docs: error: {err}", file=sys.stderr)
        return 2
    print(f"rewrote {'; '.join(drifted)}" if drifted else f"the docs' numbers are current ({checked})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
