"""Bad input gets a clear error (exit 2 and a message that says what is valid, no traceback), and damaged files
are refused by name instead of being used: training settings, checkpoints and model folders."""
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from workbench.cli import main
from workbench.checks import WorkbenchError
from workbench.models.untrained import RandomEmbeddingAverage
from workbench.models.folder import load, model_path
from workbench.paths import config_digest, sealed_config
from workbench.training.recipes import TrainConfig
from workbench.training.trainer import Trainer


@pytest.mark.parametrize("flags, message", [
    (["--max-updates", "-5"], "max_updates must be an integer ≥ 1 (got -5)"),
    (["--max-updates", "0"], "max_updates must be an integer ≥ 1 (got 0)"),
    (["--max-seconds", "0"], "max_seconds must be a number > 0 (got 0.0)"),
    (["--max-seconds", "nan"], "max_seconds must be a number > 0 (got nan)"),
    (["--seed", "-1"], "seed must be an integer from 0 to 2**32 - 1 (got -1)"),
    (["--seed", str(10 ** 20)], "seed must be an integer from 0 to 2**32 - 1 (got 1000"),  # was: torch's overflow
])
def test_train_flags_out_of_range_exit_2_with_what_is_valid(flags, message, tmp_path, capsys):
    assert main(["train", "--preset", "tiny", "--out", str(tmp_path / "run"), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()  # refused before any work


@pytest.mark.parametrize("values, message", [
    ({"save_every": 0}, "save_every must be an integer ≥ 1 (got 0)"),
    ({"valid_every": -1}, "valid_every must be an integer ≥ 1 (got -1)"),
    ({"eval_every": -1}, "eval_every must be an integer ≥ 0 (0: never) (got -1)"),
    ({"lr": 0}, "lr must be a number > 0 (got 0)"),
    ({"lr": "fast"}, "lr must be a number > 0 (got 'fast')"),
    ({"max_tokens": 1.5}, "max_tokens must be an integer ≥ 1 (got 1.5)"),
    ({"update_freq": True}, "update_freq must be an integer ≥ 1 (got True)"),
    ({"max_pairs": -5}, "max_pairs must be an integer ≥ 0 (0: all pairs) (got -5)"),
    ({"max_sentence_len": 1}, "max_sentence_len must be an integer ≥ 2 (EOS included) (got 1)"),
    ({"betas": [0.9, 1.0]}, "betas must be two numbers in [0, 1) (got (0.9, 1.0))"),
    ({"clip_norm": 0, "weight_decay": -1}, "weight_decay must be a number ≥ 0 (got -1); clip_norm must be"),
    ({"kl_x0": 0}, "kl_x0 must be an integer ≥ 1 (got 0)"),
    ({"keep_checkpoints": 0}, "keep_checkpoints must be an integer ≥ 1 (got 0)"),
])
def test_config_files_with_values_out_of_range_are_refused(values, message, tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"preset": "tiny", **values}))
    with pytest.raises(WorkbenchError, match="invalid training config"):
        TrainConfig.from_file(path)
    assert main(["train", "--config", str(path), "--out", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err


def _resume(run):
    cfg = TrainConfig.from_preset("tiny", max_pairs=1000, max_valid_pairs=100, max_updates=6, save_every=2,
                                  valid_every=4, eval_every=0)
    return Trainer(cfg, run, resume=True, show_progress=False)


@pytest.mark.parametrize("file", ["model.safetensors", "trainer_state.safetensors", "spm.model"])
def test_a_damaged_checkpoint_file_is_refused_by_name_on_resume_and_load(run_copy, file):
    path = run_copy / "checkpoints" / "update-4" / file
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the middle
    path.write_bytes(bytes(data))
    with pytest.raises(WorkbenchError, match=f"{file} is missing or does not match the sha256"):
        _resume(run_copy)
    if file != "trainer_state.safetensors":
        with pytest.raises(WorkbenchError, match=f"{file} is missing or does not match"):
            load(run_copy)


def test_a_shipped_model_with_another_pairs_sentencepiece_model_is_refused(tmp_path):
    folder = tmp_path / "bgt-en-es"
    shutil.copytree(model_path("bgt-en-es"), folder)
    shutil.copyfile(model_path("bgt-en-fr") / "spm.model", folder / "spm.model")
    meta = json.loads((folder / "config.json").read_text())
    assert "spm.model" in meta["files_sha256"]  # today's exports record every file's sha256
    with pytest.raises(WorkbenchError, match="spm.model is missing or does not match the sha256 recorded"):
        load(folder)
    del meta["files_sha256"]  # no digests, even resealed by hand: the tokenizer's sha256 still catches it
    meta["config_sha256"] = config_digest(meta)
    (folder / "config.json").write_text(json.dumps(meta))
    for trusted in (False, True):
        with pytest.raises(WorkbenchError, match="spm.model is .*not the sentencepiece model"):
            load(folder, trust_unverified=trusted)


def test_a_model_folder_whose_config_has_an_unknown_key_is_refused_by_file(tmp_path, capsys):
    folder = tmp_path / "sp-edited"
    shutil.copytree(model_path("sp-en-fr"), folder)
    meta = json.loads((folder / "config.json").read_text())
    meta["model"]["hidden_sizee"] = 3  # a typo in a hand edit, sealed again (else the seal refuses it first)
    (folder / "config.json").write_text(sealed_config(meta))
    with pytest.raises(WorkbenchError, match=rf"{re.escape(str(folder))}/config.json: unknown model config keys "
                                             r"\['hidden_sizee'\]; valid: "):
        load(folder)
    assert main(["probe", "--model", str(folder), "--task", "length"]) == 2
    assert "unknown model config keys ['hidden_sizee']" in capsys.readouterr().err


def test_a_non_finite_loss_stops_training_and_keeps_the_last_good_checkpoint(run_copy):
    state = load_file(str(run_copy / "checkpoints" / "update-4" / "model.safetensors"))
    trainer = _resume(run_copy)
    with torch.no_grad():
        next(trainer.model.parameters()).fill_(float("nan"))
    with pytest.raises(WorkbenchError, match=r"update 5: the loss became nan .* last good checkpoint is update-4"):
        trainer.run()
    assert (run_copy / "latest").read_text() == "update-4"
    kept = load_file(str(run_copy / "checkpoints" / "update-4" / "model.safetensors"))
    assert all(torch.equal(kept[k], state[k]) for k in state)  # nothing non-finite was saved


@pytest.mark.parametrize("content, message", [
    (b'preset = "tiny"\nmax_updates = \n', "run.toml: cannot parse it as TOML (Invalid value (at line 2, column 15))"),
    (b'preset = "tiny"\nlr = 1e-3\n\xff\xfe', "is not UTF-8 text"),
    (b'model = "bgt"\nlearning_rate = 1e-3\n', "unknown training config keys learning_rate; valid:"),
])
def test_unreadable_config_files_give_one_line_not_a_traceback(content, message, tmp_path, capsys):
    path = tmp_path / "run.toml"
    path.write_bytes(content)
    assert main(["train", "--config", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_inputs_and_unwritable_outputs_name_the_path(tmp_path, capsys):
    missing = tmp_path / "nope.txt"
    assert main(["encode", "--encoder", "random-sp-average", "--input", str(missing), "--out",
                 str(tmp_path / "x.npy")]) == 2
    assert f"No such file or directory: {missing}" in capsys.readouterr().err
    (tmp_path / "in.txt").write_text("A man is playing a guitar.\n")
    out = tmp_path / "no" / "such" / "dir" / "x.npy"
    assert main(["encode", "--encoder", "random-sp-average", "--input", str(tmp_path / "in.txt"),
                 "--out", str(out)]) == 2
    assert f"folder {out.parent} does not exist" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError):  # --debug shows the real exception for bug reports
        main(["--debug", "encode", "--encoder", "random-sp-average", "--input", str(missing), "--out",
              str(tmp_path / "x.npy")])


def test_a_workbench_home_that_is_a_file_is_named(tmp_path, monkeypatch, capsys):
    (tmp_path / "home").write_text("not a folder")
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "home"))
    assert main(["cache", "ls"]) == 2
    assert f"WORKBENCH_HOME={tmp_path / 'home'} is a file; it must name a folder" in capsys.readouterr().err


def test_a_token_budget_no_pair_fits_says_to_raise_it(tmp_path):
    trainer = Trainer(TrainConfig.from_preset("tiny", max_tokens=5, max_pairs=300, max_valid_pairs=50, eval_every=0,
                                              valid_every=1000), tmp_path / "run", show_progress=False)
    with pytest.raises(WorkbenchError, match="no training pair fits in max_tokens=5 tokens .* raise max_tokens"):
        trainer.run()


def test_encode_refuses_non_finite_vectors_as_probe_does(run_copy, tmp_path, capsys):
    from safetensors.torch import save_file
    from workbench.models.folder import file_digests, latest_checkpoint
    folder = latest_checkpoint(run_copy)
    weights = load_file(str(folder / "model.safetensors"))
    weights = {k: (torch.full_like(v, float("nan")) if v.is_floating_point() else v) for k, v in weights.items()}
    save_file(weights, str(folder / "model.safetensors"))
    config = json.loads((folder / "config.json").read_text())
    config["files_sha256"] = {**config["files_sha256"], **file_digests(folder, ("model.safetensors",))}
    (folder / "config.json").write_text(sealed_config(config))  # a consistent, resealed folder whose weights are NaN
    (tmp_path / "in.txt").write_text("A man is playing a guitar.\nTom is here.\n")
    out = tmp_path / "x.npy"
    assert main(["encode", "--model", str(folder), "--encoder", "semantic", "--input", str(tmp_path / "in.txt"),
                 "--out", str(out)]) == 2
    assert "returned NaN/inf for 2 of 2 sentences" in capsys.readouterr().err and not out.exists()


def test_api_values_out_of_range_say_what_is_valid(tmp_path):
    import workbench as wb
    from workbench.cache import clear_cache
    from workbench.evaluation.significance import paired_bootstrap
    from workbench.style_transfer.generation import transfer
    from workbench.probing.build import build_task
    with pytest.raises(WorkbenchError, match=r"probing sizes must give train, valid, test as whole numbers from 1 to 10,000,000"):
        build_task("length", sizes={"train": -5, "valid": 3, "test": 100})
    with pytest.raises(WorkbenchError, match="n_boot must be a whole number of resamples from 100"):
        paired_bootstrap([1, 2, 3, 4], [1, 2, 3, 5], [2, 1, 3, 4], n_boot=0)
    bgt = load("bgt-en-fr")
    with pytest.raises(WorkbenchError, match="max_len must be a whole number of pieces from 1 to the model's max"):
        transfer(bgt, ["A man is here."], ["She said so."], max_len=-5)
    with pytest.raises(WorkbenchError, match="sources must be a list of sentences, not one string"):
        transfer(bgt, "hello .", "thanks.")
    with pytest.raises(WorkbenchError, match=r"styles must be sentences \(str\); got \['NoneType'\]"):
        transfer(bgt, ["A man is here."], [None])
    with pytest.raises(WorkbenchError, match=r"task 'length': its valid split came out empty \(asked for "
                                             r"train/valid/test 100/1/10, built 100/0/10\)\. Each of its 6 labels"):
        wb.probe(wb.untrained_encoder("random-sp-average"), "length", sizes={"train": 100, "valid": 1, "test": 10})
    with pytest.raises(WorkbenchError, match="encode takes sentences as strings; item 1 is a NoneType"):
        wb.untrained_encoder("random-sp-average").encode(["a", None])
    with pytest.raises(WorkbenchError, match="sources hold bytes that are not UTF-8 text"):
        transfer(bgt, ["caf\udce9 ."], ["She said so."])  # how Python hands over a Latin-1 terminal's bytes
    with pytest.raises(WorkbenchError, match="STS12-16 holds en, and encoder 'bgt-en-fr:fr' declares fr: evaluate it"):
        wb.evaluate(bgt.encoder("fr"), "sts")
    with pytest.raises(WorkbenchError, match="nothing cached for encoder 'nosuch'"):
        clear_cache("nosuch")

    class Escaping:
        name, dim, fingerprint = "escaping", 4, "../../outside"

        def encode(self, sentences, **kw):
            return np.zeros((len(sentences), 4), dtype=np.float32)
    with pytest.raises(WorkbenchError, match="fingerprints name cache folders"):
        wb.cached(Escaping()).encode(["a"])


# --- the table: every bad CLI input exits 2 with one line that says what was wrong, and touches nothing -------

def _files(root):
    """{path: (size, mtime)} of every file under ``root`` (what a command must not change)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()} if root.is_dir() else {}


@pytest.fixture()
def inputs(tmp_path):
    """Small input files of every kind a user might get wrong."""
    (tmp_path / "in.txt").write_text("A man is playing a guitar.\n")
    (tmp_path / "latin.txt").write_bytes(b"\xff\xfeabc\n")
    (tmp_path / "exists.csv").write_text("x\n")
    (tmp_path / "amodel").mkdir()
    (tmp_path / "amodel" / "config.json").write_text('{"model_type": "bert"}')  # a (Hugging Face) model folder
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "STS12.json").write_text("{}")  # results of an earlier --mteb
    (tmp_path / "adir").mkdir()
    (tmp_path / "blank.txt").write_text("")
    os.mkfifo(tmp_path / "fifo")  # reading it would wait for a writer for ever
    (tmp_path / "emptyrun").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "manifest.json").write_text("{}")
    (tmp_path / "pairs.csv").write_text('source,style\n"A man.","She ran."\n')
    (tmp_path / "badpairs.csv").write_text("src,sty\na,b\n")
    (tmp_path / "nocols.csv").write_text("encoder,task,metric\na,b,c\n")
    (tmp_path / "nonnum.csv").write_text("encoder,task,metric,value\na,length,accuracy,high\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("encoder,task,metric,value\n")
    (tmp_path / "bad.toml").write_text('preset = "tiny"\nmax_updates = \n')
    (tmp_path / "bad.json").write_text('{"preset": "tiny", "lr": }')
    (tmp_path / "ragged.tsv").write_text("source\tstyle\nA man.\tShe ran.\nx\ty\tz\n")
    (tmp_path / "nopairs.tsv").write_text("source\tstyle\n")
    (tmp_path / "onelabel.csv").write_text("sentence,label\n" + "".join(f"s {i},q\n" for i in range(12)))
    (tmp_path / "length.csv").write_text((tmp_path / "onelabel.csv").read_text())
    (tmp_path / "fewlabel.csv").write_text("sentence,label\n" + "".join(f"s {i},{'qs'[i < 3]}\n" for i in range(15)))
    (tmp_path / "twosplits.tsv").write_text("split\tlabel\tsentence\n" + "".join(
        f"{split}\t{label}\t{label} {i}\n" for split in ("tr", "va", "te") for label in "ab" for i in range(10)))
    (tmp_path / "twolabels.jsonl").write_text("".join(f'{{"sentence": "s {i % 19}", "label": {i % 2}}}\n'
                                                      for i in range(40)))
    (tmp_path / "huge.toml").write_text('preset = "tiny"\n[overrides]\nd_model = 1000000000\n')
    return tmp_path


SP = ["--encoder", "random-sp-average"]
CLI_CASES = [  # (argv with {tmp} for the test's folder, a fragment of the one-line message)
    # train
    ("train --preset nosuch --out {tmp}/r", "invalid choice: 'nosuch' (choose from 'tiny', 'cpu'"),
    ("train --model nosuch --out {tmp}/r", "argument --model: invalid choice: 'nosuch'"),
    ("train --pair en-de --out {tmp}/r", "no corpus for the language pair en-de: register a parallel file with "
                                         "`workbench data add-pair en-de --corpus FILE`"),
    ("train --pair fr-en --out {tmp}/r", "language pair 'fr-en': English comes first (en-fr)"),
    ("train --pair fr-es --out {tmp}/r", "no corpus for the language pair fr-es: make it from the English en-fr and "
                                         "en-es share with `workbench data add-pair fr-es --pivot`"),
    ("train --model english_ae --pair fr-es --out {tmp}/r", "english_ae reads English on one side, so it trains on "
                                                            "en-XX pairs only"),
    ("train --max-updates abc --out {tmp}/r", "argument --max-updates: invalid int value: 'abc'"),
    ("train --max-seconds soon --out {tmp}/r", "argument --max-seconds: invalid float value: 'soon'"),
    ("train --config {tmp}/missing.toml --out {tmp}/r", "No such file or directory: {tmp}/missing.toml"),
    ("train --config {tmp}/adir --out {tmp}/r", "Is a directory: {tmp}/adir"),
    ("train --config {tmp}/bad.toml --out {tmp}/r", "{tmp}/bad.toml: cannot parse it as TOML ("),
    ("train --config {tmp}/bad.json --out {tmp}/r", "{tmp}/bad.json, line 1, column"),
    ("train --config {tmp}/latin.txt --out {tmp}/r", "{tmp}/latin.txt is not UTF-8 text"),
    ("train --preset tiny --out {tmp}/r --resume", "{tmp}/r is neither a checkpoint (no model.safetensors) nor a "
                                                   "run directory (no latest)"),
    ("train --preset tiny --out {tmp}/r --init-from nosuch", "no model at 'nosuch': give a run directory"),
    ("train --preset tiny --out {tmp}/exists.csv", "--out {tmp}/exists.csv is a file; give a run directory"),
    ("train --model wmf --preset tiny --out {tmp}/emptyrun --resume", "wmf is fitted in one go"),
    ("train --config {tmp}/huge.toml --out {tmp}/r", "would have far more than a tensor can hold, more than the 2 "
                                                      "billion parameters"),
    # probe
    ("probe --encoder random-sp-average --task nosuch", "unknown probing task 'nosuch'; valid: bigram_shift, "),
    ("probe --encoder random-sp-average --task nosuch", "; or the path of a .tsv, .csv or .jsonl file of your own"),
    # own tasks: one sentence for each way a file of labelled sentences can be wrong
    ("probe --encoder random-sp-average --task {tmp}/missing.tsv", "{tmp}/missing.tsv: no such file"),
    ("probe --encoder random-sp-average --task {tmp}/latin.txt", "{tmp}/latin.txt is not UTF-8 text"),
    ("probe --encoder random-sp-average --task {tmp}/empty.csv", "{tmp}/empty.csv is empty; an own task is a .tsv"),
    ("probe --encoder random-sp-average --task {tmp}/pairs.csv",
     "{tmp}/pairs.csv has no sentence column 'sentence'; its columns: source, style"),
    ("probe --encoder random-sp-average --task {tmp}/pairs.csv --sentence-column source --label-column nope",
     "{tmp}/pairs.csv has no label column 'nope'"),
    ("probe --encoder random-sp-average --task {tmp}/onelabel.csv", "every sentence has the label 'q'; a probe needs"),
    ("probe --encoder random-sp-average --task {tmp}/fewlabel.csv", "label(s) 's' (3) have fewer than 10 sentences"),
    ("probe --encoder random-sp-average --task {tmp}/twosplits.tsv", "20 sentence(s) in two splits (first: 'a 0')"),
    ("probe --encoder random-sp-average --task {tmp}/twolabels.jsonl", "19 sentence(s) carry two labels"),
    ("probe --encoder random-sp-average --task {tmp}/onelabel.csv --task-language xq", "unknown language code 'xq'"),
    ("probe --encoder random-sp-average --task {tmp}/length.csv", "own task name 'length' is a shipped task's"),
    ("probe --encoder random-sp-average --task length --classifier svm", "invalid choice: 'svm'"),
    ("probe --encoder random-sp-average --task length --train-size -5 --valid-size 3 --test-size 100",
     "probing sizes must give train, valid, test as whole numbers from 1 to 10,000,000"),
    ("probe --encoder random-sp-average --task length --train-size 0 --valid-size 3 --test-size 100",
     "probing sizes must give train, valid, test as whole numbers from 1 to 10,000,000 (got {'train': 0"),
    ("probe --encoder random-sp-average --task length --train-size 5", "give all of --train-size"),
    ("probe --encoder random-sp-average --task length --train-size five", "invalid int value: 'five'"),
    ("probe --model '' --task length", "--model '' is empty: give a shipped model's name"),
    ("evaluate --model ' ' --suite sts", "--model ' ' is empty"),
    ("encode --encoder '' --input {tmp}/in.txt --out {tmp}/x.npy", "--encoder '' is empty: give an encoder"),
    ("probe --encoder nosuch --task length", "unknown encoder 'nosuch'; valid: hf:PATH[@LAYER], minilm, "
                                             "random-sp-average"),
    ("probe --model bgt-en-fr --layer 9 --task length", "layer 9 does not exist in bgt-en-fr:semantic: 0 (embeddings) "
                                                        "to 2"),
    ("probe --model sp-en-fr --layer 1 --task length", "sp-en-fr:semantic has no layers to choose from"),
    ("probe --model bgt-en-fr --layers top --task length", "--layers takes layer numbers or 'all', not 'top'"),
    ("probe --model bgt-en-fr --layers 0 1 --given en --task length", "--layers sweeps one encoder"),
    ("probe --encoder random-sp-average --trust-unverified --task length", "--trust-unverified applies to a --model"),
    ("probe --model nosuch --task length", "no model at 'nosuch': give a run directory, a checkpoint folder"),
    ("probe --model bgt-en-fr --encoder de --task length", "unknown encoder view 'de'; valid: en, fr, semantic"),
    ("probe --model bgt-en-fr --encoder fr --task length",
     "task 'length' is in 'en' but encoder 'bgt-en-fr:fr' reads fr"),
    ("probe --model bgt-en-fr --encoder en --task gender_fr",
     "task 'gender_fr' is in 'fr' but encoder 'bgt-en-fr:en' reads en"),
    ("probe --model bgt-en-fr --encoder en --task language_id_en_fr",
     "holds en and fr sentences but encoder 'bgt-en-fr:en' reads en: use an encoder that reads all of them"),
    ("probe --model bgt-en-fr --given de --task length", "unknown encoder view 'de'; valid: en, fr, semantic"),
    ("probe --encoder random-sp-average --given en --task length", "--given names a view of --model"),
    ("probe --encoder random-sp-average --task length --out {tmp}/no/x.csv",
     "--out {tmp}/no/x.csv: folder {tmp}/no does not exist"),
    ("probe --encoder random-sp-average --task length --out {tmp}/exists.csv",
     "--out {tmp}/exists.csv exists; --force replaces it"),
    ("probe --encoder random-sp-average --task length --out {tmp}/adir", "is a folder; give a file name"),
    ("probe --encoder random-sp-average --task length --out {tmp}/latin.txt/x.csv", "does not exist"),
    ("probe --encoder random-sp-average --task length --control last_word",
     "argument --control: invalid choice: 'last_word'"),
    ("probe --encoder random-sp-average --task length --mdl --classifier mlp",
     "MDL probing is implemented for the logreg probe, not 'mlp'"),
    ("probe --encoder random-sp-average --pair en-xx --task length", "unknown language code 'xx': give an ISO 639-1"),
    ("probe --encoder random-sp-average --task length --seeds 0", "--seeds must be a whole number from 1 to 100 (got 0)"),
    ("probe --model bgt-en-fr --encoder semantic --given en --task length --seeds 3",
     "--seeds averages plain probes of one encoder: drop --given / --layers, or --seeds"),
    # evaluate
    ("evaluate --encoder random-sp-average --suite nosuch", "argument --suite: invalid choice: 'nosuch'"),
    ("evaluate --encoder random-sp-average --suite sts17 --tracks en-en,xx-yy", "unknown STS17 track 'xx-yy'"),
    ("encode --encoder random-sp-average --input '{tmp}/a\x00b' --out {tmp}/x.npy", "holds a NUL character"),
    ("probe --encoder random-sp-average --task length --sentence-column text",
     "--sentence-column describe a task file of your own; no --task names one"),
    ("report --results {tmp}/results.csv --out ''", "--out '' is empty"),
    ("transfer --model bgt-en-fr --source 'A man.' --style 'She left.' --beam 99999999999999999999",
     "beam must be a whole number from 1 (greedy) to 64"),
    ("evaluate --model bgt-en-fr --encoder fr --suite sts",
     "STS12-16 holds en, and encoder 'bgt-en-fr:fr' declares fr: evaluate it anyway with force_languages"),
    ("evaluate --model bgt-en-fr --encoder fr --suite hard_sts", "Hard STS holds en, and encoder 'bgt-en-fr:fr' declares fr"),
    ("evaluate --model bgt-en-fr --encoder en --suite tatoeba",
     "Tatoeba holds en and one of fr, es, ar, tr, ja, and encoder 'bgt-en-fr:en' declares en"),
    ("evaluate --model bgt-en-fr --suite sts --against nosuch", "--against 'nosuch': not a named encoder (random-transformer, "),
    ("evaluate --model bgt-en-fr --suite sts --against bgt-en-fr:de", "unknown encoder view 'de'; valid: en, fr, "),
    ("evaluate --model bgt-en-fr --suite sts --against ''", "--against is empty: give an encoder name"),
    ("evaluate --model bgt-en-fr --suite sts --against random-sp-average --n-boot 0",
     "n_boot must be a whole number of resamples from 100 to 1,000,000 (got 0)"),
    ("evaluate --model bgt-en-fr --suite sts --against random-sp-average --n-boot -3", "n_boot must be"),
    ("evaluate --model bgt-en-fr --suite tatoeba --against random-sp-average",
     "--against tests STS 2012-16 and Hard STS; --suite tatoeba has no paired test (valid with --against: sts, "
     "hard_sts, all)"),
    ("evaluate --model bgt-en-fr --suite sts --out {tmp}/exists.csv", "--out {tmp}/exists.csv exists"),
    ("evaluate --model bgt-en-fr --suite sts --out {tmp}/no/x.csv", "folder {tmp}/no does not exist"),
    ("evaluate --model {tmp}/emptyrun", "{tmp}/emptyrun is neither a checkpoint"),
    # encode
    ("encode --encoder random-sp-average --input {tmp}/missing.txt --out {tmp}/x.npy",
     "No such file or directory: {tmp}/missing.txt"),
    ("encode --encoder random-sp-average --input {tmp}/in.txt --out {tmp}/no/x.npy", "folder {tmp}/no does not"),
    ("encode --encoder random-sp-average --input {tmp}/in.txt --out {tmp}/exists.csv", "exists; --force"),
    ("encode --encoder random-sp-average --input {tmp}/in.txt --out {tmp}/adir", "is a folder; give a file"),
    ("encode --encoder random-sp-average --input {tmp}/latin.txt --out {tmp}/x.npy",
     "{tmp}/latin.txt is not UTF-8 text"),
    ("encode --encoder random-sp-average --input {tmp}/adir --out {tmp}/x.npy", "Is a directory: {tmp}/adir"),
    ("encode --encoder nosuch --input {tmp}/in.txt --out {tmp}/x.npy", "unknown encoder 'nosuch'"),
    ("encode --encoder random-sp-average --input {tmp}/in.txt", "the following arguments are required: --out"),
    # transfer
    ("transfer --model bilingual_trans-en-fr --source A --style B", "style transfer needs a BGT model"),
    ("transfer --max-len -5 --source A --style B", "max_len must be a whole number of pieces from 1 to the model's"),
    ("transfer --max-len 0 --source A --style B", "max_len must be a whole number of pieces from 1 to the model's"),
    ("transfer --max-len 99999999999 --source A --style B", "from 1 to the model's maximum, 64 (the default), got "
                                                           "99999999999"),
    ("transfer --n 0 --source A --style B", "--n sets the size of --eval's held-out sample; it does nothing with one"),
    ("transfer --eval --n 5 --pairs {tmp}/pairs.csv", "it does nothing with --pairs (all its rows are scored)"),
    ("transfer --eval --n 0", "n must be a positive number of pairs, got 0"),
    ("transfer --source A --style B --out {tmp}/t.csv", "--out writes the batch table (--pairs FILE) or --eval's"),
    ("transfer --pairs ''", "--pairs '' is empty; give a value (`workbench transfer --help` says what it takes)"),
    ("transfer --beam 0 --source A --style B", "beam must be a whole number from 1 (greedy) to 64, got 0"),
    ("transfer --beam many --source A --style B", "argument --beam: invalid int value: 'many'"),
    ("transfer --rerank 2 --source A --style B", "--rerank takes two weights MEANING,FORM (e.g. 2,1), or none"),
    ("transfer --rerank 2,-1 --source A --style B", "rerank takes two weights (meaning, form), each a number >= 0"),
    ("transfer --paper --rerank none --source A --style B", "--paper is the paper's decoding"),
    ("transfer --pairs {tmp}/missing.csv", "{tmp}/missing.csv: no such file"),
    ("transfer --pairs {tmp}/badpairs.csv", "the pairs table lacks columns ['source', 'style']"),
    ("transfer --pairs {tmp}/ragged.tsv", "{tmp}/ragged.tsv: line 3 has another number of TSV cells than the "
                                          "header's 2"),
    ("transfer --pairs {tmp}/nopairs.tsv", "{tmp}/nopairs.tsv has a header but no pairs"),
    ("transfer --pairs {tmp}/empty.csv", "{tmp}/empty.csv is empty; a pairs file has a header"),
    ("transfer --model bgt-small-en-fr --source A --style B", "holds encoders only (its decoders were not kept)"),
    ("transfer --pairs {tmp}/latin.txt", "latin.txt is not UTF-8 text; save it as UTF-8"),
    ("transfer --source A", "give --source and --style sentences, or --pairs FILE"),
    ("transfer", "give --source and --style sentences, or --pairs FILE"),
    ("transfer --model nosuch --source A --style B", "no model at 'nosuch'"),
    ("transfer --pairs {tmp}/pairs.csv --out {tmp}/exists.csv", "--out {tmp}/exists.csv exists"),
    # models export / import
    ("models export {tmp}/emptyrun --name .", "'.' is not a valid model name: use letters, digits"),
    ("models export {tmp}/emptyrun --name ..", "'..' is not a valid model name"),
    ("models export {tmp}/emptyrun --name ../x", "'../x' is not a valid model name"),
    ("models export {tmp}/emptyrun --name a/b", "'a/b' is not a valid model name"),
    ("models export {tmp}/emptyrun --name -x", "argument --name: expected one argument"),
    ("models export {tmp}/emptyrun --name .hidden", "'.hidden' is not a valid model name"),
    ("models export {tmp}/emptyrun --name", "argument --name: expected one argument"),
    ("models export {tmp}/emptyrun", "the following arguments are required: --name"),
    ("models export {tmp}/emptyrun --name ''", "name the model to export"),
    ("models export {tmp}/missing --name x1", "{tmp}/missing is neither a checkpoint"),
    ("models export {tmp}/emptyrun --name x2", "{tmp}/emptyrun is neither a checkpoint"),
    ("models export {tmp}/emptyrun --name x2 --checkpoint first", "checkpoint must be best, latest or an update number, not 'first'"),
    ("models import {tmp}/missing", "{tmp}/missing is not a model package (no manifest.json)"),
    ("models import {tmp}/pkg",
     "unknown package format None (expected 'bgt-workbench model package 2' or the older 'bgt-workbench model package 1')"),
    ("models import {tmp}/in.txt", "is not a model package"),
    ("models delete bgt-en-fr", "argument ACTION: invalid choice: 'delete'"),
    # cache
    ("cache clear --encoder nosuch", "nothing cached for encoder 'nosuch'"),
    ("cache clear --stale --encoder x", "give --stale or --encoder, not both"),
    ("cache clear --stale --encoder ''", "give --stale or --encoder, not both"),
    ("models retrain --dry-run --only sp-en-fr --runs ' '", "--runs ' ' is empty; give a value"),
    ("models retrain --dry-run --only sp-en-fr --runs {tmp}/in.txt", "--runs {tmp}/in.txt is a file; give the folder"),
    # before any work: empty values, FIFOs, bounds on options a command would not use, a report's .html
    ("probe --model bgt-en-fr --given '' --task length", "--given '' is empty; give a value"),
    ("evaluate --encoder random-sp-average --mteb ' '", "--mteb ' ' is empty; give a value"),
    # before any evaluation (#79): never into a model folder, never over earlier results without --force
    ("evaluate --model bgt-en-fr --suite sts --mteb trained", "--mteb trained is inside trained/"),
    ("evaluate --model bgt-en-fr --suite sts --mteb trained/bgt-en-fr", "is inside the model folder "),
    ("evaluate --encoder random-sp-average --suite sts17 --tracks ,", "--tracks ',' names no STS17 track; valid: ar-ar"),
    ("evaluate --encoder random-sp-average --mteb {tmp}/amodel/results", "is inside the model folder {tmp}/amodel"),
    ("evaluate --encoder random-sp-average --mteb {tmp}/earlier", "--mteb {tmp}/earlier already holds STS12.json; "
     "--force replaces them"),
    ("evaluate --encoder random-sp-average --mteb {tmp}/exists.csv", "--mteb {tmp}/exists.csv is a file"),
    ("train --out ''", "--out '' is empty; give a folder"),
    ("train --config {tmp}/fifo --out {tmp}/r", "--config {tmp}/fifo is not a regular file or folder (a FIFO"),
    ("probe --encoder random-sp-average --task {tmp}/fifo", "--task {tmp}/fifo is not a regular file or folder"),
    ("report --results {tmp}/fifo --out {tmp}/rep", "--results {tmp}/fifo is not a regular file or folder"),
    ("encode --encoder random-sp-average --input {tmp}/blank.txt --out {tmp}/x.npy",
     "{tmp}/blank.txt holds no sentences (one sentence per line)"),
    ("evaluate --encoder random-sp-average --n-boot 0", "n_boot must be a whole number of resamples from 100 to"),
    ("probes baselines --tasks length --train-size 99999999999999999999 --valid-size 1 --test-size 1",
     "as whole numbers from 1 to 10,000,000"),
    ("reproduce --out {tmp}/exists.csv", "the report is an .html file (its CSV and figures go beside it); give a "
                                         "name ending in .html, such as exists.html"),
    ("cache purge", "argument ACTION: invalid choice: 'purge'"),
    # report
    ("report --results {tmp}/missing.csv --out {tmp}/rep", "No such file or directory: {tmp}/missing.csv"),
    ("report --results {tmp}/nocols.csv --out {tmp}/rep", "result frame lacks columns ['value']"),
    ("report --results {tmp}/nonnum.csv --out {tmp}/rep", "result column 'value' must hold numbers; row 0 has"),
    ("report --results {tmp}/empty.csv --out {tmp}/rep", "not a results CSV"),
    ("report --results {tmp}/header.csv --out {tmp}/rep", "the results CSV has no rows"),
    ("report --results {tmp}/latin.txt --out {tmp}/rep", "{tmp}/latin.txt is not UTF-8 text"),
    ("report --results {tmp}/adir --out {tmp}/rep", "Is a directory"),
    ("report --results {tmp}/nocols.csv --out {tmp}/exists.csv", "--out {tmp}/exists.csv is a file; give a folder"),
    ("report --results {tmp}/nocols.csv --out {tmp}/exists.csv/sub", "{tmp}/exists.csv is a file, so the folder"),
    ("report --out {tmp}/rep", "the following arguments are required: --results"),
    # demo, curve, reproduce, probes, data
    ("demo --train-size -1", "probing sizes must give train, valid, test as whole numbers from 1 to 10,000,000"),
    ("demo --test-size 0", "probing sizes must give train, valid, test as whole numbers from 1 to 10,000,000"),
    ("demo --years 2010", "argument --years: invalid choice: 2010"),
    ("demo --pair en-xx", "argument --pair: invalid choice: 'en-xx'"),
    ("demo --out {tmp}/exists.csv", "--out {tmp}/exists.csv is a file; give a folder"),
    ("curve nosuch --out {tmp}/c", "nosuch has no metrics.jsonl (a training run) or curve.csv (a shipped model)"),
    ("curve bgt-en-fr --out {tmp}/exists.csv", "is a file; give a folder"),
    ("curve --out {tmp}/c", "the following arguments are required: RUN"),
    ("reproduce --out {tmp}/adir", "--out {tmp}/adir is a folder; give a file name"),
    ("curve bgt-en-fr --out trained/bgt-en-fr/curve", "is inside the model folder"),  # was: written into it
    ("train --preset tiny --max-updates 1 --out trained/a-run", "--out trained/a-run is inside trained/"),
    ("encode --encoder random-sp-average --input {tmp}/in.txt --out trained/x.npy", "is inside trained/"),
    ("reproduce --out /proc/x.html", "--out /proc/x.html: cannot write in /proc"),  # before 13 minutes of work
    ("reproduce --years 2011", "argument --years: invalid choice: 2011"),
    ("probes build --tasks nosuch", "invalid choice: 'nosuch'"),
    ("probes build --tasks length --train-size 5", "give all of --train-size"),
    ("probes baselines --baselines bow", "argument --baselines: invalid choice: 'bow'"),
    ("probes baselines --tasks length --out {tmp}/exists.csv", "exists; --force replaces it"),
    ("data info --pair en-xx", "unknown language code 'xx'"),
    ("data add-pair en-pt --corpus {tmp}/missing.tsv", "no corpus file at"),
    ("data fetch", "invalid choice: 'fetch'"),
    ("models list --bogus", "unrecognized arguments: --bogus"),
    ("nosuch", "argument COMMAND: invalid choice: 'nosuch'"),
]


@pytest.mark.parametrize("line, message", CLI_CASES, ids=[line for line, _ in CLI_CASES])
def test_bad_cli_input_is_one_clear_line_with_exit_2_and_changes_nothing(line, message, inputs, capsys):
    import shlex

    from workbench.paths import REPO_ROOT, home_dir
    argv = [part.replace("{tmp}", str(inputs)) for part in shlex.split(line)]
    before = {root: _files(root) for root in (REPO_ROOT / "trained", home_dir())}
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors (unknown choices, missing arguments)
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert message.replace("{tmp}", str(inputs)) in err
    assert "Traceback" not in err and len([x for x in err.splitlines() if "error" in x]) == 1
    assert {root: _files(root) for root in before} == before  # nothing outside the command's output changed
    assert not (inputs / "r").exists() and not (inputs / "rep").exists() and not (inputs / "x.npy").exists()


# --- the same for the Python API: a WorkbenchError that says what is valid, and nothing touched ---------------

class Constant:
    """A user-written encoder (constant output) with a chosen name, dimension and fingerprint."""

    def __init__(self, name="constant", dim=4, fingerprint="constant-v1", languages=("en",)):
        self.name, self.dim, self.fingerprint, self.languages = name, dim, fingerprint, languages

    def encode(self, sentences, **kw):
        return np.ones((len(sentences), self.dim), dtype=np.float32)


def _bgt(view):
    return load("bgt-en-fr").encoder(view)


def _api_cases():
    from workbench.reports.distance import language_distances
    import workbench as wb
    from workbench.evaluation import compare_sts
    from workbench.reports.results import read_results, tidy
    from workbench.style_transfer.generation import transfer, transfer_table
    from workbench.probing.baselines import text_baselines
    from workbench.checks import check_sizes
    from workbench.probing.build import build_task
    from workbench.zoo.packaging import check_model_name
    small = {"train": 100, "valid": 20, "test": 20}
    return [
        (lambda: wb.probe(Constant(), "length", classifier="svm"), "unknown probe classifier 'svm'; valid: logreg"),
        (lambda: wb.probe(Constant(), "length", control="last_word"), "unknown control 'last_word'; valid:"),
        (lambda: wb.probe(Constant(), "sentence_len"), "unknown probing task 'sentence_len'; valid:"),
        (lambda: wb.probe(Constant(), "length", sizes={"train": 10}), "probing sizes must give train, valid, test"),
        # the hostile sweep (tools/hostile_sweep.py): a falsy size meant the card's full size; a list as a task,
        # an empty task list and a file name as results failed inside pandas or hashing
        (lambda: wb.probe(Constant(), "length", sizes={}), "probing sizes must give train, valid, test"),
        (lambda: wb.probe(Constant(), "length", sizes=0), "probing sizes must give train, valid, test"),
        (lambda: wb.probe(Constant(), ["length"]), "a task is a name (`workbench probes list`), a file or"),
        (lambda: wb.probe_all([Constant()], []), "probe_all takes a non-empty list of tasks"),
        (lambda: wb.probe_all([Constant()], "length"), "probe_all takes a non-empty list of tasks"),
        (lambda: wb.report("results.csv", "r.html"), "results must be a pandas DataFrame"),
        (lambda: wb.probe(Constant(), "length", sizes={"train": 10, "valid": 0, "test": 5}), "whole numbers from 1 to 10,000,000"),
        (lambda: wb.probe(Constant(), "length", sizes={"train": True, "valid": 5, "test": 5}), "whole numbers from 1 to 10,000,000"),
        (lambda: wb.probe(Constant(), "length", mdl=True, classifier="mlp"), "MDL probing is implemented for"),
        (lambda: wb.probe(Constant(languages=("fr",)), "length", sizes=small), "task 'length' is in 'en' but"),
        (lambda: wb.probe(Constant(dim=0, fingerprint="dim0"), "length", sizes=small), "declares dim 0; an"),
        (lambda: wb.probe(_bgt("semantic"), "length", given=_bgt("semantic")), "given itself: give another view"),
        (lambda: wb.probe(_bgt("semantic"), "length", given=_bgt("fr")), "task 'length' is in 'en' but encoder "),
        (lambda: wb.erase(_bgt("fr"), "language_id_en_fr"), "holds en and fr sentences but encoder 'bgt-en-fr:fr'"),
        (lambda: wb.evaluate(Constant(), "nosuch"), "unknown evaluation suite 'nosuch'; valid: all, hard_sts"),
        (lambda: wb.evaluate(_bgt("en"), "tatoeba"), "and encoder 'bgt-en-fr:en' declares en: evaluate it anyway"),
        (lambda: wb.evaluate(_bgt("fr"), "hard_sts"), "Hard STS holds en, and encoder 'bgt-en-fr:fr' declares fr"),
        (lambda: wb.evaluate(_bgt("fr"), "all"),
         "encoder 'bgt-en-fr:fr' reads fr, and every evaluation suite holds other languages (sts: en;"),
        (lambda: wb.load("nosuch"), "no model at 'nosuch': give a run directory"),
        (lambda: wb.load("bgt-en-fr").encoder("de"), "unknown encoder view 'de'; valid: en, fr, semantic"),
        (lambda: wb.erase(Constant(), "nosuch"), "unknown probing task 'nosuch'"),
        (lambda: wb.erase(_bgt("en"), "gender_fr", sizes=small), "task 'gender_fr' is in 'fr' but"),
        (lambda: wb.cached(Constant(), dtype="int8"), "cache dtype 'int8' is not valid; valid: float16, float32"),
        (lambda: wb.cached(Constant(fingerprint=".hidden")), "fingerprints name cache folders"),
        (lambda: wb.cached(Constant(fingerprint="a/b")), "fingerprints name cache folders"),
        (lambda: transfer(load("bgt-en-fr"), ["A man."], ["B.", "C."]), "got 1 source sentences but 2 style"),
        (lambda: transfer(load("bgt-en-fr"), [""], ["B."]), "source and style sentences must be non-empty"),
        (lambda: transfer(load("bgt-en-fr"), ["A."], ["B."], beam=0), "beam must be a whole number from 1"),
        (lambda: transfer(load("sp-en-fr"), ["A."], ["B."]), "style transfer needs a BGT model"),
        (lambda: transfer_table(load("bgt-en-fr"), pd.DataFrame({"src": ["a"]})), "lacks columns ['source', 'st"),
        (lambda: compare_sts(Constant(), Constant("other", fingerprint="other-v1"), n_boot=50), "n_boot must be"),
        (lambda: build_task("length", sizes={"train": 1.5, "valid": 1, "test": 1}), "whole numbers from 1 to 10,000,000"),
        (lambda: check_sizes({"train": 5, "valid": 5}), "probing sizes must give train, valid, test"),
        (lambda: text_baselines(["length"], ["bow"]), "unknown baseline 'bow'; valid: length, majority, nb-bi"),
        (lambda: TrainConfig.from_preset("huge"), "unknown preset 'huge'; valid: cpu, paper, small, tiny"),
        (lambda: TrainConfig.from_preset("tiny", max_updates=0), "max_updates must be an integer ≥ 1 (got 0)"),
        (lambda: TrainConfig.from_preset("tiny", lr=-1.0), "lr must be a number > 0 (got -1.0)"),
        (lambda: TrainConfig.from_preset("tiny", betas=(0.9,)), "betas must be two numbers in [0, 1)"),
        (lambda: check_model_name("../trained"), "'../trained' is not a valid model name"),
        (lambda: check_model_name(""), "'' is not a valid model name"),
        (lambda: tidy(pd.DataFrame({"encoder": ["a"], "task": ["b"]})), "result frame lacks columns ['metric',"),
        (lambda: read_results(Path(__file__)), "not a results CSV"),
        (lambda: wb.load(""), "an empty model name (''): give a run directory"),
        (lambda: wb.load("  "), "an empty model name"),
        (lambda: wb.untrained_encoder("random-sp-average", pair="en-fr").encode({"a": 1}),
         "encode takes a list of sentences (an ordered sequence of strings); got dict"),
        (lambda: _bgt("semantic").encode(["a"], batch_size=0), "batch_size must be a whole number ≥ 1 (got 0)"),
        (lambda: wb.untrained_encoder("random-sp-average", pair="en-fr").encode(["a"], batch_size=-2),
         "batch_size must be a whole number ≥ 1"),
        (lambda: wb.report(pd.DataFrame({"encoder": ["a"], "task": ["length"], "metric": ["accuracy"],
                                         "value": [0.5]}), Path(__file__).parent), "(a folder): e.g. "),
        (lambda: wb.report(pd.DataFrame(), "out.csv"), "the report goes to an .html file"),
        # a list of names: one alone is one name (not its letters), an empty one asks for nothing (#79)
        (lambda: wb.evaluate(Constant(), "sts17", tracks=[]), "no STS17 track given (an empty list); valid: "),
        (lambda: language_distances("en"), "unknown language 'en'; valid: "),
        (lambda: language_distances([]), "no language given (an empty list)"),
    ]


API_CASES = _api_cases()


@pytest.mark.parametrize("case", range(len(API_CASES)))
def test_bad_api_input_raises_a_clear_workbench_error_and_changes_nothing(case):
    from workbench.paths import REPO_ROOT
    call, message = API_CASES[case]
    before = _files(REPO_ROOT / "trained")
    with pytest.raises(WorkbenchError) as err:
        call()
    assert message in str(err.value)
    assert _files(REPO_ROOT / "trained") == before


def test_two_encoders_with_one_fingerprint_are_refused_not_confused():
    import workbench as wb
    first = wb.cached(Constant("signal", 4, "shared-fp"))
    first.encode(["A man is playing a guitar."])
    for other, what in ((Constant("noise", 4, "shared-fp"), "encoder 'noise' (dim 4)"),
                        (Constant("signal", 8, "shared-fp"), "encoder 'signal' (dim 8)")):
        with pytest.raises(WorkbenchError, match=rf"{re.escape(what)} has fingerprint shared-fp…, which the "
                                                 r"cache already holds for encoder 'signal' \(dim 4\)"):
            wb.cached(other)
    assert wb.cached(Constant("signal", 4, "shared-fp")).encode(["A man is playing a guitar."]).shape == (1, 4)


def test_an_edited_result_in_the_cache_is_recomputed_not_reported_even_with_its_checksum_recomputed(caplog):
    import json as json_
    from workbench.cache import remember, results_dir
    calls = []

    def compute():
        calls.append(1)
        return {"accuracy": 0.5}

    assert remember("probe", "edited-fp", {"task": "t"}, compute) == {"accuracy": 0.5}
    (path,) = (results_dir() / "edited-fp" / "probe").glob("*.json")
    stored = json_.loads(path.read_text())
    stored["result"]["accuracy"] = 0.99  # a hand edit (or a flipped digit) that still parses
    path.write_text(json_.dumps(stored))
    assert remember("probe", "edited-fp", {"task": "t"}, compute) == {"accuracy": 0.5} and len(calls) == 2
    assert "is unreadable, edited or stale; recomputing it" in caplog.text
    import hashlib
    import hmac
    stored = json_.loads(path.read_text())
    edited = {"accuracy": 0.99}
    canonical = json_.dumps(edited, sort_keys=True).encode()
    for digest in (hashlib.sha256(canonical).hexdigest(),  # the checksum recomputed by the editor
                   hmac.new(b"another home's key" * 2, canonical, hashlib.sha256).hexdigest()):
        path.write_text(json_.dumps({**stored, "result": edited, "hmac_sha256": digest, "sha256": digest}))
        assert remember("probe", "edited-fp", {"task": "t"}, compute) == {"accuracy": 0.5}
    assert len(calls) == 4
    key = results_dir() / ".key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32


def test_temporary_files_of_killed_writers_are_reported_and_cleared(capsys):
    import subprocess
    import sys
    from workbench.cache import cache_dir, stale_temp_files
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()  # a pid that has exited
    folder = cache_dir() / "tmp-test"
    folder.mkdir(parents=True, exist_ok=True)
    orphan = folder / f".entry.safetensors.{dead}.tmp"
    orphan.write_bytes(b"\0" * 4096)
    mine = folder / f".entry.safetensors.{os.getpid()}.tmp"  # a live writer's: never touched
    mine.write_bytes(b"\0" * 10)
    assert orphan in stale_temp_files() and mine not in stale_temp_files()
    assert main(["cache", "ls"]) == 0
    assert "temporary files of interrupted writers" in capsys.readouterr().out
    assert main(["cache", "clear", "--stale"]) == 0
    assert not orphan.exists() and mine.exists()
    mine.unlink()


def test_a_killed_exports_temporary_model_folder_and_lock_are_reported_and_cleared(tmp_path, monkeypatch):
    import subprocess
    import sys
    from workbench.cache import clear_stale, stale_temp_files
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    models = tmp_path / "models"
    monkeypatch.setenv("WORKBENCH_MODELS", str(models))
    half = models / f".bgt-tiny.{dead}.tmp"  # what a kill -9 of `models export` leaves: a half-built model
    half.mkdir(parents=True)
    (half / "model.safetensors").write_bytes(b"\0" * 2048)
    (models / ".bgt-tiny.lock").write_text(dead)
    (models / ".other.lock").write_text(str(os.getpid()))  # a live writer's lock: left alone
    assert set(stale_temp_files()) >= {half, models / ".bgt-tiny.lock"}
    assert models / ".other.lock" not in stale_temp_files()
    assert clear_stale() >= 2048
    assert not half.exists() and not (models / ".bgt-tiny.lock").exists() and (models / ".other.lock").exists()


def test_cache_clear_that_deletes_nothing_says_so_instead_of_counting_it_freed(monkeypatch, small_tokenizer):
    from workbench import cache
    from workbench.cache import housekeeping
    enc = cache.cached(RandomEmbeddingAverage(small_tokenizer))
    enc.encode(["a sentence to cache ."])
    monkeypatch.setattr(housekeeping.shutil, "rmtree", lambda *a, **k: None)  # as a read-only folder (root ignores modes)
    with pytest.raises(WorkbenchError, match="could not delete the cached embeddings of random-sp-average .* "
                                             "is the folder read-only"):
        cache.clear_cache("random-sp-average")


# --- properties over many values (hypothesis) --------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=12))
def test_any_accepted_model_name_stays_one_folder_inside_trained(name):
    from workbench.paths import REPO_ROOT
    from workbench.zoo.packaging import check_model_name
    root = REPO_ROOT / "trained"
    try:
        check_model_name(name)
    except WorkbenchError as err:
        assert "is not a valid model name" in str(err)
        return
    assert (root / name).resolve().parent == root.resolve() and name not in (".", "..")


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=24))
def test_any_accepted_fingerprint_names_one_folder_inside_the_cache(fingerprint):
    from workbench.cache import cache_dir, check_fingerprint
    try:
        check_fingerprint(Constant(fingerprint=fingerprint))
    except WorkbenchError as err:
        assert "fingerprints name cache folders" in str(err)
        return
    assert (cache_dir() / fingerprint[:16]).resolve().parent == cache_dir().resolve()


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["max_updates", "save_every", "valid_every", "keep_checkpoints", "max_tokens", "kl_x0"]),
       st.one_of(st.integers(-10 ** 6, 10 ** 6), st.floats(allow_nan=True), st.booleans(), st.text(max_size=3)))
def test_count_options_accept_exactly_the_whole_numbers_from_one(field, value):
    valid = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    try:
        cfg = TrainConfig.from_preset("tiny", **{field: value})
    except WorkbenchError as err:
        assert not valid and f"{field} must be an integer ≥ 1 (got {value!r})" in str(err)
    else:
        assert valid and getattr(cfg, field) == value


@settings(max_examples=100, deadline=None)
@given(st.fixed_dictionaries({k: st.integers(-5, 2 * 10 ** 7) for k in ("train", "valid", "test")}),
       st.integers(-5, 2 * 10 ** 6))
def test_sizes_and_resample_counts_accept_exactly_their_valid_range(sizes, n_boot):
    from workbench.evaluation.significance import MAX_BOOT, check_n_boot
    from workbench.checks import MAX_SIZE, check_sizes
    if 1 <= min(sizes.values()) and max(sizes.values()) <= MAX_SIZE:
        assert check_sizes(sizes) == sizes
    else:
        with pytest.raises(WorkbenchError, match="whole numbers from 1 to 10,000,000"):
            check_sizes(sizes)
    if 100 <= n_boot <= MAX_BOOT:
        assert check_n_boot(n_boot) == n_boot
    else:
        with pytest.raises(WorkbenchError, match="n_boot must be a whole number of resamples from 100"):
            check_n_boot(n_boot)


class _NoName:
    dim, fingerprint = 4, "abc123"

    def encode(self, sentences, batch_size=256, show_progress=False):
        return np.zeros((len(sentences), 4), dtype=np.float32)


class _NoBatchSize:
    name, dim, fingerprint = "mine", 4, "abc123"

    def encode(self, sentences):
        return np.zeros((len(sentences), 4), dtype=np.float32)


@pytest.mark.parametrize("encoder, message", [
    (pd.DataFrame({"sentence": ["a"]}), "a DataFrame is not an encoder: it lacks name, dim, fingerprint, encode"),
    ("length", "a str is not an encoder"),
    (_NoName(), "a _NoName is not an encoder: it lacks name"),
    (_NoBatchSize(), "its encode\\(\\) takes no batch_size or show_progress"),
])
def test_an_object_that_is_not_an_encoder_is_refused_before_any_work(encoder, message):
    """The duck-typed Encoder contract, checked where an encoder enters (probe, evaluate, the cache)."""
    import workbench as wb
    for call in (lambda: wb.probe(encoder, "length"), lambda: wb.evaluate(encoder, "sts"), lambda: wb.cached(encoder)):
        with pytest.raises(WorkbenchError, match=message):
            call()


def test_seeds_are_bounded_before_any_work():
    import workbench as wb
    with pytest.raises(WorkbenchError, match="seeds must be a whole number from 1 to 100 \\(got 1000000000\\)"):
        wb.probe(wb.untrained_encoder("random-sp-average"), "length", seeds=10 ** 9)


from tools import tampering  # noqa: E402

HUGGING_FACE_CASES = [name for name in tampering.CASES if name.startswith("hugging_face")]
REFUSED_BECAUSE = {  # what each refusal must say (a refusal for another reason would hide the case)
    "shipped_model_edited_and_resealed": "is not the one pins.json pins for 'sp-en-fr'",
    "shipped_model_given_other_weights_with_its_digests_made_to_agree": "is not the one pins.json pins",
    "folder_downgraded_to_format_1_and_resealed": "is format 1, whose seal leaves out the files' digests",
    "folder_of_your_own_given_other_weights_and_resealed": "",  # loaded, with the warning
    "folder_with_another_pairs_tokenizer_and_its_digest_updated": "is not the sentencepiece model this model was",
    "folder_with_a_file_its_digests_do_not_list": "not covered by the sha256 list",
    "folder_whose_weights_lack_a_tensor": "does not hold the network its config.json describes",
    "cached_result_edited_with_its_checksum_recomputed": "",  # recomputed
    "package_with_a_tensor_in_two_shards": "is in two shards",
    "hugging_face_folder_with_another_models_tokenizer": "it is another model's tokenizer",
    "hugging_face_folder_whose_model_type_is_not_its_weights": "model_type 'mistral', but the architecture",
    "hugging_face_folder_with_a_tensor_in_two_shards": "is in two weight files",
    "mteb_results_into_the_models_folder": "is inside trained/",
    "mteb_results_over_existing_ones_without_force": "already holds STS17.json",
    "word_control_on_data_without_a_word_column": "keys the control task on each example's label word",
    "own_data_whose_sentences_are_lists": "is a list",
    "transfer_between_tasks_whose_labels_only_look_alike": "punct_num is not a version of length",
}


@pytest.mark.parametrize("name", list(tampering.CASES))
def test_a_well_formed_but_wrong_input_of_the_sweep_is_refused_or_said(name, tmp_path):
    """The sweep's tampered inputs (tools/tampering.py), each run here: refused with a message, recomputed, or — a
    folder of your own changed and sealed again — loaded with a warning (trust on first use)."""
    if name in HUGGING_FACE_CASES:
        pytest.importorskip("transformers")
    outcome, message = tampering.outcome(tmp_path, name)
    assert outcome == ("warned" if name == "folder_of_your_own_given_other_weights_and_resealed" else "clear"), name
    assert REFUSED_BECAUSE[name] in message
    assert str(tmp_path) not in os.environ.get("WORKBENCH_MODELS", "")


def test_the_hostile_sweep_has_a_valid_base_for_every_subcommand():
    """tools/hostile_sweep.py adds each bad value to a small valid command: a new subcommand needs one there."""
    from tools.hostile_sweep import BASES, options
    from workbench.cli import build_parser
    assert {command for command, _, _ in options(build_parser())} <= set(BASES)


@pytest.mark.parametrize("call, said", [
    ("wb.load(None)", "the model to load .* is a path .*, not NoneType"), ("wb.hf_encoder(0)", "is a path .*, not int"),
    ("wb.own_task([])", "own task data is a path"), ("wb.report(pd.DataFrame(), b'x')", "is a path .*, not bytes"),
    ("wb.untrained_encoder('random-sp-average', pair=[])", "pair is a name \\(text\\), not list"),
    ("wb.get_task({})", "a task is a name"), ("wb.evaluate(enc, 'sts17', tracks=0)", "give a name or a list of names")])
def test_a_value_of_the_wrong_type_gets_one_sentence_not_pythons_type_error(call, said, small_tokenizer):
    import pandas as pd
    import workbench as wb
    enc = RandomEmbeddingAverage(small_tokenizer)
    with pytest.raises(WorkbenchError, match=said):
        eval(call, {"wb": wb, "pd": pd, "enc": enc})


def test_encode_reads_a_file_saved_with_a_byte_order_mark_as_its_text(tmp_path, monkeypatch):
    """Editors on Windows start UTF-8 files with a BOM: it is not part of the first sentence an encoder reads."""
    from workbench.cli import measuring
    read = []

    class Recording(Constant):
        def encode(self, sentences, **kw):
            read.extend(sentences)
            return super().encode(sentences)

    monkeypatch.setattr(measuring, "chosen_encoder", lambda args: Recording())
    (tmp_path / "bom.txt").write_text("A man is playing a guitar.\nShe left early.\n", encoding="utf-8-sig")
    assert main(["encode", "--encoder", "random-sp-average", "--input", str(tmp_path / "bom.txt"),
                 "--out", str(tmp_path / "bom.npy")]) == 0
    assert read == ["A man is playing a guitar.", "She left early."]
