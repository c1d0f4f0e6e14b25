"""The GPU campaign's CPU dry run (``CAMPAIGN_PRESET=tiny``: the same steps a lent GPU runs, so the first device
call meets CUDA, not our bugs), the bundle that carries its packages back in parts, and the packages."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from conftest import made_once
from tools import bundle as bundle_module
from tools import campaign, campaign_jobs, carry
from workbench.models.pins import card
from workbench.checks import WorkbenchError
from workbench.models.folder import load
from workbench.zoo.packaging import export_shards, import_shards

REPO = Path(__file__).resolve().parent.parent
SMALL = {"train": 600, "valid": 200, "test": 200}


JOBS = "bgt-small-en-fr,bgt-small-en-es"  # the dry run trains two of the campaign's jobs (the code is per job)
FIRST = "bgt-small-en-fr"


def step(name, out, runs, *extra, jobs=JOBS, env=None, preexec_fn=None):
    env = {**os.environ, "OUT": str(out), "CAMPAIGN_PRESET": "tiny", "CAMPAIGN_RUNS": str(runs),
           "CAMPAIGN_JOBS": jobs, **(env or {})}
    return subprocess.run(["bash", str(REPO / "scripts" / "gpu_campaign"), name, *extra], env=env,
                          capture_output=True, text=True, timeout=900, preexec_fn=preexec_fn)


# The tests that read the dry run's ``train`` go to one worker (scripts/test): spread over two, both waited on its
# lock at once, one of them idle for the ~25 s it takes.
ON_THE_TRAINED_WORKER = pytest.mark.xdist_group("campaign-train")


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
def test_check_runs_the_gpu_tests_bench_the_steady_state_throughput_and_layers_a_language_model(tmp_path):
    result = step("check", tmp_path / "out", tmp_path / "runs")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    log = (tmp_path / "out" / "check.log").read_text()
    assert "torch" in log and "skipped" in log and "failed" not in log  # the gpu tests skip without CUDA
    assert "tokens_per_s" not in log  # the throughput is its own step: it cost training time on the device
    result = step("bench", tmp_path / "out", tmp_path / "runs")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    log = (tmp_path / "out" / "bench.log").read_text()
    assert "tokens_per_s" in log and "tiny" in log and "MFU_%" in log and "warmup_updates" in log
    assert "current / as-it-was" in log  # the update before v3 beside the update now, in one run
    assert "share of the update" in log and "backward" in log  # the profiler's per-phase split
    result = step("layers", tmp_path / "out", tmp_path / "runs")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    log = (tmp_path / "out" / "layers.log").read_text()
    assert "hf:llama" in log and "plain loop" in log and "ratio" in log  # a language model's layers, side by side
    assert campaign.check_return(tmp_path / "out")["files"] == 3


@pytest.mark.slow
def test_train_stops_its_jobs_at_the_calls_deadline_and_still_returns_them(tmp_path, monkeypatch):
    """A long budget in a short call: the jobs are stopped (SIGINT, a clean stop) so the export fits the call —
    even when the deadline comes while they are still starting, under a shell that ignores SIGINT in what it runs
    in the background (the job's own handler is not set yet, so a single signal was lost and the job trained on)."""
    monkeypatch.setenv("CAMPAIGN_PRESET", "tiny")
    campaign_jobs.job_config(FIRST, 1).tokenizer()  # stored: the call trains, not this
    started = time.time()
    env = {"CAMPAIGN_CALL_START": str(started),  # the deadline passes before the job has imported torch
           "CAMPAIGN_CALL_SECONDS": str(campaign.AFTER_TRAINING_SECONDS + 2),
           "CAMPAIGN_COMPILE": "off"}  # the signals are tested here; ``trained`` captures the graphs
    result = step("train", tmp_path / "out", tmp_path / "runs", "--seconds", "1000", jobs=FIRST, env=env,
                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))  # as `nohup CMD &` leaves it
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "stopping the jobs (SIGINT)" in result.stdout
    record = [json.loads(line) for line in (tmp_path / "runs" / FIRST / "metrics.jsonl").read_text().splitlines()]
    assert record[-1]["stopped"] == "SIGINT" and record[-1]["train_seconds"] < 150
    assert [p.name for p in campaign.unbundle([tmp_path / "out"], tmp_path / "back")] == [FIRST]


