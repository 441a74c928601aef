"""OnlinePMW: online private multiplicative weights (Hardt & Rothblum 2010)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from ..accounting._budget import PrivacyBudget
from ..accounting._events import ComposedEvent, PureDPEvent, SelfComposedEvent
from ..base import FitPlan, PrivateEstimatorMixin, run_charged
from ..mechanisms import add_noise, plan_laplace
from ..utils._constraints import EPSILON_CONSTRAINT, PositiveReal
from ..utils._dask import is_dask_collection
from ..utils._feasibility import check_memory
from ..utils._privacy import warn_data_derived
from ..utils._row_source import row_source
from ..utils._sklearn_compat import HasMethods, Interval, fit_context
from ._counting import DataMarginals
from ._schema import (
    ColumnDomain,
    ColumnSpec,
    SchemaError,
    check_categories,
    inspect_rows,
    is_dataframe,
    resolve_domains,
)

if TYPE_CHECKING:
    from .._typing import Self

__all__ = ["OnlinePMW"]

#: Largest universe the dense distribution may have (cells).
_MAX_CELLS = 2**22
#: Most distinct values a column may have for its domain to be read from data.
_MAX_DATA_VALUES = 100
#: The default threshold is this many times the sum of the two noise scales
#: of the sparse vector test (see Notes).
_THRESHOLD_FACTOR = 4.0

#: Largest multiplicative-weights step of the projection update; the
#: iterations and tolerance of the search for it.
_MAX_STEP = 30.0
_PROJECTION_ITERATIONS = 100
_PROJECTION_TOLERANCE = 1e-12
#: The projection update replays the earlier measurements (one sweep of
#: projections after each update) while max_updates * n_cells is at most this
#: (the measured queries are kept: 8 bytes an entry).
_REPLAY_MAX_ENTRIES = 2**25

#: What a failed answer leaves (the message's first sentence ends with it).
_CLOSED = (
    "; OnlinePMW no longer reads the data and answers from its synthetic "
    "distribution only"
)


def _projection_step(p: np.ndarray, q: np.ndarray, target: float) -> float:
    """The step eta with q . (p exp(eta q)) / Z = target: a KL projection.

    ``q . p(eta)`` increases with ``eta`` (its derivative is the variance of
    ``q`` under ``p(eta)``): Newton's method from 0, kept inside a shrinking
    bracket by bisection. The step is capped at +-``_MAX_STEP``, which also
    covers targets at the ends of ``[min q, max q]`` (reached only as eta
    goes to infinity).
    """
    low, high, eta = -_MAX_STEP, _MAX_STEP, 0.0
    for _ in range(_PROJECTION_ITERATIONS):
        z = eta * q
        w = p * np.exp(z - z.max())
        w /= w.sum()
        mean = float(w @ q)
        if abs(mean - target) <= _PROJECTION_TOLERANCE:
            break
        if mean < target:
            low = eta
        else:
            high = eta
        variance = float(w @ (q * q)) - mean * mean
        newton = eta + (target - mean) / variance if variance > 0 else math.inf
        eta = newton if low < newton < high else 0.5 * (low + high)
        if high - low <= _PROJECTION_TOLERANCE:
            break
    return eta


class OnlinePMW(PrivateEstimatorMixin, BaseEstimator):
    """Answer linear queries one at a time with online private multiplicative weights.

    An interactive mechanism over a declared finite domain (Hardt &
    Rothblum 2010; Dwork & Roth 2014, Section 4.2). :meth:`fit` binds the
    mechanism to a data set and charges the budget **once** for the whole
    interaction; each call of :meth:`answer` then returns the private answer
    of one linear query. A query is answered from the current synthetic
    distribution unless the sparse vector test finds that the distribution's
    error on it looks large; only then is the query measured with Laplace
    noise, the noisy measurement returned and the distribution updated by
    multiplicative weights. After ``max_updates`` updates the mechanism stops
    reading the data: it discards its copy of the histogram and answers every
    further query from the synthetic distribution (post-processing, no
    privacy cost).

    An interactive mechanism that is a scikit-learn estimator: parameters
    are validated by ``fit`` (``get_params`` / ``set_params``; ``clone``
    shares the ``budget``), fitted attributes end in an underscore, and
    ``fit(X)`` then :meth:`answer` is the whole interface (there is no
    ``predict`` or ``transform``; its state holds the private histogram until
    it is exhausted). Each answer that reads the data runs after the charge
    of :meth:`fit`, on skdp's one charge path (:func:`skdp.base.run_charged`).

    Parameters
    ----------
    domain : list of sequences or None, default=None
        The public values of each column, in order: the universe is their
        Cartesian product, enumerated row-major (the last column varies
        fastest), each column in the order given here. A row with a value
        outside its column's list, or a missing value (``None``, NaN), is
        refused by :meth:`fit` (``ValueError``, nothing charged). ``None``
        reads each column's distinct values from the data, in their natural
        order (numbers by value, text alphabetically), with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`: which values occur is
        then released by the universe. The columns are read, checked and
        counted by the synthesizers' schema
        (``skdp.synthesis._schema``). At most ``2**22`` cells.
    epsilon : float, default=1.0
        Privacy budget of the whole interaction, > 0 (pure epsilon-DP).
    max_updates : int, default=10
        Largest number of queries measured (above-threshold answers of the
        sparse vector test, each followed by a Laplace measurement and an
        update). The budget is charged for all of them at :meth:`fit`.
    threshold : float or None, default=None
        Public threshold :math:`T` in answer units (a fraction of the rows,
        in (0, 1]): a query is measured when its noisy error
        :math:`|q(\\mathrm{data}) - q(\\mathrm{synthetic})|` + noise exceeds
        :math:`T` + noise. ``None``: four times the sum of the two noise
        scales of the test (see Notes), so that a query the distribution
        answers exactly is measured with probability below :math:`e^{-4}
        \\approx 1.8\\%`.
    learning_rate : float or None, default=None
        Step of the multiplicative-weights update
        :math:`p(x) \\leftarrow p(x) \\exp(\\eta\\, q(x)) / Z`. A number
        gives Hardt & Rothblum's fixed step, :math:`\\eta = \\pm`
        ``learning_rate`` with the sign of the measured error (their analysis
        takes :math:`\\eta = \\alpha / 2` for a threshold about
        :math:`\\alpha`). ``None`` takes the step that makes the updated
        distribution answer the query with the noisy measurement (the KL
        projection onto :math:`\\{p : q \\cdot p = a\\}`, found by
        Newton's method, :math:`|\\eta| \\le 30`), then replays the earlier
        measurements, one projection each, oldest first (iterative scaling,
        as MWEM replays its history), while ``max_updates * n_cells`` is at
        most ``2**25`` (the measured queries are kept). It corrects a measured
        query in one update instead of many.
    svt_fraction : float, default=0.5
        Share of ``epsilon`` spent by the sparse vector test, in (0, 1); the
        rest pays for the ``max_updates`` Laplace measurements.
    random_state : None, int, numpy Generator or RandomState, default=None
        ``None`` draws the privacy noise from the OS CSPRNG: the only
        choice for a release. A seed makes the interaction reproducible and
        is **for testing only**: whoever knows it can remove the noise.
    budget : PrivacyBudget or None, default=None
        Shared budget charged once by :meth:`fit`.

    Attributes
    ----------
    domain_ : tuple of tuple
        Each column's values (declared, or read from the data).
    n_cells_ : int
        Number of cells of the universe.
    n_samples_ : int
        Number of rows (public under replace-one neighbouring).
    n_features_in_ : int
        Number of columns.
    threshold_ : float
        The public threshold :math:`T` of the sparse vector test.
    learning_rate_ : float or None
        The fixed step, or ``None`` for MWEM's step.
    noise_scales_ : dict
        Laplace scales in answer units: ``"threshold"`` (the threshold
        noise), ``"test"`` (the noise added to each query's error) and
        ``"measurement"`` (the noise of a measured answer).
    n_queries_ : int
        Queries answered so far.
    n_updates_ : int
        Queries measured (updates) so far.
    updates_remaining_ : int
        ``max_updates - n_updates_``; 0 once the mechanism no longer reads
        the data.
    distribution_ : ndarray of shape (n_cells,)
        The current synthetic distribution (public: post-processing of the
        noisy outputs).
    universe_ : ndarray of shape (n_cells, n_features)
        The cells, one row each, in the order of ``distribution_``.
    privacy_event_ : ComposedEvent
        What :meth:`fit` charged: the sparse vector test (a
        :class:`~skdp.accounting.PureDPEvent`) and ``max_updates`` Laplace
        measurements.
    epsilon_, delta_ : float
        Its cost (``epsilon_ == epsilon``, ``delta_ == 0``).
    budget_entry_ : LedgerEntry or None
        The ledger entry in ``budget``.

    See Also
    --------
    skdp.PMWSynthesizer : The offline (MWEM) counterpart, for a
        workload known in advance.

    Notes
    -----
    **Guarantee.** The whole interaction (every answer, however many
    queries are asked, and the synthetic distribution) is
    :math:`\\varepsilon`-differentially private under *replace-one-row*
    neighbouring, the number of rows :math:`n` being public, for queries
    chosen adaptively. :meth:`fit` charges one event of exactly
    :math:`\\varepsilon` before the data are read.

    **Queries and sensitivities.** A query :math:`q \\in [0, 1]^N` weighs
    the :math:`N` cells; its answer on the data is :math:`q \\cdot h`, with
    :math:`h` the normalised histogram of the rows. Replacing a row moves
    :math:`h` by :math:`1/n` in one cell and back in another, so
    :math:`q \\cdot h` has sensitivity :math:`\\Delta = 1/n`. The tested
    error :math:`|q \\cdot h - q \\cdot p_t|` has the same sensitivity,
    :math:`p_t` (the synthetic distribution) being a function of earlier
    noisy outputs only.

    **Budget split** (:math:`c` = ``max_updates``,
    :math:`\\varepsilon_{\\mathrm{SV}}` = ``svt_fraction`` :math:`\\cdot
    \\varepsilon`).

    * Sparse vector test (Lyu, Su & Li 2017, Algorithm 1, which halts
      after :math:`c` positive answers and draws the threshold noise once):
      :math:`\\varepsilon_{\\mathrm{SV}} = \\varepsilon_1 + \\varepsilon_2`
      split :math:`1 : (2c)^{2/3}` (their optimal ratio, Section 4.2);
      threshold noise :math:`\\rho \\sim \\mathrm{Lap}(\\Delta /
      \\varepsilon_1)` and, for each query, :math:`\\nu \\sim
      \\mathrm{Lap}(2c\\Delta / \\varepsilon_2)`; the query is measured when
      :math:`|q \\cdot h - q \\cdot p_t| + \\nu \\ge T + \\rho`. This is
      :math:`\\varepsilon_{\\mathrm{SV}}`-DP (ibid., Theorem 2).
    * Each of the :math:`c` measurements: :math:`q \\cdot h + \\mathrm{Lap}(
      c\\Delta / \\varepsilon_{\\mathrm{M}})`, :math:`\\varepsilon_{\\mathrm{M}}
      = \\varepsilon - \\varepsilon_{\\mathrm{SV}}`, each
      :math:`(\\varepsilon_{\\mathrm{M}} / c)`-DP.

    Composition is basic (pure DP adds up), also for the interleaving of
    the two interactive mechanisms (concurrent composition of pure-DP
    interactive mechanisms, Vadhan & Wang 2021). The noise is the discrete
    Laplace of :func:`~skdp.mechanisms.plan_laplace` on a grid; the two
    noises of the test live on different grids, so their sensitivities
    are declared as :math:`\\Delta` plus the other grid's spacing (about
    :math:`2^{-32}` of a noise scale), which keeps the test's proof exact
    with rounding (``noise_scales_`` reports the resulting scales). Unused
    updates are not refunded: the charge is the worst case.

    **What is released.** Answers of the test's negative queries are
    :math:`q \\cdot p_t`; of measured queries the noisy measurement, clipped
    to :math:`[\\min q, \\max q]`. Queries are validated (shape, range,
    finiteness) from public facts before they touch the data, and nothing
    raises or warns afterwards. After the :math:`c`-th update, or
    :meth:`close`, the histogram is deleted: later answers are
    :math:`q \\cdot p` only. A pickled copy carries neither the histogram
    nor the noise state: it is closed.

    **Accuracy.** With :math:`\\eta = \\alpha/2` and threshold about
    :math:`\\alpha`, the multiplicative-weights potential
    :math:`\\mathrm{KL}(h \\,\\|\\, p_t) \\le \\log N` falls by about
    :math:`\\alpha^2/4` at each update, so at most :math:`4 \\log N /
    \\alpha^2` updates are ever useful (Dwork & Roth 2014, Theorem 4.10);
    the online mechanism is then :math:`(\\alpha, \\beta)`-accurate for
    :math:`k` adaptively chosen linear queries with
    :math:`\\alpha = O\\big((\\log N \\cdot \\log(k/\\beta) / (\\varepsilon
    n))^{1/3}\\big)` (Dwork & Roth 2014, Theorem 4.14; Hardt & Rothblum
    2010, Theorem 1.1 for the :math:`(\\varepsilon, \\delta)` version with
    exponent 1/2), as against :math:`\\Theta(k / (\\varepsilon n))` for
    :math:`k` independent Laplace answers. The theorem needs
    :math:`c \\approx 4 \\log N / \\alpha^2` and the fixed step
    (``learning_rate`` :math:`= \\alpha/2`). The default projection step
    is a practical variant (each update fits the measured query, as MWEM's
    and private-pgm's estimators fit theirs); it changes only the
    post-processing, not the privacy guarantee.
    ``benchmarks/online_pmw.py`` compares both with independent Laplace
    answers.

    References
    ----------
    .. [1] M. Hardt and G. N. Rothblum. "A multiplicative weights mechanism
       for privacy-preserving data analysis". FOCS 2010.
    .. [2] C. Dwork and A. Roth. "The algorithmic foundations of
       differential privacy". Foundations and Trends in TCS 9(3-4), 2014,
       Section 4.2 (Algorithm 7, Theorems 4.10 and 4.14) and Section 3.6
       (Algorithms 1 and 2, the sparse vector technique).
    .. [3] M. Lyu, D. Su and N. Li. "Understanding the sparse vector
       technique for differential privacy". VLDB 2017, Algorithm 1.
    .. [4] M. Hardt, K. Ligett and F. McSherry. "A simple and practical
       algorithm for differentially private data release". NeurIPS 2012.
    .. [5] S. Vadhan and T. Wang. "Concurrent composition of differential
       privacy". TCC 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.synthesis import OnlinePMW
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 2, size=(5000, 3))
    >>> pmw = OnlinePMW(domain=[[0, 1]] * 3, epsilon=1.0, max_updates=5,
    ...                 random_state=0).fit(X)
    >>> pmw.n_cells_, pmw.epsilon_
    (8, 1.0)
    >>> answer = pmw.answer(np.linspace(0, 1, 8))  # weights over the 8 cells
    >>> 0.0 <= answer <= 1.0
    True
    >>> first_is_one = pmw.answer(lambda cells: cells[:, 0] == 1)  # a predicate
    >>> pmw.report()["updates_remaining"] <= 5
    True
    """

    _data_bound_params = ("domain",)
    _parameter_constraints: dict = {
        "domain": [list, tuple, np.ndarray, None],
        "epsilon": [EPSILON_CONSTRAINT],
        "max_updates": [Interval(Integral, 1, None, closed="left")],
        "threshold": [PositiveReal(1.0), None],
        "learning_rate": [PositiveReal(), None],
        "svt_fraction": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
        "budget": [HasMethods(["spend"]), None],
    }

    def __init__(
        self,
        domain: Sequence[Sequence[Any]] | None = None,
        *,
        epsilon: float = 1.0,
        max_updates: int = 10,
        threshold: float | None = None,
        learning_rate: float | None = None,
        svt_fraction: float = 0.5,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.domain = domain
        self.epsilon = epsilon
        self.max_updates = max_updates
        self.threshold = threshold
        self.learning_rate = learning_rate
        self.svt_fraction = svt_fraction
        self.random_state = random_state
        self.budget = budget

    def _forget_fit(self) -> None:
        super()._forget_fit()
        for name in ("_histogram", "_noisy_threshold", "_source", "_plans"):
            self.__dict__.pop(name, None)
        for name in ("_distribution", "_log_weights", "_universe", "_sizes"):
            self.__dict__.pop(name, None)
        for name in ("_measurements",):
            self.__dict__.pop(name, None)

    def _privacy_label(self) -> str:
        return f"OnlinePMW(epsilon={self.epsilon!r}, max_updates={self.max_updates!r})"

    # -- fit: validate, plan, charge, run ----------------------------------

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: None = None) -> Self:
        """Bind the mechanism to ``X`` and charge the budget once.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_columns)
            The private rows; every value must be in its column's ``domain``
            (checked before anything is charged). A dask array or DataFrame
            is checked and counted on the workers by row blocks (the
            histogram is the in-memory one); no row reaches the client.
        y : None
            Ignored.

        Returns
        -------
        self : OnlinePMW
        """
        return self._fit_private(X, y)

    def _rows(self, X):
        """The rows of ``X`` (an array or a DataFrame, in memory or on dask),
        shape checked from metadata: a dask collection's rows stay on the
        workers."""
        if not is_dataframe(X):
            if hasattr(X, "toarray") or hasattr(X, "tocsr"):
                raise TypeError("OnlinePMW needs dense rows, not a sparse matrix.")
            if not is_dask_collection(X):
                X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(
                    f"X must be 2-D (n_samples, n_columns), got shape {X.shape}; "
                    "reshape a single column with X.reshape(-1, 1)."
                )
        if getattr(X, "dtype", None) is not None and X.dtype.kind == "c":
            raise ValueError("Complex data not supported.")
        rows = row_source(X)
        shape = (rows.n_samples, rows.n_features)
        for axis, what in ((0, "sample"), (1, "feature")):
            if shape[axis] < 1:
                raise ValueError(
                    f"Found array with 0 {what}(s) (shape={shape}) while "
                    "a minimum of 1 is required by OnlinePMW."
                )
        return rows

    def _specs(self, n_columns):
        """Each column's spec: declared values (refusing any other), or read."""
        if self.domain is None:
            return [
                ColumnSpec(j, None, numeric=False, unknown="error")
                for j in range(n_columns)
            ]
        if len(self.domain) != n_columns:
            raise ValueError(
                f"domain has {len(self.domain)} entries but X has {n_columns} "
                "columns; give one sequence of values per column."
            )
        specs = []
        for j, values in enumerate(self.domain):
            if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
                raise ValueError(
                    f"domain[{j}] must be a sequence of values, got {values!r}."
                )
            categories = check_categories(values, f"domain[{j}]", missing_hint="")
            domain = ColumnDomain(j, categories=categories)
            specs.append(ColumnSpec(j, domain, numeric=False, unknown="error"))
        return specs

    @staticmethod
    def _check_universe(domains):
        n_cells = math.prod(domain.size for domain in domains)
        if n_cells > _MAX_CELLS:
            raise ValueError(
                f"The universe has {n_cells} cells, more than OnlinePMW's dense "
                f"distribution holds ({_MAX_CELLS}); use fewer columns or coarser "
                "domains."
            )
        return n_cells

    def _prepare_fit(self, X, y=None):
        rows = self._rows(X)
        specs = self._specs(rows.n_features)
        if self.domain is not None:  # public: checked before reading the rows
            self._check_universe([spec.domain for spec in specs])
        read = []
        try:
            domains = resolve_domains(
                specs,
                inspect_rows(rows, specs, cap=_MAX_DATA_VALUES),
                n_bins=1,
                cap=_MAX_DATA_VALUES,
                warn=lambda kind, column: read.append(column),
            )
        except SchemaError as error:
            j = error.column
            if error.reason in ("missing", "unlisted"):
                raise ValueError(
                    f"Column {j} holds values outside its declared domain (or "
                    "missing values); nothing was charged. Every value must be "
                    f"one of domain[{j}]."
                ) from None
            if error.reason == "too_many":
                raise ValueError(
                    f"Column {j} has no declared domain and more than "
                    f"{_MAX_DATA_VALUES} distinct values; declare its public "
                    "values with domain=[...]."
                ) from None
            raise
        if read:
            warn_data_derived("domain")
        sizes = tuple(domain.size for domain in domains)
        n_cells = self._check_universe(domains)
        data = DataMarginals(rows, domains)
        counting = data.plan([tuple(range(len(sizes)))])
        check_memory(
            8.0 * 4 * n_cells + counting.memory,
            f"OnlinePMW's distribution and histogram ({n_cells} cells)",
            "use fewer columns or coarser domains",
        )
        return {
            "data": data,
            "counting": counting,
            "domain": tuple(domain.categories for domain in domains),
            "sizes": sizes,
            "n_cells": n_cells,
            "n_samples": rows.n_samples,
        }

    def _plan_fit(self, prepared) -> FitPlan:
        n = prepared["n_samples"]
        c = int(self.max_updates)
        sensitivity = 1.0 / n
        eps_svt = float(self.epsilon) * float(self.svt_fraction)
        eps_measure = float(self.epsilon) - eps_svt
        ratio = (2.0 * c) ** (2.0 / 3.0)
        eps_threshold = eps_svt / (1.0 + ratio)
        eps_queries = eps_svt - eps_threshold
        # The test's two noises sit on different grids: each is calibrated to
        # Delta plus the other's rounding (see Notes). A first pass finds the
        # grid spacings, the second declares the slack.
        first_rho = plan_laplace(sensitivity, eps_threshold, 1, magnitude=2.0)
        first_nu = plan_laplace(sensitivity, eps_queries / (2 * c), 1, magnitude=1.0)
        slack = 2.0 * (first_rho.gamma + first_nu.gamma)
        rho = plan_laplace(sensitivity + slack, eps_threshold, 1, magnitude=2.0)
        nu = plan_laplace(sensitivity + slack, eps_queries / (2 * c), 1, magnitude=1.0)
        if not (
            rho.sensitivity >= sensitivity + nu.gamma
            and nu.sensitivity >= sensitivity + (nu.gamma + rho.gamma) / 2
        ):  # pragma: no cover - the slack above always suffices
            raise ValueError("Cannot calibrate the sparse vector test's grids.")
        measure = plan_laplace(sensitivity, eps_measure / c, 1, magnitude=1.0)
        scales = {
            "threshold": rho.scale * rho.gamma,
            "test": nu.scale * nu.gamma,
            "measurement": measure.scale * measure.gamma,
        }
        if self.threshold is None:
            threshold = _THRESHOLD_FACTOR * (scales["threshold"] + scales["test"])
        else:
            threshold = float(self.threshold)
        event = ComposedEvent(
            (
                PureDPEvent(eps_svt, label="OnlinePMW sparse vector test"),
                SelfComposedEvent(measure.event, c, label="OnlinePMW measurements"),
            )
        )
        replay = (
            self.learning_rate is None
            and c * prepared["n_cells"] <= _REPLAY_MAX_ENTRIES
        )
        if replay:
            check_memory(
                8.0 * c * prepared["n_cells"],
                f"OnlinePMW's {c} measured queries over {prepared['n_cells']} cells",
                "lower max_updates",
            )
        return FitPlan(
            event,
            0.0,
            {
                "rho": rho,
                "nu": nu,
                "measure": measure,
                "threshold": threshold,
                "scales": scales,
                "max_updates": c,
                "replay": replay,
            },
        )

    def _run_fit(self, prepared, plan, source) -> None:
        settings = plan.settings
        n_cells = prepared["n_cells"]
        # The one counting pass over the rows (the schema checked them).
        data = prepared["data"].count(prepared["counting"])
        histogram = data.counts(tuple(range(len(prepared["sizes"])))).ravel()
        self._histogram = histogram / prepared["n_samples"]
        self._source = source
        self._plans = (settings["nu"], settings["measure"])
        self._noisy_threshold = float(
            add_noise(settings["rho"], settings["threshold"], source)
        )
        self._log_weights = np.zeros(n_cells)
        self._distribution = np.full(n_cells, 1.0 / n_cells)
        self._universe = None
        self._measurements = [] if settings["replay"] else None
        self._sizes = prepared["sizes"]
        self.domain_ = prepared["domain"]
        self.n_cells_ = n_cells
        self.n_samples_ = prepared["n_samples"]
        self.n_features_in_ = len(prepared["sizes"])
        self.threshold_ = settings["threshold"]
        self.learning_rate_ = (
            None if self.learning_rate is None else float(self.learning_rate)
        )
        self.noise_scales_ = dict(settings["scales"])
        self.max_updates_ = settings["max_updates"]
        self.n_queries_ = 0
        self.n_updates_ = 0

    # -- the interaction ------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "_distribution") or not hasattr(self, "n_updates_"):
            raise NotFittedError(
                "This OnlinePMW instance is not fitted yet; call fit(X) first."
            )

    @property
    def updates_remaining_(self) -> int:
        """Updates the mechanism may still spend (0 once it is closed)."""
        self._check_fitted()
        if self._histogram is None:
            return 0
        return self.max_updates_ - self.n_updates_

    @property
    def distribution_(self) -> NDArray[np.float64]:
        """The current synthetic distribution over the cells (a copy)."""
        self._check_fitted()
        return self._distribution.copy()

    @property
    def universe_(self) -> NDArray[Any]:
        """The cells, one row of column values each, in distribution order."""
        self._check_fitted()
        return self._cells().copy()

    def _cells(self) -> np.ndarray:
        if self._universe is None:
            index = np.indices(self._sizes).reshape(len(self._sizes), -1).T
            columns = []
            for j, values in enumerate(self.domain_):
                try:
                    table = np.asarray(values)
                    if table.ndim != 1 or table.dtype.kind not in "biuf":
                        raise ValueError
                except ValueError:
                    table = np.empty(len(values), dtype=object)
                    table[:] = list(values)
                columns.append(table[index[:, j]])
            kinds = {col.dtype.kind for col in columns}
            dtype = object if "O" in kinds else np.result_type(*columns)
            universe = np.empty((len(index), len(columns)), dtype=dtype)
            for j, col in enumerate(columns):
                universe[:, j] = col
            self._universe = universe
        return self._universe

    def _query_weights(self, query) -> np.ndarray:
        """Validate a query (public facts only) into weights over the cells."""
        if callable(query):
            weights = query(self._cells())
            what = "The query function's result"
        else:
            weights = query
            what = "query"
        try:
            weights = np.asarray(weights, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{what} must be numbers (or booleans).") from None
        n_cells = self.n_cells_
        if weights.ndim not in (1, 2) or weights.shape[-1] != n_cells:
            raise ValueError(
                f"{what} must have shape ({n_cells},) or (n_queries, {n_cells}): "
                f"one weight per cell of the universe; got shape {weights.shape}."
            )
        if not np.all(np.isfinite(weights)):
            raise ValueError(f"{what} must be finite.")
        if weights.size and (weights.min() < 0 or weights.max() > 1):
            raise ValueError(f"{what}: weights must lie in [0, 1].")
        return weights

    def answer(
        self, query: ArrayLike | Callable[[np.ndarray], ArrayLike]
    ) -> float | NDArray[np.float64]:
        """The private answer of a linear query (or of several, in order).

        Parameters
        ----------
        query : array-like of shape (n_cells,) or (n_queries, n_cells), or callable
            Weights in [0, 1] over the cells of :attr:`universe_` (row-major
            over the columns, each column in ``domain`` order), or a function
            that receives :attr:`universe_` (the public cells, never the
            data) and returns such weights, e.g. a predicate
            ``lambda cells: cells[:, 0] == 1``. The answer on the data is
            the weighted fraction of rows, ``weights @ histogram``. A 2-D
            array is a batch of queries answered one after the other.

        Returns
        -------
        answer : float or ndarray of shape (n_queries,)
            The private answer(s).
        """
        self._check_fitted()
        weights = self._query_weights(query)
        if weights.ndim == 1:
            return float(self._answer_all(weights[np.newaxis, :])[0])
        return self._answer_all(weights)

    def _answer_all(self, weights: np.ndarray) -> np.ndarray:
        answers = np.empty(len(weights))
        for i, q in enumerate(weights):
            if self._histogram is None:
                answers[i] = float(q @ self._distribution)
            else:
                answers[i] = self._answer_with_data(q)
            self.n_queries_ += 1
        return answers

    def _answer_with_data(self, q: np.ndarray) -> float:
        """One step of the sparse vector test; nothing escapes but the answer.

        It runs after the charge of :meth:`fit`: a failure closes the
        mechanism and raises :class:`~skdp.exceptions.ChargedFitError`.
        """
        return run_charged(
            lambda: self._test_and_update(q),
            "OnlinePMW.answer",
            on_failure=self.close,
            consequence=_CLOSED,
        )

    def _test_and_update(self, q: np.ndarray) -> float:
        plan_test, plan_measure = self._plans
        synthetic = float(q @ self._distribution)
        true = float(q @ self._histogram)
        noisy_error = float(add_noise(plan_test, abs(true - synthetic), self._source))
        if noisy_error < self._noisy_threshold:
            return synthetic
        measured = float(add_noise(plan_measure, true, self._source))
        low, high = float(q.min()), float(q.max())
        measured = min(max(measured, low), high)
        self._update(q, measured, synthetic)
        self.n_updates_ += 1
        if self.n_updates_ >= self.max_updates_:
            self.close()
        return measured

    def _update(self, q: np.ndarray, measured: float, synthetic: float) -> None:
        """Multiplicative weights towards the noisy measurements (post-processing)."""
        if self.learning_rate_ is not None:
            # Hardt-Rothblum: a fixed step in the direction of the error.
            self._step(q, math.copysign(self.learning_rate_, measured - synthetic))
            return
        if self._measurements is None:
            self._step(q, _projection_step(self._distribution, q, measured))
            return
        # Iterative scaling: project on every measurement so far, the new one
        # last (Bregman's cyclic projections; MWEM replays its history too).
        self._measurements.append((q.copy(), measured))
        for old_q, old_value in self._measurements:
            self._step(old_q, _projection_step(self._distribution, old_q, old_value))

    def _step(self, q: np.ndarray, step: float) -> None:
        self._log_weights = self._log_weights + step * q
        shifted = np.exp(self._log_weights - self._log_weights.max())
        self._distribution = shifted / shifted.sum()

    def close(self) -> Self:
        """Stop reading the data: delete the histogram and the noise state.

        Called automatically after the ``max_updates``-th update. Later
        answers come from the synthetic distribution alone. The budget
        already charged is not refunded.

        Returns
        -------
        self : OnlinePMW
        """
        self._check_fitted()
        self._histogram = None
        self._measurements = None  # no update will replay them
        self._noisy_threshold = None
        self._source = None
        self._plans = None
        return self

    def report(self) -> dict[str, Any]:
        """How much of the interaction is spent: a dict of public counts.

        Returns
        -------
        report : dict
            ``n_queries``, ``n_updates``, ``max_updates``,
            ``updates_remaining``, ``reads_data`` (False once closed),
            ``epsilon`` (charged at fit) and ``threshold``.
        """
        self._check_fitted()
        return {
            "n_queries": self.n_queries_,
            "n_updates": self.n_updates_,
            "max_updates": self.max_updates_,
            "updates_remaining": self.updates_remaining_,
            "reads_data": self._histogram is not None,
            "epsilon": self.epsilon_,
            "threshold": self.threshold_,
        }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # A value is a category of its column's domain, whatever its type.
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags

    def __getstate__(self) -> dict[str, Any]:
        # A copy never carries the private histogram or the noise state.
        state = dict(self.__dict__)
        if "_histogram" in state:
            state.update(
                _histogram=None, _noisy_threshold=None, _source=None, _plans=None
            )
        return state
