"""Probing classifiers on sentence embeddings (SentEval's protocol with scikit-learn estimators).

The probe is a logistic regression on standardised embeddings; its L2 strength is chosen on the validation
split only, then the test accuracy is reported with a bootstrap 95% CI and the majority-class baseline.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ..encoders import Encoder, check_embeddings, check_language
from ..errors import WorkbenchError
from .build import ProbingDataset, build_task

C_GRID = (0.01, 0.1, 1.0, 10.0)


@dataclass
class ProbeResult:
    encoder: str
    task: str
    accuracy: float
    ci_low: float
    ci_high: float
    majority: float
    C: float
    n_train: int
    n_test: int

    def to_frame(self) -> pd.DataFrame:
        """Tidy rows (encoder, task, metric, value, ci_low, ci_high, n)."""
        return pd.DataFrame([
            {"encoder": self.encoder, "task": self.task, "metric": "accuracy", "value": self.accuracy,
             "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n_test},
            {"encoder": self.encoder, "task": self.task, "metric": "majority", "value": self.majority,
             "ci_low": np.nan, "ci_high": np.nan, "n": self.n_test},
        ])

    def __str__(self) -> str:
        return (f"{self.task} / {self.encoder}: accuracy {100 * self.accuracy:.1f} "
                f"[{100 * self.ci_low:.1f}, {100 * self.ci_high:.1f}], majority {100 * self.majority:.1f}")


def bootstrap_ci(correct: np.ndarray, n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Percentile 95% CI of the mean of a 0/1 vector."""
    rng = np.random.default_rng(seed)
    means = correct[rng.integers(0, len(correct), size=(n_boot, len(correct)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


class LogRegProbe:
    """sklearn-style estimator: ``fit(X_train, y_train, X_valid, y_valid)`` picks C on the validation split."""

    def __init__(self, C_grid: Sequence[float] = C_GRID, max_iter: int = 2000, seed: int = 0):
        self.C_grid, self.max_iter, self.seed = tuple(C_grid), max_iter, seed

    def _model(self, C: float):
        return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=self.max_iter,
                                                                  random_state=self.seed))

    def fit(self, X, y, X_valid, y_valid) -> "LogRegProbe":
        models = {C: self._model(C).fit(X, y) for C in self.C_grid}
        self.valid_scores_ = {C: m.score(X_valid, y_valid) for C, m in models.items()}
        self.C_ = max(models, key=lambda c: (self.valid_scores_[c], -c))  # ties: stronger regularisation
        self.model_ = models[self.C_]
        return self

    def predict(self, X) -> np.ndarray:
        return self.model_.predict(X)

    def score(self, X, y) -> float:
        return float(self.model_.score(X, y))


def probe(encoder: Encoder, task: str | ProbingDataset, seed: int = 0, **build_options) -> ProbeResult:
    """Train a probe for ``task`` on ``encoder``'s embeddings and report its test accuracy.

    ``task`` is a task name (built on demand; ``build_options`` go to :func:`build_task`) or a built dataset.
    """
    dataset = task if isinstance(task, ProbingDataset) else build_task(task, **build_options)
    card = dataset.card
    check_language(encoder, card.language, f"task {card.name!r}")
    splits = {tag: dataset.split(tag) for tag in ("tr", "va", "te")}
    for tag, frame in splits.items():
        if frame.empty:
            raise WorkbenchError(f"task {card.name!r} has an empty {tag!r} split")
    if splits["tr"]["label"].nunique() < 2:
        raise WorkbenchError(f"task {card.name!r}: the training split has a single class "
                             f"({splits['tr']['label'].iloc[0]!r}); a probe needs at least two")
    sentences = list(dict.fromkeys(dataset.data["sentence"]))
    embeddings = check_embeddings(encoder, encoder.encode(sentences), len(sentences))
    row = {s: i for i, s in enumerate(sentences)}
    X = {tag: embeddings[[row[s] for s in frame["sentence"]]] for tag, frame in splits.items()}
    y = {tag: frame["label"].to_numpy() for tag, frame in splits.items()}
    clf = LogRegProbe(seed=seed).fit(X["tr"], y["tr"], X["va"], y["va"])
    correct = (clf.predict(X["te"]) == y["te"]).astype(float)
    majority_label = pd.Series(y["tr"]).value_counts().idxmax()
    low, high = bootstrap_ci(correct, seed=seed)
    return ProbeResult(encoder=encoder.name, task=card.name, accuracy=float(correct.mean()), ci_low=low,
                       ci_high=high, majority=float((y["te"] == majority_label).mean()), C=clf.C_,
                       n_train=len(y["tr"]), n_test=len(y["te"]))


def probe_all(encoders: Sequence[Encoder], tasks: Sequence[str], **options) -> pd.DataFrame:
    """Tidy DataFrame: one row per encoder × task × metric."""
    frames = [probe(encoder, task, **options).to_frame() for task in tasks for encoder in encoders]
    return pd.concat(frames, ignore_index=True)

