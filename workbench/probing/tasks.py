"""The registry of probing tasks: one TOML card per task in ``workbench/probes/`` (adding a task = adding a card),
and the cards written for the language of each pair registered from a user's bitext (:mod:`.pair_tasks`)."""
from __future__ import annotations

import hashlib
import logging
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..checks import SPLITS, UnknownNameError, WorkbenchError, check_keys, check_text, whole
from ..encoders import check_reads, unread
from ..data.corpora import known_pairs, own_folder
from ..data.languages import PAIRS
from ..paths import PROBES_DIR
from .builders import PARSING, reads_morphology
from .morphology import missing as missing_morphology
from .parse import missing as missing_parser

CARDS_DIR = PROBES_DIR
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskCard:
    name: str
    title: str
    language: str
    builder: str
    labels: tuple[str, ...]  # empty: derived by the builder from the data
    sizes: dict[str, int]
    params: dict = field(default_factory=dict)
    max_per_label: int | None = None
    balanced: bool = False  # cap every label at the rarest label's count
    lexical_split: bool = False  # each label word (its lower-cased form) in one split only: docs/probing.md#splits
    description: str = ""
    analogue: str = ""
    citation: str = ""
    transfers: str = ""  # why the label survives translation (cross-lingual probe transfer); "": it does not
    digest: str = ""

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages of the task's sentences: one, or both sides of a pair (``language = "en-fr"``)."""
        return tuple(self.language.split("-"))

    @property
    def unavailable(self) -> str | None:
        """Why the task cannot be built here (an optional analyser it needs is missing, with the install line),
        or ``None``."""
        if self.builder in PARSING:
            return missing_parser(self.language)
        if reads_morphology(self.builder, self.language):
            return missing_morphology(self.language)
        return None

    def check_encoder(self, encoder) -> None:
        """Refuse, before any work, an encoder that cannot read every language of the task."""
        check_reads(encoder, self.languages, f"task {self.name!r}")

    @classmethod
    def from_file(cls, path: str | Path) -> "TaskCard":
        path = Path(path)
        raw = path.read_bytes()
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise WorkbenchError(f"{path}: not a valid TOML task card ({err})") from None
        required = ("name", "title", "language", "builder", "labels", "sizes")
        missing = [key for key in required if key not in data]
        if missing:
            raise WorkbenchError(f"{path}: task card lacks {', '.join(missing)}; required: {', '.join(required)}")
        if data["labels"] != "derived" and not (isinstance(data["labels"], list) and data["labels"]):
            raise WorkbenchError(f'{path}: labels must be a non-empty list, or "derived" when the builder '
                                 "chooses them from the data (e.g. WordContent's target words)")
        sizes = data["sizes"]
        if not isinstance(sizes, dict) or set(sizes) != set(SPLITS) or not all(map(whole, sizes.values())):
            raise WorkbenchError(f"{path}: [sizes] must give positive integers for train, valid and test")
        known = set(required) | {"params", "max_per_label", "balanced", "lexical_split", "description", "analogue",
                                 "citation", "transfers"}
        check_keys(data, known, str(path))
        return cls(name=data["name"], title=data["title"], language=data["language"], builder=data["builder"],
                   labels=() if data["labels"] == "derived" else tuple(str(x) for x in data["labels"]),
                   sizes=dict(sizes), params=dict(data.get("params", {})), max_per_label=data.get("max_per_label"),
                   balanced=bool(data.get("balanced", False)), lexical_split=bool(data.get("lexical_split", False)),
                   description=data.get("description", ""),
                   analogue=data.get("analogue", ""), citation=data.get("citation", ""),
                   transfers=data.get("transfers", ""),
                   digest=hashlib.sha256(raw).hexdigest())


def card_folders(own: bool = True) -> tuple[Path, ...]:
    """The package's cards, then (``own``) those of each pair registered under the workbench home."""
    if not own:
        return (CARDS_DIR,)
    return (CARDS_DIR, *(own_folder(pair) / "tasks" for pair in known_pairs() if pair not in PAIRS))


def _cards(own: bool = True) -> dict[str, TaskCard]:
    return _read_cards(card_folders(own))


@lru_cache(maxsize=4)
def _read_cards(folders: tuple[Path, ...]) -> dict[str, TaskCard]:
    """The valid cards by name. A bad card is named in a warning and left out (asking for its task gives its
    error), so one broken file does not stop every command."""
    cards = {}
    for path in sorted(path for folder in folders for path in folder.glob("*.toml")):
        try:
            card = TaskCard.from_file(path)
            if card.name != path.stem:
                raise WorkbenchError(f"{path}: card name {card.name!r} differs from its file name {path.stem!r}")
        except (WorkbenchError, OSError) as err:
            _BROKEN[path.stem] = str(err)
            log.warning("task card left out: %s", err)
            continue
        cards[card.name] = card
    return cards


_BROKEN: dict[str, str] = {}  # task name -> why its card was left out


def forget_cards() -> None:
    """Read the cards again on the next lookup (a pair's cards were just written)."""
    _read_cards.cache_clear()


def task_names(own: bool = True) -> list[str]:
    """Every task's name; ``own=False``: the package's only (what the docs and shipped cards describe)."""
    return list(_cards(own))


def readable_tasks(encoder) -> list[str]:
    """The tasks whose every language ``encoder`` reads (all of them for an encoder that does not say)."""
    return [name for name, card in _cards().items() if not unread(encoder, card.languages)]


def get_task(name: str) -> TaskCard:
    """The card of task ``name``; an unknown name lists the valid ones."""
    check_text(name, "a task")
    cards = _cards()
    if name in _BROKEN:
        raise WorkbenchError(f"task {name!r} cannot be used: {_BROKEN[name]}")
    if name not in cards:
        raise UnknownNameError("probing task", name, cards)
    return cards[name]
