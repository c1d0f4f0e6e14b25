"""An adversary that keeps meaning out of BGT's language latents (docs/method.md#content-adversary).

BGT's premise is that z_en holds English-specific form and z_sem the meaning both sentences share. A language
latent given room (a looser KL) takes some of the meaning too, and a style transfer then carries the style
sentence's content. The bitext says what that content is: the translation's meaning, which the other side's
semantic encoder gives. A small network learns to predict the translation's semantic mean from z_en; a
gradient-reversal layer between them (Ganin & Lempitsky 2015's domain adversary; John et al. 2019 use such
adversaries between style and content spaces) trains the language encoder, with weight λ, to make that prediction
fail. The adversary learns across batches, which a per-batch closed-form fit of a 128-wide latent cannot: it
over-fits the batch it is fitted on. That target holds form too (the semantic view encodes length and punctuation,
which a translation keeps), so on ``bgt-en-fr`` it took form out of z_en along with the meaning
(trained/HISTORY.md). The other target is a sentence's own content words as a bag (John et al.'s content
adversary): which word-initial pieces, stop words and punctuation left out, the sentence holds, as a
distribution, so neither its length nor its punctuation is in the target.
"""
from __future__ import annotations

import importlib

import torch
from torch import nn


class _ReverseGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: float) -> torch.Tensor:
        ctx.weight = weight
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return -ctx.weight * grad, None


def reverse_gradient(x: torch.Tensor, weight: float) -> torch.Tensor:
    """``x`` forward; ``-weight`` × the gradient backward: what follows learns to use ``x``, what precedes it learns
    to defeat that use."""
    return _ReverseGradient.apply(x, weight)


class ContentAdversary(nn.Module):
    """Predicts the translation's semantic mean from a language latent: one hidden layer of ``hidden`` units."""

    def __init__(self, latent_dim: int, hidden: int, target_dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent_dim, hidden), nn.ReLU(), nn.Linear(hidden, target_dim))

    def forward(self, latent: torch.Tensor, target: torch.Tensor, weight: float) -> torch.Tensor:
        """The squared error of the prediction, summed over dimensions and examples: the adversary minimises it,
        and the encoder of ``latent``, through the reversed gradient, maximises ``weight`` × it. ``target`` is
        detached, so the semantic encoder is not asked to move."""
        guess = self.net(reverse_gradient(latent, weight))
        return (guess - target.detach()).pow(2).sum()


class ContentWordsAdversary(nn.Module):
    """Predicts which content words a sentence holds from its language latent: one hidden layer of ``hidden``
    units, a distribution over the ``vocab_size`` pieces."""

    def __init__(self, latent_dim: int, hidden: int, vocab_size: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent_dim, hidden), nn.ReLU(), nn.Linear(hidden, vocab_size))

    def forward(self, latent: torch.Tensor, bag: torch.Tensor, weight: float) -> torch.Tensor:
        """The cross-entropy of the prediction against ``bag`` (:func:`content_bag`), summed over the sentences;
        minimised by the adversary, maximised (× ``weight``) by the encoder of ``latent``."""
        log_p = torch.log_softmax(self.net(reverse_gradient(latent, weight)), dim=-1)
        return -(bag * log_p).sum()


def content_bag(tokens: torch.Tensor, content: torch.Tensor) -> torch.Tensor:
    """(B, V): each sentence's content pieces (``content``, a (V,) bool mask) as a distribution over the
    vocabulary, counts divided by their sum (length-free); a sentence without any is all zeros (it adds no loss)."""
    counts = torch.zeros(tokens.shape[0], content.numel(), device=tokens.device)
    counts.scatter_add_(1, tokens, torch.ones_like(tokens, dtype=counts.dtype))
    counts = counts * content
    return counts / counts.sum(dim=1, keepdim=True).clamp_min(1)


def content_pieces(pieces: list[str], language: str) -> torch.Tensor:
    """(V,) bool: the pieces that start a content word of ``language``: word-initial (sentencepiece's ``▁``),
    with two letters or more (French elisions such as l' and d' are function words), and not among spaCy's stop
    words for the language, compared lowercased. Word-initial only, so that endings (number, tense: form) stay
    out; in a language written without spaces (ja) few pieces start a word, and the bag is thin."""
    try:
        stop = importlib.import_module(f"spacy.lang.{language}.stop_words").STOP_WORDS
    except ModuleNotFoundError:
        raise ValueError(f"no stop-word list for {language!r}: the content-words adversary reads spaCy's "
                         "(spacy.lang.XX.stop_words)") from None

    def content(piece: str) -> bool:
        word = piece[1:].lower()
        return piece.startswith("\u2581") and sum(c.isalpha() for c in word) >= 2 and word not in stop
    return torch.tensor([content(piece) for piece in pieces], dtype=torch.bool)


class LanguageAdversaries(nn.ModuleDict):
    """BGT's content adversaries, one per language latent, all of one ``target``: ``"translation"`` (the other
    side's semantic mean, :class:`ContentAdversary`) or ``"words"`` (the sentence's own content words,
    :class:`ContentWordsAdversary`, as :func:`content_bag` of the model's content pieces). Empty without
    languages, so a model without adversaries holds no parameters for them."""

    def __init__(self, languages: tuple[str, ...], target: str, latent_dim: int, hidden: int, semantic_dim: int,
                 vocab_size: int):
        make = {"translation": lambda: ContentAdversary(latent_dim, hidden, semantic_dim),
                "words": lambda: ContentWordsAdversary(latent_dim, hidden, vocab_size)}[target]
        super().__init__({lang: make() for lang in languages})
        self.target = target

    def loss(self, lang: str, latent: torch.Tensor, translation: torch.Tensor, bag: torch.Tensor | None,
             weight: float) -> torch.Tensor:
        """The adversary of ``lang`` on its ``latent`` of sentences whose translations' semantic means are
        ``translation`` and whose content words are ``bag`` (None where the target is the translation)."""
        return self[lang](latent, translation if self.target == "translation" else bag, weight)
