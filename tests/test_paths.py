
import pytest

from workbench import paths


def test_data_dir_prefers_env(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path))
    assert paths.data_dir() == tmp_path


def test_data_dir_env_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="WORKBENCH_DATA"):
        paths.data_dir()


def test_data_dir_falls_back_to_shared(monkeypatch):
    monkeypatch.delenv("WORKBENCH_DATA", raising=False)
    assert paths.data_dir() == paths.REPO_ROOT.parent / "shared" / "data"
    assert (paths.data_dir() / "parallel" / "en-fr.tsv.gz").is_file()


def test_home_default_is_user_cache_not_repo(monkeypatch, tmp_path):
    monkeypatch.delenv("WORKBENCH_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    home = paths.home_dir()
    assert home == tmp_path / "bgt-workbench" and home.is_dir()
    assert paths.REPO_ROOT not in home.parents


def test_outputs_are_refused_inside_model_folders_and_only_there(tmp_path):
    """A report or result written into a model folder would make it fail its digests; a project folder that keeps
    settings of its own in a config.json is not a model folder."""
    import json

    from workbench.checks import WorkbenchError
    from workbench.paths import check_outside_models, trained_dir
    project, model = tmp_path / "project", tmp_path / "model"
    for folder, config in ((project, {"editor": "vim"}), (model, {"model_type": "bert"})):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
    check_outside_models(project / "reports" / "demo", "--out")
    for inside in (model / "x.npy", trained_dir() / "new-model", trained_dir() / "bgt-en-fr" / "curve"):
        with pytest.raises(WorkbenchError, match="whose files are checked against their digests"):
            check_outside_models(inside, "--out")
