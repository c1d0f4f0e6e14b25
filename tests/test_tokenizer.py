import re

import numpy as np
import pytest

from workbench.data import tokenizer as tk
from workbench.paths import trained_dir


def test_preprocess_is_moses_english_then_lowercase():
    assert tk.preprocess("I don't want to leave, Marie!") == "i don 't want to leave , marie !"


@pytest.fixture(params=["compiled", "regular expressions"])
def rules(request, monkeypatch):
    """The Moses rules as the install built them (C) and as regular expressions (where no C compiler was found):
    both must give sacremoses' output."""
    from workbench.data import moses
    if request.param == "compiled":
        assert moses._compiled is not None, "workbench/data/_moses.c was not built: pip install -e . with a C compiler"
    else:
        monkeypatch.setattr(moses, "_compiled", None)
    return moses.tokenise_many


@pytest.fixture(scope="module")
def sacremoses_output():
    """Real sentences of every pair and adversarial text, each with sacremoses' tokenisation (computed once for
    both forms of the rules)."""
    import random

    from sacremoses import MosesTokenizer

    from workbench.data.corpora import PAIRS, load_splits
    moses = MosesTokenizer(lang="en")
    real = [s for pair in PAIRS for en_xx in load_splits(pair)["train"][:5000] for s in en_xx]  # 50,000 sentences
    rng = random.Random(0)  # the characters every rule keys on, whitespace and control characters, markers
    alphabet = [*"ab AZ.,'\"`-!?()[]{}<>;:@#$%&/0123456789sdt\t\n\x00\x01\x1f\u00a0\u2028é€ΣİÀ", "DOTMULTI",
                "n't", "Mr.", "No.", "'s", "..."]
    odd = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25))) for _ in range(20000)]
    return [(sentences, [moses.tokenize(s, escape=False, return_str=True) for s in sentences])
            for sentences in (real, odd)]


def test_moses_rules_give_sacremoses_output_on_real_and_adversarial_text(rules, sacremoses_output):
    for sentences, expected in sacremoses_output:
        assert rules(sentences) == expected
        assert rules(sentences, lower=True) == [e.lower() for e in expected]
    assert rules([]) == []
    with pytest.raises(TypeError, match="str"):
        rules(["a", 3])


def test_the_compiled_rules_give_the_same_sentences_in_any_number_of_threads():
    from workbench.data import moses
    from workbench.data.corpora import load_splits
    if moses._compiled is None:
        pytest.fail("workbench/data/_moses.c was not built: pip install -e . with a C compiler")
    sentences = [s for en_xx in load_splits("en-ja")["train"][:3000] for s in en_xx]  # non-Latin-1: str.lower
    one = moses._compiled.tokenise(sentences, True, 1)
    assert one == [moses._compiled.tokenise([s], True, 1)[0] for s in sentences[:300]] + one[300:]
    for threads in (2, 3, 64):
        assert moses._compiled.tokenise(sentences, True, threads) == one


def test_the_rules_character_classes_are_sacremoses_data_and_its_import_waits_for_a_sentence_that_needs_it():
    import json
    import subprocess
    import sys

    from sacremoses import MosesTokenizer

    from tools.moses_tables import TABLES, tables
    from workbench.data.moses import _class, _TABLES
    assert json.loads(TABLES.read_text(encoding="utf-8")) == _TABLES == json.loads(json.dumps(tables()))
    moses = MosesTokenizer(lang="en")
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)  # every code point but surrogates
    for name in ("IsAlnum", "IsN", "IsAlpha"):
        assert re.findall(f"[{_class(_TABLES[name])}]", every) == sorted(set(getattr(moses, name)))
    special = "a-b]^\\"  # characters that mean something inside [...]
    assert re.findall(f"[{_class([[ord(c), ord(c)] for c in special])}]", f"x{special}y") == list(special)
    code = ("import sys; from workbench.data import moses; moses._compiled = None; "  # the regular expressions:
            "assert moses.tokenise_many(['Hi, Mr. Li.']) == ['Hi , Mr. Li .']; "  # sacremoses only for a sentence
            "assert 'sacremoses' not in sys.modules; moses.tokenise_many(['a\\nb']); "  # holding the separator
            "assert 'sacremoses' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_batched_detokenising_gives_sacremoses_output_on_pool_sentences_and_adversarial_text():
    import random

    from sacremoses import MosesDetokenizer

    from workbench.data.corpora import PAIRS, load_splits
    from workbench.data.moses import detokenise_many, tokenise_many
    moses = MosesDetokenizer(lang="en")  # what the probing sets' builders give: pool sentences, Moses-tokenised
    pools = tokenise_many([s for pair in PAIRS for en_xx in load_splits(pair)["probe"][:6000] for s in en_xx])
    rng = random.Random(0)  # quotes, contractions, brackets, currency, escapes, "@-@", CJK, odd spacing
    alphabet = [*"ab AZ.,'\"`-!?()[]{}<>;:@#$%&/0123456789sdt\u00a0é€’„“”」漢", "@-@", "&amp;", "n't", "'s", "'",
                "...", " ", "  ", "\t", "\\", "%"]
    odd = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25))) for _ in range(20000)]
    for sentences in (pools, odd):
        assert detokenise_many(sentences) == [moses.detokenize(s.split()) for s in sentences]
    assert detokenise_many([]) == [] and tk.detokenise("i don 't , marie !") == "i don't, marie!"


