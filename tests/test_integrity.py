"""Nothing the workbench reads is trusted unchecked: model folders, checkpoints, cards, run pointers and the model
settings inside a config are verified before use, and a refusal names the file and leaves nothing behind."""
import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest
from safetensors.torch import load_file, save_file

from workbench.cli import main
from workbench.data import sha256_of
from workbench.checks import WorkbenchError
from workbench.models.folder import DIGESTED, load, migrate, model_path
from workbench.models.pins import card, shipped
from workbench.paths import FORMAT, config_digest, sealed_config, trained_dir
from workbench.training.recipes import TrainConfig
from workbench.training.trainer import Trainer


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*")}


@pytest.mark.parametrize("name", shipped())
def test_every_shipped_folder_records_the_sha256_of_every_file_it_holds(name):
    folder = trained_dir() / name
    meta = json.loads((folder / "config.json").read_text())
    present = {p.name for p in folder.iterdir() if p.is_file() and p.name in DIGESTED}
    assert set(meta["files_sha256"]) == present
    card(name)  # the card matches its recorded sha256


def test_a_damaged_checkpoint_is_not_exported(run_copy, capsys):
    weights = run_copy / "checkpoints" / "update-4" / "model.safetensors"
    state = load_file(str(weights))
    save_file({k: v * 0.5 if v.is_floating_point() else v for k, v in state.items()}, str(weights))
    before = _snapshot(trained_dir())
    assert main(["models", "export", str(run_copy), "--name", "damaged-export", "--checkpoint", "latest"]) == 2
    assert "model.safetensors is missing or does not match the sha256" in capsys.readouterr().err
    assert _snapshot(trained_dir()) == before and not (trained_dir() / "damaged-export").exists()


def test_two_writers_of_one_model_name_the_second_is_refused_and_a_killed_writers_lock_is_taken_over(
        run_copy, tmp_path):
    import subprocess
    import sys
    from workbench.paths import only_writer
    target = tmp_path / "models" / "twice"
    with only_writer(target):  # one export or import holds the name while it builds and measures
        with pytest.raises(WorkbenchError, match=f"being written by process {__import__('os').getpid()}"):
            with only_writer(target):
                pass
        from workbench.zoo.packaging import export
        with pytest.raises(WorkbenchError, match="another export or import"):  # refused before any measuring
            export(run_copy, "twice", root=tmp_path / "models", checkpoint="latest", show_progress=False)
        assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [".twice.lock"]
    assert not (tmp_path / "models" / ".twice.lock").exists()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / "models" / ".twice.lock").write_text(dead.stdout.strip())  # its writer was killed
    with only_writer(target):
        assert (tmp_path / "models" / ".twice.lock").read_text() == str(__import__("os").getpid())


def test_an_edited_card_is_refused_not_shown(tmp_path, capsys):
    root = tmp_path / "trained"
    shutil.copytree(model_path("sp-en-fr"), root / "sp-en-fr")
    info = json.loads((root / "sp-en-fr" / "card.json").read_text())
    info["views"]["semantic"]["sts"]["STS12-16"] = 99.9
    (root / "sp-en-fr" / "card.json").write_text(json.dumps(info))
    with pytest.raises(WorkbenchError, match="card.json does not match the sha256 recorded"):
        card("sp-en-fr", root)
    with pytest.raises(WorkbenchError, match="card.json is missing or does not match"):
        load(root / "sp-en-fr")


@pytest.mark.parametrize("name", shipped())
def test_every_shipped_config_is_sealed(name):
    from workbench.paths import CONFIG_SEAL, config_digest
    meta = json.loads((trained_dir() / name / "config.json").read_text())
    assert meta[CONFIG_SEAL] == config_digest(meta)


@pytest.mark.parametrize("name", shipped())
def test_every_shipped_model_is_pinned_as_it_is(name):
    from workbench.models.pins import pinned
    assert pinned()[name] == sha256_of(trained_dir() / name / "config.json")


