"""Which steps of a pipeline learn from the data, and whether privately.

A pipeline is private only if every step that learns from the training data
does so with differential privacy. :func:`step_privacy` sorts one estimator
into a kind, and :func:`check_pipeline` walks a whole composite estimator
(``Pipeline``, ``ColumnTransformer``, ``FeatureUnion``, search objects,
nested in any way) and lists every step:

* ``"private"``: a private skdp estimator (it plans and charges its fit)
  whose public parameters are all given;
* ``"stateless"``: its fit learns nothing from the values of the data —
  scikit-learn declares it stateless (``requires_fit=False``: ``Normalizer``,
  ``Binarizer``, ``FunctionTransformer``, the hashers), or its state comes
  from public parameters, the number of columns and the dtype only
  (``OneHotEncoder`` and ``OrdinalEncoder`` with declared ``categories`` and
  no frequency thresholds, ``PolynomialFeatures``, ``SimpleImputer`` with
  ``strategy="constant"``, ``keep_empty_features=True`` and no indicator, an
  skdp transformer that declares ``_learns_from_data = False`` such as a
  scaler from declared bounds), or ``"passthrough"``/``"drop"``; a container
  made only of such steps;
* ``"leaking"``: anything else: for example ``StandardScaler``, whose mean
  and variance come from the data without noise, ``GridSearchCV``, whose
  choice of the best parameters reads validation scores without noise, and
  a private skdp estimator that will read a public parameter from the data
  (``DPLogisticRegression(data_norm=None)``: the largest row norm); such a
  parameter is named with the fix, before anything is fitted;
* ``"public"``: a step the caller declares public (``public=`` of
  :func:`check_pipeline`).

A private estimator lists the parameters it reads from the data when they
are ``None`` in its class attribute ``_data_bound_params`` (and may refine
the rule in ``_data_derived_params()``, see
:class:`~skdp.base.PrivateEstimatorMixin`); :func:`data_derived_params`
reads them. A ``FunctionTransformer`` counts as stateless, which is only
right when its function transforms each row on its own (a function that
centres the columns, say, mixes the rows and is not private); skdp cannot
check that. :class:`~skdp.model_selection.PrivateSearchCV` refuses leaking
steps before its private estimator with the same classification.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from sklearn.base import BaseEstimator
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, PolynomialFeatures
from sklearn.utils import get_tags

from .base import PrivateEstimatorMixin
from .exceptions import PrivacyLeakWarning
from .utils._privacy import DATA_BOUND_ADVICE, user_stacklevel
from .utils._sklearn_compat import BaseSearchCV

__all__ = [
    "PipelinePrivacyReport",
    "StepPrivacy",
    "check_pipeline",
    "data_derived_params",
    "step_privacy",
]

_KINDS = ("private", "stateless", "leaking", "public")


def data_derived_params(step) -> tuple[str, ...]:
    """The parameters that fitting ``step`` as it is would read from the data.

    ``step._data_derived_params()`` when the estimator defines it, else the
    names in its ``_data_bound_params`` that are ``None``; ``()`` for
    anything else. Reads the parameters only.

    Examples
    --------
    >>> from skdp import DPLogisticRegression
    >>> from skdp._pipeline_check import data_derived_params
    >>> data_derived_params(DPLogisticRegression(data_norm=1.0))
    ('classes',)
    """
    method = getattr(step, "_data_derived_params", None)
    if callable(method):
        return tuple(method())
    names = getattr(step, "_data_bound_params", ())
    return tuple(name for name in names if getattr(step, name, None) is None)


def _reads_reason(names) -> str:
    """Why reading ``names`` from the data leaks, and the fix (as the fit's
    warning says it)."""
    parts = []
    for name in names:
        leaked, fix = DATA_BOUND_ADVICE.get(
            name.rsplit("__", 1)[-1], ("a bound", f"pass {name}")
        )
        parts.append(
            f"{name} was not given, so its fit reads it from the private data "
            f"and the output can reveal {leaked}, which the privacy guarantee "
            f"does not cover; to avoid this, {fix}"
        )
    return "; ".join(parts)


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
        inner = getattr(step, "_inner_estimator", None)
        return [("estimator", inner() if callable(inner) else step.estimator)]
    return []


def _imputer_leak(step) -> str | None:
    """Why a ``SimpleImputer`` learns from the data, or None if it does not."""
    if step.strategy != "constant":
        return (
            "fills missing values with a statistic of the training data; use "
            "strategy='constant' with keep_empty_features=True"
        )
    if step.add_indicator:
        return (
            "add_indicator=True learns which columns have missing values in "
            "the training data; pass add_indicator=False"
        )
    if not step.keep_empty_features:
        return (
            "drops the columns that are all missing in the training data, "
            "which one row can decide; pass keep_empty_features=True"
        )
    return None  # the fill value (or 0 / "missing_value" by dtype) only


_LEAF_REASON = (
    "learns from the data without privacy; replace it with a private or "
    "public-parameter counterpart"
)
_STATELESS_REASON = "learns nothing from the values of the data"


def _leaf_kind(step) -> tuple[str, str]:
    """``(kind, reason)`` of a step with no sub-estimators."""
    if step is None or (isinstance(step, str) and step in ("passthrough", "drop")):
        return "stateless", _STATELESS_REASON
    if isinstance(step, SimpleImputer):
        leak = _imputer_leak(step)
        return ("stateless", _STATELESS_REASON) if leak is None else ("leaking", leak)
    reads = data_derived_params(step)
    if reads:
        return "leaking", _reads_reason(reads)
    if getattr(step, "_learns_from_data", True) is False:
        return "stateless", _STATELESS_REASON
    if _declared_encoder(step) or isinstance(step, PolynomialFeatures):
        return "stateless", _STATELESS_REASON
    try:
        tags = get_tags(step)
    except Exception:  # not a scikit-learn estimator
        return "leaking", _LEAF_REASON
    if not tags.requires_fit and hasattr(step, "transform"):
        return "stateless", _STATELESS_REASON
    return "leaking", _LEAF_REASON


def step_privacy(step: BaseEstimator | str | None) -> str:
    """``"private"``, ``"stateless"`` or ``"leaking"`` (see the module notes).

    A container (``Pipeline``, ``ColumnTransformer``, ``FeatureUnion``) is
    leaking when one of its steps is, else private when one of its steps is,
    else stateless. A scikit-learn search object (``GridSearchCV``, ...) over
    anything that learns is leaking: it picks the best candidate by
    noiseless scores. A private skdp estimator is leaking when its fit will
    read a public parameter from the data (``data_norm=None``,
    ``classes=None``, ``bounds=None``, ...). This is the kind
    :func:`check_pipeline` reports for the step itself, with no step
    declared public.

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
    ...                            DPLogisticRegression(data_norm=1.0,
    ...                                                 classes=[0, 1]))]
    ['stateless', 'leaking', 'private']
    >>> step_privacy(DPLogisticRegression())  # reads data_norm and classes
    'leaking'
    """
    return _walk(step, "", [], covered=False, public=_Declared(()), in_public=False)


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
    kind : {"private", "stateless", "leaking", "public"}
        See :func:`step_privacy`; ``"public"`` for a step that learns from
        the data and that the caller declared public. A container is listed
        with the kind of itself (``"leaking"`` for a ``GridSearchCV``), its
        steps after it.
    epsilon : float or None
        For a private step: what its last fit spent (``epsilon_``) when it
        is fitted, else its ``epsilon`` parameter; None otherwise.
    delta : float or None
        The same for delta (0 for a pure-epsilon step).
    reason : str
        Why the step is of its kind, in a few words, and for a leaking step
        how to fix it.
    covered : bool
        True for a step inside a search object: a private search's own event
        covers it, and a scikit-learn search is listed as leaking itself.
    data_derived : tuple of str
        The parameters the step's fit will read from the private data
        (``("data_norm",)`` for ``DPLogisticRegression(data_norm=None,
        classes=[0, 1])``), by their ``set_params`` names from the step;
        empty when every public parameter is given.
    """

    path: str
    estimator: object
    kind: str
    epsilon: float | None = None
    delta: float | None = None
    reason: str = ""
    covered: bool = False
    data_derived: tuple[str, ...] = ()


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


