"""Preprocessing and the joint sentencepiece model of a language pair.

Text is Moses-tokenised with the *English* rules for every language (as the official code does), lower-cased,
then cut into pieces by one sentencepiece model shared by English and the foreign language. Every sequence
gets EOS appended; there is no BOS. The multilingual NMT encoder (Schwenk & Douze 2017) uses one model for all
pairs (``pair="all"``) with a language-tag piece per language (``<2fr>``: "translate into French").

A model is trained once and stored under the workbench home in a folder named by a digest of everything that
determines it (corpus files, split, vocabulary, options), so asking again is free and a changed input gives a
new model. A model a shipped model was trained with (``trained/tokenizers.json`` names it by that folder name and
its sha256) is copied from the model instead of trained again, and two processes asking for the same new model
train it once (the second waits for the first).
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import chain
from pathlib import Path

import numpy as np
import sentencepiece as spm
from filelock import FileLock

from ..paths import atomic_write, home_dir, read_json, trained_dir
from .corpora import corpus_digest, inherited_digests, language_of, languages_of, load_splits, pairs_of
from .splitting import SplitConfig
from .moses import detokenise_many, tokenise_many

try:  # sentencepiece's id lists into one array in C (_pieces.c), built by the install where a C compiler is found
    from . import _pieces
except ImportError:
    _pieces = None

log = logging.getLogger(__name__)

PAD, UNK, BOS, EOS = 0, 1, 2, 3
TOKENIZER_VERSION = 2
# a run of punctuation marks as style transfer counts them (the form it measures, the source it strips, the marks
# hide_punctuation hides from z_sem): anything but letters, digits, spaces and the apostrophe (n't, 's, l')
PUNCTUATION = re.compile(r"[^\w\s']+")


def tokenise(sentence: str) -> str:
    """Moses tokenisation with the English rules and no escaping; tokens joined by single spaces."""
    return tokenise_many([sentence])[0]


def detokenise(tokens: str) -> str:
    """Inverse of :func:`tokenise` (``tokenise(detokenise(t)) == t`` for Moses output; tokenising Moses output
    again is not, since ``'re`` becomes ``' re``)."""
    return detokenise_many([tokens])[0]


def preprocess_many(sentences: Sequence[str]) -> list[str]:
    """What the models see: :func:`tokenise`, then lower case — for many sentences at once (the fast path)."""
    return tokenise_many(sentences, lower=True)


def preprocess(sentence: str) -> str:
    """:func:`preprocess_many` of one sentence."""
    return preprocess_many([sentence])[0]


class Tokenizer:
    """A trained sentencepiece model plus the preprocessing; ``encode`` gives id lists ending in EOS.

    ``languages`` names the languages it was trained on (None: unknown, accept any).
    """

    pad_id, unk_id, bos_id, eos_id = PAD, UNK, BOS, EOS

    def __init__(self, model_file: str | Path, languages: tuple[str, ...] | None = None, data: bytes | None = None):
        """``data``: the file's bytes where the caller has read (and verified) them already."""
        self.model_file, self.languages = Path(model_file), languages
        data = self.model_file.read_bytes() if data is None else data
        self.digest = hashlib.sha256(data).hexdigest()
        self.sp = spm.SentencePieceProcessor(model_proto=data)
        if self.sp.pad_id() != PAD or self.sp.eos_id() != EOS:
            raise ValueError(f"{model_file}: sentencepiece model without the workbench's pad/eos ids "
                             f"(pad={self.sp.pad_id()}, eos={self.sp.eos_id()}; expected {PAD}, {EOS})")

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def tag_id(self, language: str) -> int:
        """Id of the language-tag piece ``<2xx>`` (only in models trained with ``language_tags``)."""
        piece = f"<2{language}>"
        index = self.sp.piece_to_id(piece)
        if self.sp.id_to_piece(index) != piece:
            raise ValueError(f"{self.model_file} has no language tag {piece}; tokenizers with tags: "
                             "pair_tokenizer(..., language_tags=True)")
        return index

    def encode(self, sentences: Sequence[str], max_len: int | None = None) -> list[list[int]]:
        """Token ids of each sentence, EOS appended; truncated to ``max_len`` ids (EOS kept) if given."""
        pieces = self.sp.encode(preprocess_many(sentences), add_eos=True)
        if max_len is not None:  # the few long ones replaced (a new list of all cost 3 ms in 20,000 sentences)
            for i in [i for i, n in enumerate(map(len, pieces)) if n > max_len]:
                pieces[i] = pieces[i][:max_len - 1] + [EOS]
        return pieces

    def encode_bags(self, sentences: Sequence[str], max_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """What an average of piece embeddings reads, as two int64 arrays: every sentence's pieces one after another
        (no EOS; the first ``max_len - 1``, those :meth:`encode` keeps beside its EOS) and how many each has; an empty
        sentence reads as its EOS alone. The bags of :meth:`encode`'s ids less EOS, without a list per sentence (SP
        from raw text spent a sixth of its time turning the lists into an array)."""
        pieces = self.sp.encode(preprocess_many(sentences))
        limit = sys.maxsize if max_len is None else max(max_len - 1, 0)
        if _pieces is not None:
            flat, lengths = _pieces.flatten(pieces, limit, EOS)
            return np.frombuffer(flat, dtype=np.int64), np.frombuffer(lengths, dtype=np.int64)
        pieces = [ids[:limit] or [EOS] for ids in pieces]
        lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        return np.fromiter(chain.from_iterable(pieces), dtype=np.int64, count=int(lengths.sum())), lengths

    def decode(self, ids: Iterable[int]) -> str:
        return self.sp.decode([i for i in ids if i not in (PAD, BOS, EOS)])

    def __repr__(self) -> str:
        return f"Tokenizer({self.model_file}, vocab={self.vocab_size}, digest={self.digest[:12]})"


def train_sentencepiece(sentences: Iterable[str], out_dir: str | Path, vocab_size: int,
                        character_coverage: float = 1.0, symbols: Sequence[str] = ()) -> Tokenizer:
    """Train a unigram sentencepiece model on already-preprocessed ``sentences`` into ``out_dir/spm.model``;
    ``symbols`` become pieces of their own (never produced from text: they are not in preprocessed text).

    Single-threaded with a fixed seed so that the same input gives the same model bytes.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = io.BytesIO()  # in-memory input and output: no temporary paths end up in the model's trainer spec
    spm.set_random_generator_seed(1)
    spm.SentencePieceTrainer.train(
        sentence_iterator=(s.replace("\n", " ") for s in sentences), model_writer=model,
        vocab_size=vocab_size, model_type="unigram", character_coverage=character_coverage,
        hard_vocab_limit=False, pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS, input_sentence_size=2_000_000,
        shuffle_input_sentence=False, num_threads=1, minloglevel=2, **(
            {"control_symbols": list(symbols)} if symbols else {}))
    atomic_write(out_dir / "spm.model", lambda tmp: tmp.write_bytes(model.getvalue()))
    return Tokenizer(out_dir / "spm.model")


@lru_cache(maxsize=8)
def pair_tokenizer(pair: str, vocab_size: int = 8000, split: SplitConfig = SplitConfig(),
                   language_tags: bool = False, max_pairs: int | None = None) -> Tokenizer:
    """The joint sentencepiece model of ``pair`` trained on its train split (built once, then loaded).

    ``pair="all"``: one model over every pair's training split (English and all five foreign languages).
    ``language_tags``: add a piece ``<2xx>`` per language (:meth:`Tokenizer.tag_id`). The paper uses 20k
    pieces on 1M pairs; 8k suits one pair of the shared data (~100–200k pairs). ``max_pairs``: learn from the
    first N pairs of each pair's training split only (the ``tiny`` preset: seconds instead of half a minute).
    """
    pairs = pairs_of(pair)
    languages = ("en", *(language_of(p) for p in pairs)) if pair == "all" else languages_of(pair)
    spec = {"pair": pair, "vocab_size": vocab_size, "split": split.__dict__, "builder_version": TOKENIZER_VERSION,
            "character_coverage": 0.9995 if "ja" in languages else 1.0}
    if pair == "all":
        spec["corpus_sha256"] = {p: corpus_digest(p) for p in pairs}
    else:
        spec["corpus_sha256"] = corpus_digest(pair)
        if inherited := inherited_digests(pair, own_only=True):  # its split follows your own en-XX corpora
            spec["inherited_from"] = inherited
    if language_tags:
        spec["language_tags"] = [f"<2{lang}>" for lang in languages]
    if max_pairs is not None:
        spec["max_pairs"] = max_pairs
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    folder = home_dir() / "tokenizers" / f"{pair}-{vocab_size}-{key}"
    if not (folder / "spm.model").is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{folder}.lock"):  # another process building the same model: wait for it, then read it
            if not (folder / "spm.model").is_file() and not _copy_shipped(folder):
                log.info("training the %s sentencepiece model (%d pieces) into %s", pair, vocab_size, folder)
                text = preprocess_many([s for p in pairs
                                        for pair in load_splits(p, config=split)["train"][:max_pairs] for s in pair])
                train_sentencepiece(text, folder, vocab_size, spec["character_coverage"],
                                    spec.get("language_tags", ()))
            atomic_write(folder / "spec.json", json.dumps(spec, indent=2, sort_keys=True))
    return Tokenizer(folder / "spm.model", languages)


SHIPPED_TOKENIZERS = "tokenizers.json"  # in trained/: a tokenizer folder's name -> the shipped model holding it


def _copy_shipped(folder: Path) -> bool:
    """Copy into ``folder`` the sentencepiece model a shipped model was trained with, when ``trained/tokenizers.json``
    records one under ``folder``'s name (the same spec: pair, pieces, split, corpus, builder version) and the
    model's file still has the recorded sha256; False otherwise (the caller trains it)."""
    index = trained_dir() / SHIPPED_TOKENIZERS
    entry = read_json(index).get(folder.name) if index.is_file() else None
    name = entry.get("model") if isinstance(entry, dict) else None
    if not isinstance(name, str) or name in ("", ".", "..") or Path(name).name != name:  # a folder in trained/
        return False
    source = trained_dir() / name / "spm.model"
    data = source.read_bytes() if source.is_file() else b""
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        log.warning("%s does not hold the tokenizer %s records for %s: training it", source, index, folder.name)
        return False
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / "spm.model", lambda tmp: tmp.write_bytes(data))
    log.info("the %s sentencepiece model is %s's: copied, not trained", folder.name, name)
    return True