def test_a_shipped_model_resealed_after_an_edit_or_unsealed_is_refused(tmp_path, monkeypatch):
    from workbench.paths import CONFIG_SEAL, sealed_config
    models = tmp_path / "models"
    models.mkdir()
    shutil.copytree(trained_dir() / "sp-en-fr", models / "sp-en-fr")
    shutil.copyfile(trained_dir() / "pins.json", models / "pins.json")
    monkeypatch.setenv("WORKBENCH_MODELS", str(models))
    assert load("sp-en-fr") is not None  # as pinned
    from workbench.models.pins import pin, pinned
    shutil.copytree(models / "sp-en-fr", models / ".sp-en-fr.123.tmp")  # an export's temporary folder
    pin(models / ".sp-en-fr.123.tmp")
    assert set(pinned(models)) == set(pinned(trained_dir()))  # temporary folders are never pinned
    meta = json.loads((models / "sp-en-fr" / "config.json").read_text())
    edited = {k: v for k, v in meta.items() if k != CONFIG_SEAL}
    edited["model"] = {**edited["model"], "languages": ["en"]}
    (models / "sp-en-fr" / "config.json").write_text(sealed_config(edited))  # edited, and sealed again
    with pytest.raises(WorkbenchError, match="is not the one pins.json pins for 'sp-en-fr'"):
        load("sp-en-fr")
    (models / "pins.json").unlink()  # unpinned, the seal alone: now it must at least be there
    (models / "sp-en-fr" / "config.json").write_text(json.dumps(edited))
    with pytest.raises(WorkbenchError, match="carries no config_sha256"):
        load("sp-en-fr")
    assert load("sp-en-fr", trust_unverified=True).cfg.languages == ("en",)  # asked for by name


def _record_digest(folder, meta, name):
    """Rewrite ``folder``'s config.json (``meta``) with the sha256 of its replaced file ``name``: a consistent folder
    whose file is not what it was trained with."""
    edited = {**meta, "files_sha256": {**meta["files_sha256"], name: sha256_of(folder / name)}}
    if edited.get("format", 1) >= 2:  # its seal covers the digests: resealed, as the owner of a folder may
        edited["config_sha256"] = config_digest(edited)
    (folder / "config.json").write_text(json.dumps(edited))


def test_an_edited_config_or_another_pairs_tokenizer_is_refused_even_with_its_digest_updated(tmp_path):
    folder = tmp_path / "bgt"
    shutil.copytree(model_path("bgt-en-fr"), folder)
    meta = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**meta, "model": {**meta["model"], "languages": ["en"]}}))
    with pytest.raises(WorkbenchError, match="config.json was edited after the folder was written"):
        load(folder)
    shutil.copyfile(model_path("bgt-en-es") / "spm.model", folder / "spm.model")
    _record_digest(folder, meta, "spm.model")  # the list made to agree
    with pytest.raises(WorkbenchError, match="not the sentencepiece model this model was trained with"):
        load(folder)


def test_weights_that_lack_a_tensor_or_lie_in_their_header_are_refused_even_with_their_digest_updated(tmp_path):
    import struct

    folder = tmp_path / "sp"
    shutil.copytree(model_path("sp-en-fr"), folder)
    meta = json.loads((folder / "config.json").read_text())
    weights = load_file(str(folder / "model.safetensors"))

    def replace_weights(write):
        write(folder / "model.safetensors")
        _record_digest(folder, meta, "model.safetensors")

    replace_weights(lambda path: save_file(dict(list(weights.items())[1:]), str(path)))  # one tensor fewer
    with pytest.raises(WorkbenchError, match="does not hold the network its config.json describes"):
        load(folder)
    header = json.dumps({"x": {"dtype": "F32", "shape": [10 ** 12], "data_offsets": [0, 4 * 10 ** 12]}}).encode()
    replace_weights(lambda path: path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 16))
    with pytest.raises(WorkbenchError, match="is not a readable safetensors file"):
        load(folder)


