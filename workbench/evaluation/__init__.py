"""Semantic evaluation suites; :func:`evaluate` is the entry point."""
from __future__ import annotations

import hashlib
import re
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..cache import cached, remember
from ..checks import WorkbenchError, check_name
from ..data import sha256_of
from ..data.corpora import corpus_digest, inherited_digests, languages_of, load_splits
from ..data.eval_sets import STS17_TRACKS, STS_DATASETS, TATOEBA_CODES
from ..data.sts import load_sts, load_sts_hard, load_tatoeba
from ..encoders import Encoder, check_contract, check_embeddings, check_reads, unread
from ..paths import data_dir
from .retrieval import distinct_pairs, mteb_scores, retrieval_errors
from .significance import bootstrap_differences, summarise
from .sts import (COLUMNS, cosine, embed_unique, evaluate_hard_sts, evaluate_sts, evaluate_sts17, evaluate_stsb,
                  year_similarities, years_task)

log = logging.getLogger(__name__)


def evaluate_tatoeba(encoder: Encoder, languages=None, margin: bool = False,
                     show_progress: bool = False) -> pd.DataFrame:
    """Tatoeba similarity-search error rates (%) in both directions, and MTEB's accuracy and F1 (xx→en, × 100;
    :func:`~.retrieval.mteb_scores`), for each language the encoder reads
    besides English (``languages=None``; an encoder that does not declare its languages: all five) or for the
    ones named (one it cannot read raises)."""
    rows = []
    for language in tatoeba_languages(encoder, languages):
        frame = load_tatoeba(language)
        xx = check_embeddings(encoder, encoder.encode(list(frame["xx"]), show_progress=show_progress), len(frame))
        en = check_embeddings(encoder, encoder.encode(list(frame["en"]), show_progress=show_progress), len(frame))
        scores = {f"error {d}": value for d, value in retrieval_errors(xx, en, margin).items()}
        if not margin:
            scores.update(mteb_scores(xx, en))
        rows += [{"encoder": encoder.name, "task": "Tatoeba", "dataset": f"{language}-en", "metric": metric,
                  "value": value, "n": len(frame)} for metric, value in scores.items()]
    return pd.DataFrame(rows, columns=COLUMNS)


def tatoeba_languages(encoder: Encoder, languages=None) -> list[str]:
    """The Tatoeba languages to evaluate ``encoder`` on (see :func:`evaluate_tatoeba`); a clear error when it
    cannot read one named, or (``languages=None``) reads no English–foreign pair at all."""
    if languages is None:
        languages = [lang for lang in TATOEBA_CODES if not unread(encoder, ("en", lang))]
        if not languages:
            raise WorkbenchError(f"Tatoeba pairs English with {', '.join(TATOEBA_CODES)}, but encoder "
                                 f"{encoder.name!r} reads {', '.join(encoder.languages) or 'nothing'}: nothing to "
                                 "evaluate (use a shared encoder, e.g. BGT's semantic view)")
    for language in languages:
        check_reads(encoder, ("en", language), f"Tatoeba {language}-en")
    return list(languages)