class _Declared:
    """The steps declared public: paths (str) and estimator objects."""

    def __init__(self, public):
        if isinstance(public, str) or not hasattr(public, "__iter__"):
            raise ValueError(
                "public must be a list of step names (as check_pipeline lists "
                f"them) or estimator objects, got {public!r}."
            )
        public = list(public)
        self.names = {item for item in public if isinstance(item, str)}
        self.objects = {id(item): item for item in public if not isinstance(item, str)}
        self.seen_names: set[str] = set()
        self.seen_objects: set[int] = set()

    def __contains__(self, entry) -> bool:
        name, step = entry
        found = False
        if name in self.names:
            self.seen_names.add(name)
            found = True
        if not isinstance(step, str) and id(step) in self.objects:
            self.seen_objects.add(id(step))
            found = True
        return found

    def check_all_found(self, paths) -> None:
        missing = sorted(self.names - self.seen_names)
        if missing:
            raise ValueError(
                f"public lists {missing[0]!r}, which is not a step of the "
                f"estimator; its steps are {paths}."
            )
        for key, item in self.objects.items():
            if key not in self.seen_objects:
                raise ValueError(
                    f"public holds {_estimator_name(item)} object {item!r}, "
                    "which is not a step of the estimator (objects are matched "
                    "by identity: pass the very object of the pipeline, or its "
                    "name)."
                )


