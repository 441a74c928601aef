"""The private-ERM core shared by skdp's linear models.

:class:`_BaseDPLinear` holds what every private linear model does, whatever
its loss: bound the rows to a public norm, append the intercept column,
plan objective perturbation, output perturbation or DP-SGD against the
model's :class:`~skdp.linear_model._losses.MarginLoss`, and turn the
released coefficients into ``coef_`` and ``intercept_``. A model supplies
its loss, how it reads its targets and what it predicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..accounting._events import PureDPEvent
from ..base import FitPlan, PrivateEstimatorMixin
from ..utils._dask import is_dask_collection
from ..utils._feasibility import check_magnitudes
from ..utils._labels import resolve_classes
from ..utils._sklearn_compat import (
    HasMethods,
    Integral,
    Interval,
    Real,
    StrOptions,
    check_is_fitted,
    threadpool_limits,
    validate_data,
)
from ._dask import (
    FULL_BATCH_GD,
    FullBatchGDPlan,
    RowBlocks,
    plan_full_batch_gd,
    prepare_dask_input,
    run_full_batch_gd,
)
from ._dpsgd import plan_dpsgd, run_dpsgd
from ._objective import plan_objective, run_objective
from ._output import plan_output, run_output
from ._rows import as_csr, bound_rows, row_norms, with_constant_column

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["DEFAULT_GRADIENT_DELTA", "row_norms"]

#: delta spent by ``method='gradient'`` when ``delta=None``.
DEFAULT_GRADIENT_DELTA = 1e-5


@dataclass(frozen=True)
class _LinearInput:
    """Validated data of one fit and the public facts its plan reads."""

    Z: np.ndarray | sp.csr_matrix
    Y: np.ndarray
    classes: np.ndarray | None
    data_norm: float
    intercept: float
    row_norm: float
    n_features: int
    delta: float
    extra: dict | None = None


class _BaseDPLinear(PrivateEstimatorMixin):
    """Plans and runs the three private methods for a linear model.

    Subclasses define ``_loss()`` (``None`` for the logistic/softmax pair),
    ``_targets(y)`` (the validated ``Y`` matrix and the classes or ``None``)
    and what they predict.
    """

    _data_bound_params = ("data_norm",)
    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left"), None],
        "C": [Interval(Real, 0, None, closed="neither")],
        "method": [StrOptions({"objective", "output", "gradient"})],
        "data_norm": [Interval(Real, 0, None, closed="neither"), None],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
        "budget": [HasMethods(["spend"]), None],
        "verbose": ["verbose"],
    }

    def _loss(self):
        return None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # With random_state=None the noise comes from the OS CSPRNG.
        tags.non_deterministic = self.random_state is None
        # CSR (other sparse formats are converted) through every method: rows
        # are clipped and solved on without densifying.
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------ fit
    #: Methods that need delta > 0 (their default delta is DEFAULT_GRADIENT_DELTA).
    _approximate_methods = ("gradient",)

    def _resolve_delta(self) -> float:
        if self.method in self._approximate_methods:
            delta = DEFAULT_GRADIENT_DELTA if self.delta is None else self.delta
            if delta <= 0:
                raise ValueError(
                    f"method={self.method!r} needs delta > 0; pass e.g. "
                    "delta=1e-5, or use method='objective' for pure epsilon-DP."
                )
            return float(delta)
        return 0.0 if self.delta is None else float(self.delta)

    def _resolve_classes(self, y) -> np.ndarray:
        return resolve_classes(y, self.classes, type(self).__name__)

    def _bound_rows(self, X) -> tuple[np.ndarray, float]:
        """Rows scaled to norm at most ``data_norm`` (see ``bound_rows``)."""
        return bound_rows(X, self.data_norm)

    def _targets(self, y):  # pragma: no cover - abstract
        """``(Y, classes, extra)``: the targets as a matrix of margins' labels."""
        raise NotImplementedError

    def _prepare_fit(self, X, y=None):
        """Validated, clipped data and the public facts the plan reads."""
        if is_dask_collection(X) or is_dask_collection(y):
            return self._prepare_dask_fit(X, y)
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=np.float64,
            y_numeric=self._y_numeric,
        )
        delta = self._resolve_delta()
        Y, classes, extra = self._targets(y)
        X, bound = self._bound_rows(X)
        intercept = float(self.intercept_scaling) if self.fit_intercept else 0.0
        check_magnitudes(
            type(self).__name__,
            data_norm=bound,
            intercept_scaling=intercept,
        )
        row_norm = math.hypot(bound, intercept)
        X = as_csr(X) if sp.issparse(X) else X
        Z = with_constant_column(X, intercept) if intercept else X
        return _LinearInput(
            Z=Z,
            Y=Y,
            classes=classes,
            data_norm=bound,
            intercept=intercept,
            row_norm=row_norm,
            n_features=X.shape[1],
            delta=delta,
            extra=extra,
        )

    def _prepare_dask_fit(self, X, y):
        """The dask form of ``_prepare_fit``: rows stay on the workers.

        One validation pass over the blocks (``prepare_dask_input``); ``Z``
        becomes a :class:`~skdp.linear_model._dask.RowBlocks` and ``Y`` a
        stand-in with ``Y``'s shape only.
        """
        delta = self._resolve_delta()
        found = prepare_dask_input(self, X, y)
        check_magnitudes(
            type(self).__name__,
            data_norm=found.data_norm,
            intercept_scaling=found.intercept,
        )
        extra = None if found.bounds is None else {"bounds": found.bounds}
        return _LinearInput(
            Z=found.rows,
            Y=found.targets,
            classes=found.classes,
            data_norm=found.data_norm,
            intercept=found.intercept,
            row_norm=math.hypot(found.data_norm, found.intercept),
            n_features=found.n_features,
            delta=delta,
            extra=extra,
        )

    def _n_outputs(self, prepared) -> int:
        """Classes for the plan: 2 for one model, else the number of models."""
        return 2 if prepared.Y.shape[1] == 1 else prepared.Y.shape[1]

    def _plan_fit(self, prepared) -> FitPlan:
        """The event and settings of this fit, from public quantities only."""
        n_samples, n_coef = prepared.Z.shape
        n_classes = self._n_outputs(prepared)
        loss = self._loss()
        common = dict(
            C=float(self.C), row_norm=prepared.row_norm, n_samples=n_samples, loss=loss
        )
        # A dask collection's rows stay on the workers: the client holds none.
        rows_held = 0 if isinstance(prepared.Z, RowBlocks) else None
        if self.method == "gradient" and rows_held == 0:
            method_plan = plan_full_batch_gd(
                epsilon=float(self.epsilon),
                delta=prepared.delta,
                n_features=n_coef,
                n_models=1 if n_classes == 2 else n_classes,
                steps=int(self.max_iter),
                learning_rate=self.learning_rate,
                max_grad_norm=self.max_grad_norm,
                **common,
            )
            return FitPlan(method_plan.event, prepared.delta, {"method": method_plan})
        if self.method == "objective":
            method_plan = plan_objective(
                epsilon=float(self.epsilon),
                n_features=n_coef,
                n_classes=n_classes,
                tol=float(self.tol),
                max_iter=int(self.max_iter),
                delta=prepared.delta,
                rows_held=rows_held,
                **common,
            )
            delta = prepared.delta
        elif self.method == "output":
            method_plan = plan_output(
                epsilon=float(self.epsilon),
                delta=prepared.delta,
                n_features=n_coef,
                n_classes=n_classes,
                tol=float(self.tol),
                max_iter=int(self.max_iter),
                rows_held=rows_held,
                **common,
            )
            delta = prepared.delta
        else:
            method_plan = plan_dpsgd(
                epsilon=float(self.epsilon),
                delta=prepared.delta,
                n_features=n_coef,
                n_models=1 if n_classes == 2 else n_classes,
                batch_size=int(self.batch_size),
                epochs=int(self.epochs),
                learning_rate=self.learning_rate,
                max_grad_norm=self.max_grad_norm,
                **common,
            )
            delta = prepared.delta
        if isinstance(method_plan.event, PureDPEvent):
            delta = 0.0
        return FitPlan(method_plan.event, delta, {"method": method_plan})

    def _run_fit(self, prepared, plan, source) -> None:
        """Everything that touches the data after the charge; cannot raise."""
        if self.verbose:
            print(
                f"[{type(self).__name__}] method={self.method!r} charged "
                f"epsilon={self.epsilon_:.6g}, delta={self.delta_:.3g}"
            )
        method_plan = plan.settings["method"]
        Z, Y = prepared.Z, prepared.Y
        # One BLAS thread: the products are small enough that threads only
        # add overhead, which becomes severe when other processes share the
        # cores.
        with threadpool_limits(limits=1, user_api="blas"):
            if self.method == "objective":
                W = run_objective(Z, Y, method_plan, source)
            elif self.method == "output":
                W = run_output(Z, Y, method_plan, source)
            elif isinstance(method_plan, FullBatchGDPlan):
                W = run_full_batch_gd(Z, method_plan, source)
            else:
                W = run_dpsgd(Z, Y, method_plan, source)
        W = np.asarray(W, dtype=float).reshape(Y.shape[1], Z.shape[1])
        n_models = Y.shape[1]
        self._set_targets_fitted(prepared)
        self.data_norm_ = prepared.data_norm
        if self.method == "gradient":
            self.n_iter_ = np.full(n_models, method_plan.steps, dtype=np.int32)
            self.noise_multiplier_ = method_plan.noise_multiplier
            self.sampling_rate_ = method_plan.sampling_rate
            self.n_steps_ = method_plan.steps
            self.learning_rate_ = method_plan.learning_rate
            self.max_grad_norm_ = method_plan.max_grad_norm
            self.gradient_variant_ = (
                FULL_BATCH_GD if isinstance(method_plan, FullBatchGDPlan) else "dpsgd"
            )
        else:
            # Public: the cap, not the data-dependent count of steps taken.
            self.n_iter_ = np.full(n_models, int(self.max_iter), dtype=np.int32)
        n_features = prepared.n_features
        self._set_coefficients(
            W[:, :n_features].copy(),
            W[:, -1] * prepared.intercept if prepared.intercept else np.zeros(n_models),
            prepared,
        )

    def _set_targets_fitted(self, prepared) -> None:
        self.classes_ = prepared.classes

    def _set_coefficients(self, coef, intercept, prepared) -> None:
        self.coef_ = coef
        self.intercept_ = intercept

    def _linear_scores(self, X) -> np.ndarray:
        """``X coef_.T + intercept_`` on validated input (post-processing)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, accept_sparse="csr", dtype=np.float64)
        return np.asarray(X @ self.coef_.T) + self.intercept_


class _BaseDPLinearClassifier(_BaseDPLinear):
    """A private linear classifier: labels, scores and predictions."""

    _y_numeric = False
    _data_bound_params = ("data_norm", "classes")
    _parameter_constraints: dict = {
        **_BaseDPLinear._parameter_constraints,
        "classes": ["array-like", None],
    }

    def _targets(self, y):
        classes = self._resolve_classes(y)
        if classes.size == 2:
            Y = np.where(y == classes[1], 1.0, -1.0)[:, None]
        else:
            Y = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
        return Y, classes, None

    def _n_outputs(self, prepared) -> int:
        return prepared.classes.size

    # -------------------------------------------------------------- predict
    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Score of each class: ``X coef_.T + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        scores = self._linear_scores(X)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predicted class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]
