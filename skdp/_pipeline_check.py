"""Which steps of a pipeline learn from the data, and whether privately.

A pipeline is private only if every step that learns from the training data
does so with differential privacy. :func:`step_privacy` sorts one estimator
into one of three kinds, and :func:`check_pipeline` walks a whole composite
estimator (``Pipeline``, ``ColumnTransformer``, ``FeatureUnion``, search
objects, nested in any way) and lists every step:

* ``"private"``: a private skdp estimator (it plans and charges its fit);
* ``"stateless"``: its fit learns nothing from the values of the data —
  scikit-learn declares it stateless (``requires_fit=False``: ``Normalizer``,
  ``Binarizer``, ``FunctionTransformer``, the hashers), or its state comes
  from public parameters and the number of columns only (``OneHotEncoder``
  and ``OrdinalEncoder`` with declared ``categories`` and no frequency
  thresholds, ``PolynomialFeatures``, an skdp transformer that declares
  ``_learns_from_data = False`` such as a scaler from declared bounds), or
  ``"passthrough"``/``"drop"``; a container made only of such steps;
* ``"leaking"``: anything else (for example ``StandardScaler``, whose mean
  and variance come from the data without noise, or ``GridSearchCV``, whose
  choice of the best parameters reads validation scores without noise).

A ``FunctionTransformer`` counts as stateless, which is only right when its
function transforms each row on its own (a function that centres the
columns, say, mixes the rows and is not private); skdp cannot check that.
:class:`~skdp.model_selection.PrivateSearchCV` refuses leaking steps with the
same classification.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from sklearn.base import BaseEstimator
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, PolynomialFeatures
from sklearn.utils import get_tags

from .base import PrivateEstimatorMixin
from .exceptions import PrivacyLeakWarning
from .utils._privacy import user_stacklevel
from .utils._sklearn_compat import BaseSearchCV

__all__ = ["PipelinePrivacyReport", "StepPrivacy", "check_pipeline", "step_privacy"]

_KINDS = ("private", "stateless", "leaking")


def _declared_encoder(step) -> bool:
    return (
        isinstance(step, OneHotEncoder | OrdinalEncoder)
        and not isinstance(step.categories, str)
        and getattr(step, "min_frequency", None) is None
        and getattr(step, "max_categories", None) is None
        and getattr(step, "handle_unknown", "error") != "infrequent_if_exist"
    )


def _children(step) -> list[tuple[str, object]]:
    """The named sub-estimators a container fits, or ``[]`` for a leaf."""
    if isinstance(step, Pipeline):
        return list(step.steps)
    if isinstance(step, ColumnTransformer):
        parts = [(name, t) for name, t, _ in step.transformers]
        return parts + [("remainder", step.remainder)]
    if isinstance(step, FeatureUnion):
        return list(step.transformer_list)
    if isinstance(step, BaseSearchCV):
        return [("estimator", step.estimator)]
    if isinstance(step, PrivateEstimatorMixin) and hasattr(step, "estimator"):
        # A private meta-estimator (PrivateSearchCV): its own event covers
        # the steps it fits, which are listed for information.
        return [("estimator", step.estimator)]
    return []


def _leaf_kind(step) -> str:
    if step is None or (isinstance(step, str) and step in ("passthrough", "drop")):
        return "stateless"
    if getattr(step, "_learns_from_data", True) is False:
        return "stateless"
    if _declared_encoder(step) or isinstance(step, PolynomialFeatures):
        return "stateless"
    try:
        tags = get_tags(step)
    except Exception:  # not a scikit-learn estimator
        return "leaking"
    if not tags.requires_fit and hasattr(step, "transform"):
        return "stateless"
    return "leaking"


def step_privacy(step: BaseEstimator | str | None) -> str:
    """``"private"``, ``"stateless"`` or ``"leaking"`` (see the module notes).

    A container (``Pipeline``, ``ColumnTransformer``, ``FeatureUnion``) is
    leaking when one of its steps is, else private when one of its steps is,
    else stateless. A scikit-learn search object (``GridSearchCV``, ...) over
    anything that learns is leaking: it picks the best candidate by
    noiseless scores. This is the kind :func:`check_pipeline` reports for
    the step itself.

    Parameters
    ----------
    step : estimator, "passthrough", "drop" or None

    Returns
    -------
    kind : str

    Examples
    --------
    >>> from sklearn.preprocessing import Normalizer, StandardScaler
    >>> from skdp import DPLogisticRegression, step_privacy
    >>> [step_privacy(s) for s in (Normalizer(), StandardScaler(),
    ...                            DPLogisticRegression())]
    ['stateless', 'leaking', 'private']
    """
    return _walk(step, "", [], covered=False)


@dataclass(frozen=True)
class StepPrivacy:
    """One step of a composite estimator and what its fit reveals.

    Attributes
    ----------
    path : str
        Where the step sits, the names of its containers joined by ``"__"``
        as in ``set_params`` (``"preprocess__scale"``).
    estimator : object
        The step itself.
    kind : {"private", "stateless", "leaking"}
        See :func:`step_privacy`; a container is listed with the kind of
        itself (``"leaking"`` for a ``GridSearchCV``), its steps after it.
    epsilon : float or None
        For a private step: what its last fit spent (``epsilon_``) when it
        is fitted, else its ``epsilon`` parameter; None otherwise.
    delta : float or None
        The same for delta (0 for a pure-epsilon step).
    reason : str
        Why the step is of its kind, in a few words.
    covered : bool
        True for a step inside a search object: a private search's own event
        covers it, and a scikit-learn search is listed as leaking itself.
    """

    path: str
    estimator: object
    kind: str
    epsilon: float | None = None
    delta: float | None = None
    reason: str = ""
    covered: bool = False


def _private_cost(step) -> tuple[float | None, float | None]:
    if hasattr(step, "epsilon_"):
        return float(step.epsilon_), float(getattr(step, "delta_", 0.0))
    params = step.get_params(deep=False) if hasattr(step, "get_params") else {}
    epsilon = params.get("epsilon")
    delta = params.get("delta")
    return (
        None if epsilon is None else float(epsilon),
        None if delta is None else float(delta),
    )


def _walk(step, path: str, out: list[StepPrivacy], covered: bool) -> str:
    """Append ``step`` and everything inside it to ``out``; return its kind."""
    at = len(out)
    name = path or "(root)"
    children = _children(step)
    inner_covered = covered or isinstance(step, PrivateEstimatorMixin | BaseSearchCV)
    kinds = {
        _walk(
            child, f"{path}__{child_name}" if path else child_name, out, inner_covered
        )
        for child_name, child in children
    }
    epsilon = delta = None
    if isinstance(step, PrivateEstimatorMixin):
        kind = "private"
        epsilon, delta = _private_cost(step)
        reason = "fits with differential privacy and charges its budget"
    elif isinstance(step, BaseSearchCV):
        kind = "stateless" if kinds <= {"stateless"} else "leaking"
        reason = (
            "chooses the best candidate by noiseless validation scores; use "
            "skdp.model_selection.PrivateSearchCV"
            if kind == "leaking"
            else "no step learns from the data"
        )
    elif children:
        kind = (
            "leaking"
            if "leaking" in kinds
            else ("private" if "private" in kinds else "stateless")
        )
        reason = {
            "leaking": "holds a step that learns from the data without privacy",
            "private": "every step that learns is private",
            "stateless": "no step learns from the data",
        }[kind]
    else:
        kind = _leaf_kind(step)
        reason = (
            "learns nothing from the values of the data"
            if kind == "stateless"
            else "learns from the data without privacy; replace it with a "
            "private or public-parameter counterpart"
        )
    out.insert(at, StepPrivacy(name, step, kind, epsilon, delta, reason, covered))
    return kind


@dataclass(frozen=True)
class PipelinePrivacyReport:
    """What :func:`check_pipeline` found; printing it gives a table.

    Attributes
    ----------
    steps : tuple of StepPrivacy
        Every step, containers first and their steps after them, in the
        order ``set_params`` names them.
    """

    steps: tuple[StepPrivacy, ...]

    @property
    def leaking(self) -> tuple[StepPrivacy, ...]:
        """The leaves that learn from the data without privacy."""
        return tuple(
            s
            for s in self.steps
            if s.kind == "leaking"
            and not s.covered
            and (not _children(s.estimator) or isinstance(s.estimator, BaseSearchCV))
        )

    @property
    def private(self) -> tuple[StepPrivacy, ...]:
        """The private leaves (a private meta-estimator counts as one)."""
        return tuple(
            s
            for s in self.steps
            if s.kind == "private"
            and not s.covered
            and isinstance(s.estimator, PrivateEstimatorMixin)
        )

    @property
    def is_private(self) -> bool:
        """True when no step leaks: the fitted whole is differentially private."""
        return not self.leaking

    @property
    def epsilon(self) -> float:
        """Sum of the private steps' epsilons (basic sequential composition).

        The steps see the same rows, so their epsilons add up (a
        ``ColumnTransformer``'s columns are not disjoint *rows*). The shared
        budget's accountant may report a tighter total for the same spends.
        ``nan`` when a private step has no epsilon.
        """
        values = [s.epsilon for s in self.private]
        return math.nan if any(v is None for v in values) else float(sum(values))

    def __str__(self) -> str:
        rows = [("step", "estimator", "kind", "epsilon")]
        for s in self.steps:
            eps = "" if s.epsilon is None else f"{s.epsilon:.4g}"
            rows.append((s.path, _estimator_name(s.estimator), s.kind, eps))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows
        ]
        verdict = (
            f"private: yes (total epsilon {self.epsilon:.4g} by basic composition)"
            if self.is_private
            else f"private: NO ({len(self.leaking)} leaking step(s))"
        )
        return "\n".join(lines + [verdict])


def _estimator_name(step) -> str:
    return step if isinstance(step, str) else type(step).__name__


def check_pipeline(
    estimator: BaseEstimator, *, warn: bool = True
) -> PipelinePrivacyReport:
    """List every step of ``estimator`` as private, stateless or leaking.

    Walks ``Pipeline``, ``ColumnTransformer``, ``FeatureUnion`` and search
    objects, nested in any way, without fitting anything. A step inside a
    private meta-estimator (:class:`~skdp.model_selection.PrivateSearchCV`)
    is listed but covered by the meta-estimator's own event.

    Parameters
    ----------
    estimator : estimator
        An unfitted or fitted estimator, usually a composite one.
    warn : bool, default=True
        Emit one :class:`~skdp.exceptions.PrivacyLeakWarning` naming the
        leaking steps, if any.

    Returns
    -------
    report : PipelinePrivacyReport
        ``report.steps`` lists every step; ``report.is_private`` tells
        whether the fitted whole is differentially private; ``print(report)``
        gives a table.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import Normalizer, StandardScaler
    >>> from skdp import DPLogisticRegression, check_pipeline
    >>> report = check_pipeline(make_pipeline(Normalizer(),
    ...                                       DPLogisticRegression(epsilon=0.5)))
    >>> print(report)
    step                  estimator             kind       epsilon
    (root)                Pipeline              private
    normalizer            Normalizer            stateless
    dplogisticregression  DPLogisticRegression  private    0.5
    private: yes (total epsilon 0.5 by basic composition)
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     report = check_pipeline(make_pipeline(StandardScaler(),
    ...                                           DPLogisticRegression()))
    >>> report.is_private, caught[0].category.__name__
    (False, 'PrivacyLeakWarning')
    """
    found: list[StepPrivacy] = []
    _walk(estimator, "", found, covered=False)
    report = PipelinePrivacyReport(tuple(found))
    if warn and report.leaking:
        listed = "; ".join(
            f"{s.path} ({_estimator_name(s.estimator)}): {s.reason}"
            for s in report.leaking
        )
        warnings.warn(
            f"These steps learn from the training data without differential "
            f"privacy, so the fitted pipeline is not private: {listed}.",
            PrivacyLeakWarning,
            stacklevel=user_stacklevel(),
        )
    return report
