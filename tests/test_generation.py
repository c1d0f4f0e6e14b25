"""Style transfer's batch mode: where each output's content words come from."""
import pandas as pd

from workbench.generation import content_words, transfer, transfer_table
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
