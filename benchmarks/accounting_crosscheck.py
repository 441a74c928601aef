"""Cross-check skdp's RDP accountant against dp_accounting's RdpAccountant.

Run from the repository root after ``pip install -e ".[test]"``::

    python benchmarks/accounting_crosscheck.py

dp_accounting analyses the Poisson-subsampled Gaussian under add/remove-one,
so skdp is run with ``neighbouring="add_remove"`` for the comparison; the last
column is what skdp charges under its own relation (replace one row).
"""

import dp_accounting
from dp_accounting.rdp import RdpAccountant

from skdp.accounting import epsilon_poisson_subsampled_gaussian

VECTORS = [
    # sigma, q, steps, delta
    (1.1, 256 / 60000, 14063, 1e-5),
    (1.3, 256 / 60000, 3516, 1e-5),
    (1.5, 0.04, 2250, 1e-5),
    (1.0, 1.0, 1, 1e-5),
    (2.0, 0.5, 5, 1e-6),
    (1.0, 0.001, 100000, 1e-7),
]


def dp_accounting_epsilon(sigma, q, steps, delta):
    accountant = RdpAccountant()
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return accountant.get_epsilon(delta)


def main():
    header = ["sigma", "q", "steps", "delta", "skdp add/remove", "dp_accounting"]
    header += ["rel. diff", "skdp replace-one"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for sigma, q, steps, delta in VECTORS:
        theirs = dp_accounting_epsilon(sigma, q, steps, delta)
        ours = epsilon_poisson_subsampled_gaussian(
            q, sigma, steps, delta, neighbouring="add_remove"
        )
        replace = epsilon_poisson_subsampled_gaussian(q, sigma, steps, delta)
        row = [f"{sigma}", f"{q:.6g}", f"{steps}", f"{delta:g}", f"{ours:.4f}"]
        row += [f"{theirs:.4f}", f"{(ours - theirs) / theirs:+.1e}", f"{replace:.4f}"]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
