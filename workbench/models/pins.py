"""The shipped models: which there are (:func:`shipped`), their cards (:func:`card`, checked against their
config) and their identities, pinned in one committed file: ``trained/pins.json`` maps each model's name to
the sha256 of its ``config.json``, which records the sha256 of every other file of the folder and is sealed; and,
for every other folder, what it was when this home first verified it (trust on first use, as SSH's known hosts).

A user's own folder can only be checked against itself (whoever edits it can re-seal it); a shipped model can be
checked against the repository: a folder in ``trained/`` whose ``config.json`` is not the pinned one — another
model's weights with the digests made to agree, a re-sealed edit — is refused when loaded by name. ``models
export`` and ``models import`` into ``trained/`` pin what they write, so the change shows in ``git diff``.
"""
from __future__ import annotations

import datetime
import json
import logging
from pathlib import Path

from ..checks import WorkbenchError
from ..data import sha256_of
from ..paths import atomic_write, home_dir, read_json, trained_dir

PINS = "pins.json"
NONE_SHIPPED = ("none there: outside a checkout, set WORKBENCH_MODELS to a folder of models, such as the "
                "repository's trained/")
KNOWN = "known_folders.json"  # under the workbench home: folder path -> its config.json sha256 when first verified
log = logging.getLogger(__name__)


def pinned(root: Path | None = None) -> dict[str, str]:
    """Model name → sha256 of its config.json, as ``root`` (default ``trained/``) pins them ({} without a file)."""
    path = (root or trained_dir()) / PINS
    pins = read_json(path) if path.is_file() else {}
    if not isinstance(pins, dict) or not all(isinstance(v, str) for v in pins.values()):
        raise WorkbenchError(f"{path}: not a map of model names to sha256 digests; restore it (git checkout)")
    return pins


def pin(folder: Path) -> None:
    """Record ``folder``'s config.json as its model's pinned identity, where the folder is a model of ``trained/``
    (not a hidden temporary folder an export builds in)."""
    root = folder.parent
    if root.resolve() != trained_dir().resolve() or folder.name.startswith("."):
        return
    pins = {**pinned(root), folder.name: sha256_of(folder / "config.json")}
    atomic_write(root / PINS, json.dumps(dict(sorted(pins.items())), indent=1) + "\n")


def check_pinned(folder: Path, digest: str) -> None:
    """Refuse a folder of ``trained/`` whose config.json (``digest``: its sha256) is not the one pinned for its
    name (an unpinned name, e.g. a model copied in by hand, is not checked here: its own digests still are)."""
    if folder.parent.resolve() != trained_dir().resolve():
        return
    expected = pinned(folder.parent).get(folder.name)
    if expected is not None and digest != expected:
        raise WorkbenchError(f"{folder}/config.json is not the one {PINS} pins for {folder.name!r} (its files were "
                             "replaced and its digests made to agree, or it was edited and re-sealed); restore it "
                             f"(git checkout {folder}), or export or import it again to pin the new one")


def is_pinned(folder: Path) -> bool:
    """Whether ``folder`` is a model of ``trained/`` that ``pins.json`` pins (its config.json checked against it)."""
    return folder.parent.resolve() == trained_dir().resolve() and folder.name in pinned(folder.parent)


def unpin(root: Path, name: str) -> None:
    """Forget ``name``'s pin in ``root``'s pins (a model renamed or removed)."""
    pins = pinned(root)
    if name in pins:
        del pins[name]
        atomic_write(root / PINS, json.dumps(dict(sorted(pins.items())), indent=1) + "\n")


def remember_verified(folder: Path, digest: str) -> None:
    """Trust on first use for a folder no pin covers: remember the sha256 of the config.json (``digest``) it had
    when it was verified, and say so when a folder at the same path comes back verified with another one — a
    folder's owner can re-seal it after any change, so its seal alone cannot tell a retrained or re-exported
    folder from an edited one; this says that it changed, and when it was last seen otherwise."""
    if is_pinned(folder):
        return
    path, key = home_dir() / KNOWN, str(folder.resolve())
    try:
        known = read_json(path) if path.is_file() else {}
    except WorkbenchError:  # damaged: start again (it only ever adds a warning)
        known = {}
    before = known.get(key) if isinstance(known, dict) else None
    if isinstance(before, dict) and before.get("config_sha256") == digest:
        return
    if isinstance(before, dict):
        log.warning("%s was verified on %s with another config.json (sha256 %s…, now %s…): fine if you retrained, "
                    "re-exported or migrated it since; if not, someone changed it and sealed it again", folder,
                    before.get("seen"), str(before.get("config_sha256"))[:12], digest[:12])
    known = {**(known if isinstance(known, dict) else {}),
             key: {"config_sha256": digest, "seen": datetime.date.today().isoformat()}}
    try:
        atomic_write(path, json.dumps(known, indent=1))
    except OSError:  # a read-only home: nothing remembered, nothing refused
        pass


def shipped(root: str | Path | None = None) -> list[str]:
    """Names of the models in ``trained/`` (folders with a ``card.json``); none, with a warning that says where
    they were looked for and how to point there, when that folder does not exist."""
    root = Path(root) if root else trained_dir()
    if not root.is_dir():
        log.warning("no shipped models: %s is not a folder (%s)", root, NONE_SHIPPED)
        return []
    return sorted(p.name for p in root.iterdir() if (p / "card.json").is_file())


def card(name: str, root: str | Path | None = None) -> dict:
    """The ``card.json`` of a shipped model, once its sha256 matches the one its ``config.json`` records (a card
    is measured from the weights when the model is exported; an edited card is refused, not shown)."""
    folder = (Path(root) if root else trained_dir()) / name
    path = folder / "card.json"
    if not path.is_file():
        raise WorkbenchError(f"no shipped model {name!r}; shipped: {', '.join(shipped(root)) or 'none'}")
    recorded = read_json(folder / "config.json").get("files_sha256", {}).get("card.json")
    if recorded != sha256_of(path):
        raise WorkbenchError(f"{path} does not match the sha256 recorded in {folder / 'config.json'} (edited or "
                             f"replaced); restore it (git checkout), or measure it again with workbench.zoo.cards.write_card({name!r})")
    return json.loads(path.read_text(encoding="utf-8"))
