"""Control tasks (Hewitt & Liang 2019), lifted from words to sentences.

Hewitt & Liang give every word type a random label and ask the probe to predict it at that word: a probe can
only solve such a task by memorising word identity, so *selectivity = task accuracy − control accuracy* shows
how much of the accuracy comes from the representation encoding the property rather than from the probe's
memory. For a sentence, the word that matters is the one the real label is read from — the subject head for
SubjNum, the object head for ObjNum, the main verb for Tense, the root of the dependency tree for TreeDepth
and TopConst (the word their tree is read from), the changed (or changeable) word for SOMO, BigramShift and
Gender, the first clause's root verb for CoordInv (``word`` in a built dataset). The control gives each such
word type a random label, drawn so that the label distribution matches the task's; a probe then passes the
control only if the embedding identifies that word, which is the shortcut the real task must be measured
against.

Two controls:

- ``"word"`` (the default): the label word where the task has one. Length and PunctNum are read from no word
  (a count over the whole sentence) and fall back to the first word: there the control asks how far memorising
  the sentence's opening word gets a probe, the lexical shortcut most open to a mean-pooled encoder (first
  words are few and frequent, so this control is easy and their selectivity is a conservative figure).
- ``"first_word"``: the first word type for every task (the earlier control; kept for comparison).

For WordContent and PunctFirst the label *is* a word's identity, so the control asks for the same memory as the
task and selectivity is near zero by construction: read their accuracy against the majority baseline instead.
:func:`uninformative` says, from the data alone, when a control cannot separate property from memory, and why;
results carry the reason and figures grey such cells (docs/probing.md#controls).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..checks import check_name
from ..data.tokenizer import preprocess, preprocess_many

CONTROLS = ("word", "first_word")


def first_word_type(sentence: str) -> str:
    return _first(preprocess(sentence))


def _first(preprocessed: str) -> str:
    tokens = preprocessed.split(maxsplit=1)
    return tokens[0] if tokens else ""


def control_words(data, kind: str = "word") -> tuple[list[str], str]:
    """The word type each example's control label is a function of, and the control actually used
    (``"word"`` falls back to ``"first_word"`` for a dataset whose examples carry no label word)."""
    check_name("control", kind, CONTROLS)
    words = list(data["word"]) if "word" in data else []
    if kind == "word" and words and all(words):
        return [w.lower() for w in words], "word"
    return [_first(tokens) for tokens in preprocess_many(list(data["sentence"]))], "first_word"


FEW_TYPES = 100  # effective word types below which memorising the control's words is easy by construction


def training_word_counts(data, kind: str = "word") -> tuple[Counter, str]:
    """How often each control word (:func:`control_words`) occurs in the training split, and the control used."""
    words, used = control_words(data, kind)
    return Counter(w for w, tag in zip(words, data["split"]) if tag == "tr"), used


def effective_types(counts: Counter) -> float:
    """exp of the entropy of the words' frequencies: as many equally frequent types would be as hard to memorise."""
    total = sum(counts.values())
    return math.exp(-sum(n / total * math.log(n / total) for n in counts.values()))


def uninformative(data, kind: str = "word") -> str:
    """Why the control of ``data`` cannot tell a property from word memory ("" when it can): its word types are
    few (:func:`effective_types` over the training split below :data:`FEW_TYPES`: Gender's four articles,
    PunctFirst's marks, the first words Length and PunctNum fall back to, where ten types cover about half of the
    examples), or hardly more than the task's labels (the control is the task relabelled: WordContent)."""
    counts, used = training_word_counts(data, kind)
    effective = effective_types(counts)
    n_labels = data["label"].nunique()
    what = "first words" if used == "first_word" else "label words"
    if effective < FEW_TYPES:
        top = sum(sorted(counts.values(), reverse=True)[:10]) / sum(counts.values())
        return (f"the control keys on {what} with {effective:.0f} effective types (the 10 most frequent cover "
                f"{100 * top:.0f}% of the examples): memorising them is easy by construction")
    if len(counts) <= 2 * n_labels:
        return (f"the control's {len(counts)} {what} are hardly more than the task's {n_labels} labels: it is "
                "the task relabelled, so selectivity is near zero by construction")
    return ""


def control_labels(word_types: Sequence[str], labels: Sequence[str], seed: int = 0) -> np.ndarray:
    """Control labels: one random label per word type, assigned so that the example-level label distribution
    matches that of ``labels`` as closely as whole types allow."""
    rng = np.random.default_rng(seed)
    deficit = Counter(labels)  # examples each label still needs
    label_names = sorted(deficit)
    assignment: dict[str, str] = {}
    type_counts = Counter(word_types)
    ordered = sorted(type_counts, key=lambda t: (-type_counts[t], rng.random()))  # frequent types first
    for word_type in ordered:
        count = type_counts[word_type]
        fitting = [label for label in label_names if deficit[label] >= count]
        if fitting:
            weights = np.array([deficit[label] for label in fitting], dtype=float)
            label = fitting[rng.choice(len(fitting), p=weights / weights.sum())]
        else:
            label = max(label_names, key=lambda name: deficit[name])
        assignment[word_type] = label
        deficit[label] -= count
    return np.array([assignment[t] for t in word_types], dtype=object)
