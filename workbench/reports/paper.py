"""The BGT paper's numbers (Tables 2-4, Figures 3 and 4) and ours in the same shape: Table 3 from the shipped
models' cards, the cells whose winner we match, the semantic − language gaps per language, the training budgets
and Tatoeba. Pandas tables, no presentation: :mod:`workbench.reports.reproduction` turns them into the report.
"""
from __future__ import annotations

import io
import logging

import numpy as np
import pandas as pd

from ..checks import WorkbenchError
from ..data.corpora import known_pairs, load_splits
from ..data.languages import LANGUAGES
from ..data.eval_sets import STS_DATASETS
from ..data.tokenizer import Tokenizer
from ..evaluation import compare_hard_sts, compare_sts
from ..evaluation.sts import years_task
from ..models.folder import load
from ..models.pins import card, shipped
from ..paths import trained_dir
from ..probing.build import shipped_manifest
from ..progress import progress_bar
from ..zoo.cards import CARD_SIZES, TABLE3_MODELS

log = logging.getLogger(__name__)

TASKS = {"sts": "STS", "subj_num": "SubjNum", "obj_num": "ObjNum", "tree_depth": "Depth", "top_const": "TopConst",
         "word_content": "Word", "length": "Len", "punct_num": "PunctNum", "punct_first": "PunctFirst",
         "gender": "Gender"}
ROLES = {"bilingual_trans": "BILINGUALTRANS", "semantic": "Semantic", "en": "en Language", "xx": "xx Language"}

# Table 3 (OpenSubtitles models per language; STS = average STS12-16); "xx" is the fr/es language encoder.
_TABLE3 = """lang,role,STS,SubjNum,ObjNum,Depth,TopConst,Word,Len,PunctNum,PunctFirst,Gender
fr,bilingual_trans,71.2,78.0,76.5,28.2,65.9,80.2,74.0,56.9,88.3,53.0
fr,semantic,72.4,84.6,80.9,29.7,70.5,77.4,73.0,60.7,87.9,52.6
fr,en,56.8,75.2,72.0,28.0,63.6,65.4,80.2,65.3,92.2,
fr,xx,,,,,,,,,,56.5
es,bilingual_trans,70.5,84.5,82.1,29.7,68.5,79.2,77.7,63.4,90.1,54.3
es,semantic,72.1,85.7,83.6,32.5,71.0,77.3,76.7,63.1,89.9,52.6
es,en,55.8,75.7,73.7,29.1,63.9,63.3,80.2,64.2,92.7,
es,xx,,,,,,,,,,54.7
ar,bilingual_trans,70.2,77.6,74.5,28.1,67.0,77.5,72.3,57.5,89.0,
ar,semantic,70.8,81.9,80.8,32.1,71.7,71.9,73.3,61.8,88.5,
ar,en,58.9,76.2,73.1,28.4,60.7,71.2,79.8,63.4,92.4,
tr,bilingual_trans,70.7,78.5,74.9,28.1,60.2,78.4,72.1,54.8,87.3,
tr,semantic,72.3,81.7,80.2,30.6,66.0,75.2,72.4,59.3,86.7,
tr,en,57.8,77.3,74.4,28.3,63.1,67.1,79.7,67.0,92.5,
ja,bilingual_trans,71.0,66.4,64.6,25.4,54.1,76.0,67.6,53.8,87.8,
ja,semantic,71.9,68.0,66.8,27.5,58.9,70.1,68.7,52.9,86.6,
ja,en,60.6,77.6,76.4,28.0,64.6,70.0,80.4,62.8,92.0,
"""
# Figure 3 (en-fr OpenSubtitles + Gigaword, 1M pairs): STS per year, average, Hard STS. The paper's LASER row
# stands beside our multilingual NMT encoder (its seed, Schwenk & Douze 2017).
_FIGURE3 = """model,STS12,STS13,STS14,STS15,STS16,STS12-16,hard+,hard-,Hard avg
nmt / LASER,63.1,47.0,67.7,74.9,71.9,64.9,18.1,23.8,20.9
sp,68.4,60.3,75.1,78.7,76.8,71.9,19.1,29.8,24.5
bilstm,67.9,56.4,74.5,78.2,75.9,70.6,18.5,23.2,20.9
english_ae,60.2,52.7,68.6,74.0,73.2,65.7,15.7,36.0,25.9
english_vae,59.5,54.0,67.3,74.6,74.1,65.9,16.8,42.7,29.8
english_trans,66.5,60.7,72.9,78.1,78.3,71.3,18.0,47.2,32.6
bilingual_trans,67.1,61.0,73.3,78.0,77.8,71.4,20.0,48.2,34.1
bgt_no_langvars,68.3,61.3,74.5,79.0,78.5,72.3,24.1,46.8,35.5
bgt_no_prior,67.6,59.8,74.1,78.4,77.9,71.6,17.9,45.5,31.7
bgt,68.9,62.2,75.9,79.4,79.3,73.1,22.5,46.6,34.6
"""
# Table 2: STS by encoder of BGT (en-fr).
_TABLE2 = """encoder,STS12,STS13,STS14,STS15,STS16,hard+,hard-
random,51.4,34.6,52.7,52.3,49.7,4.8,17.9
en,44.4,41.7,53.8,62.4,61.7,15.3,26.5
semantic,68.9,62.2,75.9,79.4,79.3,22.5,46.6
"""
# Figure 4: SemEval 2017 STS (the model of the matching pair reads each track).
_FIGURE4 = """model,es-es,ar-ar,en-es,en-ar,en-tr
nmt / LASER,79.7,69.3,59.7,65.5,72.0
bilingual_trans,83.4,72.6,64.1,37.6,59.1
bgt_no_langvars,81.7,72.8,72.6,73.4,74.8
bgt_no_prior,84.5,73.2,68.0,66.5,70.9
bgt,85.7,74.9,75.6,73.5,74.9
"""
TRACK_PAIR = {"es-es": "en-es", "en-es": "en-es", "ar-ar": "en-ar", "en-ar": "en-ar", "en-tr": "en-tr"}


