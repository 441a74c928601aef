"""The tree ensembles' guarantee: what is released, with what noise, charged how.

* **Calibration**: every noise draw of a fit uses the sigma its plan set,
  that sigma is the plan's multiplier times the sensitivity the docstrings
  state, every draw is in the charged event (and nothing else is), and the
  reported epsilon is the composition of those Gaussians.
* **Sensitivities**, by brute force: one row of a tiny dataset replaced in
  every way over a grid of values (NaN, undeclared categories, values
  beyond the bounds, every label); the exact statistics move by at most
  the declared L2 sensitivity, which is attained.
* **Only the noise is released**: with the values handed to the noise
  replaced by zeros, two different datasets of the same public schema
  give the same fitted estimator, bit for bit, and the same warnings.
* **Refusals before the charge**, the leak warnings, and an audit (slow).
"""

import dataclasses
import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from skdp import PrivacyBudget
from skdp.accounting import ComposedEvent, PrivacyAccountant, SelfComposedEvent
from skdp.audit import audit_estimator
from skdp.ensemble import (
    DPHistGradientBoostingClassifier,
    DPHistGradientBoostingRegressor,
    DPRandomForestClassifier,
    DPRandomForestRegressor,
    _boosting,
    _forest,
)
from skdp.ensemble._binning import (
    FINE_CELLS,
    encode_block,
    fine_counts_block,
    resolve_schema,
)
from skdp.ensemble._boosting import _bin_counts_block, _gradient_block
from skdp.ensemble._forest import _draw_structure, _leaf_counts_block
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.utils import check_random_source

CATEGORIES = ["a", "b", "c"]
Y_BOUNDS = (-1.0, 4.0)
WIDTH = Y_BOUNDS[1] - Y_BOUNDS[0]


