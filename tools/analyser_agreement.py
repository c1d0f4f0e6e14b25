"""How far the Japanese and Turkish analysers behind the morphosyntactic tasks can be trusted.

(docs/probing.md#morphosyntax records what it printed.)

Japanese: Sudachi's labels (the tasks') against a second analyser, MeCab with the UniDic-lite dictionary (``pip
install fugashi unidic-lite``; not a dependency of the workbench), with the same reading of the final predicate.
Turkish: zeyrek's labels against a rule on the final word's suffixes written for this check alone. Both over the
whole probe pool; ``--sample N`` also prints N labelled sentences per task to check by hand.

    python tools/analyser_agreement.py [--sample 25]
"""
from __future__ import annotations

import argparse
import random
import re

from workbench.data.splitting import SplitConfig
from workbench.data.tokenizer import detokenise
from workbench.probing.morphology import FEATURES, japanese_predicate, turkish_predicates
from workbench.data.corpora import tokenised_pool


def mecab_predicate(tagger, sentence: str) -> tuple[str, bool] | None:
    """(tense, polite) of the final predicate as MeCab + UniDic-lite reads it (the rule of the tasks)."""
    words = [w for w in tagger(sentence) if w.feature.pos1 not in ("補助記号", "空白")]
    while words and (words[-1].feature.pos1, words[-1].feature.pos2) == ("助詞", "終助詞"):
        words.pop()
    start = len(words)
    while start and words[start - 1].feature.pos1 in ("動詞", "形容詞", "助動詞"):
        start -= 1
    if start == len(words) or not (words[-1].feature.cForm or "").startswith("終止形"):
        return None
    run = words[start:]
    return ("PAST" if run[-1].feature.cType == "助動詞-タ" else "PRES",
            any(w.feature.cType in ("助動詞-マス", "助動詞-デス") for w in run))


_PERSON = "(?:m|n|k|ım|im|um|üm|ın|in|un|ün|ız|iz|uz|üz|sın|sin|sun|sün|sınız|siniz|sunuz|sünüz|nız|niz|nuz|nüz|lar|ler)?"
_PAST = re.compile(rf"[dt][ıiuü]{_PERSON}$")
_PRESENT = re.compile(rf"(?:yor|mAktA|[aeıiuü]r|r){_PERSON}$".replace("mAktA", "makta|mekte"))


def suffix_rule(word: str) -> tuple[str | None, str | None]:
    """(tense, person) of a Turkish finite verb from its last letters alone."""
    w = word.lower()
    tense = "PAST" if _PAST.search(w) else "PRES" if _PRESENT.search(w) else None
    second = r"(?:n|sın|sin|sun|sün|sınız|siniz|sunuz|sünüz|nız|niz|nuz|nüz)$"
    if re.search(r"(?:[ıiuü]?m|[ıiuü]z|k)$", w) and not re.search(second.replace("n|", "", 1), w):
        person = "1"
    elif re.search(second, w):
        person = "2"
    else:
        person = "3"
    return tense, person


def _agreement(pairs) -> str:
    both = [(a, b) for a, b in pairs if a is not None and b is not None]
    same, one = sum(a == b for a, b in both), sum((a is None) != (b is None) for a, b in pairs)
    return f"{same:,} / {len(both):,} agree ({100 * same / max(len(both), 1):.1f}%); {one:,} read by one only"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=0, help="labelled sentences per task to print")
    args = parser.parse_args()
    import fugashi

    tagger, rng = fugashi.Tagger(), random.Random(0)
    japanese = [detokenise(s) for s in tokenised_pool("ja", SplitConfig())]
    ours = [japanese_predicate(s) for s in japanese]
    theirs = [mecab_predicate(tagger, s) for s in japanese]
    print("ja tense, Sudachi vs MeCab+UniDic-lite:",
          _agreement([(p and p.tense, q and q[0]) for p, q in zip(ours, theirs)]))
    print("ja politeness, Sudachi vs MeCab+UniDic-lite:",
          _agreement([(p and p.polite, q and q[1]) for p, q in zip(ours, theirs)]))
    turkish = list(tokenised_pool("tr", SplitConfig()))
    finals = [next((t for t in reversed(s.split()) if any(ch.isalpha() for ch in t)), "") for s in turkish]
    read = dict(zip(words := sorted(set(finals) - {""}), turkish_predicates(words)))
    read = [read.get(w) for w in finals]
    rule = [suffix_rule(w) for w in finals]
    print("tr tense, zeyrek vs suffix rule:",
          _agreement([(p.tense, r[0]) for p, r in zip(read, rule) if p is not None and p.tense]))
    print("tr person, zeyrek vs suffix rule:",
          _agreement([(p.person, r[1]) for p, r in zip(read, rule) if p is not None and p.person in ("1", "3")]))
    for name, items in (("ja tense", [(p.tense, s) for p, s in zip(ours, japanese) if p]),
                        ("ja politeness", [(FEATURES["politeness"](p), s) for p, s in zip(ours, japanese) if p]),
                        ("tr tense", [(p.tense, s) for p, s in zip(read, turkish) if p and p.tense]),
                        ("tr person", [(p.person, s) for p, s in zip(read, turkish) if p and p.person in ("1", "3")])):
        for label, sentence in rng.sample(items, min(args.sample, len(items))):
            print(f"{name}\t{label}\t{sentence}")


if __name__ == "__main__":
    main()
