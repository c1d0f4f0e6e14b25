"""Morphology of Japanese and Turkish sentences from offline analysers (docs/probing.md#morphosyntax).

spaCy has no small offline pipeline for either language, so the morphosyntactic tasks read each sentence's final
predicate from a morphological analyser instead of a dependency parse: Sudachi (``sudachipy`` with the
``sudachidict_small`` dictionary) for Japanese — which also segments Japanese into words, for the word-level
surface tasks — and zeyrek (a Python port of Zemberek's analyser) for Turkish. Both languages are head-final, so
the main clause's predicate is the sentence's last word group: its auxiliaries carry tense and politeness in
Japanese, its suffixes tense and the subject's person in Turkish. A word the analyser reads two ways that
disagree on the feature is left out rather than guessed.
"""
from __future__ import annotations

import importlib.util
import logging
import multiprocessing
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..checks import WorkbenchError

INSTALL = "pip install 'bgt-workbench[morphology]'   (sudachipy, sudachidict-small, zeyrek; or: bash scripts/setup)"
ANALYSERS = {"ja": "Sudachi (sudachipy + sudachidict_small)", "tr": "zeyrek"}
MODULES = {"ja": ("sudachipy", "sudachidict_small"), "tr": ("zeyrek",)}


@dataclass(frozen=True)
class Predicate:
    """What a sentence's final predicate says: ``tense`` (``PAST``/``PRES`` as in the English Tense task; ``None``
    for other moods and tenses), ``person`` (``1``/``2``/``3``, Turkish), ``polite`` (Japanese です/ます forms) and
    ``lemma``, the predicate's head word in its dictionary form (Turkish: the verb root), the tasks' label word."""
    tense: str | None
    lemma: str
    person: str | None = None
    polite: bool | None = None


FEATURES = {"tense": lambda p: p.tense, "person": lambda p: p.person,  # a task's label from a Predicate
            "politeness": lambda p: None if p.polite is None else "polite" if p.polite else "plain"}


def _missing(language: str, err: Exception) -> WorkbenchError:
    return WorkbenchError(f"the {language} tasks that read words or morphology need {ANALYSERS[language]} ({err}); "
                          f"install it with: {INSTALL}")


@lru_cache(maxsize=None)
def _japanese():
    try:
        from sudachipy import Dictionary, SplitMode
        return Dictionary(dict="small").tokenizer(mode=SplitMode.A)  # short units, as UD Japanese
    except (ImportError, RuntimeError) as err:  # RuntimeError: sudachipy without its dictionary
        raise _missing("ja", err) from None


@lru_cache(maxsize=None)
def _turkish():
    try:
        import zeyrek
    except ImportError as err:
        raise _missing("tr", err) from None
    logging.getLogger("zeyrek").setLevel(logging.ERROR)  # it logs every analysis at INFO
    return zeyrek.MorphAnalyzer()


def missing(language: str) -> str | None:
    """Why ``language``'s analyser cannot load here (with the install line), or ``None`` when it is installed
    (looked up, not loaded: cheap enough for listing tasks)."""
    absent = [name for name in MODULES[language] if importlib.util.find_spec(name) is None]
    return f"needs {ANALYSERS[language]}: {INSTALL}" if absent else None


def japanese_words(sentence: str) -> list[str]:
    """Sudachi's short-unit words of a Japanese sentence (spaces dropped)."""
    return [m.surface() for m in _japanese().tokenize(sentence) if m.part_of_speech()[0] != "空白"]


# Sudachi's part-of-speech and conjugation-type names (UniDic's): what a predicate's tail is made of
_TAIL = ("動詞", "形容詞", "助動詞")
_TRAILING = ("補助記号", "空白")
_PAST, _POLITE = "助動詞-タ", ("助動詞-マス", "助動詞-デス")