def _table(n=600, kind="classification", n_classes=2, seed=0):
    """Two numeric features in (0, 1) (some NaN) and one string feature."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, 3), dtype=object)
    x0, x1 = rng.uniform(size=n), rng.uniform(size=n)
    x1[rng.uniform(size=n) < 0.1] = np.nan
    colour = np.array(CATEGORIES + [None], dtype=object)[rng.integers(0, 4, size=n)]
    X[:, 0], X[:, 1], X[:, 2] = x0, x1, colour
    score = x0 + 0.3 * (colour == "a") + 0.1 * rng.normal(size=n)
    if kind == "regression":
        return X, np.clip(3 * score, *Y_BOUNDS)
    edges = np.quantile(score, np.arange(1, n_classes) / n_classes)
    return X, np.digitize(score, edges)


# (class, declared schema, kind, number of classes)
ESTIMATORS = {
    "boosting-2": (DPHistGradientBoostingClassifier, {"classes": [0, 1]}, 2),
    "boosting-3": (DPHistGradientBoostingClassifier, {"classes": [0, 1, 2]}, 3),
    "boosting-regression": (
        DPHistGradientBoostingRegressor,
        {"y_bounds": Y_BOUNDS},
        None,
    ),
    "forest-2": (DPRandomForestClassifier, {"classes": [0, 1]}, 2),
    "forest-3": (DPRandomForestClassifier, {"classes": [0, 1, 2]}, 3),
    "forest-regression": (DPRandomForestRegressor, {"y_bounds": Y_BOUNDS}, None),
}


def _declared(name, **params):
    cls, target, _ = ESTIMATORS[name]
    schema = dict(
        bounds=(0, 1),
        categorical_features=[2],
        categories=[CATEGORIES],
        random_state=0,
        **target,
    )
    return cls(**{**schema, **params})


def _data_for(name, n=600, seed=0):
    n_classes = ESTIMATORS[name][2]
    kind = "regression" if n_classes is None else "classification"
    return _table(n, kind, n_classes or 2, seed)


def _releases(plan, rounds=None):
    """The NoisePlans of a boosting or forest plan, in the order they run."""
    if hasattr(plan, "gradient_noise"):
        first = [plan.fine_noise, plan.count_noise, plan.intercept_noise]
        return first + list(plan.gradient_noise) * plan.rounds
    rest = [plan.leaf_noise] + ([plan.sum_noise] if plan.sum_noise else [])
    return [plan.fine_noise] + rest


def _flatten(event):
    if isinstance(event, ComposedEvent):
        return [e for part in event.events for e in _flatten(part)]
    if isinstance(event, SelfComposedEvent):
        return _flatten(event.event) * event.count
    return [event]


def _gaussian_epsilon(s, delta):
    """Analytic Gaussian (Balle & Wang 2018, Theorem 8), solved here by root
    finding: delta(eps) = Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s)."""

    def excess(eps):
        return (
            stats.norm.cdf(0.5 / s - eps * s)
            - math.exp(eps) * stats.norm.cdf(-0.5 / s - eps * s)
            - delta
        )

    return optimize.brentq(excess, 0.0, 100.0, xtol=1e-14, rtol=1e-14)


# ----------------------------------------------------------------- calibration
def _declared_sensitivities(name, n_features=3, n_numeric=2):
    """Every release's L2 sensitivity as the docstrings state it."""
    _, _, n_classes = ESTIMATORS[name]
    fine = math.sqrt(2 * n_numeric)
    if name.startswith("boosting"):
        counts = math.sqrt(2 * n_features)
        if n_classes is None:
            intercept, gradient = WIDTH, 2 * 0.25 * WIDTH
        elif n_classes == 2:
            intercept, gradient = 1.0, 2.0
        else:
            intercept, gradient = math.sqrt(2), 2 * math.sqrt(2)
        return fine, counts, intercept, gradient
    T = 10
    leaves = math.sqrt(2 * T)
    sums = WIDTH * math.sqrt(T) if n_classes is None else None
    return fine, leaves, sums


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_noise_draw_uses_the_planned_sigma_and_is_charged(name, noise_draws):
    X, y = _data_for(name)
    params = dict(max_bins=8, max_iter=3) if name.startswith("boosting") else {}
    if name.startswith("forest"):
        params = dict(n_estimators=10, max_depth=3)
    budget = PrivacyBudget(epsilon=2.0, delta=1e-4)
    estimator = _declared(name, epsilon=0.7, delta=1e-5, budget=budget, **params)
    fit_plan = estimator.privacy_plan(X, y)
    assert not noise_draws and len(budget.ledger) == 0  # planning draws nothing
    plan = next(iter(fit_plan.settings.values()))
    estimator.fit(X, y)
    releases = _releases(plan)

    # 1. The draws, in order, are the plan's: sigma in grid steps and size.
    assert noise_draws == [(p.scale, (p.size,)) for p in releases]

    # 2. Each sigma is the plan's multiplier times the stated sensitivity
    #    (plus the grid's rounding slack sqrt(d) steps), and the multipliers
    #    split one Gaussian budget s**-2 by the documented shares.
    stated = _declared_sensitivities(name)
    if name.startswith("boosting"):
        fine, counts, intercept, gradient = stated
        expected = [fine, counts, intercept] + [gradient] * (len(releases) - 3)
        shares = [0.1, 0.05, 0.01] + [0.84 / (3 * 3)] * (len(releases) - 3)
        n_outputs = 3 if ESTIMATORS[name][2] == 3 else 1
        sizes = [2 * (FINE_CELLS + 1), 9 + 9 + 4, n_outputs]
        sizes += [9 * n_outputs, 9 * n_outputs, 4 * n_outputs] * 3
    else:
        fine, leaves, sums = stated
        K = ESTIMATORS[name][2] or 1
        expected = [fine, leaves] + ([sums] if sums else [])
        shares = [0.1] + ([0.45, 0.45] if sums else [0.9])
        sizes = [2 * (FINE_CELLS + 1), 10 * 8 * K] + ([10 * 8] if sums else [])
    assert [p.size for p in releases] == sizes
    s_squared = []
    for p, sensitivity, share in zip(releases, expected, shares, strict=True):
        assert p.sensitivity == pytest.approx(sensitivity, rel=1e-12)
        multiplier = p.event.noise_multiplier
        steps = sensitivity / p.gamma + math.sqrt(p.size)
        assert p.scale == pytest.approx(multiplier * steps, rel=1e-12)
        # In value units: multiplier x sensitivity, up to the slack (< 1e-6).
        assert p.scale * p.gamma == pytest.approx(multiplier * sensitivity, rel=1e-6)
        s_squared.append(multiplier**2 * share)
    np.testing.assert_allclose(s_squared, s_squared[0], rtol=1e-12)

    # 3. The charged event is the plan's, and holds exactly the draws.
    event = estimator.privacy_event_
    assert event == fit_plan.event.with_label(event.label)
    assert budget.ledger[0].record.event == event
    assert sorted(map(repr, _flatten(event))) == sorted(repr(p.event) for p in releases)

    # 4. The reported epsilon is that event's own accounting, within the
    #    target and tight; and it is the analytic Gaussian of multiplier
    #    s (the composition of the shares) plus the lattice shifts.
    accounted = PrivacyAccountant().epsilon_delta([event], 1e-5)
    assert (estimator.epsilon_, estimator.delta_) == accounted
    assert budget.spent() == pytest.approx(accounted, rel=1e-12)
    assert 0.7 * (1 - 1e-6) <= estimator.epsilon_ <= 0.7
    s = math.sqrt(s_squared[0])
    shifts = math.fsum(p.event.lattice_shift for p in releases)
    assert estimator.epsilon_ == pytest.approx(
        _gaussian_epsilon(s, 1e-5) + shifts, abs=1e-6
    )


