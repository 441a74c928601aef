"""Draws per second of skdp's noise samplers, exact against the old float ones.

The exact samplers (Canonne, Kamath & Steinke 2020, Algorithms 1-3, built
from uniform random integers, with no truncated tail) are timed next to the
floating-point samplers they replaced, which are reproduced inline below as
they were (``floor(scale E)`` differences for the discrete Laplace, a float
acceptance test for the discrete Gaussian, Gumbel-max for the exponential
mechanism, ``E = floor(-log U1) + F`` for the exponential). Parameters are
the ones skdp's callers use: scales near ``2**32`` grid steps for the
additive mechanisms (the grid is ``2**-32`` of the noise scale), 165,000
discrete Gaussians for a DP-SGD fit (1,500 steps x 110 coordinates), and
up to 100,000 candidates for the exponential mechanism. Run from the
repository root::

    python -m pip install -e .
    python benchmarks/samplers.py              # seeded and secure sources
    python benchmarks/samplers.py --quick      # smaller sizes
    python benchmarks/samplers.py --repeat 5 --source seeded

(without installing, prefix with ``PYTHONPATH=.``). Each figure is the best
of ``--repeat`` runs. Columns: ``old/s`` and ``new/s`` are draws (or, for
the exponential mechanism, selections) per second; ``new/old`` their ratio;
``us/draw`` the new sampler's time per draw. The machine's load average is
printed first: on a busy machine all figures drop, the ratios less so.
"""

import argparse
import math
import os
import time

import numpy as np

