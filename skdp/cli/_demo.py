"""The demo behind ``python -m skdp demo``.

It runs on the Adult census data shipped with skdp and needs nothing beyond
skdp's own dependencies (matplotlib, if installed, draws the plot):

1. a fully private pipeline — one-hot encoding over the published
   categories and a private standard scaler in a ``ColumnTransformer``,
   ``Normalizer``, then private logistic regression with each of the three
   methods (objective, output and gradient perturbation) — at a few
   epsilons, against the same pipeline without privacy and the majority
   class;
2. a private synthetic copy of eight columns of the discretized Adult data,
   with the error of its 3-way marginals;
3. the ledger of the one budget that every private step charged, and a fit
   that the budget refuses.

Every privacy-relevant bound is public: the categories are the data set's
published schema, the numeric ranges are fixed below from general knowledge
(not read from the rows), and each row is scaled to unit L2 norm, so that
``data_norm=1`` holds by construction. :func:`skdp.check_pipeline` prints
which step is private, stateless or leaking.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .._pipeline_check import check_pipeline
from ..accounting import PrivacyBudget
from ..datasets import ADULT_SYNTHESIS_COLUMNS
from ..exceptions import BudgetExceededError

__all__ = ["DemoResult", "run_demo"]

METHODS = ("objective", "output", "gradient")
# (row name, method, C). Every method runs with the library's default C=1;
# output perturbation is run again with strong regularisation, because the
# sensitivity of its minimiser, 2 * C * R, does not shrink with the number of
# rows: at C=1 its noise swamps the weights.
MODELS = (
    ("objective", "objective", 1.0),
    ("output", "output", 1.0),
    ("output, C=0.01", "output", 0.01),
    ("gradient", "gradient", 1.0),
)
EPSILONS = (0.1, 0.5, 1.0, 5.0)
QUICK_EPSILONS = (0.5, 5.0)
# Fits per (method, epsilon): the table shows their mean accuracy. Each fit
# draws fresh noise and charges the budget.
REPEATS = 3
SYNTHESIZER_EPSILON = 1.0
SYNTHESIZER_DELTA = 1e-9
DELTA = 1e-6

# Public ranges of the numeric columns, fixed without looking at the rows:
# the survey's population (ages 17 to 90, its top code) and coding (16
# education levels, 1 to 99 hours a week); the two money amounts are clipped
# at round numbers (a modelling choice made in advance: the census top code
# is 99,999, and clipping the rare large amounts costs little accuracy while
# shrinking the private scaler's noise). ``fnlwgt`` is a sampling weight,
# not a trait of the person, and is left out.
NUMERIC_RANGES = {
    "age": (17.0, 90.0),
    "education_num": (1.0, 16.0),
    "capital_gain": (0.0, 20_000.0),
    "capital_loss": (0.0, 5_000.0),
    "hr_per_week": (1.0, 99.0),
}
DROPPED_COLUMNS = ("fnlwgt",)
# Share of each fit's epsilon spent by the private scaler of the pipeline.
SCALER_SHARE = 0.1

# Columns of the discretized Adult data that the synthesizer models.
SYNTHESIS_COLUMNS = ADULT_SYNTHESIS_COLUMNS
QUICK_SYNTHESIS_COLUMNS = ("workclass", "education-num", "race", "sex", "income>50K")
QUICK_N_ROWS = 4000


@dataclass
class DemoResult:
    """What the demo computed (returned by :func:`run_demo` for tests)."""

    budget: PrivacyBudget
    accuracy: dict = field(default_factory=dict)  # (method, epsilon) -> accuracy
    fit_seconds: dict = field(default_factory=dict)  # (method, epsilon) -> seconds
    references: dict = field(default_factory=dict)  # name -> accuracy
    marginal_error: dict = field(default_factory=dict)  # name -> mean L1 error
    refused: str = ""
    pipeline_check: str = ""
    plot_path: str | None = None


class _Progress:
    """One line per long step, on stderr, with its duration."""

    def __init__(self, stream, total):
        self.stream = stream
        self.total = total
        self.done = 0

    def start(self, what):
        self.done += 1
        self._started = time.perf_counter()
        if self.stream is not None:
            print(
                f"[{self.done:>2}/{self.total}] {what} ...",
                end="",
                file=self.stream,
                flush=True,
            )

    def stop(self, note=""):
        seconds = time.perf_counter() - self._started
        if self.stream is not None:
            print(f" {seconds:.1f} s{note}", file=self.stream, flush=True)
        return seconds


def adult_split(*, quick=False):
    """The bundled Adult as NumPy arrays, split 80/20 (stratified, seed 0).

    The same rows and split as the logistic benchmark's. Categorical columns
    hold the position of their value in ``load_adult().categories``.
    """
    from sklearn.model_selection import train_test_split

    from ..datasets import load_adult

    adult = load_adult()
    X_train, X_test, y_train, y_test = train_test_split(
        adult.data, adult.target, test_size=0.2, stratify=adult.target, random_state=0
    )
    if quick:
        X_train, y_train = X_train[:QUICK_N_ROWS], y_train[:QUICK_N_ROWS]
        X_test, y_test = X_test[: QUICK_N_ROWS // 2], y_test[: QUICK_N_ROWS // 2]
    return X_train, X_test, y_train, y_test


def private_pipeline(
    epsilon,
    *,
    method="gradient",
    C=1.0,
    delta=None,
    scaler_share=SCALER_SHARE,
    budget=None,
    random_state=None,
):
    """A fully private pipeline for the Adult arrays of :func:`adult_split`.

    ``ColumnTransformer`` of a one-hot encoder over the published categories
    (stateless) and a :class:`~skdp.preprocessing.DPStandardScaler` with the
    public :data:`NUMERIC_RANGES` (``scaler_share`` of ``epsilon``), then
    ``Normalizer`` (stateless: every row gets unit norm, so ``data_norm=1``
    is a true bound) and :class:`~skdp.DPLogisticRegression` (the rest of
    ``epsilon``). Both private steps charge ``budget``.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer, OneHotEncoder

    from ..datasets import load_adult
    from ..linear_model import DPLogisticRegression
    from ..preprocessing import DPStandardScaler

    names = load_adult().feature_names
    published = load_adult().categories
    categorical = [i for i, c in enumerate(names) if c in published]
    numeric = [i for i, c in enumerate(names) if c in NUMERIC_RANGES]
    lower = np.array([NUMERIC_RANGES[names[i]][0] for i in numeric])
    upper = np.array([NUMERIC_RANGES[names[i]][1] for i in numeric])
    codes = [np.arange(len(published[names[i]]), dtype=float) for i in categorical]
    seeds = (None, None) if random_state is None else (random_state, random_state + 1)
    scaler_epsilon = epsilon * scaler_share
    preprocess = ColumnTransformer(
        [
            (
                "onehot",
                OneHotEncoder(
                    categories=codes, handle_unknown="ignore", sparse_output=False
                ),
                categorical,
            ),
            (
                "scale",
                DPStandardScaler(
                    epsilon=scaler_epsilon,
                    bounds=(lower, upper),
                    budget=budget,
                    random_state=seeds[0],
                ),
                numeric,
            ),
        ]
    )
    model = DPLogisticRegression(
        epsilon=epsilon - scaler_epsilon,
        C=C,
        delta=delta,
        method=method,
        data_norm=1.0,
        classes=[0, 1],
        budget=budget,
        random_state=seeds[1],
    )
    return make_pipeline(preprocess, Normalizer(), model)


