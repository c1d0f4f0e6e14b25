"""The reproduction report: each table and figure of the BGT paper as a section that sets our shipped models'
numbers (:mod:`workbench.reports.paper`) beside the paper's, with the pattern checks that matter at our scale.

:func:`reproduce` writes ``reports/reproduction.html``, the numbers as CSV and the figures. Our numbers come from
the shipped models' cards (which the tests recompute from the weights) or, with ``recompute=True``, are measured
afresh."""
from __future__ import annotations

import html
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..cache import cached
from ..checks import WorkbenchError, check_sizes
from ..data.corpora import language_of, load_splits
from ..data.eval_sets import STS_DATASETS, TATOEBA_CODES
from ..evaluation import compare_sts, evaluate
from ..evaluation.sts import evaluate_sts, years_task
from ..models.kinds import build_model
from ..models.folder import load
from ..models.pins import card, shipped
from ..paths import REPO_ROOT, atomic_write
from ..probing.build import default_sizes
from ..probing.erase import erasure_effects
from ..style_transfer.generation import GUIDANCE, latent_ablation, transfer_table
from ..zoo.cards import CARD_SIZES, TABLE3_MODELS, measure, summarise_views
from .demo import why_shown
from .distance import METRIC, gap_correlations, language_distances, missing_features
from .figures import gap_figure, pair_figure, table3_figure
from .languages import own_language_section, partner_section
from .pages import export_figures, figure_html, html_check, html_table, page, spreadsheet_safe
from .paper import (
    FIGURE3_MODELS, GPU_FIGURE3_MODELS, ROLES, TRACK_PAIR, figure3_differences, figure3_orderings, language_gaps,
    our_table3, pair_languages, paper_table, side_by_side, sts_rows, table2_expected, table3_cells, table3_majority,
    tatoeba_table, training_budgets, unequal_budgets, verdict, vocabulary_overlap)


def _uriel_section(gaps: pd.DataFrame, paper_gaps: pd.DataFrame, figures: dict, data: dict) -> str:
    """The language-distance section's measured half: URIEL+ distances, the gaps against syntactic distance and
    their rank correlations (ours and the paper's numbers)."""
    distances = language_distances(list(dict.fromkeys(gaps["language"])))
    syntactic = distances[distances["kind"] == "syntactic"].set_index("language")["distance"]
    figures["language_gap_syntactic"] = (gap_figure(gaps.assign(distance=gaps["language"].map(syntactic)),
                                                    "Ours: semantic − en, against URIEL+ syntactic distance",
                                                    x="distance"), gaps)
    data["uriel_distances"] = distances.pivot(index="language", columns="kind", values="distance").reset_index()
    rho = gap_correlations(gaps, distances).merge(gap_correlations(paper_gaps, distances), on=["task", "kind"],
                                                  how="left", suffixes=("", "_paper"))  # n: ours with own pairs
    data["gap_correlations"] = rho
    lacking = missing_features("ar") if "ar" in syntactic.index else []
    return ("<h3>Measured distance (URIEL+)</h3><p>Typological distances from English (the <code>urielplus</code> "
            f"knowledge base; {html.escape(METRIC)}). Standard Arabic (<code>arb</code>) lacks {len(lacking)} of "
            f"103 syntactic features ({html.escape(', '.join(lacking[:8]))}{', …' if len(lacking) > 8 else ''}). "
            "Spearman's rho of each semantic − en gap with each distance, with its permutation p-value: "
            f"<b>{len(syntactic)} languages can show very little</b> (with five, the smallest two-sided p is 1/60; "
            f"{len(rho)} tests; beyond eight, the p-value is sampled).</p>"
            + "".join(df.to_html(index=False, float_format=lambda v: f"{v:.3f}", border=0)
                      for df in (data["uriel_distances"], rho)))


