import gzip
import json
import re
import unicodedata

import pytest
from hypothesis import given, strategies as st

from workbench.data import corpora, splitting
from workbench.checks import DataFormatError, WorkbenchError


def write_gz(path, lines: bytes):
    with gzip.open(path, "wb") as f:
        f.write(lines)
    return path


@pytest.mark.parametrize("content, message", [
    (b"a b c\tx y z\nonly one column\n", "1 tab-separated columns"),
    (b"a b c\tx y z\na\tb\tc\n", "3 tab-separated columns"),
    (b"a b c\tx y z\n\tx y z\n", "empty English side"),
    (b"a b c\t  \n", "empty foreign side"),
    (b"a b c\tx y z\nbad \xff byte\tx\n", "undecodable bytes"),
])
def test_read_pairs_rejects_bad_lines_with_file_and_line(tmp_path, content, message):
    path = write_gz(tmp_path / "en-xx.tsv.gz", content)
    with pytest.raises(DataFormatError, match=message) as info:
        corpora.read_pairs(path)
    bad_line = 1 if content.startswith(b"a b c\t  ") else 2
    assert info.value.line == bad_line and str(path) in str(info.value)


def test_a_damaged_or_cut_gzip_file_is_named_with_the_line_it_broke_at(tmp_path):
    whole = gzip.compress(b"".join(b"sentence %d\tphrase %d\n" % (i, i) for i in range(20_000)))
    for name, data in (("cut.tsv.gz", whole[: len(whole) // 2]), ("plain.tsv.gz", b"not gzip at all\n")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(DataFormatError, match=f"{name}:\\d+: not readable as gzip .*download it again"):
            corpora.read_pairs(tmp_path / name)


def test_a_pair_without_a_corpus_says_how_to_register_one_and_lists_the_known():
    with pytest.raises(WorkbenchError, match=r"no corpus for the language pair en-de: register .*`workbench data "
                                             r"add-pair en-de --corpus FILE`.*known pairs: en-fr, en-es, en-ar"):
        corpora.corpus_path("en-deu")


def test_real_counts_match_sources():
    # the counts the data folder's parallel/SOURCES.md gives (after the evaluation-overlap pass)
    assert len(corpora.read_pairs(corpora.corpus_path("en-tr"))) == 51_259
    assert len(corpora.read_pairs(corpora.corpus_path("en-ar"))) == 37_278


def test_length_filter_counts_tokens_per_side():
    pairs = [("one two", "un deux trois"), ("one two three", "un deux trois"),
             ("a " * 101, "b c d"), ("one two three four five", "un deux")]
    assert corpora.filter_by_length(pairs, "fr", 3, 100) == [("one two three", "un deux trois")]
    assert corpora.filter_by_length(pairs, "fr", 2, 100) == pairs[:2] + [pairs[3]]
    # Japanese is measured in characters, up to twice the token maximum
    assert corpora.filter_by_length([("one two three", "日本語")], "ja", 3, 100) == [("one two three", "日本語")]


def test_components_sharing_a_translation_stay_together():
    # Different English sentences with one shared French translation: one component, one split.
    pairs = [(f"english sentence number {i}", f"phrase {i // 2}") for i in range(4000)]
    splits = splitting.split_pairs(pairs)
    where = {pair: name for name, rows in splits.items() for pair in rows}
    for i in range(0, 4000, 2):
        assert where[pairs[i]] == where[pairs[i + 1]]
    assert 0 < len(splits["probe"]) < len(splits["train"])


def test_split_is_deterministic_and_disjoint_on_real_data():
    pairs = corpora.read_pairs(corpora.corpus_path("en-ar"))
    first, second = splitting.split_pairs(pairs), splitting.split_pairs(list(pairs))
    assert first == second
    owner_en, owner_xx = {}, {}
    for name, rows in first.items():
        for en, xx in rows:
            assert owner_en.setdefault(splitting.normalise(en), name) == name
            assert owner_xx.setdefault(splitting.normalise(xx), name) == name
    sizes = {k: len(v) for k, v in first.items()}
    assert sum(sizes.values()) == len(pairs) and sizes["train"] > 0.75 * len(pairs)


def test_probe_pool_is_never_trained_on_by_any_pair():
    pool = {splitting.normalise(s) for s in corpora.probe_pool()}
    assert len(pool) > 50_000
    for pair in corpora.PAIRS:
        train = corpora.load_splits(pair)["train"]
        assert not any(splitting.normalise(en) in pool for en, _ in train), pair


def test_a_split_is_computed_once_per_home_and_a_damaged_stored_one_is_computed_again(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    monkeypatch.setattr(corpora, "SHIPPED_SPLITS", tmp_path / "none shipped")
    corpora._load_splits.cache_clear()
    first = corpora.load_splits("en-tr")
    assert first == splitting.split_pairs(corpora.filter_by_length(corpora.read_pairs(corpora.corpus_path("en-tr")),
                                                                 "tr", 3, 100))
    [stored] = (tmp_path / "splits").glob("en-tr-*.npy")
    corpora._load_splits.cache_clear()  # a new process: the split is read, not computed
    monkeypatch.setattr(corpora, "split_codes", lambda *args: pytest.fail("computed again"))
    assert corpora.load_splits("en-tr") == first
    stored.write_bytes(stored.read_bytes()[:-10])  # cut short: computed again (and stored whole)
    corpora._load_splits.cache_clear()
    monkeypatch.undo()
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    monkeypatch.setattr(corpora, "SHIPPED_SPLITS", tmp_path / "none shipped")
    assert corpora.load_splits("en-tr") == first and len(corpora._read_codes(stored, sum(map(len, first.values()))))
    corpora._load_splits.cache_clear()


def test_the_shipped_splits_are_each_pairs_split_computed_afresh_and_a_damaged_one_is_not_used(
        monkeypatch, tmp_path, caplog):
    """A fresh home reads the shipped pairs' splits from the package (workbench/probes/splits/) instead of computing
    the translation components; each is the split computed from its corpus today, and an edited one is not read."""
    import shutil
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "home"))
    manifest = json.loads((corpora.SHIPPED_SPLITS / "manifest.json").read_text())
    assert len(manifest["files"]) == len(corpora.PAIRS)
    for pair in corpora.PAIRS:
        pairs = corpora.filter_by_length(corpora.read_pairs(corpora.corpus_path(pair)), pair.split("-")[1], 3, 100)
        name = corpora._split_file(pair, 3, 100, splitting.SplitConfig()).name
        assert name + ".gz" in manifest["files"], pair  # named by the corpus's digest: today's corpus has one
        shipped = corpora._stored_codes(tmp_path / "home" / "splits" / name, len(pairs))
        assert (shipped == splitting.split_codes(pairs)).all(), pair
    copy, original = tmp_path / "splits", corpora.SHIPPED_SPLITS
    shutil.copytree(original, copy)
    monkeypatch.setattr(corpora, "SHIPPED_SPLITS", copy)
    target = copy / (name + ".gz")
    codes = bytearray(gzip.decompress(target.read_bytes()))
    codes[-1] = (codes[-1] + 1) % len(splitting.SPLITS)  # another split for one pair, gzipped whole again
    target.write_bytes(gzip.compress(bytes(codes)))
    assert corpora._stored_codes(tmp_path / "home" / "splits" / name, len(pairs)) is None
    assert "does not match its sha256" in caplog.text
    corpora.ship_splits()  # from an empty home: the damaged one computed again, the others read from the package
    corpora._load_splits.cache_clear()
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in original.iterdir())
    assert all((copy / f).read_bytes() == (original / f).read_bytes() for f in manifest["files"])  # the same bytes


def test_data_info_counts_each_split_from_the_stored_split_and_reads_a_corpus_only_without_one(monkeypatch, tmp_path):
    """The pairs per split (``workbench data info``) as :func:`load_splits` gives them, counted from the split stored
    for the corpus (the package's, or the home's) without reading it; a pair with none (or a damaged one) is read
    and split, and its split stored for the next time."""
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "home"))
    splits = corpora.load_splits("en-ar")
    expected = {name: len(rows) for name, rows in splits.items()} | {"total": sum(map(len, splits.values()))}
    assert list(expected) == [*splitting.SPLITS, "total"] and min(expected.values()) > 0
    real, read = corpora.read_pairs, []
    monkeypatch.setattr(corpora, "read_pairs", lambda path: read.append(path) or real(path))
    corpora._load_splits.cache_clear()
    assert corpora.split_summary("en-ar") == expected and read == []  # the package's split
    (tmp_path / "none").mkdir()
    monkeypatch.setattr(corpora, "SHIPPED_SPLITS", tmp_path / "none")
    assert corpora.split_summary("en-ar") == expected and read == [corpora.corpus_path("en-ar")]  # split afresh
    corpora._load_splits.cache_clear()
    assert corpora.split_summary("en-ar") == expected and len(read) == 1  # ... and stored in the home
    stored = corpora._split_file("en-ar", 3, 100, splitting.SplitConfig())
    stored.write_bytes(stored.read_bytes()[:-7])  # cut short
    assert corpora.split_summary("en-ar") == expected and len(read) == 2
    corpora._load_splits.cache_clear()


def test_counting_a_pair_whose_corpus_is_missing_says_where_it_was_looked_for(monkeypatch, tmp_path):
    for folder in ("parallel", "eval"):
        (tmp_path / "data" / folder).mkdir(parents=True)
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path / "data"))
    with pytest.raises(FileNotFoundError, match="no corpus file at .*en-ar.tsv.gz .*workbench data download opus"):
        corpora.split_summary("en-ar")


def _regex_key(sentence: str) -> str:
    return re.sub(r"\W+", "", unicodedata.normalize("NFKC", sentence).lower())


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_the_ascii_path_of_the_leakage_key_is_the_regex_key(text):
    assert splitting.normalise(text) == _regex_key(text)


def test_the_leakage_key_of_real_sentences_is_the_regex_key():
    sentences = [s for pair in corpora.PAIRS for en_xx in corpora.load_splits(pair)["test"][:3000] for s in en_xx]
    assert sum(s.isascii() for s in sentences) > 1000 and sum(not s.isascii() for s in sentences) > 1000
    assert [splitting.normalise(s) for s in sentences] == [_regex_key(s) for s in sentences]
