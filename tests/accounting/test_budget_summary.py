"""The ledger table printed by PrivacyBudget.summary()."""

from skdp import PrivacyBudget
from skdp.accounting import ComposedEvent, ExponentialMechanismEvent, GaussianEvent


def test_summary_counts_repeated_parts_of_a_composed_event():
    budget = PrivacyBudget(10.0, 1e-6)
    parts = [GaussianEvent(30.0)] * 20 + [ExponentialMechanismEvent(0.02)] * 19
    budget.spend(ComposedEvent(events=tuple(parts)), label="synthesizer")
    text = budget.summary()
    assert "20 x GaussianEvent(noise_multiplier=30)" in text
    assert "19 x ExponentialMechanismEvent(epsilon=0.02)" in text
    assert text.count("GaussianEvent") == 1


def test_summary_keeps_long_labels_readable():
    budget = PrivacyBudget(10.0)
    label = "DPLogisticRegression(C=1.0, epsilon=0.5, method='objective').fit"
    budget.spend(ExponentialMechanismEvent(0.5), label=label)
    budget.spend(ExponentialMechanismEvent(0.5), label="x" * 200)
    text = budget.summary()
    assert label in text
    assert "x" * 77 + "..." in text and "x" * 78 not in text
