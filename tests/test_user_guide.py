"""The user guide's examples run (every ``>>>`` line of doc/user_guide)."""

import doctest
from pathlib import Path

import pytest

PAGES = sorted(
    (Path(__file__).resolve().parents[1] / "doc" / "user_guide").glob("*.rst")
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_user_guide_examples(page):
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
        verbose=False,
    )
    assert result.failed == 0, f"{result.failed} example(s) of {page.name} failed"
