"""Parallel corpora: reading ``parallel/en-XX.tsv.gz``, length filtering, and each pair's split (the rule in
:mod:`.splitting`), computed once per home — or read from the package for the shipped pairs — and the probe pool
the split holds out."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..checks import DataFormatError, WorkbenchError, check_name
from ..paths import PROBES_DIR, atomic_write, data_dir, home_dir, ship_files, shipped_file
from . import sha256_of, utf8_lines
from .languages import PAIRS, languages_of_pair, pair_name
from .moses import tokenise_many
from .splitting import (HELD_OUT_ORDER, SPLIT_VERSION, SPLITS, Pair, SplitConfig, bucket, by_code, normalise,
                        split_codes)

log = logging.getLogger(__name__)

SHIPPED_SPLITS = PROBES_DIR / "splits"  # the shipped pairs' splits (package data)
# the length filter's default: whitespace tokens per side (the shared files are cut to 3-100; the paper keeps 5-100)
MIN_TOKENS, MAX_TOKENS = 3, 100


def own_folder(pair: str) -> Path:
    """Where a pair registered from a user's file keeps its corpus (``corpus.tsv.gz``) and record (``pair.json``)."""
    return home_dir() / "pairs" / pair


def known_pairs() -> tuple[str, ...]:
    """The shipped pairs, then any other pair with a corpus in the data folder's ``parallel/`` (``XX-YY.tsv.gz``)
    or registered under the home (:func:`workbench.data.bitext.register_bitext`)."""
    found = set()
    try:
        found |= {p.name.removesuffix(".tsv.gz") for p in (data_dir() / "parallel").glob("*-*.tsv.gz")
                  if _PAIR_FILE.fullmatch(p.name) and _named_as_written(p.name.removesuffix(".tsv.gz"))}
    except FileNotFoundError:  # WORKBENCH_DATA names no folder: said where the data is read
        pass
    registered = home_dir(create=False) / "pairs"  # (a --help that lists tasks creates no home)
    if registered.is_dir():
        found |= {p.parent.name for p in registered.glob("*/pair.json")}
    return (*PAIRS, *sorted(found - set(PAIRS)))


def _named_as_written(pair: str) -> bool:
    """Whether a data file's pair is written as the workbench names it (``es-en`` or ``en-xq`` is no pair: said)."""
    try:
        if pair_name(pair) == pair:
            return True
    except WorkbenchError as err:
        log.warning("parallel/%s.tsv.gz is not read as a language pair: %s", pair, err)
        return False
    log.warning("parallel/%s.tsv.gz is not read as a language pair: the workbench names it %s", pair, pair_name(pair))
    return False


def check_pair(pair: str) -> str:
    """The pair's name (:func:`.languages.pair_name`) if it has a corpus; otherwise say how to give it one."""
    if pair in PAIRS:
        return pair
    name = pair_name(pair)
    known = known_pairs()
    if name not in known:
        sources = [f"en-{lang}" for lang in name.split("-")]
        pivot = (f"make it from the English {' and '.join(sources)} share with `workbench data add-pair {name} "
                 "--pivot`, or " if not name.startswith("en-") and all(p in known for p in sources) else "")
        raise WorkbenchError(f"no corpus for the language pair {name}: {pivot}register a parallel file with `workbench "
                             f"data add-pair {name} --corpus FILE` (or train with --corpus FILE); known pairs: "
                             f"{', '.join(known)}")
    return name


def language_of(pair: str) -> str:
    """The pair's second language (``'en-fr' -> 'fr'``: the one beside English); a pair without a corpus is refused,
    saying how to register one."""
    return check_pair(pair).split("-", 1)[1]


def languages_of(pair: str) -> tuple[str, str]:
    """Both languages of a pair with a corpus, in its order (``'fr-es' -> ('fr', 'es')``)."""
    return languages_of_pair(check_pair(pair))


def pair_of_language(language: str) -> str:
    """The pair whose held-out side is ``language``'s probe pool: ``en-XX`` where it is known, else the first known
    pair with that language (a language only a pair without English has)."""
    pairs = known_pairs()
    if f"en-{language}" in pairs:
        return f"en-{language}"
    having = [pair for pair in pairs if language in languages_of_pair(pair)]
    if not having:
        raise WorkbenchError(f"no known pair has {language!r} (known pairs: {', '.join(pairs)}); register one with "
                             f"`workbench data add-pair en-{language} --corpus FILE`")
    return having[0]


