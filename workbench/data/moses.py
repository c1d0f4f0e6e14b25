"""Moses tokenisation (English rules, no XML escaping) of many sentences at once, and detokenisation
(:func:`detokenise_many`).

The output is that of ``sacremoses.MosesTokenizer("en").tokenize(s, escape=False, return_str=True)`` for every
sentence (tested on real sentences of every pair and on adversarial text). The install compiles the rules in C
(``_moses.c``: each rule a pass over a sentence's code points, the sentences shared among threads; 2.3 million
sentences/s on 2 cores against sacremoses' 23 thousand). Where it could not (no C compiler), the rules below run as
regular expressions, each once over all sentences joined by newlines instead of once per sentence (340 thousand
sentences/s). A sentence never contains the separator after the first rule (whitespace becomes a space), so every
rule below is the Moses rule with ``\\n`` kept out of its character classes and ``$`` read per line: no match crosses
from one sentence into the next. Sentences with whitespace other than spaces have it normalised one by one (rare: a
soft hyphen in 2 of 50,000 real sentences), so that the others skip that slower step; sentences with control
characters (which Moses drops only after whitespace became spaces) take a pass of their own, and those that contain
a newline themselves the per-sentence path. The character classes and the non-breaking prefixes are sacremoses'
data, read from ``moses_en.json`` (written from sacremoses by ``tools/moses_tables.py`` and checked against it by
the tests): importing sacremoses compiles hundreds of patterns (a third of a second in every process that
tokenised), so it is imported only for the rare sentences that take its own path.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from functools import cache
from itertools import chain
from pathlib import Path

_TABLES = json.loads((Path(__file__).with_name("moses_en.json")).read_text(encoding="utf-8"))


@cache
def _sacremoses():
    """sacremoses' English tokeniser and detokeniser (for the sentences the batched rules leave to them)."""
    from sacremoses import MosesDetokenizer, MosesTokenizer
    return MosesTokenizer(lang="en"), MosesDetokenizer(lang="en")


def _class(ranges: list[list[int]]) -> str:
    """Code-point ranges written for inside ``[...]``: re compiles the patterns below in 38 ms from sacremoses'
    1,201 ranges and in 209 ms from its 11,232 characters."""
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


def _members(ranges: list[list[int]]) -> frozenset[str]:
    return frozenset(chr(code) for a, b in ranges for code in range(a, b + 1))


_ALNUM, _N, _ALPHA = (_class(_TABLES[name]) for name in ("IsAlnum", "IsN", "IsAlpha"))
_LOWER, _ALPHA_CHARS = _members(_TABLES["IsLower"]), _members(_TABLES["IsAlpha"])
_NUMERIC_ONLY = frozenset(_TABLES["numeric_only"])
_NONBREAKING = frozenset(_TABLES["nonbreaking"]) - _NUMERIC_ONLY

_SPACES = re.compile(r"[^\S\n]+")
_SPACE_RUNS = re.compile("  +")
_JUNK = re.compile(r"[\000-\011\013-\037]")
_EDGES = re.compile(r"\n +| +\n *")  # spaces at sentence edges (the text's own ends: str.strip)
# a character neither alphanumeric nor a space nor one of .'`,- : searched by the small class of the ASCII ones
# it can't be, then checked against the 1,201-range class behind it (2.7x faster than that class alone)
_PAD_NOT_ALNUM = re.compile(rf"([^a-zA-Z0-9 \n\.'`,\-](?<![{_ALNUM}\s]))")
_MULTIDOT = re.compile(r"\.\.+")  # literal-first: many times faster to search than \.{2,}
# Moses' comma and apostrophe rules (each consumes the characters around its match) and the same rules written
# literal-first with lookarounds, one alternation per replacement (many times faster to search). They match the
# same places unless two of the characters stand within two positions of each other, where one match's consumed
# neighbour blocks the next: those sentences take the consuming forms.
_COMMAS = ([(re.compile(rf"([^{_N}\n]),"), r"\1 , "), (re.compile(rf",([^{_N}\n])"), r" , \1"),
            (re.compile(rf"([{_N}]),$", re.M), r"\1 , ")],
           [(re.compile(rf",(?:(?<=[^{_N}\n],)|(?=[^{_N}\n])|(?<=[{_N}],)$)", re.M), " , ")],
           re.compile(r",.?,"))
