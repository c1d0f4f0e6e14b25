"""The form-follows-style candidate study: train candidates from the shipped bgt-en-fr and measure each the same way.

Each candidate is a recipe in ``recipes/style-study/`` (a shipped en-fr BGT's recipe continued for 1,000 updates
with another bottleneck on the latents), trained with ``--init-from`` its starting model (:data:`STARTS`;
bgt-en-fr unless named there; a candidate of another shape starts from scratch) into ``runs/style/NAME`` and
judged at its last checkpoint:

    .venv/bin/python scripts/style_study.py train fb4 fb8      # two runs side by side, one thread each (resumes)
    .venv/bin/python scripts/style_study.py measure fb4 fb8    # appends to runs/style/study.csv
    .venv/bin/python scripts/style_study.py table              # the markdown table for trained/HISTORY.md

``measure`` gives STS12-16 of the semantic and the English view, the last STS-B dev of the run, the style-transfer
evaluation on the 200 fixed held-out pairs with the paper's decoding (meaning, content words, form pooled and per
attribute; meaning and form with the default decoding too, in the columns ending ``@default``), the KL of
each latent, how much of the meaning z_en tells (held-out R² of the translation's semantic mean, 2,000 test
pairs), and both halves of BGT's story on the probes (Length, PunctNum, PunctFirst for the semantic and the English
view at the cards' sizes, with the English-minus-semantic difference and its paired bootstrap 95% CI);
``measure shipped`` measures bgt-en-fr itself, ``measure model:NAME`` any shipped model (a candidate's start) and
``measure NAME@N`` a run's checkpoint of update N instead of its latest.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs" / "style"
STUDY = RUNS / "study.csv"
WORKBENCH = ROOT / ".venv" / "bin" / "workbench"
# (bgt-en-fr-lang128 left trained/ on 2026-12-01: the two lang128 candidates of that study need it back from git)
STARTS = {"lang128-squeeze": "bgt-en-fr-lang128", "lang128-sample-all": "bgt-en-fr-lang128",
          "lang32": None, "lang64": None, "ws-sample": None, "ws-mean": None,
          "ws-mean-wd": str(RUNS / "ws-mean-4400" / "checkpoints" / "update-4400"),
          **{f"en-{lang}-ws-mean": f"bgt-en-{lang}" for lang in ("es", "ar", "tr", "ja")},
          "en-tr-ws-lang64": None, "en-ar-ws-lang64": None, "en-ja-ws-lang64": "bgt-en-ja",
          "en-tr-ws-lang96": "bgt-en-tr", "en-ar-ws-lang48": None, "en-ar-ws-lang56": None,
          **{f"en-ar-ws-advw{w}": "bgt-en-ar" for w in (1, 3, 10)},
          **{f"en-ar-ws-advw10-lkl{w}": str(RUNS / "en-ar-ws-advw10" / "checkpoints" / "update-9600")
             for w in (2, 4)},
          **{f"ws-advw{w}-lkl003": str(RUNS / "ws-advw3" / "checkpoints" / "update-14000") for w in (3, 5)},
          **{f"ws-advw3-{lever}": str(RUNS / "ws-advw3" / "checkpoints" / "update-14000")
             for lever in ("tw03", "ind5", "ind20")},
          "ws-advw3-tw03-ind5": "bgt-en-fr",
          **{f"en-ar-ws-advw10-{lever}": str(RUNS / "en-ar-ws-advw10" / "checkpoints" / "update-9600")
             for lever in ("tw3", "ind2", "ind5", "ind20")}}
# None: from scratch (a new shape) or from the warm_start its recipe names; the pairs' warm starts continue their
# shipped part-way models (exported with decoders) when their run folder is gone
FORM_TASKS = ("length", "punct_num", "punct_first")  # where the paper's language encoder beats the semantic one


def recipe(name: str) -> Path:
    """A candidate's recipe: ``NAME`` for en-fr, ``en-XX-NAME`` for another pair."""
    folder = ROOT / "recipes" / "style-study"
    path = folder / (f"bgt-{name}.toml" if name.startswith("en-") else f"bgt-en-fr-{name}.toml")
    if not path.is_file():
        known = sorted(p.stem.removeprefix("bgt-").removeprefix("en-fr-") for p in folder.glob("*.toml"))
        sys.exit(f"no candidate {name!r}; the recipes give: {', '.join(known)}")
    return path


