"""The private-ERM core shared by skdp's linear models.

:class:`_BaseDPLinear` holds what every private linear model does, whatever
its loss: validate the input into a :class:`~skdp.utils._row_source.
RowSource` (rows in memory, dense or CSR, or in a dask collection) and a
:class:`~skdp.linear_model._rows.RowSpec` (the public row bound, the
intercept column, how labels become targets), plan objective perturbation,
output perturbation, DP-SGD or full-batch gradient descent against the
model's :class:`~skdp.linear_model._losses.MarginLoss` from public
quantities, and turn the released coefficients into ``coef_`` and
``intercept_``. Every method then reads the rows only through block sums,
the same on every backend: where the rows are changes how the input is
validated (``validate_data`` in memory, one pass of facts on dask,
:mod:`~skdp.linear_model._dask_input`) and nothing else. A model supplies
its loss, how it reads its targets and what it predicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..accounting._delta import DEFAULT_DELTA, resolve_delta
from ..accounting._events import PureDPEvent
from ..base import FitPlan, PrivateEstimatorMixin
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._dask import is_dask_collection
from ..utils._feasibility import check_magnitudes
from ..utils._labels import resolve_classes
from ..utils._row_source import RowSource, row_source
from ..utils._sklearn_compat import (
    HasMethods,
    Integral,
    Interval,
    Real,
    StrOptions,
    check_is_fitted,
    validate_data,
)
from ._dask_input import ValidatedInput, prepare_dask_input
from ._dpsgd import plan_dpsgd, run_dpsgd
from ._forecast import warn_if_noise_swamps_learning, warn_if_noise_swamps_scores
from ._full_batch import (
    DPSGD,
    FULL_BATCH_GD,
    FullBatchGDPlan,
    plan_full_batch_gd,
    run_full_batch_gd,
    uses_full_batch,
)
from ._objective import plan_objective, run_objective
from ._output import plan_output, run_output
from ._rows import (
    RowSpec,
    as_csr,
    largest,
    largest_row_norm,
    read_norm_bound,
    row_norms,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["row_norms"]


@dataclass(frozen=True)
class _LinearInput:
    """Validated data of one fit and the public facts its plan reads.

    ``rows`` holds the validated rows and labels (in memory or on dask),
    ``spec`` how a block of them becomes the problem's rows ``Z`` and
    targets ``Y``: no bounded copy of the data is made.
    """

    rows: RowSource
    spec: RowSpec
    classes: np.ndarray | None
    data_norm: float
    intercept: float
    row_norm: float
    n_features: int
    delta: float
    extra: dict | None = None

    @property
    def n_samples(self) -> int:
        return self.rows.n_samples

    @property
    def n_coef(self) -> int:
        """Columns of ``Z``: the features and the intercept column."""
        return self.spec.n_coef

    @property
    def n_outputs(self) -> int:
        """Models fitted: one, or one per class beyond two."""
        classes = self.classes
        return 1 if classes is None or classes.size == 2 else int(classes.size)

    @property
    def Z(self):
        """The bounded rows with their intercept column (in memory only).

        A working copy of ``X``, made on each access: for inspection and
        tests; fits never build it.
        """
        X, _ = self.rows.rows()
        return self.spec.rows(X)

    @property
    def Y(self) -> np.ndarray:
        """The targets, one column per model (in memory only)."""
        _, y = self.rows.rows()
        return self.spec.targets(y)


class _BaseDPLinear(PrivateEstimatorMixin):
    """Plans and runs the three private methods for a linear model.

    Subclasses define ``_loss()`` (``None`` for the logistic/softmax pair),
    ``_targets(y)`` (the validated ``Y`` matrix and the classes or ``None``)
    and what they predict.
    """

    _data_bound_params = ("data_norm",)
    _parameter_constraints: dict = {
        "epsilon": [EPSILON_CONSTRAINT],
        "delta": [Interval(Real, 0, 1, closed="left"), None],
        "C": [Interval(Real, 0, None, closed="neither")],
        "method": [StrOptions({"objective", "output", "gradient"})],
        "data_norm": [Interval(Real, 0, None, closed="neither"), None],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "batch_size": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"full"}),
        ],
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
    #: Methods that need delta > 0 (``delta=None`` gives them DEFAULT_DELTA).
    _approximate_methods = ("gradient",)

    def _resolve_delta(self) -> float:
        needs_delta = self.method in self._approximate_methods
        delta = resolve_delta(self.delta, needs_delta=needs_delta)
        if needs_delta and delta <= 0:
            raise ValueError(
                f"method={self.method!r} needs delta > 0; pass delta=None (the "
                f"default, {DEFAULT_DELTA:g}) or a number, or use "
                "method='objective' for pure epsilon-DP."
            )
        return delta

    def _resolve_classes(self, y) -> np.ndarray:
        return resolve_classes(y, self.classes, type(self).__name__)

    def _read_targets(self, y):  # pragma: no cover - abstract
        """``(classes, bounds)`` of the targets, read or checked before the charge."""
        raise NotImplementedError

    def _prepare_fit(self, X, y=None):
        """Validated rows, how to bound them, and the public facts of the plan."""
        delta = self._resolve_delta()
        if is_dask_collection(X) or is_dask_collection(y):
            found = prepare_dask_input(self, X, y)
        else:
            found = self._prepare_memory_input(X, y)
        intercept = float(self.intercept_scaling) if self.fit_intercept else 0.0
        check_magnitudes(
            type(self).__name__,
            data_norm=found.data_norm,
            intercept_scaling=intercept,
        )
        spec = RowSpec(
            data_norm=None if found.read_norm else found.data_norm,
            intercept=intercept,
            classes=found.classes,
            bounds=found.bounds,
            n_features=found.n_features,
        )
        return _LinearInput(
            rows=found.rows,
            spec=spec,
            classes=found.classes,
            data_norm=found.data_norm,
            intercept=intercept,
            row_norm=math.hypot(found.data_norm, intercept),
            n_features=found.n_features,
            delta=delta,
            extra=None if found.bounds is None else {"bounds": found.bounds},
        )

    def _prepare_memory_input(self, X, y) -> ValidatedInput:
        """The in-memory form of :func:`~._dask_input.prepare_dask_input`.

        ``validate_data`` (float64, dense or CSR, finite), the targets'
        classes or bounds, and the row-norm bound (read from ``X`` block by
        block, with a warning, when ``data_norm=None``); the rows are not
        copied.
        """
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=np.float64,
            y_numeric=self._y_numeric,
        )
        classes, bounds = self._read_targets(y)
        X = as_csr(X) if sp.issparse(X) else X
        rows = row_source(X, y)
        read_norm = self.data_norm is None
        if read_norm:
            data_norm = read_norm_bound(rows.block_reduce(largest_row_norm, largest))
        else:
            data_norm = float(self.data_norm)
        return ValidatedInput(
            rows=rows,
            classes=classes,
            bounds=bounds,
            data_norm=data_norm,
            read_norm=read_norm,
            n_features=X.shape[1],
        )

    def _n_outputs(self, prepared) -> int:
        """Classes for the plan: 2 for one model, else the number of models."""
        return 2 if prepared.n_outputs == 1 else prepared.n_outputs

    def _plan_fit(self, prepared) -> FitPlan:
        """The event and settings of this fit, from public quantities only."""
        n_samples, n_coef = prepared.n_samples, prepared.n_coef
        n_classes = self._n_outputs(prepared)
        n_models = 1 if n_classes == 2 else n_classes
        loss = self._loss()
        common = dict(
            C=float(self.C), row_norm=prepared.row_norm, n_samples=n_samples, loss=loss
        )
        # The solver's sums follow the row source's blocks (public: n only).
        exact = dict(
            n_features=n_coef,
            n_classes=n_classes,
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            delta=prepared.delta,
            block_rows=prepared.rows.block_rows,
            sparse=prepared.rows.is_sparse,
        )
        gradient = dict(
            epsilon=float(self.epsilon),
            delta=prepared.delta,
            n_features=n_coef,
            n_models=n_models,
            learning_rate=self.learning_rate,
            max_grad_norm=self.max_grad_norm,
        )
        if self.method == "objective":
            method_plan = plan_objective(epsilon=float(self.epsilon), **exact, **common)
        elif self.method == "output":
            method_plan = plan_output(epsilon=float(self.epsilon), **exact, **common)
            warn_if_noise_swamps_scores(
                type(self).__name__,
                method_plan.noise,
                prepared.row_norm,
                C=float(self.C),
                epsilon=float(self.epsilon),
                alpha=hasattr(self, "alpha"),
            )
        elif uses_full_batch(self.batch_size, n_samples):
            method_plan = plan_full_batch_gd(
                steps=int(self.epochs), **gradient, **common
            )
        else:
            method_plan = plan_dpsgd(
                batch_size=int(self.batch_size),
                epochs=int(self.epochs),
                **gradient,
                **common,
            )
        if self.method != "output":
            warn_if_noise_swamps_learning(
                f"{type(self).__name__}(method={self.method!r})",
                method_plan,
                n_features=n_coef,
                n_samples=n_samples,
                epsilon=float(self.epsilon),
                loss=loss,
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
        rows, spec = prepared.rows, prepared.spec
        # With one BLAS thread, as every fit (skdp.utils._threads).
        if self.method == "objective":
            W = run_objective(rows, spec, method_plan, source)
        elif self.method == "output":
            W = run_output(rows, spec, method_plan, source)
        elif isinstance(method_plan, FullBatchGDPlan):
            W = run_full_batch_gd(rows, spec, method_plan, source)
        else:
            W = run_dpsgd(rows, spec, method_plan, source)
        n_models = prepared.n_outputs
        W = np.asarray(W, dtype=float).reshape(n_models, prepared.n_coef)
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
                FULL_BATCH_GD if isinstance(method_plan, FullBatchGDPlan) else DPSGD
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

    def _read_targets(self, y):
        return self._resolve_classes(y), None

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