_APOSTROPHES = ([(re.compile(rf"([^{_ALPHA}\n])'([^{_ALPHA}\n])"), r"\1 ' \2"),
                 (re.compile(rf"([^{_ALPHA}{_N}\n])'([{_ALPHA}])"), r"\1 ' \2"),
                 (re.compile(rf"([{_ALPHA}])'([^{_ALPHA}\n])"), r"\1 ' \2"),
                 (re.compile(rf"([{_ALPHA}])'([{_ALPHA}])"), r"\1 '\2"),
                 (re.compile(rf"([{_N}])'(s)"), r"\1 '\2")],
                [(re.compile(rf"'(?:(?<=[^{_ALPHA}\n]')(?=[^{_ALPHA}\n])|(?<=[^{_ALPHA}{_N}\n]')(?=[{_ALPHA}])"
                             rf"|(?<=[{_ALPHA}]')(?=[^{_ALPHA}\n]))"), " ' "),
                 (re.compile(rf"'(?:(?<=[{_ALPHA}]')(?=[{_ALPHA}])|(?<=[{_N}]')(?=s))"), " '")],
                re.compile(r"'.?'"))
# the period ending a token (a non-empty prefix before it) followed by the next token of the same sentence
_PERIOD_INSIDE = re.compile(r"\.(?<=[^ \n]\.) +(?=([^ \n]+))")
_NUMBER_START = re.compile(r"[0-9]")
_TRAILING_DOT_APOSTROPHE = re.compile(r"\.' ?$", re.M)
_MULTIDOT_MARKER = re.compile(r"DOT(?:DOT)*MULTI")

try:  # the same rules in C (_moses.c), built by the install where a C compiler is found: several times faster
    from . import _moses as _compiled
except ImportError:
    _compiled = None
else:
    _compiled.configure({name: [tuple(r) for r in _TABLES[name]] for name in ("IsAlnum", "IsN", "IsAlpha", "IsLower")},
                        _NONBREAKING, _NUMERIC_ONLY)
