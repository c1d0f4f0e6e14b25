"""Cross-lingual weighted matrix factorisation (Guo & Diab 2012 for the monolingual WMF; docs/method.md#baselines).

A tf-idf matrix X (words × sentences) is factorised as X ≈ PᵀQ with weights W_ij = 1 on observed cells and
``w_m`` on missing ones, minimising Σ W_ij (P_iᵀQ_j − X_ij)² + λ(‖P‖² + ‖Q‖²) by alternating least squares:

    Q_j = (P W⁽ʲ⁾ Pᵀ + λI)⁻¹ P W⁽ʲ⁾ X_j        P_i = (Q W⁽ⁱ⁾ Qᵀ + λI)⁻¹ Q W⁽ⁱ⁾ X_iᵀ

With W = w_m + (1 − w_m)·[observed], P W⁽ʲ⁾ Pᵀ = w_m PPᵀ + (1 − w_m) Σ_obs P_i P_iᵀ, so each solve costs the
observed words only (Hu et al. 2008). Bilingual variants over parallel sentences (X: English, Y: foreign,
one shared sentence factor Q):

* **b-WMF**: one loss over both languages; Q_j solves with both P and A; P and A solved given Q.
* **x-WMF**: a monolingual English model (P by ALS), then Q of the parallel English sentences by fold-in, then A
  in one least-squares step.

A new sentence is *folded in*: Q_j by equation (2) with its language's word factor. The paper's settings:
k = 100, w_m = 0.01, λ = 20, 20 ALS iterations.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from safetensors.numpy import load_file, save_file

from ..checks import check_name, check_sentences
from ..data import sha256_of
from ..data.tokenizer import preprocess
from ..paths import atomic_write, read_json, sealed_config
from ..progress import progress_bar
from .base import ModelConfig, NamedEncoder, view_name

if TYPE_CHECKING:  # scikit-learn is imported where a vectorizer is made: the model registry imports this module,
    from sklearn.feature_extraction.text import TfidfVectorizer  # and each process that loaded a network paid for it

VARIANTS = ("b-wmf", "x-wmf")

# The training presets' settings for WMF (its ``config`` fields): the paper's k = 100, w_m = 0.01, λ = 20, 20
# ALS iterations; tiny is a quick check.
PRESETS = {"tiny": {"model": {"k": 20, "iterations": 5, "l2": 1.0}}, "cpu": {"model": {"iterations": 10}},
           "small": {"model": {}}, "paper": {"model": {}}}


@dataclass
class WMFConfig(ModelConfig):
    languages: tuple[str, str] = ("en", "fr")
    variant: str = "b-wmf"
    k: int = 100
    missing_weight: float = 0.01
    l2: float = 20.0
    iterations: int = 20
    min_df: int = 2
    seed: int = 0

    @classmethod
    def run_settings(cls, run, tokenizer=None) -> dict:
        """The run's languages and seed (WMF reads words, not a tokenizer's pieces)."""
        return {"languages": run.languages, "seed": run.seed}

    def __post_init__(self):
        self.languages = tuple(self.languages)
        if self.variant not in VARIANTS:
            raise ValueError(f"variant {self.variant!r} is not one of {', '.join(VARIANTS)}")


def tfidf_vectorizer(min_df: int = 1, vocabulary: Sequence[str] | None = None) -> TfidfVectorizer:
    """Raw tf-idf weights (no length normalisation, as the paper's X_ij) over the models' preprocessing.

    Normalised columns (values ≤ 1) against λ = 20 made ALS shrink every factor towards zero: on 20k en-fr
    pairs STS12–16 was 6.5 with l2-normalised tf-idf and 50.6 with raw weights (5 iterations, k = 100)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    return TfidfVectorizer(preprocessor=preprocess, tokenizer=str.split, token_pattern=None, lowercase=False,
                           min_df=min_df, vocabulary=vocabulary, norm=None)


def solve_columns(F: np.ndarray, X: sp.spmatrix, w_m: float, l2: float, budget: int = 1 << 17,
                  max_chunk: int = 1024) -> np.ndarray:
    """For every column x of X (terms × items), the k-vector q minimising Σ W (fᵀq − x)² + λ‖q‖² given the
    factor F (k × terms): q = (w_m FFᵀ + (1 − w_m) F_o F_oᵀ + λI)⁻¹ F_o x_o over the observed terms o.

    Columns are sorted by their number of observed terms and solved in batches whose padded gathers hold at most
    ``budget`` term slots, so frequent and rare terms both cost about what they observe."""
    k, n = F.shape[0], X.shape[1]
    X = X.tocsc()
    base = w_m * F @ F.T + l2 * np.eye(k)
    terms = F.T  # (terms, k)
    counts = np.diff(X.indptr)
    order = np.argsort(counts, kind="stable")
    out = np.empty((k, n))
    start = 0
    while start < n:
        stop = start + 1
        while (stop < n and stop - start < max_chunk
               and (stop - start + 1) * max(1, counts[order[stop]]) <= budget):
            stop += 1
        cols = order[start:stop]
        width = max(1, int(counts[cols].max()))
        offsets = np.arange(width)[None, :]
        observed = offsets < counts[cols][:, None]
        positions = np.where(observed, X.indptr[cols][:, None] + offsets, 0)
        gathered = terms[X.indices[positions]] * observed[..., None]  # (c, width, k), zero where padded
        values = np.where(observed, X.data[positions], 0.0)
        transposed = gathered.transpose(0, 2, 1)  # (c, k, width)
        systems = base + (1 - w_m) * (transposed @ gathered)
        rhs = (transposed @ values[..., None])[..., 0]
        out[:, cols] = np.linalg.solve(systems, rhs[..., None])[..., 0].T
        start = stop
    return out


def weighted_loss(P: np.ndarray, Q: np.ndarray, X: sp.spmatrix, w_m: float, l2: float,
                  block: int = 1 << 18) -> float:
    """Σ W (PᵀQ − X)² + λ(‖P‖² + ‖Q‖²), without forming PᵀQ: w_m‖PᵀQ‖² over all cells, corrected on the
    observed ones (taken in blocks to bound memory)."""
    X = X.tocoo()
    everything = np.trace((P @ P.T) @ (Q @ Q.T))
    observed_sq = residual_sq = 0.0
    for start in range(0, X.nnz, block):
        rows, cols = X.row[start:start + block], X.col[start:start + block]
        predicted = np.einsum("ki,ki->i", P[:, rows], Q[:, cols])
        observed_sq += float((predicted ** 2).sum())
        residual_sq += float(((predicted - X.data[start:start + block]) ** 2).sum())
    return float(w_m * (everything - observed_sq) + residual_sq + l2 * ((P ** 2).sum() + (Q ** 2).sum()))


class WMF:
    """b-WMF / x-WMF on parallel sentences; ``encoder(view)`` gives Encoders that fold new sentences in."""

    def __init__(self, cfg: WMFConfig):
        self.cfg = cfg
        self.vectorizers: dict[str, TfidfVectorizer] = {}
        self.factors: dict[str, np.ndarray] = {}  # language -> k × vocabulary
        self.history: list[float] = []  # the weighted loss after each ALS iteration
        self.sentence_factors: np.ndarray | None = None  # Q of the training sentences (k × n)

    def fit(self, english: Sequence[str], foreign: Sequence[str], show_progress: bool = False) -> "WMF":
        cfg, (en, xx) = self.cfg, self.cfg.languages
        self.vectorizers = {en: tfidf_vectorizer(cfg.min_df), xx: tfidf_vectorizer(cfg.min_df)}
        X = self.vectorizers[en].fit_transform(english).T.tocsc()  # terms × sentences
        Y = self.vectorizers[xx].fit_transform(foreign).T.tocsc()
        rng = np.random.default_rng(cfg.seed)
        P = rng.normal(0, 1.0, (cfg.k, X.shape[0]))  # unit scale: small factors collapse under λ
        A = rng.normal(0, 1.0, (cfg.k, Y.shape[0]))
        w, l2 = cfg.missing_weight, cfg.l2
        self.history = []
        for _ in progress_bar(range(cfg.iterations), desc=f"ALS {cfg.variant}", disable=not show_progress):
            if cfg.variant == "b-wmf":
                Q = solve_columns(np.hstack([P, A]), sp.vstack([X, Y]).tocsc(), w, l2)
                P = solve_columns(Q, X.T.tocsc(), w, l2)
                A = solve_columns(Q, Y.T.tocsc(), w, l2)
                both = weighted_loss(P, Q, X, w, l2) + weighted_loss(A, Q, Y, w, l2)
                self.history.append(both - l2 * (Q ** 2).sum())  # ‖Q‖² once
            else:  # x-WMF: ALS on English only
                Q = solve_columns(P, X, w, l2)
                P = solve_columns(Q, X.T.tocsc(), w, l2)
                self.history.append(weighted_loss(P, Q, X, w, l2))
        if cfg.variant == "x-wmf":  # one deterministic step for the foreign words, with Q from the English side
            Q = solve_columns(P, X, w, l2)
            A = solve_columns(Q, Y.T.tocsc(), w, l2)
        else:
            Q = solve_columns(np.hstack([P, A]), sp.vstack([X, Y]).tocsc(), w, l2)
        self.factors, self.sentence_factors = {en: P, xx: A}, Q
        return self

    def fold_in(self, sentences: Sequence[str], language: str) -> np.ndarray:
        """Sentence vectors (n × k) by equation (2) with ``language``'s word factor."""
        X = self.vectorizers[language].transform(sentences).T.tocsc()
        return solve_columns(self.factors[language], X, self.cfg.missing_weight, self.cfg.l2).T

    def guess_language(self, sentence: str) -> str:
        """The language whose vocabulary covers more of the sentence's tokens (ties: English)."""
        tokens = preprocess(sentence).split()
        covered = {lang: sum(t in v.vocabulary_ for t in tokens) for lang, v in self.vectorizers.items()}
        return max(self.cfg.languages, key=lambda lang: (covered[lang], lang == "en"))

    @property
    def views(self) -> tuple[str, ...]:
        return ("semantic", *self.cfg.languages)

    def encoder(self, view: str = "semantic") -> "WMFEncoder":
        """``"en"``/``"<xx>"``: fold in with that language's factor; ``"semantic"``: per sentence, the language
        :meth:`guess_language` picks (so cross-lingual pairs go through one encoder)."""
        check_name("encoder view", view, ("semantic", *self.cfg.languages))
        return WMFEncoder(self, view)

    def save(self, folder: str | Path, train: dict | None = None) -> Path:
        """Factors and idf as safetensors, the config, vocabularies and fit history as JSON (``train``: the
        recipe that made it, kept beside them)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {f"factor.{lang}": np.ascontiguousarray(f) for lang, f in self.factors.items()}
        tensors.update({f"idf.{lang}": v.idf_ for lang, v in self.vectorizers.items()})
        atomic_write(folder / "model.safetensors", lambda tmp: save_file(tensors, str(tmp)))
        vocab = {lang: sorted(v.vocabulary_, key=v.vocabulary_.get) for lang, v in self.vectorizers.items()}
        atomic_write(folder / "config.json", sealed_config({"model": {**asdict(self.cfg), "setting": "wmf"},
                                                           "vocabulary": vocab, "history": self.history,
                                                           "files_sha256": {"model.safetensors": sha256_of(
                                                               folder / "model.safetensors")},
                                                           **({"train": train} if train else {})}))
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> "WMF":
        folder = Path(folder)
        return cls.from_parts(read_json(folder / "config.json"), load_file(str(folder / "model.safetensors")))

    @classmethod
    def from_parts(cls, meta: dict, tensors: dict) -> "WMF":
        """The fit from its ``config.json`` content and its tensors (numpy), as a model folder holds them."""
        model = cls(WMFConfig.from_dict({k: v for k, v in meta["model"].items() if k != "setting"}))
        for lang, words in meta["vocabulary"].items():
            vectorizer = tfidf_vectorizer(vocabulary=words)
            vectorizer.fit(words[:1])  # sets up the vocabulary; the trained idf replaces the fitted one
            vectorizer.idf_ = tensors[f"idf.{lang}"]
            model.vectorizers[lang] = vectorizer
            factor = tensors[f"factor.{lang}"]
            model.factors[lang] = factor.astype(np.float32) if factor.dtype == np.float16 else factor  # trained/: fp16
        model.history = meta["history"]
        return model


def shipped_tensors(tensors: dict) -> dict:
    """What an export writes of a fit's tensors: the word factors in float16 (:meth:`WMF.from_parts` upcasts
    them), the idf as it is."""
    return {k: v.half() if k.startswith("factor.") else v for k, v in tensors.items()}


class WMFEncoder(NamedEncoder):
    """The Encoder protocol over a fitted :class:`WMF` (float32 k-dimensional fold-in vectors)."""

    def __init__(self, model: WMF, view: str):
        self.model, self.view = model, view
        self.name = view_name(model, model.cfg.variant, view)
        self.dim = model.cfg.k
        self.languages = model.cfg.languages if view == "semantic" else (view,)
        h = hashlib.sha256(json.dumps(asdict(model.cfg)).encode() + view.encode())
        for lang in sorted(model.factors):
            h.update(np.ascontiguousarray(model.factors[lang]).tobytes())
            h.update(np.ascontiguousarray(model.vectorizers[lang].idf_).tobytes())
        self.fingerprint = h.hexdigest()

    def encode(self, sentences: Sequence[str], batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        sentences = check_sentences(sentences)
        if self.view != "semantic":
            return self.model.fold_in(sentences, self.view).astype(np.float32)
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        by_language: dict[str, list[int]] = {}
        for i, s in enumerate(sentences):
            by_language.setdefault(self.model.guess_language(s), []).append(i)
        for lang, rows in by_language.items():
            out[rows] = self.model.fold_in([sentences[i] for i in rows], lang)
        return out
