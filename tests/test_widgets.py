"""The notebook widgets, driven as a user would (``.value = ...``, ``.click()``), on the shipped models."""
import numpy as np
import pytest

import workbench as wb
from workbench.reports.demo import compare
from workbench.reports.paper import LANGUAGES, paper_table
from workbench.reports.widgets import GapExplorer, ProbeExplorer, StyleTransferApp
from workbench.style_transfer.generation import PAPER_DECODING

SIZES = {"train": 600, "valid": 200, "test": 200}


@pytest.fixture(scope="module")
def results():
    return compare(("en-fr",), SIZES, years=(2016,), tasks=("length", "punct_num"), show_progress=False)


def test_probe_explorer_redraws_on_every_control(results):
    explorer = ProbeExplorer(results, group="pair")
    assert explorer.group.value == "en-fr"
    encoders = set(results[results.metric == "accuracy"].encoder)
    assert {t.name for t in explorer.figure.data} == encoders | {"majority class"}  # a bar trace per encoder
    majority = next(t for t in explorer.figure.data if t.name == "majority class")
    expected = results[results.metric == "majority"].drop_duplicates("task").set_index("task")["value"]
    assert np.allclose(majority.y, 100 * expected[list(majority.x)].to_numpy())
    semantic = "bgt-en-fr:semantic"
    acc = results[(results.metric == "accuracy") & (results.encoder == semantic)].set_index("task")["value"]
    trace = next(t for t in explorer.figure.data if t.name == semantic)
    assert np.allclose(trace.y, 100 * acc[list(trace.x)].to_numpy())
    assert trace.error_y.array is not None  # CIs drawn for accuracy

    explorer.encoders.value = (semantic,)
    assert [t.name for t in explorer.figure.data] == [semantic, "majority class"]
    explorer.tasks.value = ("length",)
    assert list(explorer.figure.data[0].x) == ["length"]

    explorer.metric.value = "selectivity"
    sel = results[(results.metric == "selectivity") & (results.encoder == semantic) & (results.task == "length")]
    assert np.isclose(explorer.figure.data[0].y[0], 100 * sel["value"].iloc[0])
    assert "selectivity" in explorer.figure.layout.title.text

    explorer.encoders.value = ()
    assert len(explorer.figure.data) == 0


def test_gap_explorer_follows_task_and_roles():
    paper = paper_table("table3")
    distance = dict(zip(LANGUAGES, (0.5, 0.4, 0.1, 0.3, 0.05)))  # any order: the x axis must follow it
    explorer = GapExplorer(paper, paper, distance)
    assert list(explorer.figure.data[0].x) == ["fr", "es", "tr", "ar", "ja"]
    word = paper.pivot_table(index="lang", columns="role", values="Word", aggfunc="first")
    assert np.allclose(explorer.figure.data[0].y, (word["semantic"] - word["en"])[["fr", "es", "tr", "ar", "ja"]])
    explorer.task.value = "Len"
    assert explorer.figure.data[0].y[0] == pytest.approx(73.0 - 80.2)  # fr: semantic - en language encoder
    explorer.subtrahend.value = "bilingual_trans"
    assert explorer.figure.data[0].y[0] == pytest.approx(73.0 - 74.0)
    assert explorer.figure.layout.title.text.startswith("Len: semantic − bilingual_trans")
    halves = explorer.figure.data[0].error_y.array  # ours with a 95% CI: 1.96 sqrt(p(1-p)/n + q(1-q)/n)
    assert halves[0] == pytest.approx(100 * 1.96 * np.sqrt((0.73 * 0.27 + 0.74 * 0.26) / 1000))
    explorer.subtrahend.value = "semantic"  # A = B: nothing to draw, and it says so
    assert not explorer.figure.data and "two different" in explorer.figure.layout.annotations[0].text
    explorer.subtrahend.value, explorer.task.value = "en", "Gender"  # Gender is the fr/es encoder's (role xx)
    assert "no Gender cells" in explorer.figure.layout.annotations[0].text


