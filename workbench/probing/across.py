"""Cross-lingual probe transfer: a probe trained on one language's version of a task (``bigram_shift``) and tested
on another language's version (``bigram_shift_fr``), both read by one encoder that reads the two languages (BGT's
semantic view, a multilingual model).

It asks whether the property sits in the same directions of the space whatever the language: the transferred
accuracy is read against the probe trained on the target language itself (what the space holds there, the
ceiling) and the target's majority class (the floor). Only the labels both versions share are tested (a task whose
labels are language-specific, such as WordContent's words, is refused); a label means the same thing in both only
as far as the cards say so (Length's bins are each language's own sextiles of length).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..cache import cached
from ..checks import WorkbenchError
from ..encoders import Encoder, check_contract
from .build import build_task, probing_sizes
from .probe import Features, check_options, checked_splits, new_classifier
from .result import MIN_SUBSET, bootstrap_ci
from .tasks import get_task, task_names


# Labels that name one property in two tag sets: the English tagger's noun tags and UD's Number.
SAME_LABEL = {"NN": "Sing", "NNS": "Plur"}


def english_version(task: str) -> str | None:
    """The English task that ``task`` (``tense_ja``) is another language's version of (``tense``), when the two
    declare two or more labels in common (as :data:`SAME_LABEL` names them; a catch-all ``other`` is not a label in
    common); ``None`` otherwise (WordContent's words, Gender, Person, Politeness, and Japanese's first punctuation
    marks have no English version to transfer from)."""
    card = get_task(task)
    source = task.removesuffix(f"_{card.language}")
    if source == task or source not in task_names() or get_task(source).languages != ("en",):
        return None
    shared = {SAME_LABEL.get(label, label) for label in get_task(source).labels} & set(card.labels) - {"other"}
    return source if len(shared) >= 2 else None


def base_task(task: str) -> str:
    """The task ``task`` is a language's version of (``bigram_shift`` for ``bigram_shift_fr``; itself in English)."""
    card = get_task(task)
    return task if card.language == "en" else task.removesuffix(f"_{card.language}")


def probe_across(encoder: Encoder, source: str, target: str, classifier: str = "logreg", seed: int = 0,
                 sizes: dict[str, int] | str | None = None, cache: bool = True) -> pd.DataFrame:
    """Train ``classifier`` on task ``source`` and test it on task ``target``'s test sentences (those whose label
    ``source`` has, or names otherwise: :data:`SAME_LABEL`), with ``encoder`` reading both. Tidy rows (encoder,
    task ``source→target``, metric, value, CI, n): ``transfer_accuracy``; the same test sentences under the probe
    trained on ``target`` (``target_accuracy``); their ``majority`` class share; ``transfer_ratio``, how much of
    the in-language probe's lead over the majority the transferred probe keeps (only where the in-language
    probe's CI is above the majority); and ``source_accuracy`` on ``source``'s own test split. ``sizes`` as for
    :func:`.probe.probe` (default :data:`~.build.DEFAULT_SIZES`; ``"full"``: each card's own)."""
    check_contract(encoder)
    check_options(classifier, False, False)
    cards = [get_task(source), get_task(target)]
    if cards[0].name == cards[1].name:
        raise WorkbenchError(f"source and target are both {source!r}: give another language's version of it")
    if base_task(source) != base_task(target):  # labels named alike in unrelated tasks (Length's 1-5, PunctNum's)
        versions = [t for t in task_names() if base_task(t) == base_task(source) and t != source]
        raise WorkbenchError(f"{target} is not a version of {source} in another language: transfer tests one "
                             f"property across languages (versions of {source}: {', '.join(versions) or 'none'})")
    for card in cards:
        card.check_encoder(encoder)  # before anything is built
    encoder = cached(encoder) if cache else encoder
    source_data, target_data = (_read(encoder, card, sizes) for card in cards)
    named = {label: label if label in set(target_data[1]["te"]) else SAME_LABEL.get(label, label)
             for label in np.unique(source_data[1]["tr"])}  # a source label as the target's cards name it
    shared = sorted(set(named.values()) & set(target_data[1]["te"]))
    keep = np.isin(target_data[1]["te"], shared)
    if len(shared) < 2 or keep.sum() < MIN_SUBSET:  # before any probe is fitted
        raise WorkbenchError(f"{source} and {target} share {len(shared)} label(s) ({', '.join(shared) or 'none'}) "
                             f"over {int(keep.sum())} test sentences of {target}: transfer needs two labels and "
                             f"{MIN_SUBSET} sentences")
    source_clf, target_clf = (_fitted(X, y, classifier, seed) for X, y in (source_data, target_data))
    X, y = target_data[0]["te"][keep], target_data[1]["te"][keep]
    transferred = np.array([named[label] for label in source_clf.predict(X)])
    correct = {"transfer_accuracy": transferred == y, "target_accuracy": target_clf.predict(X) == y,
               "source_accuracy": source_clf.predict(source_data[0]["te"]) == source_data[1]["te"]}
    majority = float(pd.Series(y).value_counts(normalize=True).iloc[0])
    rows = [_row(metric, hits.astype(float), seed) for metric, hits in correct.items()]
    above = rows[1]["ci_low"] > majority  # a ratio of two differences from the floor means nothing at the floor
    ratio = (rows[0]["value"] - majority) / (rows[1]["value"] - majority) if above else np.nan
    rows += [{"metric": "majority", "value": majority, "n": len(y), "note": ""},
             {"metric": "transfer_ratio", "value": ratio, "n": len(y),
              "note": "" if above else f"the {target} probe is not above its majority class (95% CI): no ratio"}]
    frame = pd.DataFrame(rows).assign(encoder=encoder.name, task=f"{source}→{target}", classifier=classifier,
                                      labels=" ".join(shared))
    return frame[["encoder", "task", "classifier", "metric", "value", "ci_low", "ci_high", "n", "labels", "note"]]


def _read(encoder, card, sizes) -> tuple[dict, dict]:
    """``card``'s task built at ``sizes``: its embeddings and labels per split (``tr``, ``va``, ``te``)."""
    dataset = build_task(card, sizes=probing_sizes(sizes))
    splits = checked_splits(card, dataset)
    return Features(dataset, splits)(encoder), {tag: frame["label"].to_numpy() for tag, frame in splits.items()}


def _fitted(X: dict, y: dict, classifier: str, seed: int):
    """A probe trained on the training split, its hyper-parameters chosen on the validation split."""
    return new_classifier(classifier, seed, (X["va"], y["va"])).fit(X["tr"], y["tr"])


def _row(metric: str, hits: np.ndarray, seed: int) -> dict:
    low, high = bootstrap_ci(hits, seed=seed)
    return {"metric": metric, "value": float(hits.mean()), "ci_low": low, "ci_high": high, "n": len(hits), "note": ""}
