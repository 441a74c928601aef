"""The hash chain that makes an edited, reordered or truncated ledger detectable.

Every stored entry carries ``hash = H(previous hash, entry)`` where ``H`` is
SHA-256 over a canonical encoding of the entry *as stored* (its index, label,
the event's JSON text and the timestamp's exact binary value), and the chain
starts from a genesis hash bound to the ledger's identifier and limits, so
entries cannot be moved from one ledger to another. A store keeps the head
(count and last hash) next to its limits and moves it in the same transaction
as every append; a ledger whose last rows were deleted still forms a valid
chain, but no longer reaches the recorded head.

What this protects against: edits by anyone who does not rerun the chain
(a changed epsilon, a deleted or reordered row, a restored older copy of the
entries table, a copy that missed part of the file). It is not a signature:
someone who can write the file and knows this code can rebuild a consistent
chain. Copies of the head kept elsewhere (``PrivacyBudget.summary``, a
backup) make that detectable too.

Both ledger stores (:class:`~skdp.accounting.SQLiteLedger` and the PostgreSQL
store) use these functions, so their files and tables verify the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from ...exceptions import LedgerError

__all__ = ["ChainedRow", "check_head", "entry_hash", "genesis_hash", "verify_rows"]

_DOMAIN = "skdp-ledger-chain-1"

# (index, label, event JSON text as stored, timestamp, stored hash)
ChainedRow = tuple[int, str, str, float, str]


def genesis_hash(ledger_id: str, limits: tuple[float, float]) -> str:
    """The hash that entry 0 chains from: bound to one ledger and its limits."""
    payload = json.dumps(
        [_DOMAIN, str(ledger_id), float(limits[0]).hex(), float(limits[1]).hex()],
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def entry_hash(
    previous: str, index: int, label: str, event_json: str, timestamp: float
) -> str:
    """SHA-256 of one entry as stored, chained to ``previous``.

    ``event_json`` is the exact text stored for the event (never
    re-serialised), and the timestamp enters by its exact binary value
    (``float.hex``), so a store that round-trips text and doubles exactly
    verifies bit for bit.
    """
    payload = json.dumps(
        [previous, int(index), str(label), str(event_json), float(timestamp).hex()],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def verify_rows(
    rows: Iterable[ChainedRow],
    *,
    previous: str,
    start: int,
    where: str,
) -> str:
    """Check that ``rows`` continue the chain at index ``start`` from ``previous``.

    Returns the hash of the last row (``previous`` when there are none).
    Raises :class:`~skdp.exceptions.LedgerError` naming the first entry that
    is missing, out of place or altered.
    """
    expected_index = start
    head = previous
    for index, label, event_json, timestamp, stored in rows:
        if index != expected_index:
            raise LedgerError(
                f"The privacy ledger at {where} has entry {index} where entry "
                f"{expected_index} should be: entries were deleted, reordered or "
                "restored from an older copy, so it can no longer be trusted."
            )
        wanted = entry_hash(head, index, label, event_json, timestamp)
        if stored != wanted:
            raise LedgerError(
                f"Entry {index} of the privacy ledger at {where} does not match "
                "its hash chain: it (or an entry before it) was edited outside "
                "skdp, so the ledger can no longer be trusted."
            )
        head = stored
        expected_index += 1
    return head


def check_head(count: int, head: str, *, recorded: tuple[int, str], where: str):
    """Check the verified chain against the head recorded with the limits."""
    if (count, head) != tuple(recorded):
        raise LedgerError(
            f"The privacy ledger at {where} holds {count} verified entries but "
            f"its recorded head says {recorded[0]}: entries were deleted or the "
            "ledger was restored from an incomplete copy, so it can no longer be "
            "trusted."
        )
