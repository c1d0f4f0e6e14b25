"""A researcher's own labelled sentences as a probing task, accepted wherever a task name is.

The sentences come as a DataFrame or a file (TSV, CSV or JSONL with a header; or a SentEval file, whose lines
are ``split<TAB>label<TAB>sentence`` with no header) with a sentence and a label column, and optionally a split
column (``tr``/``va``/``te`` or ``train``/``valid``/``test``) and a word column (the word the label is read from:
the control task keys on it, and the shared selection then splits lexically). Without splits the shared
selection splits each label 70/10/20 (or into the ``sizes`` asked for). The dataset is keyed on a digest of
its rows, so results are cached like a built task's, and a changed file is a new task.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd

from ..checks import UnknownNameError, WorkbenchError, as_path, check_sizes
from ..data.languages import language_code
from ..data.tables import read_table
from .build import COLUMNS, SPLIT_NAMES, ProbingDataset, select
from .tasks import TaskCard, get_task, task_names

MIN_PER_LABEL = 10  # fewer and a label cannot give the validation and test splits one example each
SPLIT_TAGS = {"tr": "tr", "train": "tr", "va": "va", "valid": "va", "dev": "va", "validation": "va", "te": "te",
              "test": "te"}
SHARES = {"train": 0.7, "valid": 0.1, "test": 0.2}  # the selection's default split of an own task
LAYOUT = ("an own task is a .tsv, .csv or .jsonl file with a header naming a sentence and a label column (and "
          "optionally split and word), or a SentEval file (split<TAB>label<TAB>sentence, no header)")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_SUFFIX = re.compile(r"(\.(tsv|csv|jsonl|txt))?(\.gz)?$")


def own_task(data: pd.DataFrame | str | Path, name: str | None = None, sentence: str = "sentence",
             label: str = "label", split: str | None = "split", word: str | None = "word", language: str = "en",
             sizes: dict[str, int] | None = None, seed: int = 0) -> ProbingDataset:
    """The probing dataset of the labelled sentences in ``data`` (a DataFrame or a file path), named ``name``
    (default: the file's name without its suffix). ``sentence``/``label``/``split``/``word`` name the columns
    (``split`` and ``word`` are used where present); ``language`` is the sentences' language (an encoder that
    does not read it is refused, as for a shipped task); ``sizes`` draws train/valid/test of those sizes from
    unsplit data (default: all of it, 70/10/20 per label). Bad data is refused in one sentence."""
    source = "a DataFrame" if isinstance(data, pd.DataFrame) else str(data)
    if isinstance(data, pd.DataFrame):
        _check_text_cells(data, [c for c in (sentence, word) if c in data], source)
    frame = data.fillna("").astype(str) if isinstance(data, pd.DataFrame) else _read(as_path(data, "own task data"))
    name = _checked_name(name or (None if isinstance(data, pd.DataFrame) else _SUFFIX.sub("", Path(data).name)))
    language = language_code(language)
    columns = {"sentence": sentence, "label": label}
    for role, column in columns.items():
        if column not in frame:
            raise WorkbenchError(f"{source} has no {role} column {column!r}; its columns: {', '.join(frame)} "
                                 f"(name the column with {role}=)")
    rows = pd.DataFrame({"label": frame[label].str.strip(), "sentence": frame[sentence].str.strip(),
                         "split": frame[split].str.strip() if split and split in frame else "",
                         "word": frame[word].str.strip() if word and word in frame else ""})
    _check_rows(rows, source)
    drawn = not (rows["split"] != "").any()
    if not drawn and sizes is not None:
        raise WorkbenchError(f"{source} gives its own splits; sizes= draws splits from unsplit data: drop one")
    lexical = drawn and bool(rows["word"].all())
    rows = _drawn_splits(rows, sizes, seed, name, lexical) if drawn else _own_splits(rows, source)
    text = language + "\n" + "".join(json.dumps([r.split, r.label, r.sentence, r.word], ensure_ascii=False) + "\n"
                                      for r in rows.itertuples())
    digest = hashlib.sha256(text.encode()).hexdigest()
    sizes_built = {t: int((rows["split"] == t).sum()) for t in SPLIT_NAMES}
    card = TaskCard(name=name, title=name, language=language, builder="own", labels=tuple(sorted(set(rows["label"]))),
                    sizes=dict(zip(("train", "valid", "test"), sizes_built.values())),
                    lexical_split=lexical,
                    description=f"own task from {source}", digest=digest)
    manifest = {"task": name, "source": source, "sha256": digest, "sizes": sizes_built,
                "split": "own" if not drawn else "lexical" if lexical else "random",
                "label_counts": {t: dict(sorted(Counter(rows.loc[rows["split"] == t, "label"]).items()))
                                 for t in SPLIT_NAMES}}
    return ProbingDataset(card, rows[COLUMNS].reset_index(drop=True), manifest)


def is_own(task) -> bool:
    """Whether ``task`` is an own task rather than a task name: a DataFrame, a path, or a name of a file."""
    if isinstance(task, (pd.DataFrame, Path)):
        return True
    return isinstance(task, str) and task not in task_names() and ("/" in task or "\\" in task or "." in task)


def dataset_or_card(task, **build_options) -> tuple[ProbingDataset | None, TaskCard]:
    """What a probe of ``task`` reads: a built dataset (given, or an own task read now) and its card, or, for a
    task name, no dataset yet (it is built at the sizes asked for, after the encoder is checked) and the card."""
    if isinstance(task, ProbingDataset):
        return task, task.card
    if is_own(task):
        unknown = set(build_options) - {"sizes"}
        if unknown:
            raise WorkbenchError(f"an own task takes sizes= only, not {', '.join(sorted(unknown))}")
        sizes = build_options.get("sizes")
        dataset = own_task(task, sizes=None if isinstance(sizes, str) and sizes == "full" else sizes)
        return dataset, dataset.card
    if not isinstance(task, str):
        raise WorkbenchError(f"a task is a name (`workbench probes list`), a file or DataFrame of your own labelled "
                             f"sentences, or a built dataset; got {type(task).__name__} {task!r}")
    try:
        return None, get_task(task)
    except UnknownNameError as err:
        err.args = (f"{err}; or the path of a .tsv, .csv or .jsonl file of your own labelled sentences",)
        raise


def _read(path: Path) -> pd.DataFrame:
    """The file's rows; a SentEval file (no header, first cell a split tag) gets its three columns named."""
    if path.suffix == ".tsv" and path.is_file():
        try:
            lines = path.read_text(encoding="utf-8-sig").splitlines()
        except UnicodeDecodeError:
            raise WorkbenchError(f"{path} is not UTF-8 text; save it as UTF-8") from None
        cells = [line.split("\t") for line in lines if line]
        if cells and len(cells[0]) in (3, 4) and cells[0][0] in SPLIT_NAMES:
            ragged = [number for number, row in enumerate(cells, 1) if len(row) != len(cells[0])]
            if ragged:
                raise WorkbenchError(f"{path}: line {ragged[0]} has another number of cells than the first line's "
                                     f"{len(cells[0])}; {LAYOUT}")
            return pd.DataFrame(cells, columns=COLUMNS[:len(cells[0])], dtype=str)
    return read_table(path, "labelled sentences", LAYOUT)