def test_every_job_is_a_gpu_scale_bgt_with_decoders_whose_int8_package_fits_one_return(monkeypatch):
    """Campaign v3 trains what only a GPU can: no job at the CPU recipe's size, none without its decoders or with
    narrow language latents, and each package (int8, before compression) within one device return beside the
    logs (uncompressed); the dry run changes the sizes and the cadence only."""
    for job in campaign_jobs.JOBS:
        monkeypatch.setenv("CAMPAIGN_PRESET", "recipes")
        cfg = campaign_jobs.job_config(job, 400)
        model = cfg.model_config()
        assert f"{cfg.model}-small-{cfg.pair}" == job and cfg.max_seconds == 400
        assert model.setting == "bgt" and model.d_model >= 512 and model.language_dim == model.latent_dim >= 512
        assert model.decoder_latent == "mean" and cfg.eval_every and cfg.compile == "inductor" and cfg.pad_multiple == 8
        assert cfg.max_tokens * cfg.update_freq >= 20000  # updates of the paper's ~25k tokens
        # uncompressed (zlib takes ~12% more off trained int8 weights), with 512 KiB for spm.model and the logs
        assert campaign_jobs.package_bytes(job) + 2 ** 19 <= campaign.RETURN_LIMITS["total_bytes"], job
        monkeypatch.setenv("CAMPAIGN_PRESET", "tiny")
        toy = campaign_jobs.job_config(job, 400)
        recorded, dry = json.loads(json.dumps(cfg.__dict__)), json.loads(json.dumps(toy.__dict__))
        differ = {k for k in recorded if recorded[k] != dry[k]}
        assert differ <= {*campaign_jobs.TOY_FIELDS, "overrides", "eval_every", "valid_every", "save_every", "compile"}, differ
        # graph capture as on the GPU, without CPU code generation, in the call's first job (the others: sizes)
        assert toy.compile == ("aot_eager" if job == campaign_jobs.JOBS[0] else "off")
        assert {k for k in model.to_dict() if getattr(model, k) != getattr(toy.model_config(), k)} <= {
            "vocab_size", "d_model", "ffn_dim", "n_heads", "enc_layers", "latent_dim", "dropout", "max_len"}
    assert campaign_jobs.JOBS[0] == FIRST  # en-fr comes back first
    monkeypatch.setenv("CAMPAIGN_COMPILE", "off")  # eager everywhere, when a compiled update fails on the device
    for name in ("tiny", "recipes"):
        monkeypatch.setenv("CAMPAIGN_PRESET", name)
        assert {campaign_jobs.job_config(job, 400).compile for job in campaign_jobs.JOBS} == {"off"}
    monkeypatch.setenv("CAMPAIGN_COMPILE", "inductor")
    with pytest.raises(WorkbenchError, match="CAMPAIGN_COMPILE='inductor': valid: off"):
        campaign_jobs.job_config(FIRST, 400)
    monkeypatch.delenv("CAMPAIGN_COMPILE")
    monkeypatch.setenv("CAMPAIGN_JOBS", "bgt-en-xx")
    with pytest.raises(WorkbenchError, match="CAMPAIGN_JOBS: unknown jobs bgt-en-xx; valid: bgt-small-en-"):
        campaign_jobs.chosen()


@ON_THE_TRAINED_WORKER
def test_train_returns_the_first_package_int8_with_decoders_and_fetch_the_next(trained, tmp_path):
    out, runs, stdout = trained
    used = campaign.check_return(out)  # raises beyond 8 files / 16 MiB each / 64 MiB / 2 folders down
    assert {"bundle.json", "train.log"} <= {p.name for p in out.iterdir()} and used["files"] >= 3
    for job in JOBS.split(","):
        record = [json.loads(line) for line in (runs / job / "metrics.jsonl").read_text().splitlines()]
        assert record[-1]["stopped"] == "max_seconds=3"  # the time budget stopped it, with a checkpoint
        assert job in (out / "train.log").read_text()
        assert any("stsb_dev" in line for line in record)  # STS-B dev selected the checkpoint
    packages = campaign.unbundle([out], tmp_path / "back")
    assert sorted(p.name for p in packages) == sorted(JOBS.split(","))  # the tiny packages fit one return
    for package in packages:
        manifest = json.loads((package / "manifest.json").read_text())
        assert manifest["precision"] == "int8" and manifest["scales"]
        assert manifest["config"]["decoders"] is True and manifest["config"]["training"]["checkpoint"].startswith(
            "best")
        tensors = {k: t for f in manifest["files"] if f.endswith(".safetensors")
                   for k, t in load_file(str(package / f)).items()}
        assert any(k.startswith("decoders.") for k in tensors)  # --init-from can continue it, and BGT can transfer
        assert {k for k, t in tensors.items() if str(t.dtype) == "torch.int8"} == set(manifest["scales"])
    assert "wait for the next call" not in stdout