def paper_table(name: str) -> pd.DataFrame:
    """One of the paper's tables: ``"table2"``, ``"table3"``, ``"figure3"``, ``"figure4"``."""
    text = {"table2": _TABLE2, "table3": _TABLE3, "figure3": _FIGURE3, "figure4": _FIGURE4}
    if name not in text:
        raise WorkbenchError(f"unknown paper table {name!r}; valid: {', '.join(text)}")
    return pd.read_csv(io.StringIO(text[name]))


def pair_languages(cards: dict[str, dict] | None = None) -> list[str]:
    """The other language of every pair whose BGT is among the models as ``bgt-en-XX`` (its card's pair): the
    shipped pairs' in their order, then your own pairs' by code — a pair registered from your bitext joins the
    language-distance tables and figures once its BGT is exported under that name (``workbench models export RUN
    --name bgt-en-XX``). An own pair whose corpus is not registered here is left out, with a warning: its
    vocabulary overlap is measured on that corpus."""
    cards = cards if cards is not None else {name: card(name) for name in shipped()}
    bgts = {name.removeprefix("bgt-en-") for name, info in cards.items()
            if name.startswith("bgt-en-") and info.get("model") == "bgt" and info.get("pair") == name[4:]}
    own, known = sorted(bgts - set(LANGUAGES)), known_pairs()
    lacking = tuple(lang for lang in own if f"en-{lang}" not in known)
    if lacking and lacking not in _SAID:  # once per process: a report asks many times
        _SAID.add(lacking)
        log.warning("left out of the language tables: %s (no corpus of the pair here; `workbench data add-pair "
                    "en-XX --corpus FILE` registers one)", ", ".join(f"bgt-en-{lang}" for lang in lacking))
    return [lang for lang in LANGUAGES if lang in bgts] + [lang for lang in own if lang not in lacking]


_SAID: set[tuple[str, ...]] = set()


def pairs_without_english(cards: dict[str, dict] | None = None) -> list[str]:
    """Every pair of two other languages (``fr-es``) whose BGT is among the models as ``bgt-XX-YY`` (its card's
    pair), by name."""
    cards = cards if cards is not None else {name: card(name) for name in shipped()}
    return sorted(info["pair"] for name, info in cards.items()
                  if info.get("model") == "bgt" and not str(info.get("pair", "en-")).startswith(("en-", "all"))
                  and name == f"bgt-{info['pair']}")


