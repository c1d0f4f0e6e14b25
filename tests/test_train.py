"""The Trainer: loss falls on real data, checkpoints round-trip, SIGKILL + resume is exact, DDP on gloo."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import torch

from workbench.data.sts import load_stsb
from workbench.checks import UnknownNameError, WorkbenchError
from workbench.evaluation.sts import cosine
from workbench.models.folder import load
from workbench.models.runlog import learning_curve
from workbench.paths import sealed_config
from workbench.training.recipes import TrainConfig, learning_rate
from workbench.training.trainer import Trainer

# the runs the tests start as processes: validation loss where due, no STS-B dev score (none of them asserts one;
# it took ~1.5 s of each process)
QUICK = {"max_pairs": 1000, "max_valid_pairs": 100, "max_updates": 40, "save_every": 4, "valid_every": 10,
         "eval_every": 0}
LOSS_KEYS = ("loss", "recon", "trans", "kl", "grad_norm", "kl_weight", "lr", "sentences", "tokens")


def metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def write_config(path, **values):
    path.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in {"preset": "tiny", **values}.items()) + "\n")
    return path


# Session fixtures, not module ones: xdist interleaves the modules, and pytest makes a module's fixtures again each
# time a worker comes back to it (the 30-update run was trained three times in one suite).
@pytest.fixture(scope="session")
def tiny_tokenizer():
    """The tiny preset's 1,000-piece en-fr model, trained once before any subprocess needs it."""
    return TrainConfig.from_preset("tiny").tokenizer()


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, tiny_tokenizer):
    run_dir = tmp_path_factory.mktemp("tiny") / "run"
    trainer = Trainer(TrainConfig.from_preset("tiny", max_updates=30, valid_every=10, save_every=10), run_dir,
                      show_progress=False)
    trainer.run()
    return trainer, run_dir


def test_tiny_training_lowers_the_loss_on_real_pairs(tiny_run):
    _, run_dir = tiny_run
    rows = metrics(run_dir)
    assert [r["update"] for r in rows] == list(range(0, 31))  # update 0: the network at initialisation
    steps = rows[1:]
    per_token = [r["recon_per_token"] + r["trans_per_token"] for r in steps]
    assert np.mean(per_token[-5:]) < 0.8 * np.mean(per_token[:3])
    valid = [r["valid_loss"] for r in rows if "valid_loss" in r]
    assert len(valid) == 4 and valid[-1] < valid[0]
    assert steps[-1]["kl_weight"] == pytest.approx(29 / 30)  # linear; tiny's ramp is the whole run (x0 = 30)
    assert [r["pairs_seen"] for r in steps] == list(np.cumsum([r["sentences"] for r in steps]))
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["update-20", "update-30"]
    assert (run_dir / "latest").read_text() == "update-30"


def test_views_are_scored_on_stsb_dev_and_the_best_checkpoint_is_kept(tiny_run):
    trainer, run_dir = tiny_run
    scored = [r for r in metrics(run_dir) if "stsb_dev" in r]
    assert [r["update"] for r in scored] == [0, 10, 20, 30]
    assert all(set(r["stsb_dev"]) == {"semantic", "en"} for r in scored)  # the views that read English
    assert all(-100 <= v <= 100 for r in scored for v in r["stsb_dev"].values())
    best = max(scored[1:], key=lambda r: r["stsb_dev"]["semantic"])  # among trained networks
    meta = json.loads((run_dir / "best" / "config.json").read_text())
    assert meta["update"] == best["update"] and meta["stsb_dev"] == best["stsb_dev"]
    assert trainer.state["best"] == {"update": best["update"], "stsb_dev": best["stsb_dev"]["semantic"]}
    frame = load_stsb("dev")  # the logged score, recomputed from best/'s saved weights
    semantic = load(run_dir / "best").encoder("semantic")
    a, b = semantic.encode(list(frame["sentence1"])), semantic.encode(list(frame["sentence2"]))
    assert 100 * np.corrcoef(cosine(a, b), frame["score"])[0, 1] == pytest.approx(best["stsb_dev"]["semantic"],
                                                                                    abs=1e-3)


def test_checkpoint_round_trip_gives_identical_encodings(tiny_run):
    trainer, run_dir = tiny_run
    sentences = ["A man is playing a guitar.", "Un homme joue de la guitare.", "Tom is here."]
    loaded = load(run_dir)
    for view in ("semantic", "en", "fr"):
        original = trainer.model.encoder(view, trainer.tokenizer).encode(sentences)
        np.testing.assert_array_equal(loaded.encoder(view).encode(sentences), original)
    assert loaded.encoder("semantic").languages == ("en", "fr") and loaded.encoder("fr").languages == ("fr",)
    assert loaded.encoder("en").fingerprint != loaded.encoder("semantic").fingerprint


