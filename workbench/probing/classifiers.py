"""Probing classifiers as scikit-learn estimators, trained with PyTorch on CPU or GPU.

* :class:`LogisticProbe` — multinomial logistic regression on standardised embeddings, full-batch L-BFGS,
  the L2 strength chosen on the validation split only (the grid is walked from strong to weak regularisation,
  each fit warm-started from the previous one: a regularisation path).
* :class:`MLPProbe` — SentEval's MLP probe (Conneau et al. 2018; docs/probing.md#classifiers): Linear → dropout → sigmoid →
  Linear, Adam, batches of 64, validation after every 4 passes over the data and early stopping after 5
  checks without gain ("tenacity"), hidden size, dropout and L2 chosen on the validation split (grid: :data:`MLP_GRID`).

Both are scikit-learn estimators: ``fit(X, y)``, ``predict``/``predict_proba``/``score``, ``get_params``/
``set_params``, ``random_state``; ``clone`` and pipelines compose, and predicting before ``fit`` raises
``NotFittedError``. The validation split that chooses the hyper-parameters is a parameter
(``validation=(X_valid, y_valid)``, as :func:`workbench.probe` passes the task's own); without one, a seeded
tenth of the training data is held out to choose them (none when the grid has one point).
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

# Three strengths, 50 L-BFGS iterations each (warm-started): on WordContent, BShift and Length this was within
# 0.2 accuracy points of a five-value grid (1e-1 … 1e-5) at 100 iterations, in about half the time.
L2_GRID = (1e-2, 1e-3, 1e-4)
HELD_OUT = 0.1  # the share of the training data that chooses the hyper-parameters when no validation is given


class _TorchProbe(ClassifierMixin, BaseEstimator):
    dtype = torch.float32

    def _grid_size(self) -> int:
        return int(np.prod([len(v) for k, v in self.get_params().items() if k.endswith("_grid")]))

    def _splits(self, X, y):
        """Training data, and validation data (``validation``, else a seeded held-out tenth; ``None`` when the
        grid leaves nothing to choose), checked as scikit-learn checks them."""
        X, y = validate_data(self, X, y, dtype=np.float32)
        check_classification_targets(y)
        if self.validation is not None:
            X_valid, y_valid = self.validation
            return X, y, validate_data(self, X_valid, reset=False, dtype=np.float32), np.asarray(y_valid)
        if self._grid_size() == 1 or len(y) < 10:
            return X, y, None, None
        order = np.random.default_rng(self.random_state).permutation(len(y))
        cut = max(1, int(round(HELD_OUT * len(y))))
        return X[order[cut:]], y[order[cut:]], X[order[:cut]], y[order[:cut]]

    def _prepare(self, X, y):
        self.classes_, target = np.unique(np.asarray(y), return_inverse=True)
        self.mean_ = X.mean(axis=0)
        self.scale_ = X.std(axis=0)
        self.scale_[self.scale_ < 1e-8] = 1.0
        return self._standardise(X), torch.as_tensor(target, dtype=torch.long)

    def _standardise(self, X) -> torch.Tensor:
        return torch.as_tensor((np.asarray(X, dtype=np.float32) - self.mean_) / self.scale_).to(self.dtype)

    def _valid_target(self, y_valid) -> torch.Tensor:
        index = {label: i for i, label in enumerate(self.classes_)}
        return torch.as_tensor([index.get(label, -1) for label in np.asarray(y_valid)], dtype=torch.long)

    @torch.no_grad()
    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float32)
        # in float64: on some CPUs a float32 product sums in an order that depends on the batch's shape, so a row's
        # probabilities would move (in the 7th digit) with the rows beside it, which scikit-learn's checks refuse
        weights = {name: tensor.double() for name, tensor in self.model_.state_dict().items()}
        logits = torch.func.functional_call(self.model_, weights, (self._standardise(X).double(),))
        return torch.softmax(logits, dim=1).numpy()

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self)
        return self.classes_[self.predict_proba(X).argmax(axis=1)]

    @staticmethod
    def _accuracy(model, X, target) -> float:
        with torch.no_grad():
            return float((model(X).argmax(dim=1) == target).float().mean())


class LogisticProbe(_TorchProbe):
    """Multinomial logistic regression; loss = mean cross-entropy + l2/2·‖W‖², l2 picked on validation.

    Fitted in float64: in float32 the L-BFGS path depends on the order of the sums, hence on the number of CPU
    threads, and the validation choice of l2 with it (measured: TreeDepth 28.9 vs 31.9 on one thread vs two)."""

    dtype = torch.float64

    def __init__(self, l2_grid: Sequence[float] = L2_GRID, max_iter: int = 50, validation: tuple | None = None,
                 random_state: int = 0):
        self.l2_grid, self.max_iter, self.validation, self.random_state = l2_grid, max_iter, validation, random_state

    def fit(self, X, y) -> "LogisticProbe":
        X, y, X_valid, y_valid = self._splits(X, y)
        X, target = self._prepare(X, y)
        grid = sorted(self.l2_grid, reverse=True)
        if X_valid is not None:
            Xv, tv = self._standardise(X_valid), self._valid_target(y_valid)
        model = torch.nn.Linear(X.shape[1], len(self.classes_), dtype=self.dtype)
        torch.nn.init.zeros_(model.weight)
        torch.nn.init.zeros_(model.bias)
        self.valid_scores_, self.n_iter_, best = {}, 0, None
        for l2 in grid:
            self.n_iter_ += self._lbfgs(model, X, target, l2)
            if X_valid is None:
                best = (l2, {k: v.clone() for k, v in model.state_dict().items()})
                break
            score = self._accuracy(model, Xv, tv)
            self.valid_scores_[l2] = score
            if best is None or score > self.valid_scores_[best[0]]:  # ties keep the stronger regulariser
                best = (l2, {k: v.clone() for k, v in model.state_dict().items()})
        self.l2_, state = best
        model.load_state_dict(state)
        self.model_ = model
        return self

    def _lbfgs(self, model, X, target, l2: float) -> int:
        """L-BFGS on the loss at ``l2`` from the model's current weights; returns the iterations it took."""
        optimiser = _uncompiled(torch.optim.LBFGS, model.parameters(), lr=1.0, max_iter=self.max_iter,
                                history_size=10, tolerance_grad=1e-6, tolerance_change=1e-9,
                                line_search_fn="strong_wolfe")

        def closure():
            model.zero_grad()  # the module's: the optimizer's own would import the compiler too
            loss = torch.nn.functional.cross_entropy(model(X), target) + 0.5 * l2 * model.weight.pow(2).sum()
            loss.backward()
            return loss

        optimiser.step(closure)
        return int(optimiser.state[model.weight]["n_iter"])


