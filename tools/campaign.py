"""The GPU campaign v3: a lent GPU's 15 minutes turned into GPU-scale BGTs with their decoders, one pair per return
(``scripts/gpu_campaign``; the plan, call by call, is ``docs/campaign.md``).

Each step fits one device call (≤ 10 minutes) with margin, prints its progress unbuffered and leaves what must
come back in ``$OUT`` within the device's return limits (:data:`RETURN_LIMITS`):

- ``pack`` (here, before any device call): ``.campaign/`` with what the device cannot fetch — the jobs' pairs'
  data and STS-B, their sentencepiece models, wheels of the pure-Python packages its image lacks — and, with
  ``--continue DIR``, the packages of an earlier loan to train on, bundled into upload folders that each fit one
  call (:func:`plan_calls`); it prints the calls to make;
- ``check``: ``nvidia-smi``, versions and ``pytest -m gpu`` (about 2 minutes);
- ``bench`` (only when asked): the steady-state throughput of one job as it is beside the update as it was;
- ``train``: the campaign's jobs (:data:`JOBS`, ``recipes/campaign/``: BGT at d = 512 with wide language latents
  for every pair, en–fr first) side by side on the one GPU — each continuing its uploaded package where there is
  one — stopped by a shared time budget or the call's deadline, STS-B-dev checkpoint selection, each exported
  *with decoders* in int8 (:mod:`workbench.zoo.transport`) and bundled per package, the first packages in this
  call's return;
- ``layers`` (when a loan has time left after the campaign): a ~1-billion-parameter language model's every layer
  read by the workbench beside a plain transformers loop, in bfloat16;
- ``fetch``: return the next packages that wait (call it at once: the machine goes back ~30 s after a call);
- ``unbundle`` (here): join every package whose parts came back, check each file's sha256, and write the
  packages for ``workbench models import``.

Steps can be chained in one call (``check train``); ``train`` stops its jobs early (SIGINT: a clean stop) when the
call's limit would otherwise cut off its export (:func:`_call_deadline`). ``CAMPAIGN_PRESET=tiny`` runs the same
jobs with the tiny preset's sizes and every other setting of their recipes, on CPU (the dry run of the test
suite); ``CAMPAIGN_SECONDS`` is the time budget, ``CAMPAIGN_JOBS`` a comma-separated subset of :data:`JOBS`,
``CAMPAIGN_COMPILE=off`` trains every job eager.
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

from workbench.checks import WorkbenchError
from workbench.paths import REPO_ROOT
from tools import carry
from tools.bundle import BUNDLE, make_bundle, unbundle
from tools.campaign_jobs import PRECISION, RECIPES, chosen, job_config, preset
from tools.carry import folder_bytes, pack, say

# Each step runs as its own short process on a device billed by the second (pack and fetch need neither torch nor
# the models), so a step imports torch, the recipes and the packaging only inside the functions that use them.
RETURN_LIMITS = {"files": 8, "file_bytes": 16 * 2 ** 20, "total_bytes": 64 * 2 ** 20, "depth": 2}
DEFAULT_SECONDS = 400  # each job's training budget on the device (docs/campaign.md)
CALL_SECONDS = 600  # the device's limit on one call: past it the tool kills the call and nothing comes back
AFTER_TRAINING_SECONDS = 75  # the jobs' clean stop (SIGINT), int8 export, bundle and delivery
RESIGNAL_SECONDS = 10  # after the deadline, SIGINT again this often to a job that still runs
_PROCESS_START = time.time()  # the call's start where scripts/gpu_campaign did not record it


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


# --- check (device) ----------------------------------------------------------------------------------------

def _run_logged(title: str, command: list[str], log_name: str) -> None:
    """Run ``command``, print its tail, append it to ``$OUT/log_name``; a failure stops the call."""
    out = _out()
    say(f"{title}: {' '.join(command[1:])}")
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
    say(versions)
    (out / "check.log").write_text(f"{smi}\n{versions}\n")
    _run_logged("gpu tests", [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
                              "--durations", "5", str(REPO_ROOT / "tests" / "test_gpu.py")], "check.log")
    say("check passed")


def bench() -> None:
    """Steady-state throughput of the first job's recipe as the update was before v3, as it is, and compiled,
    with the per-phase split (~3 minutes on a GPU; the dry run: tiny, two variants). Not part of ``check``:
    its time comes out of training."""
    import torch
    cuda = torch.cuda.is_available()
    recipe = RECIPES / f"{chosen()[0]}.toml"
    sizes = (["--config", str(recipe), "--warmup-seconds", "30", "--seconds", "20", "--variants", "as-it-was",
              "current", "compiled"] if cuda else ["--presets", "tiny", "--warmup-seconds", "1", "--seconds", "1",
                                                   "--profile-updates", "1"])
    _run_logged("throughput", [sys.executable, str(REPO_ROOT / "benchmarks" / "train_throughput.py"), *sizes,
                               "--profile"], "bench.log")


def layers() -> None:
    """After the campaign, when a loan has time left: a random-weight ~1-billion-parameter Llama-style model's every
    layer through the workbench beside a plain transformers loop, in bfloat16 (``benchmarks/hf_throughput.py``,
    about 2 minutes on a GPU; the dry run: its tiny model on 64 sentences)."""
    import torch
    sizes = (["--random-llama", "1b", "--device", "cuda", "--dtype", "bfloat16", "--n", "4000", "--batch-size", "128"]
             if torch.cuda.is_available() else ["--random-llama", "tiny", "--n", "64"])
    _run_logged("layers", [sys.executable, str(REPO_ROOT / "benchmarks" / "hf_throughput.py"), *sizes], "layers.log")


def receive() -> None:
    """A call that only carries upload parts (the plan's middle calls): say what has arrived."""
    arrived = sorted(p.name for folder in carry.PACK.parent.glob(carry.UPLOAD + "*") for p in folder.iterdir())
    say(f"upload parts on this machine: {', '.join(arrived) or 'none'}")


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
    """Train the jobs side by side (each continuing its uploaded package, if any), export their packages with
    decoders in int8, bundle them per package and return the first ones."""
    out, runs = _out(), _runs()
    seconds = seconds or float(os.environ.get("CAMPAIGN_SECONDS", DEFAULT_SECONDS))
    configs = {job: job_config(job, seconds) for job in chosen()}
    from workbench.zoo.packaging import export_shards
    for cfg in configs.values():  # once, before several runs of a pair need it
        cfg.tokenizer()
    runs.mkdir(parents=True, exist_ok=True)
    starts = _continued(runs)
    procs = {job: _start_job(job, cfg, runs, len(configs), starts.get(job)) for job, cfg in configs.items()}
    stopping = _wait_for(procs)
    summary, finished = [], []
    for job, (run, proc, log) in procs.items():
        log.close()
        if proc.returncode != 0 and not (stopping and (run / "best").is_dir()):
            print((runs / f"{job}.log").read_text()[-4000:], flush=True)
            if not stopping:
                raise WorkbenchError(f"training {job} failed (exit {proc.returncode}); its log is above")
            say(f"{job}: stopped before its first checkpoint; nothing to export")  # the others still come back
            continue
        finished.append(job)
        summary.append(f"{job}: update {_progress(run)}")
    staging = runs / "packages"
    shutil.rmtree(staging, ignore_errors=True)
    packages = []
    for job in finished:
        packages.append(export_shards(runs / job, staging, name=job, keep_decoders=True, shard_mib=64,
                                      precision=PRECISION))
        say(f"packed {job}: {folder_bytes(packages[-1]) / 2 ** 20:.1f} MiB ({PRECISION})")
    (out / "train.log").write_text("\n".join(summary) + "\n")
    make_bundle(packages, runs / "parts")
    _deliver(runs / "parts", out)


def _continued(runs: Path) -> dict[str, Path]:
    """The packages uploaded for this loan (``.campaign/upload/bundle.json`` and the parts the calls carried),
    each joined, checked and written as a model folder to continue: {job: folder}."""
    index = carry.PACK / "upload"
    if not (index / BUNDLE).is_file():
        return {}
    from workbench.zoo.packaging import unpack_shards
    packages = unbundle([index, *sorted(carry.PACK.parent.glob(carry.UPLOAD + "*"))], runs / "uploaded", force=True)
    starts = {package.name: unpack_shards(package, runs / "init" / package.name) for package in packages}
    say(f"continuing {', '.join(starts) or 'nothing'} from the uploaded packages")
    return starts


def _start_job(job: str, cfg, runs: Path, n_jobs: int, init_from: Path | None = None) -> tuple:
    """Start one job's training — resuming its run where one is there, else from ``init_from`` where given:
    (run folder, process, log file)."""
    run, recipe = runs / job, runs / f"{job}.json"
    recipe.write_text(json.dumps(cfg.__dict__))
    start = (["--resume"] if (run / "latest").is_file() else ["--init-from", str(init_from)] if init_from else [])
    command = [sys.executable, "-m", "workbench.cli", "train", "--config", str(recipe), "--out", str(run), *start]
    log = open(runs / f"{job}.log", "a")
    env = {**os.environ, "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 2) // n_jobs))}
    say(f"{job}: {' '.join(command[3:])}")
    return run, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env), log


def _wait_for(procs: dict) -> bool:
    """Wait for the jobs, saying how far each is; at the call's deadline stop them cleanly (SIGINT: each ends its
    update and saves). Returns whether they were stopped."""
    started, deadline, stopping = time.perf_counter(), _call_deadline(), False
    say(f"the jobs are stopped at {time.strftime('%H:%M:%S', time.localtime(deadline))} at the latest, so that "
         "this call's export and return fit its limit")
    signalled = 0.0
    while any(proc.poll() is None for _, proc, _ in procs.values()):
        time.sleep(max(0.5, min(20 if preset() != "tiny" else 2, deadline - time.time())))
        if time.time() >= deadline and time.time() - signalled >= RESIGNAL_SECONDS:
            if not stopping:
                say("the call's deadline: stopping the jobs (SIGINT)")
            stopping, signalled = True, time.time()
            for _, proc, _ in procs.values():  # again while one runs: a job still starting has no handler yet, and
                if proc.poll() is None:  # under a shell that runs it in the background SIGINT is ignored till then
                    proc.send_signal(signal.SIGINT)
        say(f"{time.perf_counter() - started:.0f} s: "
             + "; ".join(f"{job} {_progress(run)}" for job, (run, _, _) in procs.items()))
    return stopping


def fetch() -> None:
    """Return the packages ``train`` could not fit in its return."""
    parts = _runs() / "parts"
    if not parts.is_dir() or not any(p.name != BUNDLE for p in parts.iterdir()):
        raise WorkbenchError(f"nothing waits in {parts}: the machine was given back (or everything came back "
                             "already); train again to rebuild it")
    _deliver(parts, _out())


def _deliver(parts: Path, out: Path) -> None:
    """Copy the index into ``out`` and move whole packages' parts there, in the bundle's order, while the return
    limits allow; a package larger than a whole return goes part by part."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(parts / BUNDLE, out / BUNDLE)
    used = check_return(out)
    empty = dict(used)
    for entry in json.loads((parts / BUNDLE).read_text())["packages"]:
        waiting = [parts / name for name in entry["parts"] if (parts / name).is_file()]
        if not waiting:
            continue
        whole = (used["files"] + len(waiting) <= RETURN_LIMITS["files"]
                 and used["bytes"] + sum(p.stat().st_size for p in waiting) <= RETURN_LIMITS["total_bytes"])
        if not whole and used != empty:  # whole packages first: the next return takes this one
            break
        for part in waiting:
            if (used["files"] + 1 > RETURN_LIMITS["files"]
                    or used["bytes"] + part.stat().st_size > RETURN_LIMITS["total_bytes"]):
                break
            shutil.move(str(part), out / part.name)
            used = check_return(out)
        if not whole:
            break
    left = sorted(p.name for p in parts.iterdir() if p.name != BUNDLE)
    if left:
        say(f"{len(left)} part(s) wait for the next call: call `scripts/gpu_campaign fetch` NOW (the machine "
             "stays only ~30 s after a call)")
    say(f"$OUT: {used['files']} files, {used['bytes'] / 2 ** 20:.1f} MiB; back here: scripts/gpu_campaign "
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
        steps = ("pack", "check", "bench", "layers", "receive", "train", "fetch")
        parser.add_argument("steps", nargs="+", choices=steps, metavar="STEP",
                            help=f"{' | '.join(steps)} (several in one device call: check train) | unbundle "
                                 "RETURN... --to DIR")
        parser.add_argument("--seconds", type=float, help=f"train: each job's time budget (default {DEFAULT_SECONDS})")
        parser.add_argument("--no-wheels", action="store_true", help="pack: skip downloading the device's wheels")
        parser.add_argument("--continue", dest="continuing", nargs="+", metavar="DIR",
                            help="pack: continue the packages in DIR (an earlier loan's, unbundled) on this loan")
        args = parser.parse_args(argv)
        steps = args.steps
        actions = {"pack": lambda: pack(not args.no_wheels, args.continuing), "check": check, "bench": bench,
                   "layers": layers, "receive": receive, "train": lambda: train(args.seconds), "fetch": fetch}
    for name in steps:
        try:
            actions[name]()
        except WorkbenchError as error:
            print(f"gpu_campaign {name}: {error}", file=sys.stderr, flush=True)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