def _disentanglement_section(pairs: list[str], figures: dict, data: dict, years: Sequence[int], sizes: dict) -> str:
    """Per pair, for each shared view (BGT and BILINGUALTRANS semantic): language-ID accuracy (probed at
    ``sizes``), and what erasing language identity (LEACE) costs STS over ``years`` and Tatoeba."""
    frames, label = [], years_task(years)
    for pair in pairs:
        language = language_of(pair)
        encoders = [load(f"{m}-{pair}").encoder("semantic") for m in TABLE3_MODELS if f"{m}-{pair}" in shipped()]
        frames.append(erasure_effects(encoders, [f"language_id_en_{language}"], sizes=sizes, years=years,
                                      tatoeba=[language] if language in TATOEBA_CODES else [],  # where it has
                                      show_progress=False).assign(pair=pair))  # the language
    effects = data["disentanglement"] = pd.concat(frames, ignore_index=True)
    figures["language_id"] = (pair_figure(effects, "language_id", "before", "Language identity of the shared "
                                          "encoders (50 = language-agnostic)", "accuracy × 100"), effects)
    figures["erase_language_sts"] = (pair_figure(effects, "STS", "change", f"{label} change when language "
                                                 "identity is erased (LEACE)", "Pearson × 100 change"), effects)
    return ("<h2>Disentanglement — is meaning separated from language?</h2><p>Per pair, each shared encoder's "
            "accuracy on <code>language_id_en_xx</code> (one sentence of each held-out translation pair; 50% = no "
            "linearly readable language), then the same encoder with language identity erased by LEACE: if "
            "meaning is language-free, STS barely moves and the Tatoeba error does not rise. Probing at "
            f"{sizes['train']}/{sizes['valid']}/{sizes['test']}.</p>"
            + effects.pivot_table(index=["pair", "encoder"], columns="metric", values=["before", "after"],
                                  sort=False).to_html(float_format=lambda v: f"{v:.2f}", border=0, na_rep="–"))


def _introduction(cards: dict) -> str:
    """What our models are and how far they are from the paper's."""
    bgt, sizes = cards["bgt-en-fr"], cards["bgt-en-fr"].get("probing_sizes", CARD_SIZES)  # recomputed: its own
    return (f"<p>Our models: {len(cards)} shipped in <code>trained/</code> ({html.escape(bgt['preset'] or '')} "
            f"preset; {html.escape(bgt['training']['hardware'])}; see each <code>card.md</code>). The paper trained "
            f"on 1M (Figure 3) or full OpenSubtitles (Table 3) pairs with 20k updates of 25k tokens; ours saw "
            f"{bgt['training']['pairs_seen']:,} pairs. Compare patterns, not absolute values. Probing at "
            f"{sizes['train']}/{sizes['valid']}/{sizes['test']} sentences (the paper: "
            "100k/10k/10k); TreeDepth/TopConst are dependency-based analogues.</p>"
            + "".join(f"<p>{html.escape(why_shown(name))}</p>" for name in cards if name == f"bgt-{cards[name]['pair']}"))


def _random_init(model):
    """The semantic encoder of a network of ``model``'s configuration at initialisation (seed 0): Table 2's
    random row."""
    torch.manual_seed(0)
    return build_model(model.cfg.to_dict()).eval().encoder("semantic", tokenizer=model.tokenizer)