def _check_text_cells(frame: pd.DataFrame, columns: list[str], source: str) -> None:
    """Refuse a sentence or word cell that is not text (a list of tokens, a number): read as its ``str`` it would
    be probed as ``"['a', 'b']"``. Empty cells (None, NaN) are the rows' own check's."""
    for column in columns:
        for row, value in enumerate(frame[column], start=1):
            if not (isinstance(value, str) or value is None or isinstance(value, float) and value != value):
                raise WorkbenchError(f"{source}: column {column!r}, row {row}, is a {type(value).__name__} "
                                     f"({str(value)[:60]}), not text; give each sentence and word as text (join "
                                     "tokens with spaces first)")


def _checked_name(name: str | None) -> str:
    if name is None:
        raise WorkbenchError("an own task from a DataFrame needs a name: own_task(frame, name=...)")
    if not _NAME.fullmatch(name):
        raise WorkbenchError(f"own task name {name!r}: use letters, digits, '_', '-' or '.' (at most 64, not "
                             "starting with a mark)")
    if name in task_names():
        raise WorkbenchError(f"own task name {name!r} is a shipped task's; give it another name (name=...)")
    return name


def _check_rows(rows: pd.DataFrame, source: str) -> None:
    if rows.empty:
        raise WorkbenchError(f"{source} holds no sentences; {LAYOUT}")
    for column in ("sentence", "label"):
        blank = rows.index[rows[column] == ""]
        if len(blank):
            raise WorkbenchError(f"{source}: {len(blank)} row(s) with an empty {column} (first: row {blank[0] + 1}); "
                                 f"fill or remove them")
    clash = rows.groupby("sentence")["label"].nunique()
    if (clash > 1).any():
        first = clash[clash > 1].index[0]
        raise WorkbenchError(f"{source}: {int((clash > 1).sum())} sentence(s) carry two labels (first: {first!r}); "
                             "a sentence has one label")
    counts = Counter(rows.drop_duplicates("sentence")["label"])
    if len(counts) < 2:
        raise WorkbenchError(f"{source}: every sentence has the label {next(iter(counts))!r}; a probe needs two "
                             "or more labels")
    few = {label: n for label, n in sorted(counts.items()) if n < MIN_PER_LABEL}
    if few:
        raise WorkbenchError(f"{source}: label(s) {', '.join(f'{k!r} ({n})' for k, n in few.items())} have fewer "
                             f"than {MIN_PER_LABEL} sentences; each label needs {MIN_PER_LABEL} so that every "
                             "split gets some (merge or drop rare labels)")


