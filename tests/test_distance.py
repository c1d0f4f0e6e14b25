"""Measured language distance (URIEL+, offline) and the rank statistics used on five languages."""
import itertools

import numpy as np
import pandas as pd
import pytest

from workbench.reports.distance import gap_correlations, language_distances, missing_features, spearman_permutation
from workbench.checks import WorkbenchError

pytest.importorskip("urielplus")


def test_distances_from_english_order_the_languages_as_typology_expects():
    d = language_distances().pivot(index="language", columns="kind", values="distance")
    assert set(d.index) == {"fr", "es", "ar", "tr", "ja"} and set(d.columns) == {"syntactic", "genetic", "featural"}
    assert ((d >= 0) & (d <= 1)).all().all()
    assert max(d.loc[["fr", "es"], "syntactic"]) < min(d.loc[["ar", "tr", "ja"], "syntactic"])  # Romance closest
    assert d.loc["fr", "genetic"] == d.loc["es", "genetic"] < 1.0  # Indo-European: related to English ...
    assert (d.loc[["ar", "tr", "ja"], "genetic"] == 1.0).all()  # ... the others not at all (the measure saturates)


def test_standard_arabic_says_which_features_it_lacks():
    rows = language_distances(["ar"], ["syntactic"]).iloc[0]
    assert rows["code"] == "arb" and rows["features"] == 103 and "angular" in rows["metric"]
    lacking = missing_features("ar")
    assert len(lacking) == rows["missing"] > 0 and all(name.startswith("S_") for name in lacking)
    assert len(missing_features("es")) < len(lacking)
    with pytest.raises(WorkbenchError, match="unknown language 'xq'; valid: ar, es, fr, ja, tr"):
        language_distances(["xq"])


def test_any_language_uriel_knows_has_its_distance_as_a_registered_pair_needs():
    rows = language_distances(["de", "ja", "por"], ["genetic"]).set_index("language")
    assert list(rows["code"]) == ["deu", "jpn", "por"]
    assert rows.loc["de", "distance"] < rows.loc["por", "distance"] <= rows.loc["ja", "distance"] == 1.0


def test_a_pair_without_english_has_the_distance_between_its_two_languages():
    from_french = language_distances(["es", "en"], ["genetic", "syntactic"], reference="fr").set_index(["language", "kind"])
    from_english = language_distances(["es"], ["genetic", "syntactic"]).set_index(["language", "kind"])
    assert (from_french["reference"] == "fr").all()
    assert from_french.loc[("es", "genetic"), "distance"] < from_english.loc[("es", "genetic"), "distance"]  # Romance
    assert from_french.loc[("en", "genetic"), "distance"] == pytest.approx(
        language_distances(["fr"], ["genetic"])["distance"].iloc[0])  # symmetric
    with pytest.raises(WorkbenchError, match="unknown language 'fr'"):
        language_distances(["fr"], reference="fr")


def test_spearman_permutation_p_value_exact_up_to_8_points_then_sampled():
    rho, p = spearman_permutation([1, 2, 3, 4, 5], [10, 20, 30, 40, 50])
    assert rho == pytest.approx(1.0) and p == pytest.approx(2 / 120)  # only the two monotone orders are as extreme
    rho, p = spearman_permutation([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert rho == pytest.approx(0.8) and 0.1 < p < 0.2
    with pytest.raises(WorkbenchError, match="at least 3 points"):
        spearman_permutation([1, 2], [1, 2])
    # nine languages (the five and four own pairs): sampled. Only 2 of 9! orderings are as extreme as a monotone one,
    # so the sampled p sits near its floor 1/20,001 (never 0); a weak association keeps a large p, near the exact one
    rho, p = spearman_permutation(range(9), range(9))
    assert rho == pytest.approx(1.0) and p == pytest.approx(2 / 20_001)  # the seeded draw holds 1 such ordering
    x = np.arange(9.0)
    for y in ([5, 1, 4, 9, 6, 2, 8, 3, 7], [2, 1, 2, 3, 1, 3, 2, 1, 3]):  # weak association; ties (mean ranks)
        rho, p = spearman_permutation(x, y)
        ranks = pd.Series(y).rank().to_numpy()
        every = ranks[np.array(list(itertools.permutations(range(9))))] - ranks.mean()  # all 362,880 orderings
        null = every @ (x - x.mean()) / (np.linalg.norm(x - x.mean()) * np.linalg.norm(ranks - ranks.mean()))
        exact = np.mean(np.abs(null) >= abs(rho) - 1e-12)
        assert 0.1 < exact < 0.9 and p == pytest.approx(exact, rel=0.05)


def test_gap_correlations_per_task_and_kind():
    distances = language_distances()
    syntactic = distances[distances.kind == "syntactic"].set_index("language")["distance"]
    gaps = pd.DataFrame({"language": list(syntactic.index) * 2, "task": ["grows"] * 5 + ["shrinks"] * 5,
                         "gap": np.concatenate([syntactic.to_numpy(), -syntactic.to_numpy()])})
    table = gap_correlations(gaps, distances).set_index(["task", "kind"])
    assert table.loc[("grows", "syntactic"), "rho"] == pytest.approx(1.0)
    assert table.loc[("shrinks", "syntactic"), "rho"] == pytest.approx(-1.0)
    assert (table["n"] == 5).all() and table["p_value"].between(0, 1).all()


def test_reading_distances_leaves_the_logging_as_it_was():
    """urielplus configures the root logger when imported (INFO to stderr, red in a notebook): undone."""
    code = ("import logging; from workbench.reports.distance import language_distances; "
            "language_distances(['fr'], ['genetic']); root = logging.getLogger(); "
            "assert root.handlers == [] and root.level == logging.WARNING, (root.handlers, root.level)")
    import subprocess
    import sys
    subprocess.run([sys.executable, "-c", code], check=True)
