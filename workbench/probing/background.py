"""Probing sets built by another process while this one encodes and probes (the demo's first run).

Building is Python (reading parses, the builders, detokenising) and encoding and fitting are mostly torch's own
threads, but between torch's operations they need Python's lock, which a building thread beside them held: on 2
cores the demo's first run took 80 and 81 s with the sets built by a process, 87 and 91 s by a thread, 97 and 82 s
built before the probes (each run after the other, twice). The other process is a plain ``python -m`` of this
module (not ``multiprocessing``, whose "spawn" runs the caller's script again where it lacks a ``__main__`` guard);
it prints each task's name once its set is stored, and the caller reads the set from the cache.

    python -m workbench.probing.background SIZES_JSON TASK [TASK ...]
"""
from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

from ..checks import WorkbenchError, check_sizes
from .build import build_task


class SetBuilder:
    """``with SetBuilder(tasks, sizes) as sets: sets[task].result()`` waits until ``task``'s set is stored (in the
    order given); a failed build fails that task's future and those after it, with the other process's last
    words. Leaving the block (or :meth:`stop`) stops the other process if it is still building."""

    def __init__(self, tasks: Sequence[str], sizes: dict[str, int]):
        self.tasks, self.sizes = list(tasks), check_sizes(sizes)  # refused here, not in the other process
        self.futures: dict[str, Future] = {task: Future() for task in self.tasks}

    def __getitem__(self, task: str) -> Future:
        return self.futures[task]

    def __enter__(self) -> "SetBuilder":
        package_root = str(Path(__file__).resolve().parents[2])  # the child imports the same workbench
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH"))
                                                           if p)}
        self.process = subprocess.Popen([sys.executable, "-m", __name__, json.dumps(self.sizes), *self.tasks],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.reader = threading.Thread(target=self._read, name="set-builder", daemon=True)
        self.reader.start()
        return self

    def _read(self) -> None:
        said = bytearray()  # the end of what the other process wrote to stderr, which goes on to ours as it comes
        drain = threading.Thread(target=self._pass_on, args=(said,), daemon=True)
        drain.start()
        for line in self.process.stdout:
            task = line.decode().strip()
            if task in self.futures:
                self.futures[task].set_result(task)
        code = self.process.wait()
        drain.join()
        failure = WorkbenchError(f"building the probing sets in another process stopped (exit {code}): "
                                 + said.decode(errors="replace").strip())
        for future in self.futures.values():
            if not future.done():
                future.set_exception(failure)

    def _pass_on(self, said: bytearray) -> None:
        """Its progress bars and warnings shown here as they come (a first build that parses takes minutes)."""
        text = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character may span two reads
        for chunk in iter(lambda: os.read(self.process.stderr.fileno(), 4096), b""):
            sys.stderr.write(text.decode(chunk))
            sys.stderr.flush()
            said += chunk
            del said[:-4000]

    def stop(self) -> None:
        """Stop building (the sets not yet stored fail): what waits on them hears at once."""
        if self.process.poll() is None:
            self.process.terminate()

    def __exit__(self, *exc) -> None:
        self.stop()
        self.reader.join()


def main(argv: Sequence[str]) -> None:
    sizes, tasks = json.loads(argv[0]), argv[1:]
    for task in tasks:
        build_task(task, sizes=sizes)
        print(task, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
