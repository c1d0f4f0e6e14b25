"""pyproject.toml and environment.yml must list the same dependencies."""
import re
import tomllib

from workbench.paths import REPO_ROOT


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"]) | set(project["optional-dependencies"]["test"])
    listed = set(re.findall(r"^\s+- ([A-Za-z][\w.-]*(?:[<>!]=?|==).*)$", (REPO_ROOT / "environment.yml").read_text(), re.M))
    assert listed == wanted
