"""Languages and language pairs by name: a pair is ``en-XX`` (XX any ISO 639 language: ISO 639-1 ``pt`` or
ISO 639-3 ``por``, written as its ISO 639-1 code where it has one) or two other languages (``fr-es``), its corpus
data rather than code.

Five pairs ship with the data folder (:data:`PAIRS`); any other is a user's own, registered from a parallel file
or pivoted through the English the shipped pairs share (:mod:`.bitext`). Where English is in a pair it comes
first (``en-fr``, never ``fr-en``): BGT's English encoder, the English probing tasks and STS read that side. A
pair without English (docs/tutorials/own-bitext.md#pairs-without-english) trains the BGT family, whose two sides
are alike; what reads English (STS, the English tasks) has nothing to read there.
"""
from __future__ import annotations

import re

from ..checks import WorkbenchError

LANGUAGES = ("fr", "es", "ar", "tr", "ja")  # the second languages of the shipped pairs
PAIRS = tuple(f"en-{lang}" for lang in LANGUAGES)
_CODE = re.compile(r"[a-z]{2,3}")


def _iso(code: str):
    """pycountry's record of an ISO 639-1 or 639-3 code, or None."""
    import pycountry  # a 7,900-language table: read only when a code outside the shipped pairs is asked for
    return pycountry.languages.get(alpha_2=code) if len(code) == 2 else pycountry.languages.get(alpha_3=code)


def language_code(code: str) -> str:
    """``code`` as the workbench writes it: the ISO 639-1 code where the language has one (``por`` -> ``pt``),
    else its ISO 639-3 code; an unknown code is refused, saying what is valid."""
    if code in ("en", *LANGUAGES):
        return code
    record = _iso(code) if isinstance(code, str) and _CODE.fullmatch(code) else None
    if record is None:
        raise WorkbenchError(f"unknown language code {code!r}: give an ISO 639-1 code (pt, de, zh) or an ISO 639-3 "
                             "code (por, deu, cmn), lower case")
    return getattr(record, "alpha_2", None) or record.alpha_3


def language_name(code: str) -> str:
    """The language's English name (``pt`` -> ``Portuguese``)."""
    code = language_code(code)
    return _iso(code).name


def iso639_3(code: str) -> str:
    """The language's ISO 639-3 code (``pt`` -> ``por``), as URIEL+ names languages."""
    return _iso(language_code(code)).alpha_3


def pair_name(pair: str) -> str:
    """``pair`` as the workbench names it (``en-por`` -> ``en-pt``, ``fra-spa`` -> ``fr-es``), checked: two different
    languages, English first where it is one of them.

    Names the fault and what is valid: not two codes joined by ``-``, English second, the same language twice, an
    unknown code.
    """
    if not isinstance(pair, str) or pair.count("-") != 1:
        raise WorkbenchError(f"a language pair is written XX-YY (en-fr, en-pt, fr-es), not {pair!r}")
    first, second = (language_code(code) for code in pair.split("-"))
    if first == second:
        raise WorkbenchError(f"language pair {pair!r}: the two languages must differ")
    if second == "en":
        raise WorkbenchError(f"language pair {pair!r}: English comes first (en-{first}), since BGT's English "
                             "encoder, the English probing tasks and STS read that side")
    return f"{first}-{second}"


def languages_of_pair(pair: str) -> tuple[str, str]:
    """The two languages of a pair's name, in its order (``'fr-es' -> ('fr', 'es')``)."""
    first, second = pair_name(pair).split("-")
    return first, second
