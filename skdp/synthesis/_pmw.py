"""PMWSynthesizer: differentially private synthetic data with MWEM."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin

from ..accounting._budget import PrivacyBudget
from ..accounting._delta import resolve_delta
from ..accounting._events import ComposedEvent
from ..base import FitPlan, PlannedFit, PrivateEstimatorMixin
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._feasibility import check_memory, check_work
from ..utils._random import check_random_source
from ..utils._sklearn_compat import (
    HasMethods,
    Interval,
    StrOptions,
    check_is_fitted,
    fit_context,
    fitting_as_step_with_target,
)
from ._cost import mwem_work
from ._counting import DataMarginals
from ._loop import run_mwem, workload_weights
from ._models import DenseModel
from ._plan import RoundSettings, plan_measurement, plan_privacy
from ._schema import (
    ColumnSpec,
    MissingValues,
    TableBounds,
    TableCategories,
    declare_columns,
    decode_rows,
    inspect_rows,
    read_table,
    resolve_domains,
    undeclared_domains,
)
from ._views import base_clique, coarse_views, view_cells

if TYPE_CHECKING:
    import pandas as pd

    from .._typing import Self

__all__ = ["PMWSynthesizer"]

# Universes up to this many cells are modelled by a dense histogram.
_DENSE_MAX_CELLS = 4096
# Explicit query matrices need the universe enumerated.
_QUERY_MAX_CELLS = 2**22
_EMPTY_WORKLOAD = (
    "workload is empty: give at least one marginal (or query), or None for "
    "the default workload. Nothing was charged."
)

# Default workload: all 2- and 3-way marginals, 3-way ones only while the
# total stays below this.
_DEFAULT_WORKLOAD_CAP = 1000
_ROUND_ITER = 30
# Refuse measurements noisier than this many times the whole table: the
# inverse-variance weights of the estimation step would underflow.
_MAX_NOISE_FRACTION = 1e100
_FINAL_ITER = 100
# The estimation stops once a mirror-descent step lowers its loss by at most
# this fraction (public constant, chosen on validation workloads that are
# not the benchmark's: benchmarks/pmw_default_validation.py).
_TOL = 1e-3
# Default planned rounds of the adaptive schedule (public constants, chosen
# on the Adult benchmark: benchmarks/pmw_adult.py).
_ADAPTIVE_ROUNDS_PER_COLUMN = 16
_ADAPTIVE_MIN_ROUNDS = 32
_ADAPTIVE_QUERY_ROUNDS = 80
# coarsen="auto": ordered columns with more than this many values are also
# measured in at most _COARSE_GROUPS groups of consecutive values (public
# constants, set on the Adult benchmark, benchmarks/pmw_adult.py; "auto" as
# the default was then checked against coarsen=None on validation
# workloads: benchmarks/pmw_default_validation.py).
_COARSE_MIN_VALUES = 32
_COARSE_GROUPS = 16

_PAIRED_WITH_TARGET = (
    "PMWSynthesizer is an intermediate step of a pipeline (or a column "
    "transformer) fitted with a target y, but its transform returns fresh "
    "synthetic rows that have nothing to do with the real rows: the next step "
    "would learn synthetic X paired with the real y, a model no better than "
    "the majority class. Nothing was charged. To train a model on private "
    "synthetic data, synthesise the features and the label together with "
    "skdp.synthesis.SyntheticDataClassifier(estimator=LogisticRegression(), "
    "categories=..., classes=...).fit(X, y); to publish a synthetic table, "
    "fit the synthesizer alone, without y: PMWSynthesizer(...).fit_transform(X)."
)


class PMWSynthesizer(
    PrivateEstimatorMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator
):
    """Differentially private synthetic data by private multiplicative weights (MWEM).

    Learns a private model of a table's distribution over a finite, public
    universe and draws synthetic rows from it. Each of ``n_rounds`` rounds
    selects the marginal (or linear query) the model gets most wrong with the
    exponential mechanism, measures it with noise, and updates the model by
    multiplicative weights on every measurement so far (MWEM, Hardt, Ligett
    & McSherry 2012).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of one fit, > 0.
    delta : float or None, default=None
        Privacy parameter delta of one fit with ``noise="gaussian"``, in
        (0, 1); ignored (a fit spends delta = 0) with ``noise="laplace"``.
        ``None`` follows skdp's default-delta rule (:ref:`default_delta`):
        :data:`~skdp.accounting.DEFAULT_DELTA` with Gaussian noise, 0 with
        Laplace noise.
    noise : {"gaussian", "laplace"}, default="gaussian"
        Measurement noise. ``"gaussian"`` is accounted in Renyi DP / zCDP
        and allows many more rounds for the same ``(epsilon, delta)``;
        ``"laplace"`` gives pure epsilon-DP (the original MWEM).
    workload : list of tuple, array-like of shape (n_queries, n_cells) or None, \
            default=None
        What the synthetic data should answer well.

        * A list of column tuples (names for DataFrames, positions for
          arrays): their marginals, and every sub-marginal, are the
          candidates of the selection step.
        * A numpy array of linear queries, one row per query, giving a weight in
          [0, 1] to each cell of the enumerated universe (the lecture's
          setting; only when the universe has at most ``2**22`` cells).
          Cells are ordered row-major over the columns, each column's
          values in domain order (declared categories, or bins from low to
          high).
        * ``None``: all 2- and 3-way marginals (3-way ones only while there
          are at most 1000 marginals in all).
    n_rounds : int or None, default=None
        Rounds of select-measure-update. With ``schedule="fixed"``, the
        number of rounds; ``None``: 20 with a query matrix, else
        ``max(16, n_features)``. With ``schedule="adaptive"``, the planned
        rounds that set the first round's share of the budget, and the most
        that are run (annealing spends the budget in fewer); ``None``: 80
        with a query matrix, else ``max(32, 16 * n_features)`` (AIM's
        16 per column; see Notes).
    schedule : {"adaptive", "fixed"}, default="adaptive"
        How the budget is spread over the rounds. ``"adaptive"`` (AIM's,
        McKenna et al. 2022): selection scores weighted by the workload and
        penalised by each marginal's expected noise, a round's budget
        raised when its measurement taught the model less than its noise,
        and rounds run until the budget is spent (see Notes).
        ``"fixed"``: ``n_rounds`` equal rounds, unweighted scores (the
        original MWEM schedule, and this class's earlier behaviour).
    bounds : dict, list or tuple or None, default=None
        Public ``(low, high)`` of numeric columns, which are cut into
        ``n_bins`` equal-width bins; values outside are clipped into the
        end bins. A dict maps column (name or position) to a pair, a list
        gives one pair (or None) per column, and a single pair applies to
        every numeric column. Columns with neither bounds nor categories
        take their range from the data, with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    categories : dict or list or None, default=None
        Public values of categorical columns, in code order (dict by column
        or list with one entry or None per column). A pandas ``Categorical``
        dtype's categories are used when not given here. Values outside the
        declared categories are counted in the first category (missing
        values are not such values: see ``missing_values``). Non-numeric
        columns without declared categories take them from the data (in
        their natural order: numbers by value, text alphabetically), with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    n_bins : int, default=10
        Bins of each numeric column.
    missing_values : {"error", "category"}, dict or list, default="error"
        Which columns may hold missing values (``None``, NaN, ``pandas.NA``):
        ``"category"`` gives every column one more value, "missing", modelled
        like any category (after the declared categories or the bins) and
        sampled as NaN (numeric columns) or ``None``; ``"error"`` refuses a
        missing value before the charge. A dict by column or a list with one
        entry per column sets it per column (columns a dict leaves out:
        ``"error"``). This is public schema, like ``categories``: declare it
        from what the data *may* contain, never from whether they do.
    max_model_size : int, default=1_000_000
        Largest number of cells of the model (junction tree); marginals
        that would exceed it are not offered to the selection. Bounds
        memory (about 8 bytes a cell, times a small constant) and time.
    sampling : {"rounded", "iid"}, default="rounded"
        How :meth:`sample` and :meth:`transform` turn the model into rows
        (post-processing: no privacy cost either way). ``"rounded"``: the
        counts of every cell of the model's junction-tree cliques are
        rounded versions of their expected counts, so the rows' marginals
        follow the model's far more closely than independent draws (see
        Notes, "Sampling"). ``"iid"``: each row is an independent draw from
        the model. Either way every cell count is unbiased for ``n`` times
        the model's probability.
    coarsen : "auto", dict or None, default="auto"
        Candidates measured on groups of consecutive values of some columns
        (marginal workloads only; see Notes, "Coarse marginals"). Each
        candidate marginal that holds such a column is also offered with
        that column's values merged into groups, a table with fewer cells
        and so less noise per measured value; the selection picks whichever
        version pays. ``"auto"``: ordered columns (numeric bins, or numeric
        categories in increasing order) with more than 32 values, in groups
        of ``ceil(n_values / 16)`` values. A dict maps a column to its group
        width (1: not coarsened). ``None``: plain marginals only (this
        class's behaviour before ``coarsen`` existed). The grouping depends
        on the declared domain only (public); the missing-value code is
        never merged with values. ``"auto"`` is the default because it was
        the more accurate on validation workloads that are not the
        benchmark's (``benchmarks/pmw_default_validation.py``: three
        workloads of wide ordered columns, mean L1 error of the rows 0.233
        against 0.245 with ``None`` at epsilon 1), for a median 1.9 times
        the CPU time of ``None`` (a larger model: the selected coarse
        marginals add their groups' cells).
    random_state : None, int, numpy Generator or RandomState, default=None
        ``None`` draws the privacy noise from the OS CSPRNG: the only
        choice for a release. A seed makes fits and samples reproducible
        and is **for testing only**: whoever knows it can remove the noise.
    budget : PrivacyBudget or None, default=None
        Shared budget charged by each fit.
    verbose : int, default=0
        Print each round's (private) selection.

    Attributes
    ----------
    model_ : DenseModel or JunctionTreeModel
        The synthetic distribution.
    domains_ : list of ColumnDomain
        Each column's discrete domain.
    selected_ : list
        The marginals (attribute-index tuples, or
        :class:`~skdp.synthesis.CoarseMarginal` with the tuple as ``clique``
        and the first code of each group as ``starts``) or query indices
        measured, in order.
    n_iter_ : int
        Mirror-descent steps of the estimation, over all rounds (each
        re-fit stops on the convergence rule of Notes, "Update").
    mwem_plan_ : MWEMPlan
        How the fit's budget is split over MWEM's steps: selection epsilon,
        noise multiplier or Laplace epsilon (of the first round with
        ``schedule="adaptive"``). Not to be confused with
        :meth:`~skdp.base.PrivateEstimatorMixin.privacy_plan`, which returns
        what a fit charges in all.
    privacy_event_ : ComposedEvent
        Everything the fit spent: every step (``schedule="fixed"``), or the
        one zCDP (pure-DP with Laplace noise) budget of the adaptive rounds.
    epsilon_, delta_ : float
        Its cost under :class:`~skdp.accounting.RDPAccountant`.
    budget_entry_ : LedgerEntry or None
        The ledger entry in ``budget``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    See Also
    --------
    skdp.mechanisms.exponential_mechanism : The selection step.
    skdp.mechanisms.gaussian_mechanism : The measurement step.

    Notes
    -----
    **Guarantee.** One fit is :math:`(\\varepsilon, \\delta)`-DP
    (``noise="gaussian"``) or :math:`\\varepsilon`-DP (``noise="laplace"``)
    under *replace-one-row* neighbouring, the number of rows :math:`n` being
    public. Everything the model, samples and ``marginal`` reveal is
    post-processing of the measurements.

    **Sensitivities.** Answers are fractions of :math:`n`. One counting
    query :math:`q: \\mathcal{X} \\to [0, 1]` moves by at most :math:`1/n`; a
    marginal table moves by at most :math:`2/n` in L1 and
    :math:`\\sqrt{2}/n` in L2 (one row leaves a cell and enters another). The
    selection score of a marginal :math:`C` is
    :math:`w_C (\\|M_C(\\mathrm{data}) - M_C(\\mathrm{model})\\|_1
    - \\mathbb{E}\\|\\mathrm{noise}_C\\|_1)`, where the expected L1 norm of
    the noise a measurement of :math:`C` would add,
    :math:`\\sqrt{2/\\pi}\\,\\sigma\\,n_C / n` for Gaussian noise of standard
    deviation :math:`\\sigma` (counts) on :math:`n_C` cells (:math:`b\\,n_C/n`
    for Laplace noise of scale :math:`b`), is public and penalises large
    marginals (AIM, McKenna et al. 2022, Section 4). With
    ``schedule="adaptive"`` the weight is AIM's
    :math:`w_C = \\sum_{S \\in W} |C \\cap S|` over the workload :math:`W`
    (public), with ``"fixed"`` :math:`w_C = 1`. The score of :math:`C`
    therefore moves by at most :math:`w_C \\cdot 2/n`, and the selection
    uses the sensitivity :math:`\\Delta = 2 \\max_C w_C / n` over the
    candidates offered. The score of a query is
    :math:`|q(\\mathrm{data}) - q(\\mathrm{model})|`, sensitivity :math:`1/n`.
    The exponential mechanism samples with weights
    :math:`\\exp(\\varepsilon_{\\mathrm{sel}} \\cdot \\mathrm{score} /
    (2 \\Delta))` (McSherry & Talwar 2007, Theorem 6). Which marginals are
    offered depends on public values and the noisy model only: those whose
    expected noise exceeds 2 (the largest possible L1 error) and those that
    would grow the model past ``max_model_size`` (adaptive: past
    ``max_model_size`` times the share of the budget spent so far, AIM's
    rule) are left out.

    **Budget.** A round's budget unit :math:`u` is a zCDP amount with
    Gaussian noise, 10% of which selects
    (:math:`\\varepsilon_{\\mathrm{sel}} = \\sqrt{8 \\cdot 0.1\\,u}`, the
    exponential mechanism being
    :math:`(\\varepsilon_{\\mathrm{sel}}^2 / 8)`-zCDP through bounded range,
    Cesar & Rogers 2021) and 90% measures (noise multiplier
    :math:`1 / \\sqrt{2 \\cdot 0.9\\,u}`, a
    :math:`(0.9\\,u)`-zCDP Gaussian measurement); with Laplace noise an
    epsilon split evenly (MWEM). The ``d`` one-way marginals are measured
    first (marginal workloads) at a round's measurement share.

    * ``schedule="fixed"``: ``n_rounds`` rounds, all with the same unit,
      the largest whose composition, by the budget's accountant, is within
      :math:`(\\varepsilon, \\delta)`. The fit charges one
      :class:`~skdp.accounting.ComposedEvent` of every step.
    * ``schedule="adaptive"`` (AIM's Algorithm 1 in MWEM's frame): the fit
      charges one :class:`~skdp.accounting.ZCDPEvent` of :math:`\\rho`, the
      largest whose :math:`(\\varepsilon, \\delta)` conversion by the
      budget's accountant (Renyi curve :math:`\\alpha\\rho`, Canonne, Kamath
      & Steinke 2020) is within budget (Laplace noise: one
      :class:`~skdp.accounting.PureDPEvent` of :math:`\\varepsilon`). The
      first round's unit is :math:`\\rho / (T + 0.9\\,d)` with :math:`T` =
      ``n_rounds`` (the fixed split of :math:`\\rho`). After a round that
      measured :math:`C`, if the measurement moved the model's marginal by
      no more than the noise explains,
      :math:`\\|M_C(p_{\\mathrm{new}}) - M_C(p_{\\mathrm{old}})\\|_1 \\le
      \\sqrt{2/\\pi}\\,\\sigma\\,n_C / n`, the unit of the next rounds is
      multiplied by 4 (:math:`\\sigma` halved, :math:`\\varepsilon_{\\mathrm{sel}}`
      doubled). A round is the last when the budget left is at most twice
      its unit, or it is round :math:`T`; it then spends all that is left.
      These decisions read only the noisy model and public values
      (post-processing).

    **Proof of the adaptive total.** Let :math:`\\rho_t` be what step
    :math:`t` (a one-way measurement, a selection or a measurement) spends;
    it is chosen from earlier outputs only. Each regular round spends
    :math:`u_t \\le (\\rho - \\sum_{s<t} \\rho_s) / 2` and the last spends
    :math:`(1 - 10^{-9})` of what is left, so :math:`\\sum_t \\rho_t \\le
    \\rho` for *every* sequence of outputs (tested with random annealing
    decisions). Step :math:`t` is :math:`\\rho_t`-zCDP given the past, i.e.
    :math:`(\\alpha, \\alpha\\rho_t)`-Renyi DP at every order
    :math:`\\alpha > 1`; by the Renyi filter (Feldman & Zrnic 2021), whose
    bound holds for adaptively chosen :math:`\\rho_t` as long as their sum
    never exceeds :math:`\\rho`, the whole fit is
    :math:`(\\alpha, \\alpha\\rho)`-Renyi DP at every :math:`\\alpha`:
    :math:`\\rho`-zCDP, exactly the charged event. The ledger records that
    event, so its total is exact (the worst case over all runs, charged
    once up front). With Laplace noise the same argument runs with pure
    epsilons (the pure-DP filter of Rogers et al. 2016).

    **Coarse marginals.** With ``coarsen``, the candidates also include
    :math:`R M_C`, the marginal of :math:`C` with the values of some
    columns merged into fixed groups of consecutive codes (:math:`R` adds
    up the cells of a group). :math:`R` is public and one row still leaves
    one cell and enters one, so :math:`R M_C` has the sensitivities of a
    marginal (:math:`2/n` in L1, :math:`\\sqrt{2}/n` in L2) and is scored,
    selected and measured exactly as one, with its own (smaller) number of
    cells in the noise penalty; its measurement enters the estimation
    through :math:`R` (the model keeps every value: within a group, it
    splits the mass as its other measurements say). The model holds each
    grouping as one more attribute, a function of its column, so a coarse
    marginal is the model's marginal on that attribute and its table holds
    the groups, not the column's values: the same model and the same
    estimation steps in fewer cells. That is post-processing of the same
    noisy measurements, and ``max_model_size`` is priced on the columns
    alone as without it (the model is never larger), so the candidates
    offered and the guarantee are unchanged. A wide ordered column
    (Adult's 85 ages) makes every marginal that holds it too noisy to
    measure at full resolution, while its structure is smooth. The default
    was chosen on validation workloads only
    (``benchmarks/pmw_default_validation.py``: 8 held-out Adult columns, 64
    other triples of Adult's 14, and the raw Adult rows binned by public
    bounds; 3 seeds each, epsilon 1), where it lowered the mean L1 error of
    the released rows from 0.208 to 0.205, 0.208 to 0.188 and 0.318 to
    0.307, at a median 1.9 times the CPU time. On the test workloads of
    ``benchmarks/pmw_adult.py`` at :math:`\\varepsilon = 1` (seeds 0 to 2) it
    lowers the rows' error from 0.135 to 0.133 (8 columns) and from 0.222
    to 0.196 (14 columns), at 1.6 times the CPU time of the fit (5.4 and
    9.4 s, from 3.3 and 5.7).

    **Update.** After each measurement the model is re-fitted to all
    measurements so far by entropic mirror descent on their
    inverse-variance-weighted squared error: ``p(x) <- p(x) exp(-eta *
    gradient(x))``, renormalised, i.e. multiplicative weights with MWEM's
    replay of past measurements, step ``eta`` by backtracking line search
    (private-pgm's estimator, McKenna, Sheldon & Miklau 2019). Each re-fit
    stops after 30 steps (100 after the last round), or earlier, at the
    first step that lowers that error by at most a fraction 1e-3 of its
    value (``n_iter_`` counts the steps). The rule reads only the noisy
    measurements, the model fitted to them and public constants, so where
    it stops is post-processing of the measurements: it costs no privacy.
    Each step reads every measured marginal from one pass over each of the
    model's tables and reduces every measured view (plain or coarse) from
    its marginal.

    **Representation.** Universes of at most 4096 cells (and explicit query
    matrices) use a dense histogram, as in MWEM. Larger ones, such as the
    14 discretized Adult columns (about ``10**19`` cells), use a log-linear
    model over a junction tree of the measured marginals: ``p`` is never
    formed, marginals come from exact belief propagation and samples from
    forward sampling along the tree. Its size is capped by
    ``max_model_size``.

    **Formats.** A DataFrame's column names and dtypes are treated as
    public schema, like the declared bounds: an integer column is sampled
    as whole numbers in its dtype, a float column as floats. pandas infers
    dtypes from the values (``read_csv`` makes a column float64 as soon as
    one value is ``30.5``), so for a release fix them from public knowledge
    (``read_csv(..., dtype=...)`` or ``astype``) rather than letting the
    data choose. Arrays are returned as float64 when every column is
    numeric (binned, or categories that are all numbers), else as objects:
    from the domains, never from the draws. Integer bounds outside an
    integer dtype's range, and date columns, are refused before the charge.

    **Sampling.** With ``sampling="rounded"`` the rows are built node by
    node along the model's junction tree (one node: the dense table),
    conditioning each node's new attributes on its separator with the parent
    node, already assigned. The :math:`m_s` rows of a separator cell
    :math:`s` get counts of the new cells :math:`k` that are
    :math:`\\lfloor m_s p(k \\mid s) \\rfloor` or
    :math:`\\lceil m_s p(k \\mid s) \\rceil` and sum to :math:`m_s`:
    systematic sampling, one uniform offset per separator cell and
    :math:`m_s` evenly spaced points through that cell's conditional CDF
    (Madow 1949, [8]). The copies are dealt to the rows sorted by their other,
    earlier attributes (fewest values first, ties at random), each cell's
    copies evenly spaced through that order, so the rows of every value of
    those attributes also get each cell in proportion (to about one copy)
    rather than a random share. So

    * every cell of the first node (the whole table for a dense model) is
      within one count of :math:`n p`, as is every marginal over a leading
      run of its attributes (its first attribute, first two, ...);
    * every count is unbiased, :math:`\\mathbb{E}[\\text{count}] = n p`, as
      with independent draws;
    * for every node :math:`i`, the L1 distance between the rows' counts of
      its attributes and :math:`n p_i` is less than
      :math:`\\sum_j |C_j|`, the cells of the nodes :math:`j` on the path
      from the root to :math:`i`: the node's rounding adds less than one
      per cell, and the separator counts inherit the parent's error, which
      marginalising does not increase. Any marginal inside a node has this
      bound too; divided by :math:`n` it is the bound on the normalised L1
      error that the rows add to the model's.

    Independent draws add an error of order
    :math:`\\sqrt{|C| / n}` to a marginal of :math:`|C|` cells instead.
    This is the idea of private-pgm's ``synthetic_data`` (which rounds
    attribute by attribute with the remainder drawn at random).

    **One data path; dask.** ``fit`` reads the rows of a NumPy array, a
    pandas DataFrame and a dask array or DataFrame (the ``skdp[dask]``
    extra) the same way, through blocks of rows: before the charge, one
    pass checks the values (missing, non-numeric, infinite or unhashable
    values are refused with the same message whatever holds the rows;
    skipped for plain integer columns with declared domains); after it, one
    pass encodes each block and counts every marginal the loop may read
    (``np.bincount`` per block, exact integer counts added in a tree); the
    loop, noise included, runs in the client. With the same
    ``random_state`` the model and the samples are therefore the same in
    memory and on dask, exactly. On dask every column needs a declared
    domain (``categories``, ``bounds`` or a ``Categorical`` dtype with
    known categories; domains are never read from dask data) and the
    marginals counted must total at most ``2**25`` cells (refused before
    the charge otherwise); in memory, beyond that, each marginal is counted
    when the loop asks for it.

    ``transform(X)`` returns ``len(X)`` fresh synthetic rows: it reads only
    the number of rows of ``X``, never its values. Because the rows are
    random draws, the estimator is tagged non-deterministic (its output does
    not follow the order or subsets of ``X``); with a fixed
    ``random_state`` repeated calls return the same rows.

    References
    ----------
    .. [1] M. Hardt, K. Ligett and F. McSherry. "A simple and practical
       algorithm for differentially private data release". NeurIPS 2012.
    .. [2] M. Hardt and G. N. Rothblum. "A multiplicative weights mechanism
       for privacy-preserving data analysis". FOCS 2010.
    .. [3] R. McKenna, D. Sheldon and G. Miklau. "Graphical-model based
       estimation and inference for differential privacy". ICML 2019.
    .. [4] R. McKenna, B. Mullins, D. Sheldon and G. Miklau. "AIM: an
       adaptive and iterative mechanism for differentially private
       synthetic data". VLDB 2022.
    .. [5] M. Cesar and R. Rogers. "Bounding, concentrating, and truncating:
       unifying privacy loss composition for data analytics". ALT 2021.
    .. [6] V. Feldman and T. Zrnic. "Individual privacy accounting via a
       Renyi filter". NeurIPS 2021.
    .. [7] R. Rogers, A. Roth, J. Ullman and S. Vadhan. "Privacy odometers
       and filters: pay-as-you-go composition". NeurIPS 2016.
    .. [8] W. G. Madow. "On the theory of systematic sampling, II". Annals
       of Mathematical Statistics 20(3), 1949.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.synthesis import PMWSynthesizer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 3, size=(500, 3))
    >>> synth = PMWSynthesizer(epsilon=1.0, categories=[[0, 1, 2]] * 3,
    ...                        random_state=0).fit(X)
    >>> synth.sample(4).shape
    (4, 3)
    >>> marginal = synth.marginal([0])  # the model's distribution of column 0
    >>> marginal.shape, bool(abs(marginal.sum() - 1) < 1e-9)
    ((3,), True)
    >>> round(synth.epsilon_, 6) <= 1.0
    True
    """

    _data_bound_params = ("bounds", "categories")
    _parameter_constraints: dict = {
        "epsilon": [EPSILON_CONSTRAINT],
        "delta": [Interval(Real, 0, 1, closed="left"), None],
        "noise": [StrOptions({"gaussian", "laplace"})],
        "workload": ["array-like", None],
        "n_rounds": [Interval(Integral, 1, None, closed="left"), None],
        "schedule": [StrOptions({"adaptive", "fixed"})],
        "bounds": [dict, list, tuple, None],
        "categories": [dict, list, None],
        "n_bins": [Interval(Integral, 1, None, closed="left")],
        "missing_values": [StrOptions({"error", "category"}), dict, list],
        "max_model_size": [Interval(Integral, 1, None, closed="left")],
        "sampling": [StrOptions({"rounded", "iid"})],
        "coarsen": [StrOptions({"auto"}), dict, None],
        "random_state": ["random_state"],
        "budget": [HasMethods(["spend", "check"]), None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float | None = None,
        *,
        noise: Literal["gaussian", "laplace"] = "gaussian",
        workload: list[tuple[Any, ...]] | ArrayLike | None = None,
        n_rounds: int | None = None,
        schedule: Literal["adaptive", "fixed"] = "adaptive",
        bounds: TableBounds | None = None,
        categories: TableCategories | None = None,
        n_bins: int = 10,
        missing_values: MissingValues = "error",
        max_model_size: int = 1_000_000,
        sampling: Literal["rounded", "iid"] = "rounded",
        coarsen: Literal["auto"] | dict[Hashable, int] | None = "auto",
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
        verbose: int = 0,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.noise = noise
        self.workload = workload
        self.n_rounds = n_rounds
        self.schedule = schedule
        self.bounds = bounds
        self.categories = categories
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.max_model_size = max_model_size
        self.sampling = sampling
        self.coarsen = coarsen
        self.random_state = random_state
        self.budget = budget
        self.verbose = verbose

    # -- input handling ----------------------------------------------------------

    def _specs(self, table):
        """Each column's spec, from the parameters and the table's metadata."""
        return declare_columns(
            table.names,
            table.dtypes,
            categories=self.categories,
            bounds=self.bounds,
            n_bins=self.n_bins,
            missing_values=self.missing_values,
            array_kind=table.array_kind,
            # An array fitted without categories is numbers only.
            all_numeric=table.dtypes is None and not self.categories,
        )

    def _data_derived_params(self) -> tuple[str, ...]:
        """The parameters a fit reads from the data (see ``undeclared_domains``)."""
        return undeclared_domains(self.bounds, self.categories)

    def _delta(self) -> float:
        """The delta of the plan (Gaussian measurements need delta > 0)."""
        return resolve_delta(self.delta, needs_delta=self.noise == "gaussian")

    def _may_be_missing(self) -> bool:
        """Whether any column may declare a missing-value code."""
        option = self.missing_values
        if isinstance(option, str):
            return option == "category"
        values = option.values() if isinstance(option, dict) else option
        return any(v == "category" for v in values)

    def _attribute(self, column, domains=None):
        """Position of a column given by name or position."""
        domains = self.domains_ if domains is None else domains
        names = [d.name for d in domains]
        if isinstance(column, Integral) and not isinstance(column, bool):
            if column in names:
                return names.index(column)
            if 0 <= column < len(names) and all(isinstance(n, int) for n in names):
                return int(column)
        if column in names:
            return names.index(column)
        raise ValueError(f"Unknown column {column!r}; columns are {names!r}.")

    def _groupings(self, domains):
        """First codes of the groups of each coarsened attribute (public)."""
        if self.coarsen is None:
            return {}
        if self.coarsen == "auto":
            widths = {
                a: -(-domain.n_values // _COARSE_GROUPS)
                for a, domain in enumerate(domains)
                if domain.n_values > _COARSE_MIN_VALUES and _ordered(domain)
            }
        else:
            widths = {}
            for column, width in self.coarsen.items():
                integer = isinstance(width, Integral) and not isinstance(width, bool)
                if not integer or width < 1:
                    raise ValueError(
                        f"coarsen[{column!r}] must be an int >= 1, got {width!r}."
                    )
                widths[self._attribute(column, domains)] = int(width)
        groupings = {}
        for a, width in widths.items():
            domain = domains[a]
            if width < 2 or width >= domain.n_values:
                continue
            starts = list(range(0, domain.n_values, width))
            if domain.missing:  # the missing-value code stays a group of its own
                starts.append(domain.n_values)
            groupings[a] = tuple(starts)
        return groupings

    def _marginal_workload(self, d, domains):
        if self.workload is None:
            pairs = list(itertools.combinations(range(d), 2))
            triples = list(itertools.combinations(range(d), 3))
            if len(pairs) + len(triples) <= _DEFAULT_WORKLOAD_CAP:
                workload = pairs + triples
            else:
                workload = pairs
            return workload or [(a,) for a in range(d)]
        if len(self.workload) == 0:
            raise ValueError(_EMPTY_WORKLOAD)
        return [self._marginal(m, domains, "workload") for m in self.workload]

    def _marginal(self, marginal, domains, what):
        """A marginal given by column names or positions, as positions."""
        if isinstance(marginal, str) or not hasattr(marginal, "__iter__"):
            marginal = (marginal,)
        attrs = tuple(self._attribute(c, domains) for c in marginal)
        if len(attrs) == 0 or len(set(attrs)) != len(attrs):
            raise ValueError(
                f"Each {what} marginal needs distinct columns, got {marginal!r}."
            )
        return attrs

    def _initial_marginals(self, initial_marginals, domains):
        """The marginals measured before the rounds, as sorted positions."""
        if self._is_query_matrix():
            raise ValueError(
                "initial_marginals needs a marginal workload; with a query "
                "matrix nothing is measured before the rounds."
            )
        if len(initial_marginals) == 0:
            raise ValueError(
                "initial_marginals needs at least one marginal (None: the "
                "one-way marginals)."
            )
        return [
            tuple(sorted(self._marginal(m, domains, "initial")))
            for m in initial_marginals
        ]

    def _query_workload(self, n_cells):
        queries = np.asarray(self.workload, dtype=float)
        if queries.shape[0] == 0:
            raise ValueError(_EMPTY_WORKLOAD)
        if n_cells > _QUERY_MAX_CELLS:
            raise ValueError(
                f"An explicit query matrix needs an enumerable universe; this one "
                f"has {n_cells} cells (at most {_QUERY_MAX_CELLS})."
            )
        if queries.shape[1] != n_cells:
            raise ValueError(
                f"workload has {queries.shape[1]} columns but the universe has "
                f"{n_cells} cells."
            )
        if not np.all(np.isfinite(queries)) or queries.min() < 0 or queries.max() > 1:
            raise ValueError("Query weights must lie in [0, 1].")
        return queries

    def _is_query_matrix(self):
        # Lists and tuples hold marginals; a 2-D numeric array holds queries.
        if not isinstance(self.workload, np.ndarray):
            return False
        return self.workload.ndim == 2 and self.workload.dtype.kind in "biuf"

    # -- fit -----------------------------------------------------------------------

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> Self:
        """Learn the private model of ``X``; charges the budget once.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric and categorical columns; a dask array or DataFrame is
            counted on its workers (see Notes).
        y : None
            Ignored, except inside a ``Pipeline``, ``FeatureUnion`` or
            ``ColumnTransformer`` fitted with a target: there the synthesizer
            refuses to fit (``ValueError``, nothing charged), because the
            composite would pair its synthetic rows with the real ``y``. Use
            :class:`~skdp.synthesis.SyntheticDataClassifier` to learn from
            synthetic data.

        Returns
        -------
        self : PMWSynthesizer
        """
        if y is not None and fitting_as_step_with_target(self):
            raise ValueError(_PAIRED_WITH_TARGET)
        return self._fit_private(X, y)

    def plan_fit(
        self,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        initial_marginals: Sequence[Sequence[Hashable]] | None = None,
    ) -> PlannedFit:
        """Validate and plan a fit on ``X``; charge nothing yet.

        The first phase of :meth:`fit`: every input and parameter problem
        is raised here, and ``plan_fit(X).run()`` is ``fit(X)``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            As for :meth:`fit`.
        y : None
            Ignored.
        initial_marginals : list of tuple or None, default=None
            The marginals measured before the first round, each a tuple of
            columns (names for DataFrames, positions for arrays), instead
            of the ``n_features`` one-way marginals (marginal workloads
            only). Public: fixed before the data are read. Any marginal has
            the same sensitivity, so the budget split depends only on how
            many there are; a marginal of every column with a label (what
            :class:`~skdp.synthesis.SyntheticDataClassifier` measures first)
            starts the model from those relations instead of from
            independent columns.

        Returns
        -------
        planned : PlannedFit
            ``planned.plan.event`` is what ``planned.run()`` charges.

        Examples
        --------
        >>> import numpy as np
        >>> from skdp import PMWSynthesizer
        >>> X = np.random.default_rng(0).integers(0, 2, size=(500, 3))
        >>> synth = PMWSynthesizer(categories=[[0, 1]] * 3, random_state=0)
        >>> planned = synth.plan_fit(X, initial_marginals=[(0, 2), (1, 2)])
        >>> planned.plan.settings["mwem"].n_init
        2
        >>> planned.run().sample(4).shape
        (4, 3)
        """
        prepared, plan = self._plan_with_input(
            X, y, initial_marginals=initial_marginals
        )
        return PlannedFit(self, prepared, plan)

    def _prepare_fit(self, X, y=None, *, initial_marginals=None):
        """Validate ``X`` and build its domains; everything that can fail happens here.

        Memory and dask inputs take the same path: the schema from the
        metadata, then one pass over the row blocks that checks the values
        (and, in memory only, reads the domains not declared).
        """
        table = read_table(self, X)
        if self.noise == "gaussian" and not self._delta() > 0:
            raise ValueError("noise='gaussian' needs delta > 0.")
        specs = self._specs(table)
        undeclared = [spec.name for spec in specs if spec.domain is None]
        if table.rows.is_dask and undeclared:
            raise ValueError(
                f"Columns {undeclared!r} have no declared domain. On a dask "
                "collection every column needs public categories (categories=... "
                "or a pandas Categorical dtype with known categories) or bounds "
                "(bounds=...): the in-memory fit may read them from the data "
                "with a PrivacyLeakWarning, but the dask fit does not, since the "
                "values read would be published in the synthetic rows. Nothing "
                "was charged."
            )
        domains = resolve_domains(
            specs, inspect_rows(table.rows, specs), n_bins=self.n_bins
        )
        sizes = tuple(domain.size for domain in domains)
        n_cells = math.prod(sizes)
        d = len(sizes)
        queries = candidates = None
        if self._is_query_matrix():
            queries = self._query_workload(n_cells)
            n_init, initial = 0, []
            n_rounds = self.n_rounds or (
                20 if self.schedule == "fixed" else _ADAPTIVE_QUERY_ROUNDS
            )
            workload = None
        else:
            workload = self._marginal_workload(d, domains)
            closure = set()
            for marginal in workload:
                for r in range(1, len(marginal) + 1):
                    closure.update(
                        tuple(sorted(s)) for s in itertools.combinations(marginal, r)
                    )
            closure.update((a,) for a in range(d))
            candidates = sorted(closure, key=lambda c: (len(c), c))
            candidates = coarse_views(candidates, self._groupings(domains))
            n_init = d
            n_rounds = self.n_rounds or (
                max(16, d)
                if self.schedule == "fixed"
                else max(_ADAPTIVE_MIN_ROUNDS, _ADAPTIVE_ROUNDS_PER_COLUMN * d)
            )
            initial = [(a,) for a in range(d)]
        if initial_marginals is not None:
            initial = self._initial_marginals(initial_marginals, domains)
            n_init = len(initial)
        return {
            "data": DataMarginals(table.rows, domains),
            "domains": domains,
            "sizes": sizes,
            "n_cells": n_cells,
            "queries": queries,
            "candidates": candidates,
            "n_init": n_init,
            "initial": initial,
            "n_rounds": n_rounds,
            "workload": workload,
            "pandas": table.pandas,
        }

    def _plan_fit(self, prepared) -> FitPlan:
        """Everything the fit will spend and hold, from public parameters only."""
        sizes = prepared["sizes"]
        too_big = [d.name for d in prepared["domains"] if d.size > self.max_model_size]
        if too_big:
            raise ValueError(
                f"Columns {too_big} have more values (bins or categories) than "
                f"max_model_size={self.max_model_size} cells; lower n_bins, merge "
                "categories or raise max_model_size."
            )
        candidates = prepared["candidates"]
        if candidates is not None:
            # Marginals larger than the model may hold can never be measured:
            # leaving them out depends on public sizes only.
            candidates = [
                c
                for c in candidates
                if len(base_clique(c)) == 1
                or math.prod(sizes[a] for a in base_clique(c)) <= self.max_model_size
            ]
        dense = (
            prepared["queries"] is not None or prepared["n_cells"] <= _DENSE_MAX_CELLS
        )
        if candidates is None:
            cells = {1}
        else:
            cells = {
                view_cells(c, sizes)
                for c in list(candidates) + list(prepared["initial"])
            }
        mwem_plan = plan_privacy(
            self.epsilon,
            self._delta(),
            self.noise,
            prepared["n_init"],
            prepared["n_rounds"],
            self._accountant(),
            schedule=self.schedule,
            max_cells=max(cells),
            n_samples=prepared["data"].n_samples,
        )
        n = prepared["data"].n_samples
        if candidates is None:
            noise_plans = {
                "query": plan_measurement(mwem_plan, 1, query=True, n_samples=n)
            }
        else:
            noise_plans = {
                k: plan_measurement(mwem_plan, k, n_samples=n) for k in sorted(cells)
            }
        if mwem_plan.schedule == "adaptive":
            # The noisiest round is the first; the most precise spends the
            # whole budget at once: if both can be planned, so can every
            # round in between (checked here, before the charge).
            precise = RoundSettings.from_unit(
                mwem_plan.noise, mwem_plan.total, mwem_plan.max_cells, n
            )
            for key in noise_plans:
                if key == "query":
                    plan_measurement(precise, 1, query=True, n_samples=n)
                else:
                    plan_measurement(precise, key, n_samples=n)
        # The counting pass (after the charge), planned here: refused on dask
        # beyond its cap, before anything is charged.
        counting = prepared["data"].plan(_counted_cliques(prepared, candidates))
        largest = max(p.scale * p.gamma for p in noise_plans.values()) / n
        if not largest <= _MAX_NOISE_FRACTION:
            raise ValueError(
                f"epsilon={self.epsilon!r} on {n} rows makes each measurement's "
                f"noise about {largest:.3g} times the whole table; the model "
                "would learn nothing and its weights underflow. Use a larger "
                "epsilon or fewer rounds."
            )
        # Memory: the model (at most max_model_size cells) and, during a
        # selection, one candidate's marginal at a time, as float64 with a
        # few temporaries each; and the data's counts (the counting pass).
        largest = (
            prepared["n_cells"]
            if dense
            else max(math.prod(sizes[a] for a in base_clique(c)) for c in candidates)
        )
        model_cells = prepared["n_cells"] if dense else self.max_model_size
        check_memory(
            8.0 * 4 * (largest + model_cells) + counting.memory,
            f"PMWSynthesizer's model ({model_cells} cells), largest marginal "
            f"({largest} cells) and counts ({counting.cells} cells)",
            "lower max_model_size, n_bins or the number of declared categories",
        )
        check_work(
            mwem_work(
                sizes=sizes,
                initial=prepared["initial"],
                n_rounds=prepared["n_rounds"],
                candidates=candidates,
                dense=dense,
                max_model_size=self.max_model_size,
                n_queries=0
                if prepared["queries"] is None
                else len(prepared["queries"]),
                round_iter=_ROUND_ITER,
                final_iter=_FINAL_ITER,
            ),
            f"PMWSynthesizer's run ({len(sizes)} columns, {prepared['n_rounds']} "
            "rounds)",
            "use fewer rounds (n_rounds), fewer columns or a smaller max_model_size",
        )
        weights = None
        if mwem_plan.schedule == "adaptive" and candidates is not None:
            weights = workload_weights(prepared["workload"], candidates)
        delta = self._delta() if self.noise == "gaussian" else 0.0
        return FitPlan(
            ComposedEvent(mwem_plan.events),
            delta,
            {
                "domains": prepared["domains"],
                "mwem": mwem_plan,
                "candidates": candidates,
                "dense": dense,
                "counting": counting,
                "noise_plans": noise_plans,
                "weights": weights,
            },
        )

    def _run_fit(self, prepared, plan, source) -> None:
        mwem_plan = plan.settings["mwem"]
        # The one counting pass over the data (in memory or on the workers).
        data = prepared["data"].count(plan.settings["counting"])
        model, selected, n_iter = run_mwem(
            data,
            prepared["sizes"],
            mwem_plan,
            source,
            candidates=plan.settings["candidates"],
            queries=prepared["queries"],
            dense=plan.settings["dense"],
            max_model_size=self.max_model_size,
            round_iter=_ROUND_ITER,
            final_iter=_FINAL_ITER,
            tol=_TOL,
            verbose=self.verbose,
            noise_plans=dict(plan.settings["noise_plans"]),
            initial=prepared["initial"],
            weights=plan.settings["weights"],
        )
        self._pandas_input_ = prepared["pandas"]
        self.domains_ = plan.settings["domains"]
        self.mwem_plan_ = mwem_plan
        self.model_ = model
        self.selected_ = selected
        self.n_iter_ = n_iter

    # -- outputs -------------------------------------------------------------------

    def sample(
        self,
        n_samples: int,
        random_state: int | np.random.RandomState | None = None,
    ) -> NDArray[Any] | pd.DataFrame:
        """Draw synthetic rows from the model.

        Parameters
        ----------
        n_samples : int
            Number of rows, >= 0.
        random_state : None, int or Generator, default=None
            Randomness of the draw (post-processing: no privacy cost).
            ``None`` uses the estimator's ``random_state``, so a seeded
            estimator samples reproducibly.

        Returns
        -------
        rows : ndarray or DataFrame of shape (n_samples, `n_features_in_`)
            A DataFrame with the input's columns and dtypes if the model was
            fitted on one (categories preserved), else an array (float64
            when every column is numeric). Numeric values are drawn
            uniformly inside their bin. Their codes follow ``sampling``.
        """
        check_is_fitted(self, "model_")
        if isinstance(n_samples, bool) or not isinstance(n_samples, Integral):
            raise ValueError(f"n_samples must be an integer >= 0, got {n_samples!r}.")
        if n_samples < 0:
            raise ValueError(f"n_samples must be an integer >= 0, got {n_samples!r}.")
        seed = self.random_state if random_state is None else random_state
        rng = check_random_source(seed).numpy_generator()
        if self.sampling not in ("rounded", "iid"):  # set_params after fit
            raise ValueError(
                f"sampling must be 'rounded' or 'iid', got {self.sampling!r}."
            )
        codes = self.model_.sample(int(n_samples), rng, method=self.sampling)
        return decode_rows(codes, self.domains_, self._pandas_input_, rng)

    def transform(self, X: ArrayLike) -> NDArray[Any] | pd.DataFrame:
        """Return ``len(X)`` synthetic rows; reads only the row count of ``X``.

        The values of ``X`` never enter the output: they are validated as
        in :meth:`fit` (shape, column names, and the values against the
        fitted domains: missing values, non-numbers, infinities) and then
        only the number of rows is used, so
        ``fit_transform(X)`` turns a data set into its synthetic twin of the
        same size.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, `n_features_in_`)

        Returns
        -------
        rows : ndarray or DataFrame of shape (n_samples, `n_features_in_`)
            As :meth:`sample` with the estimator's ``random_state``.
        """
        check_is_fitted(self, "model_")
        # Same validation as fit; the output depends on the row count only.
        table = read_table(self, X, reset=False)
        specs = [ColumnSpec.of(domain) for domain in self.domains_]
        resolve_domains(specs, inspect_rows(table.rows, specs), n_bins=self.n_bins)
        return self.sample(table.n_samples)

    def marginal(self, columns: Hashable | Sequence[Hashable]) -> NDArray[np.float64]:
        """The model's marginal distribution of ``columns``.

        Parameters
        ----------
        columns : sequence of column names or positions

        Returns
        -------
        table : ndarray
            Probabilities, one axis per column in the given order, each
            column's values in domain order (categories, or bins low to
            high, then "missing" for a column declared by
            ``missing_values``). Sums to 1.
        """
        check_is_fitted(self, "model_")
        if isinstance(columns, str) or not hasattr(columns, "__iter__"):
            columns = [columns]
        attrs = tuple(self._attribute(c) for c in columns)
        if len(set(attrs)) != len(attrs) or not attrs:
            raise ValueError(
                f"columns must be distinct and non-empty, got {columns!r}."
            )
        return self.model_.marginal(attrs)

    def answer_queries(self, queries: ArrayLike) -> NDArray[np.float64]:
        """Answers of linear queries on the model, ``queries @ p``.

        Parameters
        ----------
        queries : array-like of shape (n_queries, n_cells)
            Per-cell weights over the enumerated universe (see ``workload``).

        Returns
        -------
        answers : ndarray of shape (n_queries,)
        """
        check_is_fitted(self, "model_")
        if not isinstance(self.model_, DenseModel):
            raise ValueError(
                "Explicit queries need the dense representation (a universe of "
                f"at most {_DENSE_MAX_CELLS} cells or a query-matrix workload); "
                "use marginal() instead."
            )
        queries = np.atleast_2d(np.asarray(queries, dtype=float))
        if queries.shape[1] != self.model_.n_cells:
            raise ValueError(
                f"queries have {queries.shape[1]} columns; the universe has "
                f"{self.model_.n_cells} cells."
            )
        return self.model_.answer_queries(queries)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Synthetic rows are random draws, not functions of the input rows.
        tags.non_deterministic = True
        tags.input_tags.allow_nan = self._may_be_missing()
        return tags


def _counted_cliques(prepared, candidates):
    """Every marginal the MWEM loop may read: initial ones and candidates,
    or the whole universe for a query matrix."""
    if prepared["queries"] is not None:
        return [tuple(range(len(prepared["sizes"])))]
    cliques = list(prepared["initial"]) + [base_clique(c) for c in candidates]
    return list(dict.fromkeys(cliques))


def _ordered(domain):
    """Whether consecutive codes hold neighbouring values (bins, sorted numbers)."""
    if domain.categories is None:
        return True
    values = domain.categories
    return domain.numeric and all(x < y for x, y in zip(values, values[1:]))
