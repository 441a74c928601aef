"""Loader for the UCI Adult data set shipped inside skdp."""

from __future__ import annotations

import csv
import gzip
import json
from importlib import resources
from typing import Any

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_adult"]

_DATA_PACKAGE = "skdp.datasets"
_DATA_DIRECTORY = "data"
_RAW_FILE = "adult_clean.csv.gz"
_DISCRETIZED_FILE = "adult_discretized.csv.gz"
_DISCRETIZED_DOMAIN_FILE = "adult_discretized_domain.json"
_README_FILE = "README.md"

_RAW_TARGET_COLUMN = "income"
_TARGET_NAME = "income>50K"

#: Eight columns of the discretized Adult data (``load_adult(discretized=True)``)
#: whose 56 3-way marginals make the synthetic-data workload of the demo, the
#: synthetic-data example and workload A of ``benchmarks/pmw_adult.py``.
ADULT_SYNTHESIS_COLUMNS = (
    "age",
    "workclass",
    "education-num",
    "marital-status",
    "occupation",
    "race",
    "sex",
    _TARGET_NAME,
)
_TARGET_CLASSES = ("<=50K", ">50K")
_RAW_NUMERIC_COLUMNS = frozenset(
    ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hr_per_week"]
)


def load_adult(
    *, as_frame: bool = False, discretized: bool = False, return_X_y: bool = False
) -> Bunch | tuple[Any, Any]:
    """Load the UCI Adult census income data set (binary classification).

    Two versions are shipped with skdp:

    - the raw version (default): 30,162 rows of the UCI training split
      without missing values, 14 features (6 integer, 8 categorical) and the
      target ``income>50K``;
    - the discretized version (``discretized=True``): all 48,842 rows of UCI
      Adult in the integer-coded form used to benchmark private synthetic
      data (private-pgm), 13 features and the target ``income>50K``, every
      column a code in ``0 .. domain[column] - 1``.

    =================   =========================   ========================
    Version             raw                         discretized
    =================   =========================   ========================
    Samples             30,162                      48,842
    Features            14 (6 integer, 8 categ.)    13 (integer codes)
    Positive class      24.9 %                      23.9 %
    =================   =========================   ========================

    Parameters
    ----------
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame, ``target`` a Series and
        ``frame`` a DataFrame holding both; this requires pandas (not a
        dependency of skdp). If False (the default, as in scikit-learn's
        loaders), NumPy arrays are returned and ``frame`` is None; see Notes
        for the encoding.

    discretized : bool, default=False
        If True, load the integer-coded benchmark version and add ``domain``
        to the result.

    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the following attributes.

        data : {ndarray, DataFrame} of shape (n_samples, n_features)
            The features. Raw version with ``as_frame=True``: integer columns
            as ``int64`` and categorical columns as pandas ``category`` dtype.
            Raw version with ``as_frame=False``: ``float64`` array in which
            each categorical column holds the position of the value in
            ``categories[column]``. Discretized version: ``int64`` codes
            (``as_frame=False``) or ``category`` columns of those codes.
        target : {ndarray, Series} of shape (n_samples,)
            ``int64``, 1 if income exceeds 50K USD a year, else 0. As a
            Series it is named ``"income>50K"``.
        frame : DataFrame of shape (n_samples, n_features + 1) or None
            Features and target together; None if ``as_frame=False``. In
            the discretized version every column of the frame, the target
            included, is a pandas ``category`` column whose categories are
            the column's whole published domain ``0 .. domain[c] - 1``, so
            :class:`~skdp.PMWSynthesizer` reads them as declared categories.
        feature_names : list of str
            Names of the feature columns, in file order.
        target_names : ndarray of shape (2,)
            Class labels, ``["<=50K", ">50K"]``: ``target_names[target]`` gives
            the label of each row.
        categories : dict of str to list
            Raw version: for each categorical feature, its categories in
            sorted order; the same lists are the categories of the pandas
            ``category`` columns and index the codes in the NumPy ``data``.
            Discretized version: for every column, the target included, the
            codes ``list(range(domain[c]))``: ready for
            ``PMWSynthesizer(categories=...)`` or ``OneHotEncoder``.
        domain : dict of str to int
            Discretized version only. Number of codes of each column,
            target included: every value of column ``c`` lies in
            ``0 .. domain[c] - 1``.
        DESCR : str
            Description of the data set, its sources and licence.

    (data, target) : tuple if ``return_X_y`` is True
        ``data`` and ``target`` as described above.

    Raises
    ------
    ImportError
        If ``as_frame=True`` and pandas is not installed.

    See Also
    --------
    sklearn.datasets.fetch_openml : Downloads Adult (``"adult"``) from OpenML.

    Notes
    -----
    **Public metadata.** The categories of the raw version are the sorted
    set of values present in the file, and the domain sizes of the
    discretized version come with the benchmark. Both are the published
    schema of the data set, not statistics of private rows, so a
    differentially private mechanism may take them as public bounds (for
    example the columns of a one-hot encoding or the cells of a marginal)
    without spending privacy budget. Numerical bounds such as the range of
    ``capital_gain`` are *not* provided: read from the data, they would leak.

    **NumPy output.** ``as_frame=False`` follows
    :func:`sklearn.datasets.fetch_openml` with ``parser="liac-arff"``: the
    raw features become one ``float64`` array (all values are integers below
    2**53, so exactly representable) with categorical columns ordinally
    encoded and the categories returned in ``categories``. This keeps the
    array numeric and usable without pandas; use
    ``categories[column][int(code)]`` to recover a label. Unlike
    ``fetch_openml``, the target is returned as 0/1 integers, not labels.

    **Source.** UCI Machine Learning Repository, Adult data set (Becker and
    Kohavi, 1996), licensed CC BY 4.0, https://doi.org/10.24432/C5XW20. The
    discretized version is ``data/adult.csv`` of the private-pgm repository
    (MIT licence). The two versions are not row-aligned. ``DESCR`` and
    ``skdp/datasets/data/README.md`` give the details.

    References
    ----------
    .. [1] B. Becker and R. Kohavi. "Adult". UCI Machine Learning Repository,
       1996. https://doi.org/10.24432/C5XW20
    .. [2] R. Kohavi. "Scaling Up the Accuracy of Naive-Bayes Classifiers: a
       Decision-Tree Hybrid". KDD 1996.
    .. [3] R. McKenna, D. Sheldon and G. Miklau. "Graphical-model based
       estimation and inference for differential privacy". ICML 2019.
       https://github.com/ryan112358/private-pgm

    Examples
    --------
    >>> from skdp.datasets import load_adult
    >>> adult = load_adult()  # NumPy arrays; no pandas needed
    >>> adult.data.shape, adult.categories["sex"]
    ((30162, 14), ['Female', 'Male'])
    >>> round(float(adult.target.mean()), 3)
    0.249
    >>> X, y = load_adult(discretized=True, return_X_y=True)
    >>> X.shape, y.shape
    ((48842, 13), (48842,))
    >>> load_adult(discretized=True).domain["age"]
    85

    With pandas installed, ``as_frame=True`` gives typed columns:

    >>> frame = load_adult(as_frame=True).frame  # doctest: +SKIP
    >>> frame["sex"].cat.categories.tolist()  # doctest: +SKIP
    ['Female', 'Male']
    """
    for name, value in [
        ("as_frame", as_frame),
        ("discretized", discretized),
        ("return_X_y", return_X_y),
    ]:
        if not isinstance(value, bool | np.bool_):
            raise TypeError(
                f"The {name!r} parameter of load_adult must be an instance of "
                f"bool. Got {value!r} instead."
            )

    pandas = _import_pandas() if as_frame else None
    if discretized:
        bunch = _load_discretized(pandas)
    else:
        bunch = _load_raw(pandas)
    bunch.target_names = np.array(_TARGET_CLASSES, dtype=object)
    bunch.DESCR = _data_path(_README_FILE).read_text(encoding="utf-8")
    if return_X_y:
        return bunch.data, bunch.target
    return bunch


