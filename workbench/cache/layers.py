"""A network's layers into the embedding cache from one forward pass, each layer streamed to its own entry.

A sweep over every layer of a large model would need ``sentences × width × layers`` floats if each layer's array
were made whole first (33 layers of a 4096-wide model on the 65,067-sentence probe pool: ~35 GB). Instead each
layer's entry is a :class:`StreamedEntry`: the encoder pools a batch and writes its rows straight to their places
in the entry's file, so what is held is the model, one batch and its pooled rows. The finished file is the same
safetensors entry :class:`~workbench.cache.embeddings.CachedEncoder` writes (float32) and reads back, checksum
and all; a probe then reads one layer's array at a time.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import numpy as np
from filelock import FileLock

from ..checks import WorkbenchError, check_sentences
from ..paths import process_rank
from .embeddings import CachedEncoder, cached

CHUNK = 1 << 24  # bytes read at a time to checksum a finished entry


class StreamedEntry:
    """The cache entry of ``view`` for ``sentences``, filled block by block in any order (``entry[index] = rows``,
    as ``encode_layers`` fills its output arrays): each row goes to its place in a temporary file beside the
    entry; :meth:`close` checksums the rows from disk, writes the header and moves the file into place. Left
    without ``close`` (an error, a kill), the temporary file is removed (or found by ``workbench cache clear --stale``)."""

    def __init__(self, view: CachedEncoder, sentences: Sequence[str], shared: str | None = None):
        """``shared``: the temporary file another process made for this entry, to write rows into beside it."""
        self.view, self.n, self.path = view, len(sentences), view.path_for(sentences)
        self.row_bytes = 4 * view.dim
        self.header = self._header("0" * 64)  # the real digest has the same length, so the rows never move
        self.filled = np.zeros(self.n, dtype=bool)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp") if shared is None else Path(shared)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.tmp, "wb+" if shared is None else "rb+")
        if shared is None:
            self.handle.truncate(len(self.header) + self.n * self.row_bytes)

    def _header(self, sha256: str) -> bytes:
        """safetensors' header: its length (8 bytes, little-endian), then JSON, padded with spaces to 8 bytes."""
        body = json.dumps({"__metadata__": self.view.metadata(self.path, sha256, self.n), "embeddings": {
            "dtype": "F32", "shape": [self.n, self.view.dim], "data_offsets": [0, self.n * self.row_bytes]}},
            separators=(",", ":")).encode()
        body += b" " * (-len(body) % 8)
        return len(body).to_bytes(8, "little") + body

    def __setitem__(self, index, rows) -> None:
        index = np.asarray(index, dtype=np.int64)
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        if rows.shape != (len(index), self.view.dim):
            raise WorkbenchError(f"encoder {self.view.name!r} gave rows of shape {rows.shape} for {len(index)} "
                                 f"sentences; expected ({len(index)}, {self.view.dim})")
        finite = np.isfinite(rows).all(axis=1)
        if not finite.all():
            raise WorkbenchError(f"encoder {self.view.name!r} returned NaN/inf for {int((~finite).sum())} of "
                                 f"{len(index)} sentences of a batch (sentence {int(index[~finite][0])} first)")
        start, fd = len(self.header), self.handle.fileno()
        for i, row in zip(index.tolist(), rows):
            os.pwrite(fd, row, start + i * self.row_bytes)
        self.filled[index] = True

    def close(self) -> None:
        """Checksum the rows, write the header, move the entry into place (every row must have been written)."""
        try:
            if not self.filled.all():
                raise WorkbenchError(f"{(~self.filled).sum()} of {self.n} rows of {self.path.name} were never "
                                     "written")
            self.handle.close()  # opened again: what other processes wrote is read as they left it (NFS too)
            self.handle = open(self.tmp, "rb+")
            digest, fd = hashlib.sha256(), self.handle.fileno()
            for offset in range(len(self.header), len(self.header) + self.n * self.row_bytes, CHUNK):
                digest.update(os.pread(fd, CHUNK, offset))
            header = self._header(digest.hexdigest())
            assert len(header) == len(self.header)
            os.pwrite(fd, header, 0)
            self.handle.close()
            self.view.claim()
            os.replace(self.tmp, self.path)
        except BaseException:
            self.handle.close()
            self.tmp.unlink(missing_ok=True)
            raise

    def __enter__(self) -> "StreamedEntry":
        return self

    def __exit__(self, *error) -> None:
        if not self.handle.closed:
            self.handle.close()
            self.tmp.unlink(missing_ok=True)

    def leave(self) -> None:
        """Stop writing, the rows on disk, leaving the file to the process that made it (which closes it)."""
        os.fsync(self.handle.fileno())
        self.handle.close()


