"""The Trainer every neural model uses (BGT and its ablations, SP, BILSTM, the multilingual NMT): token-budget
batches, accumulation, AdamW + inverse-sqrt (or constant) learning rate, clipping, bf16 autocast on CUDA, DDP
under ``torchrun``, JSONL metrics, dev-score model selection, atomic checkpoints and exact resume. It knows no model
kind: a network's ``forward(en, xx, update, step)`` gives its loss and the terms it declares for the log
(:class:`workbench.models.base.SentenceModel`). (Models fitted in one go are not trained here:
:func:`workbench.training.train`.)

What a run reads and the batches of each update come from :mod:`workbench.data.training`; a run folder (its
layout and checkpoint format: :mod:`workbench.models.folder`) gets one ``metrics.jsonl`` line per update with the pairs
seen and the summed update time; validation loss and the dev score on the lines where they were measured, and an
``update 0`` line for the network at initialisation. ``best/`` keeps the weights with the best semantic dev score so
far: STS-B dev Pearson (of every English-reading view), as the paper's authors choose checkpoints, not validation
loss (which the KL and translation terms dominate); a pair without English has no STS-B to read, so its semantic
view is scored by finding translations among its validation pairs (:attr:`Trainer.dev_metric`). A checkpoint is written into a temporary folder
and renamed, then ``latest`` is replaced atomically, so a run killed at any moment resumes from a complete
checkpoint; on CPU the resumed run repeats the uninterrupted run's losses bit for bit (same batches, same RNG
stream, same optimizer state). SIGINT/SIGTERM and ``max_seconds`` stop after the current update with a
checkpoint. One process owns a run folder at a time (a lock file, :data:`LOCK`).
"""
from __future__ import annotations

import json
import logging
import math
import os
import platform
import shutil
import signal
import threading
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from filelock import FileLock, Timeout
from torch.profiler import record_function

from ..checks import WorkbenchError
from ..data.batching import collate
from ..data.sts import load_stsb
from ..data.training import TrainingData
from ..encoders import unread
from ..evaluation.retrieval import distinct_pairs, pair_retrieval_accuracy
from ..evaluation.sts import embed_unique, score_pairs
from ..models.kinds import KINDS, build_model, checked_config
from ..models.checkpoint import write_checkpoint
from ..models.folder import ModelFolder, latest_checkpoint, write_weights
from ..paths import process_rank, swap_folder
from ..progress import progress_bar
from .recipes import TrainConfig, learning_rate
from .resume import check_resumable, continue_from, restore, warm_start
from .throughput import Prefetch, compile_parts

log = logging.getLogger(__name__)


LOCK = ".lock"  # the run folder's lock file (held by the training process; see Trainer)

COUNTS = ("sentences", "tokens_en", "tokens_xx")  # every model's forward returns these


def loss_terms(out: dict, names: tuple[str, ...], device: torch.device) -> torch.Tensor:
    """The terms ``names`` of one forward pass as a float64 vector on ``device``, without waiting for the
    device: the Trainer reads them once per update."""
    # non_blocking: a term the model counted on the host (the pair count) is copied without waiting for the GPU
    return torch.stack([torch.as_tensor(out[k]).detach().to(device, torch.float64, non_blocking=True)
                        for k in names])


def hardware(device: torch.device | None = None, world: int = 1) -> str:
    """What the updates run on, as a card states it: the GPUs, or the CPU with the threads torch uses (threads,
    not cores: two runs side by side at one thread each take longer per update than one run at two)."""
    device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        return f"{world} × {torch.cuda.get_device_name(device)}"
    threads = torch.get_num_threads()
    processes = f", {world} processes" if world > 1 else ""
    return f"CPU ({platform.machine()}, {threads} thread{'s' * (threads > 1)}{processes})"


# --- the trainer ---------------------------------------------------------------------------------------------

