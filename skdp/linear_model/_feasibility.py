"""Feasibility of the logistic-regression plans, checked before the charge."""

from __future__ import annotations

from ..utils._feasibility import check_magnitudes, check_memory, check_work
from ._newton import MAX_CONDITION, SolverPlan

__all__ = ["check_magnitudes", "check_solver"]

#: Vectors of length ``K d`` (and of a row block's ``B K``) that the solve
#: holds at once, counted generously: the point, gradient, step, candidate,
#: perturbation, preconditioner and the CG iterates; a block's margins,
#: slopes, curvatures and probabilities.
_VECTORS = 24
#: Dense arrays of a row block's shape a block function holds at once.
_BLOCK_COPIES = 4


def check_solver(
    solver: SolverPlan,
    n_classes: int,
    n_features: int,
    sparse: bool = False,
    linear_norm: float = 0.0,
) -> None:
    """Magnitudes, memory and work of the exact methods' solve.

    Up to ``MAX_DENSE_HESSIAN`` coefficients the solve forms a dense Hessian
    of ``(K d)**2`` numbers (with its Cholesky factor and a copy); beyond,
    the plan has picked the Hessian-free solver, whose workspace is a few
    dozen vectors of ``K d`` numbers. Either way the rows are read one
    block at a time (``solver.block_size`` rows, bounded in the block
    function), so no copy of ``X`` is made: a block's temporaries are all
    the rows cost, ``_BLOCK_COPIES`` dense arrays of ``B d`` numbers (the
    bounded rows, their single-precision copy, the weighted rows) and a few
    dozen vectors of ``B K`` (for ``sparse`` rows, copies of the block's
    stored entries instead, which the input already holds). Every count
    here is public (``n``, ``d``, ``K``, ``B``, the input's format).

    The work is :meth:`~skdp.linear_model._newton.SolverPlan.work_bound`
    for each of the solves (one, or ``K`` one-vs-rest models), with
    ``linear_norm`` a bound on the perturbation's norm (0 for output
    perturbation), checked against
    :func:`~skdp.utils._feasibility.max_work`.
    """
    size = n_features * (1 if n_classes == 2 else n_classes)
    n_outputs = 1 if n_classes == 2 else n_classes
    block = (
        8.0
        * solver.block_size
        * (_VECTORS * n_outputs + (0 if sparse else _BLOCK_COPIES * n_features))
    )
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
        check_memory(
            8.0 * _VECTORS * size + block,
            f"The exact solve's Hessian-free workspace ({size} coefficients, "
            f"{solver.block_size}-row blocks)",
            "use method='gradient' (DP-SGD), or fewer features",
        )
    else:
        check_memory(
            3.0 * 8.0 * size**2 + block,
            f"The exact solve's dense Hessian ({size} x {size})",
            "use method='gradient' (DP-SGD), which needs no Hessian, or fewer features",
        )
    models = size // solver.n_coef
    check_work(
        models * solver.work_bound(linear_norm),
        f"The exact solve ({solver.n_samples} rows, {models} x {solver.n_coef} "
        "coefficients)",
        "use method='gradient' (DP-SGD, whose steps are planned), a smaller C, "
        "fewer classes or features",
    )
