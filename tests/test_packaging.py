"""pyproject.toml and environment.yml must list the same dependencies."""
import re
import tomllib

from workbench.paths import REPO_ROOT


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = set(project["dependencies"]) | set(extras["test"]) | {  # what scripts/setup installs: test and full
        requirement for name in ("parsers", "morphology", "erasure", "distance", "notebooks", "static")
        for requirement in extras[name]}
    assert extras["full"] == ["bgt-workbench[parsers,morphology,erasure,distance,notebooks,static]"]
    listed = set(re.findall(r"^\s+- ([A-Za-z][\w.-]*(?:[<>!]=?|==).*)$", (REPO_ROOT / "environment.yml").read_text(), re.M))
    assert listed == wanted