from skdp.mechanisms import (
    exponential_mechanism,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from skdp.mechanisms._bernoulli import bernoulli_exp_neg
from skdp.utils import RandomSource
from skdp.utils._random import geometric_exp_neg_one

_ONE_MINUS_INV_E = -math.expm1(-1.0)


# -- the replaced float samplers, as they were ---------------------------------


class OldSource(RandomSource):
    """The old word source: seeded words through ``Generator.integers``."""

    def words(self, size):
        if self._generator is None:
            return np.frombuffer(os.urandom(8 * int(size)), dtype=np.uint64).copy()
        return self._generator.integers(
            0, 2**64, size=int(size), dtype=np.uint64, endpoint=False
        )


def old_exponential(source, n):
    """Truncated near 36.7: both parts from 53-bit float uniforms."""
    k = np.floor(-np.log(source.uniform(n)))
    return k - np.log1p(-source.uniform(n) * _ONE_MINUS_INV_E)


def old_discrete_laplace(scale, n, source):
    """Bounded by about 38 scale units."""
    e = old_exponential(source, 2 * n)
    return np.floor(scale * e[:n]) - np.floor(scale * e[n:])


def old_discrete_gaussian(sigma, n, source):
    """Float acceptance test: truncated where exp(-x) < 2**-54."""
    t = math.floor(sigma) + 1.0
    out = np.empty(n)
    filled = 0
    while filled < n:
        batch = max(2 * (n - filled) + 16, 64)
        y = old_discrete_laplace(t, batch, source)
        accept = np.exp(-((np.abs(y) - sigma**2 / t) ** 2) / (2.0 * sigma**2))
        y = y[source.uniform(batch) < accept]
        take = min(y.size, n - filled)
        out[filled : filled + take] = y[:take]
        filled += take
    return out


def old_exponential_mechanism(scores, sensitivity, epsilon, source):
    """Gumbel-max with bounded float Gumbel noise."""
    logits = epsilon * (scores - scores.max()) / (2 * sensitivity)
    return int(np.argmax(logits - np.log(old_exponential(source, logits.size))))


# -- timing ----------------------------------------------------------------------


def best_time(sampler, source, n, repeat):
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        sampler(source, n)
        best = min(best, time.perf_counter() - start)
    return best


def make_source(kind, cls, seed):
    return cls(None if kind == "secure" else np.random.default_rng(seed))


def cases(quick):
    big = 100_000 if quick else 1_000_000
    dpsgd = 1_500 * 110  # one DP-SGD fit's discrete Gaussians
    calls = 20 if quick else 200
    em_scores = {
        10: np.linspace(0, 5, 10),
        1_000: np.linspace(0, 5, 1_000),
        100_000: np.linspace(0, 5, 100_000),
    }
    dominant = np.zeros(100_000)
    dominant[7] = 100.0
    rows = [
        (
            "exponential",
            "RandomSource.exponential",
            big,
            lambda s, n: old_exponential(s, n),
            lambda s, n: s.exponential(n),
        ),
        (
            "geometric K",
            "P(K >= k) = e^-k",
            big,
            lambda s, n: np.floor(-np.log(s.uniform(n))),
            lambda s, n: geometric_exp_neg_one(n, s),
        ),
        (
            "Bernoulli(e^-g)",
            "g = 3/10",
            big,
            lambda s, n: s.uniform(n) < math.exp(-0.3),
            lambda s, n: bernoulli_exp_neg(3, np.full(n, 10), s),
        ),
    ]
    for label, scale in (
        ("1.3*2^32", 1.3 * 2.0**32),
        ("2^40/3", 2.0**40 / 3),
        ("3", 3.0),
    ):
        rows.append(
            (
                "discrete Laplace",
                f"scale {label}",
                big,
                lambda s, n, b=scale: old_discrete_laplace(b, n, s),
                lambda s, n, b=scale: sample_discrete_laplace(b, n, s),
            )
        )
    for label, sigma, n in (
        ("1.3*2^32 (DP-SGD fit)", 1.3 * 2.0**32, dpsgd),
        ("1.3*2^32", 1.3 * 2.0**32, big),
        ("1.1*2^20", 1.1 * 2.0**20, big),
        ("1.5", 1.5, big),
        ("1.3*2^32, one draw", 1.3 * 2.0**32, 1),
    ):
        rows.append(
            (
                "discrete Gaussian",
                f"sigma {label}",
                n,
                lambda s, n, sg=sigma: old_discrete_gaussian(sg, n, s),
                lambda s, n, sg=sigma: sample_discrete_gaussian(sg, n, s),
            )
        )
    for k, scores in em_scores.items():
        rows.append(em_row(f"{k} candidates, scores 0..5", scores, calls))
    rows.append(em_row("100000 candidates, one +100", dominant, calls))
    return rows


def em_row(label, scores, calls):
    def old(source, n):
        for _ in range(n):
            old_exponential_mechanism(scores, 1.0, 1.0, source)

    def new(source, n):
        for _ in range(n):
            exponential_mechanism(scores, 1.0, 1.0, random_state=source)

    return ("exponential mechanism", label, calls, old, new)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure")
    parser.add_argument(
        "--source", choices=["both", "seeded", "secure"], default="both"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    kinds = ["seeded", "secure"] if args.source == "both" else [args.source]
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    header = (
        f"{'sampler':<22} {'parameters':<30} {'source':<7} {'n':>9} "
        f"{'old/s':>11} {'new/s':>11} {'new/old':>8} {'us/draw':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, parameters, n, old, new in cases(args.quick):
        for kind in kinds:
            old_source = make_source(kind, OldSource, args.seed)
            new_source = make_source(kind, RandomSource, args.seed)
            old(old_source, min(n, 1000))  # warm up (and the exact tables)
            new(new_source, min(n, 1000))
            t_old = best_time(old, old_source, n, args.repeat)
            t_new = best_time(new, new_source, n, args.repeat)
            print(
                f"{name:<22} {parameters:<30} {kind:<7} {n:>9} "
                f"{n / t_old:>11.3g} {n / t_new:>11.3g} {t_old / t_new:>8.2f} "
                f"{t_new / n * 1e6:>8.3f}"
            )


if __name__ == "__main__":
    main()