def _record_releases(monkeypatch, module):
    """``[(plan, exact value, released value), ...]`` of every add_noise call."""
    releases = []
    real = module.add_noise

    def recording(plan, value, source):
        out = real(plan, value, source)
        releases.append((plan, np.array(value, dtype=float), np.array(out)))
        return out

    monkeypatch.setattr(module, "add_noise", recording)
    return releases


def _standardised_noise(releases):
    return np.concatenate(
        [(out - value).ravel() / (p.scale * p.gamma) for p, value, out in releases]
    )


def test_forest_leaf_noise_has_the_planned_standard_deviation(monkeypatch):
    # 100 trees of 64 leaves and 2 classes: 12800 draws of the leaf counts'
    # noise. Their variance in units of the planned sigma has standard
    # deviation sqrt(2 / m) = 0.0125 (Gaussian); the band is 5 of them. The
    # mean's is 1 / sqrt(m).
    X, y = _data_for("forest-2", n=4000)
    releases = _record_releases(monkeypatch, _forest)
    estimator = _declared("forest-2", n_estimators=100, max_depth=6).fit(X, y)
    fine, leaves = releases
    plan = estimator.privacy_plan(X, y).settings["forest"]
    assert leaves[0] == plan.leaf_noise and fine[0] == plan.fine_noise
    z = _standardised_noise([leaves])
    m = z.size
    assert m == 12800
    assert np.var(z) == pytest.approx(1.0, abs=5 * math.sqrt(2 / m))
    assert abs(np.mean(z)) < 5 / math.sqrt(m)
    # The exact leaf counts handed to the noise are the rows' counts.
    assert leaves[1].sum() == 100 * 4000
    # What is stored is the release floored at zero.
    np.testing.assert_array_equal(
        estimator.leaf_counts_.ravel(), np.maximum(leaves[2], 0.0)
    )


def test_boosting_noise_has_the_planned_standard_deviation(monkeypatch):
    # All releases of a 40-round fit pooled (each draw in units of its own
    # plan's sigma): about 2 * 129 + 22 + 1 + 40 * 22 = 1161 draws; band of
    # five standard deviations of the sample variance, sqrt(2 / m).
    X, y = _data_for("boosting-2", n=3000)
    releases = _record_releases(monkeypatch, _boosting)
    _declared("boosting-2", max_bins=8, max_iter=40).fit(X, y)
    z = _standardised_noise(releases)
    m = z.size
    assert m == 2 * 129 + 22 + 1 + 40 * 22
    assert np.var(z) == pytest.approx(1.0, abs=5 * math.sqrt(2 / m))
    assert abs(np.mean(z)) < 5 / math.sqrt(m)


def test_released_bin_counts_carry_the_planned_noise_end_to_end():
    # No probe: the released bin counts minus the exact ones, recounted here
    # from the released bin edges, over 12 seeds. Only bins holding at least
    # ten sigma of rows are used, so the floor at zero never binds. 48
    # value bins a fit: m = 576 draws, variance band 5 sqrt(2 / m) = 0.29.
    rng = np.random.default_rng(5)
    n = 20000
    X = rng.uniform(size=(n, 3))
    y = (X[:, 0] > 0.5).astype(int)
    cells = np.minimum(np.floor(X * FINE_CELLS), FINE_CELLS - 1).astype(int)
    z = []
    for seed in range(12):
        clf = DPHistGradientBoostingClassifier(
            bounds=(0, 1), classes=[0, 1], max_bins=16, max_iter=1, random_state=seed
        ).fit(X, y)
        sigma = clf.privacy_plan(X, y).settings["boosting"].count_noise
        sigma = sigma.scale * sigma.gamma
        for j in range(3):
            code = np.searchsorted(clf.bin_thresholds_[j], cells[:, j], side="right")
            exact = np.bincount(code, minlength=17)
            kept = exact >= 10 * sigma
            assert kept[:-1].sum() == len(clf.bin_thresholds_[j]) + 1  # all bins
            z.append((clf.bin_counts_[j][kept] - exact[kept]) / sigma)
    z = np.concatenate(z)
    assert z.size >= 12 * 3 * 14
    assert np.var(z) == pytest.approx(1.0, abs=5 * math.sqrt(2 / z.size))
    assert abs(np.mean(z)) < 5 / math.sqrt(z.size)


