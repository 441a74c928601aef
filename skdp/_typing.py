"""Names used only in type annotations (no runtime behaviour).

``Self`` (PEP 673) is in :mod:`typing` from Python 3.11; skdp supports 3.10
without depending on ``typing_extensions``, so it is imported here for type
checkers only. Modules that annotate ``-> Self`` import it the same way::

    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from .._typing import Self

(all skdp modules use ``from __future__ import annotations``, so the name is
never evaluated at run time).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Self as Self
    else:  # type checkers ship typing_extensions' stubs
        from typing_extensions import Self as Self
