"""Statistical checks the test modules share (``from _stat_checks import ...``).

The tolerance stays with the caller: each test module states how many
standard errors it allows, and why, beside its assertions.
"""

import math


def binomial_ok(hits, n, p, z):
    """``hits`` out of ``n`` within ``z`` binomial standard errors of ``n p``."""
    return abs(hits - n * p) <= z * math.sqrt(n * p * (1 - p))
