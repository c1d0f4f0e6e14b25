"""Cross-lingual WMF: ALS lowers the weighted loss, fold-in recovers training factors, save/load, encoders."""
import numpy as np
import pytest
import scipy.sparse as sp

from workbench.data.corpora import load_splits
from workbench.models.wmf import solve_columns, weighted_loss, WMF, WMFConfig


@pytest.fixture(scope="module")
def pairs():
    return load_splits("en-fr")["train"][:2000]


def test_solve_columns_is_the_weighted_least_squares_solution():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(3, 6))
    X = sp.random(6, 4, density=0.4, random_state=1, format="csc")
    Q = solve_columns(F, X, w_m=0.1, l2=0.5)
    dense = X.toarray()
    for j in range(4):
        weights = np.where(dense[:, j] != 0, 1.0, 0.1)
        expected = np.linalg.solve(F @ np.diag(weights) @ F.T + 0.5 * np.eye(3), F @ (weights * dense[:, j]))
        np.testing.assert_allclose(Q[:, j], expected, rtol=1e-10)
    P = rng.normal(size=(3, 6))
    brute = (np.where(dense != 0, 1.0, 0.1) * (P.T @ Q - dense) ** 2).sum() + 0.5 * ((P ** 2).sum() + (Q ** 2).sum())
    assert weighted_loss(P, Q, X.tocsr(), 0.1, 0.5) == pytest.approx(brute)


@pytest.mark.parametrize("variant", ["b-wmf", "x-wmf"])
def test_als_lowers_the_loss_and_fold_in_recovers_training_factors(pairs, variant):
    model = WMF(WMFConfig(variant=variant, k=20, iterations=6, l2=1.0)).fit(*zip(*pairs))
    assert all(b <= a * (1 + 1e-9) for a, b in zip(model.history, model.history[1:]))  # ALS never increases it
    assert model.history[-1] < 0.9 * model.history[0]
    english = [en for en, _ in pairs[:200]]
    folded = model.fold_in(english, "en").T
    cosine = (folded * model.sentence_factors[:, :200]).sum(0) / (
        np.linalg.norm(folded, axis=0) * np.linalg.norm(model.sentence_factors[:, :200], axis=0))
    if variant == "x-wmf":  # Q of the English side is exactly the fold-in with P
        np.testing.assert_allclose(folded, model.sentence_factors[:, :200], rtol=1e-8, atol=1e-10)
    else:  # b-WMF's Q also saw the French side; English alone recovers it closely
        assert np.median(cosine) > 0.8


def test_encoders_save_load_and_language_choice(pairs, tmp_path):
    model = WMF(WMFConfig(k=16, iterations=3, l2=1.0)).fit(*zip(*pairs))
    english, french = pairs[5]
    assert model.guess_language(english) == "en" and model.guess_language(french) == "fr"
    semantic = model.encoder("semantic").encode([english, french])
    np.testing.assert_allclose(semantic[0], model.encoder("en").encode([english])[0], rtol=1e-6)
    np.testing.assert_allclose(semantic[1], model.encoder("fr").encode([french])[0], rtol=1e-6)
    loaded = WMF.load(model.save(tmp_path / "wmf"))
    np.testing.assert_allclose(loaded.encoder().encode([english, french]), semantic, rtol=1e-6)
    assert loaded.encoder().fingerprint == model.encoder().fingerprint
    assert model.encoder("fr").languages == ("fr",) and semantic.dtype == np.float32
