"""PMWSynthesizer on dask arrays and DataFrames: marginal counts by map-reduce.

MWEM reads the data only through marginal counts: the one-way marginals it
measures first, the candidates' marginals its selection scores, and the
measured ones. On a dask collection the fit runs in the client exactly as
in memory; the workers only count.

1. **Before the charge**, :func:`dask_schema` reads the schema from the
   collection's metadata (columns, dtypes, number of rows), never from its
   values: every column needs a *declared* domain (``categories``,
   ``bounds``, or a pandas ``Categorical`` dtype with known categories).
   Reading a domain from the data, as the in-memory fit does with a
   :class:`~skdp.exceptions.PrivacyLeakWarning`, is refused: on data large
   enough to need a cluster the schema is known, the leak buys nothing, and
   it would cost a pass whose result (the categories) is published in the
   synthetic rows. Then :class:`DaskCodes` runs one validation pass that
   returns only a boolean per column and check (a missing value where none
   is declared, a non-number or an infinity in a binned column, a value the
   encoding of a categorical column cannot look up), and raises the
   in-memory fit's errors. The pass is skipped when the dtypes already
   rule every problem out (integer columns).
2. **After the charge**, :meth:`DaskCodes.count` runs one map-reduce pass:
   each block is encoded with the same :func:`encode_columns` as in memory
   and ``np.bincount`` counts the maximal cliques among all the marginals
   the loop may read; the blocks' counts are summed in a tree and only the
   totals (integers, exact in float64) reach the client, which derives
   every sub-marginal by summing axes. The MWEM loop then runs unchanged in
   the client, noise included. Given the same seed the fitted model is the
   one the in-memory fit of the same rows gives, bit for bit.

A worker failure during the counting pass (after the charge) surfaces as
:class:`~skdp.exceptions.ChargedFitError`: the spend stands, nothing is
released.
"""

from __future__ import annotations

import math

import numpy as np

from ..utils._dask import as_row_blocks, tree_total
from ._domain import encode_columns, is_missing

__all__ = ["DaskCodes", "dask_schema", "maximal_cliques"]

#: Cells of the maximal cliques counted in one pass (the in-memory fit keeps
#: as many, ``_loop._KEPT_CELLS``). Each block's counts are this many
#: float64 (256 MiB at the cap).
MAX_COUNTED_CELLS = 2**25
#: Bytes of partial counts one task of the tree sum may hold: its fan-in is
#: chosen so that its inputs and output fit (at least 2, at most 8).
_TREE_BYTES = 2**29

# Checks of the validation pass, one row of flags each.
_MISSING, _NOT_NUMBER, _INFINITE, _UNHASHABLE = range(4)


def _known_categories(dtype) -> bool:
    if getattr(dtype, "name", None) != "category":
        return False
    categories = getattr(dtype, "categories", None)
    return categories is not None and "__UNKNOWN_CATEGORIES__" not in list(categories)


def dask_schema(estimator, X):
    """Names, empty columns of the right dtypes, pandas dtypes and ``n``.

    Reads metadata only, and sets ``n_features_in_`` (and
    ``feature_names_in_`` for a DataFrame). Raises before the charge when a
    column has no declared domain.
    """
    from ..utils._sklearn_compat import validate_data
    from ._domain import _is_pair, _lookup
    from ._pmw import _column_values, _is_dataframe

    frame = _is_dataframe(X)
    if frame:
        meta = X._meta
        validate_data(estimator, meta, skip_check_array=True, reset=True)
        names = list(meta.columns)
        dtypes = list(meta.dtypes)
        columns = [_column_values(meta.iloc[:, j]) for j in range(meta.shape[1])]
        n_samples = None  # counted by the validation pass
    else:
        if X.ndim != 2:
            raise ValueError(
                f"Expected a 2-D dask array, got {X.ndim} dimension(s); reshape "
                "your data (one row per individual)."
            )
        estimator.n_features_in_ = int(X.shape[1])
        estimator.__dict__.pop("feature_names_in_", None)
        names = list(range(X.shape[1]))
        dtypes = None
        columns = [np.empty(0, dtype=X.dtype) for _ in names]
        n_samples = X.shape[0] if not math.isnan(X.shape[0]) else None
    if len(names) < 1:
        raise ValueError(
            "Found array with 0 feature(s) while a minimum of 1 is required."
        )
    if any(np.asarray(values).dtype.kind == "c" for values in columns):
        raise ValueError("Complex data not supported.")
    undeclared = []
    bounds = estimator.bounds
    for position, name in enumerate(names):
        declared = _lookup(estimator.categories, name, position) is not None
        if dtypes is not None:
            declared = declared or _known_categories(dtypes[position])
        if isinstance(bounds, dict | list):
            declared = declared or _lookup(bounds, name, position) is not None
        else:
            declared = declared or _is_pair(bounds)
        if not declared:
            undeclared.append(name)
    if undeclared:
        raise ValueError(
            f"Columns {undeclared!r} have no declared domain. On a dask "
            "collection every column needs public categories (categories=... or "
            "a pandas Categorical dtype with known categories) or bounds "
            "(bounds=...): the in-memory fit may read them from the data with "
            "a PrivacyLeakWarning, but the dask fit does not, since the values "
            "read would be published in the synthetic rows. Nothing was charged."
        )
    return names, columns, dtypes, n_samples