def _view(lang: str, role: str) -> tuple[str, str]:
    """(shipped model, view) that plays ``role`` in Table 3 for ``lang``."""
    return {"bilingual_trans": (f"bilingual_trans-en-{lang}", "semantic"), "semantic": (f"bgt-en-{lang}", "semantic"),
            "en": (f"bgt-en-{lang}", "en"), "xx": (f"bgt-en-{lang}", lang)}[role]


def our_table3(cards: dict[str, dict] | None = None) -> pd.DataFrame:
    """Our Table 3 in the paper's layout (× 100), from the shipped models' cards; cells the paper leaves
    empty stay empty, and languages without shipped models are left out. Your own pairs (:func:`pair_languages`)
    follow the paper's five with the English-side rows (BILINGUALTRANS where one is exported, semantic, en)."""
    cards = cards if cards is not None else {name: card(name) for name in shipped()}
    paper = paper_table("table3")
    own = [{"lang": lang, "role": role, "own": True} for lang in pair_languages(cards)
           if lang not in set(paper["lang"]) for role in ("bilingual_trans", "semantic", "en")]
    rows = []
    for cell in [*paper.to_dict("records"), *own]:
        model, view = _view(cell["lang"], cell["role"])
        if model not in cards:
            continue
        entry = cards[model]["views"].get(view, {})
        row = {"lang": cell["lang"], "role": cell["role"]}
        for task, column in TASKS.items():
            if (task == "gender") if cell.get("own") else pd.isna(cell[column]):  # own pairs: no Gender
                row[column] = np.nan
            elif task == "sts":
                row[column] = entry.get("sts", {}).get("STS12-16", np.nan)
            else:
                key = f"gender_{cell['lang']}" if task == "gender" else task
                row[column] = entry.get("probing", {}).get(key, np.nan)
        rows.append(row)
    return pd.DataFrame(rows, columns=paper.columns)


def table3_majority(ours: pd.DataFrame, sizes: dict[str, int] = CARD_SIZES) -> pd.DataFrame:
    """The majority baseline (× 100) of each probing cell of :func:`our_table3`'s frame, from the test splits'
    label counts the repository ships for the cards' sizes (NaN for STS, and where none is shipped)."""
    majority = ours.copy()
    for task, column in TASKS.items():
        for i, lang in ours["lang"].items():
            empty = task == "sts" or pd.isna(ours.loc[i, column])
            manifest = None if empty else shipped_manifest(f"gender_{lang}" if task == "gender" else task, sizes)
            counts = manifest["label_counts"]["te"] if manifest else {}
            majority.loc[i, column] = 100 * max(counts.values()) / sum(counts.values()) if counts else np.nan
    return majority


def table3_cells(ours: pd.DataFrame, n_test: int = CARD_SIZES["test"]) -> pd.DataFrame:
    """Per (language, task): the encoder with the highest number in the paper and in ours, and whether they
    agree. Gender compares the semantic, BILINGUALTRANS and fr/es language encoders; the rest the three
    English-reading ones. ``tie``: our winner leads the runner-up by less than the 95% interval of the
    difference of two accuracies on ``n_test`` sentences each (treated as independent, which overstates the
    noise of views scored on the same sentences: a conservative call; probing columns only)."""
    paper = paper_table("table3")
    cells = []
    for lang in ours["lang"].unique():
        for column in TASKS.values():
            mine = ours[(ours["lang"] == lang)].set_index("role")[column].dropna()
            theirs = paper[(paper["lang"] == lang)].set_index("role")[column].dropna()
            roles = mine.index.intersection(theirs.index)
            if len(roles) < 2:
                continue
            win_paper, win_ours = theirs[roles].idxmax(), mine[roles].idxmax()
            first, second = sorted(mine[roles] / 100, reverse=True)[:2]
            noise = 1.96 * np.sqrt((first * (1 - first) + second * (1 - second)) / n_test)
            cells.append({"lang": lang, "task": column, "paper_winner": ROLES[win_paper],
                          "our_winner": ROLES[win_ours], "match": win_paper == win_ours,
                          "tie": column != TASKS["sts"] and first - second < noise,
                          "paper": " / ".join(f"{theirs[r]:.1f}" for r in roles),
                          "ours": " / ".join(f"{mine[r]:.1f}" for r in roles),
                          "encoders": " / ".join(ROLES[r] for r in roles)})
    return pd.DataFrame(cells)