@lru_cache(maxsize=2 ** 16)  # Tense and Politeness read the same pool: Sudachi reads each sentence once
def japanese_predicate(sentence: str) -> Predicate | None:
    """The final predicate of a Japanese sentence: the run of verbs, adjectives and auxiliaries at its end (after
    punctuation and sentence-final particles such as か, ね, よ). ``PAST`` when it ends in the auxiliary た/だ,
    ``PRES`` when it ends in another terminal form; volitional, imperative and connective endings (a fragment) and
    sentences ending in a noun give ``None``. Polite when です or ます is in the run."""
    morphemes = [m for m in _japanese().tokenize(sentence) if m.part_of_speech()[0] not in _TRAILING]
    while morphemes and morphemes[-1].part_of_speech()[:2] == ("助詞", "終助詞"):
        morphemes.pop()
    end = len(morphemes)
    start = end
    while start and morphemes[start - 1].part_of_speech()[0] in _TAIL:
        start -= 1
    if start == end or not morphemes[-1].part_of_speech()[5].startswith("終止形"):
        return None
    run = morphemes[start:]
    head = next((m for m in run if m.part_of_speech()[0] != "助動詞"), morphemes[start - 1] if start else run[0])
    last = run[-1].part_of_speech()[4]
    return Predicate(tense="PAST" if last == _PAST else "PRES", lemma=head.dictionary_form(),
                     polite=any(m.part_of_speech()[4] in _POLITE for m in run))


_TENSES = {"Past", "Narr", "Prog1", "Prog2", "Aor", "Fut", "Pres"}
_PRESENT = {"Prog1", "Prog2", "Aor"}  # progressive (-Iyor, -mAktA) and aorist: SentEval's PRES
_PERSONS = {"A1sg": "1", "A1pl": "1", "A2sg": "2", "A2pl": "2", "A3sg": "3", "A3pl": "3"}


def _turkish_reading(analysis) -> tuple[str | None, str | None]:
    morphemes = [m.id_ for m, _ in analysis.morphemes[analysis.group_boundaries[-1]:]]
    tenses = {m for m in morphemes if m in _TENSES}
    tense = "PAST" if "Past" in tenses else "PRES" if tenses and tenses <= _PRESENT else None
    person = next((_PERSONS[m] for m in morphemes if m in _PERSONS), None) if tenses else None
    return tense, person


def turkish_predicates(words: Sequence[str]) -> list[Predicate | None]:
    """:func:`turkish_predicate` of each word, read in a child interpreter with a fixed string-hash seed: which
    readings zeyrek finds depends on Python's hash order (a word read one way in one run is read two ways, or
    under another lemma, in the next), and a task's build must be the same in every run."""
    if missing("tr"):
        raise _missing("tr", ModuleNotFoundError("No module named 'zeyrek'"))
    return list(_read_in_child(tuple(words)))


@lru_cache(maxsize=4)
def _read_in_child(words: tuple[str, ...]) -> tuple[Predicate | None, ...]:
    """One child's readings of ``words``, kept for the next call with the same words (Tense and Person read the
    same pool): a child's readings depend on the words it read before in the same child, so they are kept by the
    whole sequence, never by the word."""
    seed = os.environ.get("PYTHONHASHSEED")
    os.environ["PYTHONHASHSEED"] = "0"  # read by the child at its start
    try:
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            return tuple(pool.map(turkish_predicate, words, chunksize=max(1, len(words))))
    finally:
        if seed is None:
            del os.environ["PYTHONHASHSEED"]
        else:
            os.environ["PYTHONHASHSEED"] = seed


def turkish_predicate(word: str) -> Predicate | None:
    """The final verb of a Turkish sentence read by zeyrek: every analysis of ``word`` as a verb (not a noun made
    a predicate, as in *öğretmenim*) must agree, else ``None``. ``PAST`` when a past suffix -DI is among its tenses
    (simple past, past progressive *-Iyordu*, pluperfect *-mIştI*), ``PRES`` for the progressive and the aorist alone;
    the future, the evidential *-mIş* and moods (imperative, optative, conditional) give no tense label. ``person``:
    the agreement suffix's person, for a verb with any tense (the future and the evidential included)."""
    verbs = [a for a in _turkish()._parse(word)  # zeyrek's one-word analysis (its public one needs NLTK data)
             if a.pos.value == "Verb" and a.morphemes[0][0].id_ == "Verb"
             and not any(m.id_ == "Zero" for m, _ in a.morphemes)]
    readings = {_turkish_reading(a) for a in verbs}
    if len(readings) != 1:
        return None
    (tense, person), = readings
    # the verb's root (its lemma less the infinitive -mAk): zeyrek names some verbs either way from run to run
    return Predicate(tense=tense, person=person,
                     lemma=min(a.dict_item.lemma.removesuffix("mak").removesuffix("mek") for a in verbs))