@ON_THE_TRAINED_WORKER
def test_whole_packages_travel_first_and_unbundle_joins_those_that_came_back(trained, tmp_path, monkeypatch):
    _, runs, _ = trained
    monkeypatch.setattr(bundle_module, "PART_BYTES", 300_000)  # several parts a package: the tiny ones are MBs
    monkeypatch.setenv("CAMPAIGN_RUNS", str(tmp_path / "runs"))
    packages = [runs / "packages" / job for job in JOBS.split(",")]
    bundle = bundle_module.make_bundle(packages, tmp_path / "runs" / "parts")
    sizes = [len(entry["parts"]) for entry in bundle["packages"]]
    assert [e["name"] for e in bundle["packages"]] == JOBS.split(",") and min(sizes) >= 2
    monkeypatch.setitem(campaign.RETURN_LIMITS, "files", max(sizes) + 1)  # bundle.json and one package a return
    returns = []
    for i in range(10):
        monkeypatch.setenv("OUT", str(tmp_path / f"return{i}"))
        try:
            campaign._deliver(tmp_path / "runs" / "parts", tmp_path / "return0") if i == 0 else campaign.fetch()
        except WorkbenchError as error:
            assert "nothing waits" in str(error)
            break
        returns.append(tmp_path / f"return{i}")
        assert campaign.check_return(returns[-1])["files"] <= max(sizes) + 1
    assert len(returns) == 2  # one whole package a return, en-fr first
    assert [p.name for p in campaign.unbundle(returns[:1], tmp_path / "partial")] == [FIRST]  # the loan's first
    packages = campaign.unbundle(returns, tmp_path / "back")
    for package in packages:  # every file as it left the device
        for file in (runs / "packages" / package.name).iterdir():
            assert (package / file.name).read_bytes() == file.read_bytes()
    with pytest.raises(WorkbenchError, match="already holds .*; --force replaces them"):
        campaign.unbundle(returns, tmp_path / "back")
    with pytest.raises(WorkbenchError, match="models import PACKAGE --name NAME"):
        campaign.unbundle(returns, REPO / "trained")
    index = json.loads((returns[0] / "bundle.json").read_text())
    files = index["packages"][0]["files"]
    swapped = {**index, "packages": [{**index["packages"][0], "files": files[::-1]}, *index["packages"][1:]]}
    (returns[0] / "bundle.json").write_text(json.dumps(swapped))  # the files listed in another order
    before = {p: p.read_bytes() for p in (tmp_path / "back").rglob("*") if p.is_file()}
    with pytest.raises(WorkbenchError, match="nothing was written"):
        campaign.unbundle(returns, tmp_path / "back", force=True)
    assert {p: p.read_bytes() for p in (tmp_path / "back").rglob("*") if p.is_file()} == before  # untouched
    assert not list((tmp_path / "back").glob(".unbundle.*"))
    hostile = {**index, "packages": [{**index["packages"][0], "files": [{**files[0], "file": "../x"}]}]}
    (returns[0] / "bundle.json").write_text(json.dumps(hostile))
    with pytest.raises(WorkbenchError):
        campaign.unbundle(returns, tmp_path / "elsewhere")
    assert not (tmp_path / "x").exists()
    (returns[0] / "bundle.json").write_text(json.dumps(index))
    part = next(returns[0].glob("*.part-*"))
    part.write_bytes(part.read_bytes()[:-1] + bytes([part.read_bytes()[-1] ^ 0xFF]))
    with pytest.raises(WorkbenchError, match="does not match its sha256"):
        campaign.unbundle(returns, tmp_path / "again")


