"""The checks every kind of input shares, in one place: whole numbers, numbers in a range and the three probing
sizes. Each is a predicate (the caller words the error for its own input) or, where the message is the same
everywhere, raises :class:`WorkbenchError` naming what was given and what is valid.

``True`` is not a number here (Python counts it as 1): a flag given where a count belongs is a mistake.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from .errors import WorkbenchError

SPLITS = ("train", "valid", "test")


def whole(value, low: int = 1, high: float = math.inf) -> bool:
    """Is ``value`` an ``int`` (not a bool) in [low, high]?"""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def number(value, low: float = -math.inf, high: float = math.inf, open_low: bool = False,
           open_high: bool = False) -> bool:
    """Is ``value`` a finite int or float (not a bool) in the range, each end closed unless ``open_*``?"""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return False
    return (value > low if open_low else value >= low) and (value < high if open_high else value <= high)


def check_sizes(given: Mapping, where: str = "probing sizes") -> dict[str, int]:
    """``given`` as a dict if it gives train, valid and test as whole numbers ≥ 1, else a clear error."""
    given = dict(given) if isinstance(given, Mapping) else given
    if not isinstance(given, dict) or set(given) != set(SPLITS) or not all(map(whole, given.values())):
        raise WorkbenchError(f"{where} must give {', '.join(SPLITS)} as whole numbers ≥ 1 (got {given})")
    return given