def test_a_folder_without_digests_is_refused_unless_trusted_and_an_unlisted_file_is_refused(tmp_path):
    folder = tmp_path / "sp"
    shutil.copytree(model_path("sp-en-fr"), folder)
    meta = json.loads((folder / "config.json").read_text())
    added = folder / "trainer_state.safetensors"  # a file a model folder may hold that the digests do not cover
    added.write_bytes(b"not what was shipped")
    with pytest.raises(WorkbenchError, match="trainer_state.safetensors not covered by the sha256 list"):
        load(folder)
    added.unlink()
    del meta["files_sha256"]
    meta["config_sha256"] = config_digest(meta)  # sealed again without them (the seal covers them)
    (folder / "config.json").write_text(json.dumps(meta))
    with pytest.raises(WorkbenchError, match="records no sha256 of the folder's files"):
        load(folder)
    assert load(folder, trust_unverified=True).encoder().dim == 512
    sentences = tmp_path / "in.txt"
    sentences.write_text("a first sentence .\na second one .\n", encoding="utf-8")
    command = ["encode", "--model", str(folder), "--input", str(sentences), "--out", str(tmp_path / "x.npy")]
    assert main(command) == 2
    assert not (tmp_path / "x.npy").exists()
    assert main([*command, "--trust-unverified"]) == 0
    assert np.load(tmp_path / "x.npy").shape == (2, 512)
    shutil.copyfile(model_path("bgt-en-es") / "spm.model", folder / "spm.model")  # trusted, yet checked
    with pytest.raises(WorkbenchError, match="not the sentencepiece model"):
        load(folder, trust_unverified=True)


def test_run_pointers_stay_inside_their_run_and_the_trainer_state_is_verified(run_copy, tmp_path):
    (run_copy / "latest").write_text("../../elsewhere")
    with pytest.raises(WorkbenchError, match="not a checkpoint of this run"):
        load(run_copy)
    (run_copy / "latest").write_text("update-4")
    state_file = run_copy / "checkpoints" / "update-4" / "trainer_state.json"
    state = json.loads(state_file.read_text())
    state["position"] += 5  # a hand edit of the data position
    state_file.write_text(json.dumps(state))
    cfg = TrainConfig.from_preset("tiny", max_pairs=1000, max_valid_pairs=100, max_updates=6, save_every=2,
                                  valid_every=4, eval_every=0)
    with pytest.raises(WorkbenchError, match="trainer_state.json is missing or does not match"):
        Trainer(cfg, run_copy, resume=True, show_progress=False)


@pytest.mark.parametrize("change, message", [
    ({"d_model": 1e9}, "d_model must be a positive integer, not 1000000000.0"),
    ({"vocab_size": -1}, "vocab_size must be a positive integer, not -1"),
    ({"n_heads": 3}, "d_model 128 is not divisible by n_heads 3"),
    ({"enc_layers": -1}, "enc_layers must be a positive integer"),
    ({"enc_layers": 10000}, "would have 4.0 billion parameters"),
])
def test_hostile_model_settings_are_refused_before_anything_is_allocated(change, message, tmp_path, capsys):
    folder = tmp_path / "hostile"
    shutil.copytree(model_path("bgt-en-fr"), folder)
    meta = json.loads((folder / "config.json").read_text())
    meta["model"].update(change)
    (folder / "config.json").write_text(sealed_config(meta))  # written so by someone else, not edited here
    with pytest.raises(WorkbenchError, match=message):
        load(folder)
    assert main(["probe", "--model", str(folder), "--task", "length"]) == 2
    err = capsys.readouterr().err
    assert str(folder / "config.json") in err and "Traceback" not in err


@pytest.mark.parametrize("content", ["[1, 2, 3]", '{"model": "bgt"}', '{"train": {}}'])
def test_a_config_of_the_wrong_shape_names_the_file(content, tmp_path):
    folder = tmp_path / "shape"
    shutil.copytree(model_path("sp-en-fr"), folder)
    (folder / "config.json").write_text(content)
    with pytest.raises(WorkbenchError, match="config.json: not a model config"):
        load(folder)