def run_demo(*, quick=False, seed=None, plot="skdp-demo.png", out=None, progress=None):
    """Run the demo; print the tables and the ledger to ``out``.

    Parameters
    ----------
    quick : bool, default=False
        Fewer epsilons, 4,000 training rows and a smaller synthetic table
        (for the test suite).
    seed : int or None, default=None
        Seed of the noise. ``None`` (the default) draws from the OS CSPRNG,
        so every run differs; a seed is for testing only.
    plot : str or None, default="skdp-demo.png"
        Where to write the privacy-utility plot; ``None`` or a missing
        matplotlib skips it.
    out, progress : file-like, default=sys.stdout and sys.stderr
        Where the results and the progress lines go.

    Returns
    -------
    result : DemoResult
    """
    out = sys.stdout if out is None else out
    progress = sys.stderr if progress is None else progress
    epsilons = QUICK_EPSILONS if quick else EPSILONS
    columns = QUICK_SYNTHESIS_COLUMNS if quick else SYNTHESIS_COLUMNS

    repeats = 1 if quick else REPEATS
    n_fits = len(MODELS) * len(epsilons)
    total_epsilon = round(
        repeats * len(MODELS) * sum(epsilons) + SYNTHESIZER_EPSILON, 9
    )
    # The budget adds each fit's own (epsilon, delta) (basic composition, a
    # filter valid however the fits are chosen): DELTA for each DP-SGD fit,
    # SYNTHESIZER_DELTA for the synthesizer.
    n_gaussian = repeats * len(epsilons) * sum(m == "gradient" for _, m, _ in MODELS)
    budget = PrivacyBudget(
        epsilon=total_epsilon, delta=n_gaussian * DELTA + SYNTHESIZER_DELTA
    )
    result = DemoResult(budget=budget)
    steps = _Progress(progress, total=n_fits + 3)

    steps.start("loading Adult")
    X_train, X_test, y_train, y_test = adult_split(quick=quick)
    steps.stop(f" ({len(X_train):,} training rows, {X_train.shape[1]} columns)")

    steps.start("references: majority class and non-private LogisticRegression")
    result.references = _reference_accuracies(X_train, X_test, y_train, y_test)
    steps.stop()

    for (name, method, C), epsilon in itertools.product(MODELS, epsilons):
        steps.start(
            f"{repeats} x pipeline with DPLogisticRegression(method={method!r}, "
            f"C={C:g}, epsilon={epsilon:g})"
        )
        fits = [
            _fit_logistic(
                method,
                epsilon,
                budget,
                None if seed is None else seed + repeat,
                X_train,
                X_test,
                y_train,
                y_test,
                C=C,
            )
            for repeat in range(repeats)
        ]
        accuracy, seconds = np.mean(fits, axis=0)
        steps.stop(f", mean accuracy {accuracy:.3f}")
        result.accuracy[name, epsilon] = float(accuracy)
        result.fit_seconds[name, epsilon] = float(seconds)

    steps.start(
        f"PMWSynthesizer(epsilon={SYNTHESIZER_EPSILON:g}) on {len(columns)} columns"
    )
    result.marginal_error = _synthesize(columns, budget, seed, quick)
    steps.stop()

    # A model alone (a pipeline's earlier private steps would charge first:
    # scikit-learn fits the steps in order, each charging the budget).
    from ..linear_model import DPLogisticRegression

    try:
        DPLogisticRegression(
            epsilon=budget.epsilon, data_norm=1.0, classes=[0, 1], budget=budget
        ).fit(X_train, y_train)
    except BudgetExceededError as error:
        result.refused = str(error)
    result.pipeline_check = str(
        check_pipeline(private_pipeline(1.0, delta=DELTA), warn=False)
    )

    _print_report(result, epsilons, columns, len(X_train), len(X_test), repeats, out)
    if plot is not None:
        result.plot_path = _plot(result, epsilons, plot)
        if result.plot_path is None:
            print("\n(matplotlib is not installed: no plot was drawn)", file=out)
        else:
            print(f"\nPlot written to {result.plot_path}", file=out)
    return result


