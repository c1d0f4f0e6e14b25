"""The GPU campaign: a lent GPU's 15 minutes turned into BGT for all five pairs, with decoders
(``scripts/gpu_campaign``; the minute-by-minute plan is ``docs/campaign.md``).

Each step fits one device call (≤ 10 minutes) with margin, prints its progress unbuffered and leaves what must
come back in ``$OUT`` within the device's return limits (:data:`RETURN_LIMITS`):

- ``pack`` (here, before any device call): ``.campaign/`` with what the device cannot fetch — the five pairs'
  data and STS-B, the sentencepiece models the jobs and the check need, wheels of the pure-Python packages its
  image lacks — and the size of what will travel;
- ``check``: ``nvidia-smi``, versions and ``pytest -m gpu`` (about 2 minutes);
- ``bench`` (only when asked): the steady-state throughput of one ``small`` BGT with its per-phase split;
- ``train``: the campaign's jobs (:data:`JOBS`: BGT for every pair with the recipe in ``recipes/``, then
  BILINGUALTRANS en–fr) side by side on the one GPU, each stopped by its recipe's length or a shared time budget,
  STS-B-dev checkpoint selection, each exported *with decoders* as a package (:func:`workbench.zoo.packaging.export_shards`);
  the packages travel as one bundle cut into parts that fit the return, the first parts in this call's return;
- ``fetch``: return the parts that waited (call it at once: the machine goes back ~30 s after a call);
- ``unbundle`` (here): join the parts of every return, check each file's sha256, and write the packages for
  ``workbench models import``.

Steps can be chained in one call (``check train``); ``train`` stops its jobs early (SIGINT: a clean stop) when the
call's limit would otherwise cut off its export (:func:`_call_deadline`). ``CAMPAIGN_PRESET=tiny`` runs the same
steps on CPU with the tiny preset instead of the recipes (the dry run of the test suite); ``CAMPAIGN_SECONDS`` is
the time budget, ``CAMPAIGN_JOBS`` a comma-separated subset of :data:`KNOWN_JOBS`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from workbench.checks import WorkbenchError, check_keys
from workbench.data.corpora import PAIRS
from workbench.paths import REPO_ROOT, data_dir
from tools.bundle import BUNDLE, make_bundle, unbundle

# Each step runs as its own short process on a device billed by the second (pack and fetch need neither torch nor
# the models), so a step imports torch, the recipes and the packaging only inside the functions that use them.
RETURN_LIMITS = {"files": 8, "file_bytes": 16 * 2 ** 20, "total_bytes": 64 * 2 ** 20, "depth": 2}
# tracked folders the device does not need (the tree must fit TREE_LIMIT)
STAY_BEHIND = ("trained", "workbench/probes/parses")
TREE_LIMIT = 64 * 2 ** 20  # what travels to the device: tracked and untracked-not-ignored files + carried paths
JOBS = (*(f"bgt-{pair}" for pair in PAIRS), "bilingual_trans-en-fr")  # in order of priority for the return
KNOWN_JOBS = (*JOBS, *(f"bilingual_trans-{pair}" for pair in PAIRS if pair != "en-fr"))  # CAMPAIGN_JOBS may name
RECIPES = REPO_ROOT / "recipes"
PACK = REPO_ROOT / ".campaign"
DEVICE_PYTHON = "3.12"  # the device image's interpreter (for the wheels pack downloads)
WHEELS = ("plotly==7.1.0", "sacremoses==0.2.0")  # imported by the workbench, absent from the device image
DEFAULT_SECONDS = 400  # each job's training budget on the device (docs/campaign.md)
CALL_SECONDS = 600  # the device's limit on one call: past it the tool kills the call and nothing comes back
AFTER_TRAINING_SECONDS = 60  # the jobs' clean stop (SIGINT), export, bundle and delivery (~30 s on 2026-11-27)
_PROCESS_START = time.time()  # the call's start where scripts/gpu_campaign did not record it


def _preset() -> str:
    return os.environ.get("CAMPAIGN_PRESET", "recipes")


def _jobs() -> tuple[str, ...]:
    chosen = tuple(j for j in os.environ.get("CAMPAIGN_JOBS", "").split(",") if j) or JOBS
    check_keys(chosen, KNOWN_JOBS, "CAMPAIGN_JOBS", "jobs")
    return chosen


def _runs() -> Path:
    return Path(os.environ.get("CAMPAIGN_RUNS", "/tmp/gpu_campaign"))


def _out() -> Path:
    if not os.environ.get("OUT"):
        raise WorkbenchError("$OUT is not set: the campaign's steps leave their results there (the device sets it; "
                             "elsewhere: OUT=some/folder scripts/gpu_campaign STEP)")
    out = Path(os.environ["OUT"])
    out.mkdir(parents=True, exist_ok=True)
    return out


def _call_deadline() -> float:
    """When ``train`` must stop its jobs (``time.time()``) so that this device call returns its parts: the call's
    start (``CAMPAIGN_CALL_START``, set by ``scripts/gpu_campaign``) plus the call limit, less the time the
    export needs. On 2026-11-27 ``check`` took 4 minutes instead of 1 and the call limit ended a 400-s ``train``
    before its export: the jobs' own budget cannot know how long the steps before it took."""
    started = float(os.environ.get("CAMPAIGN_CALL_START") or _PROCESS_START)
    limit = float(os.environ.get("CAMPAIGN_CALL_SECONDS", CALL_SECONDS))
    return started + limit - AFTER_TRAINING_SECONDS


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