def train(names: list[str]) -> None:
    RUNS.mkdir(parents=True, exist_ok=True)
    jobs = []
    for name in names:
        out = RUNS / name
        start_from = STARTS.get(name, "bgt-en-fr")
        start = (["--resume"] if (out / "latest").is_file() else ["--init-from", start_from] if start_from else [])
        command = [str(WORKBENCH), "train", "--config", str(recipe(name)), "--out", str(out), *start]
        log = open(RUNS / f"{name}.log", "a")
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        jobs.append((name, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)))
        print(f"{name}: {' '.join(command)} (log: {RUNS / f'{name}.log'})", flush=True)
    failed = [name for name, job in jobs if job.wait() != 0]
    if failed:
        sys.exit(f"training failed: {', '.join(failed)} (see their logs in {RUNS})")


def shipped_name(name: str) -> str | None:
    """The shipped model a measure name stands for (``shipped``: bgt-en-fr; ``model:NAME``), None for a run."""
    return "bgt-en-fr" if name == "shipped" else name.removeprefix("model:") if name.startswith("model:") else None


def form_probes(model) -> dict:
    """Each form task on the semantic and the English view, and English minus semantic with a paired bootstrap CI
    over the shared test sentences (the two probes read the same dataset)."""
    import numpy as np
    from workbench.probing.probe import probe
    from workbench.zoo.cards import CARD_SIZES
    row, rng = {}, np.random.default_rng(0)
    for task in FORM_TASKS:
        results = {view: probe(model.encoder(view), task, control=False, sizes=CARD_SIZES)
                   for view in ("semantic", "en")}
        for view, result in results.items():
            row[f"{task}_{view}"] = 100 * result.accuracy
        diff = results["en"].outcomes() - results["semantic"].outcomes()
        boots = diff[rng.integers(0, len(diff), (1000, len(diff)))].mean(axis=1)
        row[f"{task}_en_minus_sem"] = 100 * diff.mean()
        row[f"{task}_en_minus_sem_ci"] = f"{100 * np.quantile(boots, 0.025):.1f}-{100 * np.quantile(boots, 0.975):.1f}"
    return row


def held_out_r2(z, target, ridge: float = 0.1) -> float:
    """The share of ``target``'s variance (R², pooled over its columns) that a ridge regression on ``z`` predicts,
    fitted on the first half of the rows and scored on the second, then the other way round, averaged. Scored on
    rows it was not fitted on, chance is about 0 (a 128-wide ``z`` "explains" noise in its own rows); ``z`` is
    standardised first and the penalty is ``ridge`` × the rows fitted, so it favours no scale of latent."""
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score
    from sklearn.preprocessing import StandardScaler
    z = StandardScaler().fit_transform(z)
    half = len(z) // 2
    first, second = slice(0, half), slice(half, 2 * half)
    return sum(r2_score(target[b], Ridge(alpha=ridge * half).fit(z[a], target[a]).predict(z[b]),
                        multioutput="variance_weighted") for a, b in ((first, second), (second, first))) / 2


def meaning_in_language_latent(model, n: int = 2000) -> float:
    """How much of a sentence's meaning its English latent tells: :func:`held_out_r2` (×100) of the translation's
    semantic mean from the English sentence's z_en over the first ``n`` test pairs of the model's pair."""
    from workbench.data.corpora import load_splits
    pairs = load_splits("-".join(model.cfg.languages))["test"][:n]
    z_en = model.encoder("en").encode([en for en, _ in pairs])
    return 100 * held_out_r2(z_en, model.encoder("semantic").encode([other for _, other in pairs]))


