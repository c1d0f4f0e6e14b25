"""The probes are scikit-learn estimators: every check of ``check_estimator`` passes, and ``clone``, pipelines,
grid searches and ``NotFittedError`` behave as for any estimator."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

from workbench.probing.classifiers import LogisticProbe, MLPProbe

QUICK_MLP = {"max_epochs": 3, "dropout_grid": (0.0,), "l2_grid": (1e-3,)}


@pytest.mark.parametrize("probe", [LogisticProbe(), MLPProbe(**QUICK_MLP)], ids=["logistic", "mlp"])
def test_every_scikit_learn_estimator_check_passes(probe):
    check_estimator(probe)  # all 55 checks of scikit-learn 1.9 apply; none is skipped


def test_clone_pipelines_grid_search_and_unfitted_use_behave_as_for_any_estimator():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 8)).astype(np.float32)
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, "yes", "no")
    probe = LogisticProbe(l2_grid=(1e-2, 1e-4), random_state=3)
    with pytest.raises(NotFittedError):
        probe.predict(X)
    twin = clone(probe)
    assert twin.get_params() == probe.get_params() and not hasattr(twin, "classes_")
    fitted = probe.fit(X, y)  # no validation given: a seeded tenth of the training data chooses l2
    assert len(fitted.valid_scores_) == 2 and fitted.score(X, y) > 0.9
    np.testing.assert_array_equal(clone(probe).fit(X, y).predict(X), fitted.predict(X))  # random_state fixes it
    given = LogisticProbe(l2_grid=(1e-2, 1e-4)).set_params(validation=(X[:50], y[:50])).fit(X[50:], y[50:])
    assert set(given.valid_scores_) == {1e-2, 1e-4}
    pipeline = make_pipeline(StandardScaler(), MLPProbe(**QUICK_MLP)).fit(X, y)
    assert pipeline.score(X, y) > 0.8 and set(pipeline.classes_) == {"no", "yes"}
    search = GridSearchCV(LogisticProbe(), {"l2_grid": [(1e-1,), (1e-4,)]}, cv=3).fit(X, y)
    assert search.best_params_["l2_grid"] in [(1e-1,), (1e-4,)] and search.score(X, y) > 0.9


def test_a_logistic_probe_leaves_the_compiler_unimported_and_fits_as_it_does_beside_it():
    """The optimizer is built without torch._dynamo (a second of every process that probes); once the compiler is
    imported the probe fits to the same probabilities, and torch's own mark is left as it was."""
    import subprocess
    import sys
    code = ("import sys, numpy as np, torch\n"
            "from workbench.probing.classifiers import LogisticProbe\n"
            "rng = np.random.default_rng(0)\n"
            "X = rng.standard_normal((400, 12)).astype(np.float32)\n"
            "y = (X[:, 0] - X[:, 3] + 0.5 * rng.standard_normal(400) > 0).astype(int) + (X[:, 5] > 1)\n"
            "add = torch.optim.Optimizer.add_param_group.__wrapped__\n"
            "for _ in 'alone', 'beside the compiler':\n"
            "    p = LogisticProbe(l2_grid=(1e-2, 1e-4)).fit(X, y).predict_proba(X)\n"
            "    marked = getattr(add, '__dynamo_disable', None) is add\n"
            "    print('torch._dynamo' in sys.modules, marked, p.tobytes().hex())\n"
            "    import torch._dynamo")
    alone, beside = (line.split() for line in subprocess.run([sys.executable, "-c", code], capture_output=True,
                                                             text=True, check=True).stdout.splitlines())
    assert alone[:2] == ["False", "False"] and beside[:2] == ["True", "False"]
    assert alone[2] == beside[2]  # bit for bit
