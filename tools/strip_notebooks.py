"""Strip the notebooks' outputs and execution counts before a commit (JupyterLab's autosave writes them in), so
the repository holds each notebook as its code and prose only; the tests run them and check that none is
committed with outputs.

    python -m tools.strip_notebooks [NOTEBOOK ...]     (default: notebooks/*.ipynb; exits 1 if it changed one)

``.pre-commit-config.yaml`` runs it on the notebooks a commit touches (``pre-commit install`` once).
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent


def strip(path: Path) -> bool:
    """Remove ``path``'s outputs, execution counts and per-cell run metadata, and write it in nbformat's own
    layout (sorted keys, one id per cell); whether it changed."""
    text = path.read_text(encoding="utf-8")
    book = nbformat.reads(text, as_version=4)
    for cell in book.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
    book.metadata = {key: value for key, value in book.metadata.items() if key == "kernelspec"}
    stripped = nbformat.writes(book) + "\n"
    if stripped != text:
        path.write_text(stripped, encoding="utf-8")
    return stripped != text


def main(paths: list[str]) -> int:
    changed = [p for p in (map(Path, paths) if paths else sorted((ROOT / "notebooks").glob("*.ipynb"))) if strip(p)]
    for path in changed:
        print(f"stripped the outputs of {path}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
