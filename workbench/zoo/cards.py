"""Model cards: what a shipped model measures, measured from its own weights when it is exported.

:func:`measure` runs the paper's protocol on every view of a model (STS 2012–16 and Hard STS for views that read
English, Tatoeba for views that also read a Tatoeba language, the Table 3 probes at :data:`CARD_SIZES`; for a
pair without English, the STS17 tracks in its languages and the retrieval of its held-out pairs),
:func:`write_card` stores the numbers as ``card.json`` (for tests and reports) and ``card.md`` (for people) and adds
both to the folder's sha256 list, and :func:`card` reads a card back only if it still matches that list. The demo,
the widgets and the reproduction report use the same constants, so their numbers compare with the cards'.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from ..checks import WorkbenchError, plain_name
from ..data.eval_sets import STS17_TRACKS
from ..encoders import unread
from ..evaluation import SUITES, compare_sts, evaluate, evaluate_held_out_retrieval
from ..models.kinds import can
from ..models.folder import file_digests, load
from ..models.pins import card, pin, shipped, unpin
from ..paths import atomic_write, read_json, sealed_config, trained_dir
from ..probing.across import english_version, probe_across
from ..probing.build import DEFAULT_SIZES
from ..probing.probe import probe
from ..probing.tasks import get_task, readable_tasks, task_names
from ..style_transfer.evaluation import transfer_pairs, transfer_scores
from .card_page import card_markdown

# Table 3's tasks (Gender is added for encoders that read French or Spanish).
TABLE3_TASKS = ("subj_num", "obj_num", "tree_depth", "top_const", "word_content", "length", "punct_num",
                "punct_first")
GENDER_TASKS = {"fr": "gender_fr", "es": "gender_es"}
TABLE3_MODELS = ("bgt", "bilingual_trans")
CARD_SUITES = ("sts", "hard_sts", "tatoeba")
CARD_SIZES = DEFAULT_SIZES  # probing sizes for cards, demo and reproduction: every probe's default
CARD_TRANSFER_PAIRS = 200  # held-out pairs a card's style transfer is judged on
# Table 3's form tasks: the paper's English language encoder beats its semantic encoder on each (BGT's other half)
FORM_TASKS = ("length", "punct_num", "punct_first")

log = logging.getLogger(__name__)


def model_pair(model) -> str:
    """The language pair a trained model's config names (``"en-fr"``; ``"all"`` for the multilingual NMT)."""
    languages = tuple(getattr(model.cfg, "languages", ("en", "fr")))
    return "-".join(languages) if len(languages) == 2 else "all"


def measure(model, sizes: dict[str, int] = CARD_SIZES, show_progress: bool = False) -> pd.DataFrame:
    """STS 2012–16 and Hard STS for every view of ``model`` that reads English, Tatoeba error rates (both
    directions) for every view that reads English and a Tatoeba language, and the Table 3 probes (at ``sizes``,
    no control task) for every view of the Table 3 models (BGT, BILINGUALTRANS) or the semantic view of the
    others; for a pair without English, each view's STS17 tracks and the semantic view's held-out retrieval
    instead of the English suites: tidy rows with a ``view`` column."""
    frames, pair = [], model_pair(model)
    for view in model.views:
        encoder = model.encoder(view)
        rows = [evaluate(encoder, suite, show_progress=show_progress) for suite in CARD_SUITES
                if SUITES[suite].takes(encoder)]
        if not pair.startswith(("en-", "all")):
            tracks = [track for track in STS17_TRACKS if not unread(encoder, track.split("-")[:2])]
            rows += [evaluate(encoder, "sts17", show_progress=show_progress, tracks=tracks)] if tracks else []
            rows += [evaluate_held_out_retrieval(encoder, pair)] if view == "semantic" else []
        probed = view == "semantic" or getattr(model.cfg, "setting", None) in TABLE3_MODELS
        readable = readable_tasks(encoder) if probed else []
        tasks = [task for task in (*TABLE3_TASKS, *GENDER_TASKS.values()) if task in readable]
        rows += [probe(encoder, task, control=False, sizes=sizes).to_frame() for task in tasks]
        if rows:
            frames.append(pd.concat(rows, ignore_index=True).assign(view=view, fingerprint=encoder.fingerprint))
    return pd.concat(frames, ignore_index=True)


