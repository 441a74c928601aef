"""Private numpy-like statistics: each call charges a budget once, then answers.

Every function takes ``epsilon``, public ``bounds`` (or bins and ranges),
a ``budget`` to charge and a ``random_state``, validates everything before
the charge, and returns the noisy value as numpy would (a float or an
array). The unit of privacy is a row of the input, and the neighbouring
relation is replace-one (the number of rows is public).

All but :func:`quantile` and :func:`median` also take dask arrays,
DataFrames and Series, through the same code as numpy input (a row source,
``skdp.utils._row_source``): one pass over the row blocks refuses
non-numbers, NaN and infinities before the charge, with the numpy input's
messages, and after it one pass of clipped row-block sums or counts comes
back to the client, where the noise is drawn. Same guarantee, and bitwise
the same answer for the same seed. Bounds (or histogram ranges) must be
declared for dask input: they are never read from dask data. Quantiles
need each column sorted in one place and refuse dask input.
"""

from ._histograms import histogram, histogramdd
from ._quantiles import median, quantile
from ._statistics import count, mean, std, sum, var

__all__ = [
    "count",
    "histogram",
    "histogramdd",
    "mean",
    "median",
    "quantile",
    "std",
    "sum",
    "var",
]
