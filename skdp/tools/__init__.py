"""Private numpy-like statistics: each call charges a budget once, then answers.

Every function takes ``epsilon``, public ``bounds`` (or bins and ranges),
a ``budget`` to charge and a ``random_state``, validates everything before
the charge, and returns the noisy value as numpy would (a float or an
array). The unit of privacy is a row of the input, and the neighbouring
relation is replace-one (the number of rows is public).

All but :func:`quantile` and :func:`median` also take dask arrays,
DataFrames and Series: declared bounds (or histogram ranges) are required,
a floating-point input gets one pass that refuses NaN and infinities before
the charge, and after it one map-reduce pass of clipped row-block sums or
counts; the noise is drawn in the client, as for numpy input (same
guarantee, same answer for the same seed). Quantiles need the sorted data
and refuse dask input.
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
