"""What a probe reports (:class:`ProbeResult`): the test accuracy with its bootstrap CI and the majority baseline,
and one part per optional analysis — the control task's selectivity, MDL, a conditional probe's gain, cross-lingual
transfer, the accuracy by seen and unseen label word — and several seeds' mean."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..checks import WorkbenchError


MIN_SUBSET = 20  # a subset accuracy on fewer sentences is shown as too few to read, not as a number


@dataclass(frozen=True)
class Control:
    """The control task (Hewitt & Liang 2019): the same probe on labels given to word types at random."""

    kind: str  # what the fake labels are keyed on: "word" (the label word) or "first_word"
    accuracy: float
    caveat: str = ""  # why this control cannot separate property from memory here ("": it can)


@dataclass(frozen=True)
class Conditional:
    """A conditional probe: ``[encoder ; given]`` against ``given`` alone (Hewitt et al. 2021)."""

    given: str  # the view the gain is measured beyond
    given_accuracy: float  # the probe on that view alone
    gain_ci_low: float  # paired bootstrap 95% CI of accuracy − given_accuracy
    gain_ci_high: float


@dataclass(frozen=True)
class Transfer:
    """The English-trained probe on translations of the test sentences that have one."""

    language: str
    accuracy: float  # on the translations
    english_accuracy: float  # on the same test sentences in English
    n: int


@dataclass(frozen=True)
class WordSplit:
    """Test accuracy by whether the label word occurs in the training split (Holmes's seen/unseen split)."""

    n_seen: int
    seen_accuracy: float | None  # None where no test sentence is of that kind
    unseen_accuracy: float | None


@dataclass(frozen=True)
class MDL:
    """Online codelength of the labels (Voita & Titov 2020)."""

    bits: float
    compression: float  # the uniform code's length over the online code's


_PARTS = {"control": Control, "conditional": Conditional, "transfer": Transfer, "words": WordSplit, "mdl": MDL}


@dataclass
class ProbeResult:
    """A probe's test accuracy with its bootstrap CI and majority baseline; each optional analysis (a control task,
    MDL, a conditional or cross-lingual probe, the seen/unseen word split) is one part, None where not run."""

    encoder: str
    task: str
    classifier: str
    accuracy: float
    ci_low: float
    ci_high: float
    majority: float
    n_train: int
    n_test: int
    hyperparameters: str
    control: Control | None = None
    mdl: MDL | None = None
    conditional: Conditional | None = None
    transfer: Transfer | None = None
    words: WordSplit | None = None
    seeds: int = 1  # probes fitted (seed, seed + 1, ...); the numbers are their means
    seed_std: float | None = None  # the accuracy's standard deviation over those seeds (ddof 1)
    correct: str = field(default="", repr=False)  # per test example, "1" where the probe was right
    predictions: list = field(default_factory=list, repr=False)  # per test example, [label given, its probability]

    @classmethod
    def from_dict(cls, stored: dict) -> "ProbeResult":
        """A result from its :func:`dataclasses.asdict` (as the result cache stores it)."""
        return cls(**{k: (_PARTS[k](**v) if k in _PARTS and v is not None else v) for k, v in stored.items()})

    def outcomes(self) -> np.ndarray:
        """Per test example, 1.0 where the probe was right (``correct`` as an array; empty for a seeds mean)."""
        return (np.frombuffer(self.correct.encode(), dtype=np.uint8) == ord("1")).astype(float)

    @property
    def gain(self) -> float | None:
        """Conditional probe: accuracy with both views minus accuracy with the ``given`` view alone."""
        return None if self.conditional is None else self.accuracy - self.conditional.given_accuracy

    @property
    def transfer_ratio(self) -> float | None:
        """Accuracy on the translations over accuracy on the same sentences in English (1: stored alike)."""
        if self.transfer is None or not self.transfer.english_accuracy:
            return None
        return self.transfer.accuracy / self.transfer.english_accuracy

    @property
    def selectivity(self) -> float | None:
        """Task accuracy minus control-task accuracy (None without a control task)."""
        return None if self.control is None else self.accuracy - self.control.accuracy

    def to_frame(self) -> pd.DataFrame:
        """Tidy rows (encoder, task, classifier, metric, value, ci_low, ci_high, n, note: on the selectivity row,
        why the control is uninformative where it is)."""
        control, mdl, conditional, transfer, words = self.control, self.mdl, self.conditional, self.transfer, self.words
        metrics = {"accuracy": (self.accuracy, self.ci_low, self.ci_high), "majority": (self.majority,),
                   "control_accuracy": (control and control.accuracy,), "selectivity": (self.selectivity,),
                   "mdl_bits": (mdl and mdl.bits,), "compression": (mdl and mdl.compression,),
                   "given_accuracy": (conditional and conditional.given_accuracy,),
                   "conditional_gain": (self.gain, *((conditional.gain_ci_low, conditional.gain_ci_high)
                                                     if conditional else ())),
                   "transfer_accuracy": (transfer and transfer.accuracy,), "transfer_ratio": (self.transfer_ratio,),
                   "accuracy_seen_word": (words and words.seen_accuracy,),
                   "accuracy_unseen_word": (words and words.unseen_accuracy,), "seed_std": (self.seed_std,)}
        counts = {"accuracy_seen_word": words and words.n_seen,
                  "accuracy_unseen_word": words and self.n_test - words.n_seen}
        rows = [{"encoder": self.encoder, "task": self.task, "classifier": self.classifier, "metric": metric,
                 "value": values[0], "ci_low": values[1] if len(values) > 1 else np.nan,
                 "ci_high": values[2] if len(values) > 2 else np.nan,
                 "n": transfer.n if metric.startswith("transfer") else counts.get(metric) or self.n_test,
                 "note": control.caveat if metric == "selectivity" else
                 f"only {counts[metric]} sentences: too few to read"
                 if (counts.get(metric) or MIN_SUBSET) < MIN_SUBSET else ""}
                for metric, values in metrics.items() if values[0] is not None]
        return pd.DataFrame(rows)

    def __str__(self) -> str:
        text = (f"{self.task} / {self.encoder} ({self.classifier}): accuracy {100 * self.accuracy:.1f} "
                f"[{100 * self.ci_low:.1f}, {100 * self.ci_high:.1f}], majority {100 * self.majority:.1f}")
        if self.seed_std is not None:
            text += f", mean of {self.seeds} seeds (sd {100 * self.seed_std:.2f})"
        if self.words is not None:
            for what, value, n in (("label word unseen in training", self.words.unseen_accuracy,
                                    self.n_test - self.words.n_seen), ("seen", self.words.seen_accuracy,
                                                                        self.words.n_seen)):
                if value is not None:
                    text += (f", {what} {100 * value:.1f} (n={n})" if n >= MIN_SUBSET else
                             f", {what}: only n={n}, too few to read")
        if self.control is not None:
            text += f", selectivity {100 * self.selectivity:+.1f} ({self.control.kind.replace('_', ' ')} control)"
            if self.control.caveat:
                text += f" — uninformative: {self.control.caveat}"
        if self.conditional is not None:
            text += (f", gain over {self.conditional.given} alone {100 * self.gain:+.1f} "
                     f"[{100 * self.conditional.gain_ci_low:+.1f}, {100 * self.conditional.gain_ci_high:+.1f}]")
        if self.transfer is not None:
            text += (f", on {self.transfer.n} translations into {self.transfer.language} "
                     f"{100 * self.transfer.accuracy:.1f} vs {100 * self.transfer.english_accuracy:.1f} in English"
                     + (f" (ratio {self.transfer_ratio:.2f})" if self.transfer_ratio is not None else ""))
        if self.mdl is not None:
            text += f", MDL {self.mdl.bits / 1000:.1f} kbits (compression {self.mdl.compression:.2f})"
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

    def mean(part: str, *names: str):
        """``part`` with each of ``names`` averaged over the runs (None where the runs have no such part)."""
        if getattr(first, part) is None:
            return None
        values = {name: [getattr(getattr(run, part), name) for run in runs] for name in names}
        return replace(getattr(first, part), **{name: None if v[0] is None else float(np.mean(v))
                                                for name, v in values.items()})

    return replace(first, accuracy=float(np.mean([r.accuracy for r in runs])), ci_low=low, ci_high=high,
                   control=mean("control", "accuracy"), mdl=mean("mdl", "bits", "compression"),
                   transfer=mean("transfer", "accuracy", "english_accuracy"),
                   words=mean("words", "seen_accuracy", "unseen_accuracy"), correct="", predictions=[],
                   seeds=len(runs), seed_std=float(np.std([r.accuracy for r in runs], ddof=1)),
                   hyperparameters=" | ".join(dict.fromkeys(r.hyperparameters for r in runs)))


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
