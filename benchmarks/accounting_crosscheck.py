"""Cross-check skdp's accountants against Google's dp_accounting.

Run from the repository root after ``pip install -e ".[test]"``::

    python benchmarks/accounting_crosscheck.py           # the two tables
    python benchmarks/accounting_crosscheck.py --dpsgd   # and fitted DP-SGD runs

Two tables (three with ``--dpsgd``):

* Renyi DP: skdp's ``RDPAccountant`` against dp_accounting's
  ``RdpAccountant`` for the Poisson-subsampled Gaussian. dp_accounting's RDP
  analyses add/remove-one only, so skdp runs under that relation; the last
  column is skdp's Renyi-DP figure under its own relation (replace one row).
* Privacy loss distributions: skdp's ``PLDAccountant`` against
  dp_accounting's pessimistic PLD (``PLDAccountant``, or its
  ``privacy_loss_distribution`` module where the accountant refuses the
  event under a relation, which is what the accountant does internally),
  under both relations, with the ratio skdp / dp_accounting.
* DP-SGD (``--dpsgd``): ``DPLogisticRegression(method='gradient')`` fitted
  on 20,000 synthetic rows (batch 256, 10 epochs, delta 1e-5) at several
  epsilons; the fitted run is re-accounted by dp_accounting's replace-one
  PLD, next to the noise multiplier the previous (Renyi-DP) calibration
  gave.

The mapping of skdp's events to dp_accounting's is the tests' oracle,
``tests/accounting/dp_accounting_oracle.py``.
"""

import argparse
import logging
import sys
from pathlib import Path

import dp_accounting
from dp_accounting.rdp import RdpAccountant

from skdp.accounting import (
    GaussianEvent,
    LaplaceEvent,
    PLDAccountant,
    PoissonSubsampledGaussianEvent,
    PureDPEvent,
    RDPAccountant,
    SelfComposedEvent,
    calibrate_gaussian_noise_multiplier,
)

# The event mapping is the tests' oracle (one copy for both).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "accounting"))
from dp_accounting_oracle import (  # noqa: E402
    RELATIONS,
    dp_accounting_epsilon,
    dpsgd_replace_one_epsilon,
)

RDP_VECTORS = [
    # sigma, q, steps, delta
    (1.1, 256 / 60000, 14063, 1e-5),
    (1.3, 256 / 60000, 3516, 1e-5),
    (1.5, 0.04, 2250, 1e-5),
    (1.0, 1.0, 1, 1e-5),
    (2.0, 0.5, 5, 1e-6),
    (1.0, 0.001, 100000, 1e-7),
]

PLD_VECTORS = {
    "PSG(q=256/60000, sigma=1.1, T=14063)": (
        [PoissonSubsampledGaussianEvent(256 / 60000, 1.1, 14063)],
        1e-5,
    ),
    "PSG(q=0.0128, sigma=1.155, T=782)": (
        [PoissonSubsampledGaussianEvent(0.0128, 1.155, 782)],
        1e-5,
    ),
    "PSG(q=0.5, sigma=2, T=10)": ([PoissonSubsampledGaussianEvent(0.5, 2.0, 10)], 1e-6),
    "PSG(q=0.02, sigma=0.7, T=200)": (
        [PoissonSubsampledGaussianEvent(0.02, 0.7, 200)],
        1e-5,
    ),
    "3 x Gaussian(2) + Gaussian(5)": (
        [GaussianEvent(2.0)] * 3 + [GaussianEvent(5.0)],
        1e-6,
    ),
    "20 x Laplace(0.2)": ([SelfComposedEvent(LaplaceEvent(0.2), 20)], 1e-5),
    "5 x pure(0.3) + Gaussian(4)": (
        [PureDPEvent(0.3)] * 5 + [GaussianEvent(4.0)],
        1e-5,
    ),
    "Laplace(0.3) + Gaussian(3) + PSG(0.01, 1, 500) + Laplace(0.1)": (
        [
            LaplaceEvent(0.3),
            GaussianEvent(3.0),
            PoissonSubsampledGaussianEvent(0.01, 1.0, 500),
            LaplaceEvent(0.1),
        ],
        1e-5,
    ),
}