_DECLARED_REASON = (
    "declared public by the caller (check_pipeline(..., public=...)): what "
    "its fit reads from the data is public"
)


def _walk(step, path, out, covered, public, in_public) -> str:
    """Append ``step`` and everything inside it to ``out``; return its kind."""
    at = len(out)
    name = path or "(root)"
    in_public = in_public or (name, step) in public
    children = _children(step)
    inner_covered = covered or isinstance(step, PrivateEstimatorMixin | BaseSearchCV)
    kinds = {
        _walk(
            child,
            f"{path}__{child_name}" if path else child_name,
            out,
            inner_covered,
            public,
            in_public,
        )
        for child_name, child in children
    }
    epsilon = delta = None
    reads: tuple[str, ...] = ()
    if isinstance(step, PrivateEstimatorMixin):
        epsilon, delta = _private_cost(step)
        # Inside a private meta-estimator, what a step reads is the
        # meta-estimator's to report (PrivateSearchCV names its trials').
        reads = () if covered else data_derived_params(step)
        kind = "leaking" if reads and not in_public else "private"
        if kind == "leaking":
            reason = _reads_reason(reads)
        elif reads:
            reason = (
                f"fits with differential privacy; {', '.join(reads)} read from "
                f"the data: {_DECLARED_REASON}"
            )
        else:
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
        kind = next(
            (k for k in ("leaking", "private", "public") if k in kinds), "stateless"
        )
        reason = {
            "leaking": "holds a step that learns from the data without privacy",
            "private": "every step that learns is private or declared public",
            "public": "every step that learns is declared public",
            "stateless": "no step learns from the data",
        }[kind]
    else:
        kind, reason = _leaf_kind(step)
        reads = data_derived_params(step) if kind == "leaking" else ()
    if kind == "leaking" and in_public:  # (a private step is never leaking here)
        kind, reason = "public", _DECLARED_REASON
    out.insert(
        at, StepPrivacy(name, step, kind, epsilon, delta, reason, covered, reads)
    )
    return kind


