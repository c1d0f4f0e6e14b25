"""Your own bitext as a language pair: named by ISO code, checked whole before anything is written, registered
once, given its language's tasks, and trained and probed from the command line like a shipped pair.

No bitext of a language outside the shipped five is available offline, so the corpus here is real Standard Arabic
from the shared en-ar file, registered under Standard Arabic's own ISO 639-3 code (``arb``; the shipped pair uses
the macrolanguage's ``ar``): every step runs on real sentences, in a pair the workbench does not ship.
"""
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from conftest import own_home, registered_pivot
from workbench.checks import WorkbenchError
from workbench.data.corpora import corpus_path
from workbench.data.languages import language_code, pair_name

WORKBENCH = [sys.executable, "-m", "workbench.cli"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A workbench home of its own: a registered pair must not reach the other tests' tasks."""
    path = own_home(tmp_path / "home")
    monkeypatch.setenv("WORKBENCH_HOME", str(path))
    return path


@pytest.fixture(scope="module")
def bitext(tmp_path_factory) -> Path:
    """3,000 real English–Standard Arabic pairs, one per line, english<TAB>arabic."""
    path = tmp_path_factory.mktemp("bitext") / "en-arb.tsv"
    with gzip.open(corpus_path("en-ar"), "rt", encoding="utf-8") as f:
        path.write_text("".join(line for _, line in zip(range(3000), f)), encoding="utf-8")
    return path


def test_a_pair_is_two_iso_639_codes_english_first_where_it_is_one():
    assert pair_name("en-por") == "en-pt" and pair_name("en-arb") == "en-arb" and language_code("deu") == "de"
    assert pair_name("fra-spa") == "fr-es" and pair_name("es-fr") == "es-fr"  # two other languages, in their order
    for bad, said in [("fr-en", r"English comes first \(en-fr\)"), ("en-xq", "unknown language code 'xq'"),
                      ("en-eng", "the two languages must differ"), ("fr-fra", "must differ"),
                      ("enfr", "written XX-YY"), ("en-PT", "unknown")]:
        with pytest.raises(WorkbenchError, match=said):
            pair_name(bad)


def test_a_pivot_needs_two_english_pairs_and_no_english_in_the_pair(home):
    from workbench.probing.pair_tasks import pivot_pair
    for pair, said in [("fr-de", "pivoting fr-de through en needs the corpora of en-fr and en-de; en-de has none"),
                       ("en-fr", "en-fr ships with the data"), ("en-pt", "en-pt has English in it"),
                       ("fr-fr", "the two languages must differ")]:
        with pytest.raises(WorkbenchError, match=said):
            pivot_pair(pair)
    assert not (home / "pairs").exists()


def _bad_files(folder: Path, bitext: Path) -> dict[str, tuple[list[Path], str]]:
    lines = bitext.read_text(encoding="utf-8").splitlines()
    (folder / "empty.tsv").write_text("")
    (folder / "one-column.tsv").write_text("\n".join(line.split("\t")[0] for line in lines[:1500]) + "\n")
    (folder / "latin1.tsv").write_bytes("\n".join(lines[:1500]).encode() + "\nna\xefve\tx\n".encode("latin-1"))
    (folder / "empty-side.tsv").write_text("\n".join(lines[:1500]) + "\nHello there .\t \n")
    (folder / "fake.tsv.gz").write_text("\n".join(lines))
    (folder / "en.txt").write_text("\n".join(line.split("\t")[0] for line in lines[:1500]) + "\n")
    (folder / "arb.txt").write_text("\n".join(line.split("\t")[1] for line in lines[:1499]) + "\n")
    return {"empty": ([folder / "empty.tsv"], "0 pairs left .* at least 1,000"),
            "one column": ([folder / "one-column.tsv"], r"one-column.tsv:1: 1 tab-separated columns; expected 2"),
            "not UTF-8": ([folder / "latin1.tsv"], r"latin1.tsv:1501: undecodable bytes"),
            "an empty side": ([folder / "empty-side.tsv"], r"empty-side.tsv:1501: empty foreign side"),
            "a .gz that is not gzip": ([folder / "fake.tsv.gz"], "not readable as gzip"),
            "Moses files of unequal length": ([folder / "en.txt", folder / "arb.txt"], "1499 lines against 1500"),
            "no file": ([folder / "missing.tsv"], "no corpus file at"),
            "a folder": ([folder], "not a regular file"),
            "a shipped corpus": ([corpus_path("en-tr")], "is the corpus of the shipped pair en-tr")}


def test_bad_corpus_files_are_refused_in_one_sentence_and_nothing_is_written(home, bitext, tmp_path):
    from workbench.probing.pair_tasks import add_pair
    for case, (files, said) in _bad_files(tmp_path, bitext).items():
        with pytest.raises(WorkbenchError, match=said):
            add_pair("en-arb", *files)
        assert not (home / "pairs").exists(), case
    for pair, said in [("en-fr", "en-fr ships with the data"), ("en-fra", "en-fr ships with the data"),
                       ("en-xq", "unknown language code")]:
        with pytest.raises(WorkbenchError, match=said):
            add_pair(pair, bitext)
    assert not (home / "pairs").exists()


def test_a_pair_is_registered_once_with_its_digest_and_its_language_tasks(home, bitext, tmp_path):
    from workbench.data.corpora import known_pairs, load_splits
    from workbench.probing.pair_tasks import add_pair
    from workbench.probing.tasks import get_task, task_names
    record = add_pair("en-arb", bitext)
    assert record["pairs"] == 3000 and record["language_name"] == "Standard Arabic" and len(record["content_sha256"]) == 64
    assert "en-arb" in known_pairs() and (home / "pairs" / "en-arb" / "corpus.tsv.gz").is_file()
    assert record["tasks"] == ["length_arb", "punct_num_arb", "punct_first_arb", "bigram_shift_arb",
                               "word_content_arb", "language_id_en_arb"]
    assert set(record["tasks"]) <= set(task_names()) and not set(record["tasks"]) & set(task_names(own=False))
    assert get_task("language_id_en_arb").languages == ("en", "arb")
    splits = load_splits("en-arb")
    assert sum(map(len, splits.values())) == 3000 and len(splits["probe"]) > 300
    assert add_pair("en-arb", bitext)["registered"] == record["registered"]  # the same corpus: nothing redone
    other = tmp_path / "other.tsv"
    other.write_text("\n".join(bitext.read_text(encoding="utf-8").splitlines()[:2000]) + "\n", encoding="utf-8")
    with pytest.raises(WorkbenchError, match="en-arb is registered from .*add --force"):
        add_pair("en-arb", other)
    with pytest.raises(WorkbenchError, match="already registered as en-arb"):
        add_pair("en-pt", bitext)
    assert add_pair("en-arb", other, force=True)["pairs"] == 2000 and len(load_splits("en-arb")["train"]) < 2000


@pytest.mark.parametrize("language", ["tr", "ar"])
def test_the_marks_a_new_language_probes_are_chosen_as_the_shipped_cards_chose_them(language):
    from workbench.data.splitting import SplitConfig
    from workbench.probing.pair_tasks import first_marks
    from workbench.data.corpora import tokenised_pool
    from workbench.probing.tasks import get_task
    pool = tokenised_pool(language, SplitConfig())
    assert first_marks(pool, language) == get_task(f"punct_first_{language}").params["marks"]


def test_length_bins_cover_the_pool_in_near_equal_shares():
    from collections import Counter
    from workbench.probing.pair_tasks import MAX_LENGTH, length_bins
    lengths = [4] * 2500 + [5] * 1500 + [6] * 700 + [7] * 400 + list(range(8, 60)) * 60
    bins = length_bins(lengths)
    assert len(bins) == 6 and bins[0][0] == 4 and bins[-1][1] == MAX_LENGTH
    assert all(high + 1 == low for (_, high), (low, _) in zip(bins, bins[1:]))  # contiguous
    assert bins[:3] == [[4, 4], [5, 5], [6, 6]]  # a common length is a bin of its own, never split
    counts = Counter(next(i for i, (lo, hi) in enumerate(bins) if lo <= n <= hi) for n in lengths if n <= MAX_LENGTH)
    rest = [counts[i] for i in range(3, 6)]
    assert max(rest) < 1.3 * min(rest)  # the others share what is left near equally
    assert length_bins([]) == [[1, MAX_LENGTH]]


@pytest.mark.slow
def test_bgt_trained_from_the_command_line_on_your_own_bitext_probes_its_language(home, bitext, tmp_path):
    env = {**os.environ, "WORKBENCH_HOME": str(home)}
    run = tmp_path / "run"

    def workbench(*args) -> str:
        done = subprocess.run([*WORKBENCH, *map(str, args)], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    said = workbench("train", "--model", "bgt", "--pair", "en-arb", "--corpus", bitext, "--preset", "tiny",
                     "--max-updates", 2, "--out", run)
    assert "en-arb (Standard Arabic): 3,000 pairs" in said and "tasks: length_arb" in said and "update 2" in said
    table = workbench("probe", "--model", run, "--encoder", "arb", "--task", "length_arb", "--no-control",
                      "--out", tmp_path / "length.csv")
    assert "length_arb" in table
    result = pd.read_csv(tmp_path / "length.csv").set_index("metric")["value"]
    assert result["accuracy"] > result["majority"] + 0.1  # length is read from any sentence encoder
    assert "en-arb" in workbench("data", "info")


def test_a_pair_whose_corpus_is_in_the_data_folder_is_known_and_gets_its_tasks(home, bitext, tmp_path, monkeypatch):
    """`workbench data download opus --pair en-XX` puts a corpus in the data folder: a pair as a registered one."""
    from workbench.data import corpora
    from workbench.paths import data_dir
    from workbench.probing.pair_tasks import add_pair, write_cards
    from workbench.probing.tasks import task_names
    data = tmp_path / "data"
    (data / "parallel").mkdir(parents=True)
    for path in (data_dir() / "parallel").glob("en-*.tsv.gz"):
        (data / "parallel" / path.name).symlink_to(path)
    (data / "eval").symlink_to(data_dir() / "eval")
    with gzip.open(data / "parallel" / "en-arb.tsv.gz", "wt", encoding="utf-8") as out:
        out.write(bitext.read_text(encoding="utf-8"))
    monkeypatch.setenv("WORKBENCH_DATA", str(data))
    assert corpora.known_pairs()[-1] == "en-arb" and corpora.corpus_path("en-arb") == data / "parallel" / "en-arb.tsv.gz"
    with pytest.raises(WorkbenchError, match="en-arb already has a corpus in the data folder"):
        add_pair("en-arb", bitext)
    assert write_cards("en-arb")[0] == "length_arb" and "length_arb" in task_names()


def test_a_registered_pair_joins_the_language_tables_by_its_bgt_named_for_the_pair(home, bitext, caplog):
    """A pair registered from your bitext joins our Table 3's English-side rows, the budgets and the gaps against
    distance once its BGT is a model named ``bgt-en-XX`` of that pair; other BGTs of a pair (``bgt-en-fr-warm``)
    and models of another pair under that name stay out, and so does one whose corpus is not registered here (its
    vocabulary overlap reads it). The shipped en–ar card stands in for an own en–arb model's (measuring one takes
    minutes)."""
    from workbench.models.pins import card, shipped
    from workbench.probing.pair_tasks import add_pair
    from workbench.reports.paper import language_gaps, our_table3, pair_languages, table3_cells, training_budgets
    cards = {name: card(name) for name in shipped()}
    assert pair_languages(cards) == ["fr", "es", "ar", "tr", "ja"]  # no bgt-en-fr-warm, bgt-en-ar-lang16, ...
    own = {**cards["bgt-en-ar"], "name": "bgt-en-arb", "pair": "en-arb"}
    mislabelled = {**cards["bgt-en-ar"], "name": "bgt-en-pt"}  # pair en-ar: not a pt model
    both = {**cards, "bgt-en-arb": own, "bgt-en-pt": mislabelled}
    assert pair_languages(both) == ["fr", "es", "ar", "tr", "ja"] and "bgt-en-arb (no corpus" in caplog.text
    add_pair("en-arb", bitext)
    assert pair_languages(both) == ["fr", "es", "ar", "tr", "ja", "arb"]
    ours = our_table3(both)
    rows = ours[ours["lang"] == "arb"].set_index("role")
    assert list(rows.index) == ["semantic", "en"]  # no bilingual_trans-en-arb among the models
    semantic = cards["bgt-en-ar"]["views"]["semantic"]
    assert rows.loc["semantic", "STS"] == semantic["sts"]["STS12-16"]
    assert rows.loc["en", "PunctNum"] == cards["bgt-en-ar"]["views"]["en"]["probing"]["punct_num"]
    assert rows["Gender"].isna().all() and rows.drop(columns=["lang", "Gender"]).notna().all().all()
    assert ours[ours["lang"] != "arb"].equals(our_table3(cards))  # the paper's rows unchanged
    assert "arb" not in set(table3_cells(ours)["lang"])  # no paper numbers to match
    gaps = language_gaps(ours, {"fr": 0.5, "arb": 0.1})
    assert list(dict.fromkeys(gaps["language"])) == ["fr", "arb"]
    assert "en-arb" in set(training_budgets(both)["pair"])


@pytest.mark.slow
def test_a_pair_without_english_pivoted_through_the_shipped_corpora_trains_and_probes(home, tmp_path):
    """fr-es from the English en-fr and en-es share, registered from the command line: every sentence its
    languages' English pairs hold out stays out of its training split, a tiny BGT trained on it keeps the
    checkpoint that best finds its validation pairs' translations (no STS-B to read), and its Spanish encoder and
    semantic encoder are probed on a Spanish task and on the pair's language identity; its decoders transfer in
    French when asked, and a transfer in English is refused saying which languages it writes."""
    env = {**os.environ, "WORKBENCH_HOME": str(home)}

    def workbench(*args) -> str:
        done = subprocess.run([*WORKBENCH, *map(str, args)], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    said = registered_pivot(home)  # workbench data add-pair fr-es --pivot, run once for the session's tests
    assert "fr-es (French – Spanish)" in said and "English sentences both share" in said, said
    assert "tasks: language_id_fr_es" in said, said
    from workbench.data.corpora import known_pairs, load_splits
    from workbench.data.splitting import normalise
    assert "fr-es" in known_pairs()
    splits = load_splits("fr-es")
    held = [{normalise(s[side]) for name in ("valid", "probe", "test") for s in load_splits(pair)[name]}
            for pair, side in (("en-fr", 1), ("en-es", 1))]
    trained = splits["train"]
    assert len(trained) > 50_000 and len(splits["valid"]) > 500
    assert not any(normalise(fr) in held[0] or normalise(es) in held[1] for fr, es in trained)
    run = tmp_path / "run"
    assert "update 3" in workbench("train", "--model", "bgt", "--pair", "fr-es", "--preset", "tiny",
                                   "--max-updates", 3, "--out", run)
    logged = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert "retrieval_dev" in logged[-1] and "stsb_dev" not in logged[-1] and (run / "best").is_dir()
    assert 0 <= logged[-1]["retrieval_dev"]["semantic"] <= 100
    # the Spanish view from the command line, the semantic one in this process (a Python process less)
    workbench("probe", "--model", run, "--encoder", "es", "--task", "length_es", "--no-control", "--train-size", 600,
              "--valid-size", 200, "--test-size", 200, "--out", tmp_path / "length_es.csv")
    result = pd.read_csv(tmp_path / "length_es.csv").set_index("metric")["value"]
    assert result["accuracy"] > result["majority"] + 0.1, result  # both tasks are read by any encoder
    model = wb.load(run)
    identity = wb.probe(model.encoder("semantic"), "language_id_fr_es", control=False,
                        sizes={"train": 600, "valid": 200, "test": 200})
    assert identity.accuracy > identity.majority + 0.1, identity
    with pytest.raises(WorkbenchError, match="this model writes fr and es, not 'en': pass language='fr'"):
        wb.transfer(model, ["Où es-tu ?"], ["Merci !"])
    assert len(wb.transfer(model, ["Où es-tu ?"], ["Merci !"], language="fr", max_len=8)) == 1
    rows = wb.evaluate_held_out_retrieval(model.encoder("semantic"), "fr-es", n=200)
    assert list(rows["metric"]) == ["error es->fr", "error fr->es"] and (rows["n"] == 200).all()
    assert rows["value"].between(0, 100).all()


def test_retrieval_keeps_one_pair_per_group_of_translations_that_share_a_sentence():
    """A pivot pair holds each translation beside each other (f1-s1, f1-s2, f2-s1, f2-s2): kept as two rows, the
    right answer of one would count as the other's error."""
    from workbench.evaluation.retrieval import distinct_pairs
    pivot = [("Je pars.", "Me voy."), ("Je pars.", "Me marcho."), ("Je m'en vais.", "Me voy."),
             ("Je m'en vais.", "Me marcho."), ("Bonjour !", "¡Hola!"), ("bonjour", "Hola")]
    assert distinct_pairs(pivot) == [("Je pars.", "Me voy."), ("Bonjour !", "¡Hola!")]  # normalised alike
