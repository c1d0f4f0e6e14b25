"""The text-only baselines of Conneau et al. (2018, Table 2) on the tasks this workbench builds: an external check.

Four classifiers that read the sentence itself, not an embedding, so that anyone can rerun them without weights:
the majority class; *Length*, a linear classifier on the number of Moses tokens; *NB-uni-tfidf* and
*NB-bi-tfidf*, multinomial naive Bayes on tf-idf weights of unigrams and of unigrams plus bigrams. Conneau et al.
published their accuracies on SentEval's probing data (BookCorpus, 100k/10k/10k); the same classifiers on our
tasks measure how far our datasets are from SentEval's, apart from any encoder (docs/probing.md#external-check).
"""
from __future__ import annotations

import io
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ..checks import check_name
from ..data.moses import tokenise_many
from ..progress import progress_bar
from .build import ProbingDataset, build_task
from .result import bootstrap_ci

# Conneau et al. 2018, Table 2: test accuracy (%) on SentEval's data; columns are our task names.
PUBLISHED = pd.read_csv(io.StringIO("""\
baseline,length,word_content,tree_depth,top_const,bigram_shift,tense,subj_num,obj_num,somo,coord_inv
majority,20.0,0.5,17.9,5.0,50.0,50.0,50.0,50.0,50.0,50.0
length,100.0,0.2,18.1,9.3,50.6,56.5,50.3,50.1,50.2,50.0
nb-uni-tfidf,22.7,97.8,24.1,41.9,49.5,77.7,68.9,64.0,38.0,50.5
nb-bi-tfidf,23.0,95.0,24.6,53.0,63.8,75.9,69.1,65.4,39.9,55.7
"""), index_col="baseline")
SENTEVAL_NAMES = {"length": "SentLen", "word_content": "WC", "tree_depth": "TreeDepth", "top_const": "TopConst",
                  "bigram_shift": "BShift", "tense": "Tense", "subj_num": "SubjNum", "obj_num": "ObjNum",
                  "somo": "SOMO", "coord_inv": "CoordInv"}


def _token_count(tokens: Sequence[str]) -> np.ndarray:
    return np.array([[len(t.split())] for t in tokens], dtype=np.float64)


def _naive_bayes(sk: SimpleNamespace, ngrams: int, alpha: float):
    return sk.pipeline.make_pipeline(
        sk.text.TfidfVectorizer(tokenizer=str.split, token_pattern=None, ngram_range=(1, ngrams)),
        sk.naive_bayes.MultinomialNB(alpha=alpha))


# name -> (what it is, the hyper-parameter grid searched on the validation split, factory(sk, value) -> estimator
# on space-joined Moses tokens, ``sk`` being :func:`_sklearn`'s modules)
BASELINES = {
    "majority": ("the most frequent training label", [None],
                 lambda sk, _: sk.dummy.DummyClassifier(strategy="most_frequent")),
    "length": ("logistic regression on the number of Moses tokens", [1.0, 100.0, 10000.0],
               lambda sk, c: sk.pipeline.make_pipeline(sk.preprocessing.FunctionTransformer(_token_count),
                                                       sk.preprocessing.StandardScaler(),
                                                       sk.linear_model.LogisticRegression(C=c, max_iter=2000))),
    "nb-uni-tfidf": ("multinomial naive Bayes on tf-idf of unigrams", [0.01, 0.1, 1.0],
                     lambda sk, alpha: _naive_bayes(sk, 1, alpha)),
    "nb-bi-tfidf": ("multinomial naive Bayes on tf-idf of unigrams and bigrams", [0.01, 0.1, 1.0],
                    lambda sk, alpha: _naive_bayes(sk, 2, alpha)),
}


def _sklearn() -> SimpleNamespace:
    """The scikit-learn modules the baselines are made of, imported when one is fitted: listing the baselines (the
    command line's ``probes`` parser does) need not wait the second scikit-learn takes to import."""
    from sklearn import dummy, feature_extraction, linear_model, naive_bayes, pipeline, preprocessing
    return SimpleNamespace(dummy=dummy, text=feature_extraction.text, linear_model=linear_model,
                           naive_bayes=naive_bayes, pipeline=pipeline, preprocessing=preprocessing)


def _splits(dataset: ProbingDataset) -> tuple[dict, dict]:
    """Space-joined Moses tokens (SentEval's format) and labels of each split."""
    texts = {tag: tokenise_many(dataset.split(tag)["sentence"].tolist()) for tag in ("tr", "va", "te")}
    return texts, {tag: dataset.split(tag)["label"].to_numpy() for tag in ("tr", "va", "te")}


def _fit(name: str, texts: dict, labels: dict) -> dict:
    """Fit baseline ``name`` on the train split, choosing its hyper-parameter on the validation split; the test
    accuracy (a fraction) with a bootstrap 95% CI."""
    _, grid, factory = BASELINES[name]
    sk, best, best_valid = _sklearn(), None, -1.0
    for value in grid:
        model = factory(sk, value).fit(texts["tr"], labels["tr"])
        valid = float(np.mean(model.predict(texts["va"]) == labels["va"]))
        if valid > best_valid:
            best, best_valid, chosen = model, valid, value
    correct = (best.predict(texts["te"]) == labels["te"]).astype(float)
    low, high = bootstrap_ci(correct)
    return {"accuracy": correct.mean(), "ci_low": low, "ci_high": high, "n": len(correct), "chosen": chosen}


def text_baselines(tasks: Sequence[str] = tuple(SENTEVAL_NAMES), baselines: Sequence[str] = tuple(BASELINES),
                   show_progress: bool = True, **build_options) -> pd.DataFrame:
    """Every baseline on every task (built on demand; ``build_options`` such as ``sizes`` go to
    :func:`build_task`), beside the published accuracy where Conneau et al. give one: one row per (task,
    baseline) with ``accuracy``, its CI, ``published`` and ``difference`` (ours − published), in percent."""
    for name in baselines:
        check_name("baseline", name, BASELINES)
    rows = []
    with progress_bar(total=len(tasks) * len(baselines), desc="text baselines", unit="fit",
              disable=not show_progress) as bar:
        for task in tasks:
            texts, labels = _splits(build_task(task, **build_options))
            for name in baselines:
                result = _fit(name, texts, labels)
                published = PUBLISHED[task][name] if task in PUBLISHED else np.nan
                rows.append({"task": task, "senteval": SENTEVAL_NAMES.get(task, ""), "baseline": name,
                             **{k: 100 * result[k] for k in ("accuracy", "ci_low", "ci_high")},
                             "published": published, "n": result["n"], "chosen": result["chosen"]})
                bar.update()
    frame = pd.DataFrame(rows)
    frame["difference"] = frame["accuracy"] - frame["published"]
    return frame