def _load_raw(pandas):
    header, columns = _read_csv_columns(_RAW_FILE)
    labels = columns.pop(header.index(_RAW_TARGET_COLUMN))
    feature_names = [name for name in header if name != _RAW_TARGET_COLUMN]

    unexpected = set(labels) - set(_TARGET_CLASSES)
    if unexpected:
        raise ValueError(f"Unexpected income labels in {_RAW_FILE}: {unexpected}")
    target = (np.asarray(labels) == _TARGET_CLASSES[1]).astype(np.int64)

    features = {}
    categories = {}
    for name, values in zip(feature_names, columns):
        if name in _RAW_NUMERIC_COLUMNS:
            features[name] = np.asarray(values, dtype=np.int64)
        else:
            # np.unique sorts the values: codes index the sorted categories.
            uniques, codes = np.unique(np.asarray(values), return_inverse=True)
            categories[name] = uniques.tolist()
            features[name] = codes.astype(np.int64)

    if pandas is None:
        data = np.column_stack([features[name] for name in feature_names])
        frame = None
        data = data.astype(np.float64)
    else:
        frame_columns = {
            name: (
                pandas.Categorical.from_codes(codes, categories=categories[name])
                if name in categories
                else codes
            )
            for name, codes in features.items()
        }
        frame_columns[_TARGET_NAME] = target
        frame = pandas.DataFrame(frame_columns)
        data = frame[feature_names]
        target = frame[_TARGET_NAME]
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=feature_names,
        categories=categories,
    )


