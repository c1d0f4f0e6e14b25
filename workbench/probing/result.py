"""What a probe reports (:class:`ProbeResult`): the test accuracy with its bootstrap CI, the majority baseline, the
control task's selectivity, subsets by label word, a conditional probe's gain, and several seeds' mean."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ..checks import WorkbenchError


MIN_SUBSET = 20  # a subset accuracy on fewer sentences is shown as too few to read, not as a number


@dataclass
class ProbeResult:
    encoder: str
    task: str
    classifier: str
    accuracy: float
    ci_low: float
    ci_high: float
    majority: float
    control_accuracy: float | None
    n_train: int
    n_test: int
    hyperparameters: str
    mdl_bits: float | None = None
    compression: float | None = None
    control: str | None = None  # the control task used: "word" (the label word) or "first_word"
    control_caveat: str = ""  # why that control cannot separate property from memory here ("": it can)
    correct: str = field(default="", repr=False)  # per test example, "1" where the probe was right
    predictions: list = field(default_factory=list, repr=False)  # per test example, [label given, its probability]
    given: str | None = None  # conditional probe: the view this encoder's gain is measured beyond
    given_accuracy: float | None = None  # the probe on that view alone
    gain_ci_low: float | None = None  # paired bootstrap 95% CI of accuracy − given_accuracy
    gain_ci_high: float | None = None
    transfer: str | None = None  # cross-lingual transfer: the language the test sentences were translated into
    transfer_accuracy: float | None = None  # the English-trained probe on those translations
    transfer_english_accuracy: float | None = None  # the same probe on the same test sentences in English
    n_transfer: int | None = None
    seen_accuracy: float | None = None  # on test sentences whose label word occurs in the training split
    unseen_accuracy: float | None = None  # ... and on those whose label word does not (Holmes's split)
    n_seen: int | None = None
    seeds: int = 1  # probes fitted (seed, seed + 1, ...); the numbers are their means
    seed_std: float | None = None  # the accuracy's standard deviation over those seeds (ddof 1)

    def outcomes(self) -> np.ndarray:
        """Per test example, 1.0 where the probe was right (``correct`` as an array; empty for a seeds mean)."""
        return (np.frombuffer(self.correct.encode(), dtype=np.uint8) == ord("1")).astype(float)

    @property
    def gain(self) -> float | None:
        """Conditional probe: accuracy with both views minus accuracy with the ``given`` view alone."""
        return None if self.given_accuracy is None else self.accuracy - self.given_accuracy

    @property
    def transfer_ratio(self) -> float | None:
        """Accuracy on the translations over accuracy on the same sentences in English (1: stored alike)."""
        if self.transfer_accuracy is None or not self.transfer_english_accuracy:
            return None
        return self.transfer_accuracy / self.transfer_english_accuracy

    @property
    def selectivity(self) -> float | None:
        """Task accuracy minus control-task accuracy (None without a control task)."""
        return None if self.control_accuracy is None else self.accuracy - self.control_accuracy

    def to_frame(self) -> pd.DataFrame:
        """Tidy rows (encoder, task, classifier, metric, value, ci_low, ci_high, n, note: on the selectivity row,
        why the control is uninformative where it is)."""
        metrics = {"accuracy": (self.accuracy, self.ci_low, self.ci_high), "majority": (self.majority,),
                   "control_accuracy": (self.control_accuracy,), "selectivity": (self.selectivity,),
                   "mdl_bits": (self.mdl_bits,), "compression": (self.compression,),
                   "given_accuracy": (self.given_accuracy,),
                   "conditional_gain": (self.gain, self.gain_ci_low, self.gain_ci_high),
                   "transfer_accuracy": (self.transfer_accuracy,), "transfer_ratio": (self.transfer_ratio,),
                   "accuracy_seen_word": (self.seen_accuracy,), "accuracy_unseen_word": (self.unseen_accuracy,),
                   "seed_std": (self.seed_std,)}
        counts = {"accuracy_seen_word": self.n_seen,
                  "accuracy_unseen_word": None if self.n_seen is None else self.n_test - self.n_seen}
        rows = [{"encoder": self.encoder, "task": self.task, "classifier": self.classifier, "metric": metric,
                 "value": values[0], "ci_low": values[1] if len(values) > 1 else np.nan,
                 "ci_high": values[2] if len(values) > 2 else np.nan,
                 "n": self.n_transfer if metric.startswith("transfer") else counts.get(metric) or self.n_test,
                 "note": self.control_caveat if metric == "selectivity" else
                 f"only {counts[metric]} sentences: too few to read"
                 if (counts.get(metric) or MIN_SUBSET) < MIN_SUBSET else ""}
                for metric, values in metrics.items() if values[0] is not None]
        return pd.DataFrame(rows)

    def __str__(self) -> str:
        text = (f"{self.task} / {self.encoder} ({self.classifier}): accuracy {100 * self.accuracy:.1f} "
                f"[{100 * self.ci_low:.1f}, {100 * self.ci_high:.1f}], majority {100 * self.majority:.1f}")
        if self.seed_std is not None:
            text += f", mean of {self.seeds} seeds (sd {100 * self.seed_std:.2f})"
        for what, value, n in (("label word unseen in training", self.unseen_accuracy,
                                None if self.n_seen is None else self.n_test - self.n_seen),
                               ("seen", self.seen_accuracy, self.n_seen)):
            if value is not None:
                text += (f", {what} {100 * value:.1f} (n={n})" if n >= MIN_SUBSET else
                         f", {what}: only n={n}, too few to read")
        if self.selectivity is not None:
            text += f", selectivity {100 * self.selectivity:+.1f} ({self.control.replace('_', ' ')} control)"
            if self.control_caveat:
                text += f" — uninformative: {self.control_caveat}"
        if self.gain is not None:
            text += (f", gain over {self.given} alone {100 * self.gain:+.1f} [{100 * self.gain_ci_low:+.1f}, "
                     f"{100 * self.gain_ci_high:+.1f}]")
        if self.transfer_ratio is not None:
            text += (f", on {self.n_transfer} translations into {self.transfer} {100 * self.transfer_accuracy:.1f} "
                     f"vs {100 * self.transfer_english_accuracy:.1f} in English (ratio {self.transfer_ratio:.2f})")
        if self.compression is not None:
            text += f", MDL {self.mdl_bits / 1000:.1f} kbits (compression {self.compression:.2f})"
        return text


def bootstrap_ci(correct: np.ndarray, n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Percentile 95% CI of the mean of a 0/1 vector (or of per-example differences of two such vectors)."""
    rng = np.random.default_rng(seed)
    means = correct[rng.integers(0, len(correct), size=(n_boot, len(correct)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def over_seeds(runs: Sequence[ProbeResult]) -> ProbeResult:
    """One result from the same probe fitted with several seeds: means, the accuracy's seed standard deviation,
    and the bootstrap CI of the mean accuracy (over test examples, each scored by its mean over seeds)."""
    first = runs[0]
    correct = np.mean([run.outcomes() for run in runs], axis=0)
    low, high = bootstrap_ci(correct)

    def mean(name):
        values = [getattr(run, name) for run in runs]
        return None if values[0] is None else float(np.mean(values))

    averaged = {name: mean(name) for name in ("accuracy", "control_accuracy", "mdl_bits", "compression",
                                              "transfer_accuracy", "transfer_english_accuracy", "seen_accuracy",
                                              "unseen_accuracy")}
    return ProbeResult(**{**asdict(first), **averaged, "ci_low": low, "ci_high": high, "correct": "", "predictions": [],
                          "seeds": len(runs), "seed_std": float(np.std([r.accuracy for r in runs], ddof=1)),
                          "hyperparameters": " | ".join(dict.fromkeys(r.hyperparameters for r in runs))})


def prediction_table(result: ProbeResult, test: pd.DataFrame) -> pd.DataFrame:
    """Per test sentence (``test``: the dataset's test split, in its order): its label, the label the probe gave,
    the probability it gave it and whether it was right — what error analysis reads (a seeds mean has none)."""
    if len(result.predictions) != len(test):
        raise WorkbenchError(f"{result.task}: {len(result.predictions)} predictions for {len(test)} test sentences "
                             "(a mean over seeds keeps none: probe with one seed)")
    given = pd.DataFrame(result.predictions, columns=["predicted", "probability"], index=test.index)
    table = test[[c for c in ("sentence", "label", "word") if c in test]].join(given)
    table["correct"] = table["predicted"].astype(str) == table["label"].astype(str)
    return table.reset_index(drop=True)
