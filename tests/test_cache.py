"""The embedding cache: hits, misses, corruption, two processes at once, float16 storage, results cache."""
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest

from workbench import cache
from workbench.cache import CachedEncoder, cached, remember
from workbench.cli import main
from workbench.probing.build import build_task
from workbench.probing.probe import probe

SENTENCES = ["A man is playing a guitar.", "A woman slices an onion.", "Tom is here.", "Is it raining?"]


class CountingEncoder:
    """Deterministic features of the text; counts how many sentences it was asked to encode."""

    def __init__(self, name="counting", dim=16, salt=""):
        self.name, self.dim, self.fingerprint, self.calls = name, dim, f"{name}-{dim}-{salt}", 0

    def encode(self, sentences, batch_size=256, show_progress=False):
        self.calls += 1
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        for row, s in enumerate(sentences):
            out[row] = np.random.default_rng(zlib.crc32(s.encode())).standard_normal(self.dim)
            out[row, 0] = len(s.split())
        return out


def test_hit_never_reencodes_and_keys_on_sentences_and_fingerprint():
    inner = CountingEncoder(salt="hits")
    enc = cached(inner)
    first = enc.encode(SENTENCES)
    again = enc.encode(SENTENCES)
    assert inner.calls == 1 and (enc.hits, enc.misses) == (1, 1)
    np.testing.assert_allclose(again, first, rtol=1e-3, atol=1e-3)  # float16 storage
    assert again.dtype == np.float32
    enc.encode(SENTENCES[::-1])  # another list (order matters) is another entry
    assert inner.calls == 2
    other = cached(CountingEncoder(salt="changed weights"))
    other.encode(SENTENCES)
    assert other.misses == 1
    assert cached(enc) is enc and enc.name == inner.name and enc.fingerprint == inner.fingerprint


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_corrupted_entry_is_reported_and_recomputed(damage, caplog):
    inner = CountingEncoder(salt=f"corrupt-{damage}")
    enc = cached(inner, dtype="float32")
    good = enc.encode(SENTENCES)
    path = enc.path_for(SENTENCES)
    raw = bytearray(path.read_bytes())
    if damage == "flip":
        raw[-5] ^= 0xFF  # inside the array bytes
    else:
        raw = raw[: len(raw) // 2]
    path.write_bytes(bytes(raw))
    fresh = cached(inner, dtype="float32")
    np.testing.assert_array_equal(fresh.encode(SENTENCES), good)
    assert inner.calls == 2 and fresh.misses == 1
    assert "is corrupt" in caplog.text and str(path) in caplog.text
    assert fresh.encode(SENTENCES) is not None and fresh.hits == 1  # the rewritten entry is good


def test_two_processes_writing_the_same_entry_encode_once(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        import numpy as np
        from workbench.cache import cached

        class Slow:
            name, dim, fingerprint = "slow", 8, "slow-encoder-fingerprint"
            def encode(self, sentences, batch_size=256, show_progress=False):
                time.sleep(2)
                return np.ones((len(sentences), 8), dtype=np.float32) * len(sentences)

        enc = cached(Slow())
        out = enc.encode({SENTENCES!r})
        print("miss" if enc.misses else "hit", float(out.sum()))
    """))
    workers = [subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    outputs = sorted(w.communicate(timeout=120)[0].split()[0] for w in workers)
    assert all(w.returncode == 0 for w in workers)
    assert outputs == ["hit", "miss"]  # the second waited on the lock and read the first one's entry


def test_float16_storage_leaves_probe_accuracy_unchanged():
    task = build_task("length", sizes={"train": 1500, "valid": 300, "test": 300})
    inner = CountingEncoder(dim=32, salt="fp16")
    stored_16 = probe(CachedEncoder(inner, dtype="float16"), task, control=False, cache=False)
    direct = probe(inner, task, control=False, cache=False)
    assert abs(stored_16.accuracy - direct.accuracy) <= 0.005
    overflow = CachedEncoder(CountingEncoder(salt="big"))
    big = np.full((2, 16), 1e6, dtype=np.float32)
    overflow._write(overflow.path_for(["x", "y"]), big)  # beyond float16: stored as float32
    np.testing.assert_array_equal(overflow._read(overflow.path_for(["x", "y"]), 2), big)


def test_results_are_remembered_until_refreshed():
    calls = []

    def compute():
        calls.append(1)
        return {"value": len(calls)}

    key = {"task": "x", "version": 1}
    assert remember("test", "f" * 64, key, compute) == {"value": 1}
    assert remember("test", "f" * 64, key, compute) == {"value": 1} and len(calls) == 1
    assert remember("test", "f" * 64, {**key, "version": 2}, compute) == {"value": 2}
    assert remember("test", "f" * 64, key, compute, refresh=True) == {"value": 3}


def test_probe_twice_is_answered_from_the_caches():
    task = build_task("length", sizes={"train": 1500, "valid": 300, "test": 300})
    inner = CountingEncoder(salt="probe-twice")
    first = probe(inner, task)
    second = probe(inner, task)
    assert inner.calls == 1 and first == second
    refit = probe(inner, task, refit=True)  # classifier retrained on cached embeddings
    assert inner.calls == 1 and refit.accuracy == first.accuracy


def test_cache_ls_and_clear_commands(capsys):
    enc = cached(CountingEncoder(name="listed-encoder", salt="ls"))
    enc.encode(SENTENCES)
    assert main(["cache", "ls"]) == 0
    out = capsys.readouterr().out
    assert "listed-encoder" in out and "MiB" in out
    summary = cache.cache_summary()
    assert summary.loc[summary["encoder"] == "listed-encoder", "n_sentences"].item() == len(SENTENCES)
    assert main(["cache", "clear", "--encoder", "listed-encoder"]) == 0
    assert "listed-encoder" not in set(cache.cache_summary()["encoder"])
    assert not enc.path_for(SENTENCES).exists()
