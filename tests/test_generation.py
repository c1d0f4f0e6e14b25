"""Style transfer's batch mode: where each output's content words come from, and which latent carries them."""
import pandas as pd
import pytest
import torch

from workbench.data.tokenizer import detokenise
from workbench.errors import WorkbenchError
from workbench.generation import content_words, latent_ablation, transfer, transfer_table
from workbench.train import load


def test_content_words_drop_stop_words_contractions_and_possessives():
    assert content_words("When water freezes, it becomes ice.") == {"water", "freezes", "ice"}
    assert content_words("I don't want John's car!") == {"want", "john", "car"}
    assert content_words("It is 10 o'clock.") == set()
    assert content_words("Où est la gare ?") == {"gare", "est"}  # any script's letters


def test_transfer_table_says_which_words_came_from_the_source_and_the_style():
    model = load("bgt-en-fr")
    pairs = pd.DataFrame({"source": ["when water freezes it becomes ice .", "the weather is good today ."],
                          "style": ["the weather is good today .", "the weather is good today ."]})
    table = transfer_table(model, pairs, beam=1)
    assert list(table["output"]) == transfer(model, list(pairs["source"]), list(pairs["style"]), beam=1)
    for _, row in table.iterrows():
        for column in ("source", "style"):
            words = set(filter(None, row[f"from_{column}"].split(", ")))
            assert words == content_words(row["output"]) & content_words(row[column])
    reconstruction = table.iloc[1]  # source = style: whatever it keeps, it keeps from both
    assert reconstruction["from_source"] == reconstruction["from_style"]


def test_latent_ablation_decodes_from_each_latent_with_the_other_at_the_prior_mean():
    model = load("bgt-en-fr")
    sentences = ["when water freezes it becomes ice .", "i'm doing this for my family ."]
    table = latent_ablation(model, sentences, beam=1, max_len=30)
    assert list(table["latents"]) == ["both"] * 2 + ["semantic only"] * 2 + ["language only"] * 2
    both = table[table["latents"] == "both"]
    assert list(both["output"]) == transfer(model, sentences, sentences, beam=1, max_len=30)
    z_sem = torch.as_tensor(model.encoder("semantic").encode(sentences))
    alone = model.generate(z_sem, torch.zeros(2, model.cfg.latent_dim), decoder="en", max_len=30)
    assert list(table[table["latents"] == "semantic only"]["output"]) == [
        detokenise(model.tokenizer.decode(ids)) for ids in alone]
    for _, row in table.iterrows():
        assert set(filter(None, row["kept"].split(", "))) == content_words(row["output"]) & content_words(
            row["sentence"])
    assert len(set(table["output"])) > 2  # the three decodings differ
    with pytest.raises(WorkbenchError, match="sentences must be non-empty"):
        latent_ablation(model, ["a sentence .", " "])
    with pytest.raises(WorkbenchError, match="style transfer needs a BGT model"):
        latent_ablation(load("sp-en-fr"), ["a sentence ."])
