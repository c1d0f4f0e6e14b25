"""The GPU campaign: one lent GPU's 30 minutes turned into the ``small`` en–fr models (``scripts/gpu_campaign``).

Each step is one command that fits one device call (≤ 10 minutes) with margin, prints its progress unbuffered
and leaves what must come back in ``$OUT`` within the device's return limits (:data:`RETURN_LIMITS`):

- ``pack`` (here, before any device call): ``.campaign/`` with what the device cannot fetch — the en–fr data and
  STS-B, the sentencepiece models, wheels of the pure-Python packages its image lacks — and the size of what
  will travel;
- ``check``: ``nvidia-smi``, torch/CUDA versions, ``pytest -m gpu``, then training throughput and MFU at the
  ``small`` and ``paper`` sizes (``benchmarks/train_throughput.py``);
- ``train-en-fr``: ``bgt`` and ``bilingual_trans`` at ``small``, side by side on the one GPU, each stopped by a
  time budget with STS-B-dev checkpoint selection, each exported as a package of fp16 encoder shards
  (:func:`workbench.zoo.export_shards`); what does not fit in one return waits for ``fetch``. A second call
  continues the runs (``--resume``) while the machine is still the same;
- ``fetch``: return the packages that waited.

Back here: ``workbench models import PACKAGE`` for each. ``CAMPAIGN_PRESET=tiny`` runs the same steps on CPU
(the dry run of the test suite); ``CAMPAIGN_SECONDS`` is each model's training budget.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .errors import WorkbenchError
from .paths import REPO_ROOT, data_dir

RETURN_LIMITS = {"files": 8, "file_bytes": 16 * 2 ** 20, "total_bytes": 64 * 2 ** 20, "depth": 2}
TREE_LIMIT = 64 * 2 ** 20  # what travels to the device: tracked and untracked-not-ignored files + carried paths
MODELS = ("bgt", "bilingual_trans")  # in order of priority for the return
PACK = REPO_ROOT / ".campaign"
DEVICE_PYTHON = "3.12"  # the device image's interpreter (for the wheels pack downloads)
WHEELS = ("plotly==7.1.0", "sacremoses==0.2.0")  # imported by the workbench, absent from the device image


def _preset() -> str:
    return os.environ.get("CAMPAIGN_PRESET", "small")


def _runs() -> Path:
    return Path(os.environ.get("CAMPAIGN_RUNS", "/tmp/gpu_campaign"))


def _out() -> Path:
    if not os.environ.get("OUT"):
        raise WorkbenchError("$OUT is not set: the campaign's steps leave their results there (the device sets it; "
                             "elsewhere: OUT=some/folder scripts/gpu_campaign STEP)")
    out = Path(os.environ["OUT"])
    out.mkdir(parents=True, exist_ok=True)
    return out


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def check_return(out: Path) -> dict:
    """Count what ``out`` would send back and refuse what the device would leave behind."""
    files = [p for p in out.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    problems = [f"{len(files)} files > {RETURN_LIMITS['files']}"] if len(files) > RETURN_LIMITS["files"] else []
    problems += [f"{p.relative_to(out)} has {p.stat().st_size} bytes" for p in files
                 if p.stat().st_size > RETURN_LIMITS["file_bytes"]]
    problems += [f"{p.relative_to(out)} is too deep" for p in files
                 if len(p.relative_to(out).parts) - 1 > RETURN_LIMITS["depth"]]
    if total > RETURN_LIMITS["total_bytes"]:
        problems.append(f"{total} bytes in all > {RETURN_LIMITS['total_bytes']}")
    if problems:
        raise WorkbenchError(f"{out} exceeds the device's return limits: {'; '.join(problems)}")
    return {"files": len(files), "bytes": total}


# --- pack (here) -------------------------------------------------------------------------------------------

def _travelling_bytes() -> int:
    """Bytes of the tracked and untracked-not-ignored files: the working tree the device receives."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    return sum((REPO_ROOT / name.decode()).stat().st_size for name in listed
               if name and (REPO_ROOT / name.decode()).is_file())