def test_the_calls_of_a_loan_carry_the_uploads_within_the_tree_limit():
    mib = 2 ** 20
    assert carry.plan_calls(2 * mib, 50 * mib, {}) == [
        {"number": 1, "parts": [], "bytes": 52 * mib, "carry": [".campaign"], "steps": "check train"}]
    parts = {f"bgt-small-en-fr.part-{i}-of-4": int(15.5 * mib) for i in range(1, 4)} | {"last": 9 * mib}
    calls = carry.plan_calls(2 * mib, 50 * mib, parts)
    assert [c["steps"] for c in calls] == ["check", "train"]  # none fits beside .campaign; the rest in call 2
    assert calls[0]["carry"] == [".campaign"] and calls[1]["carry"] == [".campaign-upload-2"]
    assert calls[1]["parts"] == list(parts) and all(c["bytes"] <= carry.TREE_LIMIT for c in calls)
    calls = carry.plan_calls(2 * mib, 10 * mib, {f"p{i}": 15 * mib for i in range(8)})
    assert [len(c["parts"]) for c in calls] == [3, 4, 1] and [c["steps"] for c in calls] == [
        "check", "receive", "train"]
    with pytest.raises(WorkbenchError, match="exceed the 64 MiB a call carries"):
        carry.plan_calls(20 * mib, 50 * mib, {})
    with pytest.raises(WorkbenchError, match="does not fit a call"):
        carry.plan_calls(2 * mib, 10 * mib, {"huge": 63 * mib})


@pytest.mark.slow
@ON_THE_TRAINED_WORKER
def test_a_later_loan_continues_an_uploaded_int8_package(trained, tmp_path, monkeypatch):
    """pack --continue bundles the packages a loan brought back into upload folders; on the device, train joins
    them, restores each to a model folder (its fingerprint checked) and continues it with --init-from."""
    _, runs, _ = trained
    back = campaign.unbundle([trained[0]], tmp_path / "back")[0].parent
    monkeypatch.setattr(carry, "PACK", tmp_path / "checkout" / ".campaign")
    monkeypatch.setenv("CAMPAIGN_PRESET", "tiny")
    monkeypatch.setenv("CAMPAIGN_JOBS", FIRST)
    monkeypatch.setenv("CAMPAIGN_COMPILE", "off")  # the continuation is tested here; ``trained`` captures the graphs
    calls = carry.pack(download_wheels=False, continuing=[str(back)])
    assert calls[-1]["steps"].endswith("train") and (tmp_path / "checkout" / ".campaign" / "upload" /
                                                     "bundle.json").is_file()
    assert sorted(p.name for c in calls for p in (tmp_path / "checkout").glob(f".campaign-upload-{c['number']}/*")) \
        == sorted(n for c in calls for n in c["parts"])
    monkeypatch.setenv("CAMPAIGN_RUNS", str(tmp_path / "device"))
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    monkeypatch.setenv("CAMPAIGN_CALL_START", str(time.time()))  # a call starts here (the suite's process is older)
    campaign.train(seconds=3)
    started = json.loads((back / FIRST / "manifest.json").read_text())["config"]["training"]["updates"]
    record = [json.loads(line) for line in (tmp_path / "device" / FIRST / "metrics.jsonl").read_text().splitlines()]
    assert record[0]["update"] <= started < record[-1]["update"]  # the curve carried over, then trained on
    assert campaign.unbundle([tmp_path / "out"], tmp_path / "again")[0].name == FIRST


def test_pack_says_where_it_looked_for_a_missing_corpus(tmp_path, monkeypatch):
    monkeypatch.setattr(carry, "PACK", tmp_path / "checkout" / ".campaign")
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("CAMPAIGN_JOBS", FIRST)
    with pytest.raises(WorkbenchError, match=r"no corpus for en-fr at .*data/parallel/en-fr.tsv.gz .*WORKBENCH_DATA"):
        carry.pack(download_wheels=False)


@ON_THE_TRAINED_WORKER
def test_an_int8_package_restores_to_its_fingerprint_and_is_refused_when_it_does_not(trained, tmp_path):
    _, runs, _ = trained
    from workbench.zoo.packaging import unpack_shards
    from workbench.zoo.transport import pack_tensors, restore_tensors
    package = export_shards(runs / FIRST, tmp_path / "packages", name=FIRST, keep_decoders=True, precision="int8")
    fp16 = export_shards(runs / FIRST, tmp_path / "fp16", name=FIRST, keep_decoders=True)
    assert sum(p.stat().st_size for p in package.glob("*.safetensors")) < 0.6 * sum(
        p.stat().st_size for p in fp16.glob("*.safetensors"))
    folder = unpack_shards(package, tmp_path / "restored")
    restored, original = load(folder), load(runs / FIRST / "best")
    for key, tensor in original.state_dict().items():  # within half a step of each tensor's int8 grid
        step = tensor.abs().max() / 127 if tensor.dim() >= 2 else 1e-3 * tensor.abs().max() + 1e-6
        assert (restored.state_dict()[key] - tensor).abs().max() <= step / 2 + 1e-3 * tensor.abs().max(), key
    packed, scales = pack_tensors(original.state_dict(), "int8")
    assert all(torch.equal(a, b) for a, b in zip(restore_tensors(packed, scales).values(),
                                                 restore_tensors(packed, scales).values()))  # deterministic
    manifest = json.loads((package / "manifest.json").read_text())
    key = next(iter(manifest["scales"]))
    nudged = {**manifest, "scales": {**manifest["scales"], key: manifest["scales"][key] * (1 + 1e-3)}}
    (package / "manifest.json").write_text(json.dumps(nudged))
    with pytest.raises(WorkbenchError, match="fingerprint mismatch"):
        unpack_shards(package, tmp_path / "again")
    (package / "manifest.json").write_text(json.dumps({**manifest, "precision": "int4"}))
    with pytest.raises(WorkbenchError, match="'precision' must be one of fp16, int8"):
        unpack_shards(package, tmp_path / "again")
    assert not (tmp_path / "again").exists()


