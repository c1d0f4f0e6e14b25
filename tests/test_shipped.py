"""Every model in trained/ loads, has the fingerprint its card states, and reproduces its card's STS (one model on
all five years, the others on STS16) and Tatoeba error (one language each)."""
import json

import pytest
import torch

import workbench as wb
from conftest import own_home, registered_pivot
from workbench import cli
from workbench.models.kinds import KINDS
from workbench.models.pins import card, shipped
from workbench.cache import cached
from workbench.data.eval_sets import STS_DATASETS
from workbench.evaluation import evaluate_tatoeba
from workbench.evaluation.sts import evaluate_sts, years_task
from workbench.paths import trained_dir
from workbench.zoo.packaging import WITH_DECODERS

SHIPPED = shipped()
STS_YEARS = tuple(STS_DATASETS)
TABLE3 = [f"{model}-en-{lang}" for lang in ("fr", "es", "ar", "tr", "ja") for model in ("bgt", "bilingual_trans")]


def test_the_table3_models_are_shipped_and_small_enough():
    assert set(TABLE3) <= set(SHIPPED)
    total = sum(p.stat().st_size for p in trained_dir().rglob("*") if p.is_file())
    # 380 MiB: the GPU-trained en-fr pair (small preset, d = 512) adds 84 MiB, the five pairs' BGT and
    # BILINGUALTRANS ship with their decoders (~14 MiB more each) so that --init-from can train them on, and the
    # es and ar warm starts (~20 MiB each) ship part way, with decoders, so a bare machine continues them; 384 MiB:
    # the tr and ja warm starts (128-dimensional language latents, with decoders) replaced their 16-dimensional
    # models, 1.9 MiB larger each
    assert total < 384 * 2 ** 20, f"trained/ holds {total / 2 ** 20:.0f} MiB; the limit is 384 MiB"


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_model_matches_its_card(name, tmp_path, monkeypatch):
    info = card(name)
    model = wb.load(name)
    for view, entry in info["views"].items():
        assert model.encoder(view).fingerprint == entry["fingerprint"], view
    sem = model.encoder("semantic")
    if "sts" in info["views"]["semantic"]:
        _stated_sts_and_tatoeba(name, info, sem)
    else:  # a pair without English: its STS17 tracks (es-es) and held-out retrieval instead
        tracks = info["views"]["semantic"]["sts17"]
        rows = wb.evaluate(sem, "sts17", tracks=list(tracks)).query("metric == 'pearson'")
        assert dict(zip(rows.dataset, rows.value)) == pytest.approx(tracks, abs=0.05)
        home = own_home(tmp_path / "home")  # the pair's corpus, as `workbench data add-pair fr-es --pivot` makes it
        registered_pivot(home, info["pair"])
        monkeypatch.setenv("WORKBENCH_HOME", str(home))
        rows = wb.evaluate_held_out_retrieval(sem, info["pair"])
        got = {metric.removeprefix("error "): value for metric, value in zip(rows.metric, rows.value)}
        assert got == pytest.approx(info["views"]["semantic"]["held_out_retrieval"], abs=0.21)
    config = json.loads((trained_dir() / name / "config.json").read_text())
    if info["model"] != "wmf":  # float16 weights; decoders where style transfer needs them, else as exported
        from safetensors import safe_open
        with safe_open(str(trained_dir() / name / "model.safetensors"), "pt") as f:
            dtypes = {f.get_slice(k).get_dtype() for k in f.keys()}
            has_decoders = any(k.startswith("decoders.") for k in f.keys())
        assert dtypes <= {"F16", "I64"}
        assert has_decoders == config["decoders"] and (has_decoders or name not in WITH_DECODERS)


