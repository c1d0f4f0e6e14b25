"""What travels to the GPU campaign's device (``scripts/gpu_campaign pack``): ``.campaign/`` (the jobs' data, their
tokenizers, the wheels the device image lacks) and, for a loan that continues an earlier one's packages, upload
folders that each fit one call, with the plan of calls that carries them (:func:`plan_calls`)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from workbench.checks import WorkbenchError
from workbench.paths import REPO_ROOT, data_dir
from tools.bundle import make_bundle
from tools.campaign_jobs import chosen, job_config

# tracked folders the device does not need (the tree must fit TREE_LIMIT)
STAY_BEHIND = ("trained", "workbench/probes/parses")
TREE_LIMIT = 64 * 2 ** 20  # what travels to the device: tracked and untracked-not-ignored files + carried paths
PACK = REPO_ROOT / ".campaign"
UPLOAD = ".campaign-upload-"  # + the call's number, beside PACK: the packages a later loan continues, a folder a call
DEVICE_PYTHON = "3.12"  # the device image's interpreter (for the wheels pack downloads)
WHEELS = ("plotly==7.1.0", "sacremoses==0.2.0")  # imported by the workbench, absent from the device image


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def _unexclude(folder: str) -> str:
    return "\\#^/" + folder + "/$#d"


def _travelling_bytes(exclude: tuple[str, ...] = ()) -> int:
    """Bytes of the tracked and untracked-not-ignored files (less the folders ``exclude``): the working tree the
    device receives."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    names = [n.decode() for n in listed if n and not any(n.decode().startswith(f"{d}/") for d in exclude)]
    return sum((REPO_ROOT / n).stat().st_size for n in names if (REPO_ROOT / n).is_file())


def _corpus(source: Path, pair: str) -> Path:
    corpus = source / "parallel" / f"{pair}.tsv.gz"
    if not corpus.is_file():
        raise WorkbenchError(f"pack: no corpus for {pair} at {corpus} (the data root {source}: set WORKBENCH_DATA to "
                             "the folder with parallel/ and eval/)")
    return corpus