def _table2_section(bgt, cards: dict, data: dict, n_boot: int, years: tuple[int, ...]) -> str:
    """Table 2: STS by encoder of BGT en–fr, with a randomly initialised network of the same configuration (on
    ``years``)."""
    parts = []
    random_encoder = _random_init(bgt)
    rows = pd.concat([evaluate_sts(cached(random_encoder), years), evaluate(random_encoder, "hard_sts")])
    random_view = summarise_views(rows.assign(view="semantic", fingerprint=random_encoder.fingerprint))["semantic"]
    table2 = pd.DataFrame([{"encoder": enc, **view["sts"], "hard+": view["hard_sts"]["hard+"],
                            "hard-": view["hard_sts"]["hard-"]}
                           for enc, view in (("random", random_view), ("en", cards["bgt-en-fr"]["views"]["en"]),
                                             ("semantic", cards["bgt-en-fr"]["views"]["semantic"]))])
    label = years_task(years)
    data["table2"] = side_by_side(table2.drop(columns=["STS12-16"]), paper_table("table2"), ["encoder"])
    sem, en, rnd = (table2.set_index("encoder").loc[e, label] for e in ("semantic", "en", "random"))
    parts.append("<h2>Table 2 — STS by encoder of BGT (en–fr)</h2>" + html_table(data["table2"]) + "<ul>"
                 + html_check(sem > en, f"semantic encoder above the English language encoder on {label} "
                                    f"({sem:.1f} vs {en:.1f}; paper on STS12–16: 73.1 vs 52.8)")
                 + html_check(sem > rnd, f"semantic encoder above a random-init encoder on {label} ({sem:.1f} vs "
                                     f"{rnd:.1f}; paper on STS12–16: 73.1 vs 48.1)") + "</ul>")
    orderings = data["table2_orderings"] = _table2_orderings(cards, n_boot, years)
    counts = orderings["verdict"].value_counts()
    parts.append(f"<h3>Table 2's orderings in every pair</h3><p>{label} of each pair's BGT semantic encoder minus "
                 "its English language encoder, and minus a randomly initialised network of the same configuration "
                 f"(paired bootstrap, {n_boot} resamples), against the paper's en–fr differences: "
                 f"<b>{counts.get('reproduced', 0)} reproduced, {counts.get('reversed', 0)} reversed, "
                 f"{counts.get('within noise', 0)} within noise</b> of {len(orderings)}.</p>"
                 + orderings.to_html(index=False, border=0, float_format=lambda v: f"{v:.1f}"))
    return "".join(parts)


def _table2_orderings(cards: dict, n_boot: int, years: tuple[int, ...]) -> pd.DataFrame:
    """Per pair with a shipped BGT: semantic minus en, and semantic minus random init, on STS over ``years``."""
    expected = table2_expected()
    rows = []
    for lang in pair_languages(cards):
        model = load(f"bgt-en-{lang}")
        semantic = model.encoder("semantic")
        for other, name in ((model.encoder("en"), "en"), (_random_init(model), "random")):
            result = compare_sts(semantic, other, years, n_boot=n_boot).iloc[-1]  # the row of all the years
            theirs = expected["semantic"] - expected[name]
            rows.append({"pair": f"en-{lang}", "semantic minus": name, "paper (en-fr)": round(theirs, 1),
                         "ours": round(result["difference"], 1), "ci_low": round(result["ci_low"], 1),
                         "ci_high": round(result["ci_high"], 1),
                         "verdict": verdict(result["ci_low"], result["ci_high"], theirs)})
    return pd.DataFrame(rows)


def _table3_section(cards: dict, figures: dict, data: dict) -> tuple[str, pd.DataFrame]:
    """Table 3 (probing per language) and the share of cells whose winner matches the paper's."""
    parts = []
    ours = our_table3(cards)
    cells = table3_cells(ours)
    data["table3"] = ours
    data["table3_cells"] = cells
    fraction = cells["match"].mean() if len(cells) else float("nan")
    labelled = ours.assign(row=ours["lang"] + " / " + ours["role"].map(ROLES)).set_index("row")
    majority = table3_majority(ours).set_index(labelled.index).drop(columns=["lang", "role"])
    figures["table3"] = (table3_figure(labelled.drop(columns=["lang", "role"]), "Our Table 3 (× 100; colour: gain "
                                       "over the majority baseline)", majority), ours)
    parts.append(f"<h2>Table 3 — probing, per language</h2><p><b>Winner matches the paper in "
                 f"{cells['match'].sum()} of {len(cells)} cells ({100 * fraction:.0f}%; goal ≥ 80%).</b> "
                 "A cell is one (language, task); its winner is the encoder with the highest number among those "
                 f"the paper reports for it. {int(cells['tie'].sum())} of our probing winners lead by less than the "
                 "noise of two accuracies on the test set (<i>tie</i>: a 95% interval, conservative), so their "
                 "order is not a finding.</p>" + html_table(side_by_side(ours, paper_table("table3"), ["lang", "role"]))
                 + "<h3>Cell by cell</h3>" + cells.to_html(index=False, border=0,
                                                           formatters={"match": lambda m: "✔" if m else "✘",
                                                                       "tie": lambda t: "tie" if t else ""}))
    by_task = cells.groupby("task")["match"].mean().mul(100).round(0)
    parts.append("<p>Matched cells per task (%): " + ", ".join(f"{t} {v:.0f}" for t, v in by_task.items())
                 + ". Reasons a cell can disagree here: the paper's own margins are often a point or two "
                   "(PunctFirst, Depth), within our probes' confidence intervals at 1,000 test sentences; "
                   "Depth/TopConst are dependency-based analogues; and our models are small and briefly trained "
                   "(see the cards), far from the paper's 20k updates of 25k tokens.</p>")
    return "".join(parts), ours


