"""Probing: train a classifier on an encoder's embeddings of a task's sentences (SentEval's protocol).

The probe's hyper-parameters are chosen on the validation split only; the test accuracy is reported with a
bootstrap 95% CI, the majority-class baseline, and the selectivity against a control task (Hewitt & Liang
2019); optionally the MDL online codelength (Voita & Titov 2020). ``given=`` makes it a conditional probe
(Hewitt et al. 2021): the probe reads two views side by side, and the result reports what the first adds beyond
the second alone, with a paired bootstrap CI. Embeddings and results are cached, so asking again for the same
encoder × task × options costs a file read.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..cache import cached, remember
from ..checks import WorkbenchError, check_name, whole
from ..data.corpora import PAIRS, language_of, normalise
from ..encoders import Encoder, check_embeddings, check_reads
from .build import ProbingDataset, build_task, translations
from .classifiers import CLASSIFIERS
from .control import CONTROLS, control_labels, control_words, uninformative
from .mdl import online_codelength
from .own import dataset_or_card
from .tasks import TaskCard, get_task, task_names

PROBE_VERSION = 8  # bump when a change alters results, so cached ones are recomputed
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


def probe(encoder: Encoder, task: str | Path | pd.DataFrame | ProbingDataset, classifier: str = "logreg",
          seed: int = 0, control: bool | str = True, mdl: bool = False, cache: bool = True, refit: bool = False,
          given: Encoder | None = None, transfer: str | None = None, seeds: int = 1, **build_options) -> ProbeResult:
    """Train a probe for ``task`` on ``encoder``'s embeddings and report its test accuracy.

    ``task`` is a task name (built on demand; ``build_options`` such as ``sizes`` go to :func:`build_task`), a
    built dataset, or your own labelled sentences: a DataFrame or the path of a file (:func:`.own.own_task`,
    which ``sizes`` also goes to); ``classifier`` is ``"logreg"`` or ``"mlp"``; ``control`` adds a control task and
    selectivity: ``"word"`` (or ``True``) keys it on the word the label is read from, ``"first_word"`` on the
    first word, ``False`` skips it (see :mod:`.control`); ``mdl`` adds the online codelength. ``given``, another
    encoder (e.g. BGT's English view when ``encoder`` is its semantic view), makes it a conditional probe: the
    probe reads ``[encoder ; given]``, and ``gain`` is its accuracy minus that of the same probe on ``given``
    alone (Hewitt et al. 2021: what ``encoder`` knows beyond ``given``), with a paired bootstrap CI.
    ``transfer="fr"`` (tasks whose card says the label survives translation) also tests the English-trained
    probe on the French translations of the test sentences that have one (labels from the English side), beside
    its accuracy on the same sentences in English. A stored result for the same encoder, data and options is
    returned as it is unless ``refit``; ``cache=False`` bypasses the embedding and result caches.
    ``seeds=k`` fits k probes (seeds ``seed`` … ``seed + k − 1``: initialisation, batch order, control labels)
    and reports their mean, the seed standard deviation and the bootstrap CI of the mean (docs/probing.md#seeds;
    the logistic probe is zero-initialised and full-batch, so its seeds agree but for the control task's).
    Where the task's examples carry a label word, the test accuracy is also given on sentences whose word was
    seen in training and on those whose word was not.
    """
    control = check_options(classifier, control, mdl)
    dataset, card = _checked_request(encoder, task, given, transfer, seeds, build_options)
    splits = _checked_splits(card, dataset)
    if cache:
        encoder, given = cached(encoder), given if given is None else cached(given)
    job = _ProbeJob(card, dataset, splits, Features(dataset, splits), classifier, cache, refit)
    if given is None:
        runs = [job.fit(encoder, s, control, mdl, transfer) for s in range(seed, seed + seeds)]
        return runs[0] if seeds == 1 else over_seeds(runs)
    joint = job.fit(Concatenated(encoder, given), seed, control, mdl)
    alone = job.fit(given, seed, False, False)
    joint.given, joint.given_accuracy = given.name, alone.accuracy
    gain = joint.outcomes() - alone.outcomes()  # paired: the same test examples
    joint.gain_ci_low, joint.gain_ci_high = bootstrap_ci(gain, seed=seed)
    return joint


def _checked_request(encoder: Encoder, task, given: Encoder | None, transfer: str | None, seeds,
                     build_options: dict) -> tuple[ProbingDataset, TaskCard]:
    """The task's dataset and card, once every option was checked against the encoders (before anything is
    built)."""
    if not whole(seeds):
        raise WorkbenchError(f"seeds must be a whole number ≥ 1 (got {seeds!r})")
    if seeds > 1 and given is not None:
        raise WorkbenchError("seeds= averages plain probes; a conditional probe (given=) takes one seed")
    dataset, card = dataset_or_card(task, **build_options)
    card.check_encoder(encoder)  # before building anything
    if given is not None:
        card.check_encoder(given)
        if encoder.fingerprint == given.fingerprint:
            raise WorkbenchError(f"conditional probe of {encoder.name!r} given itself: give another view")
    if transfer is not None:
        _check_transfer(card, encoder, transfer, given)
    return (dataset if dataset is not None else build_task(card, **build_options)), card


@dataclass
class _ProbeJob:
    """One task's dataset, splits and embeddings read once (``features``), fitted for any reader and seed."""
    card: TaskCard
    dataset: ProbingDataset
    splits: dict
    features: Features
    classifier: str
    cache: bool
    refit: bool

    def fit(self, reader: Encoder, seed: int, control, mdl, transfer=None) -> ProbeResult:
        """A probe on ``reader``: from the result cache unless ``refit`` (or no cache, or unversioned data)."""
        options = {"task": self.card.name, "data": self.dataset.manifest.get("sha256"),
                   "classifier": self.classifier, "seed": seed, "control": control, "mdl": mdl,
                   "version": PROBE_VERSION, **({"transfer": transfer} if transfer else {})}

        def compute() -> dict:
            return asdict(_run_probe(reader, self.features, self.dataset, self.splits, self.classifier, seed,
                                     control, mdl, transfer))

        if not self.cache or options["data"] is None:
            return ProbeResult(**compute())
        stored = remember("probe", reader.fingerprint, options, compute, refresh=self.refit)
        return ProbeResult(**{**stored, "encoder": reader.name})  # the name asked for, not the first one stored


def _checked_splits(card, dataset: ProbingDataset) -> dict[str, pd.DataFrame]:
    """The dataset's train/valid/test frames, refused with what to change when one is empty or the training
    split holds one class."""
    splits = {tag: dataset.split(tag) for tag in ("tr", "va", "te")}
    for tag, frame in splits.items():
        if frame.empty:
            asked, built = dataset.manifest.get("requested_sizes", {}), dataset.manifest.get("sizes", {})
            labels = max(len(card.labels), dataset.data["label"].nunique())
            raise WorkbenchError(
                f"task {card.name!r}: its {dict(tr='train', va='valid', te='test')[tag]} split came out empty "
                f"(asked for train/valid/test {'/'.join(str(v) for v in asked.values())}, built "
                f"{'/'.join(str(v) for v in built.values())}). Each of its {labels} labels gets its share of every "
                "split, and all splits shrink by one factor when the pool has fewer examples than asked for: give "
                f"each split at least {labels}, and no more in all than the pool holds (`workbench probes build "
                f"--tasks {card.name}` shows what the card's sizes give)")
    if splits["tr"]["label"].nunique() < 2:
        raise WorkbenchError(f"task {card.name!r}: the training split has a single class "
                             f"({splits['tr']['label'].iloc[0]!r}); a probe needs at least two")
    return splits


class Features:
    """Each encoder's embeddings of one dataset, per split, read once (a probe over several seeds, or the two
    halves of a conditional probe, share them); ``Concatenated`` encoders join their halves' arrays."""

    def __init__(self, dataset: ProbingDataset, splits: dict[str, pd.DataFrame]):
        self.sentences = list(dict.fromkeys(dataset.data["sentence"]))
        row = {s: i for i, s in enumerate(self.sentences)}
        self.rows = {tag: [row[s] for s in frame["sentence"]] for tag, frame in splits.items()}
        self._read: dict[str, np.ndarray] = {}

    def embeddings(self, encoder: Encoder) -> np.ndarray:
        if isinstance(encoder, Concatenated):
            return np.hstack([self.embeddings(encoder.a), self.embeddings(encoder.b)])
        if encoder.fingerprint not in self._read:
            self._read[encoder.fingerprint] = check_embeddings(encoder, encoder.encode(self.sentences),
                                                               len(self.sentences))
        return self._read[encoder.fingerprint]

    def __call__(self, encoder: Encoder) -> dict[str, np.ndarray]:
        """``{split: (n, dim)}`` in the splits' row order."""
        embeddings = self.embeddings(encoder)
        return {tag: embeddings[rows] for tag, rows in self.rows.items()}


class Concatenated:
    """Two encoders side by side: ``[a ; b]`` (an Encoder)."""

    def __init__(self, a: Encoder, b: Encoder):
        self.a, self.b = a, b
        self.name, self.dim = f"[{a.name} ; {b.name}]", a.dim + b.dim
        self.fingerprint = hashlib.sha256(f"concat|{self.a.fingerprint}|{self.b.fingerprint}".encode()).hexdigest()
        reads_a, reads_b = getattr(a, "languages", None), getattr(b, "languages", None)
        if reads_a is not None or reads_b is not None:
            self.languages = tuple(x for x in (reads_a or reads_b) if reads_b is None or x in reads_b)

    def encode(self, sentences: Sequence[str], batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        return np.hstack([self.a.encode(sentences, batch_size=batch_size, show_progress=show_progress),
                          self.b.encode(sentences, batch_size=batch_size, show_progress=show_progress)])


def check_options(classifier: str, control: bool | str, mdl: bool) -> str | bool:
    """Validate :func:`probe`'s options (before any work); returns the control's name (or ``False``)."""
    check_name("probe classifier", classifier, CLASSIFIERS)
    if mdl and classifier != "logreg":
        raise WorkbenchError(f"MDL probing is implemented for the logreg probe, not {classifier!r}")
    if control is True:
        return "word"
    return control if control is False else check_name("control", control, CONTROLS)


def _classifier(name: str, seed: int, **params):
    return CLASSIFIERS[name](seed=seed, **params) if name == "mlp" else CLASSIFIERS[name](**params)


def _grid(clf) -> str:
    """The hyper-parameter grid ``clf`` chose from, e.g. ``l2 0.01/0.001/0.0001``."""
    grids = {name[:-5]: values for name, values in clf.get_params().items() if name.endswith("_grid")}
    text = "; ".join(f"{name} " + "/".join(f"{v:g}" for v in values) for name, values in grids.items())
    return text + (f"; tenacity {clf.tenacity}" if hasattr(clf, "tenacity") else "")


def _check_transfer(card, encoder, transfer: str, given) -> None:
    if given is not None:
        raise WorkbenchError("give transfer= or given=, not both")
    if not card.transfers:
        valid = [name for name in task_names() if get_task(name).transfers]
        raise WorkbenchError(f"task {card.name!r}'s label does not survive translation, so it cannot transfer; "
                             f"tasks that do: {', '.join(valid)}")
    check_name("transfer language", transfer, [language_of(pair) for pair in PAIRS])
    check_reads(encoder, (transfer,), f"transfer to {transfer!r}")


def _transfer(clf, encoder, frame: pd.DataFrame, X: np.ndarray, language: str) -> dict:
    """The probe on the translations of the test sentences that have one, and on the same ones in English."""
    translated = translations(f"en-{language}")
    keep = [i for i, s in enumerate(frame["sentence"]) if normalise(s) in translated]
    if len(keep) < 50:
        raise WorkbenchError(f"only {len(keep)} of the {len(frame)} test sentences have a "
                             f"translation into {language!r}: too few to measure transfer")
    foreign = [translated[normalise(frame["sentence"].iloc[i])] for i in keep]
    X_foreign = check_embeddings(encoder, encoder.encode(foreign), len(foreign))
    y = frame["label"].to_numpy()[keep]
    return {"transfer": language, "n_transfer": len(keep),
            "transfer_accuracy": float((clf.predict(X_foreign) == y).mean()),
            "transfer_english_accuracy": float((clf.predict(X[keep]) == y).mean())}


def _run_probe(encoder, features, dataset, splits, classifier, seed, control, mdl, transfer=None) -> ProbeResult:
    X = features(encoder)
    y = {tag: frame["label"].to_numpy() for tag, frame in splits.items()}
    clf = _classifier(classifier, seed).fit(X["tr"], y["tr"], X["va"], y["va"])
    correct = (clf.predict(X["te"]) == y["te"]).astype(float)
    majority_label = pd.Series(y["tr"]).value_counts().idxmax()
    low, high = bootstrap_ci(correct, seed=seed)
    seen = _seen_word(splits)
    chosen = {"l2": clf.l2_, **({"hidden": clf.hidden_, "dropout": clf.dropout_} if classifier == "mlp" else {})}
    result = ProbeResult(encoder=encoder.name, task=dataset.card.name, classifier=classifier,
                         accuracy=float(correct.mean()), ci_low=low, ci_high=high,
                         correct="".join("1" if c else "0" for c in correct),
                         majority=float((y["te"] == majority_label).mean()), control_accuracy=None,
                         n_train=len(y["tr"]), n_test=len(y["te"]),
                         hyperparameters=", ".join(f"{k}={v:g}" for k, v in chosen.items()) + f" (of {_grid(clf)})")
    if seen is not None:
        result.n_seen = int(seen.sum())
        result.seen_accuracy = float(correct[seen].mean()) if seen.any() else None
        result.unseen_accuracy = float(correct[~seen].mean()) if (~seen).any() else None
    if control:  # the same probe, with the hyper-parameters chosen for the task (Hewitt & Liang 2019)
        word_types, result.control = control_words(dataset.data, control)
        fake = control_labels(word_types, list(dataset.data["label"]), seed=seed)
        fake = {tag: fake[(dataset.data["split"] == tag).to_numpy()] for tag in ("tr", "va", "te")}
        chosen_grid = {"l2_grid": (clf.l2_,), **({"hidden_grid": (clf.hidden_,), "dropout_grid": (clf.dropout_,)}
                                                 if classifier == "mlp" else {})}
        control_clf = _classifier(classifier, seed, **chosen_grid).fit(X["tr"], fake["tr"], X["va"], fake["va"])
        result.control_accuracy = float((control_clf.predict(X["te"]) == fake["te"]).mean())
        result.control_caveat = uninformative(dataset.data, control)
    if transfer:
        for key, value in _transfer(clf, encoder, splits["te"], X["te"], transfer).items():
            setattr(result, key, value)
    if mdl:  # the online code reuses the regularisation chosen on the full training set
        codes = online_codelength(lambda: _classifier("logreg", seed, l2_grid=(clf.l2_,)), X["tr"], y["tr"],
                                  seed=seed)
        result.mdl_bits, result.compression = codes["online_bits"], codes["compression"]
    return result


def _seen_word(splits: dict[str, pd.DataFrame]) -> np.ndarray | None:
    """Per test example, whether its label word (lower-cased) occurs in the training split; None for a task
    whose examples carry no word."""
    test = splits["te"]["word"].str.lower().to_numpy() if "word" in splits["te"] else []
    if len(test) == 0 or not all(test):
        return None
    return np.isin(test, splits["tr"]["word"].str.lower().unique())


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
    return ProbeResult(**{**asdict(first), **averaged, "ci_low": low, "ci_high": high, "correct": "",
                          "seeds": len(runs), "seed_std": float(np.std([r.accuracy for r in runs], ddof=1)),
                          "hyperparameters": " | ".join(dict.fromkeys(r.hyperparameters for r in runs))})


def probe_all(encoders: Sequence[Encoder], tasks: Sequence[str], **options) -> pd.DataFrame:
    """Tidy DataFrame: one row per encoder × task × metric (options as for :func:`probe`)."""
    frames = [probe(encoder, task, **options).to_frame() for task in tasks for encoder in encoders]
    return pd.concat(frames, ignore_index=True)