def _load_discretized(pandas):
    header, columns = _read_csv_columns(_DISCRETIZED_FILE)
    domain = json.loads(
        _data_path(_DISCRETIZED_DOMAIN_FILE).read_text(encoding="utf-8")
    )
    if list(domain) != header:
        raise ValueError(
            f"Columns of {_DISCRETIZED_FILE} {header} do not match the domain "
            f"{list(domain)}."
        )
    codes = np.column_stack([np.asarray(values, dtype=np.int64) for values in columns])
    target_index = header.index(_TARGET_NAME)
    feature_names = [name for name in header if name != _TARGET_NAME]
    data = np.delete(codes, target_index, axis=1)
    target = codes[:, target_index]

    domain = {name: int(size) for name, size in domain.items()}
    categories = {name: list(range(size)) for name, size in domain.items()}
    if pandas is None:
        frame = None
    else:
        # The published domain is the dtype: every code 0 .. domain - 1 is a
        # category even when no row has it.
        frame = pandas.DataFrame(
            {
                name: pandas.Categorical.from_codes(
                    codes[:, index], categories=categories[name]
                )
                for index, name in enumerate(header)
            }
        )
        data = frame[feature_names]
        target = pandas.Series(target, name=_TARGET_NAME)
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=feature_names,
        domain=domain,
        categories=categories,
    )


def _data_path(filename):
    return resources.files(_DATA_PACKAGE).joinpath(_DATA_DIRECTORY, filename)


def _read_csv_columns(filename):
    """Return the header and the columns (lists of str) of a gzipped CSV."""
    with (
        _data_path(filename).open("rb") as compressed,
        gzip.open(compressed, "rt", encoding="utf-8", newline="") as text,
    ):
        reader = csv.reader(text)
        header = next(reader)
        columns = [list(column) for column in zip(*reader)]
    return header, columns


def _import_pandas():
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            "load_adult with as_frame=True requires pandas, which is not "
            "installed. Install pandas or pass as_frame=False to get NumPy arrays."
        ) from exc
    return pandas