def _distance_section(ours: pd.DataFrame, cards: dict, figures: dict, data: dict) -> str:
    """The semantic − language-encoder gaps against the languages' distance from English."""
    parts = []
    distance = {lang: vocabulary_overlap(f"en-{lang}") for lang in pair_languages(cards)}
    gaps = language_gaps(ours, distance)
    paper_gaps = language_gaps(paper_table("table3"), distance)
    figures["language_gap"] = (gap_figure(gaps, "Ours: semantic − en language encoder"), gaps)
    figures["language_gap_paper"] = (gap_figure(paper_gaps, "Paper: semantic − en language encoder"), paper_gaps)
    data["training_budgets"] = training_budgets(cards)
    unequal = unequal_budgets(data["training_budgets"])
    order = ", ".join(f"{lang} ({distance[lang]:.2f})" for lang in sorted(distance, key=distance.get, reverse=True))
    word = gaps[gaps["task"] == "Word"].set_index("language")["gap"]
    trend = word.corr(pd.Series(distance)) if len(word) > 2 else float("nan")
    paper_word = paper_gaps[paper_gaps["task"] == "Word"].set_index("language")["gap"]
    paper_trend = paper_word.corr(pd.Series(distance)) if len(paper_word) > 2 else float("nan")
    parts.append("<h2>Language distance</h2><p>Distance measure: Jaccard overlap of the sentencepiece pieces "
                 f"English and the other language use (closest first): {html.escape(order)}. The paper ties "
                 "WordContent to shared vocabulary: the semantic encoder's WordContent advantage over the "
                 "language encoder should shrink (turn negative) as the languages share fewer pieces.</p><ul>"
                 + html_check(np.sign(trend) == np.sign(paper_trend),
                          f"WordContent gap vs overlap: Pearson {trend:+.2f} ours, {paper_trend:+.2f} with the "
                          "paper's numbers on our distance order")
                 + html_check(not unequal, "every pair's models ran the same number of updates on the same hardware "
                          "(each shipped at its best STS-B dev checkpoint)" if not unequal else
                          "the pairs' models ran different numbers of updates or on different hardware, so "
                          "differences between pairs are partly training, not distance: "
                          + "; ".join(f"{m} {u}" for m, u in unequal.items()))
                 + "</ul>")
    parts.append(_uriel_section(gaps, paper_gaps, figures, data))
    parts.append(own_language_section(cards, figures, data))
    parts.append(partner_section(cards, data))
    return "".join(parts)


def _figure3_section(cards: dict, data: dict, n_boot: int, years: tuple[int, ...]) -> str:
    """Figure 3: STS and Hard STS of the en–fr models, and each of the paper's orderings judged by a paired
    bootstrap of BGT against the model."""
    fig3 = sts_rows(cards, FIGURE3_MODELS)
    data["figure3"] = side_by_side(fig3, paper_table("figure3"), ["model"])
    both = fig3.merge(paper_table("figure3"), on="model", suffixes=("", "_paper"))
    rank = both["STS12-16"].corr(both["STS12-16_paper"], method="spearman") if len(both) > 2 else float("nan")
    orderings = data["figure3_orderings"] = figure3_orderings(figure3_differences(cards, n_boot, years))
    counts = orderings["verdict"].value_counts()
    budgets = {label: cards[name]["training"].get("updates") for label, name in FIGURE3_MODELS.items()
               if name in cards}
    return ("<h2>Figure 3 — STS and Hard STS, en–fr models</h2><p>The row <i>nmt / LASER</i> is our "
            "multilingual NMT encoder (all five pairs) beside the paper's LASER, its much larger descendant. "
            "Updates per model: " + html.escape(", ".join(f"{k} {v}" for k, v in budgets.items())) + ".</p>"
            + html_table(data["figure3"])
            + "<ul>" + html_check(rank > 0.5, f"rank agreement of the models' STS averages with the paper: Spearman "
                              f"{rank:.2f} over {len(both)} models") + "</ul>"
            + "<h3>The paper's orderings, tested</h3><p>BGT minus each model (× 100) with a paired bootstrap 95% CI "
            f"({n_boot} resamples of the same sentence pairs for both encoders; STS over {years_task(years)}), beside "
            "the paper's difference (on STS12–16): "
            f"<b>{counts.get('reproduced', 0)} reproduced, {counts.get('reversed', 0)} reversed, "
            f"{counts.get('within noise', 0)} within noise</b> of {len(orderings)}.</p>"
            + orderings.to_html(index=False, border=0, float_format=lambda v: f"{v:.1f}")
            + _figure3_gpu_section(cards, data, n_boot, years))


