"""The multilingual NMT encoder (Schwenk & Douze 2017): translation loss, memorisation, training, Tatoeba."""
import json

import numpy as np
import pytest
import torch

from workbench import cli
from workbench.data.batching import collate
from workbench.data.corpora import load_splits
from workbench.data.tokenizer import detokenise
from workbench.checks import WorkbenchError
from workbench.evaluation import evaluate
from workbench.models.folder import load
from workbench.models.nmt import MultilingualNMT, NMTConfig
from workbench.training.recipes import TrainConfig


@pytest.fixture(scope="module")
def tokenizer():
    return TrainConfig.from_preset("tiny", model="nmt", pair="en-fr").tokenizer()  # tagged pieces, one pair


def small_model(tokenizer, **changes):
    torch.manual_seed(0)
    cfg = NMTConfig(vocab_size=tokenizer.vocab_size, languages=("en", "fr"),
                    tag_ids=(tokenizer.tag_id("en"), tokenizer.tag_id("fr")),
                    **{"dim": 64, "hidden": 64, "dec_hidden": 128, "dropout": 0.0, "max_len": 64, **changes})
    model = MultilingualNMT(cfg)
    model.tokenizer = tokenizer
    return model


def batch(tokenizer, pairs):
    en = tokenizer.encode([e for e, _ in pairs])
    xx = [[tokenizer.tag_id("fr")] + ids for ids in tokenizer.encode([f for _, f in pairs])]
    return collate(en, xx, np.arange(len(pairs)))


def test_tags_are_pieces_of_their_own_and_the_loss_ignores_padding(tokenizer):
    assert tokenizer.tag_id("en") != tokenizer.tag_id("fr")
    assert tokenizer.tag_id("fr") not in tokenizer.encode(["<2fr> bonjour"])[0]  # text never yields a tag
    with pytest.raises(ValueError, match="no language tag <2ja>"):
        tokenizer.tag_id("ja")
    model = small_model(tokenizer)
    pairs = load_splits("en-fr")["train"][:5]
    together = model(batch(tokenizer, pairs).en, batch(tokenizer, pairs).xx)
    alone = [model(batch(tokenizer, [p]).en, batch(tokenizer, [p]).xx)["loss"] for p in pairs]
    assert together["loss"].item() == pytest.approx(sum(a.item() for a in alone), rel=1e-4)
    assert together["tokens_xx"] == sum(len(ids) for ids in tokenizer.encode([f for _, f in pairs]))
    with pytest.raises(ValueError, match="tag ids for 2 languages"):
        NMTConfig(vocab_size=10, languages=("en", "fr"), tag_ids=(4,))


def test_decoder_reproduces_the_references_of_a_memorised_tiny_set(tokenizer):
    pairs = [(en, fr) for en, fr in load_splits("en-fr")["train"] if len(en) < 40][:8]
    model = small_model(tokenizer)
    data = batch(tokenizer, pairs)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(400):
        out = model(data.en, data.xx)
        optimizer.zero_grad()
        out["loss"].backward()
        optimizer.step()
        if out["loss"].item() < 0.05 * int(out["tokens_en"] + out["tokens_xx"]):  # summed: 0.05 nats a token
            break

    def reference(sentences):  # what the model can output: the text after preprocessing, detokenised
        return [detokenise(tokenizer.decode(ids)) for ids in tokenizer.encode(sentences)]

    english, french = [en for en, _ in pairs], [fr for _, fr in pairs]
    assert model.translate(french, "en") == reference(english)
    assert model.translate(english, "fr") == reference(french)
    assert model.training  # translate() evaluates in eval mode and restores the mode it found
    with pytest.raises(WorkbenchError, match="target language 'ja'.*valid: en, fr"):
        model.translate(english, "ja")


def test_nmt_trains_through_the_trainer_and_reports_tatoeba_both_ways(tmp_path, tokenizer, capsys):
    assert cli.main(["train", "--model", "nmt", "--pair", "en-fr", "--preset", "tiny", "--max-updates", "80",
                     "--out", str(tmp_path / "nmt")]) == 0
    assert "nmt en-fr (tiny): update 80" in capsys.readouterr().out
    rows = [json.loads(line) for line in (tmp_path / "nmt" / "metrics.jsonl").read_text().splitlines()]
    per_token = [r["trans_per_token"] for r in rows if r["update"] > 0]
    assert np.mean(per_token[-5:]) < 0.8 * np.mean(per_token[:3])
    valid = [r["valid_loss"] for r in rows if "valid_loss" in r]
    assert len(valid) == 5 and valid[-1] < valid[0]  # at initialisation, then every 20 updates
    assert all(set(r["stsb_dev"]) == {"semantic"} for r in rows if r["update"] % 20 == 0)
    model = load(tmp_path / "nmt")
    assert model.cfg.tag_ids == (tokenizer.tag_id("en"), tokenizer.tag_id("fr"))
    encoder = model.encoder("semantic")
    assert encoder.languages == ("en", "fr") and encoder.dim == 128
    result = evaluate(encoder, "tatoeba", cache=False)
    assert sorted(result["metric"]) == ["accuracy xx->en", "error en->xx", "error xx->en", "f1 xx->en"]
    value = result.set_index("metric")["value"]
    assert value["accuracy xx->en"] == pytest.approx(100 - value["error xx->en"]) and value["f1 xx->en"] <= 100
    assert set(result["dataset"]) == {"fr-en"} and result["value"].between(0, 100).all()
    assert (result["n"] == 1000).all()


def test_only_the_nmt_trains_on_all_pairs_and_defaults_to_them():
    assert TrainConfig.from_preset("tiny", model="nmt").pair == "all"
    assert TrainConfig.from_preset("tiny", model="nmt").languages == ("en", "fr", "es", "ar", "tr", "ja")
    assert TrainConfig.from_preset("tiny", model="sp").pair == "en-fr"
    with pytest.raises(WorkbenchError, match="only a multilingual model \\(nmt\\) trains on all pairs"):
        TrainConfig(model="bgt", pair="all")