def _is_search(step) -> bool:
    """A search object: listed as one step, whatever it holds."""
    return isinstance(step, BaseSearchCV | PrivateEstimatorMixin)


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

    def _listed(self, kind) -> tuple[StepPrivacy, ...]:
        return tuple(
            s
            for s in self.steps
            if s.kind == kind
            and not s.covered
            and (not _children(s.estimator) or _is_search(s.estimator))
        )

    @property
    def leaking(self) -> tuple[StepPrivacy, ...]:
        """The leaves (and search objects) that learn from the data without
        privacy, including private steps that read a public parameter from
        the data."""
        return self._listed("leaking")

    @property
    def public(self) -> tuple[StepPrivacy, ...]:
        """The leaves that learn from the data and were declared public."""
        return self._listed("public")

    @property
    def private(self) -> tuple[StepPrivacy, ...]:
        """The private leaves (a private meta-estimator counts as one)."""
        return tuple(
            s
            for s in self._listed("private")
            if isinstance(s.estimator, PrivateEstimatorMixin)
        )

    @property
    def is_private(self) -> bool:
        """True when no step leaks: the fitted whole is differentially
        private (given that the steps declared public are)."""
        return not self.leaking

    @property
    def epsilon(self) -> float:
        """Sum of the epsilons the private skdp steps charge (basic
        sequential composition).

        The steps see the same rows, so their epsilons add up (a
        ``ColumnTransformer``'s columns are not disjoint *rows*). The shared
        budget's accountant may report a tighter total for the same spends.
        A private step that leaks a parameter read from the data still
        charges its epsilon and counts. ``nan`` when a private step has no
        epsilon.
        """
        values = [
            s.epsilon
            for s in self.steps
            if isinstance(s.estimator, PrivateEstimatorMixin) and not s.covered
        ]
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
        given = f", given {len(self.public)} public step(s)" if self.public else ""
        verdict = (
            f"private: yes{given} (total epsilon {self.epsilon:.4g} by basic "
            "composition)"
            if self.is_private
            else f"private: NO ({len(self.leaking)} leaking step(s))"
        )
        return "\n".join(lines + [verdict])


def _estimator_name(step) -> str:
    return step if isinstance(step, str) else type(step).__name__


def check_pipeline(
    estimator: BaseEstimator,
    *,
    public: Iterable[str | BaseEstimator] = (),
    warn: bool = True,
) -> PipelinePrivacyReport:
    """List every step of ``estimator`` as private, stateless or leaking.

    Walks ``Pipeline``, ``ColumnTransformer``, ``FeatureUnion`` and search
    objects, nested in any way, without fitting anything: the kinds come
    from the steps' types and parameters. A step inside a private
    meta-estimator (:class:`~skdp.model_selection.PrivateSearchCV`) is
    listed but covered by the meta-estimator's own event. A private skdp
    estimator whose fit will read a public parameter from the data
    (``DPLogisticRegression(data_norm=None)`` reads the largest row norm;
    ``classes=None``, ``bounds=None``, ``y_bounds=None`` likewise) is
    leaking, and its ``reason`` names the parameter and how to give it.

    Parameters
    ----------
    estimator : estimator
        An unfitted or fitted estimator, usually a composite one.
    public : list of str or estimators, default=()
        Steps the caller declares public: what their fit reads from the
        training data is public (a transformer that works row by row but
        does not say so in its tags; a step fitted beforehand on public data
        and wrapped in :class:`sklearn.frozen.FrozenEstimator`; a private
        step's bound that is public knowledge). Each entry is a step's path
        as the report lists it (``"preprocess__scale"``, ``"(root)"``) or
        the step object itself (matched by identity). A declared container
        covers its steps. Such steps are listed as ``"public"`` (a private
        one stays ``"private"``) and do not make the pipeline leak; skdp
        cannot check the claim. An entry that is no step raises
        ``ValueError``.
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
    >>> model = DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1])
    >>> report = check_pipeline(make_pipeline(Normalizer(), model))
    >>> print(report)
    step                  estimator             kind       epsilon
    (root)                Pipeline              private
    normalizer            Normalizer            stateless
    dplogisticregression  DPLogisticRegression  private    0.5
    private: yes (total epsilon 0.5 by basic composition)

    A bound left to the data leaks, and the report says which one:

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     report = check_pipeline(make_pipeline(
    ...         Normalizer(), DPLogisticRegression(classes=[0, 1])))
    >>> report.is_private, caught[0].category.__name__
    (False, 'PrivacyLeakWarning')
    >>> report.leaking[0].data_derived
    ('data_norm',)

    A step whose fit reads only public data can be declared public:

    >>> pipe = make_pipeline(StandardScaler(), model)
    >>> check_pipeline(pipe, warn=False).is_private
    False
    >>> print(check_pipeline(pipe, public=["standardscaler"]))
    step                  estimator             kind     epsilon
    (root)                Pipeline              private
    standardscaler        StandardScaler        public
    dplogisticregression  DPLogisticRegression  private  0.5
    private: yes, given 1 public step(s) (total epsilon 0.5 by basic composition)
    """
    declared = _Declared(public)
    found: list[StepPrivacy] = []
    _walk(estimator, "", found, covered=False, public=declared, in_public=False)
    declared.check_all_found([s.path for s in found])
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