@pytest.mark.slow
@ON_THE_TRAINED_WORKER
def test_a_package_split_into_small_shards_imports_as_the_same_model(trained, tmp_path):
    _, runs, _ = trained
    package = export_shards(runs / FIRST, tmp_path / "packages", name=FIRST, shard_mib=0.05)
    manifest = json.loads((package / "manifest.json").read_text())
    assert manifest["split"]  # tensors larger than a shard went by rows
    shards = sorted(package.glob("model-*.safetensors"))
    assert len(shards) > 3 and all(p.stat().st_size <= 0.05 * 2 ** 20 + 8192 for p in shards)
    folder = import_shards(package, root=tmp_path / "trained", sizes=SMALL, show_progress=False, transfer_pairs=10)
    info = card(FIRST, root=tmp_path / "trained")
    assert info["decoders"] is False and info["training"]["hardware"].startswith("CPU")
    imported, original = load(folder), load(runs / FIRST / "best")
    sentences = ["A man is playing a guitar.", "Un homme joue de la guitare."]
    for view in ("semantic", "en"):  # the run's weights through fp16
        np.testing.assert_allclose(imported.encoder(view).encode(sentences),
                                   original.encoder(view).encode(sentences), rtol=0.02, atol=2e-3)
        assert imported.encoder(view).fingerprint == info["views"][view]["fingerprint"]
    assert (folder / "curve.csv").is_file()


@ON_THE_TRAINED_WORKER
def test_import_refuses_damaged_packages_and_unsafe_names(trained, tmp_path):
    _, runs, _ = trained
    package = tmp_path / FIRST
    shutil.copytree(runs / "packages" / FIRST, package)
    with pytest.raises(WorkbenchError, match="not a valid model name"):
        import_shards(package, name="../elsewhere", root=tmp_path / "trained")
    shard = next(package.glob("model-*.safetensors"))
    manifest = json.loads((package / "manifest.json").read_text())
    key, tensor = next(iter(load_file(str(shard)).items()))
    planted = package / "model-planted.safetensors"  # a second shard holding one of the first's tensors, listed
    save_file({key: torch.zeros_like(tensor)}, str(planted))
    listed = {**manifest["files"], planted.name: hashlib.sha256(planted.read_bytes()).hexdigest()}
    (package / "manifest.json").write_text(json.dumps({**manifest, "files": listed}))
    with pytest.raises(WorkbenchError, match=f"tensor '{key}' is in two shards"):
        import_shards(package, root=tmp_path / "trained")  # was: the later shard's planted value installed
    planted.unlink()
    (package / "manifest.json").write_text(json.dumps(manifest))
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


@ON_THE_TRAINED_WORKER
def test_an_existing_model_is_replaced_only_with_force_and_names_stay_inside_trained(trained, tmp_path, capsys):
    from workbench.cli import main
    _, runs, _ = trained
    existing = tmp_path / "trained" / FIRST
    existing.mkdir(parents=True)
    (existing / "card.json").write_text("{}")
    with pytest.raises(WorkbenchError, match="exists; pass --force"):
        import_shards(runs / "packages" / FIRST, root=tmp_path / "trained")
    assert (existing / "card.json").read_text() == "{}" and sorted(p.name for p in existing.parent.iterdir()) == [
        FIRST]
    before = sorted(p.name for p in (REPO / "trained").iterdir())
    for name in (".", "..", "../elsewhere", "a/b"):
        assert main(["models", "export", str(runs / FIRST), "--name", name]) == 2
        assert "not a valid model name" in capsys.readouterr().err
    assert sorted(p.name for p in (REPO / "trained").iterdir()) == before
