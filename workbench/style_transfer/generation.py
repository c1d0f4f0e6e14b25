"""Style transfer with BGT (paper §5.3; docs/method.md#style-transfer): meaning from one sentence, style from another.

The Source goes through the semantic encoder (z_sem = mu), the Style sentence through the English language
encoder (z_en = mu), and the English decoder generates from ``[z_en ; z_sem]`` — the conditioning it was
trained on (the spec's recommended fix of the released code, which fed an untrained projection). By default the
semantic encoder reads the source without its punctuation, the search is pushed a little toward the style's form
and its sentences are re-ranked by the model's own encoders (docs/method.md#decoding); :data:`PAPER_DECODING` is
the paper's beam search.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from ..checks import WorkbenchError, whole
from ..data.tokenizer import PUNCTUATION, detokenise
from ..evaluation.sts import cosine
from ..models.kinds import can


@torch.no_grad()
def _latents(model, view: str, sentences: Sequence[str]) -> torch.Tensor:
    return torch.as_tensor(model.encoder(view).encode(list(sentences)))


MAX_BEAM = 64  # wider beams cost memory in proportion and find nothing a sentence-length search needs
NO_REPEAT_NGRAM = 3  # no output repeats a trigram: the CPU models' decoders loop on a phrase otherwise
MAX_GUIDANCE = 10.0  # beyond it the away term dominates: the outputs stop being sentences
RERANK = (2.0, 1.0)  # re-ranking weights of meaning and form (docs/method.md#re-ranking: measured on bgt-en-fr)
GUIDANCE = 0.2  # the default style push: the smallest that, with the other defaults, reached 30% form at 80% meaning
# on 200 held-out selection pairs apart from the evaluation's (docs/method.md#decoding)
PAPER_DECODING = {"rerank": None, "guidance": 0.0, "strip_punctuation": False}  # the paper's beam search, as released
_PRONOUN_I = re.compile(r"\bi\b(?=$|[\s'’.,!?;:])")
_FIRST_LETTER = re.compile(r"^([^\w]*)(\w)")  # after any opening quote or bracket


def truecase(sentence: str) -> str:
    """An output as a reader expects it: the models read and write lower case, so its first letter (after an opening
    quote) and the pronoun *I* (i, i'm, i've, ...) are capitalised. Scoring lowercases, so this changes no measure."""
    sentence = _PRONOUN_I.sub("I", sentence)
    return _FIRST_LETTER.sub(lambda m: m.group(1) + m.group(2).upper(), sentence, count=1)


def without_punctuation(sentence: str) -> str:
    """``sentence`` without its punctuation marks (apostrophes inside words stay): what the semantic encoder reads
    of a source when its form should come from the style sentence. A sentence of marks alone stays as it is."""
    return " ".join(PUNCTUATION.sub(" ", sentence).split()) or sentence


def _check_search(model, beam: int, max_len: int | None) -> None:
    if getattr(model, "cfg", None) is None or not can(getattr(model.cfg, "setting", None), "style_transfer"):
        raise WorkbenchError("style transfer needs a BGT model (semantic + language encoders and generative "
                             "decoders), e.g. workbench.load('bgt-en-fr')")
    if not getattr(model, "decoders", None):
        raise WorkbenchError(f"{getattr(model, 'name', 'this model')} holds encoders only (its decoders were not "
                             "kept), so it cannot generate; style transfer needs a BGT with decoders, such as the "
                             "shipped bgt-en-fr or a training run")
    if not whole(beam) or beam > MAX_BEAM:
        raise WorkbenchError(f"beam must be a whole number from 1 (greedy) to {MAX_BEAM}, got {beam!r}")
    if max_len is not None and (not whole(max_len) or max_len > model.cfg.max_len):
        raise WorkbenchError(f"max_len must be a whole number of pieces from 1 to the model's maximum, "
                             f"{model.cfg.max_len} (the default), got {max_len!r}")


def transfer(model, sources: Sequence[str], styles: Sequence[str], beam: int = 5, max_len: int | None = None,
             language: str = "en", no_repeat_ngram: int = NO_REPEAT_NGRAM,
             rerank: tuple[float, float] | None = RERANK, guidance: float = GUIDANCE,
             strip_punctuation: bool = True) -> list[str]:
    """Generate, for each (source, style) pair, a sentence with the source's meaning in the style's form
    (truecased: :func:`truecase`). ``beam=1`` is greedy; ``max_len`` caps generated pieces (default: the model's
    maximum length); ``no_repeat_ngram`` (0: off) keeps the search from repeating an n-gram. ``rerank=(a, b)``
    picks among the beam's finished sentences by the model's own encoders (:func:`reranked`; None: the decoder's
    score alone). ``guidance`` γ > 0 steers each step toward the style's language latent and away from the
    source's own (:class:`~workbench.models.bgt.Guided`). ``strip_punctuation``: the semantic encoder reads the
    source :func:`without_punctuation`, so its marks (and sentence type) are left to the style. The defaults are
    the measured best trade of form for meaning (docs/method.md#decoding); ``**PAPER_DECODING`` is the paper's."""
    _check_search(model, beam, max_len)
    _check_rerank(rerank)
    _check_guidance(guidance)
    if not isinstance(strip_punctuation, bool):
        raise WorkbenchError(f"strip_punctuation must be True or False, got {strip_punctuation!r}")
    for name, given in (("sources", sources), ("styles", styles)):
        if isinstance(given, str):  # a bare string would be transferred character by character
            raise WorkbenchError(f"{name} must be a list of sentences, not one string: transfer(model, "
                                 f"[{given[:30]!r}], [...])")
        if not all(isinstance(s, str) for s in given):
            raise WorkbenchError(f"{name} must be sentences (str); got "
                                 f"{sorted({type(s).__name__ for s in given if not isinstance(s, str)})}")
        if any(not s.isprintable() and any(0xDC80 <= ord(c) <= 0xDCFF for c in s) for s in given):
            raise WorkbenchError(f"{name} hold bytes that are not UTF-8 text (a terminal or file in another "
                                 "encoding); give the sentences as UTF-8")
    if len(sources) != len(styles):
        raise WorkbenchError(f"got {len(sources)} source sentences but {len(styles)} style sentences; give one "
                             "style sentence per source")
    if language not in model.cfg.languages:
        raise WorkbenchError(f"this model writes {' and '.join(model.cfg.languages)}, not {language!r}: pass "
                             f"language={model.cfg.languages[0]!r} (CLI: --language {model.cfg.languages[0]}), the "
                             "language of the style sentences and the output")
    if any(not str(s).strip() for s in (*sources, *styles)):
        raise WorkbenchError("source and style sentences must be non-empty")
    if not sources:
        return []
    meaning = without_punctuation if strip_punctuation else str
    z_sem, z_lang = _latents(model, "semantic", [meaning(s) for s in sources]), _latents(model, language, styles)
    z_away = _latents(model, language, sources) if guidance else None
    found = model.hypotheses(z_sem, z_lang, decoder=language, max_len=max_len or model.cfg.max_len, beam=beam,
                             no_repeat_ngram=no_repeat_ngram, z_away=z_away, guidance=guidance)
    if rerank is None:
        return [_text(model, row[0][1] if row else []) for row in found]
    kept = [[(score, ids) for score, ids in row if ids] for row in found]  # an empty sentence has no meaning
    return reranked(model, language, [[_text(model, ids) for _, ids in row] for row in kept],
                    [[score for score, _ in row] for row in kept], z_sem, z_lang, rerank, strip_punctuation)


def _text(model, ids: list[int]) -> str:
    return truecase(detokenise(model.tokenizer.decode(ids)))


def _check_rerank(rerank) -> None:
    if rerank is not None and not (isinstance(rerank, (tuple, list)) and len(rerank) == 2 and all(
            isinstance(w, (int, float)) and not isinstance(w, bool) and 0 <= w < float("inf") for w in rerank)):
        raise WorkbenchError(f"rerank takes two weights (meaning, form), each a number >= 0, e.g. {RERANK}; or None "
                             f"for the decoder's own best; got {rerank!r}")


def _check_guidance(guidance) -> None:
    if isinstance(guidance, bool) or not isinstance(guidance, (int, float)) or not 0 <= guidance <= MAX_GUIDANCE:
        raise WorkbenchError(f"guidance must be a number from 0 (off) to {MAX_GUIDANCE:g}, got {guidance!r}")


def reranked(model, language: str, texts: list[list[str]], scores: list[list[float]], z_sem: torch.Tensor,
             z_lang: torch.Tensor, weights: tuple[float, float], strip_punctuation: bool = False) -> list[str]:
    """Each row's sentence (of its beam's finished ones, ``texts`` with their decoder ``scores``: log-probability
    per piece) that maximises ``score + a·cos(z_sem(s), z_sem) + b·cos(z_lang(s), z_lang)``: the model's own
    semantic encoder checks the meaning kept from the source and its language encoder the form taken from the
    style, which the decoder's likelihood alone trades for fluent generic sentences. With ``strip_punctuation``
    the semantic encoder reads each sentence :func:`without_punctuation`, as it read the source."""
    flat = [text for row in texts for text in row]
    if not flat:
        return ["" for _ in texts]
    owner = np.repeat(np.arange(len(texts)), [len(row) for row in texts])  # each sentence's pair
    score = (np.concatenate([np.asarray(row, dtype=np.float64) for row in scores])
             + weights[0] * cosine(_latents(model, "semantic", [without_punctuation(t) for t in flat]
                                           if strip_punctuation else flat).numpy(), z_sem.numpy()[owner])
             + weights[1] * cosine(_latents(model, language, flat).numpy(), z_lang.numpy()[owner]))
    out, at = [], 0
    for row in texts:
        out.append(row[int(np.argmax(score[at:at + len(row)]))] if row else "")
        at += len(row)
    return out


def content_words(sentence: str) -> set[str]:
    """The lowercased words of an English sentence that carry content: letters only, possessive 's dropped,
    longer than two letters, not a contraction and not in scikit-learn's English stop-word list."""
    words = (w.removesuffix("'s") for w in re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", sentence.lower()))
    return {w for w in words if len(w) > 2 and "'" not in w and w not in ENGLISH_STOP_WORDS}


def transfer_table(model, pairs: pd.DataFrame, beam: int = 5, max_len: int | None = None,
                   no_repeat_ngram: int = NO_REPEAT_NGRAM, language: str = "en",
                   rerank: tuple[float, float] | None = RERANK, guidance: float = GUIDANCE,
                   strip_punctuation: bool = True) -> pd.DataFrame:
    """Batch mode: ``pairs`` has ``source`` and ``style`` columns (``language``, ``rerank``, ``guidance``,
    ``strip_punctuation``: as for :func:`transfer`); returns it with an ``output`` column and,
    to see where the output's meaning came from, ``from_source`` / ``from_style``: the content words
    (:func:`content_words`) the output shares with each, comma-separated."""
    missing = {"source", "style"} - set(pairs.columns)
    if missing:
        raise WorkbenchError(f"the pairs table lacks columns {sorted(missing)}; it needs 'source' and 'style'")
    out = pairs.assign(output=transfer(model, list(pairs["source"]), list(pairs["style"]), beam=beam,
                                       max_len=max_len, language=language, no_repeat_ngram=no_repeat_ngram,
                                       rerank=rerank, guidance=guidance, strip_punctuation=strip_punctuation))
    said = [content_words(o) for o in out["output"]]
    shared = {column: [", ".join(sorted(words & content_words(str(s)))) for words, s in zip(said, out[column])]
              for column in ("source", "style")}
    return out.assign(from_source=shared["source"], from_style=shared["style"])


def latent_ablation(model, sentences: Sequence[str], beam: int = 5, max_len: int | None = None,
                    language: str = "en") -> pd.DataFrame:
    """Which latent carries a sentence's content? Decode each sentence from both of its latents, from its
    semantic latent with the language latent at the prior mean (zero), and from its language latent with the
    semantic latent at zero. Style transfer needs the content in z_sem and little in z_lang. Returns one row per
    sentence and decoding: ``sentence``, ``latents`` ("both", "semantic only", "language only"), ``output`` and
    ``kept``: the sentence's content words the output repeats, comma-separated."""
    _check_search(model, beam, max_len)
    sentences = [str(s) for s in sentences]
    if any(not s.strip() for s in sentences):
        raise WorkbenchError("sentences must be non-empty")
    if not sentences:
        return pd.DataFrame(columns=["sentence", "latents", "output", "kept"])
    z_sem, z_lang = _latents(model, "semantic", sentences), _latents(model, language, sentences)
    words = [content_words(s) for s in sentences]
    rows = []
    for name, (sem, lang) in {"both": (z_sem, z_lang), "semantic only": (z_sem, torch.zeros_like(z_lang)),
                              "language only": (torch.zeros_like(z_sem), z_lang)}.items():
        ids = model.generate(sem, lang, decoder=language, max_len=max_len or model.cfg.max_len, beam=beam,
                             no_repeat_ngram=NO_REPEAT_NGRAM)
        for sentence, said, x in zip(sentences, words, ids):
            output = _text(model, x)
            rows.append((sentence, name, output, ", ".join(sorted(content_words(output) & said))))
    return pd.DataFrame(rows, columns=["sentence", "latents", "output", "kept"])
