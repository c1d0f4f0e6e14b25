import re
from pathlib import Path

import pytest

from workbench.data import eval_sets, sts
from workbench.checks import DataFormatError, UnknownNameError
from workbench.paths import data_dir


def sources_counts() -> dict[str, int]:
    text = (data_dir() / "eval" / "SOURCES.md").read_text()
    return {m[1]: int(m[2]) for m in re.finditer(r"^\| (\S+\.tsv) \| (\d+) \|", text, re.M)}


def test_row_counts_match_sources():
    counts = sources_counts()
    for year, names in eval_sets.STS_DATASETS.items():
        for name, frame in sts.load_sts(year).items():
            assert len(frame) == counts[f"sts/STS{year % 100}/{name}.tsv"], (year, name)
    for track, (file, _, _) in eval_sets.STS17_TRACKS.items():
        assert len(sts.load_sts17(track)[0]) == counts[f"sts17/{file}"]
    for split in eval_sets.STSB_SPLITS:
        assert len(sts.load_stsb(split)) == counts[f"stsb/{split}.tsv"]
    for kind in eval_sets.HARD_STS:
        assert len(sts.load_sts_hard(kind)) == counts[f"sts_hard/{kind}.tsv"]
    for lang, code in eval_sets.TATOEBA_CODES.items():
        assert len(sts.load_tatoeba(lang)) == counts[f"tatoeba/{code}-eng.tsv"]


def test_quotes_do_not_merge_lines():
    # MSRpar has sentences with '"' that default csv quoting would merge
    frame = sts.load_sts(2012)["MSRpar"]
    assert frame["sentence1"].str.contains('"').any() and len(frame) == 750


def test_sts17_column_order():
    frame, lang1, lang2 = sts.load_sts17("en-ar")
    assert (lang1, lang2) == ("en", "ar")
    assert re.search(r"[a-zA-Z]", frame["sentence1"][0]) and re.search(r"[\u0600-\u06ff]", frame["sentence2"][0])


@pytest.mark.parametrize("content, message", [
    ("score\tsentence1\n1\ta\n", "header"),
    ("score\tsentence1\tsentence2\n1.0\ta\n", "2 tab-separated columns"),
    ("score\tsentence1\tsentence2\nhigh\ta\tb\n", "not a number"),
    ("score\tsentence1\tsentence2\n7\ta\tb\n", "out of range"),
    ("score\tsentence1\tsentence2\n3\ta\t \n", "empty field"),
])
def test_malformed_files_name_file_and_line(tmp_path, content, message):
    path = Path(tmp_path) / "bad.tsv"
    path.write_text(content)
    with pytest.raises(DataFormatError, match=message) as info:
        sts.read_scored_pairs(path)
    assert info.value.line in (1, 2) and info.value.path == path


def test_unknown_names():
    with pytest.raises(UnknownNameError, match="valid: ar, es, fr, ja, tr"):
        sts.load_tatoeba("de")
    with pytest.raises(ValueError, match="valid: 2012"):
        sts.load_sts(2017)