def _rewrite_checkpoint(run, **changes):
    """Change a checkpoint's config.json and re-seal it, as a run with those settings would have written it."""
    config = run / "checkpoints" / "update-30" / "config.json"
    config.write_text(sealed_config({**json.loads(config.read_text()), **changes}))


def test_resume_refuses_another_model_or_vocabulary(tiny_run, tmp_path, small_tokenizer):
    _, run_dir = tiny_run
    with pytest.raises(WorkbenchError, match="checkpoint of model 'bgt', not 'bilingual_trans'"):
        Trainer(TrainConfig.from_preset("tiny", model="bilingual_trans"), run_dir, resume=True)
    with pytest.raises(WorkbenchError, match="already holds a run; pass --resume"):
        Trainer(TrainConfig.from_preset("tiny"), run_dir)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(run_dir), str(copy)], check=True)
    config = copy / "checkpoints" / "update-30" / "config.json"
    meta = json.loads(config.read_text())
    edited = {**meta, "tokenizer_sha256": "0" * 64}
    config.write_text(json.dumps(edited))
    with pytest.raises(WorkbenchError, match="config.json was edited after the folder was written"):
        Trainer(TrainConfig.from_preset("tiny", max_updates=30), copy, resume=True)  # verified before it is read
    (copy / "checkpoints" / "update-30" / "spm.model").write_bytes(small_tokenizer.model_file.read_bytes())
    config.write_text(json.dumps(meta))
    _rewrite_checkpoint(copy, tokenizer_sha256=small_tokenizer.digest,
                        files_sha256={**meta["files_sha256"], "spm.model": small_tokenizer.digest})
    with pytest.raises(WorkbenchError, match="another vocabulary"):
        Trainer(TrainConfig.from_preset("tiny", max_updates=30), copy, resume=True)


@pytest.fixture()
def run_copy(tiny_run, tmp_path):
    _, run_dir = tiny_run
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(run_dir), str(copy)], check=True)
    return copy


@pytest.mark.parametrize("change, message", [
    ({"lr": 2e-3}, "lr 0.001 -> 0.002"),
    ({"warmup": 5, "seed": 2}, "warmup 10 -> 5; seed 1 -> 2"),
    ({"max_tokens": 2048}, "max_tokens 1024 -> 2048"),
    ({"update_freq": 2}, "update_freq 1 -> 2"),
    ({"max_pairs": 2000}, "max_pairs 3000 -> 2000; training data (sha256"),
    ({"kl_x0": 45}, "kl_x0 30 -> 45"),
])
def test_resume_refuses_settings_that_would_continue_another_run(run_copy, change, message):
    with pytest.raises(WorkbenchError, match=re.escape(message)):
        Trainer(TrainConfig.from_preset("tiny", max_updates=30, **change), run_copy, resume=True)


def test_resume_refuses_other_training_data(run_copy):
    _rewrite_checkpoint(run_copy, data_sha256="0" * 64)
    with pytest.raises(WorkbenchError, match=r"training data \(sha256 000000000000 -> "):
        Trainer(TrainConfig.from_preset("tiny", max_updates=30), run_copy, resume=True)


def test_the_kl_ramp_follows_the_run_length_and_a_resume_keeps_it(run_copy, tiny_tokenizer):
    from workbench.models.bgt_config import BGTConfig

    def x0(run):
        return BGTConfig.run_settings(run)["kl_x0"]

    assert x0(TrainConfig.from_preset("small", max_updates=1000)) == 3000  # β ends at 1/3 whatever the run length
    assert x0(TrainConfig.from_preset("paper")) == 65536  # the paper's x0 at its 20k updates
    assert x0(TrainConfig.from_preset("paper", max_updates=2000)) == 6554
    longer = Trainer(TrainConfig.from_preset("tiny", max_updates=35, valid_every=5, save_every=5), run_copy,
                     resume=True, show_progress=False)
    assert longer.model.cfg.kl_x0 == 30  # fixed when the run started (tiny: x0 = its 30 updates)
    longer.run()
    rows = metrics(run_copy)
    assert rows[-1]["update"] == 35 and rows[-1]["kl_weight"] == 1.0
    assert [r["kl_weight"] for r in rows[1:31]] == pytest.approx([u / 30 for u in range(30)])