def pack(download_wheels: bool = True, continuing: list[str] | None = None) -> list[dict]:
    """Build ``.campaign/`` (data, tokenizers, wheels) and, with ``continuing`` (folders of packages an earlier loan
    brought back, unbundled), the upload folders that carry them; print the device calls to make. Returns the
    plan (:func:`plan_calls`)."""
    from workbench.training.recipes import TrainConfig
    shutil.rmtree(PACK, ignore_errors=True)
    for old in PACK.parent.glob(UPLOAD + "*"):
        shutil.rmtree(old)
    (PACK / "data" / "parallel").mkdir(parents=True)
    source = data_dir()
    jobs = chosen()
    pairs = sorted({job_config(job, 1).pair for job in jobs})
    for pair in pairs:
        shutil.copy2(_corpus(source, pair), PACK / "data" / "parallel")
    shutil.copytree(source / "eval" / "stsb", PACK / "data" / "eval" / "stsb")
    needed = [job_config(job, 1) for job in jobs]
    needed += [TrainConfig.from_preset("tiny")]  # the gpu tests
    for folder in sorted({Path(cfg.tokenizer().model_file).parent for cfg in needed}):
        shutil.copytree(folder, PACK / "home" / "tokenizers" / folder.name)
        say(f"tokenizer {folder.name}")
    if download_wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", DEVICE_PYTHON, "--platform", "manylinux2014_x86_64",
                        "-d", str(PACK / "wheels"), *WHEELS], check=True)
    uploads = _uploads(continuing or [], jobs)
    carried = folder_bytes(PACK) - sum(uploads.values())  # the parts travel in their own folders
    tree = _travelling_bytes()
    say(f".campaign: {carried / 2 ** 20:.1f} MiB; the working tree: {tree / 2 ** 20:.1f} MiB; uploads: "
         f"{sum(uploads.values()) / 2 ** 20:.1f} MiB in {len(uploads)} part(s); limit {TREE_LIMIT / 2 ** 20:.0f} "
         "MiB a call")
    if carried + tree > TREE_LIMIT:
        print("The tree is too large to travel. trained/ and workbench/probes/parses/ are not needed on the device: "
              "for the campaign's calls\n"
              f"  git rm -r -q --cached {' '.join(STAY_BEHIND)} && printf '/%s/\\n' {' '.join(STAY_BEHIND)} "
              ">> .git/info/exclude\n"
              "and afterwards\n"
              f"  git reset -q -- {' '.join(STAY_BEHIND)} && sed -i '{';'.join(_unexclude(d) for d in STAY_BEHIND)}' "
              ".git/info/exclude", flush=True)
    calls = plan_calls(_travelling_bytes(exclude=STAY_BEHIND), carried, uploads)
    for call in calls:
        for name in call["parts"]:
            folder = PACK.parent / f"{UPLOAD}{call['number']}"
            folder.mkdir(exist_ok=True)
            shutil.move(str(PACK / "upload" / name), folder / name)
        print(f"device call {call['number']}: run(command='bash scripts/gpu_campaign {call['steps']}', "
              f"carry={call['carry']}, timeout_s=600)  # {call['bytes'] / 2 ** 20:.1f} MiB travel", flush=True)
    print("then at once, while the machine is warm: '... fetch' until it says nothing waits; "
          "here: scripts/gpu_campaign unbundle <files_at of every call> --to campaign-back", flush=True)
    return calls


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _uploads(continuing: list[str], jobs: tuple[str, ...]) -> dict[str, int]:
    """Bundle the packages a loan continues (each ``DIR/JOB`` for a job of this campaign) into
    ``.campaign/upload/``: {part name: bytes}, in the jobs' order."""
    packages = [Path(folder) / job for folder in continuing for job in jobs if (Path(folder) / job).is_dir()]
    if continuing and not packages:
        raise WorkbenchError(f"--continue {' '.join(continuing)}: no package named after a job ({', '.join(jobs)}); "
                             "give the folder `unbundle` wrote")
    if not packages:
        return {}
    for package in packages:
        say(f"continuing {package} ({json.loads((package / 'manifest.json').read_text())['config']['training']['updates']} "
             "updates)")
    bundle = make_bundle(packages, PACK / "upload")
    return {name: (PACK / "upload" / name).stat().st_size for entry in bundle["packages"] for name in entry["parts"]}


def plan_calls(tree: int, carried: int, uploads: dict[str, int], limit: int = TREE_LIMIT) -> list[dict]:
    """The device calls of a loan: each carries the working tree (``tree`` bytes), the first also ``.campaign/``
    (``carried``), and as many upload parts as fit the rest of ``limit``, in order; the calls before the last
    run ``check`` (the first) or nothing (``true``) while the parts arrive, and the last trains. A folder
    carried once stays on the warm machine, so later calls carry only their own parts."""
    calls, waiting = [], list(uploads.items())
    while True:
        room = limit - tree - (carried if not calls else 0)
        if room < 0:
            raise WorkbenchError(f"the working tree ({tree / 2 ** 20:.1f} MiB) and .campaign/ "
                                 f"({carried / 2 ** 20:.1f} MiB) exceed the {limit / 2 ** 20:.0f} MiB a call carries")
        taken = []
        while waiting and waiting[0][1] <= room:
            name, size = waiting.pop(0)
            taken.append(name)
            room -= size
        if waiting and not taken and calls:
            raise WorkbenchError(f"upload part {waiting[0][0]} ({waiting[0][1] / 2 ** 20:.1f} MiB) does not fit a call")
        number = len(calls) + 1
        calls.append({"number": number, "parts": taken, "bytes": limit - room,
                      "carry": ([".campaign"] if number == 1 else []) + ([f"{UPLOAD}{number}"] if taken else [])})
        if not waiting:
            break
    for call in calls:
        call["steps"] = "check train" if len(calls) == 1 else "train" if call is calls[-1] else \
            "check" if call["number"] == 1 else "receive"
    return calls
