"""The leak-free split of a parallel corpus.

The split puts every pair into ``train``, ``valid``, ``probe`` (the pool probing datasets are built from)
or ``test``. Many English sentences recur with several translations (and some translations with several
English sentences), so pairs are grouped into connected components of shared normalised English *or* foreign
sentences, and a whole component goes to one side. Each normalised English sentence has a bucket drawn from
a salted hash — the same function for every language pair — and a component goes to the most held-out bucket
among its English sentences (test > probe > valid > train). Hence a sentence hashed into ``probe`` is held out
from training in *every* pair, which is what lets probing sets draw on the union of the five pools.

A pair of two other languages (``fr-es``) has no English to hash: each of its sentences takes the split its
language's English pair gave it (a French sentence held out in en-fr stays held out in fr-es, so the French probing
tasks remain unseen by a fr-es model), a sentence that pair lacks the salted hash of its own normalised form, and a
component the most held-out bucket among its sentences.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

import numpy as np

SPLITS = ("train", "valid", "probe", "test")
SPLIT_VERSION = 1  # bump when split_pairs changes: the splits stored under the home are keyed on it
HELD_OUT_ORDER = ("test", "probe", "valid", "train")  # a component takes the first bucket any member has

Pair = tuple[str, str]


@dataclass(frozen=True)
class SplitConfig:
    """Fractions of normalised English sentences hashed into each held-out bucket (the rest is train)."""

    valid: float = 0.01
    probe: float = 0.15
    test: float = 0.01
    salt: str = "bgt-workbench-split-v1"

    def __post_init__(self):
        fractions = (self.valid, self.probe, self.test)
        if any(f < 0 for f in fractions) or sum(fractions) >= 1:
            raise ValueError(f"split fractions must be >= 0 and sum to < 1, got {fractions}")


_NON_WORD = re.compile(r"\W+")
# the ASCII characters \W matches (all but letters, digits and "_"): an ASCII sentence (most English ones) drops
# them with bytes.translate, 3.8x faster than the regex over a corpus's English side
_ASCII_NON_WORD = bytes(c for c in range(128) if not (chr(c).isalnum() or chr(c) == "_"))


def normalise(sentence: str) -> str:
    """Key used for leakage checks: NFKC, lower case, non-word characters removed (as the data curator did)."""
    if sentence.isascii():  # NFKC leaves ASCII text as it is
        return sentence.lower().encode().translate(None, _ASCII_NON_WORD).decode()
    return _NON_WORD.sub("", unicodedata.normalize("NFKC", sentence).lower())


def bucket(english: str, config: SplitConfig = SplitConfig()) -> str:
    """Bucket of one English sentence from a salted hash of its normalised form (same for every pair; in a pair
    without English, of a sentence its language's English pair lacks)."""
    digest = hashlib.blake2b(f"{config.salt}\x00{normalise(english)}".encode(), digest_size=8).digest()
    u = int.from_bytes(digest, "big") / 2**64
    for name, fraction in (("test", config.test), ("probe", config.probe), ("valid", config.valid)):
        if u < fraction:
            return name
        u -= fraction
    return "train"


def split_pairs(pairs: list[Pair], config: SplitConfig = SplitConfig(), buckets: list[str] | None = None
                ) -> dict[str, list[Pair]]:
    """Assign whole components of pairs sharing a first-side or second-side sentence to one split.

    Deterministic: the result depends only on the pairs, ``config`` and ``buckets`` (each pair's own bucket;
    default: the salted hash of its English, first, sentence). Order within a split follows input.
    """
    return by_code(pairs, split_codes(pairs, config, buckets))


def split_codes(pairs: list[Pair], config: SplitConfig = SplitConfig(), buckets: list[str] | None = None
                ) -> np.ndarray:
    """Each pair's split as its index in :data:`SPLITS` (uint8), as :func:`split_pairs` assigns it."""
    groups = translation_groups(pairs)
    rank = {name: i for i, name in enumerate(HELD_OUT_ORDER)}
    group_bucket: dict[str, str] = {}
    own = buckets if buckets is not None else (bucket(en, config) for en, _ in pairs)
    for b, group in zip(own, groups):
        if rank[b] < rank[group_bucket.get(group, "train")]:
            group_bucket[group] = b
    return np.array([SPLITS.index(group_bucket.get(group, "train")) for group in groups], dtype=np.uint8)


def translation_groups(pairs: list[Pair]) -> list[str]:
    """Each pair's group, named by one of its sentences: pairs that share a first-side or a second-side sentence
    (compared as :func:`normalise` gives them), directly or through other pairs, are in one group."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    keys = [("e" + normalise(first), "f" + normalise(second)) for first, second in pairs]
    for e, f in keys:
        a, b = find(e), find(f)
        if a != b:
            parent[a] = b
    return [find(e) for e, _ in keys]


def by_code(pairs: list[Pair], codes: np.ndarray) -> dict[str, list[Pair]]:
    """The pairs of each split, in input order, from each pair's index in :data:`SPLITS`."""
    splits: dict[str, list[Pair]] = {name: [] for name in SPLITS}
    for pair, code in zip(pairs, codes.tolist()):
        splits[SPLITS[code]].append(pair)
    return splits