def test_a_new_run_continues_a_trained_model_when_its_run_directory_is_lost(tiny_run, tmp_path):
    _, run_dir = tiny_run
    cfg = TrainConfig.from_preset("tiny", max_updates=30, valid_every=10, save_every=10)
    trainer = Trainer(cfg, tmp_path / "again", init_from=run_dir / "checkpoints" / "update-20", show_progress=False)
    assert trainer.state["update"] == 20 and trainer.state["best"]["update"] == 20
    trainer.run()
    before, after = metrics(run_dir), metrics(tmp_path / "again")
    assert [r["update"] for r in after] == [0, 10, 20, *range(21, 31)]  # the curve so far, then the new updates
    assert [r["stsb_dev"] for r in after[:3]] == [r["stsb_dev"] for r in before if r["update"] in (0, 10, 20)]
    for old, new in zip(before[21:], after[3:]):  # the same batches, learning rate and KL weight follow
        assert (new["sentences"], new["tokens"], new["lr"], new["kl_weight"]) == \
            (old["sentences"], old["tokens"], old["lr"], old["kl_weight"])
        assert new["pairs_seen"] == old["pairs_seen"]
    assert after[3]["loss"] == pytest.approx(before[21]["loss"], rel=1e-5)  # same weights, same batch
    curve = learning_curve(tmp_path / "again")
    assert curve["train_seconds"].is_monotonic_increasing and curve["update"].max() == 30


@pytest.mark.slow
def test_an_export_that_keeps_its_decoders_continues_training_when_the_run_is_lost(tiny_run, tmp_path):
    from workbench.zoo.packaging import export
    _, run_dir = tiny_run
    folder = export(run_dir, name="bgt-tiny", keep_decoders=True, root=tmp_path, hardware_text="1 × H100 (lent)",
                    sizes={"train": 600, "valid": 200, "test": 200}, show_progress=False, transfer_pairs=10)
    assert "style_transfer" in json.loads((folder / "card.json").read_text())  # measured: it kept its decoders
    assert "`workbench train --init-from bgt-tiny` continues its training" in (folder / "card.md").read_text()
    best = json.loads((run_dir / "best" / "config.json").read_text())["update"]
    cfg = TrainConfig.from_preset("tiny", max_updates=best + 3, valid_every=10, save_every=10, eval_every=0)
    runs = {}  # (no STS-B dev: nothing of the continuation can beat the model it starts from)
    for source, out in ((folder, "from-export"), (run_dir / "best", "from-checkpoint")):
        trainer = Trainer(cfg, tmp_path / out, init_from=source, show_progress=False)
        assert trainer.state["update"] == best
        trainer.run()
        runs[out] = [r for r in metrics(tmp_path / out) if r["update"] > best]
    assert [r["update"] for r in runs["from-export"]] == [best + 1, best + 2, best + 3]
    for fp16, fp32 in zip(runs["from-export"], runs["from-checkpoint"]):  # the same batches and schedule
        assert (fp16["sentences"], fp16["lr"], fp16["kl_weight"]) == (fp32["sentences"], fp32["lr"], fp32["kl_weight"])
    assert runs["from-export"][0]["loss"] == pytest.approx(runs["from-checkpoint"][0]["loss"], rel=1e-2)  # fp16
    # nothing of the continuation beat the model it started from, so its "best" is that model, shipped with the
    # continuation's record (not its latest checkpoint, as before)
    from safetensors.torch import load_file
    from workbench.zoo.packaging import _exported
    _, state, config, _, curve = _exported(tmp_path / "from-export", "bgt-tiny", True, "best", None)
    assert not (tmp_path / "from-export" / "best").exists()
    assert (config["training"]["updates"], config["training"]["run_updates"]) == (best, best + 3)
    assert config["training"]["checkpoint"] == "best STS-B dev (semantic)" and curve["update"].max() == best + 3
    shipped = load_file(str(folder / "model.safetensors"))
    assert state.keys() == shipped.keys() and all(torch.equal(state[k], shipped[k]) for k in state)
    _, latest, config, _, _ = _exported(tmp_path / "from-export", "bgt-tiny", True, "latest", None)
    assert config["training"]["updates"] == best + 3 and config["training"]["checkpoint"] == "latest"
    from workbench.training.trainer import hardware
    from workbench.zoo.packaging import export_shards
    package = export_shards(tmp_path / "from-export", tmp_path / "packages", name="bgt-tiny-on", checkpoint="latest")
    record = json.loads((package / "manifest.json").read_text())["config"]["training"]
    assert record["hardware"] == f"1 × H100 (lent) then {hardware()}"  # where its updates ran, in order


