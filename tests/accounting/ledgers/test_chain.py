"""The ledger hash chain (skdp/accounting/ledgers/_chain.py) detects edits."""

import pytest

from skdp.accounting.ledgers._chain import (
    check_head,
    entry_hash,
    genesis_hash,
    verify_rows,
)
from skdp.exceptions import LedgerError


def _rows(n, ledger_id="abc", limits=(1.0, 0.0)):
    head = genesis_hash(ledger_id, limits)
    rows = []
    for i in range(n):
        event = f'{{"type": "laplace", "epsilon": {0.1 * (i + 1)!r}}}'
        head = entry_hash(head, i, f"fit {i}", event, 1.5e9 + i / 3)
        rows.append((i, f"fit {i}", event, 1.5e9 + i / 3, head))
    return rows


def test_an_intact_chain_verifies_to_its_last_hash():
    rows = _rows(4)
    head = verify_rows(
        rows, previous=genesis_hash("abc", (1.0, 0.0)), start=0, where="x"
    )
    assert head == rows[-1][4]
    check_head(4, head, recorded=(4, rows[-1][4]), where="x")


@pytest.mark.parametrize(
    "tamper",
    [
        lambda r: (
            r[:1] + [(1, r[1][1], r[1][2].replace("0.2", "0.02"), *r[1][3:])] + r[2:]
        ),
        lambda r: r[:1] + r[2:],  # a deleted middle entry
        lambda r: [r[1], r[0]] + r[2:],  # reordered
        lambda r: r[:2] + [(2, "other", *r[2][2:])] + r[3:],  # relabelled
    ],
    ids=["edited-epsilon", "deleted", "reordered", "relabelled"],
)
def test_an_edited_chain_is_refused(tamper):
    with pytest.raises(LedgerError, match="ledger at x"):
        verify_rows(
            tamper(_rows(4)),
            previous=genesis_hash("abc", (1.0, 0.0)),
            start=0,
            where="x",
        )


def test_entries_do_not_verify_in_another_ledger_or_under_other_limits():
    rows = _rows(2)
    for ledger_id, limits in [("other", (1.0, 0.0)), ("abc", (2.0, 0.0))]:
        with pytest.raises(LedgerError, match="hash chain"):
            verify_rows(
                rows, previous=genesis_hash(ledger_id, limits), start=0, where="x"
            )


def test_a_truncated_chain_misses_the_recorded_head():
    rows = _rows(4)
    head = verify_rows(
        rows[:3], previous=genesis_hash("abc", (1.0, 0.0)), start=0, where="x"
    )
    with pytest.raises(LedgerError, match="deleted"):
        check_head(3, head, recorded=(4, rows[-1][4]), where="x")