def _own_splits(rows: pd.DataFrame, source: str) -> pd.DataFrame:
    """The user's splits, checked: every row tagged, each sentence in one split, every split present."""
    unknown = sorted(set(rows["split"]) - set(SPLIT_TAGS))
    if unknown:
        raise WorkbenchError(f"{source}: split value(s) {', '.join(map(repr, unknown[:5]))} unknown; valid: "
                             f"{', '.join(SPLIT_TAGS)} (or leave out the split column to have splits drawn)")
    rows = rows.assign(split=rows["split"].map(SPLIT_TAGS)).drop_duplicates(["split", "sentence"])
    twice = rows["sentence"].duplicated(keep=False)
    if twice.any():
        raise WorkbenchError(f"{source}: {rows.loc[twice, 'sentence'].nunique()} sentence(s) in two splits (first: "
                             f"{rows.loc[twice, 'sentence'].iloc[0]!r}); a test sentence seen in training "
                             "measures memory")
    missing = [tag for tag in SPLIT_NAMES if not (rows["split"] == tag).any()]
    if missing:
        raise WorkbenchError(f"{source}: no {' or '.join(missing)} rows; an own split needs train (tr), valid (va) "
                             "and test (te) rows, or no split column")
    order = {t: i for i, t in enumerate(SPLIT_NAMES)}
    return rows.sort_values("split", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


def _drawn_splits(rows: pd.DataFrame, sizes: dict[str, int] | None, seed: int, name: str, lexical: bool
                  ) -> pd.DataFrame:
    """The shared selection's splits: per label, proportionally; lexically where every row names its word."""
    n = rows["sentence"].nunique()
    if sizes is None:
        valid, test = round(n * SHARES["valid"]), round(n * SHARES["test"])
        sizes = {"train": n - valid - test, "valid": valid, "test": test}
    candidates = list(zip(rows["label"], rows["sentence"], rows["word"]))
    return select(candidates, check_sizes(sizes, f"sizes of own task {name!r}"), None, seed, name, lexical=lexical)