# its threads: as many as OpenMP's (OMP_NUM_THREADS, which the test workers set to share the cores), else a core each
_THREADS = int(os.environ.get("OMP_NUM_THREADS", "").strip() or 0) or (
    len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _single_spaces(text: str) -> str:
    return _SPACE_RUNS.sub(" ", text)


def _multidots(text: str) -> str:
    """Runs of dots become ``DOT…DOTMULTI`` markers (a space after, unless the run ends its sentence)."""
    def marker(match: re.Match) -> str:
        end = match.end()
        return " " + "DOT" * (end - match.start()) + "MULTI" + (" " if end < len(text) and text[end] != "\n"
                                                                  else "")
    return _MULTIDOT.sub(marker, text)


def _keeps_period(prefix: str, following: str | None) -> bool:
    """Moses' non-breaking-prefix rule: whether the token ``prefix + "."`` keeps its period (``following``: the
    next token of the sentence, None at its end)."""
    return (("." in prefix and not _ALPHA_CHARS.isdisjoint(prefix)) or prefix in _NONBREAKING
            or (following is not None and following[0] in _LOWER)
            or (prefix in _NUMERIC_ONLY and following is not None and _NUMBER_START.match(following) is not None))


def _split_inside_period(match: re.Match) -> str:
    text, at = match.string, match.start()
    prefix = text[max(text.rfind(" ", 0, at), text.rfind("\n", 0, at)) + 1:at]
    return match.group(0) if _keeps_period(prefix, match.group(1)) else " " + match.group(0)


def _split_periods(text: str) -> str:
    """The non-breaking-prefix rule for every token ending in a period: those inside a sentence by one search,
    the sentence-final ones (most of them) line by line, which is several times faster than a match each. Every
    line comes back stripped (as Moses rejoins the tokens of a single-spaced text)."""
    lines = _PERIOD_INSIDE.sub(_split_inside_period, text).split("\n")
    for i, line in enumerate(lines):
        line = lines[i] = line.strip(" ")
        if line.endswith("."):
            prefix = line[line.rfind(" ") + 1:-1]
            if prefix and not _keeps_period(prefix, None):
                lines[i] = line[:-1] + " ."
    return "\n".join(lines)


def _around(text: str, rules: tuple) -> str:
    """Apply one group of rules: the literal-first forms, and the consuming forms on the sentences where two
    of its characters are close (a few in thousands: each stands as a NUL, which no rule matches and no text here
    holds, while the fast forms run)."""
    exact, fast, close = rules
    spans = list(dict.fromkeys((text.rfind("\n", 0, match.start()) + 1, _line_end(text, match.start()))
                               for match in close.finditer(text)))
    if spans:
        part = "\n".join(text[start:end] for start, end in spans)
        ends = [0, *(end for _, end in spans)]
        text = "\0".join(text[ends[i]:start] for i, (start, _) in enumerate(spans)) + "\0" + text[ends[-1]:]
    for pattern, replacement in fast:
        text = pattern.sub(replacement, text)
    if not spans:
        return text
    for pattern, replacement in exact:
        part = pattern.sub(replacement, part)
    pieces = text.split("\0")
    return "".join(chain.from_iterable(zip(pieces, part.split("\n")))) + pieces[-1]


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def tokenise_many(sentences: Sequence[str], lower: bool = False) -> list[str]:
    """Moses-tokenised sentences (English rules, no escaping), tokens joined by single spaces; ``lower``: then
    lower-cased (``str.lower``)."""
    if _compiled is not None:
        return _compiled.tokenise(sentences, lower, _THREADS)
    common = "".join(sentences).isprintable()  # no whitespace but " ", no control characters
    out = _spaced_rules(sentences) if common else _mixed_rules(sentences)
    return [line.lower() for line in out] if lower else out


def _mixed_rules(sentences: Sequence[str]) -> list[str]:
    """The rules on sentences some of which hold other whitespace or control characters."""
    out, plain, texts, junk = [""] * len(sentences), [], [], []
    for i, sentence in enumerate(sentences):
        if sentence.isprintable():
            plain.append(i), texts.append(sentence)
        elif "\n" in sentence:  # the separator itself: one by one
            out[i] = _sacremoses()[0].tokenize(sentence, escape=False, return_str=True)
        elif _JUNK.search(sentence):  # control characters, which Moses drops after whitespace became " "
            junk.append(i)
        else:  # other whitespace becomes " "
            plain.append(i), texts.append(_SPACES.sub(" ", sentence))
    for i, line in zip(plain, _spaced_rules(texts)):
        out[i] = line
    if junk:
        text = _EDGES.sub("\n", _JUNK.sub("", _SPACES.sub(" ", "\n".join(sentences[i] for i in junk))))
        for i, line in zip(junk, _rules(text.strip(" "))):
            out[i] = line
    return out


def _spaced_rules(sentences: Sequence[str]) -> list[str]:
    """The rules on sentences whose only whitespace is " " and that hold no control character."""
    text = "\n".join(sentences)
    text = (_single_spaces(text) if "  " in text else text).replace(" \n", "\n").replace("\n ", "\n").strip(" ")
    return _rules(text) if sentences else []


def _rules(text: str) -> list[str]:
    """The Moses rules after whitespace is normalised, on sentences joined by newlines."""
    text = _multidots(" ".join(_PAD_NOT_ALNUM.split(text)))  # " c " for each such c (split keeps it)
    text = _around(_around(text, _COMMAS), _APOSTROPHES)
    text = _split_periods(_single_spaces(text))  # the tokens Moses reads there: split at single spaces
    text = _TRAILING_DOT_APOSTROPHE.sub(" . ' ", text)
    if "MULTI" in text:
        text = _MULTIDOT_MARKER.sub(lambda m: "." * ((m.end() - m.start() - 5) // 3), text)
    return text.split("\n")


# Detokenising: in a sentence without quotes (but English contractions), currency or opening brackets, XML escapes,
# "@-@" or CJK, every token follows its predecessor after a space, but the punctuation tokens and the contractions,
# which follow it directly. Such sentences take one substitution together; the others sacremoses' token loop.
_CURRENCY = _TABLES["currency_pattern"]  # sacremoses' own, as it writes it inside [...]
_CJK = "".join(f"{chr(start)}-{chr(end)}" for start, end in _TABLES["CJK"])
_DETOK_CHARS = re.compile(rf"[\"`„“”&@{_CURRENCY}{_CJK}]")
_DETOK_APOSTROPHE = re.compile(rf"'(?:(?<! ')|(?![{_ALPHA}]))")  # not a contraction's
_DETOK_LEFT = re.compile(rf" (?:(?=[,.?!:;\\%}}\])]+(?:[ \n]|\Z))|(?='[{_ALPHA}]))")


def detokenise_many(sentences: Sequence[str]) -> list[str]:
    """``sacremoses.MosesDetokenizer("en").detokenize(s.split())`` of each sentence (tested on pool sentences and
    adversarial text), the sentences of plain tokens all at once."""
    plain = [_plain(s) for s in sentences]
    joined = iter(_DETOK_LEFT.sub("", "\n".join(s for s, p in zip(sentences, plain) if p)).split("\n"))
    return [next(joined) if p else _sacremoses()[1].detokenize(s.split()) for s, p in zip(sentences, plain)]


def _plain(sentence: str) -> bool:
    return (sentence.isprintable() and "  " not in sentence and sentence[:1] != " " and sentence[-1:] != " "
            and not _DETOK_CHARS.search(sentence) and ("'" not in sentence or not _DETOK_APOSTROPHE.search(sentence)))