def job_config(job: str, seconds: float):
    """A job's TrainConfig: its recipe in ``recipes/`` (the dry run: the tiny preset) under the time budget,
    checkpoints rarer than on CPU (only ``best/`` is exported)."""
    from workbench.training.recipes import TrainConfig
    model, pair = job.rsplit("-", 2)[0], "-".join(job.rsplit("-", 2)[1:])
    if _preset() == "recipes":
        cfg = TrainConfig.from_file(RECIPES / f"{job}.toml")
        changes = {"save_every": 500, "keep_checkpoints": 2}
    else:
        cfg = TrainConfig.from_preset(_preset(), model=model, pair=pair)
        # the time budget, not the preset's 40 updates, ends a dry run, as it ends the device's runs
        changes = {"eval_every": 10, "valid_every": 10, "save_every": 10, "max_updates": 10 ** 6}
    return TrainConfig(**{**cfg.__dict__, **changes, "max_seconds": seconds})


# --- pack (here) -------------------------------------------------------------------------------------------

def _unexclude(folder: str) -> str:
    return "\\#^/" + folder + "/$#d"


def _travelling_bytes() -> int:
    """Bytes of the tracked and untracked-not-ignored files: the working tree the device receives."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    return sum((REPO_ROOT / name.decode()).stat().st_size for name in listed
               if name and (REPO_ROOT / name.decode()).is_file())


def pack(download_wheels: bool = True) -> None:
    """Build ``.campaign/`` (data, tokenizers, wheels) and say what a device call carries."""
    from workbench.training.recipes import TrainConfig
    shutil.rmtree(PACK, ignore_errors=True)
    (PACK / "data" / "parallel").mkdir(parents=True)
    source = data_dir()
    jobs = _jobs()
    pairs = sorted({job_config(job, 1).pair for job in jobs})
    for pair in pairs:
        shutil.copy2(source / "parallel" / f"{pair}.tsv.gz", PACK / "data" / "parallel")
    shutil.copytree(source / "eval" / "stsb", PACK / "data" / "eval" / "stsb")
    needed = [job_config(job, 1) for job in jobs]
    needed += [TrainConfig.from_preset(p) for p in ("tiny", "small")]  # the gpu tests and the throughput bench
    for folder in sorted({Path(cfg.tokenizer().model_file).parent for cfg in needed}):
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
        print("The tree is too large to travel. trained/ and workbench/probes/parses/ are not needed on the device: "
              "for the campaign's calls\n"
              f"  git rm -r -q --cached {' '.join(STAY_BEHIND)} && printf '/%s/\\n' {' '.join(STAY_BEHIND)} "
              ">> .git/info/exclude\n"
              "and afterwards\n"
              f"  git reset -q -- {' '.join(STAY_BEHIND)} && sed -i '{';'.join(_unexclude(d) for d in STAY_BEHIND)}' "
              ".git/info/exclude", flush=True)
    print("device call 1: run(command='bash scripts/gpu_campaign check train', carry=['.campaign'], timeout_s=600);"
          " call 2 at once: '... fetch'", flush=True)


# --- check (device) ----------------------------------------------------------------------------------------

def _run_logged(title: str, command: list[str], log_name: str) -> None:
    """Run ``command``, print its tail, append it to ``$OUT/log_name``; a failure stops the call."""
    out = _out()
    _say(f"{title}: {' '.join(command[1:])}")
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT)
    text = result.stdout + result.stderr
    print(text[-6000:], flush=True)
    with open(out / log_name, "a") as log:
        log.write(f"## {title} (exit {result.returncode})\n{text}\n")
    check_return(out)
    if result.returncode not in (0, 5):  # 5: pytest found no test to run (none marked gpu selected)
        raise WorkbenchError(f"{title} failed (see {log_name}); fix it on CPU before the next call")


def check() -> None:
    """Hardware and versions, then the ``gpu`` tests (about 2 minutes on 2026-11-27)."""
    import torch
    out = _out()
    smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout if shutil.which("nvidia-smi") else ""
    versions = (f"python {sys.version.split()[0]}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
                f"device {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'CPU'}")
    print(smi, flush=True)
    _say(versions)
    (out / "check.log").write_text(f"{smi}\n{versions}\n")
    _run_logged("gpu tests", [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
                              "--durations", "5", str(REPO_ROOT / "tests" / "test_gpu.py")], "check.log")
    _say("check passed")


def bench() -> None:
    """Steady-state throughput of one ``small`` BGT with its per-phase split (~1.5 minutes). Not part of ``check``:
    on 2026-11-27 its 10-s warm-up held 7 updates, far from the ~70 a GPU needs before its rate is steady, so
    its numbers said little and its time came out of training."""
    import torch
    cuda = torch.cuda.is_available()
    _run_logged("throughput", [sys.executable, str(REPO_ROOT / "benchmarks" / "train_throughput.py"),
                               "--presets", "small" if cuda else "tiny", "--warmup-seconds", "30" if cuda else "1",
                               "--seconds", "20" if cuda else "1", "--profile"], "bench.log")


# --- train and fetch (device) ------------------------------------------------------------------------------

def _progress(run: Path) -> str:
    lines = (run / "metrics.jsonl").read_text().splitlines() if (run / "metrics.jsonl").is_file() else []
    last = json.loads(lines[-1]) if lines else {}
    scored = [json.loads(line)["stsb_dev"] for line in lines if '"stsb_dev"' in line]
    text = f"{last.get('update', 0)}"
    if "tokens_per_s" in last:
        text += f" ({last['tokens_per_s'] / 1000:,.0f}k tok/s)"
    return text + (f" dev {scored[-1].get('semantic')}" if scored else "")


def train(seconds: float | None = None) -> None:
    """Train the jobs side by side, export their packages with decoders, bundle them and return what fits."""
    out, runs = _out(), _runs()
    seconds = seconds or float(os.environ.get("CAMPAIGN_SECONDS", DEFAULT_SECONDS))
    configs = {job: job_config(job, seconds) for job in _jobs()}
    from workbench.zoo.packaging import export_shards
    for cfg in configs.values():  # once, before several runs of a pair need it
        cfg.tokenizer()
    runs.mkdir(parents=True, exist_ok=True)
    procs = {job: _start_job(job, cfg, runs, len(configs)) for job, cfg in configs.items()}
    stopping = _wait_for(procs)
    summary, finished = [], []
    for job, (run, proc, log) in procs.items():
        log.close()
        if proc.returncode != 0 and not (stopping and (run / "best").is_dir()):
            print((runs / f"{job}.log").read_text()[-4000:], flush=True)
            if not stopping:
                raise WorkbenchError(f"training {job} failed (exit {proc.returncode}); its log is above")
            _say(f"{job}: stopped before its first checkpoint; nothing to export")  # the others still come back
            continue
        finished.append(job)
        summary.append(f"{job}: update {_progress(run)}")
    staging = runs / "packages"
    shutil.rmtree(staging, ignore_errors=True)
    for job in finished:
        package = export_shards(runs / job, staging, name=job, keep_decoders=True, shard_mib=64)
        _say(f"packed {package.name}: {sum(p.stat().st_size for p in package.iterdir()) / 2 ** 20:.1f} MiB")
    (out / "train.log").write_text("\n".join(summary) + "\n")
    make_bundle(staging, runs / "parts")
    _deliver(runs / "parts", out)


def _start_job(job: str, cfg, runs: Path, n_jobs: int) -> tuple:
    """Start one job's training (resuming its run where one is there): (run folder, process, log file)."""
    run, recipe = runs / job, runs / f"{job}.json"
    recipe.write_text(json.dumps(cfg.__dict__))
    command = [sys.executable, "-m", "workbench.cli", "train", "--config", str(recipe), "--out", str(run),
               *(["--resume"] if (run / "latest").is_file() else [])]
    log = open(runs / f"{job}.log", "a")
    env = {**os.environ, "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 2) // n_jobs))}
    _say(f"{job}: {' '.join(command[3:])}")
    return run, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env), log


