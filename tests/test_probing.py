import zlib

import numpy as np
import pandas as pd
import pytest

from workbench.data.corpora import probe_pool
from workbench.data.tokenizer import preprocess, tokenise
from workbench.checks import UnknownNameError, WorkbenchError
from workbench.probing import build, builders, pool
from workbench.probing.builders import surface
from workbench.probing.classifiers import LogisticProbe
from workbench.probing.control import control_labels, control_words, first_word_type
from workbench.probing.probe import probe
from workbench.probing.result import bootstrap_ci
from workbench.probing.tasks import get_task, task_names, TaskCard

SMALL = {"train": 1500, "valid": 300, "test": 300}


class FeatureEncoder:
    """An honest encoder exposing chosen surface features plus noise (for checking the probe machinery)."""

    def __init__(self, name, features, dim=8, seed=0):
        self.name, self.dim, self.fingerprint, self.features = name, dim, name, features
        self.rng = np.random.default_rng(seed)

    def encode(self, sentences, batch_size=256, show_progress=False):
        out = self.rng.standard_normal((len(sentences), self.dim)).astype(np.float32)
        out[:, 0] = [self.features(s) for s in sentences]
        return out


class FirstWordEncoder(FeatureEncoder):
    """Encodes only which first word a sentence has (one-hot over a hash of the word type)."""

    def __init__(self, name, dim=64):
        super().__init__(name, None, dim)

    def encode(self, sentences, batch_size=256, show_progress=False):
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for row, s in enumerate(sentences):
            out[row, zlib.crc32(first_word_type(s).encode()) % self.dim] = 1.0
        return out


@pytest.fixture(scope="module")
def length_task():
    return build.build_task("length", sizes=SMALL)


def test_cards_load_and_unknown_task_lists_valid():
    assert {"length", "punct_num"} <= set(task_names())
    assert get_task("punct_num").labels[-1] == "11+"
    with pytest.raises(UnknownNameError, match="valid: .*length"):
        get_task("sentence_len")


def test_bad_card_is_explained(tmp_path):
    (tmp_path / "x.toml").write_text('name = "x"\ntitle = "X"\nlanguage = "en"\nbuilder = "length_bins"\n')
    with pytest.raises(WorkbenchError, match="lacks labels, sizes"):
        TaskCard.from_file(tmp_path / "x.toml")


def test_one_bad_card_is_named_and_left_out_not_fatal(tmp_path, monkeypatch, caplog):
    import shutil
    from workbench.probing import tasks
    for name in ("length", "punct_num"):
        shutil.copy(tasks.CARDS_DIR / f"{name}.toml", tmp_path)
    (tmp_path / "broken.toml").write_text('name = "broken"\ntitle = ')
    monkeypatch.setattr(tasks, "_BROKEN", {})
    assert set(tasks._read_cards((tmp_path,))) == {"length", "punct_num"}
    assert "task card left out" in caplog.text and "broken.toml: not a valid TOML task card" in caplog.text
    read = tasks._read_cards.__wrapped__
    monkeypatch.setattr(tasks, "_cards", lambda own=True: read((tmp_path,)))
    with pytest.raises(WorkbenchError, match="task 'broken' cannot be used: .*broken.toml: not a valid TOML"):
        tasks.get_task("broken")
    assert tasks.get_task("length").name == "length"


def test_surface_builders_on_hand_checked_sentences():
    sentences = ["Hi there you .", "I do not know what you mean .",  # 4 and 8 tokens
                 "Tom , who 's there ?", "No punctuation here at all",
                 "\u201cWait\u201d \u2014 she said , \u2026 " + "! " * 12]
    assert surface.length_bins(sentences[:2], "en", bins=[[5, 8], [9, 12]]) == [("0", sentences[1], "")]
    counts = dict((s, label) for label, s, _ in surface.punct_count(sentences, "en", max_label=11))
    assert counts[sentences[0]] == "1" and counts[sentences[1]] == "1"
    assert counts[sentences[2]] == "3"  # , ' ?
    assert sentences[3] not in counts
    assert counts[sentences[4]] == "11+"


def test_the_surface_builders_read_each_languages_own_marks_and_japanese_length_in_characters():
    spanish = ["¿ Dónde está el gato ?", "¡ Qué bien !", "Hola ."]
    assert [label for label, _, _ in surface.punct_first(spanish, "es", marks=["¿", "¡", "."])] == ["¿", "¡", "."]
    assert [label for label, _, _ in surface.punct_count(spanish, "es")] == ["2", "2", "1"]
    arabic = ["هل أنت بخير ؟", "نعم ، شكرا ."]
    assert [label for label, _, _ in surface.punct_first(arabic, "ar", marks=["؟", "،"])] == ["؟", "،"]
    japanese = ["私 は 学生 です 。", "東京 へ 行き ました か ？"]  # 6 and 8 characters besides spaces and marks
    assert [label for label, _, _ in surface.length_bins(japanese, "ja", [[1, 6], [7, 9]], unit="characters")] \
        == ["0", "1"]
    assert surface.punct_count(["Hola ."], "en") == [("1", "Hola .", "")]  # English reads only the shared marks
    assert surface.punct_count(["¿ Hola"], "en") == []


