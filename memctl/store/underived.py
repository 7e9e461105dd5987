"""Slots an operation has stored assertions for but not yet derived facts from.

An ingest of many batches stores each batch in a transaction of its own, and derives
the facts of the slots they touched for many batches at once (``ingest.py``): a hot
slot restated in every batch is then resolved once in a while, not once a batch. What
it still owes is written here in the same transaction as the assertions, so that:

- any other change to such a slot resolves it whole (``claim``, from
  ``recompute_slots``): its stored facts are not the exact starting point that
  resolving only the stretch of time a change reaches relies on;
- the operation, when it derives, resolves only the slots it still owes (``release``);
  one that another writer resolved whole meanwhile is already exact;
- the slots a killed operation owed are resolved whole by the next writer to open the
  file (``left_over``, from ``open_database``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlite_utils import Database

Slot = tuple[int, str]  # (subject_id, predicate_key)

# The slots given, as a table to join with.
_GIVEN = ("json_each(?) j CROSS JOIN underived_slots u ON u.subject_id = json_extract(j.value, '$[0]') "
          "AND u.predicate_key = json_extract(j.value, '$[1]')")


def owe(db: Database, operation_id: str, slots: Iterable[Slot]) -> None:
    """The operation has committed assertions to these slots that their facts do not include yet."""
    db.conn.executemany("INSERT OR IGNORE INTO underived_slots (subject_id, predicate_key, operation_id) "
                        "VALUES (?, ?, ?)", [(*slot, operation_id) for slot in slots])


def release(db: Database, operation_id: str, slots: Iterable[Slot]) -> set[Slot]:
    """Of these slots, those the operation still owes; they are no longer owed by it."""
    given = json.dumps(sorted(slots))
    owed = {(s, p) for s, p in db.execute(
        f"SELECT u.subject_id, u.predicate_key FROM {_GIVEN} WHERE u.operation_id = ?", [given, operation_id])}
    db.conn.executemany("DELETE FROM underived_slots WHERE subject_id = ? AND predicate_key = ? AND operation_id = ?",
                        [(*slot, operation_id) for slot in owed])
    return owed


def claim(db: Database, slots: Iterable[Slot]) -> set[Slot]:
    """Of these slots, those any operation owes; they are owed by none any more, as the
    caller resolves them whole."""
    if db.execute("SELECT 1 FROM underived_slots LIMIT 1").fetchone() is None:
        return set()  # nearly always: only a long ingest in progress (or killed) owes any
    owed = {(s, p) for s, p in db.execute(f"SELECT DISTINCT u.subject_id, u.predicate_key FROM {_GIVEN}",
                                          [json.dumps(sorted(slots))])}
    db.conn.executemany("DELETE FROM underived_slots WHERE subject_id = ? AND predicate_key = ?", owed)
    return owed


def left_over(db: Database) -> set[Slot]:
    """The slots owed by operations that are no longer running (killed, or interrupted
    before they could derive them); they are owed by none any more."""
    owed = {(s, p) for s, p in db.execute(
        "SELECT DISTINCT u.subject_id, u.predicate_key FROM underived_slots u JOIN operations o "
        "ON o.id = u.operation_id WHERE o.status != 'running'")}
    db.conn.executemany("DELETE FROM underived_slots WHERE subject_id = ? AND predicate_key = ?", owed)
    return owed
