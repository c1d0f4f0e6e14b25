"""Every probe result the cache holds, as one table to browse (#74): encoders by task with their CIs, what made
each result (seconds, machine, library versions), the best marked only where the CIs separate, and an edited
entry left out."""
import json

import pytest

import workbench as wb
from workbench.cache import results_dir
from workbench.checks import WorkbenchError
from workbench.probing.build import build_task
from workbench.reports.results import cached_probes

SIZES = {"train": 700, "valid": 150, "test": 150}  # sizes no other test uses: this data's results are ours


@pytest.fixture(scope="module")
def probed():
    """PunctNum probed on three encoders: a random sentencepiece average, sp-en-fr and bgt-en-fr (not the random
    Transformer: at tens of sentences a second on a CPU it was most of this module's time)."""
    encoders = [wb.untrained_encoder("random-sp-average"), wb.load("sp-en-fr").encoder("semantic"),
                wb.load("bgt-en-fr").encoder("semantic")]
    results = {enc.name: wb.probe(enc, "punct_num", sizes=SIZES, control=False) for enc in encoders}
    return results, build_task("punct_num", sizes=SIZES).manifest["sha256"]


def test_the_table_lists_each_encoder_with_its_ci_and_what_made_it(probed):
    results, data = probed
    table = cached_probes(task="punct_num")
    ours = table[table["data"] == data].set_index("encoder")
    assert set(ours.index) == set(results)
    for name, result in results.items():
        row = ours.loc[name]
        assert (row["accuracy"], row["ci_low"], row["ci_high"]) == (result.accuracy, result.ci_low, result.ci_high)
        assert row["ci_low"] <= row["accuracy"] <= row["ci_high"] and row["n_test"] == result.n_test
        assert row["seconds"] > 0 and "scikit-learn" in row["versions"] and "bgt-workbench" in row["versions"]
        assert "CPU" in row["device"] and "cores" in row["device"]  # the machine (these encoders run on the CPU)
    top = ours["accuracy"].idxmax()
    separated = ours.loc[top, "ci_low"] > ours.drop(top)["ci_high"].max()
    assert list(ours.index[ours["best"]]) == ([top] if separated else [])
    assert cached_probes(task="punct_num", encoder="random-").query("data == @data")["encoder"].str.startswith(
        "random-").all()


def test_an_edited_result_is_left_out_of_the_table(probed, caplog):
    _, data = probed
    paths = [p for p in results_dir().glob("*/probe/*.json")
             if json.loads(p.read_text())["key"].get("data") == data]
    victim = paths[0]
    stored = json.loads(victim.read_text())
    before = len(cached_probes(task="punct_num").query("data == @data"))
    victim.write_text(json.dumps({**stored, "result": {**stored["result"], "accuracy": 0.99}}))
    try:
        assert len(cached_probes(task="punct_num").query("data == @data")) == before - 1
        assert "is unreadable or edited: left out" in caplog.text
    finally:
        victim.write_text(json.dumps(stored))


def test_the_results_command_prints_the_table_and_writes_it(probed, tmp_path, capsys):
    from workbench.cli import main
    out = tmp_path / "results.csv"
    assert main(["results", "--task", "punct_num", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "sp-en-fr:semantic" in printed and "%, " in printed and "encoders" in printed
    import pandas as pd
    assert {"seconds", "device", "versions", "best"} <= set(pd.read_csv(out).columns)
    assert main(["results", "--task", "no_such_task", "--layer", "7"]) == 2  # a misspelt filter: named, with
    said = capsys.readouterr().err  # what there is
    assert "holds no probe results for task 'no_such_task' (tasks probed: " in said
    assert "nor for layer 7 (layers probed: " in said  # the tasks listed are those of this home's cache
    with pytest.raises(WorkbenchError, match="encoder ' ' is blank"):
        cached_probes(encoder=" ")