@dataclass(frozen=True)
class Suite:
    """An evaluation suite, declared in one place: its results' ``task`` name, the language sets it holds (an
    encoder that reads every language of at least one of them can take it; :func:`~workbench.encoders.unread`
    decides), its headline metric, the function that runs it (``run(encoder, show_progress=..., **options)`` ->
    tidy rows), the ``options`` that function takes, the folder of ``<data>/eval`` it reads (its results are
    cached on those files' digest alone), its ``main_score`` (MTEB's: which rows carry it, by task pattern,
    dataset (None: each) and metric; None where MTEB has no such task) and ``card`` (how its rows enter a model card; None: not on cards)."""

    name: str
    task: str
    about: str
    reads: tuple[tuple[str, ...], ...]
    metric: str
    run: Callable[..., pd.DataFrame]
    folder: str
    main_score: tuple[str, str | None, str] | None = None
    card: Callable[[pd.DataFrame], dict] | None = None
    options: tuple[str, ...] = ()

    def takes(self, encoder: Encoder) -> bool:
        """Whether ``encoder`` reads what this suite holds (for a multi-part suite: at least one part)."""
        return any(not unread(encoder, languages) for languages in self.reads)

    def describe_reads(self) -> str:
        """What an encoder must read, in words: "en", "en and one of fr, es", "one of es, en+es"."""
        if len(self.reads) == 1:
            return " and ".join(self.reads[0])
        shared = [lang for lang in self.reads[0] if all(lang in part for part in self.reads)]
        rest = [[lang for lang in part if lang not in shared] for part in self.reads]
        either = "one of " + ", ".join("+".join(part) for part in rest)
        return " and ".join([*shared, either])

    def main_rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        """This suite's rows of ``frame`` that carry MTEB's main score (one per MTEB subset)."""
        if self.main_score is None:
            return frame.iloc[:0]
        task, dataset, metric = self.main_score
        rows = frame[(frame["task"].str.fullmatch(task)) & (frame["metric"] == metric)]
        return rows if dataset is None else rows[rows["dataset"] == dataset]


def _sts_card(rows: pd.DataFrame) -> dict:
    sts = rows[(rows["metric"] == "pearson") & (rows["dataset"] == "all")]
    return {"sts": {task: round(float(v), 2) for task, v in zip(sts["task"], sts["value"])}} if len(sts) else {}


def _hard_sts_card(rows: pd.DataFrame) -> dict:
    hard = rows[(rows["task"] == "Hard STS") & (rows["metric"] == "pearson")]
    if hard.empty:
        return {}
    return {"hard_sts": {**{d: round(float(v), 2) for d, v in zip(hard["dataset"], hard["value"])},
                         "avg": round(float(hard["value"].mean()), 2)}}


def _sts17_card(rows: pd.DataFrame) -> dict:
    sts17 = rows[(rows["task"] == "STS17") & (rows["metric"] == "pearson")]
    return {"sts17": {d: round(float(v), 2) for d, v in zip(sts17["dataset"], sts17["value"])}} if len(sts17) else {}


def _tatoeba_card(rows: pd.DataFrame) -> dict:
    errors = rows[(rows["task"] == "Tatoeba") & rows["metric"].str.startswith("error")]
    if errors.empty:
        return {}
    return {"tatoeba": {dataset.split("-")[0]: {m.removeprefix("error "): round(float(v), 2)
                                                for m, v in zip(group["metric"], group["value"])}
                        for dataset, group in errors.groupby("dataset", sort=False)}}


SUITES = {suite.name: suite for suite in (
    Suite("sts", "STS12-16", "STS 2012–2016: Pearson's r of cosine similarity, per dataset and year", (("en",),),
          "pearson", evaluate_sts, "sts", main_score=(r"STS1[2-6]", "all (pooled)", "spearman"), card=_sts_card),
    Suite("stsb", "STS-B", "the STS Benchmark's test split", (("en",),), "spearman", evaluate_stsb, "stsb",
          main_score=("STS-B", "test", "spearman")),
    Suite("hard_sts", "Hard STS", "pairs whose wording and meaning disagree (Hard+ and Hard−)", (("en",),),
          "pearson", evaluate_hard_sts, "sts_hard", card=_hard_sts_card),
    Suite("sts17", "STS17", "SemEval-2017 tracks (the paper's Figure 4 ones, en-en and en-es WMT; --tracks names "
          "some)", tuple(tuple(dict.fromkeys(track.split("-")[:2])) for track in STS17_TRACKS), "pearson",
          evaluate_sts17, "sts17", main_score=("STS17", None, "spearman"), card=_sts17_card, options=("tracks",)),
    Suite("tatoeba", "Tatoeba", "similarity-search error rate, both directions",
          tuple(("en", lang) for lang in TATOEBA_CODES), "error", evaluate_tatoeba, "tatoeba",
          main_score=("Tatoeba", None, "f1 xx->en"), card=_tatoeba_card),
)}


