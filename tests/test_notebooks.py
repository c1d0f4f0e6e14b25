"""Every notebook runs top to bottom (reduced sizes: WORKBENCH_QUICK=1) and fails the test on any error."""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_the_five_notebooks_exist():
    assert [p.stem for p in NOTEBOOKS] == ["00_quickstart", "01_semantic_vs_language", "02_language_distance",
                                           "03_style_transfer", "04_layers"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path, tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_QUICK", "1")
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
