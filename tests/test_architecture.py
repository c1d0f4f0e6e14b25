"""The rooms of workbench/ import downwards only, in the order docs/architecture.md draws them."""
import ast
import re
from pathlib import Path

import pytest

from workbench.paths import REPO_ROOT

# bottom to top, as in docs/architecture.md
ROOMS = ["checks", "progress", "paths", "data", "encoders", "models", "cache", "evaluation", "probing", "training",
         "style_transfer", "zoo", "reports", "cli"]
FROM = re.compile(r"^\s*from (\.+)([\w.]*) import ([\w, ()]+)", re.M)


def _room(module: list[str]) -> str:
    return module[1] if len(module) > 1 else "__init__"


def _imports(path: Path) -> set[str]:
    package = list(path.relative_to(REPO_ROOT).with_suffix("").parts)[:-1]
    rooms = set()
    for dots, rest, names in FROM.findall(path.read_text()):
        base = package[: len(package) - (len(dots) - 1)]
        target = base + rest.split(".") if rest else base + [names.strip("() ").split(",")[0].strip()]
        rooms.add(_room(target))
    return rooms


def test_every_room_is_drawn_and_imports_only_rooms_below_it():
    top = {p.stem for p in (REPO_ROOT / "workbench").iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert top - {"__init__"} == set(ROOMS), "docs/architecture.md and ROOMS must name every room of workbench/"
    upward = []
    for path in (REPO_ROOT / "workbench").rglob("*.py"):
        here = _room(list(path.relative_to(REPO_ROOT).with_suffix("").parts))
        if here == "__init__":  # the package's face re-exports the public API from every room
            continue
        upward += [f"{path.relative_to(REPO_ROOT)} -> {room}" for room in _imports(path) - {here}
                   if ROOMS.index(room) > ROOMS.index(here)]
    assert not upward, f"imports that point up: {upward}"


def test_the_top_floor_is_small_and_no_module_is_a_hotel():
    entries = [p for p in (REPO_ROOT / "workbench").iterdir()  # rooms of code (package data is no room)
               if not p.name.startswith((".", "__pycache__")) and (p.suffix == ".py" or any(p.rglob("*.py")))]
    assert len(entries) <= 15, sorted(p.name for p in entries)
    code = [*(REPO_ROOT / "workbench").rglob("*.py"), *(REPO_ROOT / "tools").rglob("*.py")]
    long = {str(p.relative_to(REPO_ROOT)): n for p in code if (n := len(p.read_text().splitlines())) > 400}
    assert not long, f"modules over 400 lines: {long}"
    functions = {f"{p.relative_to(REPO_ROOT)}:{node.name}": node.end_lineno - node.lineno + 1
                 for p in code for node in ast.walk(ast.parse(p.read_text()))
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 50}
    assert not functions, f"functions over 50 lines: {functions}"


def test_the_package_imports_none_of_the_repositorys_tooling():
    """tools/ (the docs generator, the GPU campaign) is not installed with the package, so nothing in it may be
    imported by workbench/."""
    importing = [str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "workbench").rglob("*.py")
                 if re.search(r"^\s*(from tools\b|import tools\b)", p.read_text(), re.M)]
    assert not importing, importing


def test_imports_inside_functions_are_few():
    """Imports sit at the top so the drawn house shows the real arrows; the exceptions (a heavy optional
    dependency, a CLI or campaign step that imports its modules when it runs) stay few."""
    inner = sorted({f"{p.relative_to(REPO_ROOT)}:{node.lineno}" for p in (REPO_ROOT / "workbench").rglob("*.py")
                    for function in ast.walk(ast.parse(p.read_text()))
                    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))})
    assert len(inner) <= 20, inner  # (not a module's own optional imports: under TYPE_CHECKING or try)


def test_no_module_outside_the_models_tells_a_kind_by_its_name_and_a_kind_is_registered_once():
    """What a kind can do is declared with it (``abilities``, read with ``kinds.can``); the paper's tables, which
    name the models they compare, are the exception."""
    from workbench.models import kinds
    names = "|".join(map(re.escape, kinds.KINDS))
    compared = re.compile(rf"""(==|!=|\bin)\s*[(\[{{]?\s*["']({names})["']""")
    paper = {"workbench/reports/paper.py", "workbench/reports/reproduction.py"}
    found = [f"{p.relative_to(REPO_ROOT)}:{i}" for p in (REPO_ROOT / "workbench").rglob("*.py")
             if p.parent.name != "models" and str(p.relative_to(REPO_ROOT)) not in paper
             for i, line in enumerate(p.read_text().splitlines(), 1) if compared.search(line)]
    assert not found, found
    kind = kinds.KINDS["sp"]
    with pytest.raises(ValueError, match="model kind 'sp' is registered twice"):
        kinds.registry({"sp": kind}, {"sp": kind})
    assert kinds.can("bgt", "style_transfer") and not kinds.can("bilingual_trans", "style_transfer")
    assert not kinds.can("no such kind", "style_transfer")
