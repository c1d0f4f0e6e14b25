"""Write ``workbench/data/moses_en.json``: the character classes and non-breaking prefixes of sacremoses' English
Moses tokeniser that :mod:`workbench.data.moses` applies, as code-point ranges and word lists.

    python -m tools.moses_tables          (after upgrading sacremoses; tests/test_tokenizer.py checks the file)

Reading them from this file instead of from sacremoses' classes keeps sacremoses' import (a third of a second:
it compiles hundreds of patterns) out of every process that tokenises; sacremoses itself is imported only for
the rare sentences that take its own path.
"""
from __future__ import annotations

import json
from pathlib import Path

TABLES = Path(__file__).resolve().parent.parent / "workbench" / "data" / "moses_en.json"


def _ranges(characters: str) -> list[list[int]]:
    codes, ranges = sorted(set(map(ord, characters))), []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return ranges


def tables() -> dict:
    """What the English tokeniser and detokeniser of the installed sacremoses read."""
    import sacremoses
    from sacremoses import MosesDetokenizer, MosesTokenizer
    from sacremoses.util import CJKChars
    moses, detok = MosesTokenizer(lang="en"), MosesDetokenizer(lang="en")
    currency = detok.IS_CURRENCY_SYMBOL.pattern.removeprefix("^[").removesuffix("]+$")
    return {"sacremoses": sacremoses.__version__,
            **{name: _ranges(getattr(moses, name)) for name in ("IsAlnum", "IsN", "IsAlpha", "IsLower")},
            "CJK": [list(pair) for pair in CJKChars().ranges],
            "currency_pattern": currency,
            "nonbreaking": sorted(set(moses.NONBREAKING_PREFIXES)),
            "numeric_only": sorted(set(moses.NUMERIC_ONLY_PREFIXES))}


def main() -> None:
    TABLES.write_text(json.dumps(tables(), ensure_ascii=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {TABLES}")


if __name__ == "__main__":
    main()
