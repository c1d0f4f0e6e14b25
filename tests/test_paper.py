"""The paper comparison: the paper's tables, winner matching, language-distance ordering, the report."""
import pandas as pd
import pytest

from workbench.reports.paper import (
    language_gaps,
    our_table3,
    paper_table,
    figure3_orderings,
    retrieval_by_language,
    table2_expected,
    table3_cells,
    tatoeba_table,
    training_budgets,
    unequal_budgets,
    vocabulary_overlap,
)
from workbench.models.pins import card, shipped
from workbench.reports.reproduction import reproduce


def test_paper_tables_carry_the_spec_numbers():
    t3 = paper_table("table3").set_index(["lang", "role"])
    assert t3.loc[("fr", "semantic"), "SubjNum"] == 84.6 and t3.loc[("ja", "en"), "Len"] == 80.4
    assert t3.loc[("es", "xx"), "Gender"] == 54.7 and pd.isna(t3.loc[("ar", "bilingual_trans"), "Gender"])
    assert paper_table("figure3").set_index("model").loc["bgt", "STS12-16"] == 73.1
    assert paper_table("figure4").set_index("model").loc["bilingual_trans", "en-ar"] == 37.6
    with pytest.raises(Exception, match="valid: table2, table3"):
        paper_table("table9")


def test_winner_matching_counts_agreeing_cells():
    paper = paper_table("table3")
    cells = table3_cells(paper)
    assert cells["match"].all() and len(cells) == 5 * 9 + 2  # 9 English columns per language, Gender for fr/es
    swapped = paper.copy()  # exchange the semantic and English language encoders' numbers
    sem, en = swapped["role"] == "semantic", swapped["role"] == "en"
    swapped.loc[sem, "Len"], swapped.loc[en, "Len"] = paper.loc[en, "Len"].to_numpy(), paper.loc[sem, "Len"].to_numpy()
    cells = table3_cells(swapped).set_index(["lang", "task"])
    assert not cells.loc[("fr", "Len"), "match"] and cells.loc[("fr", "Len"), "our_winner"] == "Semantic"
    assert cells["match"].sum() == len(cells) - 5
    close = paper.copy()  # fr: 1 point apart is within the noise of 1000 test sentences, 10 points is not
    fr = close["lang"] == "fr"
    close.loc[fr & (close["role"] == "semantic"), ["Len", "Word"]] = [80.0, 80.0]
    close.loc[fr & (close["role"] == "en"), ["Len", "Word"]] = [79.0, 70.0]
    close.loc[fr & (close["role"] == "bilingual_trans"), ["Len", "Word"]] = [50.0, 50.0]
    cells = table3_cells(close, n_test=1000).set_index(["lang", "task"])
    assert cells.loc[("fr", "Len"), "tie"] and not cells.loc[("fr", "Word"), "tie"]
    assert not cells.loc[("fr", "STS"), "tie"]  # correlations: no tie rule
    assert not table3_cells(close, n_test=100_000).set_index(["lang", "task"]).loc[("fr", "Len"), "tie"]


def test_figure3_orderings_are_reproduced_reversed_or_within_noise():
    # the paper: BGT 73.1 vs english_ae 65.7 and bgt_no_prior 71.6 on STS12-16; hard- 46.6 vs 36.0
    ours = pd.DataFrame([("english_ae", "STS12-16", 5.0, 2.0, 8.0), ("bgt_no_prior", "STS12-16", -3.0, -5.0, -1.0),
                         ("english_ae", "hard-", 1.0, -2.0, 4.0), ("laser", "STS12-16", 1.0, 0.5, 1.5)],
                        columns=["model", "measure", "difference", "ci_low", "ci_high"])
    verdicts = figure3_orderings(ours).set_index(["model", "measure"])
    assert verdicts.loc[("english_ae", "STS12-16"), "verdict"] == "reproduced"
    assert verdicts.loc[("english_ae", "STS12-16"), "paper"] == pytest.approx(7.4)
    assert verdicts.loc[("bgt_no_prior", "STS12-16"), "verdict"] == "reversed"
    assert verdicts.loc[("english_ae", "hard-"), "verdict"] == "within noise"
    assert len(verdicts) == 3  # a model the paper's figure does not have is left out
    fewer_years = figure3_orderings(ours.replace({"STS12-16": "STS16"})).set_index(["model", "measure"])
    assert fewer_years.loc[("english_ae", "STS16"), "paper"] == pytest.approx(7.4)  # still the paper's STS12-16
    assert table2_expected() == pytest.approx({"random": 48.14, "en": 52.8, "semantic": 73.14})