def _block_columns(block, frame):
    if frame:
        from ._pmw import _column_values

        return [_column_values(block.iloc[:, j]) for j in range(block.shape[1])]
    return [block[:, j] for j in range(block.shape[1])]


def _check_block(block, _, domains, frame):
    """Per-column flags (counts of offending values) and the row count."""
    columns = _block_columns(block, frame)
    flags = np.zeros((4, len(domains)), dtype=np.int64)
    for j, (domain, values) in enumerate(zip(domains, columns, strict=True)):
        absent = is_missing(values)
        if absent.any() and not domain.missing:
            flags[_MISSING, j] = 1
        if domain.categories is not None:
            # The counting pass (after the charge) encodes these values: try
            # the same encoding now. Integer arrays and pandas Categoricals
            # hold hashable values only.
            categorical = frame and block.dtypes.iloc[j].name == "category"
            if not (categorical or domain.vectorized(values)):
                try:
                    domain.encode(values)
                except TypeError:
                    flags[_UNHASHABLE, j] = 1
            continue
        present = values[~absent] if absent.any() else values
        try:
            numbers = np.asarray(present, dtype=float)
        except (TypeError, ValueError):
            flags[_NOT_NUMBER, j] = 1
            continue
        if not np.all(np.isfinite(numbers)):
            flags[_INFINITE, j] = 1
    return flags, np.int64(len(columns[0]) if columns else 0)


def _count_block(block, _, domains, frame, cliques, sizes):
    """Counts of every clique in ``block``, concatenated (flat, row-major)."""
    codes = encode_columns(_block_columns(block, frame), domains)
    parts = []
    for clique in cliques:
        shape = [sizes[a] for a in clique]
        flat = np.ravel_multi_index(tuple(codes[:, a] for a in clique), shape)
        parts.append(np.bincount(flat, minlength=math.prod(shape)))
    return np.concatenate(parts)  # int64; summed as float64 (exact)


def _blocks(X, frame):
    if frame:
        return list(X.to_delayed())
    X, _ = as_row_blocks(X)
    return list(X.to_delayed().ravel())


def _tree_sum(func, blocks, *args, split_every=8):
    """``sum(func(block, None, *args))`` over ``blocks``, tree-reduced."""
    import dask

    parts = [dask.delayed(func)(block, None, *args) for block in blocks]
    return tree_total(parts, split_every=split_every)


def maximal_cliques(cliques):
    """The cliques not contained in another one (order kept).

    Examples
    --------
    >>> from skdp.synthesis._dask_counts import maximal_cliques
    >>> maximal_cliques([(0,), (1,), (0, 1), (1, 2)])
    [(0, 1), (1, 2)]
    """
    unique = list(dict.fromkeys(tuple(c) for c in cliques))
    sets = [frozenset(c) for c in unique]
    return [
        clique
        for clique, s in zip(unique, sets, strict=True)
        if not any(s < other for other in sets)
    ]


