"""The campaign's transport format: packages cut into a few big parts plus ``bundle.json`` (each file's package,
name, size and sha256, each part's sha256) for the trip back from a device, and joined again here. A device's
return holds few files, so big parts travel, not many small files; joining checks every digest before anything
is moved into place.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from workbench.checks import WorkbenchError, sha256_hex
from workbench.data import sha256_of
from workbench.paths import REPO_ROOT, swap_folder

BUNDLE = "bundle.json"
BUNDLE_FORMAT = "bgt-workbench campaign bundle 1"
PART_BYTES = int(15.5 * 2 ** 20)  # four parts and the logs fill one return


def make_bundle(packages: Path, parts: Path) -> dict:
    """Every file of every package in ``packages``, one after another, cut into parts of :data:`PART_BYTES`; the
    index (``bundle.json``: each file's package, name, size and sha256, each part's sha256) says how to join them.
    Few big parts, not many small files: a return holds 8 files."""
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir(parents=True)
    files = [p for package in sorted(packages.iterdir()) for p in sorted(package.iterdir())]
    total = sum(p.stat().st_size for p in files)
    n = max(1, -(-total // PART_BYTES))
    names = [f"part-{i:02d}-of-{n:02d}" for i in range(1, n + 1)]
    index, current, written, i = [], None, 0, -1
    for path in files:
        index.append({"package": path.parent.name, "file": path.name, "bytes": path.stat().st_size,
                      "sha256": sha256_of(path)})
        with open(path, "rb") as source:
            for block in iter(lambda: source.read(2 ** 20), b""):
                while block:
                    if current is None or written == PART_BYTES:
                        if current is not None:
                            current.close()
                        i, written = i + 1, 0
                        current = open(parts / names[i], "wb")
                    take = block[:PART_BYTES - written]
                    current.write(take)
                    written, block = written + len(take), block[len(take):]
    if current is not None:
        current.close()
    bundle = {"format": BUNDLE_FORMAT, "files": index, "parts": {name: sha256_of(parts / name) for name in names}}
    (parts / BUNDLE).write_text(json.dumps(bundle, indent=1))
    return bundle


def unbundle(returns: list[str | Path], dest: str | Path, force: bool = False) -> list[Path]:
    """Join the parts found in ``returns`` (the folders each device call brought back), check every part's and
    every file's sha256 against ``bundle.json``, and move the packages into ``dest``. Everything is written into
    a temporary folder beside them first and moved in only when every file checks out, so a bad bundle changes
    nothing; a package already in ``dest`` is refused unless ``force``, and ``trained/`` is refused (only
    ``workbench models import`` puts models there). Returns the packages."""
    folders = [Path(r) for r in returns]
    indexes = [f / BUNDLE for f in folders if (f / BUNDLE).is_file()]
    if not indexes:
        raise WorkbenchError(f"no {BUNDLE} in {', '.join(map(str, folders))}: give the folders the device calls "
                             "returned (files_at)")
    bundle = _checked_bundle(indexes[0])
    found = {p.name: p for f in folders for p in f.iterdir() if p.name in bundle["parts"]}
    missing = sorted(set(bundle["parts"]) - set(found))
    if missing:
        raise WorkbenchError(f"parts {', '.join(missing)} did not come back; `scripts/gpu_campaign fetch` on the "
                             "device while it is still the same machine, else train again")
    for name, digest in bundle["parts"].items():
        if sha256_of(found[name]) != digest:
            raise WorkbenchError(f"{found[name]} does not match its sha256 in {BUNDLE} (damaged in transfer)")
    dest = Path(dest)
    if dest.resolve() == (REPO_ROOT / "trained").resolve():
        raise WorkbenchError(f"--to {dest}: unbundle elsewhere, then `workbench models import PACKAGE --name NAME` "
                             "checks each package and puts it in trained/")
    names = list(dict.fromkeys(entry["package"] for entry in bundle["files"]))
    there = [name for name in names if (dest / name).exists()]
    if there and not force:
        raise WorkbenchError(f"{dest} already holds {', '.join(there)}; --force replaces them, or unbundle into "
                             "another folder")
    dest.mkdir(parents=True, exist_ok=True)
    staging = dest / f".unbundle.{os.getpid()}.tmp"
    try:
        _join(found, bundle, staging)
        for name in names:  # every file checked: now put each package in whole, old or new even under kill -9
            swap_folder(staging / name, dest / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    packages = [dest / name for name in names]
    for package in packages:
        print(f"{package}: workbench models import {package} --name NAME", flush=True)
    return packages


def _checked_bundle(path: Path) -> dict:
    """``bundle.json`` read and checked as a whole before anything is written: its format, parts named by plain
    file names with sha256 digests, and files (package, file, bytes, sha256) whose names are plain names."""
    from workbench.zoo.packaging import check_model_name
    try:
        bundle = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise WorkbenchError(f"{path}: not a readable campaign bundle ({err})") from None
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        raise WorkbenchError(f"{path}: not a campaign bundle (format "
                             f"{bundle.get('format') if isinstance(bundle, dict) else None!r})")
    parts, files = bundle.get("parts"), bundle.get("files")
    if not isinstance(parts, dict) or not parts or not all(
            sha256_hex(v) and re.fullmatch(r"part-[\w.-]+", k) for k, v in parts.items()):
        raise WorkbenchError(f"{path}: 'parts' must map part-NAME file names to sha256 digests")
    if not isinstance(files, list) or not files or not all(
            isinstance(e, dict) and isinstance(e.get("bytes"), int) and e["bytes"] >= 0
            and sha256_hex(e.get("sha256"))
            and isinstance(e.get("package"), str) and isinstance(e.get("file"), str) for e in files):
        raise WorkbenchError(f"{path}: 'files' must list package, file, bytes (≥ 0) and sha256 for each file")
    for entry in files:
        check_model_name(entry["package"]), check_model_name(entry["file"])
    if len({(e["package"], e["file"]) for e in files}) != len(files):
        raise WorkbenchError(f"{path}: a file is listed twice")
    return bundle


def _join(found: dict[str, Path], bundle: dict, staging: Path) -> None:
    """Write the bundle's files into ``staging`` from its parts, read in order as one stream."""
    stream = (open(found[name], "rb") for name in sorted(bundle["parts"]))
    source = next(stream)
    try:
        for entry in bundle["files"]:
            target = staging / entry["package"] / entry["file"]
            target.parent.mkdir(parents=True, exist_ok=True)
            left, digest = entry["bytes"], hashlib.sha256()
            with open(target, "wb") as handle:
                while left:
                    block = source.read(min(left, 2 ** 20))
                    if not block:
                        source.close()
                        source = next(stream, None)
                        if source is None:
                            raise WorkbenchError(f"the parts end before {entry['package']}/{entry['file']} does: "
                                                 f"{BUNDLE} lists more bytes than they hold")
                        continue
                    handle.write(block)
                    digest.update(block)
                    left -= len(block)
            if digest.hexdigest() != entry["sha256"]:
                raise WorkbenchError(f"{entry['package']}/{entry['file']} does not match its sha256 in {BUNDLE}; "
                                     "nothing was written")
    finally:
        if source is not None:
            source.close()