def test_gaps_follow_the_distance_order():
    paper = paper_table("table3")
    gaps = language_gaps(paper, {"fr": 0.3, "ja": 0.9, "es": 0.1})
    assert list(dict.fromkeys(gaps["language"])) == ["ja", "fr", "es"]
    fr_word = gaps[(gaps.language == "fr") & (gaps.task == "Word")]["gap"].iloc[0]
    assert fr_word == pytest.approx(77.4 - 65.4)


def test_vocabulary_overlap_is_lower_for_a_different_script():
    fr, ja = vocabulary_overlap("en-fr", n_pairs=1000), vocabulary_overlap("en-ja", n_pairs=1000)
    assert 0 < ja < fr < 1


def test_our_table3_comes_from_the_cards():
    ours = our_table3().set_index(["lang", "role"])
    assert set(ours.index.get_level_values("lang")) == {"fr", "es", "ar", "tr", "ja"}
    fr = card("bgt-en-fr")["views"]
    assert ours.loc[("fr", "en"), "Len"] == fr["en"]["probing"]["length"]
    assert ours.loc[("fr", "semantic"), "STS"] == fr["semantic"]["sts"]["STS12-16"]
    assert ours.loc[("fr", "xx"), "Gender"] == fr["fr"]["probing"]["gender_fr"]


def test_tatoeba_table_comes_from_the_cards():
    table = tatoeba_table({name: card(name) for name in shipped()}).set_index("model")
    sp = card("sp-en-fr")["views"]["semantic"]["tatoeba"]["fr"]
    assert (table.loc["sp-en-fr", "fr→en"], table.loc["sp-en-fr", "en→fr"]) == (sp["xx->en"], sp["en->xx"])
    assert pd.isna(table.loc["sp-en-fr", "ja→en"]) and table.loc["sp-en-fr", "mean"] == pytest.approx(
        (sp["xx->en"] + sp["en->xx"]) / 2)
    assert table.loc["nmt-all"].notna().all()  # one encoder, every language, both directions
    assert "bgt-en-ja" in table.index and "english_ae-en-fr" not in table.index  # English-only: no Tatoeba


def test_retrieval_by_language_is_each_pairs_bgt_tatoeba_error_in_the_rows_of_a_gap():
    cards = {name: card(name) for name in shipped()}
    rows = retrieval_by_language(cards)
    table = tatoeba_table(cards).set_index("model")
    assert list(rows.columns) == ["language", "task", "gap"] and set(rows["task"]) == {"Tatoeba error"}
    assert sorted(rows["language"]) == sorted(lang for lang in ("fr", "es", "ar", "tr", "ja")
                                              if f"bgt-en-{lang}" in cards)
    for row in rows.itertuples():
        assert row.gap == pytest.approx(table.loc[f"bgt-en-{row.language}", "mean"])
    assert retrieval_by_language({"sp-en-fr": cards["sp-en-fr"]}).empty  # BGT's only


