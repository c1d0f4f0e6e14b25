import numpy as np
import pytest

from workbench.data import batching
from workbench.data.corpora import load_splits


@pytest.fixture(scope="module")
def real_ids(small_tokenizer):
    pairs = load_splits("en-tr")["valid"]
    return small_tokenizer.encode([en for en, _ in pairs]), small_tokenizer.encode([xx for _, xx in pairs])


def test_batches_respect_the_token_budget_and_cover_every_example(real_ids):
    en, xx = real_ids
    len_en, len_xx = [len(s) for s in en], [len(s) for s in xx]
    batches = batching.token_batches(len_en, len_xx, max_tokens=500)
    seen = np.concatenate(batches)
    assert sorted(seen.tolist()) == list(range(len(en)))
    for index in batches:
        batch = batching.collate(en, xx, index)
        assert max(batch.en.shape[1], batch.xx.shape[1]) * len(index) <= 500
        assert len(index) <= 8 or len(index) % 8 == 0
    # length bucketing: padding is a small share of the tokens
    padded = sum(max(max(len_en[i], len_xx[i]) for i in b) * len(b) for b in batches)
    assert sum(max(a, b) for a, b in zip(len_en, len_xx)) / padded > 0.8


def test_batches_are_deterministic_per_epoch(real_ids):
    len_en = [len(s) for s in real_ids[0]]
    len_xx = [len(s) for s in real_ids[1]]
    a = batching.token_batches(len_en, len_xx, 400, seed=1, epoch=0)
    b = batching.token_batches(len_en, len_xx, 400, seed=1, epoch=0)
    c = batching.token_batches(len_en, len_xx, 400, seed=1, epoch=1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_too_long_examples_are_dropped_and_counted(caplog):
    batches = batching.token_batches([5, 50, 6], [5, 3, 4], max_tokens=20)
    assert sorted(np.concatenate(batches).tolist()) == [0, 2]
    assert "dropped 1 of 3" in caplog.text
