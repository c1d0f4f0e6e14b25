"""Style transfer's batch mode: where each output's content words come from, and which latent carries them."""
import pandas as pd
import pytest
import torch

from workbench.data.tokenizer import detokenise
from workbench.checks import WorkbenchError
from workbench.style_transfer.evaluation import FORM, transfer_pairs
from workbench.style_transfer.generation import (NO_REPEAT_NGRAM, PAPER_DECODING, content_words, latent_ablation,
                                                 transfer, transfer_table, truecase, without_punctuation)
from workbench.models import transformer
from workbench.models.folder import load
from benchmarks.transfer_decoding import WholePrefix


def test_content_words_drop_stop_words_contractions_and_possessives():
    assert content_words("When water freezes, it becomes ice.") == {"water", "freezes", "ice"}
    assert content_words("I don't want John's car!") == {"want", "john", "car"}
    assert content_words("It is 10 o'clock.") == set()
    assert content_words("Où est la gare ?") == {"gare", "est"}  # any script's letters


def test_transfer_table_says_which_words_came_from_the_source_and_the_style():
    model = load("bgt-en-fr")
    pairs = pd.DataFrame({"source": ["when water freezes it becomes ice .", "the weather is good today ."],
                          "style": ["the weather is good today .", "the weather is good today ."]})
    table = transfer_table(model, pairs, beam=1)
    assert list(table["output"]) == transfer(model, list(pairs["source"]), list(pairs["style"]), beam=1)
    for _, row in table.iterrows():
        for column in ("source", "style"):
            words = set(filter(None, row[f"from_{column}"].split(", ")))
            assert words == content_words(row["output"]) & content_words(row[column])
    reconstruction = table.iloc[1]  # source = style: whatever it keeps, it keeps from both
    assert reconstruction["from_source"] == reconstruction["from_style"]


def test_latent_ablation_decodes_from_each_latent_with_the_other_at_the_prior_mean():
    model = load("bgt-en-fr")
    sentences = ["when water freezes it becomes ice .", "i'm doing this for my family ."]
    table = latent_ablation(model, sentences, beam=1, max_len=30)
    assert list(table["latents"]) == ["both"] * 2 + ["semantic only"] * 2 + ["language only"] * 2
    both = table[table["latents"] == "both"]
    assert list(both["output"]) == transfer(model, sentences, sentences, beam=1, max_len=30, **PAPER_DECODING)
    z_sem = torch.as_tensor(model.encoder("semantic").encode(sentences))
    alone = model.generate(z_sem, torch.zeros(2, model.cfg.language_dim), decoder="en", max_len=30,
                           no_repeat_ngram=NO_REPEAT_NGRAM)
    assert list(table[table["latents"] == "semantic only"]["output"]) == [
        truecase(detokenise(model.tokenizer.decode(ids))) for ids in alone]
    for _, row in table.iterrows():
        assert set(filter(None, row["kept"].split(", "))) == content_words(row["output"]) & content_words(
            row["sentence"])
    assert len(set(table["output"])) > 2  # the three decodings differ
    with pytest.raises(WorkbenchError, match="sentences must be non-empty"):
        latent_ablation(model, ["a sentence .", " "])
    with pytest.raises(WorkbenchError, match="style transfer needs a BGT model"):
        latent_ablation(load("sp-en-fr"), ["a sentence ."])


def _scored(outputs):
    from workbench.style_transfer.evaluation import score_transfers
    pairs = pd.DataFrame({"source": ["The cat sat on the mat.", "We bought fresh bread at the market yesterday."],
                          "style": ["Where did you go last night?", "Thank you so much!"]})
    return score_transfers(pairs.assign(output=outputs), [load("sp-en-fr").encoder()])