def test_own_language_results_are_each_pairs_bgt_from_its_card_and_gaps_read_semantic_minus_language():
    from workbench.reports import own_language_gaps, own_language_results

    cards = {name: card(name) for name in shipped()}
    results = own_language_results(cards)
    assert set(results["language"]) == {"fr", "es", "ar", "tr", "ja"} and set(results["view"]) == {
        "semantic", "language encoder"}
    stated = cards["bgt-en-tr"]["languages"]["tasks"]["person_tr"]
    row = results.set_index(["language", "task", "view"]).loc[("tr", "Person", "language encoder")]
    assert [row.accuracy, row.ci_low, row.ci_high, row.selectivity] == stated["tr"]
    assert {"Tense", "Politeness", "Length", "WordContent"} <= set(results[results.language == "ja"]["task"])
    gaps = own_language_gaps(results).set_index(["language", "task"])["gap"]
    assert gaps[("tr", "Person")] == pytest.approx(stated["semantic"][0] - stated["tr"][0])
    assert len(gaps) == len(results) // 2
    assert own_language_results({"sp-en-fr": cards["sp-en-fr"]}).empty  # BGTs' cards only
    from workbench.reports.languages import own_language_table
    printed = own_language_table(results).set_index(["task", "language"])  # what the reproduction shows
    assert len(printed) == len(gaps) and printed.loc[("Person", "tr"), "language encoder"] == (
        f"{stated['tr'][0]:.1f} [{stated['tr'][1]:.1f}, {stated['tr'][2]:.1f}]")
    assert printed.loc[("Person", "tr"), "semantic selectivity"] == stated["semantic"][3]
    assert list(printed.loc["Length"].index) == ["fr", "es", "ar", "tr", "ja"]  # a task's languages together
    from workbench.reports import own_language_transfer
    moved = own_language_transfer(cards).set_index(["language", "task"])
    entry = cards["bgt-en-ja"]["languages"]["across"]["tense_ja"]
    assert moved.loc[("ja", "Tense"), ["english_probe", "english_low", "english_high"]].tolist() == entry[
        "english probe"] and moved.loc[("ja", "Tense"), "labels"] == entry["labels"]
    assert len(moved) == sum(len(cards[f"bgt-en-{lang}"]["languages"]["across"]) for lang in "fr es ar tr ja".split())


def test_training_budgets_say_which_pairs_had_shorter_runs():
    cards = {name: card(name) for name in shipped()}
    budgets = training_budgets(cards)
    assert set(budgets["model"]) == {"bgt", "bilingual_trans"} and len(budgets) == 10
    fr = budgets.set_index(["model", "pair"]).loc[("bgt", "en-fr")]
    assert fr["updates"] == cards["bgt-en-fr"]["training"]["updates"] > 0
    assert fr["run_updates"] == cards["bgt-en-fr"]["training"]["run_updates"] >= fr["updates"]
    equal = {name: {**info, "training": {**info["training"], "updates": 100 + i, "run_updates": 200 + i % 3,
                                         "hardware": "CPU"}}
             for i, (name, info) in enumerate(cards.items())}  # best checkpoints differ, run lengths hardly
    assert unequal_budgets(training_budgets(equal)) == {}  # 200 vs 202 updates: one budget
    equal["bilingual_trans-en-fr"]["training"]["hardware"] = "1 × H100"
    assert unequal_budgets(training_budgets(equal))["bilingual_trans"].startswith("fr 20") and \
        "on 1 × H100 · es " in unequal_budgets(training_budgets(equal))["bilingual_trans"]
    equal["bilingual_trans-en-fr"]["training"]["hardware"] = "CPU"
    for info in equal.values():
        info["training"]["run_updates"] = 200
    equal["bgt-en-ja"]["training"]["run_updates"] = 7000
    assert unequal_budgets(training_budgets(equal)) == {"bgt": "fr 200 · es 200 · ar 200 · tr 200 · ja 7,000"}
    del equal["bgt-en-ja"]["training"]["run_updates"]  # a card without a run length: its checkpoint's updates
    assert unequal_budgets(training_budgets(equal))["bgt"].endswith(f"ja {equal['bgt-en-ja']['training']['updates']}")