def test_a_language_encoder_is_probed_on_its_own_language_and_others_are_refused():
    import workbench as wb
    bgt = wb.load("bgt-en-fr")
    small = {"train": 600, "valid": 200, "test": 200}
    french = probe(bgt.encoder("fr"), "length_fr", sizes=small, control=False)
    assert french.task == "length_fr" and 190 <= french.n_test <= 200 and abs(french.majority - 1 / 6) < 0.02
    with pytest.raises(WorkbenchError, match="length_fr"):
        probe(bgt.encoder("en"), "length_fr", sizes=small)  # the English encoder reads no French
    assert {"length_fr", "punct_first_fr", "word_content_fr"} <= set(wb.readable_tasks(bgt.encoder("fr")))
    assert not [t for t in wb.readable_tasks(bgt.encoder("fr")) if get_task(t).language == "ja"]


def test_built_dataset_labels_sizes_and_disjoint_splits(length_task):
    data = length_task.data
    sizes = length_task.manifest["sizes"]
    assert sum(sizes.values()) == len(data) and abs(sizes["tr"] - 1500) <= 10
    assert data["sentence"].is_unique  # so no sentence is in two splits
    bins = [[5, 8], [9, 12], [13, 16], [17, 20], [21, 25], [26, 28]]
    for row in data.sample(50, random_state=0).itertuples():
        low, high = bins[int(row.label)]
        assert low <= len(tokenise(row.sentence).split()) <= high
    pool = {tokenise(s) for s in probe_pool()}
    assert {tokenise(s) for s in data["sentence"]} <= pool  # stored detokenised: tokens as in the pool
    # built once: a second call reads the stored files
    again = build.build_task("length", sizes=SMALL)
    assert again.path == length_task.path and again.data.equals(length_task.data)