def test_the_transfer_scorer_tells_a_copy_of_the_source_from_a_copy_of_the_style():
    judge = "closer_to_source[sp-en-fr:semantic]"
    copy_source = _scored(["The cat sat on the mat.", "We bought fresh bread at the market yesterday."])
    assert copy_source[judge].all() and copy_source["keeps_source_word"].all()
    assert not copy_source["keeps_style_word"].any()
    assert not copy_source["first_word_follows_style"].any() and copy_source["first_word_follows_source"].all()
    copy_style = _scored(["Where did you go last night?", "Thank you so much!"])
    assert not copy_style[judge].any() and not copy_style["keeps_source_word"].any()
    assert copy_style["keeps_style_word"].all()
    for attribute in FORM:
        assert copy_style[f"{attribute}_follows_style"].all()
    # what style transfer should give: the source's content words in the style sentence's form
    mix = _scored(["Where did the cat sit on the mat?", "Thank you for the fresh bread from the market yesterday!"])
    assert mix["keeps_source_word"].all()
    assert mix["first_word_follows_style"].all() and mix["punctuation_follows_style"].all()
    assert mix[judge].all()


def test_transfer_shares_count_form_only_where_source_and_style_differ_and_carry_a_bootstrap_ci():
    from workbench.style_transfer.evaluation import form, share, summarise_transfers
    assert form("Where did you go, Tom?") == {"length": 1, "punctuation": ",?", "first_word": "where",
                                              "sentence_type": "question", "negation": False, "person": 2}
    assert form("I don't know.") == {"length": 0, "punctuation": ".", "first_word": "i",
                                     "sentence_type": "statement", "negation": True, "person": 1}
    assert form("The cat has never been so happy!")["sentence_type"] == "exclamation"
    assert form("The cat has never been so happy!")["negation"] and form("The cat sat.")["person"] == 0
    assert form("They're here, aren't they?")["person"] == 3 and form("I'm sure.")["person"] == 1
    summary = summarise_transfers(_scored(["Where did you go last night?", "Thank you so much!"])).set_index("metric")
    assert summary.loc["keeps_style_word", "value"] == 1.0 and summary.loc["keeps_source_word", "value"] == 0.0
    # both pairs differ in punctuation and first word; in length (tokens, marks included) only the second
    # (7 vs 7: bin 5-8 for both; 9 vs 5: bins 9-12 and 5-8); both in sentence type (statement vs question,
    # statement vs exclamation) and person (none vs 2nd, 1st vs 2nd); neither in negation
    assert summary.loc["length_follows_style", "n"] == 1 and summary.loc["punctuation_follows_style", "n"] == 2
    assert summary.loc["sentence_type_follows_style", "n"] == 2 and summary.loc["negation_follows_style", "n"] == 0
    assert summary.loc["person_follows_style", "n"] == 2 and summary.loc["form_follows_style", "n"] == 1 + 2 * 4
    assert summary.loc["form_follows_style", "value"] == 1.0
    value, low, high = share([True, False, False, True], n_boot=500)
    assert value == 0.5 and 0.0 <= low < 0.5 < high <= 1.0


def test_transfer_pairs_are_a_fixed_sample_of_distinct_held_out_sentences():
    from workbench.data.corpora import load_splits
    from workbench.style_transfer.evaluation import transfer_pairs
    pairs = transfer_pairs(n=50)
    assert pairs.equals(transfer_pairs(n=50)) and not pairs.equals(transfer_pairs(n=50, seed=1))
    sentences = [*pairs["source"], *pairs["style"]]
    assert len(set(sentences)) == 100
    test = {en.strip() for en, _ in load_splits("en-fr")["test"]}
    train = {en.strip() for en, _ in load_splits("en-fr")["train"]}
    assert set(sentences) <= test and not set(sentences) & train
    with pytest.raises(WorkbenchError, match="positive number of pairs"):
        transfer_pairs(n=0)