# ---------------------------------------------- sensitivities by brute force
# Replacement values: below, at and inside the bounds, the upper bound,
# beyond it, NaN; every declared category, an undeclared one and None.
NUMERIC_GRID = [-0.5, 0.0, 0.3, 0.7, 1.0, 1.5, np.nan]
CATEGORY_GRID = ["a", "b", "c", "zzz", None]
TINY = np.array(
    [
        [0.3, 0.0, "a"],
        [0.7, 1.0, "b"],
        [np.nan, 0.5, None],
        [0.05, np.nan, "c"],
    ],
    dtype=object,
)


def _neighbours(X, labels, label_grid):
    """Every dataset with one row of ``X`` replaced by a grid point."""
    grid = itertools.product(NUMERIC_GRID, NUMERIC_GRID, CATEGORY_GRID, label_grid)
    grid = list(grid)
    for row in range(X.shape[0]):
        for x0, x1, colour, label in grid:
            X2, labels2 = X.copy(), labels.copy()
            X2[row] = [x0, x1, colour]
            labels2[row] = label
            yield X2, labels2


def _worst(statistic, X, labels, label_grid):
    base = statistic(X, labels)
    return max(
        float(np.linalg.norm(statistic(X2, l2) - base))
        for X2, l2 in _neighbours(X, labels, label_grid)
    )


def _tiny_schema(estimator, n_bins):
    schema = resolve_schema(estimator, TINY, n_bins)
    return dataclasses.replace(schema, n_bins=n_bins)


CUTS_8 = (np.array([16, 40, 64, 80, 96, 112, 120]), np.array([32, 64, 96]), None)


def test_fine_grid_counts_sensitivity_is_sqrt_2_numeric_features_and_tight():
    estimator = _declared("boosting-2")
    schema = _tiny_schema(estimator, 8)
    declared = estimator.privacy_plan(TINY, np.array([0, 1, 0, 1]))
    declared = declared.settings["boosting"].fine_noise.sensitivity

    def statistic(X, _):
        return fine_counts_block(X, None, schema).astype(float)

    worst = _worst(statistic, TINY, np.zeros(4), [0])
    assert worst <= declared + 1e-12
    assert worst == pytest.approx(declared, rel=1e-12) == math.sqrt(2 * 2)


def test_bin_counts_sensitivity_is_sqrt_2_features_and_tight():
    estimator = _declared("boosting-2", max_bins=8)
    schema = _tiny_schema(estimator, 8)
    sizes = [schema.max_codes(j) for j in range(3)]
    declared = estimator.privacy_plan(TINY, np.array([0, 1, 0, 1]))
    declared = declared.settings["boosting"].count_noise.sensitivity
    cuts = (CUTS_8[0], CUTS_8[1], np.zeros(0, dtype=np.int64))

    def statistic(X, _):
        codes = encode_block(X, None, schema, cuts)
        return _bin_counts_block(codes, None, sizes).astype(float)

    worst = _worst(statistic, TINY, np.zeros(4), [0])
    assert worst <= declared + 1e-12
    assert worst == pytest.approx(declared, rel=1e-12) == math.sqrt(2 * 3)