class Trainer:
    """Train ``cfg.model`` on ``cfg.pair`` into ``run_dir``; :meth:`run` returns the final metrics line."""

    def __init__(self, cfg: TrainConfig, run_dir: str | Path, resume: bool = False, show_progress: bool = True,
                 init_from: str | Path | None = None):
        """``init_from``: a trained model of this run's settings (a name in ``trained/``, a model or checkpoint
        folder) whose weights, update count and curve a new run continues — for when the run directory is lost;
        the optimizer moments start afresh, and the learning rate and KL ramp go on from its update."""
        self.cfg, self.run_dir, self.show_progress = cfg, Path(run_dir), show_progress
        checked_config(cfg.model_config())  # settings and size refused before any data is read
        self.rank, self.world = process_rank()
        self.device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available()
                                   else "cpu")
        self.hardware = hardware(self.device, self.world)  # on every update's line: a resumed run may move
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise WorkbenchError(f"--out {self.run_dir} is a file; give a run directory")
        checkpoint = latest_checkpoint(self.run_dir) if resume else None  # both found before any work
        if checkpoint is None and (self.run_dir / "latest").exists():
            raise WorkbenchError(f"{self.run_dir} already holds a run; pass --resume to continue it, or choose "
                                 "another --out")
        left = sorted(p.name for p in self.run_dir.iterdir() if p.name != LOCK) if self.run_dir.is_dir() else []
        if checkpoint is None and left and self.rank == 0:
            raise WorkbenchError(f"{self.run_dir} is not empty ({', '.join(left[:3])}{', …' if len(left) > 3 else ''}) "
                                 "and holds no run to resume; a new run needs a new or empty --out")
        created = not self.run_dir.exists()
        self._lock = self._own_run_folder()
        try:
            self._prepare(cfg, checkpoint, init_from)
        except BaseException:
            self._release(remove=created)
            raise

    def _own_run_folder(self) -> FileLock | None:
        """Lock the run folder for this process (rank 0 under DDP) for the Trainer's life: a second trainer in the
        same folder is refused. The lock is the operating system's, so a killed process leaves none behind."""
        if self.rank != 0:
            return None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.run_dir / LOCK))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise WorkbenchError(f"another process is training in {self.run_dir}; wait for it to finish (or stop "
                                 "it), or choose another --out") from None
        return lock

    def _release(self, remove: bool = False) -> None:
        """Give the run folder back; ``remove``: it was made by this trainer, which failed before any work."""
        if getattr(self, "_lock", None) is not None:
            self._lock.release()
            self._lock = None
        if remove and self.rank == 0:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __del__(self):
        self._release()

    def _prepare(self, cfg: TrainConfig, checkpoint: Path | None, init_from: str | Path | None) -> None:
        # each folder is opened (config read, files verified) once; a resume of a run that was itself initialised
        # wins over init_from
        resumed = ModelFolder(checkpoint) if checkpoint is not None else None
        start = ModelFolder(init_from) if init_from is not None and checkpoint is None else None
        tagged = KINDS[cfg.model].multilingual  # pieces carry a language tag
        self.tokenizer = cfg.tokenizer()
        self.data = TrainingData(cfg.pair, self.tokenizer, max_pairs=cfg.max_pairs,
                                 max_valid_pairs=cfg.max_valid_pairs, max_sentence_len=cfg.max_sentence_len,
                                 max_tokens=cfg.max_tokens, seed=cfg.seed, tagged=tagged)
        for folder in (resumed, start):
            if folder is not None:
                check_resumable(folder, cfg, self.tokenizer.digest, self.data.digest, initialising=folder is start)
        torch.manual_seed(cfg.seed)
        self.model = build_model(cfg.model_config(self.tokenizer)).to(self.device)
        self.model.use_tokenizer(self.tokenizer)
        widest = -(-cfg.max_sentence_len // cfg.pad_multiple) * cfg.pad_multiple
        if widest > getattr(self.model.cfg, "max_len", widest):
            raise WorkbenchError(f"pad_multiple={cfg.pad_multiple} pads {cfg.max_sentence_len}-token sentences to "
                                 f"{widest}, beyond the network's max_len={self.model.cfg.max_len}")
        # fused: one kernel for the whole step on a GPU (the same update up to rounding); CPU runs keep the
        # default, whose resumes repeat an uninterrupted run bit for bit
        self.optimizer = torch.optim.AdamW(self.model.parameter_groups(), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                                           weight_decay=cfg.weight_decay, fused=self.device.type == "cuda")
        self.state = {"update": 0, "epoch": 0, "position": 0, "world": self.world, "pairs_seen": 0,
                      "train_seconds": 0.0, "best": None}
        if resumed is not None:
            restore(self, resumed)
        elif start is not None:
            continue_from(self, start)
        elif cfg.warm_start:
            warm_start(self, cfg.warm_start)
        if cfg.compile != "off":
            compile_parts(self.model, cfg.compile)
        self.net = self.model
        if self.world > 1:
            self.net = torch.nn.parallel.DistributedDataParallel(self.model, find_unused_parameters=False)
        self._prefetch = Prefetch(self)

    def _next_update_batches(self) -> list[np.ndarray]:
        """The micro-batches of the next update for every process (update_freq × world)."""
        return self.data.next_update(self.state, self.cfg.update_freq * self.world)

    def _autocast(self):
        use = self.cfg.amp == "bf16" or (self.cfg.amp == "auto" and self.device.type == "cuda")
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=use)

    def _update(self) -> dict:
        """One update. Its phases are labelled for ``torch.profiler`` (data, forward, backward, optimizer, sync); the
        loss terms stay on the device until one transfer at the end, so a GPU is waited for once per update."""
        cfg, update = self.cfg, self.state["update"]
        with record_function("data"):
            batches = self._next_update_batches()
            n_sentences = sum(len(b) for b in batches)  # the gradient is divided by all pairs in the update
            mine = self._prefetch.take(batches[self.rank::self.world])  # collated while the last update ran
        self.model.train()
        summed = ("loss", *self.model.LOGGED, *COUNTS)
        totals = torch.zeros(len(summed), dtype=torch.float64, device=self.device)
        for micro, (en, xx) in enumerate(mine):
            step = update * len(mine) + micro  # the forward counter (a model may alternate on it)
            with record_function("data"):
                en, xx = en.to(self.device, non_blocking=True), xx.to(self.device, non_blocking=True)
            with record_function("forward"), self._autocast():
                out = self.net(en, xx, update, step)
            with record_function("backward"):
                (out["loss"] * (self.world / n_sentences)).backward()  # DDP averages over processes
            totals += loss_terms(out, summed, self.device)
        if self.world > 1:
            torch.distributed.all_reduce(totals)
        lr = learning_rate(update + 1, cfg)
        with record_function("optimizer"):
            for group in self.optimizer.param_groups:
                group["lr"] = lr * group.get("lr_scale", 1.0)
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.state["update"] = update + 1
        with record_function("sync"):  # the one wait for the device in an update
            last = [torch.as_tensor(out[k]).to(self.device, torch.float64).reshape(1) for k in self.model.LAST]
            values = torch.cat([totals, grad_norm.detach().double().reshape(1), *last]).tolist()
        sums = dict(zip(summed, values))
        n, tokens = sums["sentences"], sums["tokens_en"] + sums["tokens_xx"]
        self.state["pairs_seen"] += int(n)
        record = {"update": update + 1, "epoch": self.state["epoch"], "loss": sums["loss"] / n}
        record.update({term: sums[term] / n for term in self.model.LOGGED})
        record.update({f"{term}_per_token": sums[term] / tokens for term in self.model.PER_TOKEN})
        record.update(self.model.schedule(update))
        record.update({"lr": lr, "grad_norm": values[len(summed)], "sentences": int(n), "tokens": int(tokens),
                       "tokens_en": int(sums["tokens_en"]), "pairs_seen": self.state["pairs_seen"]})
        # the last micro-batch's values (a posterior-collapse check, say)
        record.update({k: int(v) if v.is_integer() else v for k, v in zip(self.model.LAST, values[len(summed) + 1:])})
        return record

    @torch.no_grad()
    def validate(self) -> float:
        """Validation loss per sentence pair (same terms and KL weight as training; eval mode)."""
        self.model.eval()
        en, xx = self.data.valid
        total, n = 0.0, 0
        for step, index in enumerate(self.data.valid_batches()):
            batch = collate(en, xx, index, self.cfg.pad_multiple)
            with self._autocast():
                out = self.model(batch.en.to(self.device), batch.xx.to(self.device), self.state["update"], step)
            total, n = total + out["loss"].item(), n + len(index)
        return total / max(n, 1)

    @property
    def dev_metric(self) -> str:
        """What chooses ``best/``: ``stsb_dev`` (STS-B dev Pearson's r × 100) where the semantic view reads
        English, else ``retrieval_dev`` (the semantic view finding each validation pair's translation, % both ways,
        over pairs whose sentences are distinct on each side)."""
        return "stsb_dev" if "en" in self.model.view_languages("semantic") else "retrieval_dev"

    def evaluate_views(self) -> dict[str, float]:
        """The dev score (:attr:`dev_metric`) of every view that can take it: the cheap model-selection signal."""
        encoders = {view: self.model.encoder(view, self.tokenizer) for view in self.model.views}
        if self.dev_metric == "retrieval_dev":
            pairs = distinct_pairs(self.data.valid_sentences)
            sides = [encoders["semantic"].encode([pair[i] for pair in pairs]) for i in (0, 1)]
            return {"semantic": round(pair_retrieval_accuracy(*sides), 3)}
        frame = load_stsb("dev")
        sentences = [*frame["sentence1"], *frame["sentence2"]]
        return {view: round(score_pairs(embed_unique(encoder, sentences), frame)["pearson"], 3)
                for view, encoder in encoders.items() if not unread(encoder, ("en",))}

    def _save_best(self, scores: dict[str, float]) -> None:
        """Keep ``best/`` (weights only, loadable) at the best semantic dev score so far (trained networks only:
        update 0 is the reference, not a candidate)."""
        score, metric = scores.get("semantic"), self.dev_metric
        best = self.state["best"]
        if score is None or self.state["update"] == 0 or (best is not None and score <= best[metric]):
            return
        self.state["best"] = {"update": self.state["update"], metric: score}
        tmp = self.run_dir / ".best.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        write_weights(tmp, self.model, self.tokenizer, {"train": asdict(self.cfg), "data_sha256": self.data.digest,
                                                         "update": self.state["update"], self.dev_metric: scores})
        swap_folder(tmp, self.run_dir / "best")

    def _log(self, record: dict) -> None:
        if self.rank == 0:
            with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")

    def _measure(self, record: dict) -> None:
        """Add validation loss and the dev score to ``record`` where due (and update ``best/``)."""
        cfg, update = self.cfg, record["update"]
        last = update == cfg.max_updates or record.get("stopped")
        with record_function("evaluation"):
            if update % cfg.valid_every == 0 or last:
                record["valid_loss"] = self.validate()
            if cfg.eval_every and (update % cfg.eval_every == 0 or last) and self.rank == 0:
                record[self.dev_metric] = scores = self.evaluate_views()
                self._save_best(scores)

    def run(self) -> dict:
        """Train until ``max_updates`` (or ``max_seconds``, or SIGINT/SIGTERM: the update in progress ends, then a
        checkpoint is written and the run returns, ready for ``resume``)."""
        cfg = self.cfg
        if self.state["update"] >= cfg.max_updates:
            self._release()
            log.info("%s is finished: update %d of max_updates %d", self.run_dir, self.state["update"],
                     cfg.max_updates)
            return {"update": self.state["update"], "finished": True}
        try:
            return self._run()
        finally:
            self._release()

    def _run(self) -> dict:
        cfg = self.cfg
        started = time.perf_counter()
        self._begin()
        stop = {}
        signals = (signal.SIGINT, signal.SIGTERM) if threading.current_thread() is threading.main_thread() else ()
        previous = {sig: signal.signal(sig, lambda number, _: stop.setdefault("signal", signal.Signals(number).name))
                    for sig in signals}
        bar = progress_bar(total=cfg.max_updates, initial=self.state["update"], desc=f"train {cfg.model} {cfg.pair}",
                           unit="update", disable=not self.show_progress or self.rank != 0)
        record: dict = {}
        try:
            while self.state["update"] < cfg.max_updates:
                record = self._timed_update()
                if cfg.max_seconds and time.perf_counter() - started >= cfg.max_seconds:
                    stop.setdefault("time", f"max_seconds={cfg.max_seconds:g}")
                stopped = self._agreed_stop(stop)
                if stopped:
                    record["stopped"] = stopped
                self._measure(record)
                self._keep(record, stopped)
                bar.update()
                bar.set_postfix(loss=f"{record['loss']:.3f}")
                if stopped:
                    log.warning("stopped at update %d (%s); continue with --resume", record["update"], stopped)
                    break
        finally:
            bar.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if self.world > 1:
            torch.distributed.barrier()
        return record

    def _begin(self) -> None:
        """Say what trains where; a new run measures the network at initialisation (the curves' update 0)."""
        cfg = self.cfg
        if self.rank == 0:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            n_params = sum(p.numel() for p in self.model.parameters())
            log.info("%s on %s: %.1fM parameters, %d training pairs, device %s, %d process(es)", cfg.model,
                     cfg.pair, n_params / 1e6, len(self.data), self.device, self.world)
        if self.state["update"] == 0 and cfg.eval_every:
            record = {"update": 0, "pairs_seen": 0, "train_seconds": 0.0}
            self._measure(record)
            self._log(record)

    def _timed_update(self) -> dict:
        """One update, refused when its loss or gradient is not finite (nothing is saved after it), with its time
        and throughput on its record."""
        start = time.perf_counter()
        record = self._update()
        if not math.isfinite(record["loss"]) or not math.isfinite(record["grad_norm"]):
            kept = (self.run_dir / "latest").read_text().strip() if (self.run_dir / "latest").is_file() \
                else "none yet"
            raise WorkbenchError(
                f"update {record['update']}: the loss became {record['loss']} (gradient norm "
                f"{record['grad_norm']}); nothing was saved after it, the last good checkpoint is {kept}. "
                "Lower lr or raise warmup in a new run, or check the weights and data it resumed from")
        seconds = time.perf_counter() - start
        self.state["train_seconds"] += seconds
        record.update(tokens_per_s=record["tokens"] / seconds, train_seconds=round(self.state["train_seconds"], 3),
                      hardware=self.hardware)
        return record

    def _agreed_stop(self, stop: dict) -> str | None:
        """Why to stop after this update, if at all — read once: a signal landing later (while this update is
        measured, or after the processes agreed) stops the next update, on every process alike."""
        stopped = next(iter(stop.values()), None)
        if self.world > 1:  # every process stops at the same update
            flag = torch.tensor([float(stopped is not None)], device=self.device)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            if flag.item() and stopped is None:
                stopped = "another process stopped"
        return stopped

    def _keep(self, record: dict, stopped: str | None) -> None:
        """Log the update's line and write a checkpoint where the recipe (or a stop) asks for one."""
        cfg, update = self.cfg, record["update"]
        if update % cfg.log_every == 0 or "valid_loss" in record or "stsb_dev" in record or stopped:
            self._log(record)
        if (update % cfg.save_every == 0 or update == cfg.max_updates or stopped) and self.rank == 0:
            write_checkpoint(self.run_dir, self.model, self.tokenizer,
                             {"train": asdict(cfg), "data_sha256": self.data.digest}, self.optimizer,
                             self.state, cfg.keep_checkpoints)