def test_a_pairs_tsv_is_read_literally(tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text('source\tstyle\n"quoted" words here .\tthank you .\nthe cat sat .\t"hi" she said .\n'
                     "NA\tnull\n=cmd|' /c calc'!A1\tthanks .\n")
    out = tmp_path / "out.csv"
    assert main(["transfer", "--pairs", str(pairs), "--beam", "1", "--out", str(out)]) == 0
    table = pd.read_csv(out, keep_default_na=False)
    assert list(table["source"]) == ['"quoted" words here .', "the cat sat .", "NA", "'=cmd|' /c calc'!A1"]
    assert list(table["style"]) == ["thank you .", '"hi" she said .', "null", "thanks ."]  # the formula cell
    # above is written so that a spreadsheet shows it as text instead of running it


def test_parameter_counts_extrapolated_from_one_and_two_layers_are_exact():
    from workbench.models.bgt import BGT
    from workbench.models.bgt_config import BGTConfig
    from workbench.models.kinds import parameter_count
    for setting in ("bgt", "english_ae", "bilingual_trans"):
        cfg = BGTConfig(vocab_size=300, setting=setting, d_model=16, ffn_dim=32, n_heads=2, enc_layers=3,
                        dec_layers=2, latent_dim=8, language_latent_dim=4)
        assert parameter_count(BGT, cfg) == sum(p.numel() for p in BGT(cfg).parameters())


def test_a_checkpoint_from_before_config_json_covered_the_trainer_state_is_still_verified(run_copy):
    folder = run_copy / "checkpoints" / "update-4"
    meta = json.loads((folder / "config.json").read_text())
    state = json.loads((folder / "trainer_state.json").read_text())
    del meta["format"]  # format 1, the earlier layout: the trainer state listed its own tensors
    meta["config_sha256"] = config_digest(meta)
    del meta["files_sha256"]["trainer_state.json"]
    state["files_sha256"] = {"trainer_state.safetensors": meta["files_sha256"].pop("trainer_state.safetensors")}
    (folder / "config.json").write_text(json.dumps(meta))
    (folder / "trainer_state.json").write_text(json.dumps(state))
    with pytest.raises(WorkbenchError, match="is format 1, whose seal leaves out the files' digests .*models migrate"):
        load(run_copy)  # not pinned: read only when asked for
    assert load(run_copy, trust_unverified=True).encoder().dim == 32
    data = bytearray((folder / "trainer_state.safetensors").read_bytes())
    data[-3] ^= 0xFF
    (folder / "trainer_state.safetensors").write_bytes(bytes(data))
    with pytest.raises(WorkbenchError, match="trainer_state.safetensors is missing or does not match the sha256 "
                                             "recorded in .*trainer_state.json"):
        load(run_copy, trust_unverified=True)  # trusted as a format, still verified
    with pytest.raises(WorkbenchError, match="trainer_state.safetensors is missing or does not match"):
        migrate(run_copy)  # checked as written before it is sealed anew
    assert json.loads((folder / "config.json").read_text()).get("format") is None  # nothing written


def test_a_run_folder_has_one_trainer_and_a_finished_run_says_so(run_copy, tmp_path, capsys):
    settings = {"preset": "tiny", "max_pairs": 1000, "max_valid_pairs": 100, "max_updates": 6, "save_every": 2,
                "valid_every": 4, "eval_every": 0}
    cfg = TrainConfig.from_preset("tiny", **{k: v for k, v in settings.items() if k != "preset"})
    first = Trainer(cfg, run_copy, resume=True, show_progress=False)
    with pytest.raises(WorkbenchError, match="another process is training in"):
        Trainer(cfg, run_copy, resume=True, show_progress=False)
    assert first.run()["update"] == 6
    lines = [json.loads(line)["update"] for line in (run_copy / "metrics.jsonl").read_text().splitlines()]
    assert lines == sorted(set(lines))  # one writer: no interleaved or repeated updates
    (tmp_path / "run.json").write_text(json.dumps(settings))
    assert main(["train", "--config", str(tmp_path / "run.json"), "--out", str(run_copy), "--resume"]) == 0
    assert "is already finished at update 6 (max_updates 6)" in capsys.readouterr().out


def test_a_new_run_refuses_a_folder_left_by_another_and_leaves_it_as_it_was(tmp_path, capsys):
    folder = tmp_path / "left"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text('{"update": 1}\n')
    before = _snapshot(folder)
    assert main(["train", "--preset", "tiny", "--out", str(folder)]) == 2
    assert "is not empty (metrics.jsonl) and holds no run to resume" in capsys.readouterr().err
    assert _snapshot(folder) == before


@pytest.mark.parametrize("argv, message", [
    (["probe", "--encoder", "random-sp-average", "--task", "length", "--train-size", "0", "--valid-size", "10",
      "--test-size", "10"], "probing sizes must give train, valid, test as whole numbers from 1 to 10,000,000"),
    (["probe", "--model", "sp-en-fr", "--pair", "en-es", "--task", "length"],
     "--pair en-es picks the tokenizer of an untrained --encoder; --model sp-en-fr has its own"),
    (["train", "--preset", "tiny", "--out", "{tmp}/r", "--resume", "--init-from", "bgt-en-fr"],
     "give one of them"),
    (["transfer", "--pairs", "{tmp}/p.tsv", "--source", "a ."], "give either --pairs FILE or --source/--style"),
])
def test_ignored_or_conflicting_options_are_errors_that_name_them(argv, message, tmp_path, capsys):
    (tmp_path / "p.tsv").write_text("source\tstyle\na .\tb .\n")
    before = _snapshot(tmp_path)
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    assert message in capsys.readouterr().err
    assert _snapshot(tmp_path) == before


def test_encode_writes_exactly_the_path_it_is_given(tmp_path):
    import numpy as np
    (tmp_path / "in.txt").write_text("a man is playing a guitar .\nthe cat sat .\n")
    out = tmp_path / "vectors"
    assert main(["encode", "--encoder", "random-sp-average", "--input", str(tmp_path / "in.txt"),
                 "--out", str(out)]) == 0
    assert out.is_file() and not (tmp_path / "vectors.npy").exists()
    assert np.load(out).shape == (2, 512)
    assert main(["encode", "--encoder", "random-sp-average", "--input", str(tmp_path / "in.txt"),
                 "--out", str(out)]) == 2  # exists: --force replaces it


def test_encode_on_a_full_disk_leaves_the_old_file_whole(tmp_path, monkeypatch):
    import numpy as np
    (tmp_path / "in.txt").write_text("a man is playing a guitar .\nthe cat sat .\n")
    out = tmp_path / "vectors.npy"
    np.save(out, np.ones((1, 3), dtype=np.float32))
    old = out.read_bytes()

    def full_disk(handle, array):
        handle.write(b"\x93NUMPY partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("workbench.cli.measuring.np.save", full_disk)
    assert main(["encode", "--encoder", "random-sp-average", "--input", str(tmp_path / "in.txt"),
                 "--out", str(out), "--force"]) != 0
    assert out.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "vectors.npy"]


def test_reports_refuse_impossible_numbers_and_escape_what_they_are_given(tmp_path):
    from workbench.reports.pages import report
    good = pd.DataFrame({"encoder": ["=HYPERLINK(\"http://x\")", "b"], "task": ["length"] * 2,
                         "metric": ["accuracy"] * 2, "value": [0.5, 0.75]})
    for bad, message in ((good.assign(value=[-5, 0.5]), "accuracy must lie in \\[0, 1\\]"),
                         (good.assign(value=[1e308, 0.5]), "accuracy must lie in \\[0, 1\\]"),
                         (pd.concat([good, good.iloc[:1]]), "more than once")):
        with pytest.raises(WorkbenchError, match=message):
            report(bad, tmp_path / "bad.html", static=False)
    path = report(good, tmp_path / "r.html", notes='<img src=x onerror="alert(1)">', static=False)
    text = path.read_text()
    assert "<img src=x" not in text and "&lt;img src=x onerror=" in text
    assert pd.read_csv(tmp_path / "r.csv")["encoder"].iloc[0].startswith("'=HYPERLINK")


@pytest.mark.parametrize("name", ["bgt-en-fr", "wmf-en-fr"])
def test_load_reads_the_config_and_each_file_once_and_loads_the_bytes_it_verified(name, monkeypatch):
    """One read of config.json and of the tokenizer, one hashing of the weights."""
    from pathlib import Path
    import workbench.models.folder as modelfolder
    reads = []
    original_read_bytes, original_read_text = Path.read_bytes, Path.read_text
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self.name) or original_read_bytes(self))
    monkeypatch.setattr(Path, "read_text",
                        lambda self, *a, **k: reads.append(self.name) or original_read_text(self, *a, **k))
    hashed, original_sha256_of = [], modelfolder.sha256_of
    monkeypatch.setattr(modelfolder, "sha256_of",
                        lambda path: hashed.append(Path(path).name) or original_sha256_of(path))
    model = load(name)
    files = [f for f in reads if f in ("config.json", "spm.model")]
    assert sorted(files) == sorted(set(files)) and "config.json" in files  # each read once
    assert hashed == ["model.safetensors"]  # the weights hashed once (then mapped); the rest hashed from the bytes read
    assert model.encoder("semantic").encode(["A man is playing a guitar."]).shape[0] == 1