def vocabulary_overlap(pair: str, n_pairs: int = 5000) -> float:
    """Lexical/script closeness of the pair's two languages (English and the other in en-XX): the Jaccard overlap
    of the sentencepiece pieces each side uses on ``n_pairs`` training pairs (1 = same pieces, 0 = disjoint)."""
    tokenizer = Tokenizer(trained_dir() / f"bgt-{pair}" / "spm.model", tuple(pair.split("-")))
    pairs = load_splits(pair)["train"][:n_pairs]
    en = {p for ids in tokenizer.encode([e for e, _ in pairs]) for p in ids}
    xx = {p for ids in tokenizer.encode([x for _, x in pairs]) for p in ids}
    return len(en & xx) / len(en | xx)


def language_gaps(ours: pd.DataFrame, distance: dict[str, float]) -> pd.DataFrame:
    """Semantic minus English language encoder per (language, task), languages ordered from closest to
    English (highest vocabulary overlap) to farthest."""
    order = sorted(distance, key=distance.get, reverse=True)
    rows = []
    for lang in order:
        part = ours[ours["lang"] == lang].set_index("role")
        if not {"semantic", "en"} <= set(part.index):
            continue
        for column in TASKS.values():
            gap = part.loc["semantic", column] - part.loc["en", column]
            if not pd.isna(gap):
                rows.append({"language": lang, "overlap": distance[lang], "task": column, "gap": gap})
    return pd.DataFrame(rows)


def training_budgets(cards: dict[str, dict] | None = None) -> pd.DataFrame:
    """Training of each language pair's Table 3 models (from their cards): one row per shipped model with
    ``model``, ``pair``, ``run_updates`` (the run's length: its budget), ``updates`` (the checkpoint shipped, the
    best STS-B dev of the run), ``pairs_seen``, ``train_seconds`` and ``hardware``. Differences between pairs are
    only about language distance where a model had the same budget, on the same hardware, for every pair."""
    cards = cards if cards is not None else {name: card(name) for name in shipped()}
    columns = ["model", "pair", "run_updates", "updates", "pairs_seen", "train_seconds", "hardware"]
    rows = [{"model": model, "pair": f"en-{lang}", **{key: cards[name]["training"].get(key) for key in columns[3:]},
             "run_updates": cards[name]["training"].get("run_updates", cards[name]["training"].get("updates"))}
            for model in TABLE3_MODELS for lang in pair_languages(cards) if (name := f"{model}-en-{lang}") in cards]
    return pd.DataFrame(rows, columns=columns)


SAME_BUDGET = 0.05  # run lengths within 5% of the longest are one budget (a run stopped at the end of an epoch)


def unequal_budgets(budgets: pd.DataFrame) -> dict[str, str]:
    """For each model whose pairs' runs differ in length (by more than :data:`SAME_BUDGET`) or in hardware:
    ``"fr 4,400 · es 3,200 …"`` (updates run), each pair's hardware added where the hardware differs."""
    unequal = {}
    for model, part in budgets.groupby("model", sort=False):
        lengths, hardware = part["run_updates"].astype(float), part["hardware"].fillna("unknown hardware")
        if lengths.min() < (1 - SAME_BUDGET) * lengths.max() or hardware.nunique() > 1:
            unequal[model] = " · ".join(
                f"{pair.split('-')[1]} {int(n):,}" + (f" on {where}" if hardware.nunique() > 1 else "")
                for pair, n, where in zip(part["pair"], part["run_updates"], hardware))
    return unequal


def sts_rows(cards: dict[str, dict], model_names: dict[str, str]) -> pd.DataFrame:
    """Figure-3-shaped rows (STS per year, average, Hard STS) for the semantic views of the named models."""
    rows = []
    for label, name in model_names.items():
        if name not in cards:
            continue
        view = cards[name]["views"]["semantic"]
        rows.append({"model": label, **view["sts"], "hard+": view["hard_sts"]["hard+"],
                     "hard-": view["hard_sts"]["hard-"], "Hard avg": view["hard_sts"]["avg"]})
    return pd.DataFrame(rows)


