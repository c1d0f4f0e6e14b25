"""An adversary that keeps meaning out of BGT's language latents (docs/method.md#content-adversary).

BGT's premise is that z_en holds English-specific form and z_sem the meaning both sentences share. A language
latent given room (a looser KL) takes some of the meaning too, and a style transfer then carries the style
sentence's content. The bitext says what that content is: the translation's meaning, which the other side's
semantic encoder gives. A small network learns to predict the translation's semantic mean from z_en; a
gradient-reversal layer between them (Ganin & Lempitsky 2015's domain adversary; John et al. 2019 use such
adversaries between style and content spaces) trains the language encoder, with weight λ, to make that prediction
fail. The adversary learns across batches, which a per-batch closed-form fit of a 128-wide latent cannot: it
over-fits the batch it is fitted on. Its target holds form too (the semantic view encodes length and punctuation,
which a translation keeps), so on ``bgt-en-fr`` it took form out of z_en along with the meaning
(trained/HISTORY.md).
"""
from __future__ import annotations

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