def _count_reads(monkeypatch):
    """Every Path.read_text / read_bytes (the path) and every file hashed by the model-folder code (the path)."""
    from pathlib import Path
    import workbench.models.folder as modelfolder
    reads, hashed = [], []
    read_bytes, read_text, sha256 = Path.read_bytes, Path.read_text, modelfolder.sha256_of
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self.resolve()) or read_bytes(self))
    monkeypatch.setattr(Path, "read_text",
                        lambda self, *a, **k: reads.append(self.resolve()) or read_text(self, *a, **k))
    monkeypatch.setattr(modelfolder, "sha256_of", lambda path: hashed.append(Path(path).resolve()) or sha256(path))
    return reads, hashed


SHORT_RUN = dict(max_pairs=1000, max_valid_pairs=100, save_every=2, valid_every=4, eval_every=0)  # the fixture's


@pytest.mark.parametrize("how", ["resume", "init_from"])
def test_a_resume_or_a_start_from_a_model_reads_its_config_and_hashes_its_weights_once(how, run_copy, tmp_path,
                                                                                       monkeypatch):
    folder = (run_copy / "checkpoints" / "update-4").resolve()
    reads, hashed = _count_reads(monkeypatch)
    cfg = TrainConfig.from_preset("tiny", max_updates=6, **SHORT_RUN)
    trainer = (Trainer(cfg, run_copy, resume=True, show_progress=False) if how == "resume" else
               Trainer(cfg, tmp_path / "new", init_from=folder, show_progress=False))
    assert reads.count(folder / "config.json") == 1
    assert hashed.count(folder / "model.safetensors") == 1
    assert trainer.state["update"] == 4


