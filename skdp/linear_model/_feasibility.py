"""Feasibility of the logistic-regression plans, checked before the charge."""

from __future__ import annotations

from ..utils._feasibility import check_magnitudes, check_memory
from ._newton import MAX_CONDITION, SolverPlan

__all__ = ["check_magnitudes", "check_solver"]


def check_solver(solver: SolverPlan, n_classes: int, n_features: int) -> None:
    """Magnitudes and memory of the exact methods' solve.

    The solve forms a dense Hessian of ``(K d)**2`` numbers (its Cholesky
    factor and a single-precision copy of ``Z`` besides), so ``d`` in the
    tens of thousands does not fit; ``method='gradient'`` never forms it.
    """
    size = n_features * (1 if n_classes == 2 else n_classes)
    condition = solver.smoothness / solver.alpha
    if not condition <= MAX_CONDITION:
        raise ValueError(
            f"The exact solve's condition number can reach {condition:.3g} "
            f"(C * n_samples * R**2 against the regularisation), beyond the "
            f"{MAX_CONDITION:.0e} float64 can factor reliably; use a smaller C "
            "(or method='gradient')."
        )
    check_magnitudes(
        "the exact solve",
        **{
            "C * n_samples * R**2 (the Hessian's scale)": solver.smoothness,
            "C * n_samples * R (the gradient's scale)": solver.C
            * solver.n_samples
            * solver.row_norm,
            "the residual radius": solver.residual,
        },
    )
    check_memory(
        3.0 * 8.0 * size**2 + 4.0 * solver.n_samples * n_features,
        f"The exact solve's dense Hessian ({size} x {size})",
        "use method='gradient' (DP-SGD), which needs no Hessian, or fewer features",
    )