def verdict(ci_low: float, ci_high: float, paper_difference: float) -> str:
    """A paper's ordering judged by our CI of the same difference: *reproduced* when the CI excludes 0 on the
    paper's side, *reversed* when it excludes 0 on the other, *within noise* when it holds 0."""
    if ci_low <= 0 <= ci_high:
        return "within noise"
    return "reproduced" if (ci_low > 0) == (paper_difference > 0) else "reversed"


def table2_expected() -> dict[str, float]:
    """The paper's Table 2 STS12–16 averages (en–fr): semantic, en and random."""
    table = paper_table("table2").set_index("encoder")
    return table[[f"STS{y}" for y in range(12, 17)]].mean(axis=1).to_dict()


FIGURE3_MODELS = {m: f"{m}-en-fr" for m in ("sp", "bilstm", "english_ae", "english_vae", "english_trans",
                                             "bilingual_trans", "bgt_no_langvars", "bgt_no_prior", "bgt")}
FIGURE3_MODELS.update({"b-wmf": "wmf-en-fr", "nmt / LASER": "nmt-all"})
# The en–fr pair trained on one H100 at the small preset (minutes of GPU time), beside the CPU's best baseline
GPU_FIGURE3_MODELS = {"bgt": "bgt-small-en-fr", "bilingual_trans": "bilingual_trans-small-en-fr", "sp": "sp-en-fr"}


def figure3_differences(cards: dict, n_boot: int = 1000, years: tuple[int, ...] = tuple(STS_DATASETS),
                        models: dict[str, str] = FIGURE3_MODELS, show_progress: bool = False) -> pd.DataFrame:
    """BGT's semantic encoder (``models["bgt"]``) minus each other Figure 3 model's in ``models``, paired bootstrap
    on STS over ``years`` and on Hard STS (the same pairs for both, so the CI is of the difference itself). Rows
    ``model, measure, difference, ci_low, ci_high, …, fingerprints`` (the two encoders', as ``"bgt other"``)."""
    bgt = load(models["bgt"]).encoder("semantic")
    in_paper = set(paper_table("figure3")["model"])
    frames = []
    others = {label: name for label, name in models.items() if label != "bgt" and label in in_paper and name in cards}
    for label, name in progress_bar(others.items(), desc=f"BGT ({models['bgt']}) against", unit="model",
                                    disable=not show_progress):
        other = load(name).encoder("semantic")
        both = pd.concat([compare_sts(bgt, other, years, n_boot=n_boot), compare_hard_sts(bgt, other, n_boot=n_boot)])
        frames.append(both[both["task"].isin((years_task(years), "hard+", "hard-"))]
                      .rename(columns={"task": "measure"})
                      .assign(model=label, fingerprints=f"{bgt.fingerprint} {other.fingerprint}"))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["model", "measure", "difference", "ci_low", "ci_high"])


def figure3_orderings(differences: pd.DataFrame) -> pd.DataFrame:
    """Each of the paper's Figure 3 orderings (BGT against one model on one measure) judged by our paired
    bootstrap: ``differences`` has rows ``model, measure, difference, ci_low, ci_high`` (ours, BGT minus the
    model, × 100; an STS measure over fewer years than 2012–16 is judged against the paper's STS12–16); the
    verdict is :func:`verdict`'s."""
    paper = paper_table("figure3").set_index("model")
    rows = []
    for row in differences.itertuples():
        column = "STS12-16" if row.measure.startswith("STS") else row.measure  # STS over fewer years: theirs still
        if row.model not in paper.index or column not in paper.columns:
            continue
        theirs = float(paper.loc["bgt", column] - paper.loc[row.model, column])
        rows.append({"model": row.model, "measure": row.measure, "paper": round(theirs, 1),
                     "ours": round(row.difference, 1), "ci_low": round(row.ci_low, 1),
                     "ci_high": round(row.ci_high, 1), "verdict": verdict(row.ci_low, row.ci_high, theirs)})
    return pd.DataFrame(rows, columns=["model", "measure", "paper", "ours", "ci_low", "ci_high", "verdict"])


