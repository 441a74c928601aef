"""How a sequence of privacy events composes into one (epsilon, delta)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ._analytic_gaussian import gaussian_epsilon
from ._events import (
    ApproxDPEvent,
    ComposedEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    PureDPEvent,
    ZCDPEvent,
)
from ._rdp import (
    DEFAULT_ORDERS,
    rdp_exponential_mechanism,
    rdp_gaussian,
    rdp_poisson_subsampled_gaussian_replace_one,
    rdp_pure_dp,
    rdp_to_epsilon,
    rdp_zcdp,
)

__all__ = ["CompositionReport", "RDPAccountant", "flatten_events"]


def flatten_events(events: Iterable[PrivacyEvent]) -> list[PrivacyEvent]:
    """Expand :class:`ComposedEvent` records into their parts, in order."""
    out: list[PrivacyEvent] = []
    for ev in events:
        if isinstance(ev, ComposedEvent):
            out.extend(ev.leaves())
        elif isinstance(ev, PrivacyEvent):
            out.append(ev)
        else:
            raise TypeError(f"Expected a PrivacyEvent, got {ev!r}.")
    return out


@dataclass(frozen=True)
class CompositionReport:
    """The total privacy of a set of events and how it was obtained.

    Attributes
    ----------
    epsilon : float
        Total epsilon.
    delta : float
        Total delta.
    method : str
        Which composition theorem gave the bound (the tightest valid one).
    candidates : dict
        Every bound that was computed, by name.
    """

    epsilon: float
    delta: float
    method: str
    candidates: dict


class RDPAccountant:
    """Composes privacy events with the tightest bound skdp implements.

    The events are split into four groups:

    * pure events (:class:`LaplaceEvent`, :class:`ExponentialMechanismEvent`,
      :class:`PureDPEvent`), each ``epsilon``-DP;
    * plain Gaussian events (:class:`GaussianEvent`);
    * events only described by a Renyi-DP curve
      (:class:`PoissonSubsampledGaussianEvent`, :class:`ZCDPEvent`);
    * approximate events (:class:`ApproxDPEvent`), each ``(epsilon, delta)``.

    Approximate events always compose by basic composition (epsilons and
    deltas add). Whatever delta remains, ``delta_available = delta -
    sum(delta_i)``, is given to the other three groups, and the smallest of
    these valid bounds is reported:

    1. ``rdp``: Renyi-DP composition of everything (pure events enter with
       the curve ``min(eps, alpha eps**2 / 2)`` implied by pure DP, the
       exponential mechanism with its bounded-range curve), converted to
       ``(epsilon, delta_available)`` with the improved conversion of
       Canonne, Kamath & Steinke (2020), Proposition 12;
    2. ``basic+rdp``: the sum of the pure epsilons, plus the Renyi-DP
       composition of the Gaussian groups converted at ``delta_available``;
    3. ``basic+gaussian`` (no Renyi-only events): the sum of the pure
       epsilons, plus the exact profile of the composed Gaussian mechanisms
       (their composition is one Gaussian mechanism with multiplier
       ``(sum s_i**-2) ** -0.5``; Balle & Wang 2018, Theorem 8);
    4. ``basic`` (pure events only): the sum of the epsilons, delta = 0.

    When any Gaussian or Renyi-only event is present, the reported delta is
    the full ``delta`` limit the bound was computed for.

    The neighbouring relation is skdp's: replace one row (``n`` public).
    Sensitivities in pure and Gaussian events are the callers' replace-one
    sensitivities; a :class:`PoissonSubsampledGaussianEvent` (whose
    ``noise_multiplier`` is relative to the per-row bound) is accounted with
    :func:`~skdp.accounting.rdp_poisson_subsampled_gaussian_replace_one`.

    Parameters
    ----------
    orders : sequence of float, default=DEFAULT_ORDERS
        Renyi orders at which curves are evaluated.

    Examples
    --------
    >>> from skdp.accounting import GaussianEvent, LaplaceEvent, RDPAccountant
    >>> acc = RDPAccountant()
    >>> acc.compose([LaplaceEvent(0.5), LaplaceEvent(0.25)], delta=0.0).epsilon
    0.75
    >>> report = acc.compose([GaussianEvent(2.0)] * 4, delta=1e-5)
    >>> report.method, round(report.epsilon, 3)
    ('basic+gaussian', 4.377)
    """

    def __init__(self, orders: Sequence[float] = DEFAULT_ORDERS):
        self.orders = np.asarray(orders, dtype=float)

    def __repr__(self):
        return f"RDPAccountant(orders=<{len(self.orders)} orders>)"

    def rdp_curve(self, event: PrivacyEvent) -> np.ndarray:
        """Renyi-DP curve of one (non-approximate) event at ``self.orders``."""
        if isinstance(event, ComposedEvent):
            total = np.zeros_like(self.orders)
            for ev in event.leaves():
                total = total + self.rdp_curve(ev)
            return total
        if isinstance(event, ExponentialMechanismEvent):
            return rdp_exponential_mechanism(event.epsilon, self.orders)
        if isinstance(event, PureDPEvent):
            return rdp_pure_dp(event.epsilon, self.orders)
        if isinstance(event, GaussianEvent):
            return rdp_gaussian(event.noise_multiplier, self.orders)
        if isinstance(event, PoissonSubsampledGaussianEvent):
            one = rdp_poisson_subsampled_gaussian_replace_one(
                event.sampling_rate, event.noise_multiplier, self.orders
            )
            return event.steps * np.asarray(one, dtype=float)
        if isinstance(event, ZCDPEvent):
            return rdp_zcdp(event.rho, self.orders)
        raise TypeError(f"{type(event).__name__} has no Renyi-DP curve.")

    def compose(
        self, events: Iterable[PrivacyEvent], delta: float
    ) -> CompositionReport:
        """Total privacy of ``events`` when ``delta`` may be spent in all.

        Parameters
        ----------
        events : iterable of PrivacyEvent
            The events, composed in any order (composition is commutative).
        delta : float
            The total delta available, in [0, 1).

        Returns
        -------
        report : CompositionReport
            ``epsilon`` is ``inf`` when the events cannot be made
            ``(epsilon, delta)``-DP, e.g. a Gaussian event with ``delta=0``.
        """
        leaves = flatten_events(events)
        pure = [e for e in leaves if isinstance(e, PureDPEvent)]
        approx = [e for e in leaves if isinstance(e, ApproxDPEvent)]
        gauss = [e for e in leaves if isinstance(e, GaussianEvent)]
        rdp_only = [
            e
            for e in leaves
            if isinstance(e, PoissonSubsampledGaussianEvent | ZCDPEvent)
        ]
        known = len(pure) + len(approx) + len(gauss) + len(rdp_only)
        if known != len(leaves):
            unknown = [
                type(e).__name__
                for e in leaves
                if e not in pure + approx + gauss + rdp_only
            ]
            raise TypeError(f"The accountant does not support events {unknown}.")

        eps_approx = math.fsum(e.epsilon for e in approx)
        delta_approx = math.fsum(e.delta for e in approx)
        eps_pure = math.fsum(e.epsilon for e in pure)
        if not gauss and not rdp_only:
            return CompositionReport(
                eps_pure + eps_approx,
                delta_approx,
                "basic",
                {"basic": eps_pure + eps_approx},
            )
        delta_available = float(delta) - delta_approx
        if delta_available <= 0:
            return CompositionReport(math.inf, float(delta), "none", {})

        candidates: dict[str, float] = {}
        gauss_curve = np.zeros_like(self.orders)
        for ev in gauss + rdp_only:
            gauss_curve = gauss_curve + self.rdp_curve(ev)
        pure_curve = np.zeros_like(self.orders)
        for ev in pure:
            pure_curve = pure_curve + self.rdp_curve(ev)
        candidates["rdp"] = rdp_to_epsilon(
            gauss_curve + pure_curve, self.orders, delta_available
        )[0]
        if pure:
            candidates["basic+rdp"] = (
                eps_pure + rdp_to_epsilon(gauss_curve, self.orders, delta_available)[0]
            )
        if not rdp_only:
            s = math.fsum(e.noise_multiplier**-2 for e in gauss) ** -0.5
            candidates["basic+gaussian"] = eps_pure + gaussian_epsilon(
                s, delta_available
            )
        method = min(candidates, key=candidates.get)
        return CompositionReport(
            candidates[method] + eps_approx,
            float(delta),
            method if not approx else method + "+approx",
            candidates,
        )

    def epsilon_delta(
        self, events: Iterable[PrivacyEvent], delta: float
    ) -> tuple[float, float]:
        """Shorthand for ``(report.epsilon, report.delta)`` of :meth:`compose`."""
        report = self.compose(events, delta)
        return report.epsilon, report.delta
