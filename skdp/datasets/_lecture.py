"""The small worked example used in the lecture on private multiplicative weights."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch, check_random_state

__all__ = ["make_lecture_example"]

_N_ATTRIBUTES = 3
_N_SAMPLES = 100
_N_QUERIES = 100
_TRUE_DISTRIBUTION = (0.10, 0.05, 0.15, 0.10, 0.20, 0.08, 0.12, 0.20)

_DESCR = """\
Lecture example for private multiplicative weights
--------------------------------------------------

Universe {0,1}^3: 8 cells in binary order 000, 001, ..., 111.
100 rows drawn i.i.d. from the true distribution
[0.10, 0.05, 0.15, 0.10, 0.20, 0.08, 0.12, 0.20] over the cells, and 100
linear queries, each a vector of 8 weights drawn uniformly from [0, 1].
The answer of query q on the data is q @ h, where h is the normalised
histogram of the rows over the 8 cells. Synthetic data: no real person.
"""


def make_lecture_example(
    random_state: int | np.random.RandomState | None = 0,
) -> Bunch:
    """Generate the lecture's worked example for private multiplicative weights.

    The universe is :math:`\\{0, 1\\}^3`: 8 cells enumerated in binary order
    ``000, 001, ..., 111``, the first attribute being the most significant
    bit, so cell ``k`` holds the bits of ``k``. The data set has
    :math:`n = 100` rows drawn independently from ``true_distribution`` over
    the cells. The workload is 100 linear queries; query :math:`q \\in [0, 1]^8`
    gives each cell a weight and its answer on the data is the average weight
    of the rows, :math:`q \\cdot h`, where :math:`h` is the normalised
    histogram of the data over the universe. Private multiplicative weights
    (and MWEM) maintain a distribution over the 8 cells whose query answers
    approach those of :math:`h`.

    Parameters
    ----------
    random_state : int, RandomState instance or None, default=0
        Seed of the draws of the rows and of the query weights. Pass an int
        for reproducible output across calls.

    Returns
    -------
    example : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the following attributes.

        data : ndarray of shape (100, 3), dtype int64
            The rows, as bits.
        universe : ndarray of shape (8, 3), dtype int64
            The cells of :math:`\\{0, 1\\}^3` in binary order; row ``k`` holds
            the bits of ``k``.
        queries : ndarray of shape (100, 8), dtype float64
            One linear query per row, weights uniform in :math:`[0, 1]`.
        true_distribution : ndarray of shape (8,), dtype float64
            Probability of each cell of ``universe`` under which the rows
            were drawn, ``[0.10, 0.05, 0.15, 0.10, 0.20, 0.08, 0.12, 0.20]``.
        DESCR : str
            Short description of the example.

    See Also
    --------
    load_adult : A real data set with a discretized, finite universe.

    Notes
    -----
    Under the replace-one-row neighbouring relation, with :math:`n` public,
    moving one row from cell :math:`a` to cell :math:`b` changes the
    normalised answer :math:`q \\cdot h` by :math:`|q_a - q_b| / n \\le 1/n
    = 0.01`, the sensitivity used to calibrate noise on one query answer.
    Under add/remove-one-row the unnormalised answer :math:`n \\, q \\cdot h`
    has sensitivity :math:`\\max_k q_k \\le 1`. The data are synthetic.

    References
    ----------
    .. [1] M. Hardt and G. N. Rothblum. "A multiplicative weights mechanism
       for privacy-preserving data analysis". FOCS 2010.
    .. [2] M. Hardt, K. Ligett and F. McSherry. "A simple and practical
       algorithm for differentially private data release". NeurIPS 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.datasets import make_lecture_example
    >>> example = make_lecture_example(random_state=0)
    >>> example.data.shape, example.universe.shape, example.queries.shape
    ((100, 3), (8, 3), (100, 8))
    >>> example.universe[6].tolist()
    [1, 1, 0]
    >>> cells = example.data @ np.array([4, 2, 1])
    >>> histogram = np.bincount(cells, minlength=8) / len(cells)
    >>> answers = example.queries @ histogram
    >>> answers.shape
    (100,)
    """
    rng = check_random_state(random_state)
    true_distribution = np.array(_TRUE_DISTRIBUTION, dtype=np.float64)
    n_cells = 2**_N_ATTRIBUTES
    # Row k holds the bits of k, most significant first: 000, 001, ..., 111.
    shifts = np.arange(_N_ATTRIBUTES - 1, -1, -1)
    universe = (np.arange(n_cells)[:, np.newaxis] >> shifts) & 1
    universe = universe.astype(np.int64)

    cells = rng.choice(n_cells, size=_N_SAMPLES, p=true_distribution)
    data = universe[cells]
    queries = rng.uniform(0.0, 1.0, size=(_N_QUERIES, n_cells))
    return Bunch(
        data=data,
        universe=universe,
        queries=queries,
        true_distribution=true_distribution,
        DESCR=_DESCR,
    )