EVALUATION_VERSION = 3  # bump when a change alters results, so cached ones are recomputed
HELD_OUT_PAIRS = 1000  # the retrieval of a pair's own test pairs: as many as a Tatoeba language has


def evaluate_held_out_retrieval(encoder: Encoder, pair: str, n: int = HELD_OUT_PAIRS) -> pd.DataFrame:
    """Similarity-search error rates (%) both ways on the first ``n`` of ``pair``'s test pairs whose sentences are
    distinct on each side: Tatoeba's measure for a pair Tatoeba lacks (a pair without English), on sentences no
    model of the pair trained on. Rows as a suite's, task ``held-out retrieval``, dataset the pair."""
    first, second = languages_of(pair)
    check_reads(encoder, (first, second), f"held-out retrieval {pair}")
    pairs = distinct_pairs(load_splits(pair)["test"])[:n]

    def compute() -> list[dict]:
        sides = [check_embeddings(encoder, encoder.encode([p[i] for p in pairs]), len(pairs)) for i in (0, 1)]
        errors = retrieval_errors(sides[1], sides[0])  # xx->en: second side searching the first
        return [{"encoder": encoder.name, "task": "held-out retrieval", "dataset": pair,
                 "metric": f"error {a}->{b}", "value": errors[key], "n": len(pairs)}
                for key, (a, b) in (("xx->en", (second, first)), ("en->xx", (first, second)))]
    encoder = cached(encoder)
    key = {"suite": "held_out_retrieval", "version": EVALUATION_VERSION, "pair": pair, "n": n,
           "corpus": corpus_digest(pair), "split_from": inherited_digests(pair)}
    return pd.DataFrame(remember("evaluate", encoder.fingerprint, key, compute), columns=COLUMNS)

_DIGESTS: dict[tuple, str] = {}


