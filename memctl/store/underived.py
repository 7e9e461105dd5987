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

    from memctl.store.facts import SlotChange

Slot = tuple[int, str]  # (subject_id, predicate_key)

# The slots given, as a table to join with.
_GIVEN = ("json_each(?) j CROSS JOIN underived_slots u ON u.subject_id = json_extract(j.value, '$[0]') "
          "AND u.predicate_key = json_extract(j.value, '$[1]')")


def owe(db: Database, operation_id: str, changed: dict[Slot, SlotChange]) -> int:
    """The operation has committed these changes, which the slots' facts do not include
    yet; how many instants they hold.

    The changes themselves wait in a temporary table of the connection, not in Python
    objects (a set per value of a slot took 900 bytes an assertion) nor in the file (a
    writer that finds a slot owed resolves it whole, and so does the recovery from a
    crash: neither needs them). Like the rows that say the slot is owed, they go with a
    transaction that rolls back.
    """
    db.conn.executemany("INSERT OR IGNORE INTO underived_slots (subject_id, predicate_key, operation_id) "
                        "VALUES (?, ?, ?)", [(*slot, operation_id) for slot in changed])
    rows = [(*slot, object_id, instant, change.added_many)
            for slot, change in changed.items() for object_id, instants in change.instants.items()
            for instant in instants]
    db.conn.executemany("INSERT INTO temp.owed_changes VALUES (?, ?, ?, ?, ?)", rows)
    return len(rows)


def forget_changes(db: Database) -> None:
    """An empty table for the changes an operation owes (``owe``)."""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS owed_changes "
               "(subject_id INTEGER, predicate_key TEXT, object_id INTEGER, instant TEXT, many INTEGER)")
    db.execute("CREATE INDEX IF NOT EXISTS temp.owed_changes_slot ON owed_changes (subject_id, predicate_key)")
    db.execute("DELETE FROM temp.owed_changes")


def owed_slots(db: Database) -> list[tuple[Slot, int]]:
    """The slots whose changes wait in this connection, in order, with how many instants each."""
    return [((s, p), n) for s, p, n in db.execute(
        "SELECT subject_id, predicate_key, count(*) FROM temp.owed_changes GROUP BY subject_id, predicate_key "
        "ORDER BY subject_id, predicate_key")]


def release(db: Database, operation_id: str, slots: list[Slot]) -> dict[Slot, SlotChange]:
    """The changes of these slots that the operation still owes facts for, which it no
    longer owes; those another writer has resolved whole since are left out (exact)."""
    from memctl.store.facts import SlotChange

    given = json.dumps(slots)
    owed = {(s, p) for s, p in db.execute(
        f"SELECT u.subject_id, u.predicate_key FROM {_GIVEN} WHERE u.operation_id = ?", [given, operation_id])}
    db.conn.executemany("DELETE FROM underived_slots WHERE subject_id = ? AND predicate_key = ? AND operation_id = ?",
                        [(*slot, operation_id) for slot in owed])
    changes: dict[Slot, SlotChange] = {}
    for subject_id, predicate_key, object_id, instant, many in db.execute(
            "SELECT c.subject_id, c.predicate_key, c.object_id, c.instant, c.many FROM json_each(?) j "
            "CROSS JOIN temp.owed_changes c ON c.subject_id = json_extract(j.value, '$[0]') "
            "AND c.predicate_key = json_extract(j.value, '$[1]')", [given]):
        if (subject_id, predicate_key) in owed:
            change = changes.setdefault((subject_id, predicate_key), SlotChange())
            change.instants.setdefault(object_id, set()).add(instant)
            change.added_many |= bool(many)
    db.conn.executemany("DELETE FROM temp.owed_changes WHERE subject_id = ? AND predicate_key = ?", slots)
    return changes


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