def _wait_for(procs: dict) -> bool:
    """Wait for the jobs, saying how far each is; at the call's deadline stop them cleanly (SIGINT: each ends its
    update and saves). Returns whether they were stopped."""
    started, deadline, stopping = time.perf_counter(), _call_deadline(), False
    _say(f"the jobs are stopped at {time.strftime('%H:%M:%S', time.localtime(deadline))} at the latest, so that "
         "this call's export and return fit its limit")
    while any(proc.poll() is None for _, proc, _ in procs.values()):
        time.sleep(max(0.5, min(20 if _preset() != "tiny" else 2, deadline - time.time())))
        if time.time() >= deadline and not stopping:
            stopping = True
            _say("the call's deadline: stopping the jobs (SIGINT)")
            for _, proc, _ in procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
        _say(f"{time.perf_counter() - started:.0f} s: "
             + "; ".join(f"{job} {_progress(run)}" for job, (run, _, _) in procs.items()))
    return stopping


def fetch() -> None:
    """Return the bundle's parts ``train`` could not fit in its return."""
    parts = _runs() / "parts"
    if not parts.is_dir() or not any(p.name != BUNDLE for p in parts.iterdir()):
        raise WorkbenchError(f"nothing waits in {parts}: the machine was given back (or everything came back "
                             "already); train again to rebuild it")
    _deliver(parts, _out())