def dp_rdp_epsilon(sigma, q, steps, delta):
    accountant = RdpAccountant()
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return accountant.get_epsilon(delta)


def _print_table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


def dpsgd_rows(epsilons=(0.1, 0.3, 1.0, 4.0, 10.0), n_rows=20_000):
    import numpy as np

    from skdp import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_rows, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + 0.3 * rng.normal(size=n_rows) > 0).astype(int)
    rows = []
    for epsilon in epsilons:
        clf = DPLogisticRegression(
            method="gradient",
            epsilon=epsilon,
            delta=1e-5,
            data_norm=1.0,
            classes=[0, 1],
            random_state=0,
        ).fit(X, y)
        q, sigma, steps = clf.sampling_rate_, clf.noise_multiplier_, clf.n_steps_
        theirs = dpsgd_replace_one_epsilon(q, sigma, steps, 1e-5)
        renyi_sigma = calibrate_gaussian_noise_multiplier(
            epsilon, 1e-5, q, steps, accountant=RDPAccountant()
        )
        rows.append(
            [f"{epsilon:g}", f"{q:.4g}", f"{steps}", f"{renyi_sigma:.4f}"]
            + [f"{sigma:.4f}", f"{sigma / renyi_sigma - 1:+.1%}"]
            + [f"{clf.epsilon_:.6f}", f"{theirs:.6f}", f"{theirs / epsilon:.8f}"]
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dpsgd", action="store_true", help="fit DP-SGD runs too")
    args = parser.parse_args(argv)
    # dp_accounting logs every fractional order it drops (q = 0.5 below).
    logging.getLogger("absl").setLevel(logging.ERROR)
    rows = []
    for sigma, q, steps, delta in RDP_VECTORS:
        event = PoissonSubsampledGaussianEvent(q, sigma, steps)
        theirs = dp_rdp_epsilon(sigma, q, steps, delta)
        ours = (
            RDPAccountant(neighbouring_relation="add_remove")
            .compose([event], delta)
            .candidates["rdp"]
        )
        replace = RDPAccountant().compose([event], delta).candidates["rdp"]
        rows.append(
            [f"{sigma}", f"{q:.6g}", f"{steps}", f"{delta:g}", f"{ours:.4f}"]
            + [f"{theirs:.4f}", f"{(ours - theirs) / theirs:+.1e}", f"{replace:.4f}"]
        )
    print("Renyi DP (add/remove-one unless stated):\n")
    header = ["sigma", "q", "steps", "delta", "skdp add/remove", "dp_accounting"]
    _print_table(header + ["rel. diff", "skdp replace-one"], rows)

    rows = []
    for name, (events, delta) in PLD_VECTORS.items():
        for relation in RELATIONS:
            theirs = dp_accounting_epsilon(events, relation, delta)
            ours = PLDAccountant(relation).compose(events, delta).epsilon
            rows.append(
                [name, relation, f"{delta:g}", f"{theirs:.6f}", f"{ours:.6f}"]
                + [f"{ours / theirs:.8f}"]
            )
    print("Privacy loss distributions (pessimistic, grid 1e-4):\n")
    header = ["vector", "relation", "delta", "dp_accounting", "skdp", "ratio"]
    _print_table(header, rows)

    if args.dpsgd:
        print("DP-SGD fitted at epsilon (20,000 rows, batch 256, 10 epochs):\n")
        header = ["epsilon", "q", "steps", "sigma (Renyi-DP)", "sigma (now)"]
        header += ["change", "epsilon_ (skdp)", "dp_accounting PLD", "ratio"]
        _print_table(header, dpsgd_rows())


if __name__ == "__main__":
    main()