def pair_contrasts(n_boot: int = 1000, seed: int = 0, show_progress: bool = False) -> pd.DataFrame:
    """Table 3's two STS12–16 contrasts in each pair with a shipped BGT and BILINGUALTRANS, measured by a paired
    bootstrap over sentence pairs: BGT's semantic encoder minus its English language encoder (meaning apart from
    form) and minus BILINGUALTRANS's encoder. Rows ``pair, contrast, ours, ci_low, ci_high, paper, verdict,
    fingerprints`` (× 100; ``paper``: Table 3's difference for that language; ``fingerprints``: the two encoders'
    as ``"a b"``, so a record of these numbers can tell when a model changed)."""
    paper = paper_table("table3").set_index(["lang", "role"])["STS"]
    rows = []
    pairs = [lang for lang in LANGUAGES if {f"bgt-en-{lang}", f"bilingual_trans-en-{lang}"} <= set(shipped())]
    for lang in progress_bar(pairs, desc="pair contrasts", unit="pair", disable=not show_progress):
        names = (f"bgt-en-{lang}", f"bilingual_trans-en-{lang}")
        bgt, bilingual = load(names[0]), load(names[1])
        semantic = bgt.encoder("semantic")
        for contrast, other, role in (("semantic − English", bgt.encoder("en"), "en"),
                                      ("BGT − BILINGUALTRANS", bilingual.encoder("semantic"), "bilingual_trans")):
            result = compare_sts(semantic, other, n_boot=n_boot, seed=seed).iloc[-1]  # the STS12-16 row
            theirs = round(float(paper[lang, "semantic"] - paper[lang, role]), 1)
            rows.append({"pair": f"en-{lang}", "contrast": contrast, "ours": round(result["difference"], 1),
                         "ci_low": round(result["ci_low"], 1), "ci_high": round(result["ci_high"], 1),
                         "paper": theirs, "verdict": verdict(result["ci_low"], result["ci_high"], theirs),
                         "fingerprints": f"{semantic.fingerprint} {other.fingerprint}"})
    return pd.DataFrame(rows, columns=["pair", "contrast", "ours", "ci_low", "ci_high", "paper", "verdict",
                                       "fingerprints"])


def tatoeba_table(cards: dict[str, dict]) -> pd.DataFrame:
    """One row per shipped model with Tatoeba numbers for its semantic view: ``xx→en`` and ``en→xx`` error
    (%) per language, and their mean."""
    rows = []
    for name, info in sorted(cards.items()):
        errors = info["views"]["semantic"].get("tatoeba")
        if errors:
            row = {"model": name}
            for lang in LANGUAGES:
                if lang in errors:
                    row[f"{lang}→en"], row[f"en→{lang}"] = errors[lang]["xx->en"], errors[lang]["en->xx"]
            row["mean"] = float(np.mean([v for e in errors.values() for v in e.values()]))
            rows.append(row)
    df = pd.DataFrame(rows)
    pairs = [c for lang in LANGUAGES for c in (f"{lang}→en", f"en→{lang}") if c in df]
    return df[["model", *pairs, "mean"]] if rows else df


def retrieval_by_language(cards: dict[str, dict]) -> pd.DataFrame:
    """Tatoeba error (%, the mean of xx→en and en→xx; :func:`tatoeba_table`'s) of each pair's BGT semantic encoder
    as ``language, task, gap`` rows (task ``Tatoeba error``): beside :func:`language_gaps`' rows, so that one
    distance correlation (:func:`workbench.reports.distance.gap_correlations`) reads both. Lower is better, unlike a gap."""
    bgts = {f"bgt-en-{lang}": lang for lang in pair_languages(cards)}
    table = tatoeba_table({name: cards[name] for name in bgts})
    rows = [{"language": bgts[row.model], "task": "Tatoeba error", "gap": row.mean} for row in table.itertuples()]
    return pd.DataFrame(rows, columns=["language", "task", "gap"])


def side_by_side(ours: pd.DataFrame, paper: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Our columns each followed by the paper's ``<column> (paper)``, rows matched on ``keys``."""
    merged = ours.merge(paper, on=keys, how="left", suffixes=("", " (paper)"))
    columns = keys + [c for col in paper.columns if col not in keys for c in (col, f"{col} (paper)") if c in merged]
    return merged[columns]
