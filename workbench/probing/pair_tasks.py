"""The probing tasks of a registered pair's language, as cards written beside its corpus.

A pair registered from your own bitext (:func:`workbench.data.bitext.register_bitext`) in a language without
shipped cards gets the surface tasks the shipped second languages have, chosen from its own held-out sentences
as theirs were: Length in six bins that each hold about a sixth of the language's probe pool, PunctNum (1 to 6+),
PunctFirst over the marks that begin a sentence's punctuation at least :data:`MIN_MARK` times, BShift,
WordContent (30 words of frequency ranks 50-79), and the pair's language identity. The cards are then tasks like
any other (``workbench probe --task length_pt``); their sizes follow the pool's.
"""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import numpy as np

from ..data.bitext import pivot_bitext, register_bitext
from ..data.corpora import own_folder, tokenised_pool
from ..data.splitting import SplitConfig
from ..data.languages import LANGUAGES, language_name, languages_of_pair
from ..paths import atomic_write
from .builders import punctuation
from .pool import pair_pool, translations
from .tasks import forget_cards, task_names

log = logging.getLogger(__name__)
MIN_MARK = 100  # a mark PunctFirst names: it begins a sentence's punctuation this often in the pool
MAX_LENGTH = 40  # the longest sentence (in tokens) the Length bins cover, as in the shipped languages' cards
CONLL = "Conneau et al. 2018, What you can cram into a single vector (ACL)"
BGT = ("Wieting, Neubig and Berg-Kirkpatrick 2020, A Bilingual Generative Transformer for Semantic Sentence "
       "Embedding (EMNLP), section 5.2")


def add_pair(pair: str, corpus: str | Path, other: str | Path | None = None, *, force: bool = False) -> dict:
    """Register ``corpus`` as ``pair`` and write its languages' task cards; returns the pair's record with the
    names of the tasks written under ``tasks``."""
    return _with_cards(register_bitext(pair, corpus, other, force=force))


def pivot_pair(pair: str, *, force: bool = False) -> dict:
    """Register ``pair`` (two languages other than English, ``fr-es``) from the English its languages' en-XX
    corpora share (:func:`workbench.data.bitext.pivot_bitext`) and write its task cards; returns its record."""
    return _with_cards(pivot_bitext(pair, force=force))


def _with_cards(record: dict) -> dict:
    tokenised_pool.cache_clear()  # a pool this process read of a corpus registered before under the same pair
    translations.cache_clear()
    return {**record, "tasks": write_cards(record["pair"])}


def write_cards(pair: str, config: SplitConfig = SplitConfig()) -> list[str]:
    """Write the cards of ``pair``'s languages that have none (a shipped language has its own) and of the pair's
    language identity where it has none."""
    cards = {}
    for language in languages_of_pair(pair):
        if language != "en" and language not in LANGUAGES:
            cards.update(language_cards(language, tokenised_pool(language, config)))
    name = f"language_id_{pair.replace('-', '_')}"
    if name not in task_names(own=False):  # the shipped pairs' are package cards
        first, second = languages_of_pair(pair)  # sized by the other language's pool in en-XX, as it always was
        held = tokenised_pool(second, config) if first == "en" else pair_pool(pair, config)
        cards[name] = language_id_card(pair, _sizes(len(held)))
    if not cards:
        return []
    folder = own_folder(pair) / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in cards.items():
        atomic_write(folder / f"{name}.toml", text)
    forget_cards()
    log.info("%s: wrote the task cards %s", pair, ", ".join(cards))
    return list(cards)


