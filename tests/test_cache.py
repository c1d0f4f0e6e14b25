"""The embedding cache: hits, misses, corruption, two processes at once, float16 storage, results cache."""
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest

from workbench import cache
from workbench.cache import cached, CachedEncoder, remember
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
    np.testing.assert_array_equal(again, first)  # float32 storage: a hit returns exactly what was encoded
    assert again.dtype == np.float32
    enc.encode(SENTENCES[::-1])  # another list (order matters) is another entry
    assert inner.calls == 2
    other = cached(CountingEncoder(salt="changed weights"))
    other.encode(SENTENCES)
    assert other.misses == 1
    assert cached(enc) is enc and enc.name == inner.name and enc.fingerprint == inner.fingerprint


@pytest.mark.parametrize("damage", ["flip", "truncate", "append", "header", "dtype", "not-an-object", "shape"])
def test_corrupted_entry_is_reported_and_recomputed(damage, caplog):
    inner = CountingEncoder(salt=f"corrupt-{damage}")
    enc = cached(inner, dtype="float32")
    good = enc.encode(SENTENCES)
    path = enc.path_for(SENTENCES)
    raw = bytearray(path.read_bytes())
    if damage == "flip":
        raw[-5] ^= 0xFF  # inside the array bytes
    elif damage == "truncate":
        raw = raw[: len(raw) // 2]
    elif damage == "append":
        raw += b"\0" * 8  # bytes past the tensor
    elif damage == "header":
        raw[:8] = (1 << 40).to_bytes(8, "little")  # a header length no entry has
    elif damage == "dtype":
        raw = raw.replace(b'"F32"', b'"I32"')  # a dtype the cache never writes
    elif damage == "not-an-object":
        size = int.from_bytes(raw[:8], "little")
        raw[8:8 + size] = b'"x"' + b" " * (size - 3)  # JSON, but no header
    else:  # a shape (and offsets) far larger than the file: refused before anything is allocated
        raw = raw.replace(b'"shape":[', b'"shape":[99999999').replace(b'"data_offsets":[0,', b'"data_offsets":[0,9')
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


class ScaledEncoder(CountingEncoder):
    """CountingEncoder's vectors times ``scale`` plus ``offset``: outputs float16 cannot hold exactly."""

    def __init__(self, scale, offset, salt):
        super().__init__(dim=32, salt=salt)
        self.scale, self.offset = scale, offset

    def encode(self, sentences, batch_size=256, show_progress=False):
        return (super().encode(sentences) * self.scale + self.offset).astype(np.float32)


@pytest.mark.parametrize("scale, offset", [(1e-9, 0.0), (1.0, 2e4)])
def test_tiny_or_offset_outputs_come_back_from_the_cache_exactly(scale, offset):
    task = build_task("length", sizes={"train": 1500, "valid": 300, "test": 300})
    inner = ScaledEncoder(scale, offset, salt=f"scaled-{scale}-{offset}")
    direct = probe(inner, task, control=False, cache=False)
    via_cache = probe(inner, task, control=False)
    assert via_cache.accuracy == direct.accuracy
    for dtype in ("float32", "float16"):  # float16 is refused where it would move a vector
        enc = CachedEncoder(ScaledEncoder(scale, offset, salt=f"{dtype}-{scale}"), dtype=dtype)
        first = enc.encode(SENTENCES)
        np.testing.assert_array_equal(enc.encode(SENTENCES), first)
        assert enc.hits == 1


def test_float16_storage_is_used_only_where_it_is_exact_enough():
    normal = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    assert cache.float16_is_exact(normal)
    assert not cache.float16_is_exact(normal * 1e-9) and not cache.float16_is_exact(normal + 2e4)


def test_an_entry_file_swapped_into_another_entrys_place_is_not_returned(caplog):
    enc = cached(CountingEncoder(salt="swap"))
    a, b = enc.encode(SENTENCES), enc.encode(SENTENCES[::-1])
    path_a, path_b = enc.path_for(SENTENCES), enc.path_for(SENTENCES[::-1])
    data_a, data_b = path_a.read_bytes(), path_b.read_bytes()
    path_a.write_bytes(data_b)
    path_b.write_bytes(data_a)
    np.testing.assert_array_equal(enc.encode(SENTENCES), a)
    np.testing.assert_array_equal(enc.encode(SENTENCES[::-1]), b)
    assert enc.misses == 4 and "another sentence list" in caplog.text


def test_a_bare_string_is_refused_rather_than_encoded_character_by_character():
    from workbench.models.untrained import untrained_encoder
    from workbench.checks import WorkbenchError
    for encoder in (untrained_encoder("random-sp-average"), cached(CountingEncoder(salt="bare"))):
        with pytest.raises(WorkbenchError, match="a list of sentences, not one string"):
            encoder.encode("hello world")
    with pytest.raises(WorkbenchError, match="item 1 is a int"):
        cached(CountingEncoder(salt="bare")).encode(["fine", 3])


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
    assert second.control.kind == "first_word" and second.selectivity == first.selectivity  # its parts, read back
    refit = probe(inner, task, refit=True)  # classifier retrained on cached embeddings
    assert inner.calls == 1 and refit.accuracy == first.accuracy


def test_cache_ls_and_clear_commands(capsys):
    enc = cached(CountingEncoder(name="listed-encoder", salt="ls"))
    enc.encode(SENTENCES)
    assert main(["cache", "ls"]) == 0
    out = capsys.readouterr().out
    assert "listed-encoder" in out and "MiB" in out
    (cache.cache_dir() / "0123456789abcdef").mkdir()  # a folder that holds nothing is no row
    summary = cache.cache_summary()
    assert summary.loc[summary["encoder"] == "listed-encoder", "n_sentences"].item() == len(SENTENCES)
    assert "0123456789abcdef" not in set(summary["fingerprint"])
    assert main(["cache", "clear", "--encoder", "listed-encoder"]) == 0
    assert "listed-encoder" not in set(cache.cache_summary()["encoder"])
    assert not enc.path_for(SENTENCES).exists()


def test_an_evaluation_is_recomputed_when_its_gold_scores_change(tmp_path, monkeypatch):
    import shutil

    from workbench.evaluation import evaluate
    from workbench.paths import data_dir
    shutil.copytree(data_dir() / "eval" / "sts", tmp_path / "eval" / "sts")
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path))
    encoder = CountingEncoder(salt="gold")

    def sts12():
        rows = evaluate(encoder, "sts")
        return rows[(rows.task == "STS12") & (rows.dataset == "MSRvid")]["value"].iloc[0]

    before = sts12()
    assert encoder.calls == 5  # the five years' sentences, each year an entry of its own (STS16 alone reads its one)
    assert sts12() == before and encoder.calls == 5  # the second answer came from the results cache
    gold = tmp_path / "eval" / "sts" / "STS12" / "MSRvid.tsv"
    header, *lines = gold.read_text().splitlines()
    flipped = [f"{5 - float(line.split(chr(9))[0]):.3f}\t{line.split(chr(9), 1)[1]}" for line in lines]
    gold.write_text("\n".join([header, *flipped]) + "\n")
    assert sts12() == pytest.approx(-before)  # reversed gold scores: the correlation changes sign


def test_sts16_alone_reads_what_sts12_16_encoded():
    """The STS years are cached one entry a year: a quick STS16 comparison after the cards' STS12–16 (or the
    reverse) encodes nothing again."""
    from workbench.evaluation import compare_sts, evaluate
    encoder = CountingEncoder(salt="years")
    every_year = evaluate(encoder, "sts")
    assert encoder.calls == 5
    alone = compare_sts(encoder, CountingEncoder(salt="years"), years=(2016,), n_boot=100)
    assert encoder.calls == 5 and alone["difference"].tolist() == [0.0]  # the same vectors on either side
    sts16 = every_year.query("task == 'STS16' and dataset == 'all' and metric == 'pearson'")["value"].item()
    from workbench.evaluation.sts import evaluate_sts
    assert evaluate_sts(cached(encoder), years=(2016,)).query(
        "task == 'STS16' and dataset == 'all' and metric == 'pearson'")["value"].item() == sts16
    assert encoder.calls == 5
