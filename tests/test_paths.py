
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
