"""Which steps of a pipeline learn from the data, and whether privately.

A pipeline is private only if every step that learns from the training data
does so with differential privacy. :func:`step_privacy` sorts an estimator
into one of three kinds:

* ``"private"``: a private skdp estimator (it plans and charges its fit);
* ``"stateless"``: its fit learns nothing from the values of the data —
  scikit-learn declares it stateless (``requires_fit=False``: ``Normalizer``,
  ``Binarizer``, ``FunctionTransformer``, the hashers), or its state comes
  from public parameters and the number of columns only (``OneHotEncoder``
  and ``OrdinalEncoder`` with declared ``categories`` and no frequency
  thresholds, ``PolynomialFeatures``), or ``"passthrough"``/``"drop"``;
  a ``Pipeline`` or ``ColumnTransformer`` made only of such steps;
* ``"leaking"``: anything else (for example ``StandardScaler``, whose mean
  and variance come from the data without noise).

A ``FunctionTransformer`` counts as stateless, which is only right when its
function transforms each row on its own (a function that centres the
columns, say, mixes the rows and is not private); skdp cannot check that.
"""

from __future__ import annotations

from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, PolynomialFeatures
from sklearn.utils import get_tags

from ..base import PrivateEstimatorMixin

__all__ = ["step_privacy"]


def _declared_encoder(step) -> bool:
    return (
        isinstance(step, OneHotEncoder | OrdinalEncoder)
        and not isinstance(step.categories, str)
        and getattr(step, "min_frequency", None) is None
        and getattr(step, "max_categories", None) is None
        and getattr(step, "handle_unknown", "error") != "infrequent_if_exist"
    )


def step_privacy(step) -> str:
    """``"private"``, ``"stateless"`` or ``"leaking"`` (see the module notes).

    Parameters
    ----------
    step : estimator, "passthrough", "drop" or None

    Returns
    -------
    kind : str

    Examples
    --------
    >>> from sklearn.preprocessing import Normalizer, StandardScaler
    >>> from skdp.linear_model import DPLogisticRegression
    >>> from skdp.model_selection._steps import step_privacy
    >>> [step_privacy(s) for s in (Normalizer(), StandardScaler(),
    ...                            DPLogisticRegression())]
    ['stateless', 'leaking', 'private']
    """
    if step is None or (isinstance(step, str) and step in ("passthrough", "drop")):
        return "stateless"
    if isinstance(step, PrivateEstimatorMixin):
        return "private"
    if isinstance(step, Pipeline):
        kinds = {step_privacy(s) for _, s in step.steps}
        return "stateless" if kinds <= {"stateless"} else "leaking"
    if isinstance(step, ColumnTransformer):
        parts = [t for _, t, _ in step.transformers] + [step.remainder]
        kinds = {step_privacy(t) for t in parts}
        return "stateless" if kinds <= {"stateless"} else "leaking"
    if _declared_encoder(step) or isinstance(step, PolynomialFeatures):
        return "stateless"
    try:
        tags = get_tags(step)
    except Exception:  # not a scikit-learn estimator
        return "leaking"
    if not tags.requires_fit and hasattr(step, "transform"):
        return "stateless"
    return "leaking"
