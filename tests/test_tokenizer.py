import pytest

from workbench.data import tokenizer as tk


def test_preprocess_is_moses_english_then_lowercase():
    assert tk.preprocess("I don't want to leave, Marie!") == "i don 't want to leave , marie !"


def test_batched_moses_rules_give_sacremoses_output_on_real_and_adversarial_text():
    import random

    from sacremoses import MosesTokenizer

    from workbench.data.corpora import PAIRS, load_splits
    from workbench.data.moses import tokenise_many
    moses = MosesTokenizer(lang="en")
    real = [s for pair in PAIRS for en_xx in load_splits(pair)["train"][:5000] for s in en_xx]  # 50,000 sentences
    rng = random.Random(0)  # the characters every rule keys on, whitespace and control characters, markers
    alphabet = [*"ab AZ.,'\"`-!?()[]{}<>;:@#$%&/0123456789sdt\t\n\x01\x1f\u00a0\u2028é€", "DOTMULTI", "n't",
                "Mr.", "No.", "'s", "..."]
    odd = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25))) for _ in range(20000)]
    for sentences in (real, odd):
        expected = [moses.tokenize(s, escape=False, return_str=True) for s in sentences]
        assert tokenise_many(sentences) == expected
    assert tokenise_many([]) == []
    tk.clear_memo()
    assert tk.preprocess_many(odd[:50] * 2) == [e.lower() for e in expected[:50] * 2]  # memo hits read the same


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