def test_the_card_names_the_threads_each_part_of_a_run_trained_on(run_copy, tmp_path):
    from workbench.training.trainer import hardware
    from workbench.zoo.packaging import export_shards
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a run resumed beside another, one thread each: slower per update, so said
    try:
        Trainer(TrainConfig.from_preset("tiny", max_updates=32, valid_every=10, save_every=10), run_copy,
                resume=True, show_progress=False).run()
        alone = hardware()
    finally:
        torch.set_num_threads(threads)
    assert alone.startswith("CPU (") and alone.endswith(", 1 thread)")
    steps = [r for r in metrics(run_copy) if r["update"] > 0]
    assert [r["hardware"] for r in steps] == [hardware()] * 30 + [alone] * 2
    package = export_shards(run_copy, tmp_path / "packages", name="bgt-tiny", checkpoint="latest")
    record = json.loads((package / "manifest.json").read_text())["config"]["training"]
    assert record["hardware"] == (alone if threads == 1 else f"{hardware()} then {alone}")


def test_a_model_folders_recipe_runs_as_long_as_its_whole_run_with_no_time_limit(tiny_run, tmp_path):
    from workbench.cli import main
    from workbench.models.folder import latest_checkpoint, read_config
    _, run_dir = tiny_run
    meta = json.loads((run_dir / "best" / "config.json").read_text())
    folder = tmp_path / "model"  # as exported from a run whose last part was resumed with --max-seconds 5
    folder.mkdir()
    recorded = {**meta["train"], "max_updates": 25, "max_seconds": 5.0}
    (folder / "config.json").write_text(json.dumps({**meta, "train": recorded,
                                                    "training": {"updates": 20, "run_updates": 30}}))
    recipe = TrainConfig.from_file(folder / "config.json")
    assert (recipe.max_updates, recipe.max_seconds, recipe.lr) == (30, None, meta["train"]["lr"])
    assert main(["train", "--config", str(folder / "config.json"), "--out", str(tmp_path / "again"),
                 "--max-updates", "2"]) == 0  # the command line still sets the length
    assert read_config(latest_checkpoint(tmp_path / "again"))["train"]["max_updates"] == 2


def test_content_adversaries_start_afresh_ship_with_the_decoders_and_go_on_in_a_continuation(run_copy, tmp_path):
    from safetensors.torch import load_file, save_file
    from workbench.models.folder import ModelFolder, file_digests
    from workbench.zoo.packaging import _exported
    short = {"save_every": 2, "valid_every": 2, "eval_every": 0}
    retuned = {"content_adversary": 1.0, "trans_weight": 0.5}  # a loss weighed anew, as a bottleneck set anew
    cfg = TrainConfig.from_preset("tiny", max_updates=32, overrides=retuned, **short)
    trainer = Trainer(cfg, tmp_path / "adv", init_from=run_copy / "checkpoints" / "update-30", show_progress=False)
    assert trainer.model.cfg.trans_weight == 0.5
    trainer.run()
    base, adversaries = trainer.optimizer.param_groups
    assert adversaries["lr"] == pytest.approx(trainer.model.ADVERSARY_LR_SCALE * base["lr"])
    assert base["lr"] == pytest.approx(learning_rate(32, cfg))
    steps = [r for r in metrics(tmp_path / "adv") if r["update"] > 30]
    assert [r["update"] for r in steps] == [31, 32] and all(r["adversary"] > 0 for r in steps)
    assert all(r["adversary"] == 0 for r in metrics(run_copy) if "adversary" in r)
    checkpoint = tmp_path / "adv" / "checkpoints" / "update-32"
    assert "adversaries.en.net.0.weight" in load_file(str(checkpoint / "model.safetensors"))
    Trainer(TrainConfig.from_preset("tiny", max_updates=33, overrides=retuned, **short),
            tmp_path / "adv", resume=True, show_progress=False).run()  # a resume restores them as trained
    _, encoders, _, _, _ = _exported(tmp_path / "adv", "bgt-adv", False, "latest", None)
    assert not any(k.startswith(("adversaries.", "decoders.")) for k in encoders)  # encoder-only: what encoding needs
    _, shipped, config, spm_model, _ = _exported(tmp_path / "adv", "bgt-adv", True, "latest", None)
    assert any(k.startswith("decoders.") for k in shipped) and any(k.startswith("adversaries.") for k in shipped)
    folder = tmp_path / "bgt-adv"  # as an export writes it, less the card's measurements
    folder.mkdir()
    save_file(shipped, str(folder / "model.safetensors"))
    (folder / "spm.model").write_bytes(spm_model)
    (folder / "config.json").write_text(sealed_config({**config, "files_sha256": file_digests(folder)}))
    model = ModelFolder(folder).model()  # its config still says how it was trained
    assert model.cfg.content_adversary == 1.0
    assert model.encoder("en").encode(["A short sentence."]).shape == (1, model.cfg.language_dim)
    on = Trainer(TrainConfig.from_preset("tiny", max_updates=34, overrides={"content_adversary": 1.0}, **short),
                 tmp_path / "on", init_from=folder, show_progress=False)  # a bare machine: the run folder is gone
    assert all(torch.equal(v, shipped[k].float()) for k, v in on.model.state_dict().items()
               if k.startswith("adversaries."))  # the adversaries go on as trained, not afresh


