"""Private model selection: hyperparameter search whose choice is paid for.

:class:`PrivateSearchCV` tunes a private estimator by random stopping
(Liu & Talwar 2019; Papernot & Steinke 2022): a secret random number of
private trials, of which only the best is released, charged once.
"""

from ._search import PrivateSearchCV

__all__ = ["PrivateSearchCV"]