@pytest.mark.slow
def test_reproduce_writes_the_report(tmp_path):
    # every section and branch on the smallest data: STS16 alone (a tenth of STS12-16's pairs) in the ~30 paired
    # bootstraps of ~30 encoders, 200 resamples (1,000 by default), one disentanglement pair probed at 600/200/200
    # (6,000/1,000/1,000 by default), two transfers; no PNG/PDF (export_figures draws them in tests/test_browser.py)
    path = reproduce(tmp_path / "reproduction.html", transfer_examples=2, show_progress=False, disentangle=("en-fr",),
                     n_boot=200, years=(2016,), static=False, sizes={"train": 600, "valid": 200, "test": 200})
    text = path.read_text()
    assert "the Tatoeba error does not rise. Probing at 600/200/200." in text  # its own probes at those sizes
    assert "Probing at 6000/1000/1000 sentences (the paper" in text  # the cards' numbers at the cards' sizes
    assert "STS over STS16), beside the paper's difference (on STS12–16)" in text
    for heading in ("Table 2", "Table 3", "Figure 3", "Figure 4", "Table 4", "Language distance", "Tatoeba"):
        assert heading in text
    assert "Winner matches the paper in" in text and 'id="fig-table3"' in text
    orderings = pd.read_csv(tmp_path / "reproduction-figure3_orderings.csv")
    assert set(orderings["verdict"]) <= {"reproduced", "reversed", "within noise"}
    assert len(orderings) == 3 * 9  # every model of the paper's Figure 3 but BGT itself (b-WMF is not in it)
    assert set(orderings["measure"]) == {"STS16", "hard+", "hard-"}
    assert "The paper's orderings, tested" in text
    gpu = pd.read_csv(tmp_path / "reproduction-figure3_gpu_orderings.csv")  # the GPU-trained pair beside SP
    assert "At GPU scale" in text and sorted(set(gpu["model"])) == ["bilingual_trans", "sp"] and len(gpu) == 6
    table2 = pd.read_csv(tmp_path / "reproduction-table2_orderings.csv")
    assert len(table2) == 10 and set(table2["semantic minus"]) == {"en", "random"}
    assert set(table2["verdict"]) <= {"reproduced", "reversed", "within noise"}
    cells = pd.read_csv(tmp_path / "reproduction-table3_cells.csv")
    assert len(cells) == 5 * 9 + 2 and cells["match"].dtype == bool
    transfers = pd.read_csv(tmp_path / "reproduction-style_transfer.csv")
    assert len(transfers) == 2 and transfers["output"].str.len().gt(0).all()
    assert {"from_source", "from_style"} <= set(transfers.columns) and "outputs keep a content word" in text
    ablation = pd.read_csv(tmp_path / "reproduction-latent_ablation.csv", keep_default_na=False)
    assert list(ablation["sentence"]) == list(transfers["source"]) * 3 and "z_en alone in" in text
    assert len(shipped()) >= 10
    tatoeba = pd.read_csv(tmp_path / "reproduction-tatoeba.csv").set_index("model")
    nmt = tatoeba.loc["nmt-all"]  # one encoder, all five languages, both directions
    assert nmt[[f"{lang}→en" for lang in "fr es ar tr ja".split()]].notna().all()
    assert nmt[[f"en→{lang}" for lang in "fr es ar tr ja".split()]].notna().all()
    budgets = pd.read_csv(tmp_path / "reproduction-training_budgets.csv")
    assert len(budgets) == 10 and ("ran the same number of updates" in text) != bool(unequal_budgets(budgets))
    assert "Measured distance (URIEL+)" in text and 'id="fig-language_gap_syntactic"' in text
    own = pd.read_csv(tmp_path / "reproduction-own_language.csv")  # every pair's language encoder, own tasks
    assert set(own["language"]) == {"fr", "es", "ar", "tr", "ja"} and 'id="fig-own_language_gap"' in text
    assert "What each language encoder knows about its own language" in text
    moved = pd.read_csv(tmp_path / "reproduction-own_language_transfer.csv")  # English probes on each language
    assert set(moved["language"]) == {"fr", "es", "ar", "tr", "ja"} and "The same task across languages" in text
    rho = pd.read_csv(tmp_path / "reproduction-gap_correlations.csv")
    assert set(rho["kind"]) == {"syntactic", "genetic", "featural"} and (rho["n"] == 5).all()
    assert rho[["p_value", "p_value_paper"]].stack().between(1 / 60 - 1e-9, 1).all()
    assert "Disentanglement" in text and 'id="fig-language_id"' in text and 'id="fig-erase_language_sts"' in text
    panel = pd.read_csv(tmp_path / "reproduction-disentanglement.csv")
    assert set(panel["pair"]) == {"en-fr"} and set(panel["encoder"]) == {"bgt-en-fr:semantic",
                                                                         "bilingual_trans-en-fr:semantic"}
    assert "STS16" in set(panel["metric"])  # the report's years (STS16 alone here) in its STS, too
    identity = panel[panel["metric"] == "language_id_en_fr accuracy"].set_index("encoder")
    assert (identity["after"] < identity["before"]).all()


