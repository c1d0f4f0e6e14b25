"""Transformer building blocks as BGT uses them (docs/method.md#architecture): the sentence encoder and the
decoder conditioned on a latent vector.

Post-LN layers, ReLU FFN, fairseq sinusoidal positions (sin half, then cos half), token embeddings scaled by
sqrt(d). A sentence encoder mean-pools the token states over non-pad positions (EOS included) and maps the
pooled vector to the Gaussian posterior's ``mu`` (and ``logv``) with bias-free linear layers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class TransformerConfig:
    vocab_size: int
    d_model: int = 512
    ffn_dim: int = 1024
    n_heads: int = 8
    n_layers: int = 3
    latent_dim: int = 512
    dropout: float = 0.1
    max_len: int = 1024
    pad_id: int = 0


def sinusoidal_positions(n_positions: int, dim: int) -> torch.Tensor:
    """(n_positions, dim) table: fairseq's layout, sines in the first half and cosines in the second. On the meta
    device, where a model's size is counted, only its shape: computing it there ran PyTorch's Python reference
    kernels, which imported the compiler (0.9 s a process)."""
    if torch.empty(0).is_meta:
        return torch.empty(n_positions, dim)
    half = dim // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float) * -(math.log(10000.0) / (half - 1)))
    angles = torch.arange(n_positions, dtype=torch.float)[:, None] * freq[None, :]
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    return F.pad(table, (0, dim % 2))


def linear(d_in: int, d_out: int, bias: bool = True) -> nn.Linear:
    """Linear layer with xavier-uniform weights and zero bias (fairseq's ``Linear`` helper)."""
    layer = nn.Linear(d_in, d_out, bias=bias)
    nn.init.xavier_uniform_(layer.weight)
    if bias:
        nn.init.zeros_(layer.bias)
    return layer


class SelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.qkv = linear(d_model, 3 * d_model)
        self.out = linear(d_model, d_model)

    def forward(self, x: torch.Tensor, keep: torch.Tensor | None = None, causal: bool = False) -> torch.Tensor:
        """x: (B, T, d); keep: (B, T) bool, False at padding keys."""
        B, T, d = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        mask = None if keep is None else keep[:, None, None, :]
        if causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            mask = future if mask is None else mask & future
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, T, d/H)
        return self.out(y.transpose(1, 2).reshape(B, T, d))

    def step(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None
             ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Causal self-attention of one new position, x: (B, 1, d), over the earlier positions' keys and values
        ``cache`` ((B, H, t, d/H) each, or None at the first): its output and the cache with it appended."""
        B, _, d = x.shape
        q, k, v = self.qkv(x).view(B, 1, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v)  # the new position sees every cached one: all are earlier
        return self.out(y.transpose(1, 2).reshape(B, 1, d)), (k, v)


class EncoderLayer(nn.Module):
    """Post-LN: x = LN(x + Drop(SelfAttn(x))); x = LN(x + Drop(FFN(x)))."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.attn = SelfAttention(cfg.d_model, cfg.n_heads)
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.ffn = nn.Sequential(linear(cfg.d_model, cfg.ffn_dim), nn.ReLU(), linear(cfg.ffn_dim, cfg.d_model))
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.drop(self.attn(x, keep)))
        return self.norm2(x + self.drop(self.ffn(x)))


