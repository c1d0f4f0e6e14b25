"""What a training run reads: its pairs as token ids, the digest that ties a checkpoint to them, and the
micro-batches of every update.

The batches of an update follow from the seed, the epoch and the position in the epoch alone (the Trainer keeps
the last two in its checkpointed state), so a resumed run, or one continued from a trained model at update N,
sees exactly the batches the uninterrupted run would have seen.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..checks import WorkbenchError
from .batching import token_batches
from .corpora import language_of, load_splits, pairs_of
from .tokenizer import Tokenizer


def _tokenised(pairs, tokenizer: Tokenizer, max_len: int, tagged: bool) -> tuple[list[list[int]], list[list[int]]]:
    """Ids of the (en, xx, language) triples' two sides; ``tagged``: xx ids start with their language tag."""
    en = tokenizer.encode([en for en, _, _ in pairs], max_len=max_len)
    xx = tokenizer.encode([xx for _, xx, _ in pairs], max_len=max_len)
    if tagged:
        tags = {lang: tokenizer.tag_id(lang) for lang in {lang for _, _, lang in pairs}}
        xx = [[tags[lang]] + ids for (_, _, lang), ids in zip(pairs, xx)]
    return en, xx


class TrainingData:
    """The training and validation pairs of ``pair`` (``"all"``: every pair, the validation pairs shared out),
    ``max_pairs`` of the training split drawn with ``seed`` (0: all), tokenised once."""

    def __init__(self, pair: str, tokenizer: Tokenizer, *, max_pairs: int, max_valid_pairs: int,
                 max_sentence_len: int, max_tokens: int, seed: int, tagged: bool):
        pairs = pairs_of(pair)
        train, valid = [], []
        for name in pairs:  # (en, xx, language) triples
            splits, language = load_splits(name), language_of(name)
            train += [(en, xx, language) for en, xx in splits["train"]]
            valid += [(en, xx, language) for en, xx in splits["valid"][: (max_valid_pairs or 10 ** 9)
                                                                          // len(pairs)]]
        if max_pairs and max_pairs < len(train):
            pick = np.random.default_rng(seed).choice(len(train), max_pairs, replace=False)
            train = [train[i] for i in sorted(pick)]
        digest = hashlib.sha256()
        for part in (train, valid):
            digest.update("\n".join("\t".join(triple) for triple in part).encode())
            digest.update(b"\0")
        self.digest = digest.hexdigest()
        self.valid_sentences = [(first, second) for first, second, _ in valid]  # as read: what dev scores encode
        self.train = _tokenised(train, tokenizer, max_sentence_len, tagged)
        self.valid = _tokenised(valid, tokenizer, max_sentence_len, tagged)
        self.max_tokens, self.seed = max_tokens, seed
        self._epoch: tuple[int, list[np.ndarray]] | None = None

    def __len__(self) -> int:
        return len(self.train[0])

    def epoch_batches(self, epoch: int) -> list[np.ndarray]:
        """The epoch's micro-batches (deterministic in seed and epoch; computed once per epoch)."""
        if self._epoch is None or self._epoch[0] != epoch:
            en, xx = self.train
            self._epoch = (epoch, token_batches([len(s) for s in en], [len(s) for s in xx], self.max_tokens,
                                                self.seed, epoch))
        return self._epoch[1]

    def next_update(self, state: dict, need: int) -> list[np.ndarray]:
        """The ``need`` micro-batches of the next update, advancing ``state``'s ``epoch`` and ``position``; an
        epoch's leftover that cannot fill an update is skipped."""
        while True:
            batches = self.epoch_batches(state["epoch"])
            start = state["position"]
            if start + need <= len(batches):
                state["position"] = start + need
                return batches[start:start + need]
            if not batches:
                raise WorkbenchError(f"no training pair fits in max_tokens={self.max_tokens} tokens (a batch holds "
                                     "at least one pair, padded to its longer side): raise max_tokens (the presets "
                                     "use 1,024 to 8,000) or lower max_sentence_len")
            if len(batches) < need:
                raise WorkbenchError(f"an epoch has {len(batches)} micro-batches, fewer than the {need} one update "
                                     "needs; lower max_tokens or update_freq")
            state["epoch"] += 1
            state["position"] = 0

    def valid_batches(self) -> list[np.ndarray]:
        """The validation pairs in token-budget batches (always the same ones)."""
        en, xx = self.valid
        return token_batches([len(s) for s in en], [len(s) for s in xx], self.max_tokens, 0, 0)