def _stated_sts_and_tatoeba(name: str, info: dict, sem) -> None:
    """The card's STS and Tatoeba numbers, recomputed from the semantic view ``sem``."""
    # One model on all five STS years, the others on STS16 (a tenth of the pairs; every year of a card comes from
    # the same run). Cached: the session's WORKBENCH_HOME is new (conftest), so a hit is an embedding of these
    # weights made earlier in this run (the reproduction's STS16 bootstraps encode the same sentence list).
    years = STS_YEARS if name == "bgt-en-fr" else (2016,)
    rows = evaluate_sts(cached(sem), years)
    task = years_task(years)
    got = rows[(rows.task == task) & (rows.metric == "pearson") & (rows.dataset == "all")]["value"].item()
    assert got == pytest.approx(info["views"]["semantic"]["sts"][task], abs=0.05)
    if "tatoeba" in info["views"]["semantic"]:  # every model whose semantic view reads English and another language
        # one language each: a multilingual model (nmt-all, an LSTM: seconds a language) on Japanese, the
        # script farthest from English
        stated_languages = info["views"]["semantic"]["tatoeba"]
        language = "ja" if "ja" in stated_languages else next(iter(stated_languages))
        rows = evaluate_tatoeba(sem, [language])
        rows = rows[rows["metric"].str.startswith("error")]  # the card's numbers (MTEB's accuracy/F1 are not kept)
        got = {(r.dataset.split("-")[0], r.metric.removeprefix("error ")): r.value for r in rows.itertuples()}
        stated = {(language, d): v for d, v in stated_languages[language].items()}
        assert got == pytest.approx(stated, abs=0.21)  # ≤ 2 of 1000: near-chance models have near-ties that
        # float rounding (thread count, batch order) can flip


@pytest.mark.parametrize("name", [name for name in SHIPPED if card(name).get("curve")])
def test_shipped_learning_curves_reach_from_initialisation_to_the_exported_update(name):
    curves = wb.learning_curve(name)
    sts = curves[curves.metric == ("stsb_dev" if card(name)["pair"].startswith(("en-", "all")) else "retrieval_dev")]
    exported = card(name)["training"]["updates"]
    assert {0, exported} <= set(sts["update"]) and "semantic" in set(sts["view"])
    assert sts[sts["update"] <= exported]["train_seconds"].max() == pytest.approx(card(name)["training"]["train_seconds"],
                                                                               abs=1)


def test_the_multilingual_nmt_reads_all_languages_and_lists_them_all_in_its_card(capsys):
    model = wb.load("nmt-all")
    assert model.encoder("semantic").languages == ("en", "fr", "es", "ar", "tr", "ja")
    tatoeba = card("nmt-all")["views"]["semantic"]["tatoeba"]
    assert list(tatoeba) == ["fr", "es", "ar", "tr", "ja"]
    assert all(set(errors) == {"xx->en", "en->xx"} for errors in tatoeba.values())
    if card("nmt-all")["decoders"]:  # shipped with its decoder while its training goes on (--init-from)
        translation, = model.translate(["A man is playing a guitar."], "fr")
        assert translation.strip() and translation != "A man is playing a guitar."
        model.decoders = torch.nn.ModuleDict()  # as an encoder-only export loads
    with pytest.raises(ValueError, match="shipped without its decoder"):
        model.translate(["Hello."], "fr")
    assert cli.main(["models", "list"]) == 0
    listing = capsys.readouterr().out
    assert "Tatoeba err %" in listing and all(name in listing for name in SHIPPED)


def test_encoder_only_models_say_why_they_cannot_generate():
    model = wb.load("bgt-small-en-fr")  # the GPU campaign's first export kept encoders only
    with pytest.raises(ValueError, match="shipped without its decoders"):
        model.generate(torch.zeros(1, model.cfg.latent_dim), torch.zeros(1, model.cfg.latent_dim))
    with pytest.raises(wb.WorkbenchError, match="holds encoders only"):
        wb.transfer(model, ["A man is here."], ["Thanks."])


def test_unknown_model_name_lists_what_is_shipped():
    with pytest.raises(wb.WorkbenchError, match="no model at 'bgt-en-xx'"):
        wb.load("bgt-en-xx")
    with pytest.raises(wb.WorkbenchError, match="shipped: .*bgt-en-fr"):
        card("bgt-en-xx")