def pack(download_wheels: bool = True) -> None:
    """Build ``.campaign/`` (data, tokenizers, wheels) and say what a device call carries."""
    from .data.tokenizer import pair_tokenizer
    from .recipes import TrainConfig
    shutil.rmtree(PACK, ignore_errors=True)
    (PACK / "data" / "parallel").mkdir(parents=True)
    source = data_dir()
    shutil.copy2(source / "parallel" / "en-fr.tsv.gz", PACK / "data" / "parallel")
    shutil.copytree(source / "eval" / "stsb", PACK / "data" / "eval" / "stsb")
    for preset in sorted({_preset(), "paper"}):  # train-en-fr's, and the benchmark's larger vocabulary
        tokenizer = pair_tokenizer("en-fr", TrainConfig.from_preset(preset).vocab_size)
        folder = Path(tokenizer.model_file).parent
        shutil.copytree(folder, PACK / "home" / "tokenizers" / folder.name)
        _say(f"tokenizer {folder.name}")
    if download_wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", DEVICE_PYTHON, "--platform", "manylinux2014_x86_64",
                        "-d", str(PACK / "wheels"), *WHEELS], check=True)
    carried = sum(p.stat().st_size for p in PACK.rglob("*") if p.is_file())
    tree = _travelling_bytes()
    _say(f".campaign: {carried / 2 ** 20:.1f} MiB; the working tree: {tree / 2 ** 20:.1f} MiB; limit "
         f"{TREE_LIMIT / 2 ** 20:.0f} MiB together")
    if carried + tree > TREE_LIMIT:
        print("The tree is too large to travel. trained/ is not needed on the device: for the campaign's calls\n"
              "  git rm -r -q --cached trained && echo /trained/ >> .git/info/exclude\n"
              "and afterwards\n"
              "  git reset -q -- trained && sed -i '\\#^/trained/$#d' .git/info/exclude", flush=True)
    print("device calls: run(command='bash scripts/gpu_campaign check', carry=['.campaign']), then "
          "'... train-en-fr' (and 'fetch' at once if it says so)", flush=True)


# --- check (device) ----------------------------------------------------------------------------------------

def check() -> None:
    """Hardware and versions, the ``gpu`` tests, and the throughput/MFU table."""
    import torch
    out = _out()
    log = []
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout
        print(smi, flush=True)
        log.append(smi)
    versions = (f"python {sys.version.split()[0]}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
                f"device {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'CPU'}")
    _say(versions)
    log.append(versions)
    steps = [("gpu tests", [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
                            str(REPO_ROOT / "tests" / "test_gpu.py")]),
             ("throughput", [sys.executable, str(REPO_ROOT / "benchmarks" / "train_throughput.py"), "--heads",
                             "split", "--updates", "10" if torch.cuda.is_available() else "2", "--presets",
                             *(["small", "paper"] if _preset() == "small" else [_preset()])])]
    failed = []
    for title, command in steps:
        _say(f"{title}: {' '.join(command[1:])}")
        result = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT)
        text = result.stdout + result.stderr
        print(text[-6000:], flush=True)
        log.append(f"## {title} (exit {result.returncode})\n{text}")
        if result.returncode not in (0, 5):  # 5: pytest found no test to run (none marked gpu selected)
            failed.append(title)
    (out / "check.log").write_text("\n".join(log))
    check_return(out)
    if failed:
        raise WorkbenchError(f"check: {', '.join(failed)} failed (see check.log); fix it on CPU before the next call")
    _say("check passed")


# --- train-en-fr and fetch (device) ------------------------------------------------------------------------

def _config(model: str, seconds: float) -> Path:
    """The run's settings: the preset, a time budget, STS-B dev often enough to select a checkpoint."""
    preset = _preset()
    cadence = {"tiny": 10, "small": 100}.get(preset, 250)
    path = _runs() / f"{model}-en-fr.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'preset = "{preset}"\nmodel = "{model}"\npair = "en-fr"\nmax_seconds = {seconds}\n'
                    f"eval_every = {cadence}\nvalid_every = {cadence}\nsave_every = {cadence}\n")
    return path