def _refuse_checks(flags, domains):
    from ._domain import _refuse_missing, _refuse_unhashable

    for j, domain in enumerate(domains):
        if flags[_MISSING, j]:
            _refuse_missing(domain.name)
        if flags[_UNHASHABLE, j]:
            _refuse_unhashable(domain.name)
        if flags[_NOT_NUMBER, j]:
            raise ValueError(
                f"Column {domain.name!r} is numeric (it has bounds or a numeric "
                "dtype) but holds values that are not numbers; declare its "
                "categories instead, or clean the column."
            )
        if flags[_INFINITE, j]:
            raise ValueError(
                f"Column {domain.name!r} holds infinite values, which the "
                "synthesizer does not model; clip them to the column's bounds or "
                "drop them."
            )


class DaskCodes:
    """Stands for the encoded rows of a dask collection in the MWEM loop.

    Holds the collection, its domains and its (public) shape; validates the
    values on construction (before the charge) and counts marginals with
    :meth:`count` (after it). :func:`~skdp.synthesis._loop.run_mwem` reads
    it through ``shape`` and :meth:`counts` only.
    """

    def __init__(self, X, domains, n_samples):
        self.X = X
        self.domains = domains
        self.frame = not hasattr(X, "chunks")
        self.sizes = tuple(domain.size for domain in domains)
        self._counted = None
        needs_check = n_samples is None or any(
            _needs_check(self.X, j, domain, self.frame)
            for j, domain in enumerate(domains)
        )
        if needs_check:
            flags, n_rows = _tree_sum(
                _check_block, _blocks(X, self.frame), domains, self.frame
            )
            _refuse_checks(np.asarray(flags), domains)
            n_samples = int(n_rows)
        if n_samples < 1:
            raise ValueError(
                "Found array with 0 sample(s) while a minimum of 1 is required."
            )
        self.shape = (int(n_samples), len(domains))

    def check_cells(self, cliques):
        """Refuse (before the charge) a pass whose counts would be too large."""
        cells = sum(
            math.prod(self.sizes[a] for a in c) for c in maximal_cliques(cliques)
        )
        if cells > MAX_COUNTED_CELLS:
            raise ValueError(
                f"The marginals the fit needs have {cells} cells in all, more than "
                f"the {MAX_COUNTED_CELLS} a dask fit counts in one pass; use a "
                "smaller workload, fewer bins or categories, or a lower "
                "max_model_size. Nothing was charged."
            )

    def count(self, cliques):
        """One pass over the data: the counts of every clique in ``cliques``."""
        maximal = maximal_cliques(cliques)
        cells = sum(math.prod(self.sizes[a] for a in c) for c in maximal)
        fan_in = int(min(8, max(2, _TREE_BYTES // (8 * cells) - 1)))
        total = _tree_sum(
            _count_block,
            _blocks(self.X, self.frame),
            self.domains,
            self.frame,
            maximal,
            self.sizes,
            split_every=fan_in,
        )
        self._counted = {}
        start = 0
        for clique in maximal:
            shape = tuple(self.sizes[a] for a in clique)
            size = math.prod(shape)
            self._counted[clique] = np.asarray(total[start : start + size]).reshape(
                shape
            )
            start += size
        return self

    def counts(self, clique):
        """Counts of ``clique`` (float64, axes in ``clique``'s order)."""
        clique = tuple(clique)
        if clique in self._counted:
            return self._counted[clique].copy()
        wanted = set(clique)
        for source, table in self._counted.items():
            if wanted <= set(source):
                drop = tuple(i for i, a in enumerate(source) if a not in wanted)
                kept = [a for a in source if a in wanted]
                summed = table.sum(axis=drop) if drop else table
                order = [kept.index(a) for a in clique]
                return np.ascontiguousarray(np.transpose(summed, order))
        raise KeyError(f"marginal {clique!r} was not counted")


def _needs_check(X, position, domain, frame) -> bool:
    """Whether the values of a column can break the in-memory fit's checks."""
    dtype = X._meta.dtypes.iloc[position] if frame else X.dtype
    # Plain numpy integers and booleans hold no missing value and no
    # infinity; pandas' nullable and categorical dtypes may hold missing ones.
    return not (isinstance(dtype, np.dtype) and dtype.kind in "biu")