def pairs_of(pair: str) -> tuple[str, ...]:
    """The pairs a training run reads: ``pair`` itself, or every shipped pair for ``"all"`` (the multilingual NMT)."""
    return PAIRS if pair == "all" else (check_pair(pair),)


def corpus_path(pair: str) -> Path:
    """The pair's corpus: ``<data>/parallel/PAIR.tsv.gz`` (always, for a shipped pair), else its registered copy."""
    pair = check_pair(pair)
    shipped = data_dir() / "parallel" / f"{pair}.tsv.gz"
    return shipped if pair in PAIRS or shipped.is_file() else own_folder(pair) / "corpus.tsv.gz"


_PAIR_FILE = re.compile(r"[a-z]{2,3}-[a-z]{2,3}\.tsv\.gz")
_DIGESTS: dict[tuple, str] = {}


def corpus_digest(pair: str) -> str:
    """sha256 of the pair's corpus file: what is built from it is keyed on its bytes, so a copied or touched file
    keeps its builds. Hashed once per process for each (path, size, modification time)."""
    path = corpus_path(pair)
    if not path.is_file():
        raise _no_corpus(path)
    stat = path.stat()
    stamp = (str(path), stat.st_size, stat.st_mtime_ns)
    if stamp not in _DIGESTS:
        _DIGESTS[stamp] = sha256_of(path)
    return _DIGESTS[stamp]


def _no_corpus(path: Path) -> FileNotFoundError:
    return FileNotFoundError(f"no corpus file at {path} (data root: {data_dir()}; set WORKBENCH_DATA to a folder "
                             "with parallel/ and eval/, or run `workbench data download opus`)")


def read_pairs(path: str | Path) -> list[Pair]:
    """Read an ``english<TAB>foreign`` file (gzip or plain UTF-8), one pair per line, no header.

    Raises :class:`DataFormatError` naming the file and line for undecodable bytes, a wrong column count
    or an empty side: a corpus with a broken line is rejected, not silently repaired.
    """
    path = Path(path)
    if not path.is_file():
        raise _no_corpus(path)
    pairs = []
    for number, line in utf8_lines(path):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataFormatError(path, number, f"{len(fields)} tab-separated columns",
                                  "2 columns: english<TAB>foreign")
        english, foreign = fields[0].strip(), fields[1].strip()
        if not english or not foreign:
            side = "English" if not english else "foreign"
            raise DataFormatError(path, number, f"empty {side} side", "non-empty sentences on both sides")
        pairs.append((english, foreign))
    return pairs


def n_tokens(sentence: str, language: str) -> int:
    """Length used by the filter: whitespace tokens, or characters for Japanese (no spaces in Tatoeba ja)."""
    return len(sentence) if language == "ja" else len(sentence.split())


def filter_by_length(pairs: list[Pair], language: str, min_tokens: int = MIN_TOKENS, max_tokens: int = MAX_TOKENS,
                     first: str = "en") -> list[Pair]:
    """Keep pairs whose both sides have ``min_tokens..max_tokens`` tokens (ja: characters, up to twice the max);
    ``language`` is the second side's, ``first`` the first side's.

    The paper keeps 5–100 tokens; the shared files are already cut to 3–100, so 3 (:data:`MIN_TOKENS`) is the
    default and the paper's 5 one argument away. The number dropped is logged.
    """
    def fits(sentence: str, lang: str) -> bool:
        return min_tokens <= n_tokens(sentence, lang) <= (2 * max_tokens if lang == "ja" else max_tokens)

    kept = [(a, b) for a, b in pairs if fits(a, first) and fits(b, language)]
    if len(kept) < len(pairs):
        log.info("length filter %d..%d tokens dropped %d of %d %s-%s pairs",
                 min_tokens, max_tokens, len(pairs) - len(kept), len(pairs), first, language)
    return kept


def load_splits(pair: str, min_tokens: int = MIN_TOKENS, max_tokens: int = MAX_TOKENS,
                config: SplitConfig = SplitConfig()) -> dict[str, list[Pair]]:
    """Read, filter and split one language pair's corpus (cached per process; treat the lists as read-only)."""
    pair = check_pair(pair)
    return _load_splits(pair, min_tokens, max_tokens, config, corpus_path(pair))