def _figure3_gpu_section(cards: dict, data: dict, n_boot: int, years: tuple[int, ...]) -> str:
    """The GPU-trained en–fr pair (``small`` preset) beside SP: the same orderings at a scale nearer the paper's."""
    if not all(name in cards for name in GPU_FIGURE3_MODELS.values()):
        return ""
    rows = sts_rows(cards, GPU_FIGURE3_MODELS)
    hardware = {label: f"{cards[name]['training'].get('updates')} updates, "
                       f"{cards[name]['training'].get('train_seconds')} s on {cards[name]['training'].get('hardware')}"
                for label, name in GPU_FIGURE3_MODELS.items()}
    data["figure3_gpu"] = side_by_side(rows, paper_table("figure3"), ["model"])
    orderings = data["figure3_gpu_orderings"] = figure3_orderings(
        figure3_differences(cards, n_boot, years, GPU_FIGURE3_MODELS))
    return ("<h3>At GPU scale</h3><p>BGT and BILINGUALTRANS at the <i>small</i> preset (d = 512, 3 layers), "
            "trained for minutes on one GPU, beside the CPU's SP: " + html.escape(
                "; ".join(f"{label} ({GPU_FIGURE3_MODELS[label]}): {text}" for label, text in hardware.items()))
            + ".</p>" + html_table(data["figure3_gpu"])
            + orderings.to_html(index=False, border=0, float_format=lambda v: f"{v:.1f}"))


def _tatoeba_section(cards: dict, data: dict) -> str:
    """Tatoeba similarity search (Schwenk & Douze 2017's protocol) for every shipped model that has it."""
    parts = []
    data["tatoeba"] = tatoeba_table(cards)
    if len(data["tatoeba"]):
        parts.append("<h2>Tatoeba similarity search — error rate (%), both directions</h2><p>For each of "
                     "1,000 sentences, is its nearest neighbour (cosine) among the other language's 1,000 its "
                     "translation? The multilingual NMT reads all five languages with one encoder; the other "
                     "models read their own pair. Schwenk &amp; Douze (2017) report 0.9–1.2% average error for "
                     "their BiLSTM-max NMT encoder on the UN dev set (4,000 sentences, 6 languages, ~8M "
                     "training sentences per language) — another corpus, so a reference point, not a target. "
                     "Our training pairs exclude every LASER Tatoeba test sentence.</p>" + html_table(data["tatoeba"]))
    return "".join(parts)


