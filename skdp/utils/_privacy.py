"""The warning every estimator gives when a public bound is read from data."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from ..exceptions import PrivacyLeakWarning

__all__ = ["user_stacklevel", "warn_data_derived"]

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
    what: str, leaked: str, fix: str, *, stacklevel: int | None = None
) -> None:
    """Emit a :class:`~skdp.PrivacyLeakWarning` for a bound read from the data.

    The warning points at the user's line (the first frame outside skdp and
    scikit-learn) unless ``stacklevel`` is given.

    Parameters
    ----------
    what : str
        The parameter that was not given (e.g. ``"data_norm"``).
    leaked : str
        What the output can now reveal (e.g. ``"the largest row norm"``).
    fix : str
        How to avoid it (e.g. ``"pass data_norm=1.0 after scaling rows"``).
    stacklevel : int or None, default=None
        Passed to :func:`warnings.warn`; ``None`` finds the user's frame.
    """
    if stacklevel is None:
        stacklevel = user_stacklevel()
    warnings.warn(
        f"{what} was not given, so it was computed from the private data; the "
        f"output can reveal {leaked}, which the privacy guarantee does not "
        f"cover. To avoid this, {fix}.",
        PrivacyLeakWarning,
        stacklevel=stacklevel,
    )