def test_an_export_reads_the_runs_config_and_metrics_once_and_hashes_its_weights_once(run_copy, tmp_path,
                                                                                       monkeypatch):
    from workbench.zoo.packaging import export_shards
    folder = (run_copy / "checkpoints" / "update-4").resolve()
    reads, hashed = _count_reads(monkeypatch)
    package = export_shards(run_copy, tmp_path / "packages", name="bgt-tiny", checkpoint="latest")
    assert reads.count(folder / "config.json") == 1
    assert reads.count(run_copy.resolve() / "metrics.jsonl") == 1
    assert hashed.count(folder / "model.safetensors") == 1
    manifest = json.loads((package / "manifest.json").read_text())
    assert manifest["config"]["training"]["updates"] == 4 and manifest["curve"]


def test_an_export_takes_any_kept_checkpoint_by_its_update_or_its_folder(run_copy, tmp_path):
    """A run keeps several checkpoints; a model may be shipped from any of them (the one a study measured), named
    by its update or given as the folder itself; an update it does not keep is refused with those it does."""
    from workbench.zoo.packaging import export_shards

    def exported(given, checkpoint):
        package = export_shards(given, tmp_path / f"p{len(list(tmp_path.iterdir()))}", name="bgt-tiny",
                                checkpoint=checkpoint)
        manifest = json.loads((package / "manifest.json").read_text())
        return manifest["config"]["training"], manifest["restored_sha256"]
    folder = run_copy / "checkpoints" / "update-2"
    picked = [exported(given, checkpoint) for given, checkpoint in ((run_copy, 2), (run_copy, "2"), (folder, "best"))]
    for record, weights in picked:
        assert record["updates"] == 2 and record["run_updates"] == 4 and record["checkpoint"] == "update 2"
        assert weights == picked[0][1]
    latest, weights = exported(run_copy, "latest")
    assert latest["updates"] == 4 and latest["checkpoint"] == "latest" and weights != picked[0][1]
    with pytest.raises(WorkbenchError, match="has no checkpoint of update 3; it keeps updates 2, 4"):
        export_shards(run_copy, tmp_path / "none", name="bgt-tiny", checkpoint=3)
    with pytest.raises(WorkbenchError, match="checkpoint must be best, latest or an update number, not 'last'"):
        export_shards(run_copy, tmp_path / "none", name="bgt-tiny", checkpoint="last")


