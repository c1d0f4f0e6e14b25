"""The GPU campaign's CPU dry run (``CAMPAIGN_PRESET=tiny``: the same steps a lent GPU runs, so the first device
call meets CUDA, not our bugs) and the shard packages that carry its models back."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file

from workbench import campaign
from workbench.cards import card
from workbench.errors import WorkbenchError
from workbench.modelfolder import load
from workbench.zoo import export_shards, import_shards

REPO = Path(__file__).resolve().parent.parent
SMALL = {"train": 600, "valid": 200, "test": 200}


def step(name, out, runs, *extra):
    env = {**os.environ, "OUT": str(out), "CAMPAIGN_PRESET": "tiny", "CAMPAIGN_RUNS": str(runs)}
    return subprocess.run(["bash", str(REPO / "scripts" / "gpu_campaign"), name, *extra], env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``train-en-fr`` of the tiny dry run: (its $OUT, its runs folder, the completed process)."""
    root = tmp_path_factory.mktemp("campaign")
    result = step("train-en-fr", root / "out", root / "runs", "--seconds", "3")  # well below what 40 tiny updates take
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root / "out", root / "runs", result


def test_check_runs_the_gpu_tests_and_the_throughput_table(tmp_path):
    result = step("check", tmp_path / "out", tmp_path / "runs")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    log = (tmp_path / "out" / "check.log").read_text()
    assert "torch" in log and "4 skipped" in log  # the gpu tests are collected and skip without CUDA
    assert "tokens_per_s" in log and "tiny" in log and "MFU_%" in log
    assert campaign.check_return(tmp_path / "out")["files"] == 1


def test_train_en_fr_returns_both_packages_within_the_device_limits(trained):
    out, runs, result = trained
    used = campaign.check_return(out)  # raises beyond 8 files / 16 MiB each / 64 MiB / 2 folders down
    assert sorted(p.name for p in out.iterdir()) == ["bgt-en-fr", "bilingual_trans-en-fr"]
    assert used["files"] == sum(len(list(p.iterdir())) for p in out.iterdir())
    for model in ("bgt", "bilingual_trans"):
        record = [json.loads(line) for line in (runs / f"{model}-en-fr" / "metrics.jsonl").read_text().splitlines()]
        assert record[-1]["stopped"] == "max_seconds=3"  # the time budget stopped it, with a checkpoint
        manifest = json.loads((out / f"{model}-en-fr" / "manifest.json").read_text())
        assert manifest["config"]["decoders"] is False and manifest["config"]["training"]["checkpoint"].startswith(
            "best")
        assert not any(k.startswith("decoders.") for f in manifest["files"] if f.endswith(".safetensors")
                       for k in load_file(str(out / f"{model}-en-fr" / f)))
    assert "returning bgt-en-fr" in result.stdout and "fetch" not in result.stdout.split("returning")[-1]


def test_what_does_not_fit_waits_for_fetch(trained, tmp_path, monkeypatch):
    out, runs, _ = trained
    staging = tmp_path / "runs" / "packages"
    for package in out.iterdir():
        shutil.copytree(package, staging / package.name)
    bgt_files = len(list((out / "bgt-en-fr").iterdir()))
    monkeypatch.setitem(campaign.RETURN_LIMITS, "files", bgt_files + 1)  # room for bgt only
    monkeypatch.setenv("CAMPAIGN_RUNS", str(tmp_path / "runs"))
    campaign._deliver(staging, tmp_path / "first")
    assert [p.name for p in (tmp_path / "first").iterdir()] == ["bgt-en-fr"]  # the first in priority
    monkeypatch.setenv("OUT", str(tmp_path / "second"))
    campaign.fetch()
    assert [p.name for p in (tmp_path / "second").iterdir()] == ["bilingual_trans-en-fr"]
    with pytest.raises(WorkbenchError, match="nothing waits"):
        campaign.fetch()


def test_a_package_split_into_small_shards_imports_as_the_same_model(trained, tmp_path):
    _, runs, _ = trained
    package = export_shards(runs / "bgt-en-fr", tmp_path / "packages", shard_mib=0.05)
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
    out, _, _ = trained
    package = tmp_path / "bgt-en-fr"
    shutil.copytree(out / "bgt-en-fr", package)
    with pytest.raises(WorkbenchError, match="not a valid model name"):
        import_shards(package, name="../elsewhere", root=tmp_path / "trained")
    shard = next(package.glob("model-*.safetensors"))
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(WorkbenchError, match=f"{shard.name} does not match its sha256"):
        import_shards(package, root=tmp_path / "trained")
    (package / "manifest.json").unlink()
    with pytest.raises(WorkbenchError, match="not a model package"):
        import_shards(package, root=tmp_path / "trained")
    assert not (tmp_path / "trained").exists() or not any((tmp_path / "trained").iterdir())


def test_an_existing_model_is_replaced_only_with_force_and_names_stay_inside_trained(trained, tmp_path, capsys):
    from workbench.cli import main
    out, runs, _ = trained
    existing = tmp_path / "trained" / "bgt-en-fr"
    existing.mkdir(parents=True)
    (existing / "card.json").write_text("{}")
    with pytest.raises(WorkbenchError, match="exists; pass --force"):
        import_shards(out / "bgt-en-fr", root=tmp_path / "trained")
    assert (existing / "card.json").read_text() == "{}" and sorted(p.name for p in existing.parent.iterdir()) == [
        "bgt-en-fr"]
    before = sorted(p.name for p in (REPO / "trained").iterdir())
    for name in (".", "..", "../elsewhere", "a/b"):
        assert main(["models", "export", str(runs / "bgt-en-fr"), "--name", name]) == 2
        assert "not a valid model name" in capsys.readouterr().err
    assert sorted(p.name for p in (REPO / "trained").iterdir()) == before