def test_a_task_at_new_sizes_in_a_new_process_reads_the_stored_candidates_and_damaged_ones_are_made_again(
        monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    pool.pool_candidates.cache_clear()
    first = build.build_task("punct_num", sizes={"train": 300, "valid": 50, "test": 50})
    [stored] = (tmp_path / "probing" / "candidates").glob("punct_count-en-*.json.gz")
    pool.pool_candidates.cache_clear()  # a new process: the builder is not run again
    monkeypatch.setitem(builders.BUILDERS, "punct_count", lambda *a, **k: pytest.fail("labelled the pool again"))
    again = build.build_task("punct_num", sizes={"train": 301, "valid": 50, "test": 50})
    assert again.manifest["n_pool"] == first.manifest["n_pool"] and len(again.data) > len(first.data)
    monkeypatch.undo()
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    fresh = build.build_task("punct_num", sizes={"train": 301, "valid": 50, "test": 50}, force=True)
    assert fresh.data.equals(again.data)  # the stored candidates are the builder's
    stored.write_bytes(stored.read_bytes()[:-20])  # cut short: made again, with a warning
    pool.pool_candidates.cache_clear()
    assert build.build_task("punct_num", sizes={"train": 302, "valid": 50, "test": 50}).manifest["n_pool"] == \
        first.manifest["n_pool"]
    assert "are damaged; building them again" in caplog.text and pool.read_candidates(stored) is not None
    params = pool.builder_params(get_task("punct_num"), 0)
    assert pool.candidates_path("punct_count", "en", False, params, pool.SplitConfig()) == stored
    monkeypatch.setitem(builders.VERSIONS, "punct_count", builders.VERSIONS["punct_count"] + 1)  # a changed builder
    assert pool.candidates_path("punct_count", "en", False, params, pool.SplitConfig()) != stored
    pool.pool_candidates.cache_clear()


def test_small_pool_scales_sizes_with_warning(caplog):
    pool = [f"sentence number {i} , with commas , here ." for i in range(200)]
    card = get_task("punct_num")
    ds = build.build_task(card, sizes={"train": 800, "valid": 100, "test": 100}, pool=pool)
    assert len(ds.data) == 200 and "scaled by 0.200" in caplog.text


def test_length_exposing_encoder_wins_random_sits_at_majority(length_task):
    exact = FeatureEncoder("exact-length", lambda s: len(preprocess(s).split()))
    noise = FeatureEncoder("noise", lambda s: 0.0)
    good, bad = probe(exact, length_task), probe(noise, length_task)
    assert good.accuracy > 0.97
    assert abs(bad.accuracy - bad.majority) < 0.06
    assert good.ci_low <= good.accuracy <= good.ci_high


def test_predictions_say_what_the_probe_gave_each_test_sentence_and_agree_with_its_accuracy(length_task):
    from workbench.probing.probe import predictions
    noisy = FeatureEncoder("noisy-length", lambda s: len(preprocess(s).split()) + np.random.default_rng(
        zlib.crc32(s.encode())).normal(0, 3))  # right on some sentences, wrong on others
    result = probe(noisy, length_task)
    table = predictions(noisy, length_task)
    test = length_task.split("te")
    assert list(table.columns) == ["sentence", "label", "word", "predicted", "probability", "correct"]
    assert table["sentence"].tolist() == test["sentence"].tolist() and len(table) == result.n_test
    assert table["correct"].mean() == pytest.approx(result.accuracy) and 0.3 < result.accuracy < 0.97
    assert "".join("1" if c else "0" for c in table["correct"]) == result.correct  # the stored per-sentence outcome
    assert set(table["predicted"]) <= set(test["label"].astype(str)) and table["probability"].between(0, 1).all()
    assert (table["probability"] >= 1 / test["label"].nunique() - 1e-4).all()  # the label given is the likeliest
    by_name = predictions(noisy, "length", sizes=SMALL)  # a task name: the same build, read back
    assert by_name.equals(table)
    with pytest.raises(WorkbenchError, match="a mean over seeds keeps none"):
        predictions(noisy, length_task, seeds=2)


def test_a_named_task_is_probed_at_the_default_sizes_unless_asked_and_full_on_request(monkeypatch):
    """One default for Python, the CLI, the demo and the cards (a first probe(enc, task) took 8.5 minutes at the
    task's full size); sizes="full" is the task card's own."""
    monkeypatch.setattr(build, "DEFAULT_SIZES", {"train": 400, "valid": 100, "test": 100})
    exact = FeatureEncoder("exact-length", lambda s: len(preprocess(s).split()))
    result = probe(exact, "length", control=False)
    assert (result.n_train, result.n_test) == (400, 100)
    assert probe(exact, "length", control=False, sizes={"train": 300, "valid": 100, "test": 50}).n_test == 50
    assert build.probing_sizes("full") is None  # build_task then takes the card's sizes
    with pytest.raises(WorkbenchError, match="probing sizes must give train, valid, test"):
        build.probing_sizes("half")


def test_bad_encoders_and_datasets_are_rejected(length_task):
    class WrongShape(FeatureEncoder):
        def encode(self, sentences, **kw):
            return super().encode(sentences)[:, :4]

    class WithNaN(FeatureEncoder):
        def encode(self, sentences, **kw):
            out = super().encode(sentences)
            out[3, 1] = np.nan
            return out

    with pytest.raises(WorkbenchError, match=r"shape .* expected \(\d+, 8\)"):
        probe(WrongShape("w", len), length_task)
    with pytest.raises(WorkbenchError, match="NaN/inf for 1 of"):
        probe(WithNaN("n", len), length_task)
    one_class = build.ProbingDataset(length_task.card, length_task.data.assign(label="0"), {})
    with pytest.raises(WorkbenchError, match="single class"):
        probe(FeatureEncoder("e", len), one_class)


def test_language_mismatch_is_rejected(length_task):
    french_only = FeatureEncoder("fr-encoder", len)
    french_only.languages = ("fr",)
    with pytest.raises(WorkbenchError, match="task 'length' is in 'en' but encoder 'fr-encoder' reads fr"):
        probe(french_only, length_task)


def test_bootstrap_ci_brackets_the_mean():
    correct = (np.arange(1000) % 4 != 0).astype(float)
    low, high = bootstrap_ci(correct)
    assert low < 0.75 < high and high - low < 0.07


@pytest.mark.parametrize("task,kind,key", [("length", "word", "first word"), ("subj_num", "word", "word"),
                                           ("subj_num", "first_word", "first word")])
def test_control_labels_follow_word_types_and_the_label_distribution(task, kind, key):
    data = build.build_task(task, sizes=SMALL).data
    words, used = control_words(data, kind)
    assert used == key.replace(" ", "_")  # length is read from no single word: its control keys on the first
    control = control_labels(words, list(data["label"]), seed=0)
    expected_keys = (data["word"].str.lower() if key == "word" else data["sentence"].map(first_word_type))
    by_type = {}
    for word_type, label in zip(expected_keys, control):
        assert by_type.setdefault(word_type, label) == label  # a function of the word type
    assert len(by_type) > 50  # many types, not a handful (SubjNum: the subject heads)
    task_share = data["label"].value_counts(normalize=True)
    control_share = pd.Series(control).value_counts(normalize=True)
    assert (task_share - control_share.reindex(task_share.index, fill_value=0)).abs().max() < 0.03
    with pytest.raises(UnknownNameError, match="valid: first_word, word"):
        control_words(data, "last_word")


def test_selectivity_is_positive_where_a_trained_encoder_encodes_the_property():
    from workbench.models.folder import load
    english = load("bgt-en-fr").encoder("en")
    for task in ("subj_num", "tense"):
        result = probe(english, task, sizes=SMALL)
        assert result.control.kind == "word" and "(word control)" in str(result)
        assert result.control.accuracy < result.accuracy and result.selectivity > 0.05, result


def test_selectivity_separates_property_from_lexical_memory(length_task):
    exact = FeatureEncoder("exact-length", lambda s: len(preprocess(s).split()))
    lexical = FirstWordEncoder("first-word")
    good, memoriser = probe(exact, length_task), probe(lexical, length_task)
    assert good.selectivity > 0.4  # length is encoded, the first word is not
    assert memoriser.control.accuracy > memoriser.accuracy  # it encodes the first word, not the length
    assert memoriser.selectivity < 0
    frame = good.to_frame()
    assert set(frame["metric"]) == {"accuracy", "majority", "control_accuracy", "selectivity"}


def test_mlp_probe_and_mdl(length_task):
    exact = FeatureEncoder("exact-length", lambda s: len(preprocess(s).split()))
    noise = FeatureEncoder("noise", lambda s: 0.0)
    mlp = probe(exact, length_task, classifier="mlp", control=False)
    assert mlp.accuracy > 0.9 and mlp.classifier == "mlp" and "hidden=50" in mlp.hyperparameters
    assert "(of dropout 0/0.1/0.2; hidden 50; l2 1e-05/0.001; tenacity 5)" in mlp.hyperparameters  # SentEval's
    informative, useless = probe(exact, length_task, mdl=True), probe(noise, length_task, mdl=True)
    # noise still compresses a little (the probe learns the label frequencies), far less than real signal
    assert informative.mdl.compression > 3 * useless.mdl.compression and useless.mdl.compression < 1.25
    assert informative.mdl.bits < useless.mdl.bits
    with pytest.raises(UnknownNameError, match="valid: logreg, mlp"):
        probe(exact, length_task, classifier="svm")


def test_mdl_codes_a_label_the_probe_has_not_seen_with_a_normalised_distribution(length_task):
    from sklearn.linear_model import LogisticRegression

    from workbench.probing.mdl import block_probabilities
    train = length_task.split("tr")
    lengths = np.array([[len(preprocess(s).split())] for s in train["sentence"]], dtype=float)
    labels = train["label"].to_numpy()
    classes = np.unique(labels)
    seen = np.isin(labels, classes[:-1])  # the probe is fitted without the last label
    p = block_probabilities(LogisticRegression().fit(lengths[seen], labels[seen]), lengths, classes)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(p[:, -1], 1 / len(classes) ** 2)  # (u/K)·(1/K) with one unseen label


def test_logistic_probe_picks_l2_on_validation_only():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 20)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    clf = LogisticProbe(validation=(X[300:], y[300:])).fit(X[:300], y[:300])
    assert set(clf.valid_scores_) == set(LogisticProbe().l2_grid) and clf.score(X[300:], y[300:]) > 0.9
    proba = clf.predict_proba(X[300:])
    np.testing.assert_allclose(proba.sum(axis=1), 1, rtol=1e-5)
    assert list(clf.classes_) == [0, 1]


