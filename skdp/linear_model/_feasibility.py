"""Feasibility of the logistic-regression plans, checked before the charge."""

from __future__ import annotations

from ..utils._feasibility import check_magnitudes, check_memory
from ._newton import MAX_CONDITION, SolverPlan

__all__ = ["check_magnitudes", "check_solver"]

#: Vectors of length ``K d`` (and of length ``n K``) that the Hessian-free
#: solve holds at once, counted generously: the point, gradient, step,
#: candidate, perturbation, preconditioner and the CG iterates.
_VECTORS = 24


def check_solver(
    solver: SolverPlan, n_classes: int, n_features: int, rows_held: int | None = None
) -> None:
    """Magnitudes and memory of the exact methods' solve.

    Up to ``MAX_DENSE_HESSIAN`` coefficients the solve forms a dense Hessian
    of ``(K d)**2`` numbers (its Cholesky factor and a single-precision copy
    of ``Z`` besides); beyond, the plan has picked the Hessian-free solver,
    whose workspace is a few dozen vectors of ``K d`` and of ``n K``
    numbers, and one array the size of ``Z``'s stored values (the squares
    that give the preconditioner). Every count here is public (``n``,
    ``d``, ``K``); the last term is the input's own size.

    ``rows_held`` is how many rows this process holds (``n_samples`` when
    ``None``); a fit on a dask collection holds none, its workers hold one
    row block each.
    """
    rows = solver.n_samples if rows_held is None else rows_held
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
    if solver.hessian_free:
        n_outputs = 1 if n_classes == 2 else n_classes
        check_memory(
            8.0 * (_VECTORS * size + _VECTORS * rows * n_outputs),
            f"The exact solve's Hessian-free workspace ({size} coefficients, "
            f"{solver.n_samples} rows)",
            "use method='gradient' (DP-SGD), or fewer rows or features",
        )
        return
    check_memory(
        3.0 * 8.0 * size**2 + 4.0 * rows * n_features,
        f"The exact solve's dense Hessian ({size} x {size})",
        "use method='gradient' (DP-SGD), which needs no Hessian, or fewer features",
    )