def _progress(run: Path) -> str:
    lines = (run / "metrics.jsonl").read_text().splitlines() if (run / "metrics.jsonl").is_file() else []
    last = json.loads(lines[-1]) if lines else {}
    scored = [json.loads(line)["stsb_dev"] for line in lines if '"stsb_dev"' in line]
    text = f"update {last.get('update', 0)}"
    if "loss" in last:
        text += f", loss {last['loss']:.2f}, {last.get('tokens_per_s', 0):,.0f} tokens/s"
    return text + (f", STS-B dev {scored[-1]}" if scored else "")


def train_en_fr(seconds: float | None = None) -> None:
    """Train both models side by side, export their packages, return what fits (the rest waits for fetch)."""
    out, runs = _out(), _runs()
    seconds = seconds or float(os.environ.get("CAMPAIGN_SECONDS", 330))
    from .data.tokenizer import pair_tokenizer
    from .recipes import TrainConfig
    pair_tokenizer("en-fr", TrainConfig.from_preset(_preset()).vocab_size)  # once, before two runs need it
    procs = {}
    for model in MODELS:
        run = runs / f"{model}-en-fr"
        command = [sys.executable, "-m", "workbench.cli", "train", "--config", str(_config(model, seconds)),
                   "--out", str(run), *(["--resume"] if (run / "latest").is_file() else [])]
        log = open(runs / f"{model}-en-fr.log", "a")
        procs[model] = (run, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT), log)
        _say(f"{model}: {' '.join(command[3:])}")
    while any(proc.poll() is None for _, proc, _ in procs.values()):
        time.sleep(20 if _preset() != "tiny" else 2)
        _say("; ".join(f"{model} {_progress(run)}" for model, (run, _, _) in procs.items()))
    for model, (run, proc, log) in procs.items():
        log.close()
        if proc.returncode != 0:
            print((runs / f"{model}-en-fr.log").read_text()[-4000:], flush=True)
            raise WorkbenchError(f"training {model} failed (exit {proc.returncode}); its log is above")
    from .zoo import export_shards
    staging = runs / "packages"
    for model in MODELS:
        package = export_shards(runs / f"{model}-en-fr", staging)
        _say(f"packed {package.name}: {sum(p.stat().st_size for p in package.iterdir()) / 2 ** 20:.1f} MiB in "
             f"{len(list(package.iterdir()))} files")
    _deliver(staging, out)


def fetch() -> None:
    """Return the packages ``train-en-fr`` could not fit in its return."""
    staging = _runs() / "packages"
    if not staging.is_dir() or not any(staging.iterdir()):
        raise WorkbenchError(f"nothing waits in {staging}: the machine was given back (or everything came back "
                             "already); train-en-fr again to rebuild it")
    _deliver(staging, _out())


def _deliver(staging: Path, out: Path) -> None:
    """Move whole packages from ``staging`` into ``out`` in priority order while the return limits allow."""
    used = check_return(out)
    waiting = sorted(staging.iterdir(), key=lambda p: next((i for i, m in enumerate(MODELS)
                                                           if p.name.startswith(f"{m}-")), len(MODELS)))
    for package in waiting:
        files = list(package.iterdir())
        size = sum(p.stat().st_size for p in files)
        if (used["files"] + len(files) <= RETURN_LIMITS["files"]
                and used["bytes"] + size <= RETURN_LIMITS["total_bytes"]):
            shutil.move(str(package), out / package.name)
            used = check_return(out)
            _say(f"returning {package.name}")
    left = sorted(p.name for p in staging.iterdir())
    if left:
        _say(f"waiting for the next call: {', '.join(left)} — call `scripts/gpu_campaign fetch` NOW (the machine "
             "stays only ~30 s after a call)")
    _say(f"$OUT: {used['files']} files, {used['bytes'] / 2 ** 20:.1f} MiB; back here: workbench models import "
         "<files_at>/<package>")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/gpu_campaign", description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("pack", "check", "train-en-fr", "fetch"))
    parser.add_argument("--seconds", type=float, help="train-en-fr: each model's training budget (default 330)")
    parser.add_argument("--no-wheels", action="store_true", help="pack: skip downloading the device's wheels")
    args = parser.parse_args(argv)
    try:
        {"pack": lambda: pack(not args.no_wheels), "check": check, "train-en-fr": lambda: train_en_fr(args.seconds),
         "fetch": fetch}[args.step]()
    except WorkbenchError as error:
        print(f"gpu_campaign {args.step}: {error}", file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