def test_french_gender_task_on_an_english_only_encoder_is_rejected():
    english_only = FeatureEncoder("en-encoder", len)
    english_only.languages = ("en",)
    with pytest.raises(WorkbenchError, match="task 'gender_fr' is in 'fr' but encoder 'en-encoder' reads en"):
        probe(english_only, "gender_fr", sizes=SMALL)


def test_erasing_a_concept_leaves_a_linear_probe_at_the_majority_and_sts_nearly_intact(length_task):
    import workbench as wb
    sp = wb.load("bgt-en-fr").encoder("semantic")
    before = probe(sp, length_task, control=False)
    erased = wb.erase(sp, "length", sizes=SMALL)
    after = probe(erased, length_task, control=False)
    assert before.accuracy > before.majority + 0.15  # BGT's semantic encoder knows the length ...
    assert after.accuracy <= after.majority + 0.03  # ... and after LEACE no linear probe does
    assert erased.dim == sp.dim and erased.languages == sp.languages and erased.fingerprint != sp.fingerprint
    from workbench.reports.figures import erasure_figure
    from workbench.probing.erase import erasure_effects
    effects = erasure_effects([sp], ["length"], sizes=SMALL, years=(2016,), show_progress=False)
    accuracy, sts = effects.iloc[0], effects.iloc[1]
    assert accuracy.metric == "length accuracy" and sts.metric == "STS16" and sts.encoder == sp.name
    assert (accuracy.before, accuracy.after) == pytest.approx((100 * before.accuracy, 100 * after.accuracy))
    assert 50 < sts.before < 80 and abs(sts.change) < 2  # STS (Pearson × 100) hardly needs the length
    bars = erasure_figure(effects).data[0]
    assert list(bars.x) == ["length"] and bars.y[0] == pytest.approx(sts.change) and bars.name == sp.name
    assert (effects["note"] == "").all()  # every change is a number here
    undefined = effects.assign(after=[accuracy.after, float("nan")], change=[accuracy.change, float("nan")])
    from workbench.probing.erase import _undefined
    undefined = undefined.assign(note=[_undefined(row) for row in undefined.itertuples()])
    bars = erasure_figure(undefined).data[0]
    assert bars.y[0] == 0 and "every sentence pair gets the same cosine similarity" in bars.text[0]  # drawn, said
    with pytest.raises(WorkbenchError, match="task 'gender_fr' is in 'fr' but encoder 'bgt-en-fr:en' reads en"):
        wb.erase(wb.load("bgt-en-fr").encoder("en"), "gender_fr", sizes=SMALL)


