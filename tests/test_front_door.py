"""What a newcomer reads first holds: the README is a front page, the documentation site builds with every link and
reference resolved, the API reference covers the public API, and the README's and tutorials' code runs as written."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.paths import REPO_ROOT

TUTORIALS = sorted((REPO_ROOT / "docs" / "tutorials").glob("*.md"))


def python_blocks(path: Path) -> str:
    """The ```python blocks of a Markdown file, joined in order (a file's examples build on each other)."""
    return "\n".join(re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S))


def test_the_readme_is_a_front_page():
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    first = "\n".join(lines[:80])
    assert "bash scripts/demo" in first and "bash scripts/test" in first and "import workbench as wb" in first
    assert "## Citation" in "\n".join(lines) and (REPO_ROOT / "LICENSE").is_file()
    assert (REPO_ROOT / "CITATION.cff").is_file() and (REPO_ROOT / "CHANGELOG.md").is_file()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", "\n".join(lines)):  # every relative link resolves
        assert (REPO_ROOT / target).exists(), target


def test_the_api_reference_documents_every_public_name():
    stated = set(re.findall(r"^::: [\w.]+\.(\w+)$", (REPO_ROOT / "docs" / "api.md").read_text(), re.M))
    import workbench.reports
    assert set(workbench.__all__) <= stated and set(workbench.reports.__all__) <= stated


def test_import_workbench_loads_no_model_code_until_a_name_is_used():
    code = ("import sys, workbench; heavy = [m for m in ('torch', 'pandas', 'sklearn') if m in sys.modules]; "
            "assert not heavy, heavy; workbench.task_names; assert 'workbench.probing.tasks' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


def test_the_train_command_loads_no_probing_stack():
    """`workbench train`'s handlers need neither the probes, the cards nor scikit-learn (a second of every training
    process's start): `models` and `curve`, which do, live in their own module."""
    code = ("import sys, workbench.cli.training; heavy = [m for m in ('sklearn', 'workbench.zoo.cards', "
            "'workbench.reports') if m in sys.modules]; assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


def test_encoding_with_a_shipped_bgt_imports_neither_the_compiler_nor_scikit_learn():
    """What a fresh process pays to load and use a model: the compiler came in through the size count's meta
    tensors (0.9 s), scikit-learn through the model registry (WMF's vectorizer)."""
    code = ("import sys, workbench as wb; wb.load('bgt-en-fr').encoder('semantic').encode(['A man plays.']); "
            "heavy = [m for m in ('torch._dynamo', 'sklearn') if m in sys.modules]; assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


@pytest.mark.slow
def test_the_documentation_site_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists():
        pytest.skip("the docs extra is not installed (bash scripts/setup installs it)")
    result = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=REPO_ROOT,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "probe_layers" in api and "Train a probe for" in api  # the docstrings, rendered


@pytest.mark.slow
@pytest.mark.parametrize("page", [REPO_ROOT / "README.md", REPO_ROOT / "docs" / "index.md", *TUTORIALS],
                         ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_the_code_of_the_readme_and_the_tutorials_runs_as_written(page, tmp_path):
    code = python_blocks(page)
    assert code.strip(), f"{page} has no python example"
    own_home = {"WORKBENCH_HOME": str(tmp_path / "home")} if "add_pair" in code else {}  # a registered pair's tasks
    # stay out of the other tests' home
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                            env={**os.environ, "WORKBENCH_QUICK": "1", **own_home})  # probes at the quick sizes CI uses
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