def _reference_accuracies(X_train, X_test, y_train, y_test):
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    majority = np.bincount(y_train).argmax()
    # The same pipeline without privacy: scikit-learn's scaler and model.
    model = private_pipeline(1.0)
    model.set_params(
        columntransformer__scale=StandardScaler(),
        dplogisticregression=LogisticRegression(C=1.0, max_iter=1000),
    )
    model.fit(X_train, y_train)
    return {
        "non-private (C=1)": model.score(X_test, y_test),
        "majority class": float(np.mean(y_test == majority)),
    }


def _fit_logistic(
    method, epsilon, budget, seed, X_train, X_test, y_train, y_test, C=1.0
):
    model = private_pipeline(
        epsilon,
        method=method,
        C=C,
        delta=DELTA if method == "gradient" else None,
        budget=budget,
        random_state=seed,
    )
    started = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - started
    return model.score(X_test, y_test), seconds


def _synthesize(columns, budget, seed, quick):
    from ..datasets import load_adult
    from ..synthesis import PMWSynthesizer, marginal_errors

    adult = load_adult(discretized=True, as_frame=False)
    names = list(adult.feature_names) + ["income>50K"]
    table = np.column_stack([adult.data, adult.target])
    index = [names.index(c) for c in columns]
    table = table[:, index]
    if quick:
        table = table[:QUICK_N_ROWS]
    categories = [list(range(adult.domain[c])) for c in columns]
    workload = list(itertools.combinations(range(len(columns)), 3))
    model = PMWSynthesizer(
        epsilon=SYNTHESIZER_EPSILON,
        delta=SYNTHESIZER_DELTA,
        categories=categories,
        workload=workload,
        random_state=seed,
        budget=budget,
    )
    synthetic = np.asarray(model.fit_transform(table)).astype(np.int64)
    # A non-private reference: every column independent, with exact 1-way
    # marginals (what a model that learned no relationship would give).
    rng = np.random.default_rng(0)
    independent = np.column_stack([rng.permutation(col) for col in table.T])
    # marginal_errors reads the real table: an evaluation, not a release.
    return {
        name: float(
            np.mean(
                list(
                    marginal_errors(
                        table, rows, workload, categories=categories
                    ).values()
                )
            )
        )
        for name, rows in (
            ("PMWSynthesizer", synthetic),
            ("independent columns (not private)", independent),
        )
    }