def test_a_run_gives_content_words_adversaries_its_tokenizers_pieces(run_copy, tmp_path):
    overrides = {"content_adversary": 1.0, "adversary_target": "words"}
    cfg = TrainConfig.from_preset("tiny", max_updates=32, overrides=overrides, save_every=2, valid_every=2,
                                  eval_every=0)
    trainer = Trainer(cfg, tmp_path / "words", init_from=run_copy / "checkpoints" / "update-30", show_progress=False)
    trainer.run()
    content = trainer.model.content_words["en"]
    pieces = [trainer.tokenizer.sp.id_to_piece(i) for i in content.nonzero()[:, 0].tolist()]
    assert pieces and all(p.startswith("\u2581") for p in pieces) and "\u2581the" not in pieces
    assert all(r["adversary"] > 0 for r in metrics(tmp_path / "words") if r["update"] > 30)


def test_continuing_refuses_other_settings_and_encoder_only_models(run_copy, tmp_path):
    folder = run_copy / "checkpoints" / "update-30"
    with pytest.raises(WorkbenchError, match=re.escape("lr 0.001 -> 0.002")):
        Trainer(TrainConfig.from_preset("tiny", lr=2e-3), tmp_path / "a", init_from=folder)
    meta = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(sealed_config({**meta, "decoders": False}))
    with pytest.raises(WorkbenchError, match="encoders only"):
        Trainer(TrainConfig.from_preset("tiny"), tmp_path / "b", init_from=folder)


def test_max_seconds_stops_with_a_checkpoint_that_resumes(tmp_path, tiny_tokenizer):
    cfg = TrainConfig.from_preset("tiny", max_updates=10_000, max_seconds=2, save_every=1000, valid_every=1000)
    record = Trainer(cfg, tmp_path / "run", show_progress=False).run()
    assert record["stopped"] == "max_seconds=2" and 0 < record["update"] < 10_000
    assert (tmp_path / "run" / "latest").read_text() == f"update-{record['update']}"
    assert "valid_loss" in record and "stsb_dev" in record  # measured at the stop, like at a run's end
    resumed = Trainer(TrainConfig.from_preset("tiny", max_updates=record["update"] + 2), tmp_path / "run",
                      resume=True, show_progress=False)
    assert resumed.state["update"] == record["update"] and resumed.run()["update"] == record["update"] + 2


def test_a_bare_resume_continues_with_the_recipe_the_run_records(tmp_path, tiny_tokenizer, capsys):
    from workbench.cli import main
    from workbench.models.folder import latest_checkpoint, read_config
    run = tmp_path / "run"
    cfg = TrainConfig.from_preset("tiny", lr=2e-3, max_pairs=1000, max_valid_pairs=100, max_updates=2, save_every=2,
                                  valid_every=2, eval_every=0)
    Trainer(cfg, run, show_progress=False).run()
    assert main(["train", "--out", str(run), "--resume", "--max-updates", "3"]) == 0  # not the tiny preset's lr
    recorded = read_config(latest_checkpoint(run))["train"]
    assert (recorded["lr"], recorded["max_pairs"], recorded["max_updates"]) == (2e-3, 1000, 3)
    assert (run / "latest").read_text() == "update-3"
    assert main(["train", "--out", str(run), "--resume", "--preset", "cpu", "--max-updates", "4"]) == 2
    assert "--preset cpu (the run has tiny) would change it" in capsys.readouterr().err
    assert (run / "latest").read_text() == "update-3"