class TokenEmbedding(nn.Module):
    """sqrt(d)·E[tokens] + PE(positions), then dropout; E ~ N(0, d^-1/2) with a zero pad row."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.scale = math.sqrt(cfg.d_model)
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        nn.init.normal_(self.embed.weight, std=cfg.d_model ** -0.5)
        with torch.no_grad():
            self.embed.weight[cfg.pad_id].zero_()
        self.register_buffer("positions", sinusoidal_positions(cfg.max_len, cfg.d_model), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        """tokens (B, T) at positions ``start`` … ``start + T - 1`` (a search passes one new position at a time)."""
        end = start + tokens.shape[1]
        if end > self.positions.shape[0]:
            raise ValueError(f"sequence of {end} tokens is longer than max_len={self.positions.shape[0]}")
        return self.drop(self.scale * self.embed(tokens) + self.positions[start:end])


def masked_mean(states: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """(B, T, d), (B, T) -> (B, d): mean over the kept positions."""
    keep = keep.to(states.dtype).unsqueeze(-1)
    return (states * keep).sum(1) / keep.sum(1).clamp_min(1.0)


class SentenceEncoder(nn.Module):
    """Inference network q(z | x): Transformer layers, masked mean pool, ``mu = W_mu h̄`` (and ``logv``)."""

    compilable = True  # static control flow: torch.compile takes it whole (TrainConfig.compile)

    def __init__(self, cfg: TransformerConfig, with_logv: bool = True):
        super().__init__()
        self.cfg, self.output_dim, self.max_len = cfg, cfg.latent_dim, cfg.max_len
        self.embed = TokenEmbedding(cfg)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_layers))
        self.hidden2mean = nn.Linear(cfg.d_model, cfg.latent_dim, bias=False)
        self.hidden2logv = nn.Linear(cfg.d_model, cfg.latent_dim, bias=False) if with_logv else None

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """tokens (B, T) -> mu (B, L), logv (B, L) or None."""
        pooled = self.pooled_layers(tokens, every=False)[-1]
        logv = self.hidden2logv(pooled) if self.hidden2logv is not None else None
        return self.hidden2mean(pooled), logv

    def pooled_layers(self, tokens: torch.Tensor, every: bool = True) -> list[torch.Tensor]:
        """The masked mean of every layer's token states, (B, d) each: index 0 is the embedding layer (token
        embeddings plus positions), k the output of block k. ``mu`` is a linear map of the last one, trained to
        be the posterior mean; a hidden layer's mean is what the block computed, before any such map.
        ``every=False``: the last one only (training and sentence embeddings need no other)."""
        keep = tokens != self.cfg.pad_id
        x = self.embed(tokens)
        pooled = [masked_mean(x, keep)] if every or not self.layers else []
        for depth, layer in enumerate(self.layers, 1):
            x = layer(x, keep)
            if every or depth == len(self.layers):
                pooled.append(masked_mean(x, keep))
        return pooled


class LatentDecoder(nn.Module):
    """p(x | c): causal self-attention, the "Attention" sublayer ``LN(x + Drop(W_a [x ; c]))``, FFN, then
    logits ``W_out [c ; x]`` (no cross-attention; docs/method.md#architecture)."""

    def __init__(self, tcfg: TransformerConfig, cond_dim: int, attention_relu: bool = False):
        super().__init__()
        self.cond_dim = cond_dim
        self.embed = TokenEmbedding(tcfg)
        self.layers = nn.ModuleList(DecoderLayer(tcfg, cond_dim, attention_relu) for _ in range(tcfg.n_layers))
        self.out = nn.Parameter(torch.empty(tcfg.vocab_size, cond_dim + tcfg.d_model))
        nn.init.normal_(self.out, std=tcfg.d_model ** -0.5)  # = randn × d^-1/2, bit for bit

    def forward(self, prev: torch.Tensor, cond: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """prev (B, T) = [EOS, y1 … y_{T-1}], cond (B, C) -> logits (B, T, V), or (N, V) at the N positions
        where ``keep`` (B, T) is True (training scores only real target tokens).

        ``W_out [c ; x] = W_c c + W_x x``: the conditioning's share is computed once per sentence and added to
        every position, not multiplied again at each token (the same logits; most of the output projection's
        FLOPs are in ``W_c`` since C ≥ d)."""
        x = self.embed(prev)
        for layer in self.layers:
            x = layer(x, cond)
        w_cond, w_hidden = self.out[:, :self.cond_dim], self.out[:, self.cond_dim:]
        per_sentence = cond @ w_cond.t()  # (B, V)
        if keep is None:
            return torch.baddbmm(per_sentence[:, None, :], x, w_hidden.t().expand(x.shape[0], -1, -1))
        rows = keep.nonzero(as_tuple=True)[0]  # the sentence of each kept position
        return torch.addmm(per_sentence.index_select(0, rows), x[keep], w_hidden.t())

    def incremental(self, cond: torch.Tensor) -> IncrementalDecoding:
        """Decoding position by position from ``cond`` (B, C), for a search (:class:`IncrementalDecoding`)."""
        return IncrementalDecoding(self, cond)


class IncrementalDecoding:
    """A :class:`LatentDecoder` run one position at a time, keeping each layer's keys and values: ``step(token)``
    gives the next position's logits that ``decoder(prefix, cond)[:, -1]`` gives for the whole prefix (to float
    rounding), at the cost of one position instead of the prefix's length, and the conditioning's share of the
    logits is computed once. ``reorder(rows)`` follows a beam search that keeps and copies hypotheses."""

    def __init__(self, decoder: LatentDecoder, cond: torch.Tensor):
        self.decoder, self.cond, self.length = decoder, cond, 0
        self.per_sentence = cond @ decoder.out[:, :decoder.cond_dim].t()  # (B, V)
        self.caches: list = [None] * len(decoder.layers)

    def step(self, token: torch.Tensor) -> torch.Tensor:
        """token (B,): the last position's input -> logits (B, V) of the one after it."""
        x = self.decoder.embed(token[:, None], start=self.length)
        for i, layer in enumerate(self.decoder.layers):
            x, self.caches[i] = layer.step(x, self.cond, self.caches[i])
        self.length += 1
        return torch.addmm(self.per_sentence, x[:, 0], self.decoder.out[:, self.decoder.cond_dim:].t())

    def reorder(self, rows: torch.Tensor) -> None:
        self.cond, self.per_sentence = self.cond[rows], self.per_sentence[rows]
        self.caches = [(k[rows], v[rows]) for k, v in self.caches]


class DecoderLayer(nn.Module):
    compilable = True  # the decoder's selection of real target tokens, outside it, has data-dependent shapes

    def __init__(self, tcfg: TransformerConfig, cond_dim: int, attention_relu: bool):
        super().__init__()
        self.attn = SelfAttention(tcfg.d_model, tcfg.n_heads)
        self.norm1 = nn.LayerNorm(tcfg.d_model)
        self.cond = linear(tcfg.d_model + cond_dim, tcfg.d_model)
        self.norm2 = nn.LayerNorm(tcfg.d_model)
        self.ffn = EncoderLayer(tcfg).ffn
        self.norm3 = nn.LayerNorm(tcfg.d_model)
        self.drop = nn.Dropout(tcfg.dropout)
        self.attention_relu = attention_relu

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        return self._after_attention(x, self.attn(x, causal=True), cond)

    def step(self, x: torch.Tensor, cond: torch.Tensor, cache) -> tuple[torch.Tensor, tuple]:
        """One new position (:meth:`SelfAttention.step`); every sublayer after the attention is per position."""
        attended, cache = self.attn.step(x, cache)
        return self._after_attention(x, attended, cond), cache

    def _after_attention(self, x: torch.Tensor, attended: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.drop(attended))
        mixed = self.cond(torch.cat([x, cond[:, None, :].expand(-1, x.shape[1], -1)], dim=-1))
        if self.attention_relu:
            mixed = F.relu(mixed)
        x = self.norm2(x + self.drop(mixed))
        return self.norm3(x + self.drop(self.ffn(x)))


def shift_right(tokens: torch.Tensor, eos_id: int, pad_id: int) -> torch.Tensor:
    """Teacher-forcing input [EOS, y1 … y_{T-1}] for right-padded targets (B, T)."""
    prev = torch.full_like(tokens, pad_id)
    prev[:, 0] = eos_id
    prev[:, 1:] = tokens[:, :-1]
    return prev


def repeated_ngram_tokens(prefix: torch.Tensor, n: int) -> list[list[int]]:
    """For each row of ``prefix`` (rows, T; column 0 the start symbol), the tokens that would repeat an n-gram the
    row already holds: those that followed an earlier occurrence of its last n − 1 tokens."""
    banned = []
    for row in prefix[:, 1:].tolist():
        key = tuple(row[len(row) - n + 1:]) if len(row) >= n - 1 else None
        banned.append([row[i + n - 1] for i in range(len(row) - n + 1) if tuple(row[i:i + n - 1]) == key]
                      if key is not None else [])
    return banned


def _settled(finished: list[list[tuple[float, list[int]]]], scores: torch.Tensor, beam: int, length: int
             ) -> torch.Tensor:
    """(B,) bool: the rows whose search is over — ``beam`` finished sentences, the worst of the best ``beam`` scoring
    at least what the row's best live hypothesis would score if it ended now (its log-probability over its
    ``length`` pieces). Each row stops by its own state, so what it finds never depends on the rows decoded
    beside it (stopping only when every row had its beam made a row's result depend on its batch)."""
    best_alive = (scores.max(dim=-1).values / length).tolist()
    return torch.tensor([len(found) >= beam and sorted(s for s, _ in found)[-beam] >= hope
                         for found, hope in zip(finished, best_alive)], device=scores.device)


@torch.no_grad()
def beam_search(decoder: LatentDecoder, cond: torch.Tensor, eos_id: int, max_len: int, beam: int = 1,
                no_repeat_ngram: int = 0) -> list[list[int]]:
    """Decode one sentence per row of ``cond`` (B, C) with ``decoder`` (in eval mode): greedy (``beam=1``) or beam
    search with length-normalised scores; id lists without the final EOS. ``no_repeat_ngram=n`` (n ≥ 2) never
    lets a hypothesis repeat an n-gram it holds (small decoders loop on a phrase otherwise)."""
    return [found[0][1] if found else [] for found in
            beam_hypotheses(decoder, cond, eos_id, max_len, beam, no_repeat_ngram)]


def beam_hypotheses(decoder: LatentDecoder, cond: torch.Tensor, eos_id: int, max_len: int, beam: int = 1,
                    no_repeat_ngram: int = 0) -> list[list[tuple[float, list[int]]]]:
    """:func:`beam_search`'s finished hypotheses of each row, best first: ``(log-probability per piece, ids)``
    (at least ``beam`` of them unless the search ran out), for a caller that re-ranks them. ``decoder``: a
    :class:`LatentDecoder` or anything else whose ``incremental(cond)`` decodes position by position
    (:class:`~.bgt.Guided`)."""
    B, device = cond.shape[0], cond.device
    cond = cond.repeat_interleave(beam, dim=0)
    prefix = torch.full((B * beam, 1), eos_id, dtype=torch.long, device=device)
    scores = torch.zeros(B, beam, device=device)
    scores[:, 1:] = -math.inf  # all beams start identical: keep one alive at first
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    alive = torch.ones(B * beam, dtype=torch.bool, device=device)
    decoding = decoder.incremental(cond)
    for step in range(max_len):
        logp = F.log_softmax(decoding.step(prefix[:, -1]).float(), dim=-1)  # (B*beam, V)
        V = logp.shape[-1]
        logp[~alive] = -math.inf
        if no_repeat_ngram >= 2:
            for row, tokens in enumerate(repeated_ngram_tokens(prefix, no_repeat_ngram)):
                logp[row, tokens] = -math.inf
        total = (scores.view(-1, 1) + logp).view(B, beam * V)
        best, index = total.topk(beam, dim=-1)
        source = index // V + torch.arange(B, device=device)[:, None] * beam
        token = index % V
        prefix = torch.cat([prefix[source.view(-1)], token.view(-1, 1)], dim=1)
        decoding.reorder(source.view(-1))
        scores = best.clone()
        ended = (token == eos_id) | (step == max_len - 1)
        for b, k in ended.nonzero().tolist():
            if torch.isfinite(best[b, k]):
                ids = prefix[b * beam + k, 1:].tolist()
                ids = ids[:-1] if ids and ids[-1] == eos_id else ids
                finished[b].append((best[b, k].item() / max(1, len(ids) + 1), ids))
        scores[ended] = -math.inf
        scores[_settled(finished, scores, beam, step + 1)] = -math.inf
        alive = torch.isfinite(scores).view(-1)
        if not alive.any():
            break
    return [sorted(f, key=lambda item: -item[0]) for f in finished]
