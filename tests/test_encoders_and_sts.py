import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr, spearmanr

from workbench.models.untrained import random_transformer, RandomEmbeddingAverage
from workbench.checks import UnknownNameError
from workbench.evaluation import evaluate
from workbench.evaluation.sts import cosine, evaluate_sts, score_pairs


def test_random_transformer_is_padding_invariant_and_deterministic(small_tokenizer):
    enc = random_transformer(small_tokenizer, seed=3)
    sentences = ["A short one .", "A much longer sentence that forces a lot of padding onto the short one ."]
    together = enc.encode(sentences)
    alone = enc.encode(sentences[:1])
    assert together.dtype == np.float32 and together.shape == (2, enc.dim)
    np.testing.assert_allclose(together[0], alone[0], rtol=1e-5, atol=1e-5)
    ids = small_tokenizer.encode(sentences[::-1] * 3)  # encode_ids: the same vectors from ids, any order
    np.testing.assert_allclose(enc.encode_ids(ids, batch_size=4)[[5, 4]], together, rtol=1e-5, atol=1e-5)
    again = random_transformer(small_tokenizer, seed=3)
    assert again.fingerprint == enc.fingerprint
    assert random_transformer(small_tokenizer, seed=4).fingerprint != enc.fingerprint


def test_cpu_batches_are_capped_in_padded_positions_and_give_the_vectors_of_uncapped_ones(small_tokenizer):
    from workbench.data.corpora import probe_pool
    from workbench.models import base
    sentences = list(probe_pool()[:300])  # a few long ones among many short: the last uncapped batch is mostly padding
    lengths = np.array([len(ids) for ids in small_tokenizer.encode(sentences)])
    batches = base.length_sorted_batches(lengths, 256, max_tokens=512)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(sentences)))
    assert all(len(b) == 1 or (len(b) <= 256 and len(b) * lengths[b].max() <= 512) for b in batches)
    assert [lengths[b].max() for b in batches] == sorted(lengths[b].max() for b in batches)  # sorted by length
    padded = lambda cut: sum(len(b) * lengths[b].max() for b in cut)  # noqa: E731
    assert padded(batches) < 0.5 * padded(base.length_sorted_batches(lengths, 256))
    assert [len(b) for b in base.length_sorted_batches(np.array([5, 3000, 4]), 256, max_tokens=512)] == [2, 1]
    enc = random_transformer(small_tokenizer, seed=3)  # on the CPU: capped at CPU_BATCH_TOKENS
    assert len(base.length_sorted_batches(lengths, 256, base.CPU_BATCH_TOKENS)) > 2
    one_by_one = np.concatenate([enc.encode(sentences[i:i + 1]) for i in range(0, 300, 30)])
    np.testing.assert_allclose(enc.encode(sentences)[::30], one_by_one, rtol=1e-5, atol=1e-5)


def test_embedding_average_matches_manual_mean(small_tokenizer):
    enc = RandomEmbeddingAverage(small_tokenizer, dim=16)
    ids = small_tokenizer.encode(["hello world"])[0][:-1]
    np.testing.assert_allclose(enc.encode(["hello world"])[0], enc.table[ids].mean(0), rtol=1e-6)


def test_cosine_and_correlations_equal_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((50, 5)), rng.standard_normal((50, 5))
    expected = [np.dot(x, y) / np.linalg.norm(x) / np.linalg.norm(y) for x, y in zip(a, b)]
    np.testing.assert_allclose(cosine(a, b), expected)
    assert cosine(np.zeros((1, 3)), np.ones((1, 3)))[0] == 0.0
    frame = pd.DataFrame({"score": rng.uniform(0, 5, 50), "sentence1": [f"s{i}" for i in range(50)],
                          "sentence2": [f"t{i}" for i in range(50)]})
    lookup = {f"s{i}": a[i] for i in range(50)} | {f"t{i}": b[i] for i in range(50)}
    sims = cosine(a, b)
    got = score_pairs(lookup, frame)
    assert got["pearson"] == pytest.approx(100 * pearsonr(sims, frame["score"])[0])
    assert got["spearman"] == pytest.approx(100 * spearmanr(sims, frame["score"])[0])