def test_sigterm_stops_after_the_update_in_progress_with_a_checkpoint(tmp_path, tiny_tokenizer):
    config = write_config(tmp_path / "long.toml", max_updates=100_000, save_every=100_000, valid_every=100_000)
    run = tmp_path / "run"
    proc = subprocess.Popen(train_command(config, run), env={**os.environ, "TQDM_DISABLE": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def lines():
        return len((run / "metrics.jsonl").read_text().splitlines()) if (run / "metrics.jsonl").exists() else 0

    deadline = time.time() + 300
    while lines() < 4 and time.time() < deadline:  # a few updates in
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    last = metrics(run)[-1]
    assert last["stopped"] == "SIGTERM" and (run / "latest").read_text() == f"update-{last['update']}"
    assert "continue with --resume" in err


def test_a_signal_that_lands_while_an_update_is_measured_stops_the_next_one(tmp_path, tiny_tokenizer, monkeypatch):
    """The race CI once hit: SIGTERM between reading the stop flag and logging it must not crash the run."""
    measure = Trainer._measure
    def measure_then_signal(self, record):
        measure(self, record)
        if record["update"] == 2:
            os.kill(os.getpid(), signal.SIGTERM)
    monkeypatch.setattr(Trainer, "_measure", measure_then_signal)
    cfg = TrainConfig.from_preset("tiny", max_updates=50, save_every=1000, valid_every=1000)
    record = Trainer(cfg, tmp_path / "run", show_progress=False).run()
    assert record["update"] == 3 and record["stopped"] == "SIGTERM"
    assert (tmp_path / "run" / "latest").read_text() == "update-3"


def test_curve_command_draws_the_views_against_updates_and_seconds(tiny_run, tmp_path, capsys):
    from workbench.cli import main
    from workbench.models.runlog import learning_curve
    _, run_dir = tiny_run
    curves = learning_curve(run_dir)
    sts = curves[curves["metric"] == "stsb_dev"]
    assert set(sts["view"]) == {"semantic", "en"} and sorted(set(sts["update"])) == [0, 10, 20, 30]
    assert sts[sts["update"] == 0]["train_seconds"].eq(0).all() and sts["train_seconds"].is_monotonic_increasing
    assert main(["curve", str(run_dir), "--out", str(tmp_path / "c"), "--no-static"]) == 0
    out = capsys.readouterr().out
    assert "latest STS-B dev" in out and "semantic" in out
    page = (tmp_path / "c" / "curve.html").read_text()
    assert "Learning curves against updates" in page and "Learning curves against training seconds" in page
    assert "semantic at init" in page
    assert len(pd.read_csv(tmp_path / "c" / "curve.csv")) == len(curves)
    assert main(["curve", str(tmp_path), "--out", str(tmp_path / "d")]) == 2
    assert "has no metrics.jsonl" in capsys.readouterr().err


def test_bad_training_configs_list_the_valid_choices(tmp_path, tiny_tokenizer):
    with pytest.raises(UnknownNameError, match="valid: bgt, bgt_no_langvars"):
        TrainConfig(model="bgt_plus")
    with pytest.raises(WorkbenchError, match="unknown language code 'xq'"):
        TrainConfig(pair="en-xq")
    with pytest.raises(WorkbenchError, match="no corpus for the language pair en-de: .*known pairs: en-fr"):
        TrainConfig(pair="en-de").tokenizer()  # a pair's corpus is looked for when a run reads it
    with pytest.raises(UnknownNameError, match="valid: cpu, paper, small, tiny"):
        TrainConfig.from_preset("huge")
    with pytest.raises(WorkbenchError, match="unknown training config keys"):
        TrainConfig.from_file(write_config(tmp_path / "c.toml", layers=3))
    with pytest.raises(WorkbenchError, match="neither a checkpoint"):
        load(tmp_path)
    tokenizer = tiny_tokenizer
    with pytest.raises(WorkbenchError, match="model sp: unknown model settings d_model; valid:"):
        TrainConfig.from_preset("tiny", model="sp", overrides={"d_model": 8}).model_config(tokenizer)
    with pytest.raises(WorkbenchError, match="bad model settings for bgt: decoder_latent must be one of mean, "
                                             "sample, sample_language, not 'z'"):
        TrainConfig.from_preset("tiny", overrides={"decoder_latent": "z"}).model_config(tokenizer)


def test_inverse_sqrt_schedule():
    cfg = TrainConfig(lr=1e-3, warmup=100, warmup_init_lr=0.0)
    assert learning_rate(50, cfg) == pytest.approx(5e-4)
    assert learning_rate(100, cfg) == pytest.approx(1e-3)
    assert learning_rate(400, cfg) == pytest.approx(5e-4)


def train_command(config, out, *extra):
    return [sys.executable, "-m", "workbench.cli", "train", "--config", str(config), "--out", str(out), *extra]


@pytest.mark.slow
def test_sigkill_and_resume_reproduces_the_uninterrupted_losses(tmp_path, tiny_tokenizer):
    short = {**QUICK, "max_updates": 12, "valid_every": 5}  # killed at update 4's checkpoint, validated after it
    config = write_config(tmp_path / "quick.toml", **short)
    env = {**os.environ, "TQDM_DISABLE": "1"}
    subprocess.run(train_command(config, tmp_path / "straight"), check=True, env=env, capture_output=True)
    victim = subprocess.Popen(train_command(config, tmp_path / "killed"), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    latest = tmp_path / "killed" / "latest"
    deadline = time.time() + 300
    while not latest.exists() and time.time() < deadline:
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)  # mid-run: the first checkpoint has just been written
    victim.wait()
    assert latest.read_text() != f"update-{short['max_updates']}", "the run finished before it could be killed"
    subprocess.run(train_command(config, tmp_path / "killed", "--resume"), check=True, env=env,
                   capture_output=True)
    straight, resumed = metrics(tmp_path / "straight"), metrics(tmp_path / "killed")
    assert len(straight) == len(resumed) == short["max_updates"]  # (no update-0 line: no dev score to measure)
    for a, b in zip(straight, resumed):
        assert {k: a[k] for k in LOSS_KEYS} == {k: b[k] for k in LOSS_KEYS}  # bit for bit
        assert a.get("valid_loss") == b.get("valid_loss")


@pytest.mark.slow
def test_ddp_two_processes_on_gloo_match_one_process_with_accumulation(tmp_path, tiny_tokenizer):
    base = {**QUICK, "max_updates": 3, "save_every": 3, "valid_every": 3}
    env = {**os.environ, "TQDM_DISABLE": "1"}
    one = write_config(tmp_path / "one.toml", **base, update_freq=2)
    two = write_config(tmp_path / "two.toml", **base, update_freq=1)
    subprocess.run(train_command(one, tmp_path / "single"), check=True, env=env, capture_output=True)
    ddp = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_port=29533",
                          "-m", "workbench.cli", "train", "--config", str(two), "--out", str(tmp_path / "ddp")],
                         env=env, capture_output=True, text=True)
    assert ddp.returncode == 0, ddp.stderr[-2000:]
    single, parallel = metrics(tmp_path / "single"), metrics(tmp_path / "ddp")
    assert len(parallel) == 3  # only rank 0 writes
    for a, b in zip(single, parallel):
        assert a["sentences"] == b["sentences"] and a["tokens"] == b["tokens"]  # the same pairs per update
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-4)  # the same model after each update


