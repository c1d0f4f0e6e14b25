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
import inspect
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..cache import cached, remember
from ..checks import WorkbenchError, check_name, whole
from ..data.corpora import known_pairs, language_of
from ..data.splitting import normalise
from ..encoders import Encoder, check_contract, check_embeddings, check_reads
from .build import ProbingDataset, build_task, probing_sizes
from .classifiers import CLASSIFIERS
from .control import CONTROLS, control_labels, control_words, uninformative
from .mdl import online_codelength
from .own import dataset_or_card
from .pool import translations
from .result import (MDL, Conditional, Control, ProbeResult, Transfer, WordSplit, bootstrap_ci, over_seeds,
                     prediction_table)
from .tasks import TaskCard, get_task, task_names

MAX_SEEDS = 100  # more probes than anyone reads a spread from; refused before any work
PROBE_VERSION = 10  # bump when a change alters results (or how they are stored), so cached ones are recomputed


def probe(encoder: Encoder, task: str | Path | pd.DataFrame | ProbingDataset, classifier: str = "logreg",
          seed: int = 0, control: bool | str = True, mdl: bool = False, cache: bool = True, refit: bool = False,
          given: Encoder | None = None, transfer: str | None = None, seeds: int = 1, **build_options) -> ProbeResult:
    """Train a probe for ``task`` on ``encoder``'s embeddings and report its test accuracy.

    ``task`` is a task name (built on demand at ``sizes``, default :data:`~.build.DEFAULT_SIZES` — 6,000/1,000/
    1,000 sentences, as the CLI, the demo and the model cards — or ``sizes="full"``, the task card's own;
    other ``build_options`` go to :func:`build_task`), a built dataset, or your own labelled sentences: a
    DataFrame or the path of a file (:func:`.own.own_task`, which ``sizes`` also goes to; default all of them); ``classifier`` is ``"logreg"`` or ``"mlp"``; ``control`` adds a control task and
    selectivity: ``True`` keys it on the word the label is read from (the first word where a task has none),
    ``"word"`` on the label word only (a task without label words is refused), ``"first_word"`` on the first
    word, ``False`` skips it (see :mod:`.control`); ``mdl`` adds the online codelength. ``given``, another
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
    asked, control = control, check_options(classifier, control, mdl)
    dataset, card = _checked_request(encoder, task, given, transfer, seeds, build_options)
    if asked == "word" and not _label_words(dataset):  # asked for by name: said, not swapped for another control
        raise WorkbenchError(f"control='word' keys the control task on each example's label word, and task "
                             f"{card.name!r} has none (a count over the whole sentence, or own data without a word "
                             "column): use control='first_word', or control=True (the label word where a task has "
                             "one, else the first word)")
    splits = checked_splits(card, dataset)
    if cache:
        encoder, given = cached(encoder), given if given is None else cached(given)
    job = _ProbeJob(card, dataset, splits, Features(dataset, splits), classifier, cache, refit)
    if given is None:
        runs = [job.fit(encoder, s, control, mdl, transfer) for s in range(seed, seed + seeds)]
        return runs[0] if seeds == 1 else over_seeds(runs)
    joint = job.fit(Concatenated(encoder, given), seed, control, mdl)
    alone = job.fit(given, seed, False, False)
    gain = joint.outcomes() - alone.outcomes()  # paired: the same test examples
    joint.conditional = Conditional(given.name, alone.accuracy, *bootstrap_ci(gain, seed=seed))
    return joint


def _checked_request(encoder: Encoder, task, given: Encoder | None, transfer: str | None, seeds,
                     build_options: dict) -> tuple[ProbingDataset, TaskCard]:
    """The task's dataset and card, once every option was checked against the encoders (before anything is
    built)."""
    check_contract(encoder)
    if given is not None:
        check_contract(given)
    if not whole(seeds, 1, MAX_SEEDS):
        raise WorkbenchError(f"seeds must be a whole number from 1 to {MAX_SEEDS} (got {seeds!r})")
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
    return task_dataset(task, **build_options) if dataset is None else dataset, card


def task_dataset(task, **build_options) -> ProbingDataset:
    """The dataset a probe of ``task`` reads: a named task built at the sizes asked for (the default ones unless
    ``sizes``), or the own data or dataset given."""
    dataset, card = dataset_or_card(task, **build_options)
    if dataset is None:
        dataset = build_task(card, **{**build_options, "sizes": probing_sizes(build_options.get("sizes"))})
    return dataset


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
            return ProbeResult.from_dict(compute())
        stored = remember("probe", reader.fingerprint, options, compute, refresh=self.refit)
        return ProbeResult.from_dict({**stored, "encoder": reader.name})  # the name asked for, not the first stored


def checked_splits(card, dataset: ProbingDataset) -> dict[str, pd.DataFrame]:
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


def _label_words(dataset: ProbingDataset) -> bool:
    """Whether every example of ``dataset`` names the word its label is read from."""
    return "word" in dataset.data and bool((dataset.data["word"].astype(str) != "").all())


def check_options(classifier: str, control: bool | str, mdl: bool) -> str | bool:
    """Validate :func:`probe`'s options (before any work); returns the control's name (or ``False``)."""
    check_name("probe classifier", classifier, CLASSIFIERS)
    if mdl and classifier != "logreg":
        raise WorkbenchError(f"MDL probing is implemented for the logreg probe, not {classifier!r}")
    if control is True:
        return "word"
    return control if control is False else check_name("control", control, CONTROLS)


def new_classifier(name: str, seed: int, validation: tuple, **params):
    """The probe ``name`` whose hyper-parameters ``validation`` (``(X_valid, y_valid)``) chooses."""
    return CLASSIFIERS[name](random_state=seed, validation=validation, **params)


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
    check_name("transfer language", transfer, [language_of(pair) for pair in known_pairs()])  # and your own pairs
    check_reads(encoder, (transfer,), f"transfer to {transfer!r}")


def _transfer(clf, encoder, frame: pd.DataFrame, X: np.ndarray, language: str) -> Transfer:
    """The probe on the translations of the test sentences that have one, and on the same ones in English."""
    translated = translations(f"en-{language}")
    keep = [i for i, s in enumerate(frame["sentence"]) if normalise(s) in translated]
    if len(keep) < 50:
        raise WorkbenchError(f"only {len(keep)} of the {len(frame)} test sentences have a "
                             f"translation into {language!r}: too few to measure transfer")
    foreign = [translated[normalise(frame["sentence"].iloc[i])] for i in keep]
    X_foreign = check_embeddings(encoder, encoder.encode(foreign), len(foreign))
    y = frame["label"].to_numpy()[keep]
    return Transfer(language, float((clf.predict(X_foreign) == y).mean()), float((clf.predict(X[keep]) == y).mean()),
                    len(keep))


def _run_probe(encoder, features, dataset, splits, classifier, seed, control, mdl, transfer=None) -> ProbeResult:
    X = features(encoder)
    y = {tag: frame["label"].to_numpy() for tag, frame in splits.items()}
    clf = new_classifier(classifier, seed, (X["va"], y["va"])).fit(X["tr"], y["tr"])
    probabilities = clf.predict_proba(X["te"])
    predicted = clf.classes_[probabilities.argmax(axis=1)]
    correct = (predicted == y["te"]).astype(float)
    majority_label = pd.Series(y["tr"]).value_counts().idxmax()
    low, high = bootstrap_ci(correct, seed=seed)
    seen = _seen_word(splits)
    chosen = {"l2": clf.l2_, **({"hidden": clf.hidden_, "dropout": clf.dropout_} if classifier == "mlp" else {})}
    result = ProbeResult(encoder=encoder.name, task=dataset.card.name, classifier=classifier,
                         accuracy=float(correct.mean()), ci_low=low, ci_high=high,
                         correct="".join("1" if c else "0" for c in correct),
                         majority=float((y["te"] == majority_label).mean()),
                         n_train=len(y["tr"]), n_test=len(y["te"]),
                         predictions=[[str(label), round(float(p), 4)]
                                      for label, p in zip(predicted, probabilities.max(axis=1))],
                         hyperparameters=", ".join(f"{k}={v:g}" for k, v in chosen.items()) + f" (of {_grid(clf)})")
    if seen is not None:
        result.words = WordSplit(int(seen.sum()), float(correct[seen].mean()) if seen.any() else None,
                                 float(correct[~seen].mean()) if (~seen).any() else None)
    if control:  # the same probe, with the hyper-parameters chosen for the task (Hewitt & Liang 2019)
        word_types, kind = control_words(dataset.data, control)
        fake = control_labels(word_types, list(dataset.data["label"]), seed=seed)
        fake = {tag: fake[(dataset.data["split"] == tag).to_numpy()] for tag in ("tr", "va", "te")}
        chosen_grid = {"l2_grid": (clf.l2_,), **({"hidden_grid": (clf.hidden_,), "dropout_grid": (clf.dropout_,)}
                                                 if classifier == "mlp" else {})}
        control_clf = new_classifier(classifier, seed, (X["va"], fake["va"]), **chosen_grid).fit(X["tr"], fake["tr"])
        result.control = Control(kind, float((control_clf.predict(X["te"]) == fake["te"]).mean()),
                                 uninformative(dataset.data, control))
    if transfer:
        result.transfer = _transfer(clf, encoder, splits["te"], X["te"], transfer)
    if mdl:  # the online code reuses the regularisation chosen on the full training set
        codes = online_codelength(lambda: new_classifier("logreg", seed, None, l2_grid=(clf.l2_,)), X["tr"], y["tr"],
                                  seed=seed)
        result.mdl = MDL(codes["online_bits"], codes["compression"])
    return result


def _seen_word(splits: dict[str, pd.DataFrame]) -> np.ndarray | None:
    """Per test example, whether its label word (lower-cased) occurs in the training split; None for a task
    whose examples carry no word."""
    test = splits["te"]["word"].str.lower().to_numpy() if "word" in splits["te"] else []
    if len(test) == 0 or not all(test):
        return None
    return np.isin(test, splits["tr"]["word"].str.lower().unique())


def predictions(encoder: Encoder, task, **options) -> pd.DataFrame:
    """What the probe :func:`probe` fits (and caches) said of each test sentence of ``task``: sentence, label (and
    label word), the label it gave, that label's probability, and whether it was right (``options`` as for
    :func:`probe`, one seed) — for error analysis."""
    build = {key: value for key, value in options.items() if key not in inspect.signature(probe).parameters}
    result = probe(encoder, task, **options)
    return prediction_table(result, task_dataset(task, **build).split("te"))


def probe_all(encoders: Sequence[Encoder], tasks: Sequence[str], **options) -> pd.DataFrame:
    """Tidy DataFrame: one row per encoder × task × metric (options as for :func:`probe`)."""
    if isinstance(tasks, (str, Path, pd.DataFrame)) or not isinstance(tasks, Sequence) or not len(tasks):
        raise WorkbenchError(f"probe_all takes a non-empty list of tasks (names, files or DataFrames), got {tasks!r}; "
                             "`workbench probes list` names them")
    if not isinstance(encoders, Sequence) or not len(encoders):
        raise WorkbenchError(f"probe_all takes a non-empty list of encoders, got {encoders!r}")
    frames = [probe(encoder, task, **options).to_frame() for task in tasks for encoder in encoders]
    return pd.concat(frames, ignore_index=True)
