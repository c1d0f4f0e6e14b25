"""Does style transfer transfer? An automatic evaluation of BGT's "meaning from the source, form from the style".

A fixed, seeded sample of (source, style) pairs of held-out English sentences (the test split, which no model
trains on) is transferred, and each output is scored against both of its inputs:

- **meaning**: is the output closer to the source than to the style sentence, by the cosine of a *judge*
  encoder that is not the model under test (the shipped ``sp-en-fr``; all-MiniLM-L6-v2 too when installed)?
- **content words**: does the output keep a content word of the source (one the style sentence lacks)? one of
  the style sentence (one the source lacks)?
- **form**: does the output's length bin, punctuation marks, first word, sentence type (question, exclamation,
  statement), negation (negated or not) and pronoun person (of its first personal pronoun) match the style
  sentence's? Each attribute counts only on pairs where source and style differ in it (elsewhere it cannot tell
  them apart); ``form_follows_style`` pools the six.

Shares come with percentile bootstrap 95% CIs over pairs. :func:`transfer_scores` adds the latent ablation
(:func:`workbench.style_transfer.generation.latent_ablation`) over the same source sentences: how often a sentence decoded
from its semantic latent alone, or from its language latent alone, keeps one of its own content words.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from ..checks import WorkbenchError, whole
from ..data.corpora import load_splits
from ..data.tokenizer import PUNCTUATION
from ..evaluation.sts import cosine, embed_unique
from ..models.losses import kl_to_standard_normal
from ..models.folder import load
from ..models.huggingface import minilm
from .generation import GUIDANCE, RERANK, content_words, latent_ablation, transfer_table

JUDGE = "sp-en-fr"  # a shipped paraphrastic model: cheap, good at STS, and not a BGT
LENGTH_EDGES = (5, 9, 13, 17, 21)  # length bins by token count: 1-4, 5-8, 9-12, 13-16, 17-20, 21+
FORM = ("length", "punctuation", "first_word", "sentence_type", "negation", "person")
NEGATIONS = frozenset({"not", "no", "never", "nothing", "nobody", "none", "nowhere", "neither", "nor", "cannot"})
PERSONS = {1: frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"}),
           2: frozenset({"you", "your", "yours", "yourself", "yourselves"}),
           3: frozenset({"he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself",
                         "they", "them", "their", "theirs", "themselves"})}
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)?|[^\w\s]")


def transfer_pairs(n: int = 200, seed: int = 0, pair: str = "en-fr", min_tokens: int = 4,
                   max_tokens: int = 20) -> pd.DataFrame:
    """``n`` (source, style) pairs of distinct English sentences of ``pair``'s test split (``min_tokens`` to
    ``max_tokens`` words), drawn with ``seed``: the same pairs for every model, so numbers compare."""
    if not whole(n):
        raise WorkbenchError(f"n must be a positive number of pairs, got {n!r}")
    seen, pool = set(), []
    for english, _ in load_splits(pair)["test"]:
        key = english.strip().lower()
        if min_tokens <= len(english.split()) <= max_tokens and key not in seen:
            seen.add(key)
            pool.append(english.strip())
    if len(pool) < 2 * n:
        raise WorkbenchError(f"{pair}'s test split has {len(pool)} distinct sentences of {min_tokens}-{max_tokens} "
                             f"words; {n} pairs need {2 * n}")
    picked = np.random.default_rng(seed).choice(len(pool), 2 * n, replace=False)
    return pd.DataFrame({"source": [pool[i] for i in picked[:n]], "style": [pool[i] for i in picked[n:]]})


def tokens(sentence: str) -> list[str]:
    """Lowercased words and punctuation marks (an apostrophe inside a word stays in it)."""
    return _TOKEN.findall(sentence.lower())


def form(sentence: str) -> dict[str, object]:
    """The form the style sentence should lend: length bin, punctuation marks in order, first word, sentence
    type (by its last mark), negation, and the person of its first personal pronoun (0: none)."""
    toks = tokens(sentence)
    words = [t for t in toks if not PUNCTUATION.fullmatch(t)]
    last = toks[-1] if toks else ""
    heads = [w.split("'")[0] for w in words]  # "i'm" -> "i", "don't" stays "don" (negation reads the suffix)
    return {"length": int(np.searchsorted(LENGTH_EDGES, len(toks), side="right")),
            "punctuation": "".join(t for t in toks if PUNCTUATION.fullmatch(t)),
            "first_word": words[0] if words else "",
            "sentence_type": {"?": "question", "!": "exclamation"}.get(last, "statement"),
            "negation": any(w in NEGATIONS or w.endswith("n't") for w in words),
            "person": next((p for h in heads for p, pronouns in PERSONS.items() if h in pronouns), 0)}


def _cosines(judge, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    lookup = embed_unique(judge, [*a, *b])
    return cosine(np.stack([lookup[s] for s in a]), np.stack([lookup[s] for s in b]))


def score_transfers(table: pd.DataFrame, judges: Sequence = ()) -> pd.DataFrame:
    """Score each row of ``table`` (columns ``source``, ``style``, ``output``). Adds, per judge encoder J,
    ``closer_to_source[J]`` (cos(output, source) > cos(output, style)); ``keeps_source_word`` /
    ``keeps_style_word`` (a content word of the one the other lacks); for each form attribute A,
    ``A_informative`` (source and style differ in A) and ``A_follows_style`` / ``A_follows_source``."""
    missing = {"source", "style", "output"} - set(table.columns)
    if missing:
        raise WorkbenchError(f"the transfer table lacks columns {sorted(missing)}; it needs source, style, output")
    out = table.copy()
    sources, styles, outputs = (out[c].astype(str).tolist() for c in ("source", "style", "output"))
    for judge in judges:
        out[f"closer_to_source[{judge.name}]"] = (_cosines(judge, outputs, sources)
                                                  > _cosines(judge, outputs, styles))
    words = [(content_words(o), content_words(s), content_words(t)) for o, s, t in zip(outputs, sources, styles)]
    out["keeps_source_word"] = [bool(o & (s - t)) for o, s, t in words]
    out["keeps_style_word"] = [bool(o & (t - s)) for o, s, t in words]
    shapes = [(form(o), form(s), form(t)) for o, s, t in zip(outputs, sources, styles)]
    for attribute in FORM:
        out[f"{attribute}_informative"] = [s[attribute] != t[attribute] for _, s, t in shapes]
        out[f"{attribute}_follows_style"] = [o[attribute] == t[attribute] for o, _, t in shapes]
        out[f"{attribute}_follows_source"] = [o[attribute] == s[attribute] for o, s, _ in shapes]
    return out


def form_origins(table: pd.DataFrame) -> pd.DataFrame:
    """Where each output's form came from: ``table`` (``source``, ``style``, ``output``, e.g. a
    :func:`workbench.style_transfer.generation.transfer_table`) with ``form_from_style`` and ``form_from_source`` added — the form
    attributes in which source and style differ that the output shares with each, as ``attribute=value``,
    comma-separated (an attribute in neither column follows neither input)."""
    missing = {"source", "style", "output"} - set(table.columns)
    if missing:
        raise WorkbenchError(f"the transfer table lacks columns {sorted(missing)}; it needs source, style, output")
    taken = {"style": [], "source": []}
    for o, s, t in (tuple(form(str(x)) for x in row) for row in zip(table["output"], table["source"], table["style"])):
        for name, given in (("style", t), ("source", s)):
            taken[name].append(", ".join(f"{a}={o[a]}" for a in FORM if s[a] != t[a] and o[a] == given[a]))
    return table.assign(form_from_style=taken["style"], form_from_source=taken["source"])


def share(values: Sequence[bool], n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """The share of True values with a percentile bootstrap 95% CI (NaNs if there are none)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return (np.nan, np.nan, np.nan)
    means = np.random.default_rng(seed).choice(values, (n_boot, values.size)).mean(axis=1)
    return float(values.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def summarise_transfers(scored: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The shares of a :func:`score_transfers` table: one row per metric (``metric``, ``value``, ``ci_low``,
    ``ci_high``, ``n``); ``form_follows_style`` pools the form attributes over their informative pairs."""
    rows = []

    def add(metric: str, values) -> None:
        rows.append((metric, *share(list(values), n_boot, seed), len(values)))

    for column in [c for c in scored.columns if c.startswith("closer_to_source[")]:
        add(column, scored[column])
    add("keeps_source_word", scored["keeps_source_word"])
    add("keeps_style_word", scored["keeps_style_word"])
    pooled = []
    for attribute in FORM:
        informative = scored[scored[f"{attribute}_informative"]]
        add(f"{attribute}_follows_style", informative[f"{attribute}_follows_style"])
        add(f"{attribute}_follows_source", informative[f"{attribute}_follows_source"])
        pooled += list(informative[f"{attribute}_follows_style"])
    add("form_follows_style", pooled)
    return pd.DataFrame(rows, columns=["metric", "value", "ci_low", "ci_high", "n"])


def default_judges(model=None) -> list:
    """The judge encoders: the shipped ``sp-en-fr``, and all-MiniLM-L6-v2 when its extra is installed; never
    the model under test itself."""
    judges = [load(JUDGE).encoder()]
    try:
        judges.append(minilm())
    except WorkbenchError:
        pass
    if model is not None:
        own = {model.encoder(view).fingerprint for view in model.views}
        judges = [j for j in judges if j.fingerprint not in own]
    return judges


def latent_kl(model, sentences: Sequence[str]) -> dict[str, float]:
    """Mean KL(q(z | x) || N(0, I)) in nats per sentence, for the semantic and the English latent: how much each
    latent carries, as its prior sees it."""
    ids = model.tokenizer.encode(list(sentences), max_len=model.cfg.max_len)
    width = max(len(x) for x in ids)
    tokens = torch.tensor([x + [model.cfg.pad_id] * (width - len(x)) for x in ids])
    out = {}
    model.eval()
    with torch.no_grad():
        for view in ("semantic", "en"):
            mu, logv = model.encoders[view](tokens.to(next(model.parameters()).device))
            out[view] = float(kl_to_standard_normal(mu.float(), logv.float()).mean()) if logv is not None else np.nan
    return out


def transfer_scores(model, pairs: pd.DataFrame | None = None, judges: Sequence | None = None, beam: int = 5,
                    n_boot: int = 1000, seed: int = 0, ablation: bool = True,
                    rerank: tuple[float, float] | None = RERANK, guidance: float = GUIDANCE,
                    strip_punctuation: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Transfer ``pairs`` (default :func:`transfer_pairs`: 200 held-out pairs) with ``model`` (``beam``,
    ``rerank``, ``guidance`` and ``strip_punctuation`` as :func:`~workbench.style_transfer.generation.transfer`
    takes them) and score the outputs. Returns ``(summary, per_pair)``: the summary has one row per metric (see
    :func:`summarise_transfers`) plus, with ``ablation``, ``semantic_only_keeps_word``,
    ``language_only_keeps_word`` and ``both_keeps_word`` from :func:`workbench.style_transfer.generation.latent_ablation` on the
    sources, and ``kl_nats[semantic]`` / ``kl_nats[en]`` (:func:`latent_kl` of the sources; no CI);
    ``per_pair`` is the scored table."""
    pairs = transfer_pairs() if pairs is None else pairs
    judges = default_judges(model) if judges is None else list(judges)
    scored = score_transfers(transfer_table(model, pairs, beam=beam, rerank=rerank, guidance=guidance,
                                            strip_punctuation=strip_punctuation), judges)
    summary = summarise_transfers(scored, n_boot, seed)
    if ablation:
        decoded = latent_ablation(model, list(pairs["source"]), beam=beam)
        for name, rows in decoded.groupby("latents", sort=False):
            summary.loc[len(summary)] = (f"{name.replace(' ', '_')}_keeps_word",
                                         *share(list(rows["kept"] != ""), n_boot, seed), len(rows))
    for view, nats in latent_kl(model, list(pairs["source"])).items():
        summary.loc[len(summary)] = (f"kl_nats[{view}]", nats, np.nan, np.nan, len(pairs))
    return summary, scored