def test_cli_probes_a_view_of_a_trained_model(tiny_run, capsys):
    from workbench.cli import main
    _, run_dir = tiny_run
    small = ["--train-size", "600", "--valid-size", "200", "--test-size", "200"]
    assert main(["probe", "--model", str(run_dir), "--encoder", "en", "--task", "length", *small]) == 0
    out = capsys.readouterr().out
    assert "length" in out and "selectivity" in out
    assert main(["probe", "--model", str(run_dir), "--encoder", "fr", "--task", "length", *small]) == 2
    assert f"task 'length' is in 'en' but encoder '{run_dir.name}:fr' reads fr" in capsys.readouterr().err
    assert main(["probe", "--model", str(run_dir), "--encoder", "de", "--task", "length", *small]) == 2
    assert "unknown encoder view 'de'; valid: en, fr, semantic" in capsys.readouterr().err


def test_export_writes_an_fp16_encoder_only_model_whose_card_matches(tiny_run, tmp_path):
    from safetensors import safe_open

    from workbench.models.pins import card, shipped
    from workbench.zoo.packaging import export
    _, run_dir = tiny_run
    folder = export(run_dir, name="bgt-tiny", root=tmp_path, sizes={"train": 600, "valid": 200, "test": 200},
                    show_progress=False)
    assert shipped(tmp_path) == ["bgt-tiny"]
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        assert not any(k.startswith("decoders.") for k in f.keys())
        assert {f.get_slice(k).get_dtype() for k in f.keys()} <= {"F16", "I64"}
    info = card("bgt-tiny", root=tmp_path)
    best = json.loads((run_dir / "best" / "config.json").read_text())["update"]  # the best STS-B dev is exported
    assert info["training"]["updates"] == best and info["training"]["run_updates"] == 30
    assert info["training"]["checkpoint"] == "best STS-B dev (semantic)"
    assert info["training"]["pairs_seen"] == sum(r.get("sentences", 0) for r in metrics(run_dir)
                                                 if 0 < r["update"] <= best)
    assert pd.read_csv(folder / "curve.csv")["run"].eq("bgt-tiny").all()
    assert set(info["views"]) == {"semantic", "en", "fr"}
    assert set(info["views"]["en"]["probing"]) == {"subj_num", "obj_num", "tree_depth", "top_const",
                                                   "word_content", "length", "punct_num", "punct_first"}
    assert set(info["views"]["fr"]["probing"]) == {"gender_fr"} and "sts" not in info["views"]["fr"]
    model = load(folder)  # the exported model: fp16 weights in float32 parameters, same fingerprints as its card
    for view, entry in info["views"].items():
        assert model.encoder(view).fingerprint == entry["fingerprint"]
    sts, hard = info["views"]["semantic"]["sts"], info["views"]["semantic"]["hard_sts"]
    assert list(sts) == ["STS12", "STS13", "STS14", "STS15", "STS16", "STS12-16"]
    assert hard["avg"] == pytest.approx((hard["hard+"] + hard["hard-"]) / 2, abs=0.01)
    assert "| STS12 |" in (folder / "card.md").read_text()
    tatoeba = info["views"]["semantic"]["tatoeba"]  # the semantic view reads en and fr: both directions
    assert list(tatoeba) == ["fr"] and set(tatoeba["fr"]) == {"xx->en", "en->xx"}
    assert all(0 <= v <= 100 for v in tatoeba["fr"].values()) and "tatoeba" not in info["views"]["en"]
    assert "| fr→en | en→fr |" in (folder / "card.md").read_text()
    with pytest.raises(ValueError, match="shipped without its decoders"):
        model.generate(torch.zeros(1, model.cfg.latent_dim), torch.zeros(1, model.cfg.latent_dim))