def _takes(encoder, *names: str) -> bool:
    """Whether ``encoder.encode_layers`` takes ``out`` (rows written where it is told) and ``part`` (a share of the
    batches); older or foreign layered encoders return their arrays whole, which are stored as before."""
    try:
        parameters = inspect.signature(encoder.encode_layers).parameters
    except (TypeError, ValueError):
        return False
    return all(name in parameters for name in names)


def cache_layers(encoder, sentences: Sequence[str], layers: Sequence[int], show_progress: bool = False
                 ) -> list[CachedEncoder]:
    """The cached encoder of each of ``layers`` of ``encoder`` (one that offers ``at_layer`` and
    ``encode_layers``), with ``sentences`` stored for each: the layers not cached yet come from one forward pass
    of the network, not one pass per layer, each streamed to its entry as it is pooled. Under torchrun, every
    process encodes its share of the batches into the same entries (the entries one process would write)."""
    sentences = check_sentences(sentences)
    views = [cached(encoder.at_layer(layer)) for layer in layers]
    rank, world = process_rank()
    if world > 1 and _takes(encoder, "out", "part"):
        _shared_pass(encoder, sentences, views, rank, world, show_progress)
        return views
    # one view per entry: two layer numbers may name one entry (a Hugging Face model's -1 and its top layer)
    missing = list({view.path_for(sentences): view for view in views if not view.holds(sentences)}.values())
    if not missing or rank > 0:  # a process of several that cannot share the pass leaves it to the first
        return views
    if not _takes(encoder, "out"):
        arrays = encoder.encode_layers(sentences, [view.encoder.layer for view in missing],
                                       show_progress=show_progress)
        for view in missing:
            view.store(sentences, arrays[view.encoder.layer])
        return views
    with ExitStack() as stack:  # every missing entry locked while the pass runs: another process waits, then reads
        for view in missing:
            view.path_for(sentences).parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(FileLock(f"{view.path_for(sentences)}.lock"))
        entries = {view.encoder.layer: stack.enter_context(StreamedEntry(view, sentences))
                   for view in missing if not view.holds(sentences)}
        if entries:
            encoder.encode_layers(sentences, list(entries), show_progress=show_progress, out=entries)
            for entry in entries.values():
                entry.close()
    return views


def _shared_pass(encoder, sentences: list[str], views: list[CachedEncoder], rank: int, world: int,
                 show_progress: bool) -> None:
    """torchrun's processes write one pass into the same entries: the first decides which are missing and makes
    their temporary files, each process encodes every world-th batch into them, and the first, once every row is
    written, finishes the files; no process goes on before the entries are in place."""
    import torch  # only under torchrun
    dist = torch.distributed
    with ExitStack() as stack:  # the first process's files go if anything fails
        entries = {}
        if rank == 0:
            entries = {view.encoder.layer: stack.enter_context(StreamedEntry(view, sentences))
                       for view in views if not view.holds(sentences)}
        made = [{layer: str(entry.tmp) for layer, entry in entries.items()}]
        dist.broadcast_object_list(made, src=0)
        if rank > 0:
            view_of = {view.encoder.layer: view for view in views}
            entries = {layer: StreamedEntry(view_of[layer], sentences, shared=tmp) for layer, tmp in made[0].items()}
        if entries:
            encoder.encode_layers(sentences, list(entries), show_progress=show_progress, out=entries,
                                  part=(rank, world))
        for entry in entries.values():
            filled = torch.from_numpy(entry.filled.astype(np.int32))  # on the CPU: gloo's side of the group
            dist.all_reduce(filled)  # each row written by one process or another
            entry.filled = filled.numpy() > 0
            if rank > 0:
                entry.leave()
        dist.barrier()
        for entry in entries.values() if rank == 0 else ():
            entry.close()
        dist.barrier()
