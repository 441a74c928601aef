"""Data sets for examples, tests and benchmarks.

Loaders return :class:`sklearn.utils.Bunch` objects, as in
:mod:`sklearn.datasets`.
"""

from ._adult import ADULT_SYNTHESIS_COLUMNS, load_adult
from ._lecture import make_lecture_example

__all__ = ["ADULT_SYNTHESIS_COLUMNS", "load_adult", "make_lecture_example"]