def _prepared_labels(estimator, values):
    """The targets as the fit prepares them, for a list of raw values."""
    values = np.asarray(values)
    X = np.tile(TINY[:1], (values.size, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return np.asarray(estimator._prepare_fit(X, values)["labels"], dtype=float)


REGRESSION_GRID = [-3.0, -1.0, 1.5, 4.0, 9.0]


@pytest.mark.parametrize("name", ["boosting-2", "boosting-3", "boosting-regression"])
def test_intercept_sensitivity_is_the_stated_one_and_tight(name):
    estimator = _declared(name, max_bins=8)
    n_classes = ESTIMATORS[name][2]
    raw = list(range(n_classes)) if n_classes else REGRESSION_GRID
    grid = _prepared_labels(estimator, raw)
    if n_classes is None:
        # The targets are clipped to the declared range and shifted to [0, w].
        np.testing.assert_array_equal(grid, [0.0, 0.0, 2.5, 5.0, 5.0])
    labels = grid[[0, 1, 2, 1]] if n_classes != 2 else grid[[0, 1, 0, 1]]
    declared = estimator.privacy_plan(TINY, np.asarray(raw)[[0, 1, 0, 1]])
    declared = declared.settings["boosting"].intercept_noise.sensitivity

    def statistic(_, labels):
        if n_classes == 3:
            return np.bincount(labels.astype(int), minlength=3).astype(float)
        return np.array([labels.sum()])

    worst = _worst(statistic, TINY, labels, grid)
    assert worst <= declared + 1e-12
    assert worst == pytest.approx(declared, rel=1e-12)
    assert declared == {2: 1.0, 3: math.sqrt(2), None: WIDTH}[n_classes]


def _fixed_terms(n_outputs, kind, sizes):
    """Released shape functions, fixed: extreme where tightness needs them.

    Feature 1's bin of ``x1 = 0`` and its bin of ``x1 = 1`` push a row's
    scores to opposite extremes (classification), so that a row keeping
    its bin of feature 0 can swing its gradient across the whole range.
    """
    rng = np.random.default_rng(3)
    scale = 0.3 if kind == "regression" else 1.0
    terms = [scale * rng.normal(size=(size, n_outputs)) for size in sizes]
    if kind != "regression":
        low, high = 0, 3  # x1 = 0.0 and 1.0 under CUTS_8[1]
        if n_outputs == 1:
            terms[1][low], terms[1][high] = 40.0, -40.0
        else:
            terms[1][low], terms[1][high] = [80.0, 0.0, 0.0], [0.0, 80.0, 0.0]
    return terms


@pytest.mark.parametrize("name", ["boosting-2", "boosting-3", "boosting-regression"])
def test_gradient_sums_sensitivity_holds_for_fixed_predictions_and_is_tight(name):
    # The current scores are post-processing of earlier releases: fixed
    # shape functions and intercept; a replaced row gets the scores of its
    # own bins. Every feature's per-bin gradient sums move by at most the
    # stated sensitivity; feature 0's attain it (up to the logistic's
    # saturation, exp(-38)).
    estimator = _declared(name, max_bins=8)
    n_classes = ESTIMATORS[name][2]
    kind = "regression" if n_classes is None else "classification"
    raw = list(range(n_classes)) if n_classes else REGRESSION_GRID
    grid = _prepared_labels(estimator, raw)
    # Row 0 (x1 = 0) has the label the extreme scores get most wrong.
    rows = {2: [0, 1, 0, 1], 3: [1, 0, 2, 1], None: [0, 3, 2, 1]}[n_classes]
    labels = grid[rows]
    y_raw = np.asarray(raw)[[0, 1, 0, 1]]
    plan = estimator.privacy_plan(TINY, y_raw).settings["boosting"]
    schema = _tiny_schema(estimator, 8)
    sizes = [schema.max_codes(j) for j in range(3)]
    cuts = (CUTS_8[0], CUTS_8[1], np.zeros(0, dtype=np.int64))
    outputs = plan.outputs
    terms = _fixed_terms(outputs, kind, sizes)
    base = np.full(outputs, 2.5 if kind == "regression" else 0.0)

    def statistics(X, labels):
        codes = encode_block(X, None, schema, cuts).astype(np.int64)
        scores = base + sum(terms[j][codes[:, j]] for j in range(3))
        targets = np.column_stack([labels, scores])
        return [
            _gradient_block(codes, targets, j, sizes[j], kind, outputs, plan.clip)
            for j in range(3)
        ]

    worst = np.zeros(3)
    base_stats = statistics(TINY, labels)
    for X2, l2 in _neighbours(TINY, labels, grid):
        for j, (a, b) in enumerate(zip(base_stats, statistics(X2, l2), strict=True)):
            worst[j] = max(worst[j], np.linalg.norm(a - b))
    declared = np.array([p.sensitivity for p in plan.gradient_noise])
    stated = {2: 2.0, 3: 2 * math.sqrt(2), None: 2 * 0.25 * WIDTH}[n_classes]
    np.testing.assert_allclose(declared, stated, rtol=1e-12)
    assert np.all(worst <= declared + 1e-12)
    assert worst[0] == pytest.approx(stated, rel=1e-12)


def _forest_structure(schema, cuts, T, depth, manual):
    if manual:
        # Every level of every tree splits at code 1: a row moving from all
        # codes 0 to all codes >= 1 changes leaf in every tree.
        features = np.array([[0, 1], [1, 2], [2, 0]])
        return features, np.ones_like(features)
    return _draw_structure(schema, cuts, T, depth, check_random_source(7))


@pytest.mark.parametrize("manual", [True, False])
@pytest.mark.parametrize("name", ["forest-2", "forest-3", "forest-regression"])
def test_leaf_statistics_sensitivities_are_the_stated_ones_and_tight(name, manual):
    estimator = _declared(name, n_estimators=3, max_depth=2)
    n_classes = ESTIMATORS[name][2]
    kind = "regression" if n_classes is None else "classification"
    raw = list(range(n_classes)) if n_classes else REGRESSION_GRID
    grid = _prepared_labels(estimator, raw)
    if n_classes is None:
        # Centred on the declared range, clipped to [-w/2, w/2].
        np.testing.assert_array_equal(grid, [-2.5, -2.5, 0.0, 2.5, 2.5])
    labels = grid[[0, 1, 2, 1]] if n_classes == 3 else grid[[0, 1, 0, 1]]
    y_raw = np.asarray(raw)[[0, 1, 0, 1]]
    plan = estimator.privacy_plan(TINY, y_raw).settings["forest"]
    schema = _tiny_schema(estimator, 16)
    cuts = (CUTS_8[0], CUTS_8[1], np.zeros(0, dtype=np.int64))
    features, thresholds = _forest_structure(schema, cuts, 3, 2, manual)
    outputs = plan.outputs

    def statistics(X, labels):
        codes = encode_block(X, None, schema, cuts)
        out = _leaf_counts_block(
            codes, labels.reshape(-1, 1), features, thresholds, outputs, kind
        )
        return [
            np.asarray(o, dtype=float)
            for o in (out if kind == "regression" else (out,))
        ]

    base_stats = statistics(TINY, labels)
    worst = np.zeros(len(base_stats))
    for X2, l2 in _neighbours(TINY, labels, grid):
        for k, (a, b) in enumerate(zip(base_stats, statistics(X2, l2), strict=True)):
            worst[k] = max(worst[k], np.linalg.norm(a - b))
    declared = [plan.leaf_noise.sensitivity]
    if kind == "regression":
        declared.append(plan.sum_noise.sensitivity)
    stated = [math.sqrt(2 * 3)] + (
        [WIDTH * math.sqrt(3)] if kind == "regression" else []
    )
    np.testing.assert_allclose(declared, stated, rtol=1e-12)
    assert np.all(worst <= np.array(declared) + 1e-12)
    if kind == "classification" or manual:
        # A label change alone moves two cells in every tree; with the manual
        # trees a row can also change leaf in all of them.
        assert worst[0] == pytest.approx(stated[0], rel=1e-12)
    if kind == "regression":
        # The same leaves, the target from one end of the range to the other.
        assert worst[1] == pytest.approx(stated[1], rel=1e-12)


# ------------------------------------------------- only the noise is released
def _zero_values(monkeypatch):
    """Hand the noise zeros instead of the data's statistics (same shapes)."""
    for module in (_boosting, _forest):
        real = module.add_noise

        def noise_only(plan, value, source, real=real):
            return real(plan, np.zeros(np.shape(value)), source)

        monkeypatch.setattr(module, "add_noise", noise_only)


def _assert_same(a, b, where="estimator"):
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for field in dataclasses.fields(a):
            _assert_same(getattr(a, field.name), getattr(b, field.name), where)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), where
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), where
        for u, v in zip(a, b, strict=True):
            _assert_same(u, v, where)
    else:
        assert a == b, where