def suite_data_digest(suite: Suite) -> str:
    """sha256 over the names and bytes of the files the suite reads (``<data>/eval/<folder>``): its cached results
    are keyed on it, so edited or replaced gold scores are never answered with a number computed from the old
    ones, and a file added for another suite invalidates nothing here. Hashed once per process for each set of
    (name, size, modification time)."""
    root = data_dir() / "eval" / suite.folder
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    stamp = (suite.folder, *((p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
                             for p in files))
    if stamp not in _DIGESTS:
        h = hashlib.sha256()
        for path, (name, _, _) in zip(files, stamp[1:]):
            h.update(name.encode() + b"\0" + sha256_of(path).encode())
        _DIGESTS[stamp] = h.hexdigest()
    return _DIGESTS[stamp]


def _row_languages(dataset: str) -> tuple[str, ...]:
    """The languages a result row was read in: a track or pair named ``xx-yy`` (STS17, Tatoeba), else English."""
    named = re.match(r"([a-z]{2})-([a-z]{2})(?:-|$)", str(dataset))
    return tuple(dict.fromkeys(named.groups())) if named else ("en",)


class AnyLanguage:
    """``encoder`` with its declared languages set aside (``force_languages``): every track is read, as MTEB
    runs an English-only model on its cross-lingual tasks (the low numbers are the finding)."""

    def __init__(self, encoder: Encoder):
        self.encoder, self.name, self.dim, self.fingerprint = encoder, encoder.name, encoder.dim, encoder.fingerprint

    def encode(self, sentences, batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        return self.encoder.encode(sentences, batch_size=batch_size, show_progress=show_progress)


def evaluate(encoder: Encoder, suite: str = "sts", show_progress: bool = False, cache: bool = True,
             force_languages: bool = False, **options) -> pd.DataFrame:
    """Run one evaluation suite (or ``"all"``) on ``encoder``; tidy rows (encoder, task, dataset, metric,
    value, n). Suites: :data:`SUITES` (sts, stsb, hard_sts, sts17, tatoeba); ``options`` go to the one suite that
    takes them (``tracks=["en-en"]`` for sts17). Embeddings and results are cached (``cache=False`` bypasses
    both). A suite in languages the encoder does not declare is refused, unless ``force_languages`` (then every
    part is run and each row's ``note`` says so)."""
    check_name("evaluation suite", suite, [*SUITES, "all"])
    check_contract(encoder)
    unknown = sorted(set(options) - set(SUITES[suite].options if suite != "all" else ()))
    if unknown:
        takes = "; ".join(f"{name}: {', '.join(s.options)}" for name, s in SUITES.items() if s.options)
        raise WorkbenchError(f"evaluation option {', '.join(unknown)} does not apply to suite {suite!r}; the options "
                             f"are {takes}")
    if force_languages and getattr(encoder, "languages", None) is not None:
        declared = ", ".join(encoder.languages)
        frame = evaluate(AnyLanguage(encoder), suite, show_progress, cache, **options)
        outside = [bool(unread(encoder, _row_languages(dataset))) for dataset in frame["dataset"]]
        return frame.assign(note=np.where(outside, f"outside its declared languages ({declared}): asked for with "
                                                   "force_languages", ""))
    names = _suites_for(encoder, suite)
    if not cache:
        return pd.concat([SUITES[name].run(encoder, show_progress=show_progress, **options) for name in names],
                         ignore_index=True)
    forced = isinstance(encoder, AnyLanguage)
    encoder = cached(encoder)
    frames = []
    for name in names:
        key = {"suite": name, "version": EVALUATION_VERSION, "data": suite_data_digest(SUITES[name]),
               **({"any_language": True} if forced else {}), **({"options": options} if options else {})}
        records = remember("evaluate", encoder.fingerprint, key, lambda name=name: SUITES[name].run(
            encoder, show_progress=show_progress, **options).to_dict(orient="records"))
        frames.append(pd.DataFrame(records))
    return pd.concat([frame.reindex(columns=[*COLUMNS, *(c for c in frame.columns if c not in COLUMNS)])
                      .assign(encoder=encoder.name)  # the name asked for, not the first one stored
                      for frame in frames], ignore_index=True)


def _suites_for(encoder: Encoder, suite: str) -> list[str]:
    """The suites ``suite`` names that ``encoder`` can take: the one named (refused when it cannot, with the way
    to ask anyway), or for ``"all"`` every one it reads (the others skipped with a warning)."""
    if suite != "all":
        if not SUITES[suite].takes(encoder):
            raise WorkbenchError(f"{SUITES[suite].task} holds {SUITES[suite].describe_reads()}, and encoder "
                                 f"{encoder.name!r} declares {', '.join(encoder.languages) or 'nothing'}: evaluate "
                                 "it anyway with force_languages=True (CLI --force-languages), and the rows are "
                                 "marked")
        return [suite]
    names = [name for name in SUITES if SUITES[name].takes(encoder)]
    for name in SUITES.keys() - set(names):
        log.warning("skipping %s: it holds %s, and encoder %r reads %s", SUITES[name].task,
                    SUITES[name].describe_reads(), encoder.name, ", ".join(encoder.languages))
    if not names:
        raise WorkbenchError(f"encoder {encoder.name!r} reads {', '.join(encoder.languages) or 'nothing'}, and "
                             "every evaluation suite holds other languages ("
                             f"{'; '.join(f'{n}: {s.describe_reads()}' for n, s in SUITES.items())})")
    return names


def mteb_view(frame: pd.DataFrame) -> pd.DataFrame:
    """STS results in both conventions, side by side: the paper's and SentEval's (Pearson, the mean over a year's
    sub-datasets; over years, the mean of the year means) and MTEB's main score (Spearman over each year's
    pairs pooled; over years, their mean). Rows per year and for STS12-16; values × 100."""
    rows = frame[frame["task"].str.match(r"STS1[2-6]$")]
    paper = rows[(rows["dataset"] == "all") & (rows["metric"] == "pearson")].set_index("task")["value"]
    mteb = rows[(rows["dataset"] == "all (pooled)") & (rows["metric"] == "spearman")].set_index("task")["value"]
    view = pd.DataFrame({"paper: Pearson, mean of sub-datasets": paper, "MTEB: Spearman, pooled": mteb})
    if len(view) > 1:
        view.loc["STS12-16 (mean of years)"] = view.mean()
    return view


def _paired_similarities(encoders: dict[str, Encoder], frames: list[pd.DataFrame]) -> dict[str, np.ndarray]:
    """Each encoder's cosine similarity of every pair of ``frames``, in order (one embedding per sentence)."""
    sentences = [s for f in frames for s in (*f["sentence1"], *f["sentence2"])]
    sims = {}
    for key, encoder in encoders.items():
        lookup = embed_unique(cached(encoder), sentences)
        sims[key] = np.concatenate([cosine(np.stack([lookup[s] for s in f["sentence1"]]),
                                           np.stack([lookup[s] for s in f["sentence2"]])) for f in frames])
    return sims


def compare_sts(encoder_a: Encoder, encoder_b: Encoder, years=tuple(STS_DATASETS), n_boot: int = 2000,
                seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap of ``encoder_a`` against ``encoder_b`` on STS 2012–16: per year (statistic = mean
    Pearson over the year's datasets) and over all years; rows ``task, difference, ci_low, ci_high, p_value``."""
    data = {year: load_sts(year) for year in years}
    frames = [(f"STS{year % 100}", name, frame) for year, sets in data.items() for name, frame in sets.items()]
    sims = {"a": year_similarities(cached(encoder_a), data), "b": year_similarities(cached(encoder_b), data)}
    gold = np.concatenate([f["score"].to_numpy() for _, _, f in frames])
    task = np.concatenate([[t] * len(f) for t, _, f in frames])
    dataset = np.concatenate([[f"{t}/{n}"] * len(f) for t, n, f in frames])
    tasks = list(dict.fromkeys(task))
    seeds = [int(child.generate_state(1)[0]) for child in np.random.SeedSequence(seed).spawn(len(tasks))]
    per_year = {year: bootstrap_differences(gold[task == year], sims["a"][task == year], sims["b"][task == year],
                                            dataset[task == year], n_boot, year_seed)  # independent replicates
                for year, year_seed in zip(tasks, seeds)}
    results = {year: summarise(*pair) for year, pair in per_year.items()}
    if len(per_year) > 1:  # the all-years figure is the mean of the yearly means
        results[years_task(years)] = summarise(
            float(np.mean([o for o, _ in per_year.values()])), np.mean([d for _, d in per_year.values()], axis=0))
    return comparison_frame(encoder_a, encoder_b, results)


def compare_hard_sts(encoder_a: Encoder, encoder_b: Encoder, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap of ``encoder_a`` against ``encoder_b`` on Hard STS, Hard+ and Hard− each on its own
    pairs; rows as :func:`compare_sts`'s, ``task`` ``hard+`` / ``hard-``."""
    check_reads(encoder_a, ("en",), "Hard STS")
    check_reads(encoder_b, ("en",), "Hard STS")
    results = {}
    for kind, name in (("hard-pos", "hard+"), ("hard-neg", "hard-")):
        frame = load_sts_hard(kind)
        sims = _paired_similarities({"a": encoder_a, "b": encoder_b}, [frame])
        results[name] = summarise(*bootstrap_differences(frame["score"].to_numpy(), sims["a"], sims["b"], None,
                                                         n_boot, seed))
    return comparison_frame(encoder_a, encoder_b, results)


def comparison_frame(encoder_a: Encoder, encoder_b: Encoder, results: dict) -> pd.DataFrame:
    """Rows ``a, b, task, difference, ci_low, ci_high, p_value, n_boot``, each also a tidy result row (encoder
    ``"A − B"``, metric ``pearson difference``, value the difference), so that :func:`~workbench.report` takes a
    comparison as it takes any result."""
    return pd.DataFrame([{"a": encoder_a.name, "b": encoder_b.name, "task": task, **vars(result),
                          "encoder": f"{encoder_a.name} − {encoder_b.name}", "metric": "pearson difference",
                          "value": result.difference} for task, result in results.items()])