def test_workbench_transfer_eval_scores_a_pairs_file_and_writes_the_summary_and_the_pairs(tmp_path, capsys):
    from workbench import cli
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("\ufeffsource\tstyle\nthe weather is good today .\twhere did you go ?\n"  # a BOM, as Windows
                     "i bought a new car .\tthank you so much !\n", encoding="utf-8")  # editors save UTF-8
    out = tmp_path / "scores.csv"
    assert cli.main(["transfer", "--eval", "--pairs", str(pairs), "--beam", "1", "--out", str(out)]) == 0
    summary = pd.read_csv(out).set_index("metric")
    assert summary.loc["keeps_source_word", "n"] == 2 and summary.loc["semantic_only_keeps_word", "n"] == 2
    assert len(pd.read_csv(tmp_path / "scores-pairs.csv")) == 2
    assert "closer_to_source[sp-en-fr:semantic]" in capsys.readouterr().out
    assert cli.main(["transfer", "--eval", "--source", "a .", "--style", "b ."]) == 2
    assert "does not take --source/--style" in capsys.readouterr().err


def test_a_cards_style_transfer_section_can_be_measured_again_and_the_card_stays_sealed(tmp_path):
    import shutil
    from workbench.zoo.cards import remeasure_transfer
    from workbench.models.pins import card
    from workbench.paths import trained_dir
    for name in ("bgt-en-fr", "sp-en-fr"):
        shutil.copytree(trained_dir() / name, tmp_path / name)
    before = card("bgt-en-fr", tmp_path)
    after = remeasure_transfer("bgt-en-fr", tmp_path, transfer_pairs=4)
    assert card("bgt-en-fr", tmp_path) == after and after["views"] == before["views"]
    assert {f"{a}_follows_style" for a in FORM} <= set(after["style_transfer"])
    load(tmp_path / "bgt-en-fr")  # every file still matches the sha256 list
    with pytest.raises(WorkbenchError, match="sp-en-fr has no style-transfer section"):
        remeasure_transfer("sp-en-fr", tmp_path)


def test_form_origins_name_the_attributes_each_output_took_from_its_style_and_its_source():
    from workbench.style_transfer.evaluation import form_origins
    table = pd.DataFrame({"source": ["The cat sat on the mat.", "I don't like it."],
                          "style": ["Where did you go last night?", "We love the sea!"],
                          "output": ["Where did the cat sit?", "I don't like the sea."]})
    origins = form_origins(table)
    first, second = origins.iloc[0], origins.iloc[1]
    assert "first_word=where" in first["form_from_style"] and "sentence_type=question" in first["form_from_style"]
    assert "person" not in first["form_from_style"] and "person=0" in first["form_from_source"]
    assert second["form_from_style"] == "" and "negation=True" in second["form_from_source"]
    with pytest.raises(WorkbenchError, match="lacks columns"):
        form_origins(table.drop(columns="output"))


def test_outputs_repeat_no_trigram_and_are_truecased():
    model = load("bgt-en-fr")
    source = ["the company provides health care and life insurance benefits for all of its employees ."]
    style = ["no matter how long it takes , i will finish the job ."]
    z_sem, z_lang = (torch.as_tensor(model.encoder(v).encode(s)) for v, s in (("semantic", source), ("en", style)))
    ids = model.generate(z_sem, z_lang, decoder="en", max_len=40, beam=5, no_repeat_ngram=NO_REPEAT_NGRAM)[0]
    trigrams = [tuple(ids[i:i + 3]) for i in range(len(ids) - 2)]
    assert len(trigrams) == len(set(trigrams))  # the guard holds on pieces (this pair loops without it)
    output = transfer(model, source, style)[0]
    assert output[0].isupper() and output == truecase(output)
    assert truecase("i think i'm here, said i.") == "I think I'm here, said I." and truecase("iris is in.") == "Iris is in."
    assert truecase("'japan's warm.") == "'Japan's warm." and truecase("« oui »") == "« Oui »" and truecase("") == ""