def language_cards(language: str, pool: list[str] | tuple[str, ...]) -> dict[str, str]:
    """The TOML cards of ``language``'s tasks, chosen from its Moses-tokenised probe pool."""
    name, n = language_name(language), len(pool)
    sizes = _sizes(n)
    bins = length_bins([len(s.split()) for s in pool])
    marks = first_marks(pool, language)
    spans = ", ".join(f"{low}-{high}" for low, high in bins)
    cards = {
        "length": dict(title=f"Length ({language})", builder="length_bins", labels=[str(i) for i in range(len(bins))],
                       balanced=True, params=dict(bins=bins, unit="tokens"),
                       description=f"Length of a held-out {name} sentence in Moses tokens, in {len(bins)} bins that "
                                   f"each hold about an equal share of the {name} probe pool ({spans}); classes "
                                   "balanced.", analogue=f"SentEval's SentLen on {name} sentences", citation=CONLL),
        "punct_num": dict(title=f"PunctNum ({language})", builder="punct_count",
                          labels=["1", "2", "3", "4", "5", "6+"], max_per_label=2000, params=dict(max_label=6),
                          description=f"Number of punctuation characters in a held-out {name} sentence, 6 meaning "
                                      "six or more; sentences without punctuation are dropped.",
                          analogue=f"the BGT paper's PunctNum on {name} sentences", citation=BGT),
        "punct_first": dict(title=f"PunctFirst ({language})", builder="punct_first", labels=[*marks, "other"],
                            max_per_label=2000, params=dict(marks=marks),
                            description=f"Identity of the first punctuation character of a held-out {name} "
                                        f"sentence: the marks that come first at least {MIN_MARK} times in the "
                                        "pool, the rest folded into 'other'.",
                            analogue=f"the BGT paper's PunctFirst on {name} sentences", citation=BGT),
        "bigram_shift": dict(title=f"BShift ({language})", builder="bigram_shift", labels=["O", "I"], balanced=True,
                             description=f"Whether two adjacent word tokens of a held-out {name} sentence were "
                                         "swapped (I) or not (O).",
                             analogue=f"SentEval's BShift on {name} sentences", citation=CONLL),
        "word_content": dict(title=f"WordContent ({language})", builder="word_content", labels="derived",
                             max_per_label=40, params=dict(first_rank=50, n_words=30),
                             description=f"Which of 30 frequent {name} words (frequency ranks 50-79 in the pool) "
                                         "a held-out sentence holds exactly once.",
                             analogue=f"SentEval's WordContent on {name} sentences", citation=CONLL),
    }
    return {f"{task}_{language}": _toml(f"{task}_{language}", language, card, sizes) for task, card in cards.items()}


def language_id_card(pair: str, sizes: dict[str, int]) -> str:
    """The TOML card of ``pair``'s language identity: which of its two languages a held-out sentence is in."""
    first, second = languages_of_pair(pair)
    names = [language_name(lang) for lang in (first, second)]
    return _toml(f"language_id_{first}_{second}", pair,
                 dict(title=f"Language identity ({first}–{second})", builder="language_identity",
                      labels=[first, second], balanced=True,
                      description=f"Which language a sentence is in, {names[0]} or {names[1]}: each held-out "
                                  "translation pair gives one of its two sentences, chosen at random.",
                      citation="Wieting, Neubig & Berg-Kirkpatrick 2020 (the claim tested)"), sizes)


def length_bins(lengths: list[int], n_bins: int = 6) -> list[list[int]]:
    """Contiguous length ranges from the shortest length up to :data:`MAX_LENGTH`, each cut where its count comes
    nearest to its share of what is left, and holding at least half of it (a length is never split, so one common
    length makes a bin of its own)."""
    counts = Counter(n for n in lengths if n <= MAX_LENGTH)
    if not counts:
        return [[1, MAX_LENGTH]]
    bins, low, held, left = [], min(counts), 0, sum(counts.values())
    for length in sorted(counts):
        target = left / (n_bins - len(bins))
        if (held >= target / 2 and len(bins) < n_bins - 1  # never a bin of a few stragglers
                and abs(held + counts[length] - target) > abs(held - target)):
            bins.append([low, length - 1])
            low, left, held = length, left - held, 0
        held += counts[length]
    return [*bins, [low, MAX_LENGTH]]


def first_marks(pool, language: str, most: int = 8) -> list[str]:
    """The marks (at most ``most``) that come first among a sentence's punctuation ≥ :data:`MIN_MARK` times."""
    marks = punctuation(language)
    first = Counter(next((ch for ch in s if ch in marks), "") for s in pool)
    first.pop("", None)
    return [mark for mark, count in first.most_common(most) if count >= MIN_MARK]


def _sizes(n: int) -> dict[str, int]:
    """Sizes a pool of ``n`` sentences can give (the build takes fewer where a task's labels are fewer)."""
    return {"train": max(1, min(6000, int(0.7 * n))), "valid": max(1, min(1000, int(0.15 * n))),
            "test": max(1, min(1000, int(0.15 * n)))}


def _toml(name: str, language: str, card: dict, sizes: dict[str, int]) -> str:
    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, np.integer)):
            return str(int(v))
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return "[" + ", ".join(value(x) for x in v) + "]"
    lines = [f"name = {value(name)}", f"language = {value(language)}"]
    lines += [f"{key} = {value(v)}" for key, v in card.items() if key != "params"]
    for table, entries in (("params", card.get("params", {})), ("sizes", sizes)):
        if entries:
            lines += ["", f"[{table}]", *(f"{key} = {value(v)}" for key, v in entries.items())]
    return "\n".join(lines) + "\n"