def measure_halves(model, sizes: dict[str, int] = CARD_SIZES, n_boot: int = 1000) -> dict:
    """Both halves of BGT's story, from a BGT's semantic and English views: each form task's probe accuracy of the
    English view minus the semantic view's, with a paired bootstrap 95% CI over the shared test sentences (the
    paper's English encoder wins all three), and STS12–16 of the semantic view minus the English view's, paired
    over sentence pairs (meaning apart from form). Each as ``[difference, ci_low, ci_high]`` × 100."""
    semantic, english = model.encoder("semantic"), model.encoder("en")
    rng, tasks = np.random.default_rng(0), {}
    for task in FORM_TASKS:
        diff = (probe(english, task, control=False, sizes=sizes).outcomes()
                - probe(semantic, task, control=False, sizes=sizes).outcomes())
        boots = diff[rng.integers(0, len(diff), (n_boot, len(diff)))].mean(axis=1)
        tasks[task] = [round(100 * float(v), 1) for v in (diff.mean(), *np.quantile(boots, [0.025, 0.975]))]
    sts = compare_sts(semantic, english, n_boot=n_boot).iloc[-1]  # the STS12-16 row
    return {"english_minus_semantic": tasks,
            "semantic_minus_english_sts": [round(float(sts[k]), 1) for k in ("difference", "ci_low", "ci_high")]}


def halves_won(section: dict) -> list[str]:
    """The form tasks whose English-minus-semantic CI lies above 0 in a card's ``halves`` section."""
    return [task for task, (_, low, _) in section["english_minus_semantic"].items() if low > 0]


# Both halves at once, at CPU scale: the English view wins a form task by this many points (CI above 0) while the
# semantic view leads it on STS12–16 by at least STS_LEAD (Table 2's separation; the paper's is 20 points).
FORM_LEAD, STS_LEAD = 2.0, 8.0


def halves_rank(section: dict) -> tuple[int, int, float]:
    """How much of both halves a card's ``halves`` section shows, to compare models of a pair: whether it shows
    both at once (a form task won by FORM_LEAD with its CI above 0, and the semantic view STS_LEAD ahead on
    STS12–16), then the form tasks won, then the summed English-minus-semantic lead on them."""
    form = section["english_minus_semantic"]
    both = (any(form[task][0] >= FORM_LEAD for task in halves_won(section))
            and section["semantic_minus_english_sts"][0] >= STS_LEAD)
    return int(both), len(halves_won(section)), sum(v[0] for v in form.values())


def with_decoders(root: str | Path | None = None) -> list[str]:
    """The shipped BGTs that kept their decoders and read English (they do style transfer, judged on English
    sentences): each pair's ``bgt-en-XX`` first, en–fr (the paper's style-transfer pair) before the others, then the
    other variants."""
    pairs = {name: info["pair"] for name in shipped(root)
             if can((info := card(name, root))["model"], "style_transfer") and info["decoders"]
             and info["pair"].startswith("en-")}
    return sorted(pairs, key=lambda name: (name != f"bgt-{pairs[name]}", pairs[name] != "en-fr", name))


def own_language_tasks(language: str) -> list[str]:
    """The tasks on ``language``'s own sentences (``length_fr``, ``tense_ja``, …; not a pair's tasks)."""
    return [name for name in task_names() if get_task(name).languages == (language,)]


def language_views(model) -> list[str]:
    """The views of ``model`` that encode one language of its pair alone, other than English (a BGT's z_fr; both
    z_fr and z_es in fr-es), in the pair's order."""
    return [view for view in model.views if view not in ("semantic", "en")]


