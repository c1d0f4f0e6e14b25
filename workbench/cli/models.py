"""What ``models`` and ``curve`` do (their arguments: :mod:`.commands`): shipped models, their cards and exports,
and learning curves. Kept out of :mod:`.training`, so that a training process does not load the probing stack
(scikit-learn, the cards) these need."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..checks import WorkbenchError
from ..models.folder import migrate
from ..models.pins import shipped
from ..models.runlog import DEV_METRICS, learning_curve
from ..paths import trained_dir
from ..progress import progress_bar
from ..reports.pages import curve_report
from ..zoo.cards import halves_won, remeasure_halves, remeasure_languages, remeasure_transfer, rename
from ..zoo.packaging import export, import_shards, retrain, retrain_plan


def _remeasure(names: list[str], section: str) -> None:
    """``models card``: one section of each model's card measured again, said model by model."""
    for name in progress_bar(names, desc="cards", unit="model", disable=len(names) == 1):
        if section == "languages":
            info = remeasure_languages(name)
            tasks = [t for key in ("first_language", "languages") for t in info.get(key, {}).get("tasks", {})]
            print(f"{name}: {len(tasks)} own-language tasks measured again", end="")
        elif section == "halves":
            won = halves_won(remeasure_halves(name)["halves"])
            print(f"{name}: both halves measured again (English view wins {', '.join(won) or 'no form task'})",
                  end="")
        else:
            form = remeasure_transfer(name)["style_transfer"]["form_follows_style"]
            print(f"{name}: style transfer measured again (form follows the style {form[0]}%)", end="")
        print(f": {(trained_dir() / name / 'card.md').resolve()}")


def models_command(args) -> None:
    """Every ``models`` action but ``list`` (:mod:`.listing`)."""
    if args.action == "retrain":
        if Path(args.runs).exists() and not Path(args.runs).is_dir():
            raise WorkbenchError(f"--runs {args.runs} is a file; give the folder the runs go to (runs/shipped)")
        plan = retrain_plan(args.only)
        print(plan.drop(columns=["config"]).to_string(index=False))
        print(f"{len(plan)} models, {plan['hours'].sum():.1f} hours of training as recorded (each on the hardware "
              "its row names); each retrains with: workbench train --config trained/NAME/config.json "
              "(UPDATES updates, no time limit), then models export --checkpoint CHECKPOINT", flush=True)
        if not args.dry_run:
            for path in retrain(plan, args.runs, force=args.force):
                print(f"shipped: {path.resolve()}")
        return
    if args.action == "migrate":
        folders = [folder for path in (args.paths or shipped()) for folder in migrate(path)]
        print("\n".join(f"migrated: {folder}" for folder in folders) or "every folder is in the current format")
        return
    if args.action == "rename":
        print(f"renamed: {rename(args.name, args.new).resolve()}")
        return
    if args.action == "card":
        _remeasure(args.names, args.section)
        return
    if args.action in ("export", "import"):
        path = (export(args.run, name=args.name, keep_decoders=args.keep_decoders, checkpoint=args.checkpoint,
                       force=args.force)
                if args.action == "export" else import_shards(args.package, name=args.name, force=args.force))
        print(f"shipped: {path.resolve()}\ncard: {(path / 'card.md').resolve()}")


def curve_command(args) -> None:
    curves = pd.concat([learning_curve(run) for run in args.runs], ignore_index=True)
    path = curve_report(curves, args.out, static=not args.no_static)
    for metric, (words, unit) in DEV_METRICS.items():
        last = curves[curves["metric"] == metric].sort_values("update").groupby(["run", "view"], sort=False).last()
        if not last.empty:
            print(f"latest {words} ({unit}):")
            print(last[["update", "value"]].to_string())
    print(f"report: {path.resolve()}\ndata: {(path.parent / 'curve.csv').resolve()}")