def _figure4_section(cards: dict, data: dict) -> str:
    """Figure 4: STS17 with the pair's BGT and BILINGUALTRANS, and the NMT encoder that reads every track."""
    parts = []

    def sts17(name: str) -> pd.Series:
        result = evaluate(load(name).encoder("semantic"), "sts17")
        return result[result["metric"] == "pearson"].set_index("dataset")["value"]

    rows = []
    for model in ("bilingual_trans", "bgt"):
        rows.append({"model": model, **{track: sts17(f"{model}-{pair}").get(track, np.nan)
                                        for track, pair in TRACK_PAIR.items() if f"{model}-{pair}" in cards}})
    if "nmt-all" in cards:
        rows.append({"model": "nmt / LASER", **sts17("nmt-all").reindex(list(TRACK_PAIR)).to_dict()})
    data["figure4"] = side_by_side(pd.DataFrame(rows), paper_table("figure4"), ["model"])
    fig4 = pd.DataFrame(rows).set_index("model")
    wins = [t for t in TRACK_PAIR if t in fig4 and fig4.loc["bgt", t] >= fig4.loc["bilingual_trans", t]]
    parts.append("<h2>Figure 4 — SemEval 2017 (semantic encoder of the track's pair; the NMT's one encoder "
                 "reads all)</h2>"
                 + html_table(data["figure4"]) + "<ul>"
                 + html_check(len(wins) > fig4.shape[1] / 2, f"BGT ≥ BILINGUALTRANS on {len(wins)} of "
                          f"{fig4.shape[1]} tracks ({', '.join(wins)}; paper: all 5)") + "</ul>")
    return "".join(parts)


def transfer_evaluations(cards: dict) -> pd.DataFrame:
    """One row per transfer-evaluation measure, one column per shipped model whose card has one (bgt-en-fr
    first): ``value [low–high]`` for shares, the value for the KL in nats."""
    names = sorted((n for n, c in cards.items() if c.get("style_transfer")), key=lambda n: (n != "bgt-en-fr", n))
    columns = {name: {metric: f"{v[0]} [{v[1]}–{v[2]}]" if isinstance(v, list) else f"{v}"
                      for metric, v in cards[name]["style_transfer"].items()} for name in names}
    return pd.DataFrame(columns).rename_axis("metric").reset_index()


def _table4_section(bgt, cards: dict, transfer_examples: int, data: dict) -> str:
    """Table 4: style transfer with the en–fr BGT on held-out sentences, its transfer evaluation and the latent ablation."""
    parts = []
    test = [en for en, _ in load_splits("en-fr")["test"] if 4 <= len(en.split()) <= 12]
    rng = np.random.default_rng(0)
    picks = rng.choice(len(test), size=2 * transfer_examples, replace=False)
    sources, styles = [test[i] for i in picks[:transfer_examples]], [test[i] for i in picks[transfer_examples:]]
    table4 = transfer_table(bgt, pd.DataFrame({"source": sources, "style": styles}))  # decoded as the cards were
    data["style_transfer"] = table4
    kept, borrowed = table4["from_source"].str.len().gt(0).sum(), table4["from_style"].str.len().gt(0).sum()
    parts.append("<h2>Table 4 — style transfer (meaning from Source via z_sem, style via z_en; beam 5, re-ranked, "
                 f"style push {GUIDANCE:g}, the source read without its punctuation: docs/method.md#decoding)</h2>"
                 + table4.to_html(index=False, border=0) + "<ul>"
                 + html_check(kept > len(table4) / 2, f"{kept} of {len(table4)} outputs keep a content word of "
                                                  f"the source ({borrowed} take one from the style sentence)")
                 + "</ul>")
    scores = cards["bgt-en-fr"].get("style_transfer")
    if scores:  # measured on 200 held-out pairs when each model was exported (its card)
        evaluation = transfer_evaluations(cards)
        data["transfer_evaluation"] = evaluation
        closer = next(v[0] for m, v in scores.items() if m.startswith("closer_to_source"))
        parts.append("<h3>The transfer evaluation: 200 fixed held-out pairs, decoded as Table 4 (% of pairs, "
                     "bootstrap 95% CI; from the model cards, <code>workbench transfer --eval</code>), for every "
                     "shipped BGT with decoders</h3>" + evaluation.to_html(index=False, border=0, na_rep="–") + "<ul>"
                     + html_check(closer >= 60, f"bgt-en-fr's outputs closer in meaning to the source than to the "
                                            f"style sentence: {closer}% (target ≥ 60%)")
                     + html_check(scores["form_follows_style"][0] >= 60, f"their form (length bin, punctuation, first "
                              f"word, sentence type, negation, person) follows the style sentence: {scores['form_follows_style'][0]}% (≥ 60%)")
                     + "</ul>")
    # Why it works or not: which latent carries each source's content (the prior mean stands in for the other).
    ablation = latent_ablation(bgt, sources, beam=5)
    data["latent_ablation"] = ablation
    keeps = ablation.assign(k=ablation["kept"].str.len().gt(0)).groupby("latents")["k"].sum()
    parts.append("<h3>Which latent carries the content? Each source decoded from its own latents, one of them "
                 "set to the prior mean (zero)</h3>"
                 + ablation.to_html(index=False, border=0) + "<ul>"
                 + html_check(keeps["semantic only"] > keeps["language only"],
                          f"z_sem alone keeps a content word of the sentence in {keeps['semantic only']} of "
                          f"{len(sources)}, z_en alone in {keeps['language only']} (style transfer needs the "
                          "content in z_sem, not in z_en)")
                 + "</ul>")
    return "".join(parts)


