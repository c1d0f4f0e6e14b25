"""The GPU campaign's CPU dry run (``CAMPAIGN_PRESET=tiny``: the same steps a lent GPU runs, so the first device
call meets CUDA, not our bugs), the bundle that carries its packages back in parts, and the packages."""
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file

from conftest import made_once
from tools import bundle as bundle_module
from tools import campaign
from workbench.zoo.cards import card
from workbench.checks import WorkbenchError
from workbench.models.folder import load
from workbench.zoo.packaging import export_shards, import_shards

REPO = Path(__file__).resolve().parent.parent
SMALL = {"train": 600, "valid": 200, "test": 200}


JOBS = "bgt-en-fr,bilingual_trans-en-fr"  # the dry run trains two of the campaign's jobs (the code is per job)


def step(name, out, runs, *extra, jobs=JOBS, env=None):
    env = {**os.environ, "OUT": str(out), "CAMPAIGN_PRESET": "tiny", "CAMPAIGN_RUNS": str(runs),
           "CAMPAIGN_JOBS": jobs, **(env or {})}
    return subprocess.run(["bash", str(REPO / "scripts" / "gpu_campaign"), name, *extra], env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")
def trained():
    """``train`` of the tiny dry run: (its $OUT, its runs folder, what it printed), made once for all workers."""
    def make(root):
        result = step("train", root / "out", root / "runs", "--seconds", "3")  # well below what 40 tiny updates take
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        (root / "stdout.txt").write_text(result.stdout)

    root = made_once("campaign-train", make)
    return root / "out", root / "runs", (root / "stdout.txt").read_text()


@pytest.mark.slow
def test_check_runs_the_gpu_tests_and_bench_the_steady_state_throughput_with_its_phases(tmp_path):
    result = step("check", tmp_path / "out", tmp_path / "runs")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    log = (tmp_path / "out" / "check.log").read_text()
    assert "torch" in log and "4 skipped" in log  # the gpu tests are collected and skip without CUDA
    assert "tokens_per_s" not in log  # the throughput is its own step: it cost training time on the device
    result = step("bench", tmp_path / "out", tmp_path / "runs")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    log = (tmp_path / "out" / "bench.log").read_text()
    assert "tokens_per_s" in log and "tiny" in log and "MFU_%" in log and "warmup_updates" in log
    assert "share of the update" in log and "backward" in log  # the profiler's per-phase split
    assert campaign.check_return(tmp_path / "out")["files"] == 2


@pytest.mark.slow
def test_train_stops_its_jobs_at_the_calls_deadline_and_still_returns_them(tmp_path, monkeypatch):
    """A long budget in a short call: the jobs are stopped (SIGINT, a clean stop) so the export fits the call."""
    monkeypatch.setenv("CAMPAIGN_PRESET", "tiny")
    campaign.job_config("bgt-en-fr", 1).tokenizer()  # stored: the call trains, not this
    started = time.time()
    env = {"CAMPAIGN_CALL_START": str(started),  # ~10 s to the job's first checkpoint, then it trains until stopped
           "CAMPAIGN_CALL_SECONDS": str(campaign.AFTER_TRAINING_SECONDS + 30)}
    result = step("train", tmp_path / "out", tmp_path / "runs", "--seconds", "1000", jobs="bgt-en-fr", env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "stopping the jobs (SIGINT)" in result.stdout
    record = [json.loads(line) for line in (tmp_path / "runs" / "bgt-en-fr" / "metrics.jsonl").read_text().splitlines()]
    assert record[-1]["stopped"] == "SIGINT" and record[-1]["train_seconds"] < 100
    assert [p.name for p in campaign.unbundle([tmp_path / "out"], tmp_path / "back")] == ["bgt-en-fr"]


def test_every_job_has_a_recipe_and_the_bgt_recipes_are_bgt_en_frs_but_for_the_pair(monkeypatch):
    monkeypatch.setenv("CAMPAIGN_PRESET", "recipes")
    shipped = json.loads((REPO / "trained" / "bgt-en-fr" / "config.json").read_text())["train"]
    for job in campaign.KNOWN_JOBS:
        cfg = campaign.job_config(job, 400)
        assert cfg.max_seconds == 400 and f"{cfg.model}-{cfg.pair}" == job and cfg.max_updates == 4400
        if cfg.model == "bgt":
            recorded = json.loads(json.dumps(cfg.__dict__))
            differ = {k for k in shipped if recorded[k] != shipped[k]}
            assert differ <= {"pair", "max_updates", "max_seconds", "save_every", "keep_checkpoints"}, differ
    monkeypatch.setenv("CAMPAIGN_JOBS", "bgt-en-xx")
    with pytest.raises(WorkbenchError, match="CAMPAIGN_JOBS: unknown jobs bgt-en-xx; valid: bgt-en-ar"):
        campaign._jobs()


def test_train_returns_the_packages_with_decoders_as_a_bundle_within_the_device_limits(trained, tmp_path):
    out, runs, stdout = trained
    used = campaign.check_return(out)  # raises beyond 8 files / 16 MiB each / 64 MiB / 2 folders down
    assert {"bundle.json", "train.log"} <= {p.name for p in out.iterdir()} and used["files"] >= 3
    for job in JOBS.split(","):
        record = [json.loads(line) for line in (runs / job / "metrics.jsonl").read_text().splitlines()]
        assert record[-1]["stopped"] == "max_seconds=3"  # the time budget stopped it, with a checkpoint
        assert job in (out / "train.log").read_text()
    packages = campaign.unbundle([out], tmp_path / "back")
    assert sorted(p.name for p in packages) == sorted(JOBS.split(","))
    for package in packages:
        manifest = json.loads((package / "manifest.json").read_text())
        assert manifest["config"]["decoders"] is True and manifest["config"]["training"]["checkpoint"].startswith(
            "best")
        assert any(k.startswith("decoders.") for f in manifest["files"] if f.endswith(".safetensors")
                   for k in load_file(str(package / f)))  # --init-from can continue it, and BGT can transfer
    assert "wait for the next call" not in stdout


def test_parts_that_do_not_fit_wait_for_fetch_and_unbundle_joins_every_return(trained, tmp_path, monkeypatch):
    _, runs, _ = trained
    monkeypatch.setattr(bundle_module, "PART_BYTES", 300_000)  # many parts: the tiny models are a few MB
    monkeypatch.setenv("CAMPAIGN_RUNS", str(tmp_path / "runs"))
    bundle = campaign.make_bundle(runs / "packages", tmp_path / "runs" / "parts")
    assert len(bundle["parts"]) >= 4
    monkeypatch.setitem(campaign.RETURN_LIMITS, "files", 3)  # bundle.json and two parts a return
    returns = []
    for i in range(len(bundle["parts"])):
        monkeypatch.setenv("OUT", str(tmp_path / f"return{i}"))
        if i == 0:
            campaign._deliver(tmp_path / "runs" / "parts", tmp_path / "return0")
        else:
            try:
                campaign.fetch()
            except WorkbenchError as error:
                assert "nothing waits" in str(error)
                break
        returns.append(tmp_path / f"return{i}")
        assert campaign.check_return(returns[-1])["files"] <= 3
    assert len(returns) == -(-len(bundle["parts"]) // 2)
    with pytest.raises(WorkbenchError, match="did not come back"):
        campaign.unbundle(returns[:1], tmp_path / "partial")
    packages = campaign.unbundle(returns, tmp_path / "back")
    for package in packages:  # every file as it left the device
        for file in (runs / "packages" / package.name).iterdir():
            assert (package / file.name).read_bytes() == file.read_bytes()
    with pytest.raises(WorkbenchError, match="already holds .*; --force replaces them"):
        campaign.unbundle(returns, tmp_path / "back")
    with pytest.raises(WorkbenchError, match="models import PACKAGE --name NAME"):
        campaign.unbundle(returns, REPO / "trained")
    index = json.loads((returns[0] / "bundle.json").read_text())
    (returns[0] / "bundle.json").write_text(json.dumps({**index, "files": index["files"][::-1]}))  # reordered
    before = {p: p.read_bytes() for p in (tmp_path / "back").rglob("*") if p.is_file()}
    with pytest.raises(WorkbenchError, match="does not match its sha256 in bundle.json; nothing was written"):
        campaign.unbundle(returns, tmp_path / "back", force=True)
    assert {p: p.read_bytes() for p in (tmp_path / "back").rglob("*") if p.is_file()} == before  # untouched
    assert not list((tmp_path / "back").glob(".unbundle.*"))
    (returns[0] / "bundle.json").write_text(json.dumps({**index, "files": [{**index["files"][0], "file": "../x"}]}))
    with pytest.raises(WorkbenchError):
        campaign.unbundle(returns, tmp_path / "elsewhere")
    assert not (tmp_path / "x").exists()
    (returns[0] / "bundle.json").write_text(json.dumps(index))
    part = next(returns[0].glob("part-*"))
    part.write_bytes(part.read_bytes()[:-1] + bytes([part.read_bytes()[-1] ^ 0xFF]))
    with pytest.raises(WorkbenchError, match="does not match its sha256"):
        campaign.unbundle(returns, tmp_path / "again")


@pytest.mark.slow
def test_a_package_split_into_small_shards_imports_as_the_same_model(trained, tmp_path):
    _, runs, _ = trained
    package = export_shards(runs / "bgt-en-fr", tmp_path / "packages", name="bgt-en-fr", shard_mib=0.05)
    manifest = json.loads((package / "manifest.json").read_text())
    assert manifest["split"]  # tensors larger than a shard went by rows
    shards = sorted(package.glob("model-*.safetensors"))
    assert len(shards) > 3 and all(p.stat().st_size <= 0.05 * 2 ** 20 + 8192 for p in shards)
    folder = import_shards(package, root=tmp_path / "trained", sizes=SMALL, show_progress=False, transfer_pairs=10)
    info = card("bgt-en-fr", root=tmp_path / "trained")
    assert info["decoders"] is False and info["training"]["hardware"].startswith("CPU")
    imported, original = load(folder), load(runs / "bgt-en-fr" / "best")
    sentences = ["A man is playing a guitar.", "Un homme joue de la guitare."]
    for view in ("semantic", "en"):  # the run's weights through fp16
        np.testing.assert_allclose(imported.encoder(view).encode(sentences),
                                   original.encoder(view).encode(sentences), rtol=0.02, atol=2e-3)
        assert imported.encoder(view).fingerprint == info["views"][view]["fingerprint"]
    assert (folder / "curve.csv").is_file()


def test_import_refuses_damaged_packages_and_unsafe_names(trained, tmp_path):
    _, runs, _ = trained
    package = tmp_path / "bgt-en-fr"
    shutil.copytree(runs / "packages" / "bgt-en-fr", package)
    with pytest.raises(WorkbenchError, match="not a valid model name"):
        import_shards(package, name="../elsewhere", root=tmp_path / "trained")
    shard = next(package.glob("model-*.safetensors"))
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(WorkbenchError, match=f"{shard.name} does not match its sha256"):
        import_shards(package, root=tmp_path / "trained")
    manifest = json.loads((package / "manifest.json").read_text())
    outside = tmp_path / "outside.safetensors"
    outside.write_bytes(shard.read_bytes())
    for name in ("../outside.safetensors", str(outside), "/etc/hostname"):  # a manifest is data, never a path
        hostile = {**manifest, "files": {**manifest["files"], name: "0" * 64}}
        (package / "manifest.json").write_text(json.dumps(hostile))
        with pytest.raises(WorkbenchError, match=f"file '{name}' is not a plain file name inside the package"):
            import_shards(package, root=tmp_path / "trained")
    huge = {**manifest, "config": {**manifest["config"], "model": {**manifest["config"]["model"], "d_model": 10 ** 9}}}
    (package / "manifest.json").write_text(json.dumps(huge))
    with pytest.raises(WorkbenchError, match="more than the 2 billion parameters the workbench builds"):
        import_shards(package, root=tmp_path / "trained")  # refused before any shard is read
    untrained = {**manifest, "config": {k: v for k, v in manifest["config"].items() if k != "training"}}
    for bad, message in (({**manifest, "curve": "a string"}, "'curve' must be a list of rows with update"),
                         (untrained, "and its training record \\('training'\\)")):  # was: failed after measuring
        (package / "manifest.json").write_text(json.dumps(bad))
        with pytest.raises(WorkbenchError, match=message):
            import_shards(package, root=tmp_path / "trained")
    (package / "manifest.json").write_text(json.dumps(manifest))
    damaged = shard.read_bytes()
    shard.unlink()
    shard.symlink_to(outside)  # a shard that is a link to a file elsewhere
    with pytest.raises(WorkbenchError, match=f"{shard.name} is a link"):
        import_shards(package, root=tmp_path / "trained")
    shard.unlink()
    shard.write_bytes(damaged)
    pickled = {**manifest, "files": {**manifest["files"], shard.name: hashlib.sha256(b"\x80\x04 pickle").hexdigest()}}
    shard.write_bytes(b"\x80\x04 pickle")  # its digest recorded: only the format can tell
    (package / "manifest.json").write_text(json.dumps(pickled))
    with pytest.raises(WorkbenchError, match=f"{shard.name} is not a readable safetensors file"):
        import_shards(package, root=tmp_path / "trained")
    (package / "manifest.json").write_text(json.dumps({**manifest, "split": {"x": "many"}, "files": {}}))
    with pytest.raises(WorkbenchError, match="'files' must map .*'split' must map"):
        import_shards(package, root=tmp_path / "trained")
    (package / "manifest.json").unlink()
    with pytest.raises(WorkbenchError, match="not a model package"):
        import_shards(package, root=tmp_path / "trained")
    assert not (tmp_path / "trained").exists() or not any((tmp_path / "trained").iterdir())


def test_an_existing_model_is_replaced_only_with_force_and_names_stay_inside_trained(trained, tmp_path, capsys):
    from workbench.cli import main
    _, runs, _ = trained
    existing = tmp_path / "trained" / "bgt-en-fr"
    existing.mkdir(parents=True)
    (existing / "card.json").write_text("{}")
    with pytest.raises(WorkbenchError, match="exists; pass --force"):
        import_shards(runs / "packages" / "bgt-en-fr", root=tmp_path / "trained")
    assert (existing / "card.json").read_text() == "{}" and sorted(p.name for p in existing.parent.iterdir()) == [
        "bgt-en-fr"]
    before = sorted(p.name for p in (REPO / "trained").iterdir())
    for name in (".", "..", "../elsewhere", "a/b"):
        assert main(["models", "export", str(runs / "bgt-en-fr"), "--name", name]) == 2
        assert "not a valid model name" in capsys.readouterr().err
    assert sorted(p.name for p in (REPO / "trained").iterdir()) == before
