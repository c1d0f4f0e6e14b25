"""Reading the dependency parses the parse-based builders (:mod:`.builders`) label sentences from: the root, the
depth of a tree, the sequence of top constituents (an analogue of SentEval's TopConst read from a dependency
tree), the main verb's tense, and re-casing tokens whose order a builder changes."""
from __future__ import annotations

from collections.abc import Sequence

from .parse import parse

# Phrase types of the root's dependents that precede it (those that follow it sit inside the VP, as in PTB).
_TOP_PHRASE = {"nsubj": "NP", "nsubjpass": "NP", "expl": "NP", "csubj": "SBAR", "npadvmod": "NP", "advmod": "ADVP",
               "prep": "PP", "advcl": "SBAR", "mark": "SBAR", "cc": "CC", "intj": "INTJ", "ccomp": "S",
               "parataxis": "S", "dobj": "NP", "attr": "NP"}
_VERBAL = ("VERB", "AUX")


_PARSED: dict = {}  # the last pool's single-rooted parses: the parse-based builders of one pool share them


def single_rooted(docs) -> list:
    """The parses with exactly one root (a token whose head is itself: relative head offset 0), read from the
    docs' arrays rather than token by token."""
    return [doc for doc in docs if len(doc) and int((doc.to_array("HEAD") == 0).sum()) == 1]


def parsed_sentences(sentences: Sequence[str], language: str) -> list:
    """Parses of the sentences the parser reads as one sentence (one root); the others are dropped. Read once per
    pool and process (the builders only read them)."""
    key = (language, tuple(sentences))
    if key not in _PARSED:
        _PARSED.clear()  # one pool's parses at a time: they are large
        _PARSED[key] = single_rooted(parse(sentences, language))
    return _PARSED[key]


def root_of(doc):
    return next(t for t in doc if t.head.i == t.i)


def depth_below(token) -> int:
    return 1 + max((depth_below(child) for child in token.children), default=0)


def top_sequence(doc) -> str:
    """The dependency analogue of SentEval's top constituents: the root's dependents in order, as phrases.

    The root's dependents before it become the phrase each heads (subject NP, ADVP, PP, SBAR, CC, INTJ, a
    fronted clause S); the root with its auxiliaries and everything from its first auxiliary on forms one VP
    (objects, complements and modifiers sit inside the VP in Penn Treebank trees; an inverted question's
    subject inside its SQ), except for coordination (CC and a coordinated clause S) and punctuation, which
    appears as the mark itself. A non-verbal root gives its POS instead of VP.
    """
    root = root_of(doc)
    head = "VP" if root.pos_ in _VERBAL else root.pos_
    start = min([c.i for c in root.children if c.dep_ in ("aux", "auxpass") and c.i < root.i], default=root.i)
    items = []
    for token in sorted([root, *root.children], key=lambda t: t.i):
        if token.dep_ == "punct":
            phrase = token.text
        elif token.dep_ == "cc":
            phrase = "CC"
        elif token.dep_ == "conj":
            phrase = "S" if token.pos_ in _VERBAL else "CONJ"
        elif token.i >= start:
            phrase = head
        else:
            phrase = _TOP_PHRASE.get(token.dep_, token.dep_.upper())
        if not items or items[-1] != phrase or phrase != head:  # the root's own tokens merge into one phrase
            items.append(phrase)
    return "_".join(items)


def finite_tense(root) -> str | None:
    if root.tag_ == "VBD":
        return "PAST"
    if root.tag_ in ("VBZ", "VBP"):
        return "PRES"
    if root.tag_ in ("VBN", "VBG", "VB"):
        for aux in (c for c in root.children if c.dep_ in ("aux", "auxpass")):
            if aux.tag_ == "MD":
                return None
            if aux.tag_ == "VBD":
                return "PAST"
            if aux.tag_ in ("VBZ", "VBP"):
                return "PRES"
    return None


def recased(tokens: list[str], first: bool) -> list[str]:
    """Capitalise a clause that moves to the front, lower-case one that moves inside (``I`` stays)."""
    if not tokens or tokens[0] == "I":
        return tokens
    head = tokens[0][:1].upper() + tokens[0][1:] if first else tokens[0][:1].lower() + tokens[0][1:]
    return [head, *tokens[1:]]


def ud_number(token) -> str | None:
    """A noun's grammatical number as the pipeline's morphology gives it (UD ``Number``: ``Sing`` or ``Plur``)."""
    values = token.morph.get("Number")
    return values[0] if len(values) == 1 and values[0] in ("Sing", "Plur") else None


# The number each closed-class determiner states by its form alone (Moses-lowercased): an analyser-independent
# check of the number the tagger gives the noun it determines (docs/probing.md#morphosyntax).
DETERMINER_NUMBER = {
    "fr": {**dict.fromkeys(("le", "la", "l'", "un", "une", "ce", "cet", "cette", "mon", "ton", "son", "ma", "ta",
                            "sa", "notre", "votre", "leur"), "Sing"),
           **dict.fromkeys(("les", "des", "ces", "mes", "tes", "ses", "nos", "vos", "leurs"), "Plur")},
    "es": {**dict.fromkeys(("el", "la", "un", "una", "este", "esta", "ese", "esa", "aquel", "aquella"), "Sing"),
           **dict.fromkeys(("los", "las", "unos", "unas", "estos", "estas", "esos", "esas", "aquellos", "aquellas",
                            "mis", "tus", "sus", "nuestros", "nuestras", "vuestros", "vuestras"), "Plur")},
}


def determiner_number(noun, language: str) -> str | None:
    """The number the noun's own determiner states by its form (:data:`DETERMINER_NUMBER`), or None."""
    forms = DETERMINER_NUMBER.get(language, {})
    numbers = {forms[c.text.lower()] for c in noun.children if c.dep_ == "det" and c.text.lower() in forms}
    return numbers.pop() if len(numbers) == 1 else None