def test_conditional_probe_measures_what_one_view_adds_beyond_another(length_task):
    exact = FeatureEncoder("exact-length", lambda s: len(preprocess(s).split()))
    noise = FeatureEncoder("noise-view", lambda s: 0.0, seed=3)
    gained = probe(exact, length_task, given=noise, control=False)  # length, beyond a view that has none
    assert gained.conditional.given == "noise-view" and gained.encoder == "[exact-length ; noise-view]"
    ci = gained.conditional
    assert gained.gain > 0.4 and ci.gain_ci_low > 0.3 and ci.gain_ci_low <= gained.gain <= ci.gain_ci_high
    nothing = probe(noise, length_task, given=exact, control=False)  # noise adds nothing beyond the length
    assert abs(nothing.gain) < 0.05 and nothing.conditional.gain_ci_low < 0.02
    assert "gain over exact-length alone" in str(nothing)
    rows = gained.to_frame().set_index("metric")
    assert rows.loc["conditional_gain", "value"] == pytest.approx(gained.gain)
    assert rows.loc["given_accuracy", "value"] == pytest.approx(gained.conditional.given_accuracy)
    with pytest.raises(WorkbenchError, match="given itself"):
        probe(exact, length_task, given=exact)
    from workbench.reports.figures import conditional_figure
    both = pd.concat([gained.to_frame(), nothing.to_frame()])
    bars = conditional_figure(both).data
    assert [b.name for b in bars] == ["exact-length beyond noise-view", "noise-view beyond exact-length"]
    assert bars[0].y[0] == pytest.approx(100 * gained.gain)


def test_language_identity_uses_one_side_of_each_pair_and_needs_a_shared_encoder():
    pairs = [("The cat sleeps.", "Le chat dort."), ("I am here.", "Je suis là."), ("Go now.", "Va maintenant."),
             ("We ate.", "Nous avons mangé.")]
    out = surface.language_identity(pairs, "en-fr", seed=0)
    assert len(out) == len(pairs) and {label for label, _, _ in out} <= {"en", "fr"}
    for (label, sentence, word), (english, french) in zip(out, pairs):  # one sentence per pair, its language
        assert sentence == (english if label == "en" else french) and word == ""
    data = build.build_task("language_id_en_fr", sizes=SMALL).data
    assert data["label"].value_counts().to_dict() == {"en": 1050, "fr": 1050}
    card = get_task("language_id_en_fr")
    assert card.languages == ("en", "fr")
    from workbench.models.folder import load
    bgt = load("bgt-en-fr")
    with pytest.raises(WorkbenchError, match="holds en and fr sentences but encoder 'bgt-en-fr:en' reads en: use "
                                             "an encoder that reads all of them"):
        probe(bgt.encoder("en"), "language_id_en_fr", sizes=SMALL)


def test_erasing_language_from_bgts_semantic_encoder_keeps_meaning():
    from workbench.probing.erase import erasure_effects
    from workbench.models.folder import load
    semantic = load("bgt-en-fr").encoder("semantic")
    sizes = {"train": 4000, "valid": 500, "test": 1000}  # LEACE's statistics need more than SMALL's 1,500 here
    effects = erasure_effects([semantic], ["language_id_en_fr"], sizes=sizes, years=(2016,), tatoeba=["fr"],
                              show_progress=False).set_index("metric")
    identity = effects.loc["language_id_en_fr accuracy"]
    assert identity.before > 65 and identity.after < 55  # it knew the language a little; now a probe cannot tell
    assert abs(effects.loc["STS16", "change"]) < 1  # meaning, as STS measures it, does not need the language ...
    assert effects.loc["Tatoeba fr-en error", "change"] < 2  # ... and translations still find each other


# Cross-lingual transfer needs a semantic space shared across the pair: the 16-dimensional BGT's is (subj_num
# transfers at > 0.65, 0.8 of the English accuracy); the warm-start bgt-en-fr's less so (0.60, 0.78 on 2026-11-29).
SHARED_SPACE = "bgt-en-fr-lang16"


def test_a_probe_trained_on_english_transfers_to_the_translations():
    from workbench.models.folder import load
    semantic = load(SHARED_SPACE).encoder("semantic")
    result = probe(semantic, "subj_num", sizes=SMALL, transfer="fr", control=False)
    assert result.transfer.language == "fr" and 50 <= result.transfer.n < result.n_test  # those with a translation
    assert result.transfer.accuracy > 0.65 and result.transfer_ratio > 0.8  # BGT's semantic space is shared
    assert result.transfer_ratio == pytest.approx(result.transfer.accuracy / result.transfer.english_accuracy)
    rows = result.to_frame().set_index("metric")
    assert rows.loc["transfer_accuracy", "n"] == result.transfer.n and "translations into fr" in str(result)
    with pytest.raises(WorkbenchError, match="'word_content''s label does not survive translation.*length"):
        probe(semantic, "word_content", transfer="fr")
    with pytest.raises(WorkbenchError, match="transfer to 'fr' is in 'fr' but encoder 'bgt-en-fr:en' reads en"):
        probe(load("bgt-en-fr").encoder("en"), "tense", transfer="fr")
    with pytest.raises(UnknownNameError, match="unknown transfer language 'de'"):
        probe(semantic, "tense", transfer="de")
    assert get_task("tense").transfers and not get_task("top_const").transfers