def _fitted(estimator):
    return {
        k: v
        for k, v in vars(estimator).items()
        if k.endswith("_") or k.startswith("_stages")
    }


def _fit_recording_warnings(estimator, X, y):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return [(w.category, str(w.message)) for w in record]


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_two_datasets_of_one_schema_give_the_same_model_given_the_same_noise(
    name, monkeypatch
):
    # Different values, labels, missing values and categories in every row:
    # all that differs between the two fits is what the noise is added to,
    # which is zero here. Every fitted attribute, the predictions, the repr
    # and the warnings must then be the same, bit for bit.
    _zero_values(monkeypatch)
    X1, y1 = _data_for(name, n=500, seed=1)
    X2, y2 = _data_for(name, n=500, seed=2)
    X2[:50, 1] = np.nan
    X2[:50, 2] = "zzz"
    params = dict(max_iter=3) if name.startswith("boosting") else {}
    a, b = _declared(name, **params), _declared(name, **params)
    assert _fit_recording_warnings(a, X1, y1) == _fit_recording_warnings(b, X2, y2)
    state_a, state_b = _fitted(a), _fitted(b)
    assert sorted(state_a) == sorted(state_b)
    for key in state_a:
        _assert_same(state_a[key], state_b[key], key)
    assert repr(a) == repr(b)
    test, _ = _data_for(name, n=200, seed=3)
    np.testing.assert_array_equal(a.predict(test), b.predict(test))
    np.testing.assert_array_equal(a.feature_importances_, b.feature_importances_)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_replaced_row_changes_only_released_values(name):
    # With the real noise and the same seed, a neighbour's fit keeps every
    # attribute that the public schema fixes; the trees' random structure is
    # drawn after the bins and does not shift with the data.
    X, y = _data_for(name, n=500)
    X2, y2 = X.copy(), y.copy()
    X2[0] = [np.nan, 1.5, "zzz"]
    y2[0] = y.max() if ESTIMATORS[name][2] else Y_BOUNDS[1]
    params = dict(max_iter=3) if name.startswith("boosting") else {}
    a, b = _declared(name, **params).fit(X, y), _declared(name, **params).fit(X2, y2)
    assert a.n_features_in_ == b.n_features_in_ == 3
    assert repr(a) == repr(b)
    _assert_same(a.schema_, b.schema_)
    assert a.privacy_event_ == b.privacy_event_
    assert len(a.bin_thresholds_) == len(b.bin_thresholds_) == 3
    if name.startswith("boosting"):
        assert [t.shape for t in a.terms_] == [t.shape for t in b.terms_]
        assert [c.shape for c in a.bin_counts_] == [c.shape for c in b.bin_counts_]
        assert a.n_iter_ == b.n_iter_ == 3 and a.n_bins_ == b.n_bins_
    else:
        np.testing.assert_array_equal(a.tree_features_, b.tree_features_)
        assert a.leaf_counts_.shape == b.leaf_counts_.shape
        assert a.max_depth_ == b.max_depth_