def test_reranking_picks_among_the_beams_sentences_by_the_models_own_encoders():
    """rerank=(0, 0) keeps the decoder's best; a large meaning weight picks, among the same beam's sentences, one
    whose semantic latent is at least as near the source's as the decoder's pick; bad weights say what is valid."""
    import numpy as np
    model = load("bgt-en-fr")
    sources = ["when water freezes it becomes ice .", "i'm doing this for my family .", "the cat sat on the mat ."]
    styles = ["where did you go yesterday ?", "no !", "i don't think so ."]
    plain = transfer(model, sources, styles, beam=6, **PAPER_DECODING)
    assert transfer(model, sources, styles, beam=6, **{**PAPER_DECODING, "rerank": (0, 0)}) == plain
    meaning = transfer(model, sources, styles, beam=6, **{**PAPER_DECODING, "rerank": (1000, 0)})
    semantic = model.encoder("semantic").encode

    def cosine(a, b):
        a, b = semantic([a])[0], semantic([b])[0]
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    for source, decoded, chosen in zip(sources, plain, meaning):
        assert cosine(chosen, source) >= cosine(decoded, source) - 0.01, (decoded, chosen)
    for bad in ((1, -1), (1,), "2,1", (True, 1)):
        with pytest.raises(WorkbenchError, match=r"rerank takes two weights \(meaning, form\)"):
            transfer(model, sources, styles, rerank=bad)


def test_reading_the_source_without_its_punctuation_is_the_same_as_giving_it_without():
    """strip_punctuation feeds the semantic encoder the source without its marks (apostrophes stay in their
    words; a sentence of marks alone is kept); the language latents still read the sentences whole."""
    assert without_punctuation("Where did you go, John?") == "Where did you go John"
    assert without_punctuation("I don't «know» — really!") == "I don't know really"
    assert without_punctuation("?!") == "?!"
    model = load("bgt-en-fr")
    sources = ["where did you go last night ?", "i don't know , really !", "the cat sat on the mat ."]
    styles = ["you are late again .", "what is this ?", "no !"]
    plain = {"rerank": None, "guidance": 0.0}
    stripped = transfer(model, sources, styles, strip_punctuation=True, **plain)
    assert stripped == transfer(model, [without_punctuation(s) for s in sources], styles, strip_punctuation=False,
                                **plain)
    assert stripped != transfer(model, sources, styles, strip_punctuation=False, **plain)
    with pytest.raises(WorkbenchError, match="strip_punctuation must be True or False"):
        transfer(model, sources, styles, strip_punctuation="yes")


def test_decoding_position_by_position_writes_what_decoding_the_whole_prefix_wrote(monkeypatch):
    """The transfers of the shipped model, plain and guided (the default decoding), are the same sentences when each
    step reads the kept keys and values as when it reads the whole prefix again."""
    model = load("bgt-en-fr")
    sources = ["when water freezes it becomes ice .", "i'm doing this for my family .", "where is the station ?"]
    styles = ["Bartender, I'd like to have a drink.", "Did you see that?", "the weather is good today ."]
    kept = {g: transfer(model, sources, styles, guidance=g) for g in (0.0, 0.2)}
    monkeypatch.setattr(transformer.LatentDecoder, "incremental", lambda self, cond: WholePrefix(self, cond))
    assert {g: transfer(model, sources, styles, guidance=g) for g in (0.0, 0.2)} == kept


def test_a_pairs_transfer_does_not_depend_on_the_pairs_decoded_beside_it():
    """Each row of the batched beam search stops on its own state: when a row went on while a longer row did, it
    could find another sentence in one batch than alone (2 of the cards' first 40 pairs did)."""
    model = load("bgt-en-fr")
    pairs = transfer_pairs(40).iloc[10:20]
    sources, styles = list(pairs["source"]), list(pairs["style"])
    assert transfer(model, sources, styles) == [transfer(model, [s], [t])[0] for s, t in zip(sources, styles)]
