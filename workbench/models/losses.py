"""The pieces of the training losses the generative models share: a decoder's token loss, the KL of a Gaussian
posterior to the standard normal prior, a free-bits floor under it, word dropout on a decoder's input, an
encoder's input without some pieces (punctuation), and how alike two latents' directions are over a batch."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..data.tokenizer import PUNCTUATION


def token_loss(logits: torch.Tensor, target: torch.Tensor, pad_id: int, smoothing: float) -> torch.Tensor:
    """Cross-entropy summed over the non-pad target tokens, label-smoothed in fairseq's form
    (1−ε)·NLL + ε/V·Σ_v −log p_v (PyTorch's ``label_smoothing`` is the same form); ε = 0: the NLL.
    logits (..., V), target (...)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1), ignore_index=pad_id,
                           reduction="sum", label_smoothing=smoothing)


def kl_to_standard_normal(mu: torch.Tensor, logv: torch.Tensor) -> torch.Tensor:
    """Σ over dims of KL(N(mu, exp(logv)) || N(0, I)), per example."""
    return -0.5 * (1 + logv - mu.pow(2) - logv.exp()).sum(-1)


def free_bits(kl: torch.Tensor, floor: float) -> torch.Tensor:
    """The summed KL of a batch (``kl``: one value per example) with its mean held at ≥ ``floor`` nats: n ·
    max(floor, mean). Below the floor the term is constant, so its gradient is zero and the latent may carry
    that much without cost (Kingma et al. 2016's free bits, for a whole latent rather than per dimension)."""
    if not floor:
        return kl.sum()
    return kl.shape[0] * torch.clamp(kl.mean(), min=floor)


def drop_words(prev: torch.Tensor, rate: float, pad_id: int) -> torch.Tensor:
    """Word dropout on a decoder's teacher-forcing input (Bowman et al. 2016): each token after the first
    (EOS) becomes padding — a zero embedding, so only its position remains — with probability ``rate``, so the
    decoder must take more of the sentence from its latents and less from the words before."""
    drop = torch.rand(prev.shape, device=prev.device) < rate
    drop[:, 0] = False
    return prev.masked_fill(drop & (prev != pad_id), pad_id)


def punctuation_pieces(pieces: list[str]) -> torch.Tensor:
    """(V,) bool: the pieces that are punctuation marks alone (sentencepiece's ``▁`` aside), such as ``▁.``,
    ``?`` or ``▁«``; the tokenizer splits marks from words, so a mark is a piece of its own."""
    marks = [bool(PUNCTUATION.fullmatch(piece.removeprefix("\u2581"))) for piece in pieces]
    return torch.tensor(marks, dtype=torch.bool)


def without_pieces(tokens: torch.Tensor, drop: torch.Tensor, pad_id: int) -> torch.Tensor:
    """``tokens`` (B, T, right-padded) with the pieces that ``drop`` (a (V,) bool mask) marks taken out, the rest
    moved left in order, so positions count from the first kept piece as in a sentence that never had them."""
    keep = (tokens != pad_id) & ~drop[tokens]
    order = torch.sort((~keep).to(torch.int8), dim=1, stable=True).indices  # kept pieces first, in order
    return tokens.gather(1, order).masked_fill(~keep.gather(1, order), pad_id)


def direction_overlap(latent: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Linear CKA (Kornblith et al. 2019) between the directions of ``latent``'s rows (scaled to unit length: what
    a cosine reads, so a latent cannot lower it by growing shorter) and ``reference``'s (detached), over a batch:
    the centred Gram matrices' cosine, 0 where which sentences a latent finds alike tells nothing of which the
    reference finds alike, 1 where one is a rotation of the other."""
    x = F.normalize(latent.float(), dim=-1)
    y = F.normalize(reference.detach().float(), dim=-1)
    x, y = x - x.mean(0), y - y.mean(0)
    gram_x, gram_y = x @ x.T, y @ y.T
    return (gram_x * gram_y).sum() / (gram_x.norm() * gram_y.norm()).clamp_min(1e-12)