def measure(names: list[str]) -> None:
    from workbench.zoo.cards import card
    from workbench.evaluation import evaluate
    from workbench.style_transfer.evaluation import transfer_scores
    from workbench.style_transfer.generation import PAPER_DECODING
    from workbench.models.folder import load
    rows = []
    for name in names:
        shipped = shipped_name(name)
        run, _, at = name.partition("@")  # RUN@N: the run's checkpoint of update N, not its latest
        model = load(shipped or (RUNS / run / "checkpoints" / f"update-{at}" if at else RUNS / run))
        if shipped:
            curve = pd.read_csv(ROOT / "trained" / shipped / "curve.csv")
            updates = card(shipped)["training"]["updates"]
            dev = curve[(curve["metric"] == "stsb_dev") & (curve["update"] == updates)].set_index("view")["value"]
        else:
            metrics = [json.loads(line) for line in (RUNS / run / "metrics.jsonl").read_text().splitlines()]
            last = [m for m in metrics if "stsb_dev" in m and (not at or m["update"] <= int(at))][-1]
            updates, dev = last["update"], last["stsb_dev"]
        row = {"candidate": shipped or name, "updates": updates, "stsb_dev": dev["semantic"], "stsb_dev_en": dev["en"]}
        for view in ("semantic", "en"):
            sts = evaluate(model.encoder(view), "sts")
            row[f"sts12-16_{view}"] = float(sts[(sts["task"] == "STS12-16") & (sts["metric"] == "pearson")
                                                & (sts["dataset"] == "all")]["value"].iloc[0])
        row.update(form_probes(model))
        row["meaning_in_z_en_r2"] = meaning_in_language_latent(model)
        summary, _ = transfer_scores(model, **PAPER_DECODING)  # the study's columns, comparable since it began
        for metric in summary.itertuples():
            row[metric.metric] = metric.value if metric.metric.startswith("kl_") else 100 * metric.value
            if not metric.metric.startswith("kl_"):
                row[f"{metric.metric}_ci"] = f"{100 * metric.ci_low:.1f}-{100 * metric.ci_high:.1f}"
        summary, _ = transfer_scores(model, ablation=False)  # and the default decoding's (docs/method.md#decoding)
        for metric in summary[summary["metric"].str.startswith(("closer_to_source", "form_follows"))].itertuples():
            row[f"{metric.metric}@default"] = 100 * metric.value
            row[f"{metric.metric}@default_ci"] = f"{100 * metric.ci_low:.1f}-{100 * metric.ci_high:.1f}"
        rows.append(row)
        print(pd.Series(row).to_string(), flush=True)
    frame = pd.DataFrame(rows)
    with FileLock(f"{STUDY}.lock"):  # two measures side by side each add their rows, neither reads a half-written file
        if STUDY.is_file():
            frame = pd.concat([pd.read_csv(STUDY), frame]).drop_duplicates("candidate", keep="last")
        frame.to_csv(STUDY, index=False)
    print(f"study: {STUDY}")


def table() -> None:
    frame = pd.read_csv(STUDY)
    closer = next(c for c in frame.columns if c.startswith("closer_to_source[sp") and not c.endswith("_ci"))
    columns = {"candidate": "candidate", "updates": "updates", "stsb_dev": "STS-B dev",
               "sts12-16_semantic": "STS12–16 sem", "sts12-16_en": "STS12–16 en view",
               closer: "closer to source %", "keeps_source_word": "keeps a source word %",
               "form_follows_style": "form follows style %", "length_follows_style": "length",
               "punctuation_follows_style": "punct.", "first_word_follows_style": "first word",
               "sentence_type_follows_style": "type", "negation_follows_style": "negation",
               "person_follows_style": "person", "kl_nats[semantic]": "KL sem", "kl_nats[en]": "KL en",
               "meaning_in_z_en_r2": "meaning in z_en (R²)"}
    shown = frame[[c for c in columns if c in frame.columns]].rename(columns=columns).round(1)
    shown["form follows style %"] = [f"{v:.1f} [{ci}]" for v, ci in zip(frame["form_follows_style"],
                                                                       frame["form_follows_style_ci"])]
    print("| " + " | ".join(shown.columns) + " |\n|" + "---|" * len(shown.columns))
    for row in shown.itertuples(index=False):
        print("| " + " | ".join(str(v) for v in row) + " |")

if __name__ == "__main__":
    action, *names = sys.argv[1:] or ["help"]
    if action == "train" and names:
        train(names)
    elif action == "measure" and names:
        measure(names)
    elif action == "table":
        table()
    else:
        sys.exit(__doc__)
