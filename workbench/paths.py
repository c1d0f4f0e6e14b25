"""Where data, caches and models live: the one place that decides.

- data (read-only inputs): ``$WORKBENCH_DATA``, else ``../shared/data`` beside the repository, else
  ``<user cache>/bgt-workbench/data`` (where :mod:`workbench.data.download` puts what it fetches);
- home (everything the workbench builds: tokenizers, splits, probing sets, embedding cache):
  ``$WORKBENCH_HOME``, else ``<user cache>/bgt-workbench`` — never inside the git tree;
- trained models shipped with the project: ``<repo>/trained``.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/bgt-workbench`` (default ``~/.cache/bgt-workbench``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "bgt-workbench"


def data_dir() -> Path:
    """Root of the input data (``parallel/``, ``eval/``)."""
    env = os.environ.get("WORKBENCH_DATA")
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"WORKBENCH_DATA={env!r} is not a directory")
        return path
    shared = REPO_ROOT.parent / "shared" / "data"
    if shared.is_dir():
        return shared
    return user_cache_dir() / "data"


def home_dir() -> Path:
    """Root for everything the workbench builds; created on first use."""
    env = os.environ.get("WORKBENCH_HOME")
    path = Path(env).expanduser() if env else user_cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


def trained_dir() -> Path:
    """Folder of the models shipped in the repository."""
    return REPO_ROOT / "trained"