def test_style_transfer_app_generates_swaps_and_draws_examples():
    model = wb.load("bgt-en-fr")
    examples = ["where did you go last night ?", "you are late again .", "thank you very much .", "i know him ."]
    app = StyleTransferApp(model, examples=examples)  # the defaults: transfer's own (re-ranked, pushed, stripped)
    assert app.result == wb.transfer(model, examples[:1], examples[1:2], beam=5, max_len=40)[0]
    assert app.result and app.result in app.output.value

    app.guidance.value, app.strip.value = 0.5, False
    assert app.result == wb.transfer(model, examples[:1], examples[1:2], beam=5, max_len=40, guidance=0.5,
                                     strip_punctuation=False)[0]
    app.guidance.value = 0.0

    app.search.value = "beam"
    assert app.result == wb.transfer(model, examples[:1], examples[1:2], beam=5, max_len=40, **PAPER_DECODING)[0]

    app.search.value = "greedy"
    assert app.result == wb.transfer(model, examples[:1], examples[1:2], beam=1, max_len=40, **PAPER_DECODING)[0]

    app.swap.click()
    assert (app.source.value, app.style.value) == (examples[1], examples[0])
    assert app.result == wb.transfer(model, examples[1:2], examples[:1], beam=1, max_len=40, **PAPER_DECODING)[0]

    app.example.click()
    assert app.source.value in examples and app.style.value in examples
    assert app.source.value != app.style.value

    long = "the company provides health care and life insurance benefits for all of its employees ."
    app._set(long, long)
    app.max_len.value = 5  # a cap the sentence runs into is marked, not silently cut
    assert "[cut at 5 pieces" in app.output.value
    app.max_len.value = 40
    assert "[cut at" not in app.output.value

    app.source.value = "   "
    assert app.result == "" and "type a Source" in app.output.value


def test_style_transfer_app_offers_every_shipped_bgt_with_decoders():
    from workbench.zoo.cards import with_decoders
    names = with_decoders()
    assert names[0] == "bgt-en-fr" and "bgt-en-fr-lang16" in names and "bgt-small-en-fr" not in names  # no decoders
    model = wb.load("bgt-en-fr")
    examples = ["where did you go last night ?", "you are late again ."]
    app = StyleTransferApp(model, examples=examples, choices=names)
    assert list(app.chooser.options) == names and app.chooser.value == "bgt-en-fr"
    app.chooser.value = "bgt-en-fr-lang16"
    assert app.model.name == "bgt-en-fr-lang16"
    assert app.result == wb.transfer(app.model, examples[:1], examples[1:], beam=5, max_len=40)[0]


def test_style_transfer_rejects_bad_input():
    model = wb.load("bgt-en-fr")
    with pytest.raises(wb.WorkbenchError, match="one style sentence per source"):
        wb.transfer(model, ["a", "b"], ["c"])
    with pytest.raises(wb.WorkbenchError, match="beam must be a whole number from 1"):
        wb.transfer(model, ["a"], ["c"], beam=0)
    for guidance in (-0.1, 11, True, "1"):
        with pytest.raises(wb.WorkbenchError, match=r"guidance must be a number from 0 \(off\) to 10"):
            wb.transfer(model, ["a"], ["c"], guidance=guidance)
    with pytest.raises(wb.WorkbenchError, match="needs a BGT model"):
        wb.transfer(wb.load("bilingual_trans-en-fr"), ["a"], ["c"])


def test_a_comparison_report_opens_with_the_table3_layout(results):
    from workbench.reports.figures import figures_for, overview
    assert list(figures_for(results))[0] == "overview"  # encoders × tasks first, then the bars
    table = overview(results)
    assert table.columns[0] == "STS16" and {"length", "punct_num"} <= set(table.columns)
    semantic = results[(results.metric == "accuracy") & (results.encoder == "bgt-en-fr:semantic")]
    assert table.loc["bgt-en-fr:semantic", "length"] == pytest.approx(
        100 * semantic.set_index("task").loc["length", "value"])
    # coloured by gain over each task's majority baseline (tasks differ in chance level), accuracy as the text
    gains, grey = figures_for(results)["overview"][0].data
    majority = results[results.metric == "majority"].groupby("task")["value"].mean()
    column, row = list(gains.x).index("length"), list(gains.y).index("bgt-en-fr:semantic")
    assert gains.z[row][column] == pytest.approx(table.loc["bgt-en-fr:semantic", "length"] - 100 * majority["length"])
    assert gains.text[row][column] == f"{table.loc['bgt-en-fr:semantic', 'length']:.1f}" and gains.zmid == 0
    assert np.isnan(gains.z[row][0]) and grey.z[row][0] == 0  # STS has no majority baseline: grey, not a colour


def test_each_pairs_plain_bgt_shows_both_halves_best_of_the_shipped_bgts_with_decoders():
    """What reads ``bgt-en-XX`` (the demo, the notebooks, the reproduction) shows the pair's best model, and says why."""
    from workbench.reports import why_shown
    from workbench.zoo.cards import halves_rank, with_decoders
    from workbench.models.pins import card
    for name in with_decoders():
        info = card(name)
        plain = card(f"bgt-{info['pair']}")
        assert halves_rank(plain["halves"]) >= halves_rank(info["halves"]), name
    assert "PunctNum by +" in why_shown("bgt-en-fr") and "semantic view leads on STS12–16" in why_shown("bgt-en-fr")
