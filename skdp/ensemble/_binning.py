"""Bins for the tree ensembles: public schemas, or edges paid for with budget.

Every feature becomes a small integer code (its bin) before any tree sees
the data:

* a **categorical** feature has one bin per declared category, plus one for
  missing or undeclared values;
* a **numeric** feature has its declared ``[lower, upper]`` cut into a
  public fine grid of :data:`FINE_CELLS` cells; one Gaussian release of the
  fine grid's counts (all numeric features at once) gives private
  quantiles, and the feature's bins are the groups of consecutive cells
  between them (at most ``n_bins``), plus one for missing values (NaN).

The fine-grid counts are the only release about the data here; the edges
are post-processing of it. What the plan needs before the charge (how many
bins each feature can have, the sensitivities, the memory) depends on the
declared schema only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..utils._bounds import resolve_bounds
from ..utils._dask import as_row_blocks, is_dask_collection
from ..utils._numbers import non_number_cells, non_number_error, refuse_non_numbers
from ..utils._privacy import warn_data_derived
from ..utils._row_source import row_source
from ..utils._sklearn_compat import validate_data

__all__ = [
    "FINE_CELLS",
    "FeatureSchema",
    "check_dask_rows",
    "check_rows",
    "resolve_schema",
    "schema_params_read",
    "table",
    "edges_from_counts",
    "encode_block",
    "fine_counts_block",
]

#: Cells of the public fine grid over a numeric feature's declared range.
FINE_CELLS = 128
#: The scale of :func:`auto_bins`' rule.
AUTO_BINS_SCALE = 2.5


@dataclass(frozen=True)
class FeatureSchema:
    """The public description of the features, fixed before the charge.

    Attributes
    ----------
    categorical : tuple of bool
        Per feature.
    categories : tuple
        Per feature: the sorted array of declared categories (categorical),
        or ``None``.
    lower, upper : ndarray
        Declared bounds of the numeric features (NaN for categorical ones).
    n_bins : int
        Most value bins of a numeric feature (its missing bin aside).
    """

    categorical: tuple
    categories: tuple
    lower: np.ndarray
    upper: np.ndarray
    n_bins: int

    @property
    def n_features(self) -> int:
        return len(self.categorical)

    @property
    def numeric(self) -> list[int]:
        return [j for j, c in enumerate(self.categorical) if not c]

    def max_codes(self, j: int) -> int:
        """Most codes feature ``j`` can take: its value bins and a missing bin."""
        if self.categorical[j]:
            return len(self.categories[j]) + 1
        return self.n_bins + 1


# -- the schema from the input -------------------------------------------------


def table(estimator, X, *, reset: bool):
    """``X`` as a 2-D NumPy array (float, or object when it holds labels).

    A pandas DataFrame keeps its columns' values (categories as values);
    a dask collection is validated for its shape only (its values stay on
    the workers).
    """
    refuse_non_numbers(X, cells=False)  # object cells may be categories
    if is_dask_collection(X):
        if reset:
            columns = list(getattr(X, "columns", []))
            if columns and all(isinstance(c, str) for c in columns):
                estimator.feature_names_in_ = np.asarray(columns, dtype=object)
            elif hasattr(estimator, "feature_names_in_"):
                del estimator.feature_names_in_
        # A DataFrame becomes an array (counting its rows: n is public).
        X = as_row_blocks(X)[0]
        if reset:
            estimator.n_features_in_ = int(X.shape[1])
        elif X.shape[1] != estimator.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
                f"expecting {estimator.n_features_in_} features as input."
            )
        return X
    if hasattr(X, "dtypes") and hasattr(X, "columns"):
        validate_data(estimator, X, reset=reset, skip_check_array=True)
        numeric = all(dtype.kind in "biuf" for dtype in X.dtypes)
        if numeric:
            return validate_data(
                estimator,
                X,
                reset=False,
                dtype=np.float64,
                ensure_all_finite="allow-nan",
            )
        return np.column_stack([X[c].to_numpy(dtype=object) for c in X.columns])
    dtype = None
    array = np.asarray(X) if not hasattr(X, "tocsr") else X
    if getattr(array, "dtype", None) is None or array.dtype.kind not in "O":
        # float32 stays float32 (no copy): every block is read as float64,
        # exactly, where it is binned.
        dtype = [np.float64, np.float32]
    return validate_data(
        estimator, X, reset=reset, dtype=dtype, ensure_all_finite="allow-nan"
    )


def schema_params_read(estimator) -> tuple[str, ...]:
    """The public parameters a fit of ``estimator`` would read from the data.

    ``bounds`` (and ``classes`` or ``y_bounds``) when ``None``;
    ``categories`` when ``None`` and some feature is declared categorical
    (columns of strings are found only in the data). For
    :func:`skdp.check_pipeline`; reads the parameters only.
    """
    declared = getattr(estimator, "categorical_features", None)
    has_categorical = declared is not None and bool(np.any(np.asarray(declared)))
    return tuple(
        name
        for name in estimator._data_bound_params
        if getattr(estimator, name, None) is None
        and (name != "categories" or has_categorical)
    )


def resolve_schema(estimator, X, n_bins_cap: int, *, label_columns=None) -> tuple:
    """The public schema: categorical mask, categories and numeric bounds.

    The categorical features are those declared (``categorical_features``)
    and the columns whose dtype is not numeric (``label_columns``, read
    from a DataFrame's dtypes): never guessed from the values. Declared
    values are used as given; what is not declared is read from the data
    with a :class:`~skdp.exceptions.PrivacyLeakWarning` (never for dask
    input, whose values are not brought to the client).
    """
    n_features = int(X.shape[1])
    mask = np.zeros(n_features, dtype=bool)
    spec = estimator.categorical_features
    if spec is not None:
        spec = np.asarray(spec)
        if spec.dtype == bool:
            if spec.shape != (n_features,):
                raise ValueError(
                    f"categorical_features as a mask needs {n_features} entries, "
                    f"got {spec.shape[0]}."
                )
            mask = spec.copy()
        else:
            index = spec.astype(int)
            if np.any((index < 0) | (index >= n_features)):
                raise ValueError(
                    f"categorical_features holds indices outside [0, {n_features})."
                )
            mask[index] = True
    if label_columns is not None:
        mask |= np.asarray(label_columns, dtype=bool)
    categories: list = [None] * n_features
    declared = estimator.categories
    cat_index = np.flatnonzero(mask)
    if declared is not None:
        if len(declared) != cat_index.size:
            raise ValueError(
                f"categories needs one list per categorical feature "
                f"({cat_index.size}), got {len(declared)}."
            )
        for j, values in zip(cat_index, declared, strict=True):
            categories[j] = _sorted_categories(values, j)
    elif cat_index.size:
        if is_dask_collection(X):
            raise ValueError(
                "categories must be declared for dask input: they are not read "
                "from the data. Nothing was charged."
            )
        warn_data_derived(
            "categories",
            "the categories that occur in each categorical feature",
            "pass categories=[...] with the public list of each feature's categories",
        )
        for j in cat_index:
            values = [v for v in X[:, j].tolist() if not _is_missing(v)]
            categories[j] = _sorted_categories(values, j)
    lower = np.full(n_features, np.nan)
    upper = np.full(n_features, np.nan)
    numeric = np.flatnonzero(~mask)
    if numeric.size:
        if estimator.bounds is None and is_dask_collection(X):
            raise ValueError(
                "bounds must be declared for dask input: they are not read from "
                "the data. Nothing was charged."
            )
        bounds = estimator.bounds
        if is_dask_collection(X):
            values = np.zeros((0, numeric.size))
        elif bounds is None:
            values = _numbers(X[:, numeric])  # the ranges are read (warned)
        else:
            # Declared: only checked (an object table's numeric features must
            # hold numbers), a slice of rows at a time, never copied whole.
            if X.dtype == object:
                for start in range(0, X.shape[0], 65536):
                    _numbers(X[start : start + 65536, numeric])
            values = np.zeros((0, numeric.size))
        if bounds is not None:
            low, high = bounds
            low, high = (
                np.broadcast_to(low, n_features),
                np.broadcast_to(high, n_features),
            )
            bounds = (np.asarray(low, float)[numeric], np.asarray(high, float)[numeric])
        lo, hi = resolve_bounds(bounds, values, estimator=type(estimator).__name__)
        lower[numeric], upper[numeric] = lo, hi
    for j in cat_index:
        if len(categories[j]) > 2**15 - 2:
            raise ValueError(
                f"Feature {j} declares {len(categories[j])} categories, more than "
                f"the {2**15 - 2} a bin code holds."
            )
    return FeatureSchema(
        tuple(bool(m) for m in mask), tuple(categories), lower, upper, n_bins_cap
    )


def _numbers(values) -> np.ndarray:
    """The numeric features as floats, or an error that shows no value."""
    refuse_non_numbers(values, "A numeric feature of X")
    try:
        return values.astype(float)
    except (TypeError, ValueError) as error:
        raise _not_numbers(type(error)) from None


def _not_numbers(kind: type) -> Exception:
    """The refusal of a numeric feature that holds no number, showing no value.

    ``TypeError`` when a value is neither a string nor a number (float()
    argument must be a string or a number, as NumPy says), ``ValueError``
    when a string is not a number's.
    """
    what = (
        "values that are neither numbers nor strings (float() argument must be "
        "a string or a real number)"
        if kind is TypeError
        else "values that are not numbers"
    )
    return kind(
        f"A numeric feature of X holds {what}; declare the categorical features "
        "(categorical_features=...). Nothing was charged."
    )


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _sorted_categories(values, j) -> np.ndarray:
    values = list(values)
    if not values:
        raise ValueError(f"Feature {j} declares no category.")
    try:
        array = np.array(sorted(set(values)))
    except TypeError:
        array = np.array(sorted(set(values), key=repr), dtype=object)
    if array.dtype.kind not in "biufUSO":
        array = array.astype(object)
    return array


def check_rows(X) -> None:
    """Refuse input without rows (before the charge)."""
    if X.shape[0] < 1:
        raise ValueError(
            "Found array with 0 sample(s) while a minimum of 1 is required."
        )


#: Codes of what a numeric feature of a block holds that is no number, the
#: one the client names first the largest (as the in-memory check orders them).
_NOT_NUMBERS = {"text": 1, "neither": 2, "bytes": 3, "dates": 4}


def _readable_block(X, y, numeric, classes):
    """Public facts of one block: numeric columns are numbers; labels valid.

    Codes only (:data:`_NOT_NUMBERS`): the client words the refusal, so no
    worker task fails on a bad cell.
    """
    numbers = 0
    if X.dtype == object and numeric:
        cells = X[:, numeric]
        found = non_number_cells(cells)  # numpy would read them as numbers
        if found is not None:
            numbers = _NOT_NUMBERS[found]
        else:
            try:
                cells.astype(float)
            except ValueError:
                numbers = _NOT_NUMBERS["text"]
            except TypeError:
                numbers = _NOT_NUMBERS["neither"]
    y = np.asarray(y).ravel()
    if classes is not None:
        labels = bool(np.all(np.isin(y, classes)))
    else:
        labels = bool(np.all(np.isfinite(y.astype(float))))
    return np.array([numbers, int(labels)])


def check_dask_rows(X, y, schema: FeatureSchema, classes=None) -> None:
    """Refuse, before the charge, dask rows that the in-memory fit refuses.

    One pass over the blocks brings back two facts only: every numeric
    feature of an object ``X`` holds numbers, and every label is one of
    ``classes`` (classifiers) or every target is finite (``classes=None``).
    """
    facts = np.array(
        row_source(X, y).block_map(_readable_block, schema.numeric, classes)
    )
    numbers, labels = np.max(facts[:, 0]), np.all(facts[:, 1])
    if numbers >= _NOT_NUMBERS["bytes"]:
        found = "dates" if numbers == _NOT_NUMBERS["dates"] else "bytes"
        raise non_number_error(found, "A numeric feature of X")
    if numbers:
        raise _not_numbers(
            TypeError if numbers == _NOT_NUMBERS["neither"] else ValueError
        )
    if not labels and classes is not None:
        raise ValueError(
            f"y contains labels that are not in classes={list(classes)!r}; "
            "classes must list every possible label. Nothing was charged."
        )
    if not labels:
        raise ValueError("y must be finite (no NaN or infinity). Nothing was charged.")


def fine_cells(values: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """Fine-grid cell of each value in ``[0, FINE_CELLS)``; NaN in the last+1."""
    width = (upper - lower) / FINE_CELLS
    with np.errstate(invalid="ignore"):
        cells = np.floor((np.clip(values, lower, upper) - lower) / width)
    # The upper bound (and all clipped to it) is in the last cell, not missing.
    cells = np.clip(cells, 0, FINE_CELLS - 1)
    return np.nan_to_num(cells, nan=FINE_CELLS).astype(np.int64)


def fine_counts_block(X, _, schema: FeatureSchema):
    """Counts of one block's rows in every numeric feature's fine cells.

    Returns an int64 array of ``len(numeric) * (FINE_CELLS + 1)`` counts
    (the last cell of each feature counts its missing values). Each row is in
    exactly one cell per numeric feature.
    """
    out = []
    for j in schema.numeric:
        cells = fine_cells(X[:, j].astype(float), schema.lower[j], schema.upper[j])
        out.append(np.bincount(cells, minlength=FINE_CELLS + 1))
    if not out:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(out).astype(np.int64)


def edges_from_counts(noisy: np.ndarray, n_bins: int) -> np.ndarray:
    """Cell boundaries (indices in ``1..FINE_CELLS-1``) of at most ``n_bins`` bins.

    Post-processing of one feature's noisy fine-grid counts (missing cell
    excluded): the counts are floored at zero and accumulated, and the
    boundaries are the cells where the cumulative share crosses ``1 / n_bins,
    2 / n_bins, ...``; repeated boundaries merge bins. A feature whose noisy
    counts are all zero gets equal-width bins.
    """
    counts = np.maximum(np.asarray(noisy, dtype=float), 0.0)
    total = counts.sum()
    if not total > 0:
        cumulative = np.arange(1, FINE_CELLS + 1) / FINE_CELLS
    else:
        cumulative = np.cumsum(counts) / total
    targets = np.arange(1, n_bins) / n_bins
    cuts = np.searchsorted(cumulative, targets, side="left") + 1
    return np.unique(np.clip(cuts, 1, FINE_CELLS - 1))


def encode_block(X, _, schema: FeatureSchema, cuts: tuple) -> np.ndarray:
    """The bin code of every value of a block of rows (int16 array).

    Numeric feature ``j``: the number of boundaries ``cuts[j]`` at or below
    the value's fine cell, and ``n_bins`` (the missing bin) for NaN.
    Categorical feature ``j``: the index of the value among the declared
    categories, and ``len(categories)`` for a missing or undeclared value.
    """
    codes = np.empty(X.shape, dtype=np.int16)
    for j in range(schema.n_features):
        column = X[:, j]
        if schema.categorical[j]:
            codes[:, j] = _category_codes(column, schema.categories[j])
        else:
            values = column.astype(float)
            cells = fine_cells(values, schema.lower[j], schema.upper[j])
            bins = np.searchsorted(cuts[j], cells, side="right")
            codes[:, j] = np.where(cells == FINE_CELLS, schema.n_bins, bins)
    return codes


def _category_codes(column, categories) -> np.ndarray:
    missing = len(categories)
    out = np.full(column.shape[0], missing, dtype=np.int64)
    if column.dtype.kind in "biuf" and categories.dtype.kind in "biuf":
        values = column.astype(float)
        position = np.searchsorted(categories, values)
        inside = position < missing
        match = np.zeros(column.shape[0], dtype=bool)
        match[inside] = categories[position[inside]] == values[inside]
        out[match] = position[match]
        return out
    lookup = {value: i for i, value in enumerate(categories.tolist())}
    for i, value in enumerate(column.tolist()):
        try:
            out[i] = lookup.get(value, missing)
        except TypeError:  # an unhashable value is not a declared category
            out[i] = missing
    return out


def auto_bins(n_samples: int, n_features: int, mu: float, rounds: int, cap: int) -> int:
    """Value bins of a numeric feature for ``n_bins="auto"`` (public inputs).

    Each bin's gradient sum has noise of about ``sqrt(rounds * n_features)
    / mu`` for a total Gaussian-DP budget ``mu``, against a signal that
    grows with its rows, about ``n / bins``; the rule ``ceil(2.5 sqrt(n mu
    / (n_features sqrt(rounds))))``, at least 2 and at most ``cap``, keeps
    the bins as fine as the noise allows. (Chosen on validation splits of
    Adult and scikit-learn's breast cancer data; see
    ``benchmarks/trees_adult.py``.)

    Examples
    --------
    >>> from skdp.ensemble._binning import auto_bins
    >>> auto_bins(24000, 14, 0.27, 5, 32), auto_bins(426, 30, 0.27, 5, 32)
    (32, 4)
    """
    value = AUTO_BINS_SCALE * math.sqrt(
        n_samples * mu / (n_features * math.sqrt(rounds))
    )
    return int(min(max(math.ceil(value), 2), cap))