def test_training_is_deterministic(tmp_path, small_tokenizer):
    from workbench.data.corpora import load_splits
    text = [tk.preprocess(s) for pair in load_splits("en-tr")["train"][:3000] for s in pair]
    again = tk.train_sentencepiece(text, tmp_path, vocab_size=500)
    assert again.model_file.read_bytes() == small_tokenizer.model_file.read_bytes()
    assert again.digest == small_tokenizer.digest


def test_encode_appends_eos_and_truncates(small_tokenizer):
    ids = small_tokenizer.encode(["Where is the station?", "Bu bir test cümlesidir ."])
    assert all(seq[-1] == tk.EOS and tk.PAD not in seq for seq in ids)
    short = small_tokenizer.encode(["a rather long sentence with many words in it"], max_len=4)[0]
    assert len(short) == 4 and short[-1] == tk.EOS
    assert small_tokenizer.decode(ids[0]) == "where is the station ?"


def test_rejects_model_with_other_special_ids(tmp_path):
    import sentencepiece as spm
    (tmp_path / "in.txt").write_text("hello world\nanother line here\n" * 50)
    spm.SentencePieceTrainer.train(input=str(tmp_path / "in.txt"), model_prefix=str(tmp_path / "m"),
                                   vocab_size=30, hard_vocab_limit=False, minloglevel=2)
    with pytest.raises(ValueError, match="pad/eos ids"):
        tk.Tokenizer(tmp_path / "m.model")


SMALL = trained_dir() / "bgt-small-en-fr"  # the shipped model whose tokenizer is pair_tokenizer("en-fr")'s


def _fresh(monkeypatch, tmp_path, models):
    """An empty workbench home, ``models`` as the shipped models' folder, and pair_tokenizer's memo emptied."""
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WORKBENCH_MODELS", str(models))
    tk.pair_tokenizer.cache_clear()


def test_a_shipped_models_tokenizer_is_copied_not_trained_and_a_changed_one_is_trained(monkeypatch, tmp_path):
    import json
    import shutil
    models = tmp_path / "models"
    shutil.copytree(SMALL, models / SMALL.name)
    shutil.copyfile(SMALL.parent / "tokenizers.json", models / "tokenizers.json")
    _fresh(monkeypatch, tmp_path, models)
    trained = []
    monkeypatch.setattr(tk, "train_sentencepiece", lambda *args: trained.append(args[2]) or 1 / 0)
    tokenizer = tk.pair_tokenizer("en-fr")  # the default of the untrained encoders: bgt-small-en-fr's, copied
    assert tokenizer.digest == json.loads((SMALL / "config.json").read_text())["tokenizer_sha256"] and not trained
    assert json.loads((tokenizer.model_file.parent / "spec.json").read_text())["vocab_size"] == 8000
    (models / SMALL.name / "spm.model").write_bytes(b"another model")  # not the recorded bytes: trained instead
    _fresh(monkeypatch, tmp_path / "again", models)
    with pytest.raises(ZeroDivisionError):
        tk.pair_tokenizer("en-fr")
    assert trained == [8000]
    tk.pair_tokenizer.cache_clear()


def test_two_callers_asking_for_a_new_tokenizer_at_once_train_it_once(monkeypatch, tmp_path):
    import threading
    import time
    _fresh(monkeypatch, tmp_path, tmp_path / "no-models")
    calls = []

    def train(text, folder, *rest):  # stands in for sentencepiece: slow enough for the second caller to arrive
        calls.append(folder)
        time.sleep(0.5)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "spm.model").write_bytes((SMALL / "spm.model").read_bytes())

    monkeypatch.setattr(tk, "train_sentencepiece", train)
    monkeypatch.setattr(tk, "load_splits", lambda pair, config: {"train": []})
    results = []
    threads = [threading.Thread(target=lambda: results.append(tk.pair_tokenizer.__wrapped__("en-fr", 123)))
               for _ in range(2)]  # past the in-process memo: the lock on the folder is what keeps them apart
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len(results) == 2 and results[0].digest == results[1].digest
    tk.pair_tokenizer.cache_clear()


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
def test_bags_are_the_ids_less_eos_as_arrays(compiled, monkeypatch):
    """encode_bags (what an average of piece embeddings reads) is encode's ids without EOS, cut where encode cuts,
    an empty sentence its EOS alone: from the C helper and from numpy alike."""
    from workbench.data.corpora import load_splits
    from workbench.models.folder import load
    if compiled:
        assert tk._pieces is not None, "workbench/data/_pieces.c was not built: pip install -e . with a C compiler"
    else:
        monkeypatch.setattr(tk, "_pieces", None)
    tokenizer = load("sp-en-fr").encoder("semantic").tokenizer
    sentences = [s for pair in load_splits("en-fr")["valid"][:500] for s in pair] + ["", "  ", "word " * 300]
    for max_len in (None, 128, 5, 2, 1):
        flat, lengths = tokenizer.encode_bags(sentences, max_len)
        assert flat.dtype == lengths.dtype == np.int64 and flat.flags.writeable
        bags = np.split(flat, np.cumsum(lengths)[:-1])
        expected = [ids[:-1] or [tk.EOS] for ids in tokenizer.encode(sentences, max_len=max_len)]
        assert [bag.tolist() for bag in bags] == expected
    assert [a.tolist() for a in tokenizer.encode_bags([])] == [[], []]
