"""Building probing datasets from the probe pool (held-out sentences of the parallel data).

A builder turns pool sentences into ``(label, sentence, word)`` candidates (``word``: the token the label is read
from, for the control task); the shared selection then caps each label (``max_per_label``), shuffles with a
fixed seed and splits each label proportionally into train/valid/test of the card's sizes — scaled down by one
factor, with a warning, when the pool is smaller. Datasets are stored under ``<home>/probing/<task>-<key>/`` in
SentEval's ``split<TAB>label<TAB>sentence`` format plus a fourth column, the label word (``cut -f1-3`` gives
SentEval's file), beside a ``manifest.json`` (digest, label counts, sizes, builder version); a built task is
reused, and so are a builder's candidates (:mod:`.pool`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..checks import WorkbenchError, check_sizes
from ..data.corpora import tokenised_pool
from ..data.splitting import SplitConfig
from ..data.moses import tokenise_many
from ..paths import PROBES_DIR, atomic_write, home_dir, read_json
from ..progress import progress_bar
from .builders import BUILDERS, PARSING, VERSIONS
from .parse import parse, ship, stored_parses
from .pool import builder_params, candidates_path, is_paired, labelled, pool_candidates, pool_key
from .tasks import TaskCard, get_task, task_names

log = logging.getLogger(__name__)

SPLIT_NAMES = ("tr", "va", "te")  # SentEval's split tags
# The sizes a named task is probed at, the same from Python, the CLI, the demo, the notebooks and the model cards:
# a minute or less per task on 2 cores. sizes="full" asks for the task card's own sizes.
DEFAULT_SIZES = {"train": 6000, "valid": 1000, "test": 1000}
QUICK_SIZES = {"train": 600, "valid": 200, "test": 200}  # with WORKBENCH_QUICK=1: how CI runs notebooks and docs


def default_sizes() -> dict[str, int]:
    """:data:`DEFAULT_SIZES`, or :data:`QUICK_SIZES` when ``WORKBENCH_QUICK`` is set (to anything but 0)."""
    quick = os.environ.get("WORKBENCH_QUICK", "") not in ("", "0")
    return dict(QUICK_SIZES if quick else DEFAULT_SIZES)


def probing_sizes(sizes) -> dict[str, int] | None:
    """The sizes to build a named task at for a probe: :func:`default_sizes` when none are given, the task card's
    own (``None`` to :func:`build_task`) for ``"full"``, else ``sizes`` checked."""
    if sizes is None:
        return default_sizes()
    if isinstance(sizes, str) and sizes == "full":
        return None
    return check_sizes(sizes)
COLUMNS = ["split", "label", "sentence", "word"]


@dataclass
class ProbingDataset:
    """A built task: ``data`` has columns ``split`` (tr/va/te), ``label``, ``sentence``, ``word`` (the token the
    label is read from; empty for tasks read from no single word)."""

    card: TaskCard
    data: pd.DataFrame
    manifest: dict
    path: Path | None = None

    def split(self, name: str) -> pd.DataFrame:
        return self.data[self.data["split"] == name]


def select(candidates: Sequence[tuple[str, str, str]], sizes: dict[str, int], max_per_label: int | None,
           seed: int = 0, task: str = "", balanced: bool = False, lexical: bool = False) -> pd.DataFrame:
    """Cap labels (at ``max_per_label``, and with ``balanced`` at the rarest label's count), shuffle and split
    each label proportionally into the requested (or scaled) sizes. ``lexical``: whole label words go to one
    split each (:func:`split_by_word`), so no test word was seen in training."""
    by_label: dict[str, list[tuple[str, str]]] = defaultdict(list)
    seen = set()
    for label, sentence, word in candidates:  # one example per sentence
        if sentence not in seen:
            seen.add(sentence)
            by_label[label].append((sentence, word))
    rng = np.random.default_rng(seed)
    cap = max_per_label
    if balanced and by_label:
        cap = min(cap or len(seen), *(len(items) for items in by_label.values()))
    for label in sorted(by_label):
        rng.shuffle(by_label[label])
    counts = {label: min(len(items), cap or len(items)) for label, items in by_label.items()}
    targets = _split_targets(counts, sizes, task)
    if lexical:
        rows = split_by_word(by_label, targets, rng)
        if balanced:  # whole words rarely fill every label's share exactly: trim each split to its rarest label
            rows = _trimmed_to_rarest(rows, tuple(by_label))
    else:
        rows = []
        for label in sorted(by_label):
            items, start = by_label[label], 0
            for tag in SPLIT_NAMES:
                rows += [(tag, label, s, word) for s, word in items[start:start + targets[label][tag]]]
                start += targets[label][tag]
    data = pd.DataFrame(rows, columns=COLUMNS)
    order = rng.permutation(len(data))
    data = data.iloc[order]
    data["_rank"] = data["split"].map({t: i for i, t in enumerate(SPLIT_NAMES)})
    return data.sort_values("_rank", kind="stable").drop(columns="_rank").reset_index(drop=True)


def _split_targets(counts: dict[str, int], sizes: dict[str, int], task: str) -> dict[str, dict[str, int]]:
    """How many examples of each label (``counts`` available) go to each split: the requested sizes, scaled down
    (with a warning) when the pool gives fewer, each label in proportion."""
    total, wanted = sum(counts.values()), sum(sizes.values())
    if total == 0:
        raise WorkbenchError(f"task {task!r}: the builder produced no examples from the pool")
    scale = min(1.0, total / wanted)
    if scale < 1:
        log.warning("task %s: the pool gives %d examples, fewer than the %d asked for; all splits scaled by %.3f",
                    task, total, wanted, scale)
    take = min(total, wanted)
    frac = {k: v / wanted for k, v in sizes.items()}
    targets = {}
    for label in sorted(counts):
        n_label = round(counts[label] * take / total)
        n_va, n_te = round(n_label * frac["valid"]), round(n_label * frac["test"])
        targets[label] = dict(zip(SPLIT_NAMES, (n_label - n_va - n_te, n_va, n_te)))
    return targets


def _trimmed_to_rarest(rows: list[tuple], labels: tuple[str, ...]) -> list[tuple]:
    """``rows`` (split, label, ...) with each split cut, in order, to its rarest label's count."""
    counts = Counter((tag, label) for tag, label, _, _ in rows)
    keep = {tag: min(counts[tag, label] for label in labels) for tag in SPLIT_NAMES}
    taken: Counter = Counter()
    trimmed = []
    for row in rows:
        taken[row[:2]] += 1
        if taken[row[:2]] <= keep[row[0]]:
            trimmed.append(row)
    return trimmed


def split_by_word(by_label: dict[str, list[tuple[str, str]]], targets: dict[str, dict[str, int]],
                  rng: np.random.Generator) -> list[tuple[str, str, str, str]]:
    """SentEval's lexically disjoint split: every label word (lower-cased) goes, with all its sentences, to one
    split. Words are taken in random order, each into the split that still lacks the largest share of its
    target for the word's labels; sentences beyond what that split still needs are left out. The splits reach
    their targets when the pool has enough words to spare, else they come out smaller."""
    words: dict[str, dict[str, list[tuple[str, str]]]] = defaultdict(lambda: defaultdict(list))
    for label in sorted(by_label):
        for sentence, word in by_label[label]:
            words[word.lower()][label].append((sentence, word))
    need = {tag: {label: targets[label][tag] for label in targets} for tag in SPLIT_NAMES}
    size = {tag: max(1, sum(need[tag].values())) for tag in SPLIT_NAMES}
    rows = []
    for key in rng.permutation(sorted(words)):
        labels = words[key]
        lacking = {tag: sum(need[tag][label] for label in labels) / size[tag] for tag in SPLIT_NAMES}
        tag = max(SPLIT_NAMES, key=lambda t: lacking[t])
        if lacking[tag] == 0:
            continue
        for label, items in labels.items():
            chosen = items[:need[tag][label]]
            need[tag][label] -= len(chosen)
            rows += [(tag, label, sentence, word) for sentence, word in chosen]
    return rows


def _spec_and_folder(card: TaskCard, sizes: dict[str, int], pool: Sequence[str] | None, seed: int,
                     config: SplitConfig) -> tuple[dict, Path]:
    spec = {"card": card.digest, "sizes": sizes, "seed": seed, "builder_version": VERSIONS[card.builder],
            "pool": pool_key(config, card.languages) if pool is None else hashlib.sha256("\n".join(pool).encode()).hexdigest()}
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    return spec, home_dir() / "probing" / f"{card.name}-{key}"


def pending(tasks: Sequence[str], sizes: dict[str, int] | None = None, config: SplitConfig = SplitConfig()
            ) -> tuple[list[str], dict[str, int]]:
    """What building ``tasks`` (from the probe pool, seed 0) still has to do: the tasks not yet built, and per
    language the number of pool sentences still to be parsed for them (none where their candidates are stored)."""
    cards = [get_task(task) for task in tasks]
    folders = [_spec_and_folder(card, check_sizes(card.sizes if sizes is None else sizes), None, 0, config)[1]
               for card in cards]
    missing = [card for card, folder in zip(cards, folders) if not (folder / "manifest.json").is_file()]
    to_parse: dict[str, int] = {}
    for card in missing:
        if card.builder in PARSING and card.language not in to_parse and not candidates_path(
                card.builder, card.language, is_paired(card), builder_params(card, 0), config).is_file():
            pool = tokenised_pool(card.language, config)
            if stored_parses(pool, card.language) is None:
                to_parse[card.language] = len(pool)
    return [card.name for card in missing], to_parse


SHIPPED_BUILDS = PROBES_DIR / "builds.json"


def build_spec(task: str, sizes: dict[str, int] | None = None, config: SplitConfig = SplitConfig()) -> dict:
    """What building ``task`` from the probe pool (seed 0) at ``sizes`` (default: the card's) reads: the card,
    the sizes, the pool's inputs and the builders' version — a build's cache key."""
    card = get_task(task)
    return _spec_and_folder(card, check_sizes(card.sizes if sizes is None else sizes), None, 0, config)[0]


def shipped_builds() -> list[dict]:
    """The records of ``workbench/probes/builds.json``, checked as a whole: each names its task, spec and
    requested sizes, and its sizes are its label counts' sums (an edited size shows), so no caller meets a
    half-formed record."""
    if not SHIPPED_BUILDS.is_file():
        return []
    content = read_json(SHIPPED_BUILDS)
    builds = content.get("builds") if isinstance(content, dict) else None
    problems = [] if isinstance(builds, list) else ["it holds no list of 'builds'"]
    for i, m in enumerate(builds if isinstance(builds, list) else []):
        if not (isinstance(m, dict) and isinstance(m.get("task"), str) and all(
                isinstance(m.get(k), dict) for k in ("spec", "requested_sizes", "sizes", "label_counts"))):
            problems.append(f"record {i} lacks task, spec, requested_sizes, sizes or label_counts")
        elif not (m["sizes"].keys() == m["label_counts"].keys() and all(
                isinstance(counts, dict) and sum(counts.values()) == m["sizes"][split]
                for split, counts in m["label_counts"].items())):
            problems.append(f"record {i} ({m['task']}): its sizes {m['sizes']} are not its label counts' sums")
    if problems:
        raise WorkbenchError(f"{SHIPPED_BUILDS} is damaged: {'; '.join(problems[:3])}; restore it from the "
                             "repository (git checkout) or rebuild it with workbench probes build --ship-manifests")
    return builds


def shipped_manifest(task: str, sizes: dict[str, int] | None = None) -> dict | None:
    """The manifest (sizes, label counts, sha256) of ``task`` built at ``sizes`` that the repository ships in
    ``workbench/probes/builds.json``, or None where it holds none built from what a build would read now."""
    spec = build_spec(task, sizes)
    return next((m for m in shipped_builds() if m["task"] == task and m["spec"] == spec), None)


def ship_manifests(size_sets: Sequence[dict[str, int] | None], tasks: Sequence[str] | None = None) -> Path:
    """Build every task (or ``tasks``; the others' records are kept) afresh at each of ``size_sets`` (None: the
    card's sizes) and record the manifests in ``workbench/probes/builds.json``, so the docs state sizes and digests
    without building every dataset (for maintainers, after a card, pool or builder change). A task whose data
    differs from the shipped manifest of the same spec is refused: its builder changed without a bump of its
    ``version`` (:func:`.builders.builder`), and every stored build of it is stale. Returns the file."""
    pool_candidates.cache_clear()  # afresh: candidates memoised in this process may be a builder's older output
    chosen = list(tasks) if tasks is not None else task_names(own=False)  # the package's: a registered pair's
    builds = []  # tasks are yours
    for sizes in size_sets:
        for task in progress_bar(chosen, desc="building tasks", unit="task"):
            before, manifest = shipped_manifest(task, sizes), build_task(task, sizes=sizes, force=True).manifest
            if before is not None and before["sha256"] != manifest["sha256"]:
                raise WorkbenchError(f"{task} built from the spec of its shipped manifest gives other data: its "
                                     f"builder {get_task(task).builder} changed; bump its version "
                                     "(@builder(version=...)) and ship again")
            builds.append(manifest)
    if tasks is not None:  # the other tasks' records stay as they are, in place
        fresh = {(m["task"], json.dumps(m["requested_sizes"])): m for m in builds}
        old = shipped_builds()
        builds = [fresh.pop((m["task"], json.dumps(m["requested_sizes"])), m) for m in old
                  if m["task"] not in chosen or (m["task"], json.dumps(m["requested_sizes"])) in fresh]
        builds += list(fresh.values())
    atomic_write(SHIPPED_BUILDS, json.dumps({"what": "the manifests of every probing task as `workbench probes build` "
                                                     "builds it (workbench probes build --ship-manifests)",
                                             "builds": builds}, indent=1, ensure_ascii=False) + "\n")
    return SHIPPED_BUILDS


def ship_parses(config: SplitConfig = SplitConfig()) -> Path:
    """Parse the probe pool of every language a parsing task reads (stored parses are reused) and make those the
    parses the repository ships (``workbench/probes/parses/``). Returns their manifest."""
    languages = sorted({get_task(name).language for name in task_names(own=False)
                        if get_task(name).builder in PARSING})
    paths = []
    for language in languages:
        pool = tokenised_pool(language, config)
        parse(pool, language)
        paths.append(stored_parses(pool, language))
    return ship(paths)


def build_task(task: str | TaskCard, sizes: dict[str, int] | None = None, pool: Sequence[str] | None = None,
               seed: int = 0, config: SplitConfig = SplitConfig(), force: bool = False) -> ProbingDataset:
    """Build (or load the already-built) dataset of ``task``.

    The probe pool of the card's language is Moses-tokenised and given to the card's builder; what it returns is
    stored detokenised, intact and changed sentences alike, so an encoder's own tokenisation recovers exactly
    the tokens the builder labelled and no formatting tells the classes apart. ``sizes`` overrides the card's
    train/valid/test sizes (e.g. small sets for quick runs); ``pool`` replaces the probe pool (tests use hand-
    made sentences). Written atomically: an interrupted build leaves nothing that looks finished, and the next
    call starts that task again.
    """
    card = get_task(task) if isinstance(task, str) else task
    sizes = check_sizes(card.sizes if sizes is None else sizes)
    if card.builder not in BUILDERS:
        raise WorkbenchError(f"task {card.name!r} names builder {card.builder!r}; known: {', '.join(BUILDERS)}")
    spec, folder = _spec_and_folder(card, sizes, pool, seed, config)
    if not force and (folder / "manifest.json").is_file():
        return load_dataset(card, folder)
    params, paired = builder_params(card, seed), is_paired(card)
    if pool is None:
        n_pool, candidates = pool_candidates(card.builder, card.language, paired, params, config, fresh=force)
    else:
        sentences = [tuple(p) for p in pool] if paired else tokenise_many(pool)
        n_pool, candidates = len(sentences), labelled(card.builder, card.language, paired, json.loads(params),
                                                         sentences)
    log.info("built task %s from %d pool items", card.name, n_pool)
    data = select(candidates, sizes, card.max_per_label, seed, card.name, card.balanced, card.lexical_split)
    unknown = sorted(set(data["label"]) - set(card.labels)) if card.labels else []
    if unknown:
        raise WorkbenchError(f"task {card.name!r}: builder produced labels {unknown} not in the card's label set")
    manifest = {"task": card.name, "spec": spec, "n_pool": n_pool, "requested_sizes": sizes,
                "sizes": {t: int((data["split"] == t).sum()) for t in SPLIT_NAMES},
                "label_counts": {t: dict(sorted(Counter(data.loc[data["split"] == t, "label"]).items()))
                                 for t in SPLIT_NAMES},
                "split": "lexical" if card.lexical_split else "random",
                "word_types": {t: data.loc[data["split"] == t, "word"].str.lower().nunique() for t in SPLIT_NAMES}}
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{r.split}\t{r.label}\t{r.sentence}\t{r.word}\n" for r in data.itertuples())
    manifest["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    atomic_write(folder / "data.tsv", text)
    atomic_write(folder / "manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
    return ProbingDataset(card, data, manifest, folder)


def load_dataset(card: TaskCard, folder: Path) -> ProbingDataset:
    """Read a built dataset, verifying its checksum against the manifest."""
    manifest = read_json(folder / "manifest.json")
    text = (folder / "data.tsv").read_text(encoding="utf-8")
    if hashlib.sha256(text.encode()).hexdigest() != manifest["sha256"]:
        raise WorkbenchError(f"{folder}/data.tsv does not match its manifest checksum; delete {folder} to rebuild")
    rows = [line.split("\t") for line in text.splitlines()]
    return ProbingDataset(card, pd.DataFrame(rows, columns=COLUMNS), manifest, folder)
