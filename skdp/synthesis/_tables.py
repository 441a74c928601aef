"""Sums over the axes of the models' tables, in probability and in log space.

A model's tables have one axis per attribute, and the estimation sums them
down to marginals thousands of times a fit. ``ndarray.sum`` is slow when
the summed axes are short inner ones (a binary attribute last: numpy runs
one tiny reduction per output cell), so :func:`sum_axes` merges adjacent
axes and sums each run of summed axes in the layout that reads memory in
long contiguous stretches. :func:`logsumexp` shifts by the table's largest
value, which is exact unless a whole output slice lies ~575 nats below it,
and then falls back to a shift per slice.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "expand_axes",
    "log_reduce_groups",
    "logsumexp",
    "marginalize_log",
    "marginals_of",
    "sum_axes",
    "sum_to",
]

# Summing axis ``m`` of a table seen as ``(A, m, B)``: numpy's own reduction
# when each of the A blocks holds long rows (B large) or when m is long and
# contiguous (B == 1); a loop over the m slices when they are few and
# single; pairwise halving of the m axis otherwise (contiguous adds).
_LONG_ROWS = 64
_FEW_SLICES = 16
_SHORT_ROWS = 8
# Below this, a sum of exponentials shifted by the table's maximum may have
# lost precision to underflow: the slice is shifted by its own maximum.
_TINY = 1e-250


def expand_axes(values: np.ndarray, attrs: tuple, target: tuple) -> np.ndarray:
    """View ``values`` (axes ``attrs``) broadcastable to the axes ``target``."""
    order = sorted(range(len(attrs)), key=lambda i: target.index(attrs[i]))
    arr = np.transpose(values, order) if order != list(range(len(attrs))) else values
    shape = [1] * len(target)
    present = sorted(attrs, key=target.index)
    for a, n in zip(present, arr.shape, strict=True):
        shape[target.index(a)] = n
    return arr.reshape(shape)


def _sum_middle(blocks: np.ndarray) -> np.ndarray:
    """``blocks.sum(axis=1)`` for a C-contiguous ``(A, m, B)`` array."""
    _, m, b = blocks.shape
    if b >= _LONG_ROWS or (b == 1 and m > _FEW_SLICES):
        return blocks.sum(axis=1)
    if b == 1:
        out = blocks[:, 0, 0].copy()
        for i in range(1, m):
            out += blocks[:, i, 0]
        return out[:, np.newaxis]
    if b >= _SHORT_ROWS:
        return np.einsum("amb->ab", blocks)
    while blocks.shape[1] > 1:
        m = blocks.shape[1]
        half = m // 2
        summed = blocks[:, :half, :] + blocks[:, half : 2 * half, :]
        if m % 2:
            summed[:, 0, :] += blocks[:, 2 * half, :]
        blocks = summed
    return blocks[:, 0, :]


def sum_axes(table: np.ndarray, axes: tuple) -> np.ndarray:
    """``table.sum(axis=axes)``, at the speed of a sum over the first axis.

    Adjacent axes that are both summed (or both kept) are merged; then the
    longest run of summed axes is summed out first, in the layout that adds
    long contiguous stretches (:func:`_sum_middle`), and so on. The result
    holds the same sums as ``ndarray.sum``, added in another order (equal
    to rounding).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.synthesis._tables import sum_axes
    >>> table = np.arange(24.0).reshape(2, 3, 2, 2)
    >>> bool(np.array_equal(sum_axes(table, (1, 3)), table.sum(axis=(1, 3))))
    True
    """
    axes = tuple(sorted({a % table.ndim for a in axes}))
    if not axes:
        return table
    kept_shape = [n for i, n in enumerate(table.shape) if i not in axes]
    table = np.ascontiguousarray(table)
    sizes, summed = [], []
    for i, n in enumerate(table.shape):
        if sizes and summed[-1] == (i in axes):
            sizes[-1] *= n
        else:
            sizes.append(n)
            summed.append(i in axes)
    while any(summed):
        k = max((i for i in range(len(sizes)) if summed[i]), key=sizes.__getitem__)
        before, after = math.prod(sizes[:k]), math.prod(sizes[k + 1 :])
        table = _sum_middle(table.reshape(before, sizes[k], after))
        del sizes[k], summed[k]
        if 0 < k < len(sizes) and not summed[k - 1] and not summed[k]:
            sizes[k - 1] *= sizes.pop(k)
            del summed[k]
        table = table.reshape(sizes)
    return table.reshape(kept_shape)


def sum_to(table: np.ndarray, attrs: tuple, keep: tuple) -> np.ndarray:
    """Sum ``table`` (axes ``attrs``) down to the attributes ``keep``, in its order."""
    out = sum_axes(table, tuple(i for i, a in enumerate(attrs) if a not in keep))
    left = [a for a in attrs if a in keep]
    order = [left.index(a) for a in keep]
    return out if order == sorted(order) else np.transpose(out, order)


def marginals_of(table: np.ndarray, attrs: tuple, targets) -> dict:
    """The marginals ``targets`` (subsets of ``attrs``) of one table, sharing sums.

    Summing a large table down to each target separately reads the whole
    table once per target. Here the attributes no target needs are summed
    out first, then the widest attribute that some targets lack is summed
    out once for all of them (and so on recursively), so a node of a
    junction tree is read about as many times as it has wide attributes,
    not as many times as it has measured cliques. Each result holds the
    sums :func:`sum_to` would give (added in another order: equal to
    rounding).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.synthesis._tables import marginals_of
    >>> table = np.arange(24.0).reshape(2, 3, 4)
    >>> out = marginals_of(table, (0, 1, 2), [(0,), (2, 1), (0, 1, 2)])
    >>> out[(0,)], out[(2, 1)].shape
    (array([ 66., 210.]), (4, 3))
    """
    out = {}
    _marginals_into(table, tuple(attrs), list(dict.fromkeys(targets)), out)
    return out


def _marginals_into(table, attrs, targets, out):
    rest = []
    for target in targets:
        if set(target) == set(attrs):
            out[target] = sum_to(table, attrs, target)
        else:
            rest.append(target)
    if not rest:
        return
    needed = set().union(*(set(t) for t in rest))
    if needed != set(attrs):
        kept = tuple(a for a in attrs if a in needed)
        _marginals_into(sum_to(table, attrs, kept), kept, rest, out)
        return
    # Every attribute is needed by some target: sum out the widest one that
    # some targets lack, once for all of them; the others keep the table.
    lacking = [a for a in attrs if not all(a in t for t in rest)]
    widest = max(lacking, key=lambda a: table.shape[attrs.index(a)])
    without = [t for t in rest if widest not in t]
    kept = tuple(a for a in attrs if a != widest)
    _marginals_into(sum_to(table, attrs, kept), kept, without, out)
    _marginals_into(table, attrs, [t for t in rest if widest in t], out)


def _log_of_sum(values, add, slice_tops):
    """``log(add(exp(values)))`` for a linear ``add`` (sums over axes or groups).

    Shifted by the table's largest value; where an output then underflows,
    by each output's own largest input, ``slice_tops(values)`` (those tops
    spread over the input, and over the output).
    """
    top = float(np.max(values))
    if np.isfinite(top):
        total = add(np.exp(values - top))
        if total.size == 0 or float(np.min(total)) > _TINY:
            return np.log(total) + top
    spread, tops = slice_tops(values)
    return np.log(add(np.exp(values - spread))) + tops


def logsumexp(values: np.ndarray, axes: tuple) -> np.ndarray:
    """``log(sum(exp(values), axis=axes))``, without overflow or underflow."""
    if not axes:
        return values

    def slice_tops(values):
        tops = np.max(values, axis=axes, keepdims=True)
        tops = np.where(np.isfinite(tops), tops, 0.0)
        return tops, np.squeeze(tops, axis=axes)

    return _log_of_sum(values, lambda v: sum_axes(v, axes), slice_tops)


def log_reduce_groups(values: np.ndarray, starts, axis: int) -> np.ndarray:
    """``log(np.add.reduceat(exp(values), starts, axis))``, without underflow.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.synthesis._tables import log_reduce_groups
    >>> np.exp(log_reduce_groups(np.log([[1.0, 2.0, 3.0]]), (0, 2), 1))
    array([[3., 3.]])
    """

    def slice_tops(values):
        tops = np.maximum.reduceat(values, starts, axis=axis)
        tops = np.where(np.isfinite(tops), tops, 0.0)
        widths = np.diff(np.append(starts, values.shape[axis]))
        return np.repeat(tops, widths, axis=axis), tops

    return _log_of_sum(
        values, lambda v: np.add.reduceat(v, starts, axis=axis), slice_tops
    )


def marginalize_log(values: np.ndarray, attrs: tuple, keep: tuple) -> np.ndarray:
    """Log-sum-exp out the attributes not in ``keep``; result axes in ``keep``."""
    out = logsumexp(values, tuple(i for i, a in enumerate(attrs) if a not in keep))
    left = [a for a in attrs if a in keep]
    return np.transpose(out, [left.index(a) for a in keep])