def test_a_bgt_warm_started_from_bilingual_trans_decodes_as_it_did_whatever_z_lang(tmp_path, tiny_tokenizer):
    """The study's warm start (trained/HISTORY.md): BGT takes a trained BILINGUALTRANS's semantic encoder and
    decoders, each generative decoder widened by zero weights for z_lang, so at update 0 it decodes from z_sem
    alone exactly as the translation decoder into its language did; the language encoders start fresh."""
    source_dir = tmp_path / "trans"
    Trainer(TrainConfig.from_preset("tiny", model="bilingual_trans", max_updates=6, save_every=6, valid_every=6,
                                    eval_every=0), source_dir, show_progress=False).run()
    source = load(source_dir / "checkpoints" / "update-6").eval()
    cfg = TrainConfig.from_preset("tiny", max_updates=2, save_every=2, valid_every=2, eval_every=0,
                                  warm_start=str(source_dir / "checkpoints" / "update-6"))
    trainer = Trainer(cfg, tmp_path / "bgt", show_progress=False)
    bgt = trainer.model.eval()
    sentences = ["where did you go last night ?", "thank you so much !"]
    assert np.allclose(bgt.encoder("semantic", tiny_tokenizer).encode(sentences),
                       source.encoder("semantic", tiny_tokenizer).encode(sentences), atol=1e-6)
    prev, z_sem = torch.randint(4, 500, (2, 5)), torch.randn(2, bgt.cfg.latent_dim)
    z_lang = torch.randn(2, bgt.cfg.language_dim)
    with torch.no_grad():
        for lang, direction in (("en", "fr->en"), ("fr", "en->fr")):
            assert torch.allclose(bgt.decoders[lang](prev, torch.cat([z_lang, z_sem], -1)),
                                  source.decoders[direction](prev, z_sem), atol=1e-5)
    fresh = Trainer(TrainConfig.from_preset("tiny", max_updates=2), tmp_path / "fresh", show_progress=False).model
    assert not torch.equal(bgt.encoders["en"].hidden2mean.weight, source.encoders["semantic"].hidden2mean.weight)
    assert torch.equal(bgt.encoders["en"].hidden2mean.weight, fresh.encoders["en"].hidden2mean.weight)  # seeded init
    trainer.run()
    steps = [r for r in metrics(tmp_path / "bgt") if "lr" in r]
    assert [r["update"] for r in steps] == [1, 2] and steps[0]["kl_weight"] == 0.0  # a new run from update 0
    with pytest.raises(WorkbenchError, match="warm start is BGT from BILINGUALTRANS"):
        Trainer(TrainConfig.from_preset("tiny", model="bilingual_trans", warm_start=str(tmp_path / "bgt" / "checkpoints" / "update-2")),
                tmp_path / "backwards", show_progress=False)