def measure_languages(model, sizes: dict[str, int] = CARD_SIZES, language: str | None = None) -> dict:
    """A BGT's semantic encoder and its encoder of ``language`` (default: the pair's second language) on that
    language's tasks, with control tasks: per task the majority share and, per view, [accuracy, 95% CI low, high,
    selectivity] × 100; and under ``across``, per task with an English version, the semantic encoder's
    English-trained probe on it (:func:`.probing.across.probe_across`; where the semantic encoder reads
    English)."""
    views = language_views(model)
    if not views:
        raise WorkbenchError(f"{model.name} has no language encoder (views: {', '.join(model.views)}); only BGTs "
                             "with language variables are measured on their own language")
    language = language or views[-1]
    if language not in views:
        raise WorkbenchError(f"{model.name} has no {language} encoder; its language encoders: {', '.join(views)}")
    tasks = own_language_tasks(language)
    missing = {get_task(task).unavailable for task in tasks} - {None}
    if missing:
        raise WorkbenchError(f"measuring {language}'s tasks for a card needs every analyser: {'; '.join(missing)}")
    out = {}
    for task in tasks:
        entry = {}
        for view in ("semantic", language):
            frame = probe(model.encoder(view), task, control=True, sizes=sizes).to_frame().set_index("metric")
            acc = frame.loc["accuracy"]
            entry[view] = [round(100 * float(v), 1) for v in (acc["value"], acc["ci_low"], acc["ci_high"],
                                                               frame.loc["selectivity", "value"])]
            entry["majority"] = round(100 * float(frame.loc["majority", "value"]), 1)
        out[task] = entry
    semantic = model.encoder("semantic")
    across = {task: _across(semantic, source, task, sizes) for task in tasks
              if (source := english_version(task)) and not unread(semantic, ("en",))}
    return {"language": language, "tasks": out, "across": across}


def _across(encoder, source: str, target: str, sizes: dict[str, int]) -> dict:
    """One cross-lingual transfer for a card: the English probe and the in-language probe on the target's test
    sentences ([accuracy, 95% CI low, high] × 100), the majority share × 100 and the transfer ratio (or None)."""
    frame = probe_across(encoder, source, target, sizes=sizes).set_index("metric")
    share = {metric: [round(100 * float(frame.loc[metric, key]), 1) for key in ("value", "ci_low", "ci_high")]
             for metric in ("transfer_accuracy", "target_accuracy")}
    ratio = frame.loc["transfer_ratio", "value"]
    return {"from": source, "english probe": share["transfer_accuracy"], "own probe": share["target_accuracy"],
            "majority": round(100 * float(frame.loc["majority", "value"]), 1),
            "ratio": None if pd.isna(ratio) else round(float(ratio), 2), "labels": frame["labels"].iloc[0]}


def summarise_views(df: pd.DataFrame) -> dict:
    """Per view: fingerprint, STS per year + average, Hard STS, Tatoeba error rates (%), probe accuracies
    (× 100)."""
    out = {}
    for view, rows in df.groupby("view", sort=False):
        entry = {"fingerprint": rows["fingerprint"].iloc[0]}
        for suite in (*CARD_SUITES, "sts17"):  # what each suite puts on a card, as the suite declares it (STS17:
            entry.update(SUITES[suite].card(rows))  # measured only for a pair without English)
        retrieval = rows[rows["task"] == "held-out retrieval"]
        if len(retrieval):
            entry["held_out_retrieval"] = {m.removeprefix("error "): round(float(v), 2)
                                           for m, v in zip(retrieval["metric"], retrieval["value"])}
        acc = rows[rows["metric"] == "accuracy"]
        entry["probing"] = {t: round(100 * float(v), 2) for t, v in zip(acc["task"], acc["value"])}
        out[view] = entry
    return out


def write_card(name: str, root: str | Path | None = None, sizes: dict[str, int] = CARD_SIZES,
               show_progress: bool = False, folder: Path | None = None,
               transfer_pairs: int = CARD_TRANSFER_PAIRS) -> dict:
    """Measure the shipped model ``name`` (in ``root``, or in ``folder``) and write its ``card.json`` and
    ``card.md``."""
    folder = folder or (Path(root) if root else trained_dir()) / name
    config = read_json(folder / "config.json")
    model = load(folder)
    views = summarise_views(measure(model, sizes=sizes, show_progress=show_progress))
    transfer = (_transfer_summary(model, transfer_pairs) if config.get("decoders") and "en" in model.views
                and can(config["model"]["setting"], "style_transfer") else None)  # judged on English sentences
    own = language_views(model)
    languages = measure_languages(model, sizes) if own else None
    first = measure_languages(model, sizes, own[0]) if len(own) == 2 else None  # a pair without English
    halves = measure_halves(model, sizes) if {"semantic", "en"} <= set(model.views) else None
    train, record = config.get("train", {}), config["training"]
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    info = {"name": name, "model": config["model"]["setting"], "pair": train.get("pair", "-".join(
                config["model"]["languages"])), "preset": train.get("preset", record.get("preset")), "training": record,
            "decoders": config.get("decoders", False), "megabytes": round(size / 2 ** 20, 1),
            "curve": (folder / "curve.csv").is_file(),
            "probing_sizes": sizes, "views": views, **({"halves": halves} if halves else {}),
            **({"style_transfer": transfer} if transfer else {}), **({"languages": languages} if languages else {}),
            **({"first_language": first} if first else {})}
    return _save(folder, info, config)


