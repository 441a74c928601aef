"""The warning every estimator gives when a public bound is read from data."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from ..exceptions import PrivacyLeakWarning

__all__ = ["DATA_BOUND_ADVICE", "user_stacklevel", "warn_data_derived"]

#: For every public parameter that skdp estimators read from the private data
#: when it is ``None``: what the output can then reveal, and how to avoid it.
#: The fit's :class:`~skdp.PrivacyLeakWarning` and :func:`skdp.check_pipeline`
#: say the same thing. An estimator lists its own such parameters in
#: ``_data_bound_params`` (see :class:`~skdp.base.PrivateEstimatorMixin`).
DATA_BOUND_ADVICE: dict[str, tuple[str, str]] = {
    "data_norm": (
        "the largest L2 norm of a row",
        "pass data_norm, a public bound on the row norms (e.g. 1.0 after "
        "sklearn.preprocessing.Normalizer)",
    ),
    "classes": (
        "which labels occur in the training data",
        "pass classes=[...], the public list of possible labels",
    ),
    "y_bounds": (
        "the smallest and largest target",
        "pass y_bounds=(low, high) from public knowledge",
    ),
    "bounds": (
        "the smallest and largest value of each feature",
        "pass bounds=(lower, upper): public limits of each feature (scalars, "
        "or one value per feature; a synthesizer also takes a dict by column)",
    ),
    "categories": (
        "which values occur in each categorical column",
        "pass categories={column: [...]}, or use pandas Categorical dtypes "
        "with the public categories",
    ),
    "domain": (
        "which values occur in each column",
        "pass domain=[values of column 0, values of column 1, ...] from "
        "public knowledge",
    ),
}

# Frames in these directories are library code; a warning points past them.
_LIBRARY_DIRS = tuple(
    str(Path(module.__file__).resolve().parent)
    for module in (sys.modules[__name__.split(".")[0]],)
)


def user_stacklevel(extra_library_dirs: tuple[str, ...] = ()) -> int:
    """``stacklevel`` that makes a warning point at the first caller outside
    skdp and scikit-learn (the user's line).

    Examples
    --------
    >>> from skdp.utils._privacy import user_stacklevel
    >>> user_stacklevel() >= 1
    True
    """
    import sklearn

    library = _LIBRARY_DIRS + (str(Path(sklearn.__file__).resolve().parent),)
    library += tuple(extra_library_dirs)
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(library):
            return level
        frame = frame.f_back
        level += 1
    return 1


def warn_data_derived(
    what: str,
    leaked: str | None = None,
    fix: str | None = None,
    *,
    stacklevel: int | None = None,
) -> None:
    """Emit a :class:`~skdp.PrivacyLeakWarning` for a bound read from the data.

    The warning points at the user's line (the first frame outside skdp and
    scikit-learn) unless ``stacklevel`` is given.

    Parameters
    ----------
    what : str
        The parameter that was not given (e.g. ``"data_norm"``).
    leaked : str or None, default=None
        What the output can now reveal (e.g. ``"the largest row norm"``);
        ``None`` takes it from ``DATA_BOUND_ADVICE`` for ``what``.
    fix : str or None, default=None
        How to avoid it (e.g. ``"pass data_norm=1.0 after scaling rows"``);
        ``None`` takes it from ``DATA_BOUND_ADVICE`` for ``what``.
    stacklevel : int or None, default=None
        Passed to :func:`warnings.warn`; ``None`` finds the user's frame.
    """
    if leaked is None or fix is None:
        default_leaked, default_fix = DATA_BOUND_ADVICE[what]
        leaked = default_leaked if leaked is None else leaked
        fix = default_fix if fix is None else fix
    if stacklevel is None:
        stacklevel = user_stacklevel()
    warnings.warn(
        f"{what} was not given, so it was computed from the private data; the "
        f"output can reveal {leaked}, which the privacy guarantee does not "
        f"cover. To avoid this, {fix}.",
        PrivacyLeakWarning,
        stacklevel=stacklevel,
    )