def reproduce(out: str | Path = REPO_ROOT / "reports" / "reproduction.html", recompute: bool = False,
              transfer_examples: int = 5, show_progress: bool = True, disentangle: tuple[str, ...] | None = None,
              n_boot: int = 1000, years: Sequence[int] = tuple(STS_DATASETS), static: bool = True,
              sizes: dict[str, int] | None = None) -> Path:
    """Write the reproduction report (HTML + the numbers as CSV, figures as PNG/PDF where Chromium exists and
    ``static``: drawing them takes a browser and ~20 s).
    ``disentangle``: the pairs of the disentanglement section (default: every pair with both shared models;
    it probes and re-evaluates, a minute or two per pair on 2 cores; ``()`` leaves it out). ``n_boot``: the
    resamples of each paired bootstrap that tests one of the paper's orderings (Table 2, Figure 3). ``years``:
    the STS years those bootstraps, Table 2's random-init row and the disentanglement's STS encode (default all
    five, the paper's STS12–16; each ordering judged against the paper's STS12–16 difference). Encoding them is
    most of the report's time: STS16 alone (a tenth of the pairs) is a quick look. ``sizes``: of the probes it
    fits itself (the disentanglement; every view with ``recompute``), by default every probe's (the cards')."""
    start, out = time.perf_counter(), Path(out)
    years, sizes = tuple(sorted(set(years))), check_sizes(default_sizes() if sizes is None else sizes)
    if not years or not set(years) <= set(STS_DATASETS):
        raise WorkbenchError(f"years: one or more of {', '.join(map(str, STS_DATASETS))}; got {list(years)}")
    names = shipped()
    if "bgt-en-fr" not in names:
        raise WorkbenchError(f"the reproduction needs the shipped bgt-en-fr model; shipped: {', '.join(names) or 'none'}")
    cards = {name: card(name) for name in names}
    for name in names if recompute else ():  # measured again, at ``sizes``
        cards[name].update(views=summarise_views(measure(load(name), sizes=sizes, show_progress=show_progress)),
                           probing_sizes=sizes)
    figures, data = {}, {}
    bgt = load("bgt-en-fr")
    table3, ours = _table3_section(cards, figures, data)
    if disentangle is None:
        disentangle = tuple(p for p in (f"en-{lang}" for lang in pair_languages(cards))
                            if all(f"{m}-{p}" in cards for m in TABLE3_MODELS))
    sections = [_introduction(cards), _table2_section(bgt, cards, data, n_boot, years), table3,
                _distance_section(ours, cards, figures, data),
                _disentanglement_section(list(disentangle), figures, data, years, sizes) if disentangle else "",
                _figure3_section(cards, data, n_boot, years), _tatoeba_section(cards, data),
                _figure4_section(cards, data), _table4_section(bgt, cards, transfer_examples, data)]
    problems = export_figures(figures, out.parent, stem=out.stem, formats=("png", "pdf") if static else ())
    for name, frame in data.items():
        spreadsheet_safe(frame).to_csv(out.parent / f"{out.stem}-{name}.csv", index=False)
    warnings = "".join(f'<p class="warn">{html.escape(p)}</p>' for p in problems)
    sections.insert(1, warnings + figure_html({k: f for k, (f, _) in figures.items()}))
    sections.append(f"<p>Built in {time.perf_counter() - start:.0f} s by <code>workbench reproduce</code>.</p>")
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, page("BGT reproduction: our shipped models vs the paper", "".join(sections)))
    return out