@lru_cache(maxsize=8)
def _load_splits(pair: str, min_tokens: int, max_tokens: int, config: SplitConfig, path: Path):
    first, language = languages_of(pair)
    pairs = filter_by_length(read_pairs(path), language, min_tokens, max_tokens, first)
    # the split is stored under the home, keyed on everything it depends on: the components take seconds per pair
    stored = _split_file(pair, min_tokens, max_tokens, config)
    codes = _stored_codes(stored, len(pairs))
    if codes is None:  # the first time in this home (for a pair the package ships none of), or a damaged file
        codes = split_codes(pairs, config, None if first == "en" else _inherited_buckets(pairs, (first, language),
                                                                                      min_tokens, max_tokens, config))
        stored.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(stored, lambda tmp: _write_codes(tmp, codes))
    splits = by_code(pairs, codes)
    log.info("%s: %s", pair, ", ".join(f"{k} {len(v)}" for k, v in splits.items()))
    return splits


def inherited_digests(pair: str, own_only: bool = False) -> dict[str, str]:
    """For a pair without English, the corpus digest of each of its languages' English pairs (its split is taken
    from theirs: what is built from the split depends on them); ``own_only``: only those not shipped (a shipped
    corpus is fixed, and the keys stored before stay valid). Empty for a pair with English."""
    first, second = languages_of(pair)
    if first == "en":
        return {}
    known = known_pairs()
    return {lang: corpus_digest(f"en-{lang}") for lang in (first, second)
            if f"en-{lang}" in known and not (own_only and f"en-{lang}" in PAIRS)}


def _inherited_buckets(pairs: list[Pair], languages: tuple[str, str], min_tokens: int, max_tokens: int,
                       config: SplitConfig) -> list[str]:
    """Each pair's own bucket in a pair without English: the more held out of its two sentences' buckets, each the
    split its language's English pair put it in, or for a sentence that pair lacks its salted hash."""
    rank = {name: i for i, name in enumerate(HELD_OUT_ORDER)}
    known = known_pairs()
    splits_by_side = []
    for side, lang in enumerate(languages):
        held: dict[str, str] = {}
        if f"en-{lang}" in known:
            for name in reversed(HELD_OUT_ORDER):  # train first, so a more held-out split overwrites it
                held.update((normalise(xx), name) for _, xx in load_splits(f"en-{lang}", min_tokens, max_tokens,
                                                                           config)[name])
        splits_by_side.append(held)
    out = []
    for sentences in pairs:
        sides = [held.get(normalise(s)) or bucket(s, config) for held, s in zip(splits_by_side, sentences)]
        out.append(min(sides, key=rank.__getitem__))
    return out


def forget_read() -> None:
    """Drop this process's splits and pools (a registered corpus replaced under the same path)."""
    _load_splits.cache_clear()
    _probe_pool.cache_clear()


def _split_file(pair: str, min_tokens: int, max_tokens: int, config: SplitConfig) -> Path:
    """Where the pair's split is stored under the home: named by everything it depends on."""
    inherited = inherited_digests(pair)
    spec = json.dumps({"corpus_sha256": corpus_digest(pair), "min_tokens": min_tokens, "max_tokens": max_tokens,
                       "split": config.__dict__, "version": SPLIT_VERSION,
                       **({"inherited_from": inherited} if inherited else {})}, sort_keys=True)
    return home_dir() / "splits" / f"{pair}-{hashlib.sha256(spec.encode()).hexdigest()[:16]}.npy"


def _stored_codes(path: Path, n: int | None = None) -> np.ndarray | None:
    """The split stored under the home, else the one the package ships under the same name (the shipped pairs'
    splits: sha256-checked against their manifest), else None; of ``n`` pairs where given (the file is named by
    the corpus's sha256, the filter and the split: only a damaged one holds another number)."""
    codes = _read_codes(path, n)
    if codes is None and (shipped := shipped_file(SHIPPED_SPLITS, path.name + ".gz")) is not None:
        codes = _read_codes(io.BytesIO(gzip.decompress(shipped.read_bytes())), n)
    return codes


