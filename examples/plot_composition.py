"""
How spends compose
==================

Every release charges the budget, and the budget's accountant composes the
charges. This example compares, for a growing number of releases, the
total epsilon given by three valid bounds:

* adding the epsilons (basic composition);
* Rényi differential privacy, the accountant's general tool;
* for plain Gaussian releases, the exact profile of the composed Gaussian
  mechanism.

It then shows the subsampled Gaussian mechanism of DP-SGD, whose thousands
of steps are affordable only because of Rényi-DP accounting.
"""

# %%
# Gaussian releases
# -----------------
# One Gaussian release with noise multiplier 10 (noise standard deviation
# ten times the L2 sensitivity). Alone it costs about 0.4 at delta = 1e-6.
import numpy as np

from skdp.accounting import (
    GaussianEvent,
    PoissonSubsampledGaussianEvent,
    RDPAccountant,
    gaussian_epsilon,
)

delta = 1e-6
accountant = RDPAccountant()
one = gaussian_epsilon(10.0, delta)
print(f"one release: epsilon = {one:.3f} at delta = {delta:g}")

counts = [1, 2, 5, 10, 20, 50, 100, 200]
rows = []
for k in counts:
    report = accountant.compose([GaussianEvent(10.0)] * k, delta)
    rows.append((k, k * one, report.candidates["rdp"], report.epsilon))

print(f"{'releases':>8} {'sum of eps':>11} {'Renyi DP':>9} {'reported':>9}")
for k, basic, rdp, best in rows:
    print(f"{k:>8} {basic:>11.2f} {rdp:>9.2f} {best:>9.2f}")

# %%
# Adding the epsilons also adds the deltas (here 200 releases would spend
# delta = 2e-4), while the two other bounds keep delta = 1e-6. The reported
# total is the smallest valid bound.
import matplotlib.pyplot as plt

ks, basic, rdp, best = (np.array(column) for column in zip(*rows))
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(ks, basic, "o-", label="sum of epsilons (delta adds up)")
ax.loglog(ks, rdp, "s-", label="Renyi DP")
ax.loglog(ks, best, "^-", label="reported (tightest)")
ax.set_xlabel("number of Gaussian releases (noise multiplier 10)")
ax.set_ylabel(f"total epsilon at delta={delta:g}")
ax.legend()
fig.tight_layout()

# %%
# DP-SGD steps
# ------------
# A DP-SGD step samples each row with probability q and adds Gaussian noise
# to the clipped gradient sum. Rényi DP accounts for the amplification by
# subsampling; without it, 1,000 steps at noise multiplier 1 would cost
# 1,000 times the epsilon of one unsampled step.
for steps in (100, 1000, 10000):
    event = PoissonSubsampledGaussianEvent(
        sampling_rate=0.01, noise_multiplier=1.0, steps=steps
    )
    total = accountant.compose([event], delta).epsilon
    naive = steps * gaussian_epsilon(1.0, delta)
    print(f"{steps:>6} steps: epsilon = {total:6.2f}", end=" ")
    print(f"(no subsampling, summed: {naive:,.0f})")