def test_every_shipped_model_records_the_recipe_the_retraining_script_runs(capsys):
    from dataclasses import asdict
    from pathlib import Path

    from workbench.training.recipes import TrainConfig
    from workbench.zoo.packaging import retrain_plan
    plan = retrain_plan().set_index("name")
    assert sorted(plan.index) == shipped()
    for name in shipped():
        config = json.loads((trained_dir() / name / "config.json").read_text())
        recipe = TrainConfig.from_file(trained_dir() / name / "config.json")  # what `train --config` runs
        record = config["training"]
        updates = record.get("run_updates", record["updates"])  # the whole run's length, with no time limit
        recorded = {**config["train"], "betas": tuple(config["train"]["betas"]),  # older records lack newer fields
                    "max_updates": updates, "max_seconds": None}
        if KINDS[recipe.model].fitted:  # a fit's recipe gives the settings it was fitted with (its config's model)
            fitted = {k: v for k, v in config["model"].items() if k != "setting"}
            assert json.loads(json.dumps(asdict(recipe.model_config()))) == fitted
            recorded.pop("overrides")
        assert {key: asdict(recipe)[key] for key in recorded} == recorded
        assert recipe.model == config["model"]["setting"]
        assert plan.loc[name, "updates"] == updates
        assert plan.loc[name, "keep_decoders"] == bool(config.get("decoders"))
    script = (Path(__file__).resolve().parent.parent / "scripts" / "train_shipped").read_text()
    assert "workbench models retrain --force" in script
    assert cli.main(["models", "retrain", "--dry-run", "--only", "sp-en-fr", "sp-en-fr"]) == 0
    assert capsys.readouterr().out.count("sp-en-fr ") == 1  # a name given twice is planned once


def test_every_bgt_card_shows_both_views_on_its_own_languages_tasks():
    """Every BGT with language variables carries its semantic and language encoder on each task of the pair's
    other language (with CI and selectivity), and one of them is recomputed from the weights."""
    from workbench.probing.across import english_version
    from workbench.zoo.cards import own_language_tasks

    with_language_views = [name for name in SHIPPED if card(name)["model"] in ("bgt", "bgt_no_prior")]
    assert len(with_language_views) >= 9
    sections = [(name, card(name)[key]) for name in with_language_views for key in ("first_language", "languages")
                if key in card(name)]  # a pair without English has a section for each of its languages
    for name, section in sections:
        language = section["language"]
        measured = [t for t in own_language_tasks(language) if t in section["tasks"]]  # a card holds the tasks it
        assert list(section["tasks"]) == measured, name  # was measured on (a task added since is not asked of it)
        assert {f"{t}_{language}" for t in ("length", "punct_num", "punct_first", "bigram_shift", "word_content")} \
            <= set(measured), name
        for entry in section["tasks"].values():
            for view in ("semantic", language):
                accuracy, low, high, _ = entry[view]
                assert low <= accuracy <= high and 0 <= entry["majority"] < 100
        english = card(name)["pair"].startswith("en-")  # a probe trained on English: where the semantic view reads it
        assert list(section["across"]) == [t for t in measured if english and english_version(t)], name
        for entry in section["across"].values():
            assert entry["english probe"][1] <= entry["english probe"][0] <= entry["english probe"][2]
            assert entry["ratio"] is None or entry["own probe"][1] > entry["majority"]  # a ratio only above it
    stated = card("bgt-en-ja")["languages"]["tasks"]["tense_ja"]["ja"]
    result = wb.probe(wb.load("bgt-en-ja").encoder("ja"), "tense_ja", sizes=wb.CARD_SIZES).to_frame()
    accuracy = result.set_index("metric").loc[["accuracy", "selectivity"], "value"]
    assert [round(100 * v, 1) for v in accuracy] == [stated[0], stated[3]]
    across = card("bgt-en-ja")["languages"]["across"]["tense_ja"]  # and one transfer, from the weights
    moved = wb.probe_across(wb.load("bgt-en-ja").encoder("semantic"), "tense", "tense_ja", sizes=wb.CARD_SIZES)
    moved = moved.set_index("metric")
    # within the card's 95% CI rather than to the digit: this English probe's fit differs between CPUs (64.3 on an
    # AMD EPYC where the card, written on another machine, says 65.8 [62.9, 68.8]; the cause, its float sums or the
    # spaCy tags that choose its sentences, was not traced), while the own-language probe above repeats exactly
    stated_value, low, high = across["english probe"]
    assert low <= round(100 * moved.loc["transfer_accuracy", "value"], 1) <= high, (moved, stated_value)
