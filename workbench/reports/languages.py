"""What each language encoder knows about its own language, against the language's distance from English.

Every BGT's card carries its semantic encoder and its language encoder (z_fr … z_ja) on the tasks built from the
pair's other language (docs/probing.md#languages); these read the pairs' cards side by side (the shipped five and
your own: :func:`.paper.pair_languages`), as :func:`.paper.language_gaps` does for the English tasks: the gap is
semantic − language encoder, so a form task the language encoder wins, as the paper expects, has a negative gap.
"""
from __future__ import annotations

import html

import pandas as pd

from ..models.pins import card, shipped
from ..probing.tasks import get_task
from .distance import gap_correlations, language_distances
from .figures import gap_figure
from .pages import html_table
from .paper import pair_languages, pairs_without_english


def own_language_results(cards: dict[str, dict] | None = None) -> pd.DataFrame:
    """Each pair's BGT (``bgt-en-xx``) on its other language's own tasks, from the cards: one row per language,
    task and view (``semantic`` or ``language encoder``) with ``accuracy``, ``ci_low``, ``ci_high``, ``selectivity`` and
    ``majority`` (× 100); ``task`` is the title without its language (``Length``, ``Tense``, …) so that the five
    languages' versions of a task share a name."""
    cards = cards if cards is not None else {name: card(name) for name in shipped()}
    rows = []
    for lang in pair_languages(cards):
        section = cards[f"bgt-en-{lang}"].get("languages")
        for task, entry in (section or {}).get("tasks", {}).items():
            title = get_task(task).title.removesuffix(f" ({lang})")
            for view, key in (("semantic", "semantic"), ("language encoder", lang)):
                accuracy, low, high, selectivity = entry[key]
                rows.append({"language": lang, "task": title, "view": view, "accuracy": accuracy, "ci_low": low,
                             "ci_high": high, "selectivity": selectivity, "majority": entry["majority"]})
    return pd.DataFrame(rows, columns=["language", "task", "view", "accuracy", "ci_low", "ci_high", "selectivity",
                                       "majority"])


def partner_results(cards: dict[str, dict] | None = None) -> pd.DataFrame:
    """Each language of a pair without English (:func:`.paper.pairs_without_english`), its semantic and language
    encoders on its own tasks beside the same language's in every model of its English pair that has an encoder of
    it (``bgt-en-XX`` and its variants, such as the one trained with the same recipe), from the cards: one row per
    language, task, model and
    view with the model's ``partner`` (the pair's other language: ``en``, or ``es`` for French in fr-es), its
    ``updates``, ``accuracy``, ``ci_low``, ``ci_high`` and ``majority`` (× 100). What a language encoder keeps of
    its language when the other side is a close language rather than English."""
    cards = cards if cards is not None else {name: card(name) for name in shipped()}
    rows = []
    for pair in pairs_without_english(cards):
        for lang in pair.split("-"):
            models = [f"bgt-{pair}", *sorted(name for name, info in cards.items() if info.get("pair") == f"en-{lang}"
                                             and info.get("languages", {}).get("language") == lang)]
            for name in models:
                section = next((cards[name][key] for key in ("languages", "first_language")
                                if cards[name].get(key, {}).get("language") == lang), {})
                partner = next(other for other in cards[name]["pair"].split("-") if other != lang)
                for task, entry in section.get("tasks", {}).items():
                    title = get_task(task).title.removesuffix(f" ({lang})")
                    for view, key in (("semantic", "semantic"), ("language encoder", lang)):
                        accuracy, low, high, _ = entry[key]
                        rows.append({"language": lang, "task": title, "model": name, "partner": partner,
                                     "updates": cards[name]["training"]["updates"], "view": view,
                                     "accuracy": accuracy, "ci_low": low, "ci_high": high,
                                     "majority": entry["majority"]})
    return pd.DataFrame(rows, columns=["language", "task", "model", "partner", "updates", "view", "accuracy",
                                       "ci_low", "ci_high", "majority"])


def own_language_transfer(cards: dict[str, dict] | None = None) -> pd.DataFrame:
    """Each pair's semantic encoder (``bgt-en-xx``), from its card: the probe trained on the English version of a
    task tested on the other language's version, beside the probe trained on that language. One row per language
    and task (titled as in :func:`own_language_results`) with ``labels`` (those both versions share),
    ``majority``, ``english_probe`` and ``own_probe`` with their CIs (× 100), and ``ratio`` (NaN where the own probe
    is not above the majority)."""
    cards = cards if cards is not None else {name: card(name) for name in shipped()}
    rows = []
    for lang in pair_languages(cards):
        section = cards[f"bgt-en-{lang}"].get("languages") or {}
        for task, entry in section.get("across", {}).items():
            (english, e_low, e_high), (own, o_low, o_high) = entry["english probe"], entry["own probe"]
            rows.append({"language": lang, "task": get_task(task).title.removesuffix(f" ({lang})"),
                         "labels": entry["labels"], "majority": entry["majority"], "english_probe": english,
                         "english_low": e_low, "english_high": e_high, "own_probe": own, "own_low": o_low,
                         "own_high": o_high, "ratio": entry["ratio"] if entry["ratio"] is not None else float("nan")})
    return pd.DataFrame(rows, columns=["language", "task", "labels", "majority", "english_probe", "english_low",
                                       "english_high", "own_probe", "own_low", "own_high", "ratio"])