# ---------------------------------------------------- refusals before the charge
def _no_noise(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("random words drawn before the charge")

    monkeypatch.setattr("skdp.utils._random.RandomSource.words", refuse)


COMMON_BAD = [
    (dict(epsilon=-1.0), "'epsilon' parameter"),
    (dict(epsilon=0.0), "'epsilon' parameter"),
    (dict(delta=0.0), "'delta' parameter"),
    (dict(delta=1.0), "'delta' parameter"),
    (dict(bounds=(1.0, 0.0)), "lower < upper"),
    (dict(bounds=(0.5, 0.5)), "lower < upper"),
    (dict(bounds=(0.0, np.inf)), "finite"),
    (dict(bounds=(0.0, 1.0, 2.0)), "unpack"),
    (dict(categorical_features=[5]), "outside"),
    (dict(categories=[CATEGORIES, CATEGORIES]), "one list per categorical"),
    (dict(categories=[[]]), "declares no category"),
    (dict(random_state="seed"), "'random_state' parameter"),
    (dict(budget=0.5), "'budget' parameter"),
]
BOOSTING_BAD = [
    (dict(max_bins=1), "'max_bins' parameter"),
    (dict(max_bins=2000), "'max_bins' parameter"),
    (dict(max_bins="many"), "'max_bins' parameter"),
    (dict(learning_rate=0.0), "'learning_rate' parameter"),
    (dict(learning_rate=-0.1), "'learning_rate' parameter"),
    (dict(max_iter=0), "'max_iter' parameter"),
    (dict(l2_regularization=-1.0), "'l2_regularization' parameter"),
]
FOREST_BAD = [
    (dict(n_estimators=0), "'n_estimators' parameter"),
    (dict(max_depth=0), "'max_depth' parameter"),
    (dict(max_depth=17), "'max_depth' parameter"),
]
CLASSIFIER_BAD = [
    (dict(classes=[0, 5]), "not in classes"),
    (dict(classes=[0]), "at least 2 distinct labels"),
]
REGRESSOR_BAD = [
    (dict(y_bounds=(4.0, -1.0)), "lower < upper"),
    (dict(y_bounds=(0.0, np.nan)), "finite"),
]


def _bad_parameters(name):
    cases = list(COMMON_BAD)
    cases += BOOSTING_BAD if name.startswith("boosting") else FOREST_BAD
    if name.startswith("forest") and ESTIMATORS[name][2]:
        cases.append((dict(evidence_weight=0.0), "'evidence_weight' parameter"))
    cases += REGRESSOR_BAD if ESTIMATORS[name][2] is None else CLASSIFIER_BAD
    return cases


def _bad_inputs(name, X, y):
    """(X, y, error type, match) the fit must refuse."""
    X_inf = np.array(X[:, :2], dtype=float)
    X_inf[3, 0] = np.inf
    y_nan = y.astype(float)
    y_nan[2] = np.nan
    cases = [
        (X, y[:-1], ValueError, "inconsistent numbers of samples"),
        (X[:0], y[:0], ValueError, "0 sample"),
        (X[:, 0], y, ValueError, "2D array"),
        (X, None, ValueError, "requires y"),
        (X, y_nan, ValueError, "NaN|finite|Unknown label type"),
        (X_inf, y, ValueError, "infinity"),
    ]
    if ESTIMATORS[name][2] is None:
        cases.append(
            (X, np.where(np.arange(y.size) == 5, np.inf, y), ValueError, "finite")
        )
    return cases


# scikit-learn's label check casts the NaN label (classifiers).
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_bad_parameters_and_input_are_refused_before_the_charge(name, monkeypatch):
    X, y = _data_for(name, n=200)
    budget = PrivacyBudget(epsilon=5.0, delta=1e-3)
    _no_noise(monkeypatch)
    for params, match in _bad_parameters(name):
        estimator = _declared(name, **{"budget": budget, **params})
        with pytest.raises((ValueError, TypeError), match=match):
            estimator.fit(X, y)
        assert not hasattr(estimator, "privacy_event_"), params
    for X_bad, y_bad, error, match in _bad_inputs(name, X, y):
        extra = {"categorical_features": None, "categories": None}
        if X_bad.ndim == 2 and X_bad.shape[1] == 3:
            extra = {}
        estimator = _declared(name, budget=budget, **extra)
        with pytest.raises(error, match=match):
            estimator.fit(X_bad, y_bad)
        assert not hasattr(estimator, "privacy_event_"), match
    assert len(budget.ledger) == 0 and budget.spent() == (0.0, 0.0)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_budget_that_cannot_pay_refuses_before_any_noise(name, monkeypatch):
    X, y = _data_for(name, n=300)
    budget = PrivacyBudget(epsilon=1.5, delta=1e-4)
    first = _declared(name, epsilon=1.0, budget=budget).fit(X, y)
    assert len(budget.ledger) == 1 and budget.ledger[0] == first.budget_entry_
    assert budget.spent()[0] == pytest.approx(first.epsilon_, rel=1e-12)
    _no_noise(monkeypatch)
    again = _declared(name, epsilon=1.0, budget=budget)
    with pytest.raises(BudgetExceededError):
        again.fit(X, y)
    with pytest.raises(BudgetExceededError):  # and a delta beyond the budget's
        _declared(name, epsilon=0.1, delta=2e-4, budget=budget).fit(X, y)
    assert len(budget.ledger) == 1 and not hasattr(again, "privacy_event_")
    assert not any(k.endswith("_") for k in vars(again))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_hostile_but_valid_input_fits_without_failing_after_the_charge(name):
    # Columns that are all missing, constant, or beyond the bounds; one
    # row; extreme epsilons. The run must never fail (ChargedFitError).
    X, y = _data_for(name, n=300)
    X[:, 1] = np.nan
    X[:, 0] = 1e6
    X[:, 2] = None
    for epsilon in (1e-3, 1.0, 1e6):
        estimator = _declared(name, epsilon=epsilon).fit(X, y)
        assert np.all(np.isfinite(estimator.feature_importances_))
        assert estimator.predict(X[:5]).shape == (5,)
    one = _declared(name).fit(X[:1], y[:1])
    assert one.predict(X[:3]).shape == (3,)


# ----------------------------------------------------------- leak warnings
DATA_BOUND = {
    "bounds": "bounds was not given",
    "categories": "categories was not given",
    "classes": "classes was not given",
    "y_bounds": "y_bounds was not given",
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_each_omitted_public_parameter_warns_and_a_declared_schema_does_not(name):
    X, y = _data_for(name, n=300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _declared(name).fit(X, y)
    target = "y_bounds" if ESTIMATORS[name][2] is None else "classes"
    for omitted in ("bounds", "categories", target):
        record = _fit_recording_warnings(_declared(name, **{omitted: None}), X, y)
        assert [c for c, _ in record] == [PrivacyLeakWarning], omitted
        assert record[0][1].startswith(DATA_BOUND[omitted]), record
        if omitted == "y_bounds":
            assert "target" in record[0][1]


# ------------------------------------------------------------------- audit
@pytest.mark.slow
def test_forest_leaf_count_release_passes_an_audit():
    # One tree of depth 1 on one categorical feature (no bins to pay for):
    # the whole budget is on the leaf counts. Ten rows of category "a" and
    # label 0; the neighbour flips one label. The statistic is the class-1
    # count minus the class-0 count of their leaf, the direction the row
    # moves (by 2, against noise of sd sqrt(2) sigma: the full sqrt 2
    # sensitivity). epsilon=4 so that 1000 runs a side can see something
    # (at epsilon=1, delta=1e-5 the Gaussian's large losses are too rare).
    # The lower bound must stay below the claimed epsilon.
    X = np.full((10, 1), "a", dtype=object)
    y = np.zeros(10, dtype=int)
    y_neighbour = y.copy()
    y_neighbour[0] = 1
    estimator = DPRandomForestClassifier(
        epsilon=4.0,
        delta=1e-5,  # the audit's power below was measured at this delta
        n_estimators=1,
        max_depth=1,
        categorical_features=[0],
        categories=[["a", "b"]],
        classes=[0, 1],
    )

    def statistic(fitted):
        # Category "a" has code 0, below every threshold (>= 1): leaf 0.
        counts = fitted.leaf_counts_[0]
        return counts[0, 1] - counts[0, 0]

    result = audit_estimator(
        estimator,
        (X, y),
        (X, y_neighbour),
        statistic=statistic,
        n_runs=1000,
        confidence=0.99,
        random_state=0,
    )
    assert result.claimed_epsilon == pytest.approx(4.0, rel=1e-6)
    assert not result.violation, str(result)
    # The audit has power (seeded, so deterministic): about 1.06 is found.
    assert result.epsilon_lower_bound > 0.5, str(result)