def _print_report(result, epsilons, columns, n_train, n_test, repeats, out):
    print(file=out)
    print(
        f"A fully private pipeline on UCI Adult ({n_train:,} training rows, "
        f"{n_test:,} test rows): one-hot encoding over the published categories "
        f"and DPStandardScaler\n(public ranges, {SCALER_SHARE:.0%} of epsilon), "
        "Normalizer, then DPLogisticRegression (the rest). Mean test accuracy of "
        f"{repeats} fit(s)\neach, epsilon = the whole pipeline's; the noise is "
        "fresh on every run.",
        file=out,
    )
    print(result.pipeline_check, file=out)
    print(file=out)
    header = f"{'method (C=1 unless said)':<26}" + "".join(
        f"{'eps=' + format(e, 'g'):>9}" for e in epsilons
    )
    print(header + f"{'mean fit':>10}", file=out)
    for name, _, _ in MODELS:
        cells = "".join(f"{result.accuracy[name, e]:>9.3f}" for e in epsilons)
        seconds = np.mean([result.fit_seconds[name, e] for e in epsilons])
        print(f"{name:<26}{cells}{seconds:>9.2f}s", file=out)
    for name, accuracy in result.references.items():
        print(f"{name + ' (reference)':<26}{accuracy:>9.3f}", file=out)
    print(
        "Output perturbation adds noise scaled to its minimiser's sensitivity "
        "2*C*data_norm,\nwhich does not shrink with the number of rows: at C=1 "
        "the noise swamps the weights;\nstrong regularisation (small C) makes it "
        "usable. See doc/user_guide/logistic_regression.rst.",
        file=out,
    )

    print(file=out)
    print(
        f"Private synthetic data (MWEM) of {len(columns)} columns of discretized "
        f"Adult at epsilon={SYNTHESIZER_EPSILON:g}: mean L1 error of the "
        f"{math.comb(len(columns), 3)} 3-way marginals (0 = exact, 2 = disjoint)",
        file=out,
    )
    for name, error in result.marginal_error.items():
        print(f"  {name:<36} {error:.3f}", file=out)

    print(file=out)
    print("The budget that every fit charged:", file=out)
    print(result.budget.summary(), file=out)
    if result.refused:
        print(file=out)
        print("One more fit, refused before it touched the data:", file=out)
        print(f"  BudgetExceededError: {result.refused}", file=out)
    print(file=out)
    print(
        "Every fit behind the table spent its own epsilon on the same data, and "
        "the ledger\nadds them up: a privacy-utility curve is expensive. In a real "
        "release, choose epsilon\nfirst and fit once.",
        file=out,
    )


def _plot(result, epsilons, path):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FixedLocator, NullLocator
    except ImportError:
        return None
    figure = Figure(figsize=(8.0, 4.6))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for (name, _, _), marker in zip(MODELS, "osvd"):
        ax.plot(
            epsilons,
            [result.accuracy[name, e] for e in epsilons],
            marker=marker,
            label=name,
        )
    references = result.references.items()
    for (name, accuracy), style in zip(references, ("--", ":")):
        ax.axhline(accuracy, color="grey", linestyle=style, label=name)
    ax.set_xscale("log")
    # Ticks at the epsilons that were run, written as plain numbers.
    ax.xaxis.set_major_locator(FixedLocator(list(epsilons)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([format(e, "g") for e in epsilons])
    ax.set_xlabel("epsilon of the whole pipeline (each fit)")
    ax.set_ylabel("test accuracy")
    ax.set_title("A private pipeline ending in DPLogisticRegression, UCI Adult")
    ax.grid(True, alpha=0.3)
    # The legend sits beside the axes, where it cannot hide a curve.
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    return str(path)