def test_sts_on_real_data_with_an_untrained_encoder(small_tokenizer):
    df = evaluate_sts(RandomEmbeddingAverage(small_tokenizer), years=(2015, 2016))
    per_year = df[(df.dataset == "all") & (df.metric == "pearson")].set_index("task")["value"]
    assert set(per_year.index) == {"STS15", "STS16", "STS15-16"}
    sub = df[(df.task == "STS16") & (df.metric == "pearson") & df.aggregation.isna()]
    assert len(sub) == 5 and per_year["STS16"] == pytest.approx(sub["value"].mean())
    assert 20 < per_year["STS15-16"] < 80  # a bag of random vectors still tracks word overlap


def test_the_three_sts_aggregations_equal_an_independent_computation(small_tokenizer):
    from workbench.data.sts import load_sts
    from workbench.evaluation.sts import embed_unique
    encoder = RandomEmbeddingAverage(small_tokenizer)
    df = evaluate_sts(encoder, years=(2015, 2016))
    got = df[(df.metric == "pearson") & df.aggregation.notna()].set_index(["task", "aggregation"])["value"]
    per_dataset, sims, gold = {}, {}, {}
    for year in (2015, 2016):
        for name, frame in load_sts(year).items():
            vectors = embed_unique(encoder, [*frame["sentence1"], *frame["sentence2"]])
            a = np.stack([vectors[s] for s in frame["sentence1"]])
            b = np.stack([vectors[s] for s in frame["sentence2"]])
            sims[year, name] = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
            gold[year, name] = frame["score"].to_numpy()
            per_dataset[year, name] = 100 * np.corrcoef(sims[year, name], gold[year, name])[0, 1]
    for year, task in ((2015, "STS15"), (2016, "STS16")):
        keys = [k for k in per_dataset if k[0] == year]
        sizes = [len(gold[k]) for k in keys]
        assert got[task, "mean"] == pytest.approx(np.mean([per_dataset[k] for k in keys]), abs=1e-4)
        assert got[task, "wmean"] == pytest.approx(np.average([per_dataset[k] for k in keys], weights=sizes), abs=1e-4)
        pooled = np.corrcoef(np.concatenate([sims[k] for k in keys]), np.concatenate([gold[k] for k in keys]))[0, 1]
        assert got[task, "pooled"] == pytest.approx(100 * pooled, abs=1e-4)
    assert got["STS15-16", "mean"] == pytest.approx((got["STS15", "mean"] + got["STS16", "mean"]) / 2)
    everything = np.corrcoef(np.concatenate(list(sims.values())), np.concatenate(list(gold.values())))[0, 1]
    assert got["STS15-16", "pooled"] == pytest.approx(100 * everything, abs=1e-4)
    assert got["STS15-16", "wmean"] == pytest.approx(np.average(list(per_dataset.values()),
                                                                weights=[len(g) for g in gold.values()]), abs=1e-4)
    assert len({round(got["STS15-16", a], 6) for a in ("mean", "wmean", "pooled")}) == 3  # they do differ


def test_unknown_suite():
    with pytest.raises(UnknownNameError, match="valid: all, hard_sts, sts, sts17, stsb, tatoeba"):
        evaluate(None, "glue")


def test_a_views_fingerprint_is_hashed_once_per_state_of_its_weights(small_tokenizer, monkeypatch):
    import torch
    from workbench.models import base
    calls = []
    real = base.weights_fingerprint
    monkeypatch.setattr(base, "weights_fingerprint", lambda *a: calls.append(1) or real(*a))
    view = random_transformer(small_tokenizer, seed=0)
    again = base.NetworkEncoder("again", view.module, small_tokenizer)
    view.encode(["nothing is hashed to encode ."])
    assert calls == []  # making and encoding with a view hashes nothing
    first = view.fingerprint
    assert again.fingerprint == first and view.at_layer(0).fingerprint != first and len(calls) == 1
    with torch.no_grad():
        next(view.module.parameters()).add_(1.0)  # an in-place change, as an optimizer step makes
    assert view.fingerprint != first and len(calls) == 2
