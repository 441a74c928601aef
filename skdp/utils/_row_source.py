"""One data path: rows in memory (dense or CSR) or in a dask collection.

Every private estimator reads its data through sums over rows: gradients
and Hessian products, moments, counts and histograms, naive Bayes' class
sums, k-means' assignment sums, PCA's Gram matrix. A :class:`RowSource`
holds the rows wherever they are and answers one question,
:meth:`RowSource.block_sum`: the sum over the rows of a *block function*
applied to consecutive blocks of rows. An estimator writes its maths once,
as block functions, and runs unchanged on a NumPy array, a sparse matrix or
a dask array or DataFrame on a cluster.

The blocks are canonical: ``block_rows`` consecutive rows each (a public
function of ``n``, :func:`canonical_block_rows`), whatever the storage,
and their results are added by the same tree of fan-in
:data:`TREE_FAN_IN`, each node adding its inputs left to right. Block
functions see NumPy (or CSR) blocks of the same rows in the same layout in
both backends, so a dask fit computes *bitwise* the same sums as the
in-memory fit, and therefore the same model for the same seed. The
rounding of such a sum is bounded by ``summation_terms`` in
``skdp.linear_model._newton``. A pandas DataFrame, in memory or on dask,
is read as the NumPy blocks of ``frame.to_numpy()`` (what dask's
``to_dask_array`` makes of each partition).

Integer results (counts) are exact, so they do not depend on the blocking
or the tree: a caller summing large integer tables may pick larger blocks
(``block_rows``) and a smaller fan-in (``fan_in``), from public quantities,
to bound the memory of the partial sums.

On dask, only the block functions run on the workers; only their sums
(never rows) come back to the client, where the plan is made, the budget
charged and the noise drawn. Results that are not sums (extremes, label
sets) are combined by the same tree with :meth:`RowSource.block_reduce`;
per-row results (k-means' labels) are :meth:`RowSource.map_rows`, a lazy
dask array on dask.

Every block function runs with one BLAS thread, in both backends
(:func:`~skdp.utils._threads.one_blas_thread`, skdp's thread policy): the
client takes it around every pass, and every dask task that runs blocks
takes it on its worker, whatever the worker's own setting. A product's
rounding then never depends on how many threads the process or the worker
has (and the blocks run in parallel on dask anyway).

:meth:`RowSource.subsample_sum` is a sum over a subsample of the rows
(DP-SGD's Poisson batches): the client draws the subsample; its rows, cut
into consecutive chunks, are gathered from their blocks (on the workers,
for dask) and each chunk is handed to the function whole, so memory and
dask compute bitwise the same chunk results and add them by the same tree.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._dask import as_row_blocks, is_dask_collection
from ._threads import blas_single_thread, one_blas_thread

__all__ = [
    "MIN_BLOCK_ROWS",
    "PreparedSubsample",
    "SUBSAMPLE_CALL_ROWS",
    "TREE_FAN_IN",
    "RowSource",
    "canonical_block_rows",
    "row_source",
    "tree_reduce",
    "tree_sum",
]

#: Fewest rows of a canonical block.
MIN_BLOCK_ROWS = 1024
#: Fan-in of the tree that adds the blocks' results.
TREE_FAN_IN = 8
#: Rows of a chunk of a subsample (:meth:`RowSource.subsample_sum`): at
#: most this many selected rows are handed to one call, which bounds its
#: temporaries.
SUBSAMPLE_CALL_ROWS = 16 * MIN_BLOCK_ROWS
#: Numbers of ``X`` gathered and prepared together by
#: :meth:`RowSource.prepared_subsamples` (2 MiB of float64: a group's
#: passes stay in cache), and the fewest rows of such a group.
PREPARE_ENTRIES = 2**18
MIN_PREPARE_ROWS = 256


def canonical_block_rows(n_samples: int) -> int:
    """``B = max(1024, ceil(sqrt(n)))`` rows per block (public: ``n`` only).

    With ``k = ceil(n / B)`` blocks a sum's rounding involves at most ``B``
    terms inside a block and ``log_8 k`` tree levels between blocks, instead
    of ``n`` terms added in a row.

    Examples
    --------
    >>> from skdp.utils._row_source import canonical_block_rows
    >>> canonical_block_rows(10), canonical_block_rows(10**8)
    (1024, 10000)
    """
    n = max(1, int(n_samples))
    return max(MIN_BLOCK_ROWS, math.isqrt(n - 1) + 1)


def add_all(*parts):
    """Add ``parts`` left to right (element-wise through tuples), in float64.

    Integer parts (counts) stay integers, so they are exact.
    """
    first = parts[0]
    if isinstance(first, tuple):
        return tuple(add_all(*items) for items in zip(*parts, strict=True))
    if isinstance(first, np.ndarray | np.generic) and first.dtype.kind in "biu":
        total = np.array(first, dtype=np.int64, copy=True)
    else:
        total = np.array(first, dtype=np.float64, copy=True)
    for part in parts[1:]:
        total = total + part
    return total


def tree_sum(parts, fan_in: int = TREE_FAN_IN):
    """Add the values ``parts`` in a tree of fan-in ``fan_in`` (in memory).

    :func:`tree_reduce` with ``combine=add_all``.

    The tree groups ``fan_in`` consecutive values at each level (the last
    group may be shorter) until one value is left. ``parts`` may be an
    iterator: the values are added as they come, in the same tree, so at
    most ``fan_in`` of them per level are held at once.

    Examples
    --------
    >>> from skdp.utils._row_source import tree_sum
    >>> int(tree_sum(iter(range(20)), fan_in=3))
    190
    """
    return tree_reduce(parts, add_all, fan_in)


def tree_reduce(parts, combine: Callable[..., Any], fan_in: int = TREE_FAN_IN):
    """Combine ``parts`` in the canonical tree: ``combine(*group)`` per node.

    The tree groups ``fan_in`` consecutive values at each level (the last
    group may be shorter) until one value is left; ``parts`` may be an
    iterator, consumed as the values come (at most ``fan_in`` held per
    level).
    """
    if fan_in < 2:
        raise ValueError(f"fan_in must be at least 2, got {fan_in!r}.")
    levels: list[list] = []  # the values waiting at each level
    pushed: list[int] = []  # how many values each level has received
    for part in parts:
        _push(levels, pushed, 0, part, combine, fan_in)
    if not levels:
        raise ValueError("the tree needs at least one value.")
    level = 0
    while pushed[level] > 1:  # the last, shorter group of each level
        if levels[level]:
            group, levels[level] = levels[level], []
            _push(levels, pushed, level + 1, combine(*group), combine, fan_in)
        level += 1
    return levels[level][0]


def _push(levels, pushed, level, value, combine, fan_in) -> None:
    # A loop, not a recursive closure: a closure that calls itself is a
    # reference cycle, which would keep every tree's values alive until the
    # garbage collector runs.
    while True:
        if level == len(levels):
            levels.append([])
            pushed.append(0)
        levels[level].append(value)
        pushed[level] += 1
        if len(levels[level]) < fan_in:
            return
        group, levels[level] = levels[level], []
        value, level = combine(*group), level + 1


def _chunks(indices: np.ndarray):
    """Consecutive chunks of at most SUBSAMPLE_CALL_ROWS selected rows (one if none)."""
    if indices.size == 0:
        return [indices]
    return [
        indices[i : i + SUBSAMPLE_CALL_ROWS]
        for i in range(0, indices.size, SUBSAMPLE_CALL_ROWS)
    ]


class PreparedSubsample:
    """One subsample's prepared rows, chunk by chunk.

    Made by :meth:`RowSource.prepared_subsamples`.
    ``sum(func, *args)`` is ``sum over chunks of func(*chunk, *args)``,
    added by the canonical tree (:func:`tree_sum`).
    """

    def __init__(self, chunks) -> None:
        self._chunks = chunks

    def sum(self, func: Callable[..., Any], *args: Any):
        with one_blas_thread():
            parts = [func(*chunk, *args) for chunk in self._chunks]
        return tree_sum(parts)


class _DaskSubsample:
    """A subsample of a dask source: each chunk prepared in the task that sums it."""

    def __init__(self, source, indices, prepare, args) -> None:
        self._source, self._indices = source, indices
        self._prepare, self._args = prepare, args

    def sum(self, func: Callable[..., Any], *args: Any):
        return self._source.subsample_sum(
            _prepare_then, self._indices, self._prepare, self._args, func, args
        )


def _prepare_then(X, y, prepare, prepare_args, func, args):
    # A dask chunk: the same prepared rows an in-memory source slices.
    return func(*prepare(X, y, *prepare_args), *args)


class RowSource:
    """Rows of ``X`` (and targets ``y``), read through block sums.

    Build one with :func:`row_source`. Attributes are public facts (what a
    plan may read); the rows themselves are reached only through
    :meth:`block_sum`.

    Attributes
    ----------
    n_samples, n_features : int
    block_rows : int
        Rows per canonical block (:func:`canonical_block_rows`).
    is_dask : bool
        The rows are in a dask collection (workers compute the blocks).
    is_sparse : bool
        Blocks are CSR matrices.
    is_frame : bool
        ``X`` is an in-memory pandas DataFrame (blocks: ``to_numpy()`` of
        its rows).
    dtype : numpy.dtype
        Of ``X`` (of ``X.to_numpy()`` for a DataFrame).
    """

    is_dask = False

    def __init__(self, X, y=None, *, block_rows: int | None = None) -> None:
        self.X = X
        self.y = y
        self.n_samples = int(X.shape[0])
        self.n_features = int(X.shape[1]) if X.ndim > 1 else 1
        self.block_rows = (
            canonical_block_rows(self.n_samples) if block_rows is None else block_rows
        )
        self.is_sparse = sp.issparse(X)
        self.is_frame = _is_frame(X)
        self.dtype = X.iloc[:0].to_numpy().dtype if self.is_frame else X.dtype

    @property
    def n_blocks(self) -> int:
        return max(1, -(-self.n_samples // self.block_rows))

    def _blocks(self):
        for start in range(0, max(self.n_samples, 1), self.block_rows):
            stop = min(start + self.block_rows, self.n_samples)
            X = (
                self.X.iloc[start:stop].to_numpy()
                if self.is_frame
                else self.X[start:stop]
            )
            y = None if self.y is None else self.y[start:stop]
            yield X, y

    def block_sum(
        self, func: Callable[..., Any], *args: Any, fan_in: int = TREE_FAN_IN
    ) -> Any:
        """``sum over blocks of func(X_block, y_block, *args)``.

        ``func`` returns a NumPy array or scalar, or a tuple of them (added
        element-wise); integer results stay integers. The blocks' results
        are added by the canonical tree (:func:`tree_sum`), of fan-in
        ``fan_in`` (at least 2; the default is the canonical one, which
        float sums keep, so that they are the same on dask). In memory the
        blocks are computed one at a time and added as they come.
        """
        return self.block_reduce(func, add_all, *args, fan_in=fan_in)

    def block_reduce(
        self,
        func: Callable[..., Any],
        combine: Callable[..., Any],
        *args: Any,
        fan_in: int = TREE_FAN_IN,
    ) -> Any:
        """``func(X_block, y_block, *args)`` per block, combined by the tree.

        Each node of the canonical tree (:func:`tree_reduce`) returns
        ``combine(*its inputs)``, left to right: :meth:`block_sum` is
        ``combine=add_all``; extremes or label sets use their own. On dask
        ``combine`` runs on the workers and must be picklable (a module
        level function). In memory the blocks are computed one at a time.
        """
        with one_blas_thread():
            blocks = (_call_on_block(func, X, y, args) for X, y in self._blocks())
            return tree_reduce(blocks, combine, fan_in)

    def block_map(self, func: Callable[..., Any], *args: Any) -> list:
        """``[func(X_block, y_block, *args) for each block]``, in order.

        For results that are not sums (per-block maxima, say); they come
        back to the client, so keep them small.
        """
        with one_blas_thread():
            return [_call_on_block(func, X, y, args) for X, y in self._blocks()]

    def map_rows(
        self,
        func: Callable[..., Any],
        *args: Any,
        dtype=np.float64,
        width: int | None = None,
    ):
        """``func(X_block, y_block, *args)`` per block, one result per row.

        The blocks' results (1-D, or 2-D with ``width`` columns) joined in
        row order: a NumPy array here, a lazy dask array (computed when the
        caller asks; ``persist`` it to keep it on the workers) on dask, so
        per-row results never gather in the client unasked. The lazy blocks run
        whenever the caller computes them, each with one BLAS thread as in
        every pass.
        """
        out = None
        start = 0
        with one_blas_thread():
            for X, y in self._blocks():
                part = np.asarray(_call_on_block(func, X, y, args))
                if out is None:  # one array of the result, filled in place
                    out = np.empty((self.n_samples, *part.shape[1:]), dtype=dtype)
                out[start : start + part.shape[0]] = part
                start += part.shape[0]
        return out

    def subsample_sum(self, func: Callable[..., Any], indices, *args: Any):
        """``sum over chunks of func(X[chunk], y[chunk], *args)``: a subsample's sum.

        ``indices`` are sorted distinct row numbers (a subsample, say). They
        are cut into consecutive chunks of at most
        :data:`SUBSAMPLE_CALL_ROWS` (one empty chunk when there are none);
        ``func`` receives each chunk's rows whole (C-ordered NumPy, or CSR,
        in the order of ``indices``), and the chunks' results are added by
        the canonical tree (:func:`tree_sum`). A dask source gathers a
        chunk's rows from their blocks on the workers and calls ``func``
        there on the same array, so the sum is bitwise the in-memory one,
        whatever ``func`` computes; only the total comes back.
        """
        indices = np.asarray(indices, dtype=np.int64)
        with one_blas_thread():
            parts = [func(*self._gather(chunk), *args) for chunk in _chunks(indices)]
        return tree_sum(parts)

    def prepared_subsamples(
        self, prepare: Callable[..., tuple], batches, *args: Any
    ) -> Iterator[PreparedSubsample]:
        """Several subsamples' rows, each row prepared once: one per batch, lazily.

        A faster form of :meth:`subsample_sum` for a loop over many small
        subsamples (DP-SGD's steps) whose function has a part that depends
        on the row alone. ``prepare(X_rows, y_rows, *args)`` returns a tuple
        of arrays (or CSR matrices) with one entry per row along their first
        axis, each row's entry a function of that row alone (bounded rows,
        targets, row norms); ``X_rows`` is the source's own copy of the
        gathered rows, which ``prepare`` may overwrite. The iterator yields,
        for each of ``batches`` (sorted distinct row numbers) in order, a
        :class:`PreparedSubsample`
        whose ``sum(func, *more)`` is ``sum over chunks of
        func(*prepared_chunk, *more)``, the chunks those of
        :meth:`subsample_sum`, added by the same tree: bitwise
        ``subsample_sum`` of ``func(*prepare(X, y, *args), *more)``.

        In memory, consecutive batches' chunks are gathered and prepared
        together, about :data:`PREPARE_ENTRIES` numbers of ``X`` at a time
        (a chunk larger than that alone), so a step pays one slice where it
        paid a gather and a preparation; one group of prepared rows (two
        where a batch straddles them) is held at a time. A dask source
        prepares each chunk where its rows are, in the task that sums it.
        """
        batches = [np.asarray(b, dtype=np.int64) for b in batches]
        # Groups of about PREPARE_ENTRIES numbers stay in the CPU's cache
        # through the preparation's passes; larger ones cost more per row.
        group_rows = max(MIN_PREPARE_ROWS, PREPARE_ENTRIES // max(self.n_features, 1))
        group_rows = min(group_rows, SUBSAMPLE_CALL_ROWS)
        groups: list[list[np.ndarray]] = [[]]
        held = 0
        layout = []  # per batch: its chunks as (group, start, stop)
        for batch in batches:
            pieces = []
            for chunk in _chunks(batch):
                if held + chunk.size > group_rows and groups[-1]:
                    groups.append([])
                    held = 0
                pieces.append((len(groups) - 1, held, held + chunk.size))
                groups[-1].append(chunk)
                held += chunk.size
            layout.append(pieces)
        prepared: dict[int, tuple] = {}
        for pieces in layout:
            first = pieces[0][0]
            for done in [g for g in prepared if g < first]:
                del prepared[done]
            for g, _, _ in pieces:
                if g not in prepared:
                    rows = self._gather(np.concatenate(groups[g]))
                    with one_blas_thread():
                        prepared[g] = tuple(prepare(*rows, *args))
            yield PreparedSubsample(
                [tuple(x[a:b] for x in prepared[g]) for g, a, b in pieces]
            )

    def _gather(self, indices: np.ndarray):
        """The rows ``indices`` of ``X`` and ``y``, C-ordered (or CSR)."""
        X = self.X[indices]
        X = X if sp.issparse(X) else np.ascontiguousarray(X)
        y = None if self.y is None else np.ascontiguousarray(self.y[indices])
        return X, y

    def rows(self):
        """All of ``X`` (and ``y``) in this process: in-memory sources only."""
        return self.X, self.y


class DaskRowSource(RowSource):
    """Rows in a dask array or DataFrame, blocked canonically on the workers.

    The dask chunks are *groups* of ``8**k`` consecutive canonical blocks
    (``k`` the largest with a group no longer than the input's chunks), so
    one task computes many blocks. A group starts at a multiple of its
    size, so its blocks' first ``k`` tree levels are exactly nodes of the
    canonical tree: the task adds them there (:func:`_group_reduce`), and
    the client's tree continues from those nodes. The results are bitwise
    those of the in-memory source, with ``8**k`` times fewer tasks.
    """

    is_dask = True

    def __init__(self, X, y=None, *, block_rows: int | None = None) -> None:
        X, y = as_row_blocks(X, y)
        if any(math.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()  # the number of rows is public
        n = int(X.shape[0])
        rows = canonical_block_rows(n) if block_rows is None else block_rows
        widest = max(X.chunks[0], default=0)
        n_blocks = max(1, -(-n // rows))
        group = 1
        while group * TREE_FAN_IN * rows <= widest and group < n_blocks:
            group *= TREE_FAN_IN
        self.group_blocks = group
        self.group_rows = group * rows
        chunks = {0: self.group_rows, 1: -1} if X.ndim == 2 else {0: self.group_rows}
        X = X.rechunk(chunks)
        if y is not None:
            y = y.rechunk({0: X.chunks[0]} if y.ndim == 1 else {0: X.chunks[0], 1: -1})
        super().__init__(X, y, block_rows=rows)
        self.is_sparse = False

    def _delayed_blocks(self):
        """The groups' ``(X, y)`` as delayed objects, in row order."""
        # Unoptimised block graphs share their keys, so a y computed from X
        # runs X's tasks once.
        xs = self.X.to_delayed(optimize_graph=self.y is None).ravel()
        if self.y is None:
            return [(x, None) for x in xs]
        ys = self.y.to_delayed(optimize_graph=False).ravel()
        return list(zip(xs, ys, strict=True))

    def _group_levels(self, fan_in: int) -> int:
        """Tree levels every group adds on its worker: the most ``j`` with
        ``fan_in**j`` dividing the group's blocks, and no more than the
        whole tree has."""
        total, count = 0, self.n_blocks
        while count > 1:
            count, total = -(-count // fan_in), total + 1
        levels = 0
        while levels < total and self.group_blocks % fan_in ** (levels + 1) == 0:
            levels += 1
        return levels

    def block_reduce(
        self,
        func: Callable[..., Any],
        combine: Callable[..., Any],
        *args: Any,
        fan_in: int = TREE_FAN_IN,
    ) -> Any:
        import dask

        levels = self._group_levels(fan_in)
        span = fan_in**levels  # blocks under one node a group returns
        reduce_group = dask.delayed(_group_reduce, pure=True)
        pick = dask.delayed(operator.getitem, pure=True)
        parts = []
        for (x, y), rows in zip(self._delayed_blocks(), self.X.chunks[0], strict=True):
            nodes = -(-max(1, -(-rows // self.block_rows)) // span)
            task = reduce_group(
                func, combine, x, y, args, self.block_rows, fan_in, levels
            )
            parts += [pick(task, i) for i in range(nodes)]
        node = dask.delayed(combine, pure=True)
        while len(parts) > 1:
            parts = [node(*parts[i : i + fan_in]) for i in range(0, len(parts), fan_in)]
        with one_blas_thread():
            (total,) = dask.compute(parts[0])
        return total

    def block_map(self, func: Callable[..., Any], *args: Any) -> list:
        import dask

        call = dask.delayed(_group_map, pure=True)
        parts = [
            call(func, x, y, args, self.block_rows) for x, y in self._delayed_blocks()
        ]
        with one_blas_thread():
            groups = dask.compute(*parts)
        return [result for group in groups for result in group]

    def map_rows(
        self,
        func: Callable[..., Any],
        *args: Any,
        dtype=np.float64,
        width: int | None = None,
    ):
        import dask
        import dask.array as da

        call = dask.delayed(_group_rows, pure=True)
        sizes = self.X.chunks[0]
        trailing = () if width is None else (int(width),)
        parts = [
            da.from_delayed(
                call(func, x, y, args, self.block_rows),
                shape=(size, *trailing),
                dtype=dtype,
            )
            for (x, y), size in zip(self._delayed_blocks(), sizes, strict=True)
        ]
        return da.concatenate(parts).astype(dtype)

    def subsample_sum(self, func: Callable[..., Any], indices, *args: Any):
        import dask

        indices = np.asarray(indices, dtype=np.int64)
        blocks = self._delayed_blocks()
        take = dask.delayed(_take_rows, pure=True)
        call = dask.delayed(_call_on_pieces, pure=True)
        parts = []
        for chunk in _chunks(indices):
            # The chunk's rows, block by block, in the order of `indices`.
            owners = chunk // self.group_rows
            pieces = []
            for b in np.unique(owners) if chunk.size else [0]:
                local = chunk[owners == b] - int(b) * self.group_rows
                x, y = blocks[int(b)]
                pieces.append(take(x, y, local))
            parts.append(call(func, pieces, args))
        add = dask.delayed(add_all, pure=True)
        while len(parts) > 1:
            parts = [
                add(*parts[i : i + TREE_FAN_IN])
                for i in range(0, len(parts), TREE_FAN_IN)
            ]
        with one_blas_thread():
            (total,) = dask.compute(parts[0])
        return total

    def prepared_subsamples(
        self, prepare: Callable[..., tuple], batches, *args: Any
    ) -> Iterator[_DaskSubsample]:
        for batch in batches:
            yield _DaskSubsample(self, np.asarray(batch, dtype=np.int64), prepare, args)

    def rows(self):
        raise TypeError(
            "This estimator step needs all rows in one process, which a dask "
            "collection is not brought to (that would move the data to the "
            "client)."
        )


def _is_frame(X) -> bool:
    """A pandas DataFrame (recognised without importing pandas)."""
    return hasattr(X, "iloc") and hasattr(X, "columns") and hasattr(X, "dtypes")


def _call_on_block(func, X, y, args):
    # Both backends hand block functions C-ordered NumPy blocks (or CSR) of
    # the same rows, so they compute bitwise the same results.
    if not sp.issparse(X):
        X = np.ascontiguousarray(X)
    if y is not None and not sp.issparse(y):
        y = np.ascontiguousarray(y)
    return func(X, y, *args)


def _split_group(X, y, block_rows):
    """A group's canonical blocks (one empty block for an empty group)."""
    for start in range(0, max(X.shape[0], 1), block_rows):
        stop = start + block_rows
        yield X[start:stop], None if y is None else y[start:stop]


@blas_single_thread
def _group_reduce(func, combine, X, y, args, block_rows, fan_in, levels):
    # On a worker: the group's blocks, then exactly `levels` levels of the
    # canonical tree over them (a lone last input is combined alone, as the
    # whole tree does); returns the nodes of that level, in order.
    parts = [
        _call_on_block(func, a, b, args) for a, b in _split_group(X, y, block_rows)
    ]
    for _ in range(levels):
        parts = [combine(*parts[i : i + fan_in]) for i in range(0, len(parts), fan_in)]
    return parts


@blas_single_thread
def _group_map(func, X, y, args, block_rows):
    return [_call_on_block(func, a, b, args) for a, b in _split_group(X, y, block_rows)]


def _group_rows(func, X, y, args, block_rows):
    parts = _group_map(func, X, y, args, block_rows)
    return np.concatenate(parts)


def _take_rows(X, y, chosen):
    # The selected rows of one block (on its worker).
    X = np.asarray(X)[chosen]
    return X, None if y is None else np.asarray(y)[chosen]


@blas_single_thread
def _call_on_pieces(func, pieces, args):
    # One chunk of a subsample: its rows as one C-ordered array, the same
    # array an in-memory source hands ``func``.
    X = np.ascontiguousarray(np.concatenate([x for x, _ in pieces]))
    y = None
    if pieces[0][1] is not None:
        y = np.ascontiguousarray(np.concatenate([y for _, y in pieces]))
    return func(X, y, *args)


def row_source(X, y=None, *, block_rows: int | None = None) -> RowSource:
    """The :class:`RowSource` of ``X`` (and ``y``): in memory or on dask.

    ``X`` is an already validated 2-D (or 1-D) NumPy array, a sparse matrix
    (read as CSR), a pandas DataFrame (read as the NumPy blocks of
    ``X.to_numpy()``, as dask reads a dask DataFrame's partitions), or a
    dask array / DataFrame; ``y`` likewise or ``None``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.utils._row_source import row_source
    >>> rows = row_source(np.arange(6.0).reshape(3, 2))
    >>> rows.block_sum(lambda X, y: X.sum(axis=0))
    array([6., 9.])
    """
    if is_dask_collection(X) or is_dask_collection(y):
        return DaskRowSource(X, y, block_rows=block_rows)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    return RowSource(X, y, block_rows=block_rows)