def own_language_gaps(results: pd.DataFrame) -> pd.DataFrame:
    """``language, task, gap`` rows (semantic − language encoder accuracy, × 100) of :func:`own_language_results`,
    as :func:`.figures.gap_figure` and :func:`.distance.gap_correlations` read them."""
    wide = results.pivot_table(index=["language", "task"], columns="view", values="accuracy", sort=False)
    return (wide["semantic"] - wide["language encoder"]).rename("gap").reset_index()


def own_language_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per task and language: the majority class, then per view its accuracy with the 95% CI
    (``71.9 [69.1, 74.6]``) and its selectivity, as the reproduction prints :func:`own_language_results`."""
    rows = []
    for (task, language), part in results.groupby(["task", "language"], sort=False):
        row = {"task": task, "language": language, "majority": part["majority"].iloc[0]}
        for entry in part.itertuples():
            row[entry.view] = f"{entry.accuracy:.1f} [{entry.ci_low:.1f}, {entry.ci_high:.1f}]"
            row[f"{entry.view} selectivity"] = entry.selectivity
        rows.append(row)
    order = list(dict.fromkeys(results["task"]))  # each task's languages together, in the cards' order
    return (pd.DataFrame(rows).sort_values("task", key=lambda c: c.map(order.index), kind="stable")
            .reset_index(drop=True))


def own_language_section(cards: dict, figures: dict, data: dict) -> str:
    """The reproduction's section on the language encoders' own languages: the table, the gaps against URIEL+
    syntactic distance and their rank correlations."""
    results = own_language_results(cards)
    if results.empty:
        return ""
    gaps = own_language_gaps(results)
    distances = language_distances(list(dict.fromkeys(gaps["language"])))
    syntactic = distances[distances["kind"] == "syntactic"].set_index("language")["distance"]
    figures["own_language_gap"] = (gap_figure(gaps.assign(distance=gaps["language"].map(syntactic)),
                                              "Each language's own tasks: semantic − language encoder, against "
                                              "URIEL+ syntactic distance", x="distance"), gaps)
    data["own_language"] = results
    won = gaps[gaps["gap"] < 0]
    transfer = own_language_transfer(cards)
    data["own_language_transfer"] = transfer
    return ("<h3>What each language encoder knows about its own language</h3><p>From the cards: each pair's "
            "semantic and language encoder on tasks built from the other language's held-out sentences (accuracy "
            "× 100 with its 95% CI; selectivity: accuracy − the control task's, in points). The language encoder "
            "wins "
            f"{len(won)} of {len(gaps)} (language, task) cells"
            + (f" ({html.escape(', '.join(f'{r.task} {r.language}' for r in won.itertuples()))})" if len(won) else "")
            + f". Spearman's rho of each gap with each distance ({results['language'].nunique()} languages: "
              "descriptions, not findings):</p>" + html_table(own_language_table(results))
            + gap_correlations(gaps, distances).to_html(index=False, float_format=lambda v: f"{v:.3f}", border=0)
            + _transfer_html(transfer))


def partner_section(cards: dict, data: dict) -> str:
    """The reproduction's lines on pairs without English (:func:`partner_results`): each of their languages' encoders
    beside the same language's in its English pair, from the cards."""
    results = partner_results(cards)
    if results.empty:
        return ""
    data["partner_languages"] = results
    encoder = results[results["view"] == "language encoder"]
    table = encoder.pivot_table(index=["language", "task"], columns="model", values="accuracy", sort=False)
    pairs = ", ".join(pairs_without_english(cards))
    return (f"<h3>Pairs without English ({html.escape(pairs)})</h3><p>From the cards: the language encoder of each "
            "language of a pair of two other languages on that language's own tasks (accuracy × 100), beside the "
            "encoders of the same language in the BGTs of its English pair — the same language with a close partner "
            "instead of English. Each model's updates: "
            + html.escape(", ".join(f"{m} {u:,}" for m, u in dict(zip(encoder["model"], encoder["updates"])).items()))
            + ".</p>" + html_table(table.round(1).reset_index()))


def _transfer_html(transfer: pd.DataFrame) -> str:
    """The cross-lingual transfer table and the one statement it supports (how many transfers beat the majority)."""
    if transfer.empty:
        return ""
    shown = transfer.assign(**{
        "English probe": [f"{r.english_probe:.1f} [{r.english_low:.1f}, {r.english_high:.1f}]"
                          for r in transfer.itertuples()],
        "own probe": [f"{r.own_probe:.1f} [{r.own_low:.1f}, {r.own_high:.1f}]" for r in transfer.itertuples()],
        "ratio": transfer["ratio"].map(lambda v: "–" if pd.isna(v) else f"{v:.2f}")})
    above = transfer[transfer["english_low"] > transfer["majority"]]
    return ("<p>The same task across languages (semantic encoder): a probe trained on the English version of a task, "
            "tested on the other language's version (the labels both share), beside the probe trained on that "
            "language itself; ratio: the share of the own probe's lead over the majority that the English probe "
            f"keeps. The English probe's CI is above the majority in {len(above)} of {len(transfer)} (language, "
            "task) cells.</p>" + html_table(shown[["task", "language", "labels", "majority", "English probe",
                                                   "own probe", "ratio"]]))