_MARKING = threading.Lock()  # probes fit in threads (the demo, layer sweeps): one construction marks at a time


def _uncompiled(optimizer, params, **options) -> torch.optim.Optimizer:
    """``optimizer(params, **options)`` without importing torch's compiler: an optimizer's constructor imports
    torch._dynamo (about a second of every process that probes) only to mark ``add_param_group`` as never traced,
    a mark that matters only inside ``torch.compile``, where no probe runs. The mark is the function itself for
    the construction (torch reads it from there), and taken away after."""
    add = getattr(torch.optim.Optimizer.add_param_group, "__wrapped__", None)
    if add is None or "torch._dynamo" in sys.modules:  # another torch, or the compiler is here already
        return optimizer(params, **options)
    with _MARKING:
        setattr(add, "__dynamo_disable", add)
        try:
            return optimizer(params, **options)
        finally:
            if getattr(add, "__dynamo_disable", None) is add:  # not the compiler's own, set meanwhile
                delattr(add, "__dynamo_disable")


MLP_GRID = {"hidden": (50,), "dropout": (0.0, 0.1, 0.2), "l2": (1e-5, 1e-3)}  # SentEval's probing MLP


class MLPProbe(_TorchProbe):
    """SentEval's MLP probe: Linear → dropout → sigmoid → Linear, Adam (batch 64), early stopping on
    validation (tenacity 5); hidden size, dropout and L2 chosen on validation."""

    def __init__(self, hidden_grid: Sequence[int] = MLP_GRID["hidden"],
                 dropout_grid: Sequence[float] = MLP_GRID["dropout"], l2_grid: Sequence[float] = MLP_GRID["l2"],
                 max_epochs: int = 50, epoch_size: int = 4, tenacity: int = 5, batch_size: int = 64,
                 validation: tuple | None = None, random_state: int = 0):
        self.hidden_grid, self.dropout_grid, self.l2_grid = hidden_grid, dropout_grid, l2_grid
        self.max_epochs, self.epoch_size, self.tenacity = max_epochs, epoch_size, tenacity
        self.batch_size, self.validation, self.random_state = batch_size, validation, random_state

    def fit(self, X, y) -> "MLPProbe":
        X, y, X_valid, y_valid = self._splits(X, y)
        X, target = self._prepare(X, y)
        if X_valid is None:  # nothing held out: early stopping watches the training data
            X_valid, y_valid = X.numpy() * self.scale_ + self.mean_, y
        Xv, tv = self._standardise(X_valid), self._valid_target(y_valid)
        self.valid_scores_, best = {}, None
        for hidden in self.hidden_grid:
            for dropout in self.dropout_grid:
                for l2 in self.l2_grid:
                    model, score = self._train(X, target, Xv, tv, hidden, dropout, l2)
                    self.valid_scores_[(hidden, dropout, l2)] = score
                    if best is None or score > best[3]:
                        best = (hidden, dropout, l2, score, model)
        self.hidden_, self.dropout_, self.l2_, _, self.model_ = best
        return self

    def _train(self, X, target, Xv, tv, hidden: int, dropout: float, l2: float):
        generator = torch.Generator().manual_seed(self.random_state)
        torch.manual_seed(self.random_state)
        model = torch.nn.Sequential(torch.nn.Linear(X.shape[1], hidden), torch.nn.Dropout(dropout),
                                    torch.nn.Sigmoid(), torch.nn.Linear(hidden, len(self.classes_)))
        # fused: one kernel per step for all four tensors, not a Python loop over them (the probe's ~10,000 small
        # steps: 1.27x faster fits on 1,500 x 128 features; probabilities within 1e-7 of the loop's)
        optimiser = torch.optim.Adam(model.parameters(), weight_decay=l2, fused=True)
        best_score, best_state, patience = -1.0, None, self.tenacity
        for _ in range(self.max_epochs):
            model.train()
            for _ in range(self.epoch_size):  # SentEval: passes over the data between validation checks
                for index in torch.randperm(len(X), generator=generator).split(self.batch_size):
                    optimiser.zero_grad()
                    torch.nn.functional.cross_entropy(model(X[index]), target[index]).backward()
                    optimiser.step()
            model.eval()
            score = self._accuracy(model, Xv, tv)
            if score > best_score:
                best_score, best_state, patience = score, {k: v.clone() for k, v in model.state_dict().items()}, \
                    self.tenacity
            else:
                patience -= 1
                if patience == 0:
                    break
        model.load_state_dict(best_state)
        return model.eval(), best_score


CLASSIFIERS = {"logreg": LogisticProbe, "mlp": MLPProbe}
