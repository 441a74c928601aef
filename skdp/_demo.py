"""The demo behind ``python -m skdp demo``."""

from __future__ import annotations

import numpy as np

from .accounting import PrivacyBudget
from .mechanisms import exponential_mechanism, gaussian_mechanism, laplace_mechanism

__all__ = ["run_demo"]


def run_demo(seed=None, out=None) -> PrivacyBudget:
    """Release a few statistics of a toy table under one shared budget."""
    import sys

    out = sys.stdout if out is None else out
    rng = np.random.default_rng(12345)
    ages = rng.integers(18, 90, size=1000)
    budget = PrivacyBudget(epsilon=2.0, delta=1e-6)
    rows = []
    # Each mechanism returns its noisy value with the event to charge; the
    # value is only shown once the budget has accepted the event.

    count = float((ages >= 65).sum())
    noisy, event = laplace_mechanism(
        count, 1.0, 0.5, random_state=seed, label="count 65+"
    )
    budget.spend(event)
    rows.append(("count of ages >= 65", count, noisy))

    clipped = np.clip(ages, 0, 100)
    mean = clipped.mean()
    noisy, event = gaussian_mechanism(
        mean, 100.0 / len(ages), 0.5, 1e-6, random_state=seed, label="mean age"
    )
    budget.spend(event)
    rows.append(("mean age (public bounds 0..100)", mean, noisy))

    decades = np.bincount(ages // 10, minlength=10).astype(float)
    index, event = exponential_mechanism(
        decades, 1.0, 0.5, random_state=seed, label="most common decade"
    )
    budget.spend(event)
    rows.append(
        ("most common decade", float(np.argmax(decades) * 10), float(index * 10))
    )

    print(f"{'statistic':<34} {'exact':>10} {'private':>10}", file=out)
    for name, exact, private in rows:
        print(f"{name:<34} {exact:>10.2f} {private:>10.2f}", file=out)
    print(file=out)
    print(budget.summary(), file=out)
    return budget
