"""A fit's input checks before the charge: one pass, in memory and on dask.

Every private fit refuses bad input before it charges its budget
(:mod:`skdp.base`). What can be checked from metadata (shape, dtype,
declared bounds and classes) is checked in the client; what needs the
rows (non-finite values, labels outside the declared classes, and, in
memory only, bounds the user chose to read from the data) is read by
**one** :meth:`~skdp.utils._row_source.RowSource.block_reduce` pass,
:func:`read_facts`, whose result holds public facts only (counts of
offending values, the label set or the extremes the user asked for). The
same block function runs on a NumPy array and on a dask collection's
blocks, so both refuse the same inputs with the same messages.

:func:`fit_rows` is the estimators' entry: in memory it is scikit-learn's
``validate_data`` (dtype, shape, feature names) minus the finiteness
check, which the pass makes; on dask it makes the same checks from the
collection's metadata and never brings rows to the client.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn import config_context
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import assert_all_finite
from sklearn.utils.multiclass import check_classification_targets

from ._dask import as_row_blocks, is_dask_collection
from ._numbers import non_number_cells, non_number_error, refuse_non_numbers
from ._row_source import RowSource, row_source
from ._sklearn_compat import validate_data

__all__ = [
    "FactsRequest",
    "RowFacts",
    "check_finite",
    "fit_rows",
    "known_rows",
    "read_facts",
]


@dataclass(frozen=True)
class FactsRequest:
    """What :func:`read_facts` reads besides the non-finite counts (public).

    Attributes
    ----------
    extremes : bool
        Each column's smallest and largest finite value (``bounds=None``).
    row_norm : callable or None
        ``row_norm(X_block)``, the norms of a block's rows, to read the
        largest (``data_norm=None``); a module-level function.
    classes : ndarray or None
        Declared classes: count the labels of ``y`` outside them.
    labels : bool
        The set of labels of ``y`` (``classes=None``).
    targets : bool
        Check that ``y`` holds classification targets (scikit-learn's
        ``check_classification_targets``, block by block).
    numeric_error : str or None
        When set, a value that cannot be converted to float raises
        ``ValueError(numeric_error + numpy's message)``; otherwise numpy's
        own error (scikit-learn's ``validate_data`` raises it unchanged).
    """

    extremes: bool = False
    row_norm: Callable[[np.ndarray], np.ndarray] | None = None
    classes: np.ndarray | None = None
    labels: bool = False
    targets: bool = False
    numeric_error: str | None = None


@dataclass(frozen=True)
class RowFacts:
    """What one pass over the rows found (see :class:`FactsRequest`).

    ``x_nan``, ``x_inf``, ``y_nan``, ``y_inf`` count non-finite entries;
    ``low``/``high`` are the columns' finite extremes (``+inf``/``-inf``
    for a column without a finite value), ``row_norm`` the largest row norm,
    ``labels`` the sorted label set and ``outside`` the number of labels
    outside the declared classes, each ``None`` (or 0) unless requested.
    """

    x_nan: int
    x_inf: int
    y_nan: int
    y_inf: int
    low: np.ndarray | None
    high: np.ndarray | None
    row_norm: float | None
    labels: np.ndarray | None
    outside: int


def _as_float(X, prefix):
    if getattr(X, "dtype", None) is not None and X.dtype.kind in "SmM":
        refuse_non_numbers(X)
    if prefix is None:
        return np.asarray(X, dtype=np.float64)
    try:
        return np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{prefix}{error}") from None


def _y_nonfinite(y) -> tuple[int, int]:
    if y.dtype.kind == "f":
        return int(np.count_nonzero(np.isnan(y))), int(np.count_nonzero(np.isinf(y)))
    if y.dtype.kind == "O":
        return int(np.count_nonzero(y != y)), 0  # NaN is the one x != x
    return 0, 0


def _block_facts(X, y, request: FactsRequest):
    """The facts of one block: a tuple :func:`_merge_facts` combines."""
    # Non-finite values are what this pass looks for: no warnings about them.
    with np.errstate(all="ignore"):
        return _read_block(X, y, request)


def _read_block(X, y, request: FactsRequest):
    # Dates or bytes in object cells (numpy would read them as numbers): a
    # fact the client words, so that no worker task fails on them.
    found = non_number_cells(X) if X.dtype.kind == "O" else None
    if found is not None:
        return _non_number_block(X, request, found)
    X = _as_float(X, request.numeric_error)
    nan = np.isnan(X)
    finite = np.isfinite(X)
    counts = [int(np.count_nonzero(nan)), int(X.size - np.count_nonzero(finite))]
    counts[1] -= counts[0]
    low = high = norm = labels = None
    outside = 0
    if request.extremes:
        low = np.min(np.where(finite, X, np.inf), axis=0, initial=np.inf)
        high = np.max(np.where(finite, X, -np.inf), axis=0, initial=-np.inf)
    if request.row_norm is not None:
        norm = float(request.row_norm(X).max(initial=0.0))
    if y is not None:
        y = np.ravel(y)
        y_nan, y_inf = _y_nonfinite(y)
        counts += [y_nan, y_inf]
        if not (y_nan or y_inf):
            if request.targets:
                check_classification_targets(y)
            if request.labels:
                labels = np.unique(y)
            if request.classes is not None:
                outside = int(np.count_nonzero(~np.isin(y, request.classes)))
    else:
        counts += [0, 0]
    return np.array(counts, dtype=np.int64), low, high, norm, labels, outside, None


def _non_number_block(X, request: FactsRequest, found: str):
    """The facts of a block holding dates or bytes: ``found``, and nothing."""
    low = high = norm = None
    if request.extremes:
        low, high = np.full(X.shape[1:], np.inf), np.full(X.shape[1:], -np.inf)
    if request.row_norm is not None:
        norm = 0.0
    return np.zeros(4, dtype=np.int64), low, high, norm, None, 0, found


def _merge_facts(*parts):
    """Combine block facts: add the counts, take extremes, join label sets."""
    counts = parts[0][0].copy()
    low, high, norm, labels, outside, found = parts[0][1:]
    for part in parts[1:]:
        counts = counts + part[0]
        if low is not None:
            low, high = np.minimum(low, part[1]), np.maximum(high, part[2])
        if norm is not None:
            norm = max(norm, part[3])
        if part[4] is not None:
            labels = part[4] if labels is None else np.union1d(labels, part[4])
        outside += part[5]
        if part[6] is not None and found != "dates":  # dates are named first
            found = part[6]
    return counts, low, high, norm, labels, outside, found


def read_facts(rows: RowSource, request: FactsRequest = FactsRequest()) -> RowFacts:
    """One pass over ``rows``: the facts a fit checks before its charge.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.utils._row_source import row_source
    >>> from skdp.utils._row_checks import FactsRequest, read_facts
    >>> facts = read_facts(row_source(np.array([[1.0, np.nan], [np.inf, 2.0]])),
    ...                    FactsRequest(extremes=True))
    >>> facts.x_nan, facts.x_inf, facts.low.tolist(), facts.high.tolist()
    (1, 1, [1.0, 2.0], [1.0, 2.0])
    """
    counts, low, high, norm, labels, outside, found = rows.block_reduce(
        _block_facts, _merge_facts, request
    )
    error = non_number_error(found, "X")
    if error is not None:
        raise error
    x_nan, x_inf, y_nan, y_inf = (int(c) for c in counts)
    return RowFacts(x_nan, x_inf, y_nan, y_inf, low, high, norm, labels, outside)


def check_finite(facts: RowFacts, estimator: str, y_dtype=None) -> None:
    """Refuse non-finite ``X`` or ``y`` with scikit-learn's messages.

    The message is the one ``validate_data`` gives an in-memory array with
    the same offending values (a NaN before an infinity, ``X`` before
    ``y``), made by scikit-learn itself on a one-value witness, whatever
    ``assume_finite`` says: skdp never fits non-finite data.
    """
    for name, nan, inf, dtype in (
        ("X", facts.x_nan, facts.x_inf, np.dtype(np.float64)),
        ("y", facts.y_nan, facts.y_inf, y_dtype),
    ):
        if nan or inf:
            witness = np.array([np.nan if nan else np.inf], dtype=dtype)
            with config_context(assume_finite=False):
                assert_all_finite(witness, estimator_name=estimator, input_name=name)
            # (A witness of another dtype would pass; never reached.)
            raise ValueError(f"Input {name} contains NaN or infinity.")


def _refuse_shape(X, name: str) -> None:
    if X.ndim == 0 or X.ndim == 1:
        kind = "scalar" if X.ndim == 0 else "1D"
        raise ValueError(
            f"Expected 2D array, got {kind} array instead (a dask collection, "
            "not shown).\nReshape your data either using array.reshape(-1, 1) "
            "if your data has a single feature or array.reshape(1, -1) if it "
            "contains a single sample."
        )
    raise ValueError(f"Found array with dim {X.ndim}. {name} expected <= 2.")


def known_rows(X):
    """A dask array whose row chunks are known (one pass if they are not)."""
    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()  # the number of rows is public
    return X


def _dask_fit_rows(estimator, X, y, supervised: bool) -> RowSource:
    """The dask half of :func:`fit_rows`: metadata checks only."""
    name = type(estimator).__name__
    if supervised and y is None:
        raise ValueError(
            f"This {name} estimator requires y to be passed, but the target y is None."
        )
    columns = X._meta if hasattr(X, "columns") and hasattr(X, "_meta") else None
    X = as_row_blocks(X)[0]
    if X.ndim != 2:
        _refuse_shape(X, name)
    if X.dtype.kind == "c":
        raise ValueError("Complex data not supported (a dask collection, not shown).")
    refuse_non_numbers(columns if columns is not None else X)
    X = known_rows(X)
    n_samples, n_features = (int(s) for s in X.shape)
    for count, what in ((n_samples, "sample"), (n_features, "feature")):
        if count < 1:
            raise ValueError(
                f"Found array with {count} {what}(s) (shape={X.shape}) while a "
                f"minimum of 1 is required by {name}."
            )
    if y is not None:
        y = known_rows(as_row_blocks(y)[0])
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected. "
                "Please change the shape of y to (n_samples, ), for example "
                "using ravel().",
                DataConversionWarning,
                stacklevel=4,
            )
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(
                f"y should be a 1d array, got an array of shape {y.shape} instead."
            )
        if y.shape[0] != n_samples:
            raise ValueError(
                "Found input variables with inconsistent numbers of samples: "
                f"{[n_samples, int(y.shape[0])]!r}"
            )
        if y.dtype.kind == "c":
            raise ValueError(
                "Complex data not supported (a dask collection, not shown)."
            )
    # n_features_in_ and feature_names_in_, by scikit-learn, from metadata.
    meta = columns if columns is not None else np.empty((0, n_features))
    validate_data(estimator, meta, skip_check_array=True, reset=True)
    return row_source(X, y)


def fit_rows(estimator, X, y=None, *, supervised: bool = False) -> RowSource:
    """The validated rows of a fit as a :class:`~skdp.utils._row_source.RowSource`.

    Checks what scikit-learn's ``validate_data(estimator, X[, y],
    dtype=np.float64)`` checks, except the values' finiteness, which the
    caller reads with :func:`read_facts` (one pass, the same in memory and
    on dask) and refuses with :func:`check_finite`. Sets
    ``n_features_in_`` and ``feature_names_in_``.

    * **In memory**: ``validate_data`` itself (a float64 array, copied only
      when ``X`` is not float64 already).
    * **On dask** (``X`` or ``y`` a dask collection): the same checks from
      metadata, with scikit-learn's messages (without the values, which are
      on the workers); a DataFrame's columns become feature names as in
      memory. Values that are not numbers are refused by the pass, where
      every block is converted to float64 as ``validate_data`` converts the
      whole array.

    Parameters
    ----------
    estimator : estimator instance
    X : array-like, DataFrame, or a dask array or DataFrame
    y : array-like, Series, dask array or Series, or None
    supervised : bool, default=False
        ``y`` is the fit's target (validated, and required).

    Returns
    -------
    rows : RowSource
    """
    if is_dask_collection(X) or is_dask_collection(y):
        return _dask_fit_rows(estimator, X, y if supervised else None, supervised)
    if supervised:
        X, y = validate_data(estimator, X, y, dtype=np.float64, ensure_all_finite=False)
        return row_source(X, y)
    X = validate_data(estimator, X, dtype=np.float64, ensure_all_finite=False)
    return row_source(X)