def test_config_json_records_its_format_and_an_older_one_is_read_only_when_trusted_or_migrated(run_copy, tmp_path):
    """Every folder written now says which layout its config.json has and the libraries that wrote it; a format-1
    folder (whose seal left the files' digests out) is read only where pinned or trusted by name, and `models
    migrate` checks it as written and seals it in the current format, its weights untouched; a format this
    workbench does not know is refused by name."""
    written = json.loads((run_copy / "checkpoints" / "update-4" / "config.json").read_text())
    assert written["format"] == FORMAT and {"python", "torch", "bgt-workbench"} <= set(written["written_with"])
    old = tmp_path / "bilingual_trans-en-fr"
    shutil.copytree(trained_dir() / "bilingual_trans-en-fr", old)
    meta = json.loads((old / "config.json").read_text())
    assert meta["format"] == FORMAT and meta["migrated_from_format"] == 1  # shipped in format 1, migrated once
    downgraded = {k: v for k, v in meta.items() if k not in ("format", "config_sha256", "migrated_from_format")}
    (old / "config.json").write_text(json.dumps({**downgraded, "config_sha256": config_digest(downgraded)}))
    with pytest.raises(WorkbenchError, match="is format 1, whose seal leaves out the files' digests"):
        load(old)  # a downgrade: refused unless trusted by name
    sentence = ["A man is playing a guitar."]
    shipped = load("bilingual_trans-en-fr").encoder("semantic")
    assert np.array_equal(load(old, trust_unverified=True).encoder("semantic").encode(sentence),
                          shipped.encode(sentence))
    assert migrate(old) == [old] and migrate(old) == []  # once: then it is current
    assert json.loads((old / "config.json").read_text())["format"] == FORMAT
    assert load(old).encoder("semantic").fingerprint == shipped.fingerprint
    future = {**json.loads((old / "config.json").read_text()), "format": FORMAT + 1}
    (old / "config.json").write_text(json.dumps({**future, "config_sha256": config_digest(future)}))
    with pytest.raises(WorkbenchError, match=f"format {FORMAT + 1} is not one this workbench reads .1 to {FORMAT}.; "
                                             "a newer workbench wrote it"):
        load(old)


def test_every_shipped_model_is_in_the_current_format_and_names_the_libraries_that_wrote_it():
    configs = {name: json.loads((trained_dir() / name / "config.json").read_text()) for name in shipped()}
    assert configs and {name: meta.get("format") for name, meta in configs.items()} == dict.fromkeys(configs, FORMAT)
    unrecorded = [name for name, meta in configs.items()
                  if not {"python", "torch", "bgt-workbench"} <= set(meta.get("written_with", {}))]
    assert not unrecorded, unrecorded


def test_from_format_2_the_seal_covers_the_files_digests(run_copy):
    """Another network's weights with only files_sha256 updated: a format-1 folder's seal left the digests out (its
    files' bytes were checked against them, but they could be rewritten); a format-2 folder's seal covers them."""
    folder = run_copy / "checkpoints" / "update-4"
    meta = json.loads((folder / "config.json").read_text())
    assert meta["format"] == FORMAT >= 2
    (folder / "model.safetensors").write_bytes((run_copy / "checkpoints" / "update-2" / "model.safetensors").read_bytes())
    swapped = {**meta, "files_sha256": {**meta["files_sha256"], "model.safetensors": sha256_of(folder / "model.safetensors")}}
    (folder / "config.json").write_text(json.dumps(swapped))
    with pytest.raises(WorkbenchError, match="config.json was edited after the folder was written"):
        load(folder)


# Each writer killed (SIGKILL, in a child process) at the moment it would put its work in place, or while it is
# writing: the destination must be the old content or the new one, whole.
_KILL = "import os, signal\ndef die(*args, **kwargs):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
_KILLED_WRITES = {
    "encode --out, while writing": "import workbench.cli.measuring as m\n"
                                   "def partial(handle, array):\n    handle.write(b'\\x93NUMPY partial'); die()\n"
                                   "m.np.save = partial\n"
                                   "m_main = __import__('workbench.cli', fromlist=['main']).main\n"
                                   "m_main(['encode', '--encoder', 'random-sp-average', '--input', 'in.txt', "
                                   "'--out', 'old', '--force'])",
    "encode --out, at the rename": "os.replace = die\nfrom workbench.cli import main\n"
                                   "main(['encode', '--encoder', 'random-sp-average', '--input', 'in.txt', '--out', "
                                   "'old', '--force'])",
    "docs --write, at the rename": "os.replace = die\nfrom pathlib import Path\nfrom tools.docfacts import refresh\n"
                                   "refresh([Path('old')], write=True)",
    "folder swap, before": "import workbench.paths as p\np._exchange = die\n"
                           "p.swap_folder(__import__('pathlib').Path('new'), __import__('pathlib').Path('old'))",
    "folder swap, after": "import shutil, workbench.paths as p\nshutil.rmtree = die\n"
                          "p.swap_folder(__import__('pathlib').Path('new'), __import__('pathlib').Path('old'))",
}


