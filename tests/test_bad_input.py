"""Bad input gets a clear error (exit 2 and a message that says what is valid, no traceback), and damaged files
are refused by name instead of being used: training settings, checkpoints and model folders."""
import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.train import TrainConfig, Trainer, load, model_path


@pytest.mark.parametrize("flags, message", [
    (["--max-updates", "-5"], "max_updates must be an integer ≥ 1 (got -5)"),
    (["--max-updates", "0"], "max_updates must be an integer ≥ 1 (got 0)"),
    (["--max-seconds", "0"], "max_seconds must be a number > 0 (got 0.0)"),
    (["--max-seconds", "nan"], "max_seconds must be a number > 0 (got nan)"),
    (["--seed", "-1"], "seed must be an integer ≥ 0 (got -1)"),
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


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("bad") / "run"
    Trainer(TrainConfig.from_preset("tiny", max_pairs=1000, max_valid_pairs=100, max_updates=4, save_every=2,
                                    valid_every=4, eval_every=0), run, show_progress=False).run()
    return run


@pytest.fixture()
def run_copy(short_run, tmp_path):
    shutil.copytree(short_run, tmp_path / "run")
    return tmp_path / "run"


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
    with pytest.raises(WorkbenchError, match="spm.model is .*not the sentencepiece model"):
        load(folder)


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
    (b'preset = "tiny"\nmax_updates = \n', "cannot parse the file (TOMLDecodeError"),
    (b'preset = "tiny"\nlr = 1e-3\n\xff\xfe', "is not UTF-8 text"),
    (b'model = "bgt"\nlearning_rate = 1e-3\n', "unknown training config keys ['learning_rate']; valid:"),
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


def test_api_values_out_of_range_say_what_is_valid(tmp_path):
    import workbench as wb
    from workbench.cache import clear_cache
    from workbench.evaluation.significance import paired_bootstrap
    from workbench.generation import transfer
    from workbench.probing.build import build_task
    with pytest.raises(WorkbenchError, match=r"probing sizes must give train, valid, test as whole numbers ≥ 1"):
        build_task("length", sizes={"train": -5, "valid": 3, "test": 100})
    with pytest.raises(WorkbenchError, match="n_boot must be a whole number ≥ 100"):
        paired_bootstrap([1, 2, 3, 4], [1, 2, 3, 5], [2, 1, 3, 4], n_boot=0)
    bgt = load("bgt-en-fr")
    with pytest.raises(WorkbenchError, match="max_len must be at least 1 piece"):
        transfer(bgt, ["A man is here."], ["She said so."], max_len=-5)
    with pytest.raises(WorkbenchError, match="STS is in 'en' but encoder 'bgt-en-fr:fr' reads fr"):
        wb.evaluate(bgt.encoder("fr"), "sts")
    with pytest.raises(WorkbenchError, match="nothing cached for encoder 'nosuch'"):
        clear_cache("nosuch")

    class Escaping:
        name, dim, fingerprint = "escaping", 4, "../../outside"

        def encode(self, sentences, **kw):
            return np.zeros((len(sentences), 4), dtype=np.float32)
    with pytest.raises(WorkbenchError, match="fingerprints name cache folders"):
        wb.cached(Escaping()).encode(["a"])