def test_a_probe_trained_on_one_languages_task_is_tested_on_the_others():
    from workbench.models.folder import load
    from workbench.probing.across import probe_across
    semantic = load(SHARED_SPACE).encoder("semantic")
    number = probe_across(semantic, "subj_num", "subj_num_fr", sizes=SMALL).set_index("metric")
    assert number.loc["transfer_accuracy", "labels"] == "Plur Sing"  # NN/NNS read as UD's Sing/Plur
    assert number.loc["transfer_accuracy", "ci_low"] > number.loc["majority", "value"] + 0.1  # number is shared
    assert number.loc["transfer_accuracy", "n"] == number.loc["target_accuracy", "n"] <= 300
    length = probe_across(semantic, "length", "length_fr", sizes=SMALL).set_index("metric")
    assert length.loc["target_accuracy", "ci_low"] > length.loc["transfer_accuracy", "ci_high"]  # bins do not carry
    ratio = (length.loc["transfer_accuracy", "value"] - length.loc["majority", "value"]) / (
        length.loc["target_accuracy", "value"] - length.loc["majority", "value"])
    assert length.loc["transfer_ratio", "value"] == pytest.approx(ratio) and set(length["task"]) == {
        "length→length_fr"}
    with pytest.raises(WorkbenchError, match="word_content and word_content_fr share 0 label"):
        probe_across(semantic, "word_content", "word_content_fr", sizes=SMALL)
    with pytest.raises(WorkbenchError, match="task 'length_fr' is in 'fr' but encoder 'bgt-en-fr:en' reads en"):
        probe_across(load("bgt-en-fr").encoder("en"), "length", "length_fr")  # refused before any build
    with pytest.raises(WorkbenchError, match="source and target are both 'length'"):
        probe_across(semantic, "length", "length")
    with pytest.raises(WorkbenchError, match="punct_num is not a version of length in another language.*length_fr"):
        probe_across(semantic, "length", "punct_num")  # both label 1-5: refused before anything is built


def test_a_task_has_an_english_version_when_the_two_share_labels():
    from workbench.probing.across import english_version
    assert [english_version(t) for t in ("tense_ja", "subj_num_fr", "punct_num_ar", "length_tr")] == [
        "tense", "subj_num", "punct_num", "length"]  # SubjNum's NN/NNS as Sing/Plur; PunctNum's 1-5 in common
    for task in ("word_content_fr", "gender_es", "person_tr", "politeness_ja", "length", "language_id_en_fr"):
        assert english_version(task) is None, task
    assert english_version("punct_first_ja") is None and english_version("punct_first_ar") == "punct_first"


@pytest.mark.slow
def test_language_identity_separates_surface_from_meaning():
    """A random-init shared encoder (random embeddings of the joint pieces, averaged) tells the languages apart by
    their pieces; shuffled labels and an encoder that gives a sentence and its translation one vector both sit
    near 50%."""
    from workbench.models.untrained import untrained_encoder
    from workbench.probing.pool import pair_pool
    from workbench.data.splitting import SplitConfig
    dataset = build.build_task("language_id_en_fr", sizes=SMALL)
    random_init = untrained_encoder("random-sp-average", pair="en-fr")
    assert probe(random_init, dataset, control=False).accuracy > 0.85
    shuffled = build.ProbingDataset(dataset.card, dataset.data.assign(
        label=np.random.default_rng(0).permutation(dataset.data["label"].to_numpy())), {})
    assert abs(probe(random_init, shuffled, control=False, cache=False).accuracy - 0.5) < 0.07
    meaning = {}
    for english, french in pair_pool("en-fr", SplitConfig()):
        meaning[english] = meaning[french] = english

    class OneVectorPerMeaning(FeatureEncoder):
        def encode(self, sentences, **kw):
            return np.stack([np.random.default_rng(zlib.crc32(meaning[s].encode())).standard_normal(self.dim)
                             for s in sentences]).astype(np.float32)

    translation_invariant = OneVectorPerMeaning("one-vector-per-meaning", None, dim=64)
    assert abs(probe(translation_invariant, dataset, control=False).accuracy - 0.5) < 0.07


def test_split_by_word_puts_every_word_in_one_split_and_meets_the_sizes():
    rng = np.random.default_rng(0)
    candidates = [(label, f"sentence {w} {i} {label}", f"W{w}" if i % 2 else f"w{w}")  # the case is ignored
                  for w in range(120) for i in range(int(rng.integers(1, 15)))
                  for label in (("A", "B") if w % 3 == 0 else ("A",) if w % 3 == 1 else ("B",))]
    data = build.select(candidates, {"train": 600, "valid": 100, "test": 100}, None, seed=0, balanced=True,
                        lexical=True)
    assert data.assign(w=data["word"].str.lower()).groupby("w")["split"].nunique().max() == 1
    counts = data.groupby(["split", "label"]).size()
    for tag, size in (("tr", 300), ("va", 50), ("te", 50)):  # per label: half of each split
        assert abs(counts[tag]["A"] - size) <= 0.05 * size and abs(counts[tag]["B"] - size) <= 0.05 * size
    random = build.select(candidates, {"train": 600, "valid": 100, "test": 100}, None, seed=0, balanced=True)
    assert random.assign(w=random["word"].str.lower()).groupby("w")["split"].nunique().max() > 1