@pytest.mark.parametrize("case", list(_KILLED_WRITES))
def test_a_writer_killed_mid_write_leaves_the_old_content_or_the_new_never_a_mix(case, tmp_path):
    import subprocess
    import sys
    from workbench.paths import REPO_ROOT
    (tmp_path / "in.txt").write_text("a man is playing a guitar .\nthe cat sat .\n")
    if case.startswith("folder"):  # a model, package or best/ folder of two files, replaced by another
        for name, text in (("old", "before"), ("new", "after")):
            (tmp_path / name).mkdir()
            for file in ("model.safetensors", "config.json"):
                (tmp_path / name / file).write_text(f"{text} {file}")
    elif case.startswith("docs"):
        (tmp_path / "old").write_text("<!-- fact: shipped-count -->0<!-- /fact -->\n")
    else:
        np.save(tmp_path / "old.npy", np.ones((1, 3), dtype=np.float32))
        (tmp_path / "old.npy").rename(tmp_path / "old")
    def contents(path):
        return {p.name: p.read_text() for p in path.iterdir()} if path.is_dir() else path.read_bytes()

    before = contents(tmp_path / "old")
    child = subprocess.run([sys.executable, "-c", _KILL + _KILLED_WRITES[case]], cwd=tmp_path, capture_output=True,
                           env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=300)
    assert child.returncode == -9, child.stderr.decode()[-2000:]
    new = {f: f"after {f}" for f in ("model.safetensors", "config.json")}
    assert contents(tmp_path / "old") == (new if case == "folder swap, after" else before)  # the exchange is one step


@pytest.mark.parametrize("file,content,message", [
    ("config.json", lambda c: json.dumps({**c, "files_sha256": ["model.safetensors"]}),
     "files_sha256 must map the folder's own file names to sha256 digests"),
    ("config.json", lambda c: json.dumps({**c, "files_sha256": {**c["files_sha256"], "../../etc/hostname": "0" * 64}}),
     "files_sha256 must map the folder's own file names"),  # a digest list is data, never a path to read elsewhere
    ("config.json", lambda c: "[" * 100_000 + "]" * 100_000, "cannot parse the file \\(RecursionError"),
    ("curve.csv", lambda c: "hello\n", "curve.csv lacks the curve's columns update"),
], ids=["digests as a list", "digest of a path outside", "nested 100,000 deep", "curve without its columns"])
def test_a_malformed_file_of_a_model_folder_is_refused_by_name(file, content, message, tmp_path):
    from workbench.models.runlog import learning_curve
    folder = tmp_path / "bgt-copy"
    shutil.copytree(trained_dir() / "bgt-en-fr", folder)
    (folder / file).write_text(content(json.loads((folder / "config.json").read_text())))
    with pytest.raises(WorkbenchError, match=message):
        learning_curve(folder) if file == "curve.csv" else load(folder, trust_unverified=True)


def test_a_folder_of_your_own_changed_and_sealed_again_is_said_to_have_changed(tmp_path, caplog):
    """Trust on first use: whoever writes a folder can re-seal it, so a seal cannot tell an edit from a re-export;
    the home remembers what each verified folder was and says when it comes back otherwise."""
    from workbench.models.pins import KNOWN
    from workbench.paths import home_dir
    folder = tmp_path / "sp"
    shutil.copytree(model_path("sp-en-fr"), folder)
    load(folder)
    assert "with another config.json" not in caplog.text
    meta = json.loads((folder / "config.json").read_text())
    edited = {**meta, "note": "changed by someone"}
    (folder / "config.json").write_text(json.dumps({**edited, "config_sha256": config_digest(edited)}))
    load(folder)  # sealed again: it loads, and the change is said
    assert f"{folder} was verified on" in caplog.text and "with another config.json" in caplog.text
    caplog.clear()
    load(folder)
    assert "with another config.json" not in caplog.text  # said once: the new contents are now the known ones
    load("sp-en-fr")  # a pinned model is checked against its pin instead
    known = json.loads((home_dir() / KNOWN).read_text())
    assert str(folder.resolve()) in known and str(model_path("sp-en-fr").resolve()) not in known
