"""Control tasks (Hewitt & Liang 2019), lifted from words to sentences.

A control task keeps the inputs and the label distribution of a probing task but makes each label a random
function of word identity: every word type gets a label, and a sentence takes the label of its first word type
(Moses-tokenised, lowercased). A probe can only solve it by memorising which words come first, so the gap
*selectivity = task accuracy − control accuracy* shows how much of a probe's accuracy comes from the
representation encoding the property rather than from the probe memorising lexical identity.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..data.tokenizer import preprocess, preprocess_many


def first_word_type(sentence: str) -> str:
    return _first(preprocess(sentence))


def _first(preprocessed: str) -> str:
    tokens = preprocessed.split(maxsplit=1)
    return tokens[0] if tokens else ""


def control_labels(sentences: Sequence[str], labels: Sequence[str], seed: int = 0) -> np.ndarray:
    """Control labels for ``sentences``: one random label per first-word type, assigned so that the
    sentence-level label distribution matches that of ``labels`` as closely as whole types allow."""
    types = [_first(tokens) for tokens in preprocess_many(sentences)]
    rng = np.random.default_rng(seed)
    deficit = Counter(labels)  # sentences each label still needs
    label_names = sorted(deficit)
    assignment: dict[str, str] = {}
    type_counts = Counter(types)
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
    return np.array([assignment[t] for t in types], dtype=object)