def test_a_lexically_split_task_holds_out_its_words_and_results_say_seen_and_unseen():
    from dataclasses import replace
    from workbench.models.folder import load
    lexical = build.build_task("subj_num", sizes=SMALL)
    assert get_task("subj_num").lexical_split and lexical.manifest["split"] == "lexical"
    data = lexical.data.assign(w=lexical.data["word"].str.lower())
    assert data.groupby("w")["split"].nunique().max() == 1 and data["w"].nunique() > 100
    for tag, size in zip(("tr", "va", "te"), SMALL.values()):
        labels = data[data["split"] == tag]["label"].value_counts()
        assert abs(labels.sum() - size) <= 0.02 * size and labels.max() - labels.min() <= 2
    leaky = build.build_task(replace(get_task("subj_num"), lexical_split=False, digest="subj_num-random-split"),
                             sizes=SMALL)
    assert leaky.manifest["split"] == "random"
    encoder = load("bgt-en-fr").encoder("en")
    seen = probe(encoder, leaky, control=False)
    assert 0 < seen.words.n_seen < seen.n_test  # a random split shares many subject heads between train and test
    n_unseen = seen.n_test - seen.words.n_seen
    words = seen.words
    assert (words.seen_accuracy * words.n_seen + words.unseen_accuracy * n_unseen) / seen.n_test == \
        pytest.approx(seen.accuracy)
    rows = seen.to_frame().set_index("metric")
    assert rows.loc["accuracy_seen_word", "n"] == words.n_seen and rows.loc["accuracy_unseen_word", "n"] == n_unseen
    unseen = probe(encoder, lexical, control=False)
    assert unseen.words.n_seen == 0 and unseen.words.seen_accuracy is None
    assert unseen.words.unseen_accuracy == unseen.accuracy
    assert "label word unseen in training" in str(unseen)


def test_a_task_read_from_no_word_reports_no_seen_or_unseen_accuracy(length_task):
    assert length_task.data["word"].eq("").all()
    result = probe(FeatureEncoder("length-no-word", lambda s: len(s)), length_task, control=False)
    assert result.words is None
    assert not result.to_frame()["metric"].str.contains("seen_word").any()


@pytest.mark.slow
def test_seeds_report_the_mean_the_spread_and_the_ci_of_the_mean(length_task):
    noisy = FeatureEncoder("noisy-length-seeds", lambda s: len(preprocess(s).split()) + np.random.default_rng(
        zlib.crc32(s.encode())).normal(0, 3))
    runs = [probe(noisy, length_task, classifier="mlp", control=False, seed=s) for s in (5, 6)]
    pooled = probe(noisy, length_task, classifier="mlp", control=False, seed=5, seeds=2)
    accuracies = [r.accuracy for r in runs]
    assert pooled.seeds == 2 and pooled.accuracy == pytest.approx(np.mean(accuracies))
    assert pooled.seed_std == pytest.approx(np.std(accuracies, ddof=1)) and pooled.seed_std > 0
    assert pooled.ci_low < pooled.accuracy < pooled.ci_high
    assert pooled.to_frame().set_index("metric").loc["seed_std", "value"] == pooled.seed_std
    logistic = probe(noisy, length_task, control=False, seeds=2)  # zero-initialised, full batch: no seed spread
    assert logistic.seed_std == 0 and logistic.accuracy == probe(noisy, length_task, control=False).accuracy
    with pytest.raises(WorkbenchError, match=r"seeds must be a whole number from 1 to 100 \(got 0\)"):
        probe(noisy, length_task, seeds=0)


def test_seeds_and_conditioning_build_the_dataset_and_read_each_embedding_once(monkeypatch):
    from workbench import cache
    from workbench.probing import probe as probing
    builds, reads = [], []
    real_build, real_encode = probing.build_task, cache.CachedEncoder.encode
    monkeypatch.setattr(probing, "build_task", lambda *a, **k: builds.append(1) or real_build(*a, **k))
    monkeypatch.setattr(cache.CachedEncoder, "encode",
                        lambda self, sentences, **k: reads.append(self.name) or real_encode(self, sentences, **k))
    noisy = FeatureEncoder("once-per-seed", lambda s: len(preprocess(s).split()), seed=4)
    result = probe(noisy, "length", sizes=SMALL, seeds=5, refit=True)
    assert result.seeds == 5 and builds == [1] and reads == ["once-per-seed"]
    other = FeatureEncoder("once-given", lambda s: 0.0, seed=5)
    reads.clear()
    probe(noisy, "length", sizes=SMALL, given=other, control=False, refit=True)
    assert sorted(reads) == ["once-given", "once-per-seed"]  # [a ; b] is no third cache entry
    assert not cache.cache_summary()["encoder"].str.startswith("[").any()


@pytest.mark.parametrize("task, caveat", [("length", "keys on first words with"),
                                          ("gender_fr", "keys on label words with 4 effective types"),
                                          ("word_content", "the task relabelled"), ("subj_num", "")])
def test_a_control_is_called_uninformative_from_its_word_types_alone(task, caveat):
    from workbench.probing.control import uninformative
    reason = uninformative(build.build_task(task, sizes=SMALL).data)
    assert caveat in reason and bool(reason) == bool(caveat)


def test_an_uninformative_control_is_named_in_the_result_and_hatched_in_the_figure(length_task):
    from workbench.reports.figures import selectivity_figure
    result = probe(FirstWordEncoder("first-word-caveat"), length_task)
    assert "uninformative: the control keys on first words" in str(result)
    rows = result.to_frame().set_index("metric")
    assert rows.loc["selectivity", "note"] == result.control.caveat != "" and rows.loc["accuracy", "note"] == ""
    fair = rows.reset_index().assign(encoder="other", note="")
    figure = selectivity_figure(pd.concat([rows.reset_index(), fair]))
    hatched = {bar.name: bar.marker.pattern.shape for bar in figure.data}
    assert hatched == {"first-word-caveat": ("/",), "other": ("",)} and "hatched" in figure.layout.title.text


