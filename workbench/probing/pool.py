"""The probe pool as the builders read it (English: Moses-tokenised sentences; a pair's task: held-out translation
pairs) and what each builder labels in it, its candidates: made once per home and stored under
``<home>/probing/candidates/`` (gzip-compressed JSON, named by the builder, its version and parameters and the pool's
inputs), so a task built at new sizes, or in a new process, neither parses nor labels the pool again."""
from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import logging
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from ..data.corpora import (PAIRS, corpus_digest, languages_of, load_splits, pair_of_language, probe_pool,
                            tokenised_pool)
from ..data.splitting import SplitConfig, bucket, normalise
from ..data.moses import detokenise_many
from ..paths import atomic_write, home_dir
from .builders import BUILDERS, VERSIONS
from .tasks import TaskCard

log = logging.getLogger(__name__)


def pool_key(config: SplitConfig, languages: Sequence[str] = ("en",)) -> str:
    """What the probe pools of ``languages`` (a task's: one language, or a pair's two) are drawn from: the split
    and every shipped corpus's bytes (not its file's date, so a copy of the data keeps its builds), and a
    registered pair's corpus where its pool is read from it."""
    h = hashlib.sha256(json.dumps(config.__dict__, sort_keys=True).encode())
    for pair in PAIRS:
        h.update(f"{pair}\0{corpus_digest(pair)}".encode())
    read = [pair_of_language(language) for language in languages if language != "en"]
    if len(languages) == 2 and not tuple(languages)[0] == "en":  # a pair without English: its own corpus too
        read.append("-".join(languages))
    for pair in dict.fromkeys(read):
        if pair not in PAIRS:
            h.update(f"{pair}\0{corpus_digest(pair)}".encode())
    return h.hexdigest()


def pair_pool(pair: str, config: SplitConfig) -> list[tuple[str, str]]:
    """The pair's held-out translation pairs that no pair trains on (as :func:`probe_pool`): whose English side is
    hashed into ``probe``, or in a pair without English, whose two sentences are in their languages' probe pools."""
    first, second = languages_of(pair)
    if first == "en":
        def held(a: str, _: str) -> bool:
            return bucket(a, config) == "probe"
    else:
        pools = [{normalise(s) for s in probe_pool(config=config, language=lang)} for lang in (first, second)]

        def held(a: str, b: str) -> bool:
            return normalise(a) in pools[0] and normalise(b) in pools[1]
    seen: dict[str, tuple[str, str]] = {}
    for a, b in load_splits(pair, config=config)["probe"]:
        if held(a, b):
            seen.setdefault(normalise(a), (a, b))
    return [seen[key] for key in sorted(seen)]


@lru_cache(maxsize=None)
def translations(pair: str, config: SplitConfig = SplitConfig()) -> dict[str, str]:
    """The first side's sentence key (:func:`normalise`; English in en-XX) → its translation, over the pair's
    held-out pairs."""
    return {normalise(first): second for first, second in pair_pool(pair, config)}


def labelled(builder: str, language: str, paired: bool, params: dict, sentences: Sequence
             ) -> list[tuple[str, str, str]]:
    """The builder's labelled sentences: from held-out translation pairs as they are (``paired``: a pair's
    task), or from Moses-tokenised sentences, detokenised after."""
    rows = BUILDERS[builder](sentences, language, **params)
    if paired:
        return rows
    return [(label, s, word) for (label, _, word), s in zip(rows, _detokenised([s for _, s, _ in rows]))]


_detokenised_memo: dict[str, str] = {}  # the builders of one pool return many of the same sentences


def _detokenised(sentences: list[str]) -> list[str]:
    """:func:`detokenise_many`, once per sentence (up to 300,000 remembered; safe from several threads)."""
    global _detokenised_memo
    memo = _detokenised_memo
    new = [s for s in dict.fromkeys(sentences) if s not in memo]
    done = dict(zip(new, detokenise_many(new)))
    out = [done[s] if s in done else memo[s] for s in sentences]
    if len(memo) + len(done) > 300_000:
        _detokenised_memo = memo = {}
    memo.update(done)
    return out


def builder_params(card: TaskCard, seed: int) -> str:
    """The card's builder parameters (with the seed where the builder draws), as JSON: a cache key."""
    takes_seed = "seed" in inspect.signature(BUILDERS[card.builder]).parameters
    return json.dumps({**card.params, **({"seed": seed} if takes_seed else {})}, sort_keys=True)


def is_paired(card: TaskCard) -> bool:
    """A pair's task: its builder gets held-out translation pairs, raw."""
    return len(card.languages) > 1


def candidates_path(builder: str, language: str, paired: bool, params: str, config: SplitConfig) -> Path:
    """Where the pool's candidates of a builder are stored: named by everything they are a function of (the
    builder and its version, its parameters, the language and the pool's inputs)."""
    spec = json.dumps({"builder": builder, "version": VERSIONS[builder], "language": language, "paired": paired,
                       "params": params, "pool": pool_key(config, language.split("-"))}, sort_keys=True)
    key = hashlib.sha256(spec.encode()).hexdigest()[:16]
    return home_dir() / "probing" / "candidates" / f"{builder}-{language}-{key}.json.gz"


def read_candidates(path: Path) -> tuple[int, tuple[tuple[str, str, str], ...]] | None:
    """Stored candidates, or None where there are none or the file is damaged (gzip's CRC and the JSON's shape
    are checked), so they are made again."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            stored = json.load(f)
        n_pool, candidates = stored["n_pool"], tuple(tuple(c) for c in stored["candidates"])
        if isinstance(n_pool, int) and all(len(c) == 3 and all(isinstance(x, str) for x in c) for c in candidates):
            return n_pool, candidates
    except FileNotFoundError:
        return None
    except (OSError, EOFError, ValueError, KeyError, TypeError):
        pass
    log.warning("stored candidates %s are damaged; building them again", path)
    return None


@lru_cache(maxsize=None)
def pool_candidates(builder: str, language: str, paired: bool, params: str, config: SplitConfig,
                    fresh: bool = False) -> tuple[int, tuple[tuple[str, str, str], ...]]:
    """:func:`labelled` of the probe pool and the pool's size, made once per home (and kept in memory once per
    process): every size of a task draws from the same candidates, and the builder (parses, frequency tables) is
    most of a build's time. ``fresh``: made again, not read."""
    path = candidates_path(builder, language, paired, params, config)
    stored = None if fresh else read_candidates(path)
    if stored is not None:
        return stored
    sentences = pair_pool(language, config) if paired else tokenised_pool(language, config)
    made = len(sentences), tuple(labelled(builder, language, paired, json.loads(params), sentences))
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"n_pool": made[0], "candidates": made[1]}, ensure_ascii=False).encode()
    atomic_write(path, lambda tmp: tmp.write_bytes(gzip.compress(payload, compresslevel=6, mtime=0)))
    return made