def remeasure_transfer(name: str, root: str | Path | None = None, transfer_pairs: int = CARD_TRANSFER_PAIRS) -> dict:
    """Measure only the style-transfer section of a shipped BGT's card again (after the evaluation changed; the
    other numbers stay as measured)."""
    folder = (Path(root) if root else trained_dir()) / name
    info, config = card(name, root), read_json(folder / "config.json")
    if "style_transfer" not in info:
        raise WorkbenchError(f"{name} has no style-transfer section (only BGTs shipped with decoders have one)")
    info["style_transfer"] = _transfer_summary(load(folder), transfer_pairs)
    return _save(folder, info, config)


def remeasure_languages(name: str, root: str | Path | None = None, sizes: dict[str, int] = CARD_SIZES) -> dict:
    """Measure only the own-language section of a shipped BGT's card (after tasks were added; the other numbers
    stay as measured)."""
    folder = (Path(root) if root else trained_dir()) / name
    info, config = card(name, root), read_json(folder / "config.json")
    model = load(folder)
    info["languages"] = measure_languages(model, sizes)
    if len(own := language_views(model)) == 2:
        info["first_language"] = measure_languages(model, sizes, own[0])
    return _save(folder, info, config)


def remeasure_halves(name: str, root: str | Path | None = None, sizes: dict[str, int] = CARD_SIZES) -> dict:
    """Measure only the both-halves section of a shipped BGT's card (the other numbers stay as measured)."""
    folder = (Path(root) if root else trained_dir()) / name
    info, config = card(name, root), read_json(folder / "config.json")
    model = load(folder)
    if not {"semantic", "en"} <= set(model.views):
        raise WorkbenchError(f"{name} has no semantic and English views to compare (a BGT of an en-XX pair has)")
    info = {**{k: v for k, v in info.items() if k not in ("halves", "style_transfer", "languages", "first_language")},
            "halves": measure_halves(model, sizes),
            **{k: info[k] for k in ("style_transfer", "languages", "first_language") if k in info}}  # the card's order
    return _save(folder, info, config)


def rename(name: str, new: str, root: str | Path | None = None) -> Path:
    """Give the shipped model ``name`` the name ``new``: its folder, its card and its pin (re-sealed; its numbers,
    weights and fingerprints are unchanged). A model that shows BGT's story better takes a pair's plain name so
    that what reads ``bgt-en-XX`` shows it; the model it replaces moves aside first."""
    root = Path(root) if root else trained_dir()
    if not plain_name(new):
        raise WorkbenchError(f"{new!r} is not a valid model name: use letters, digits, '_', '.' and '-'")
    if (root / new).exists():
        raise WorkbenchError(f"{root / new} exists; rename or remove it first")
    info, folder = card(name, root), root / name
    load(folder)  # verified (and its pin checked) before anything moves
    config = read_json(folder / "config.json")
    folder.rename(root / new)
    unpin(root, name)
    _save(root / new, {**info, "name": new}, config)
    return root / new


def _save(folder: Path, info: dict, config: dict) -> dict:
    atomic_write(folder / "card.json", json.dumps(info, indent=1))
    atomic_write(folder / "card.md", card_markdown(info, config))
    # the folder was verified by load() above; the new card joins its sha256 list
    config["files_sha256"] = file_digests(folder)
    atomic_write(folder / "config.json", sealed_config(config))
    pin(folder)  # a shipped model's new card: its new config.json is the one trained/pins.json pins
    return info


def _transfer_summary(model, n: int) -> dict:
    """The style-transfer evaluation of a BGT with decoders (``transfer_scores`` on ``n`` fixed held-out pairs,
    200 for shipped cards; beam 5): each share × 100 with its bootstrap CI, and the KL of each latent in nats."""
    log.info("style transfer: decoding %d held-out pairs (beam 5, re-ranked) and their latent ablation", n)
    summary, _ = transfer_scores(model, transfer_pairs(n))
    return {row.metric: ([round(100 * row.value, 1), round(100 * row.ci_low, 1), round(100 * row.ci_high, 1)]
                         if not row.metric.startswith("kl_") else round(row.value, 2))
            for row in summary.itertuples()}