def test_the_logistic_probe_fits_the_same_on_one_thread_as_on_two(length_task, small_tokenizer):
    import torch
    from workbench.models.untrained import RandomEmbeddingAverage
    encoder = RandomEmbeddingAverage(small_tokenizer)
    X = {tag: encoder.encode(list(length_task.split(tag)["sentence"])) for tag in ("tr", "va")}
    y = {tag: length_task.split(tag)["label"].to_numpy() for tag in ("tr", "va")}
    fits = []
    threads = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            fits.append(LogisticProbe(validation=(X["va"], y["va"])).fit(X["tr"], y["tr"]))
    finally:
        torch.set_num_threads(threads)
    assert fits[0].l2_ == fits[1].l2_ and fits[0].valid_scores_ == fits[1].valid_scores_
    assert torch.allclose(fits[0].model_.weight, fits[1].model_.weight, rtol=0, atol=1e-9)
    assert fits[0].model_.weight.dtype == torch.float64


def test_the_text_baselines_of_conneau_et_al_behave_as_their_construction_says():
    """Length reads SentLen from the token count alone; a bag of unigrams cannot see a swapped bigram but a bag
    of bigrams can; the majority baseline is the commonest training label's share of the test split; every row
    carries the published number and its difference from ours."""
    from workbench.probing.baselines import PUBLISHED, text_baselines
    sizes = {"train": 10000, "valid": 500, "test": 1000}  # SMALL is too few bigrams for naive Bayes to see them
    frame = text_baselines(["length", "bigram_shift"], sizes=sizes, show_progress=False)
    rows = frame.set_index(["task", "baseline"])
    assert rows.loc[("length", "length"), "accuracy"] > 99.5
    unigrams, bigrams = rows.loc[("bigram_shift", "nb-uni-tfidf")], rows.loc[("bigram_shift", "nb-bi-tfidf")]
    assert unigrams["ci_low"] < 50 < unigrams["ci_high"]  # the same words in either class
    assert bigrams["ci_low"] > unigrams["ci_high"]
    data = build.build_task("length", sizes=sizes).data
    commonest = data[data["split"] == "tr"]["label"].value_counts().idxmax()
    share = 100 * (data[data["split"] == "te"]["label"] == commonest).mean()
    assert rows.loc[("length", "majority"), "accuracy"] == pytest.approx(share)
    for (task, baseline), row in rows.iterrows():
        assert row["published"] == PUBLISHED.loc[baseline, task]
        assert row["difference"] == pytest.approx(row["accuracy"] - row["published"])


def test_a_subset_accuracy_on_a_handful_of_sentences_is_not_shown_as_a_number():
    from workbench.probing.result import ProbeResult, WordSplit
    result = ProbeResult(encoder="e", task="subj_num", classifier="logreg", accuracy=0.8, ci_low=0.7, ci_high=0.9,
                         majority=0.5, n_train=100, n_test=200, hyperparameters="",
                         words=WordSplit(n_seen=198, seen_accuracy=0.81, unseen_accuracy=0.0))
    assert "label word unseen in training: only n=2, too few to read" in str(result)
    assert "seen 81.0 (n=198)" in str(result)
    notes = result.to_frame().set_index("metric")["note"]
    assert notes["accuracy_unseen_word"] == "only 2 sentences: too few to read" and notes["accuracy_seen_word"] == ""


def test_a_new_task_is_one_card_file(tmp_path, monkeypatch):
    """Adding a task = adding a card: a new TOML file in the cards' folder is listed, built, probed and read by an
    encoder's readable tasks and given in the docs' task table, with no other file edited (its manifest is built on
    demand, not required shipped)."""
    import shutil
    import workbench as wb
    from workbench.probing import tasks
    cards = tmp_path / "probes"
    shutil.copytree(tasks.CARDS_DIR, cards, ignore=shutil.ignore_patterns("parses", "builds.json"))
    (cards / "question_or_statement.toml").write_text(
        'name = "question_or_statement"\ntitle = "Question or statement"\nlanguage = "en"\nbuilder = "punct_first"\n'
        'labels = [".", "?", "other"]\nbalanced = true\ndescription = "Whether a held-out sentence\'s first '
        'punctuation mark is a full stop or a question mark."\n\n[params]\nmarks = [".", "?"]\n\n[sizes]\n'
        'train = 600\nvalid = 150\ntest = 150\n')
    monkeypatch.setattr(tasks, "CARDS_DIR", cards)
    assert "question_or_statement" in tasks.task_names() and len(tasks.task_names(own=False)) == len(
        list(cards.glob("*.toml")))
    encoder = wb.untrained_encoder("random-sp-average")
    assert "question_or_statement" in wb.readable_tasks(encoder)
    result = wb.probe(encoder, "question_or_statement", sizes="full", control=False)
    assert result.n_test > 100 and result.accuracy > result.majority  # the mark's words (wh-, inversion) show
    from tools import docfacts  # the docs' task table builds what builds.json (a cache) does not hold
    row = next(line for line in docfacts._probe_sizes().splitlines() if line.startswith("| question_or_statement |"))
    assert f" / {result.n_test:,} |" in row and row.endswith("a full stop or a question mark. |")