def _deliver(parts: Path, out: Path) -> None:
    """Copy the index and move parts from ``parts`` into ``out``, in order, while the return limits allow."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(parts / BUNDLE, out / BUNDLE)
    used = check_return(out)
    for part in sorted(p for p in parts.iterdir() if p.name != BUNDLE):
        size = part.stat().st_size
        if used["files"] + 1 > RETURN_LIMITS["files"] or used["bytes"] + size > RETURN_LIMITS["total_bytes"]:
            break
        shutil.move(str(part), out / part.name)
        used = check_return(out)
    left = sorted(p.name for p in parts.iterdir() if p.name != BUNDLE)
    if left:
        _say(f"{len(left)} part(s) wait for the next call: call `scripts/gpu_campaign fetch` NOW (the machine "
             "stays only ~30 s after a call)")
    _say(f"$OUT: {used['files']} files, {used['bytes'] / 2 ** 20:.1f} MiB; back here: scripts/gpu_campaign "
         "unbundle <files_at of every return> --to DIR")


# --- unbundle (here) ---------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="scripts/gpu_campaign", description=__doc__.split("\n\n")[0])
    if argv[:1] == ["unbundle"]:
        parser.add_argument("step", choices=("unbundle",))
        parser.add_argument("returns", nargs="+", metavar="RETURN", help="the folders the device calls brought back")
        parser.add_argument("--to", default="campaign-back", help="where the packages go (campaign-back)")
        parser.add_argument("--force", action="store_true", help="replace packages already in --to")
        args = parser.parse_args(argv)
        steps, actions = ["unbundle"], {"unbundle": lambda: unbundle(args.returns, args.to, args.force)}
    else:
        parser.add_argument("steps", nargs="+", choices=("pack", "check", "bench", "train", "fetch"),
                            metavar="STEP", help="pack | check | bench | train | fetch (several in one "
                                                 "device call: check train) | unbundle RETURN... --to DIR")
        parser.add_argument("--seconds", type=float, help=f"train: each job's time budget (default {DEFAULT_SECONDS})")
        parser.add_argument("--no-wheels", action="store_true", help="pack: skip downloading the device's wheels")
        args = parser.parse_args(argv)
        steps = args.steps
        actions = {"pack": lambda: pack(not args.no_wheels), "check": check, "bench": bench,
                   "train": lambda: train(args.seconds),
                   "fetch": fetch}
    for name in steps:
        try:
            actions[name]()
        except WorkbenchError as error:
            print(f"gpu_campaign {name}: {error}", file=sys.stderr, flush=True)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