def test_the_reproduce_command_passes_its_probing_sizes_and_refuses_bad_ones(tmp_path, monkeypatch, capsys):
    from workbench.cli import main, reporting
    asked = []
    monkeypatch.setattr(reporting, "reproduce", lambda out, **options: asked.append(options) or out)
    assert main(["reproduce", "--out", str(tmp_path / "r.html"), "--years", "2016", "--train-size", "600",
                 "--valid-size", "200", "--test-size", "200"]) == 0
    assert asked[0]["sizes"] == {"train": 600, "valid": 200, "test": 200} and asked[0]["years"] == [2016]
    assert main(["reproduce", "--out", str(tmp_path / "r.html")]) == 0
    assert asked[1]["sizes"] == {"train": 6000, "valid": 1000, "test": 1000}  # the cards' sizes
    assert main(["reproduce", "--out", str(tmp_path / "r.html"), "--test-size", "0"]) == 2 and len(asked) == 2
    assert "probing sizes must give train, valid, test as whole numbers" in capsys.readouterr().err


def test_reproduce_refuses_years_outside_sts12_16_or_bad_sizes_before_any_work(tmp_path):
    from workbench.checks import WorkbenchError
    for years in ((), (2011, 2016)):
        with pytest.raises(WorkbenchError, match=r"years: one or more of 2012, 2013, 2014, 2015, 2016; got \["):
            reproduce(tmp_path / "r.html", years=years)
    for sizes in ({}, {"train": 600, "valid": 200}):  # an empty dict is not "the default"
        with pytest.raises(WorkbenchError, match="probing sizes must give train, valid, test"):
            reproduce(tmp_path / "r.html", sizes=sizes)
    assert not list(tmp_path.iterdir())


def test_a_pair_without_english_is_read_beside_its_languages_english_pairs_from_the_cards():
    """``partner_results`` sets each language of a pair without English beside the same language's encoders in its
    English pair; here a fr-es card put together from the 16-dimensional en-fr and en-es cards (its French section
    en-fr's, its Spanish section en-es's), so every number it reads is known."""
    from workbench.reports import pairs_without_english, partner_results
    from workbench.reports.languages import partner_section
    from workbench.zoo.card_page import card_markdown

    cards = {name: card(name) for name in shipped()}
    fr, es = cards["bgt-en-fr-lang16"], cards["bgt-en-es-lang16"]
    cards["bgt-fr-es"] = {**es, "name": "bgt-fr-es", "pair": "fr-es", "halves": None,
                          "first_language": fr["languages"], "languages": es["languages"]}
    assert pairs_without_english(cards) == ["fr-es"] and pairs_without_english({"bgt-en-fr": fr}) == []
    rows = partner_results(cards).set_index(["language", "task", "model", "view"])
    assert set(rows.index.get_level_values("model")) >= {"bgt-fr-es", "bgt-en-fr", "bgt-en-fr-lang16", "bgt-en-es"}
    stated = fr["languages"]["tasks"]["length_fr"]
    assert rows.loc[("fr", "Length", "bgt-fr-es", "language encoder"), "accuracy"] == stated["fr"][0]
    assert rows.loc[("fr", "Length", "bgt-fr-es", "language encoder"), "partner"] == "es"
    assert rows.loc[("fr", "Length", "bgt-en-fr-lang16", "semantic"), "partner"] == "en"
    assert rows.loc[("es", "Length", "bgt-en-es-lang16", "semantic"), "accuracy"] == \
        es["languages"]["tasks"]["length_es"]["semantic"][0]
    assert "Pairs without English (fr-es)" in partner_section(cards, {})
    assert partner_section({name: c for name, c in cards.items() if name != "bgt-fr-es"}, {}) == ""
    views = {"semantic": {"fingerprint": "0" * 16, "sts17": {"es-es": 61.25},
                          "held_out_retrieval": {"es->fr": 12.5, "fr->es": 11.0}, "probing": {}}}
    page = card_markdown({**cards["bgt-fr-es"], "views": views, "style_transfer": None},
                         {"model": {"setting": "bgt"}, "train": {}})
    assert "## fr's own tasks" in page and "## es's own tasks" in page and "STS17 (Pearson's r × 100): es-es 61.2" in page
    assert "held-out test pairs (%): es→fr 12.5, fr→es 11.0" in page and "training split of its corpus" in page