def ship_splits(min_tokens: int = MIN_TOKENS, max_tokens: int = MAX_TOKENS, config: SplitConfig = SplitConfig()
                ) -> Path:
    """Make the shipped pairs' splits the ones the package ships (``workbench/probes/splits/``, gzip-compressed),
    so a fresh home reads them instead of computing the translation components (seconds per pair): each read from
    the home, else from the package where it holds the same, else computed (and stored) here. Returns their
    manifest."""
    forget_read()  # read or computed in this home, not remembered from another
    files = {}
    for pair in PAIRS:
        n = sum(map(len, load_splits(pair, min_tokens, max_tokens, config).values()))
        stored = _split_file(pair, min_tokens, max_tokens, config)
        raw = io.BytesIO()
        np.save(raw, _stored_codes(stored, n), allow_pickle=False)  # the home's, or the package's it read
        files[stored.name + ".gz"] = lambda tmp, raw=raw.getvalue(): tmp.write_bytes(
            gzip.compress(raw, compresslevel=9, mtime=0))
    return ship_files(SHIPPED_SPLITS, files, "each shipped pair's split, one uint8 per pair of its filtered corpus "
                      "(workbench probes build --ship-parses)", "*.npy.gz")


def _read_codes(path: Path | io.BytesIO, n: int | None) -> np.ndarray | None:
    """A stored split (each pair's index in :data:`SPLITS`), or None if there is none or it does not fit ``n``."""
    try:
        codes = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    fits = codes.ndim == 1 and (n is None or len(codes) == n)
    return codes if codes.dtype == np.uint8 and fits and (codes < len(SPLITS)).all() else None


def _write_codes(path: Path, codes: np.ndarray) -> None:
    with open(path, "wb") as out:
        np.save(out, codes, allow_pickle=False)


def probe_pool(pairs: tuple[str, ...] = PAIRS, config: SplitConfig = SplitConfig(), language: str = "en") -> list[str]:
    """Sentences held out from training, deduplicated, in a stable order.

    English (``language="en"``): sentences of every pair's probe split whose *own* bucket is ``probe`` (a
    train-bucket sentence pulled into a probe component by a shared translation may still be trained on by
    another pair's model). Another language: its side of the probe split of its pair (:func:`pair_of_language`:
    ``en-XX`` where there is one).
    """
    check_name("probe-pool language", language, sorted({"en", *(lang for p in known_pairs()
                                                                 for lang in languages_of_pair(p))}))
    pairs = (pair_of_language(language),) if language != "en" else tuple(pairs)
    return list(_probe_pool(pairs, config, language, tuple(corpus_path(pair) for pair in pairs)))


@lru_cache(maxsize=8)
def _probe_pool(pairs: tuple[str, ...], config: SplitConfig, language: str, paths: tuple[Path, ...]
                ) -> tuple[str, ...]:
    """:func:`probe_pool` once per process (keyed on the corpora's paths, as :func:`load_splits`)."""
    if language != "en":
        side = languages_of_pair(pairs[0]).index(language)
        held = (pair[side] for pair in load_splits(pairs[0], config=config)["probe"])
        foreign = {normalise(xx): xx for xx in held if normalise(xx)}
        return tuple(foreign[k] for k in sorted(foreign, key=_stable_order))
    seen: dict[str, str] = {}
    for pair in pairs:
        for english, _ in load_splits(pair, config=config)["probe"]:
            key = normalise(english)
            if key and key not in seen and bucket(english, config) == "probe":
                seen[key] = english
    return tuple(seen[k] for k in sorted(seen, key=_stable_order))


@lru_cache(maxsize=None)
def tokenised_pool(language: str, config: SplitConfig) -> tuple[str, ...]:
    """The language's probe pool, Moses-tokenised: what the probing builders (and the parser) read."""
    return tuple(tokenise_many(probe_pool(language=language, config=config)))


def _stable_order(key: str) -> bytes:
    return hashlib.blake2b(key.encode(), digest_size=8).digest()


def split_summary(pair: str) -> dict[str, int]:
    """Pairs per split (``data info``, the docs): counted from the pair's stored split where it has one, without
    reading its corpus (``data info`` on the five pairs: 3.1 s -> 0.5 s), else from :func:`load_splits`."""
    codes = _stored_codes(_split_file(check_pair(pair), MIN_TOKENS, MAX_TOKENS, SplitConfig()))
    if codes is None:
        counts = {name: len(rows) for name, rows in load_splits(pair).items()}
    else:
        counts = dict(zip(SPLITS, np.bincount(codes, minlength=len(SPLITS)).tolist()))
    return counts | {"total": sum(counts.values())}

