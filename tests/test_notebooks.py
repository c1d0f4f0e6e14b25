"""Every notebook runs top to bottom (reduced sizes: WORKBENCH_QUICK=1) and fails the test on any error."""
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import own_home, registered_pivot

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_the_five_notebooks_exist():
    assert [p.stem for p in NOTEBOOKS] == ["00_quickstart", "01_semantic_vs_language", "02_language_distance",
                                           "03_style_transfer", "04_layers"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path, tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_QUICK", "1")
    if path.stem == "02_language_distance":  # it reads the fr-es pivot pair: not in the other tests' home
        home = own_home(tmp_path / "home")
        registered_pivot(home)  # what its first cell of that section makes when the pair is missing
        monkeypatch.setenv("WORKBENCH_HOME", str(home))
    book = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in book.cells if cell.cell_type == "code"), \
        "notebooks are committed without outputs"
    NotebookClient(book, timeout=600, kernel_name="python3",  # the kernel inherits WORKBENCH_QUICK
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in book.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    if path.stem != "00_quickstart":  # the others end in a widget or a table
        last = book.cells[-1].outputs
        assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) or "text/html" in o.get("data", {})
                   for o in last)


PUBLIC_MODULES = ("workbench", "workbench.reports", "workbench.reports.widgets")  # each lists its names in __all__


def test_the_notebooks_use_only_public_names():
    """The notebooks import from workbench's public modules only, each name in that module's ``__all__``, and use
    only public ``wb.`` names: an internal move cannot break them, and what they show a reader is the documented
    API."""
    import importlib
    public = {module: set(importlib.import_module(module).__all__) for module in PUBLIC_MODULES}
    private = []
    for path in NOTEBOOKS:
        code = "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")
        for module, wrapped, line in re.findall(r"^\s*from (workbench[\w.]*) import (?:\(([^)]*)\)|([^\n#]+))", code,
                                                re.M):
            for name in (n.strip() for n in (wrapped or line).replace("\n", " ").split(",") if n.strip()):
                if name not in public.get(module, ()):
                    private.append(f"{path.name}: from {module} import {name}")
        private += [f"{path.name}: import {m}" for m in re.findall(r"^\s*import (workbench[\w.]*)(?! as wb\b)", code,
                                                                     re.M)]
        private += [f"{path.name}: wb.{name}" for name in set(re.findall(r"\bwb\.(\w+)", code))
                    if name not in public["workbench"]]
    assert not private, private


def test_the_commit_hook_strips_what_jupyterlab_saves_back_to_the_committed_form(tmp_path):
    """JupyterLab's autosave writes outputs and counts into a notebook; the pre-commit hook (tools/strip_notebooks)
    takes them out again, leaving byte for byte the committed file, which it leaves alone."""
    import subprocess
    import sys
    from tools.strip_notebooks import strip
    for path in NOTEBOOKS:
        assert not strip(path)  # the committed notebooks are already stripped
    saved = tmp_path / NOTEBOOKS[0].name
    book = nbformat.read(NOTEBOOKS[0], as_version=4)
    code = next(cell for cell in book.cells if cell.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", text="hello\n")]
    code.execution_count, book.metadata["language_info"] = 3, {"name": "python"}
    nbformat.write(book, saved)
    run = subprocess.run([sys.executable, "-m", "tools.strip_notebooks", str(saved)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 1 and "stripped the outputs" in run.stdout
    assert saved.read_bytes() == NOTEBOOKS[0].read_bytes()
    assert "strip-notebooks" in (NOTEBOOKS[0].parent.parent / ".pre-commit-config.yaml").read_text()
