"""The campaign's transport format, both ways: model packages cut into a few big parts plus ``bundle.json``, and
joined again at the other end. A device's return holds 8 files and what travels to it 64 MiB, so big parts
travel, not many small files; each package has its own parts (``NAME.part-I-of-N``), so every package whose parts
arrived can be joined even when a loan ended before the rest came back. Each file is stored zlib-compressed
(int8 weights shrink by ~12%: the margin that lets a GPU-scale BGT with decoders fit one return). Joining checks
every part's and every file's sha256 before anything is moved into place.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import zlib
from pathlib import Path

from workbench.checks import WorkbenchError, sha256_hex
from workbench.data import sha256_of
from workbench.paths import REPO_ROOT, swap_folder

BUNDLE = "bundle.json"
BUNDLE_FORMAT = "bgt-workbench campaign bundle 3"  # 3: parts per package, each file zlib-compressed
PART_BYTES = int(15.5 * 2 ** 20)  # four parts and the logs fill one return


def _part_names(package: str, n: int) -> list[str]:
    return [f"{package}.part-{i}-of-{n}" for i in range(1, n + 1)]


def make_bundle(packages: list[Path], parts: Path) -> dict:
    """Each package's files, zlib-compressed one after another and cut into parts of :data:`PART_BYTES`, into
    ``parts``; ``bundle.json`` lists the packages in the order given (the order they travel in), each with its
    files (name, size, stored size, sha256) and its parts (name, sha256)."""
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir(parents=True)
    listed = []
    for package in packages:
        stream, files = parts / f".{package.name}.stream", []
        with open(stream, "wb") as joined:
            for path in sorted(package.iterdir()):
                packer, stored = zlib.compressobj(6), 0
                with open(path, "rb") as source:
                    while block := source.read(2 ** 20):
                        stored += joined.write(packer.compress(block))
                stored += joined.write(packer.flush())
                files.append({"file": path.name, "bytes": path.stat().st_size, "stored": stored,
                              "sha256": sha256_of(path)})
        names = _part_names(package.name, max(1, -(-stream.stat().st_size // PART_BYTES)))
        with open(stream, "rb") as joined:
            for name in names:
                (parts / name).write_bytes(joined.read(PART_BYTES))
        stream.unlink()
        listed.append({"name": package.name, "files": files,
                       "parts": {name: sha256_of(parts / name) for name in names}})
    bundle = {"format": BUNDLE_FORMAT, "packages": listed}
    (parts / BUNDLE).write_text(json.dumps(bundle, indent=1))
    return bundle


def unbundle(returns: list[str | Path], dest: str | Path, force: bool = False) -> list[Path]:
    """Join every package whose parts are all in ``returns`` (the folders the device calls brought back), check
    every part's and file's sha256 against ``bundle.json``, and move the packages into ``dest``; a package whose
    parts did not all come back is named and left out. Everything is written into a temporary folder beside
    ``dest`` first and moved in only when every file checks out, so a bad bundle changes nothing; a package
    already in ``dest`` is refused unless ``force``, and ``trained/`` is refused (only ``workbench models
    import`` puts models there). Returns the packages."""
    folders = [Path(r) for r in returns]
    indexes = [f / BUNDLE for f in folders if (f / BUNDLE).is_file()]
    if not indexes:
        raise WorkbenchError(f"no {BUNDLE} in {', '.join(map(str, folders))}: give the folders the device calls "
                             "returned (files_at)")
    bundle = _checked_bundle(indexes[0])
    found = {p.name: p for f in folders for p in f.iterdir()}
    complete = [entry for entry in bundle["packages"] if set(entry["parts"]) <= set(found)]
    lacking = [entry["name"] for entry in bundle["packages"] if entry not in complete]
    if not complete:
        raise WorkbenchError(f"no package came back whole ({', '.join(lacking)} lack parts): `scripts/gpu_campaign "
                             "fetch` on the device while it is still the same machine, else train again")
    for entry in complete:
        for name, digest in entry["parts"].items():
            if sha256_of(found[name]) != digest:
                raise WorkbenchError(f"{found[name]} does not match its sha256 in {BUNDLE} (damaged in transfer); "
                                     "nothing was written")
    dest = Path(dest)
    if dest.resolve() == (REPO_ROOT / "trained").resolve():
        raise WorkbenchError(f"--to {dest}: unbundle elsewhere, then `workbench models import PACKAGE --name NAME` "
                             "checks each package and puts it in trained/")
    there = [entry["name"] for entry in complete if (dest / entry["name"]).exists()]
    if there and not force:
        raise WorkbenchError(f"{dest} already holds {', '.join(there)}; --force replaces them, or unbundle into "
                             "another folder")
    dest.mkdir(parents=True, exist_ok=True)
    staging = dest / f".unbundle.{os.getpid()}.tmp"
    try:
        for entry in complete:
            _join([found[name] for name in entry["parts"]], entry, staging / entry["name"])
        for entry in complete:  # every file checked: now put each package in whole, old or new even under kill -9
            swap_folder(staging / entry["name"], dest / entry["name"])
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if lacking:
        print(f"not whole, left out: {', '.join(lacking)} (their parts did not all come back)", flush=True)
    packages = [dest / entry["name"] for entry in complete]
    for package in packages:
        print(f"{package}: workbench models import {package} --name NAME", flush=True)
    return packages


def _checked_bundle(path: Path) -> dict:
    """``bundle.json`` read and checked as a whole before anything is written: its format, packages and files
    named by plain names, parts named ``PACKAGE.part-I-of-N`` with sha256 digests, sizes that are counts."""
    from workbench.zoo.packaging import check_model_name
    try:
        bundle = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise WorkbenchError(f"{path}: not a readable campaign bundle ({err})") from None
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        raise WorkbenchError(f"{path}: not a campaign bundle (format "
                             f"{bundle.get('format') if isinstance(bundle, dict) else None!r})")
    packages = bundle.get("packages")
    if not isinstance(packages, list) or not packages or not all(isinstance(e, dict) for e in packages):
        raise WorkbenchError(f"{path}: 'packages' must list the packages")
    for entry in packages:
        name, parts, files = entry.get("name"), entry.get("parts"), entry.get("files")
        check_model_name(name if isinstance(name, str) else "")
        if not isinstance(parts, dict) or not parts or not all(
                sha256_hex(v) and re.fullmatch(re.escape(name) + r"\.part-\d+-of-\d+", k) for k, v in parts.items()):
            raise WorkbenchError(f"{path}: the parts of {name} must map {name}.part-I-of-N names to sha256 digests")
        if not isinstance(files, list) or not files or not all(
                isinstance(e, dict) and isinstance(e.get("bytes"), int) and e["bytes"] >= 0
                and isinstance(e.get("stored"), int) and e["stored"] > 0 and sha256_hex(e.get("sha256"))
                and isinstance(e.get("file"), str) for e in files):
            raise WorkbenchError(f"{path}: the files of {name} must each give file, bytes (≥ 0), stored (> 0) and "
                                 "sha256")
        for file in files:
            check_model_name(file["file"])
        if len({e["file"] for e in files}) != len(files):
            raise WorkbenchError(f"{path}: a file of {name} is listed twice")
    if len({e["name"] for e in packages}) != len(packages):
        raise WorkbenchError(f"{path}: a package is listed twice")
    return bundle


def _join(parts: list[Path], entry: dict, target_dir: Path) -> None:
    """Write one package's files into ``target_dir`` from its parts, read in order as one stream and
    decompressed, each checked against its size and sha256."""
    stream = (open(part, "rb") for part in parts)
    source = next(stream)
    target_dir.mkdir(parents=True)
    try:
        for file in entry["files"]:
            left, digest, written, unpacker = file["stored"], hashlib.sha256(), 0, zlib.decompressobj()
            with open(target_dir / file["file"], "wb") as handle:
                while left:
                    block = source.read(min(left, 2 ** 20))
                    if not block:
                        source.close()
                        source = next(stream, None)
                        if source is None:
                            raise WorkbenchError(f"the parts of {entry['name']} end before {file['file']} does: "
                                                 f"{BUNDLE} lists more bytes than they hold")
                        continue
                    left -= len(block)
                    try:
                        data = unpacker.decompress(block) + (unpacker.flush() if not left else b"")
                    except zlib.error:
                        raise WorkbenchError(f"{entry['name']}/{file['file']} cannot be decompressed from its parts "
                                             "(damaged); nothing was written") from None
                    handle.write(data)
                    digest.update(data)
                    written += len(data)
            if written != file["bytes"] or digest.hexdigest() != file["sha256"]:
                raise WorkbenchError(f"{entry['name']}/{file['file']} does not match its sha256 in {BUNDLE}; "
                                     "nothing was written")
    finally:
        if source is not None:
            source.close()
