"""Slots an operation has changed assertions of but not yet derived facts from.

An ingest or an undo of many batches changes each batch's assertions in a transaction
of its own, and derives the facts of the slots they touched for many batches at once
(``Owed``): a hot slot changed by every batch is then resolved once in a while, not
once a batch. What it still owes is written here in the same transaction as the
assertions, so that:

- any other change to such a slot resolves it whole (``claim``, from
  ``recompute_slots``): its stored facts are not the exact starting point that
  resolving only the stretch of time a change reaches relies on;
- the operation, when it derives, resolves only the slots it still owes (``release``):
  one that another writer resolved whole meanwhile is already exact, and one that
  another operation owes too is resolved whole, as neither knows the other's changes;
- the slots a killed operation owed are resolved whole by the next writer to open the
  file, or the next long operation of a writer already open (``derive_left_over``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memctl.store import given_slots, next_batch_size
from memctl.store.connection import Clock, transaction_time, write_transaction
from memctl.store.turns import let_others_in

if TYPE_CHECKING:
    from memctl.store import Database
    from memctl.store.episodes import Touched
    from memctl.store.facts import SlotChange, SlotChanges

Slot = tuple[int, str]  # (subject_id, predicate_key)


def _given(db: Database, table: str, alias: str) -> str:
    """The slots given (a JSON array as one ``?``), joined with ``table``'s rows of them."""
    return f"{given_slots(db)} g CROSS JOIN {table} {alias} ON {alias}.subject_id = g.s AND {alias}.predicate_key = g.p"


def owe(db: Database, operation_id: str, changed: dict[Slot, SlotChange], at: str) -> int:
    """The operation has committed these changes at ``at``, which the slots' facts do not
    include yet; how many of their instants are kept (``Owed.derive_if_due``).

    The changes wait in temporary tables of the connection, not in Python objects (a set
    per value of a slot took 900 bytes an assertion) nor in the file (a writer that finds
    a slot owed resolves it whole, and so does the recovery from a crash: neither needs
    them). Like the rows that say the slot is owed, they go with a transaction that rolls
    back. Only the changes to slots that have facts are kept instant by instant: a slot
    without any is resolved whole however it changed, so it is kept once, with how many
    instants it gained (what resolving it costs). A backfill into new slots keeps no
    instants at all, however long it runs.
    """
    from memctl.store.facts import stored_cardinalities

    db.conn.executemany("INSERT OR IGNORE INTO underived_slots (subject_id, predicate_key, operation_id, since) "
                        "VALUES (?, ?, ?, ?)", [(*slot, operation_id, at) for slot in changed])
    with_facts = stored_cardinalities(db, list(changed))
    db.conn.executemany(
        "INSERT INTO temp.owed_new_slots VALUES (?, ?, ?) "
        "ON CONFLICT (subject_id, predicate_key) DO UPDATE SET instants = owed_new_slots.instants + excluded.instants",
        [(*slot, sum(map(len, change.instants.values()))) for slot, change in changed.items()
         if slot not in with_facts])
    rows = [(*slot, object_id, instant, change.added_many, change.removed_many)
            for slot, change in changed.items() if slot in with_facts
            for object_id, instants in change.instants.items() for instant in instants]
    db.conn.executemany("INSERT INTO temp.owed_changes VALUES (?, ?, ?, ?, ?, ?)", rows)
    return len(rows)


def forget_changes(db: Database) -> None:
    """Empty tables for the changes an operation owes (``owe``)."""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS owed_changes (subject_id INTEGER, predicate_key TEXT, "
               "object_id INTEGER, instant TEXT, added_many INTEGER, removed_many INTEGER)")
    db.execute("CREATE INDEX IF NOT EXISTS temp.owed_changes_slot ON owed_changes (subject_id, predicate_key)")
    db.execute("CREATE TEMP TABLE IF NOT EXISTS owed_new_slots (subject_id INTEGER, predicate_key TEXT, "
               "instants INTEGER, PRIMARY KEY (subject_id, predicate_key))")
    db.execute("DELETE FROM temp.owed_changes")
    db.execute("DELETE FROM temp.owed_new_slots")


def owed_slots(db: Database, *, new: bool = True) -> list[tuple[Slot, int]]:
    """The slots whose changes wait in this connection, in order, with how many instants
    each; without ``new``, only those whose changes are kept (they had facts)."""
    new_slots = "UNION ALL SELECT subject_id, predicate_key, instants FROM temp.owed_new_slots" if new else ""
    return [((s, p), n) for s, p, n in db.execute(
        "SELECT subject_id, predicate_key, sum(n) FROM ("
        "SELECT subject_id, predicate_key, count(*) AS n FROM temp.owed_changes GROUP BY subject_id, predicate_key "
        f"{new_slots}) GROUP BY subject_id, predicate_key ORDER BY subject_id, predicate_key")]


@dataclass
class Released:
    """What an operation owed for some slots, to derive now: the changes of the slots only
    it owed, when it began to owe each (``since``: what it took out since counts as taken
    out by the change), and the slots to resolve whole: those another operation owed too,
    those that had no fact when they were owed, and those with few assertions left."""

    changes: dict[Slot, SlotChange]
    since: dict[Slot, str]
    whole: set[Slot]


def release(db: Database, operation_id: str, slots: list[Slot]) -> Released:
    """What the operation owes for these slots, which it owes no longer; a slot another
    writer has resolved whole since is left out (it is exact), one that another operation
    owes too is owed by neither any more (it is resolved whole), and one that had no fact
    when it was owed is resolved whole (its instants were not kept: ``owe``)."""
    from memctl.store.facts import SlotChange

    given = json.dumps(slots)
    owers: dict[Slot, list[tuple[str, str]]] = {}
    for subject_id, predicate_key, owner, since in db.execute(
            f"SELECT u.subject_id, u.predicate_key, u.operation_id, u.since FROM {_given(db, 'underived_slots', 'u')}",
            [given]):
        owers.setdefault((subject_id, predicate_key), []).append((owner, since))
    mine = {slot: found[0][1] for slot, found in owers.items() if [owner for owner, _ in found] == [operation_id]}
    shared = {slot for slot, found in owers.items() if len(found) > 1 and operation_id in dict(found)}
    db.conn.executemany("DELETE FROM underived_slots WHERE subject_id = ? AND predicate_key = ? AND operation_id = ?",
                        [(*slot, operation_id) for slot in mine])
    db.conn.executemany("DELETE FROM underived_slots WHERE subject_id = ? AND predicate_key = ?", shared)
    changes: dict[Slot, SlotChange] = {}
    for subject_id, predicate_key, object_id, instant, added_many, removed_many in db.execute(
            "SELECT c.subject_id, c.predicate_key, c.object_id, c.instant, c.added_many, c.removed_many "
            f"FROM {_given(db, 'temp.owed_changes', 'c')}", [given]):
        if (subject_id, predicate_key) in mine:
            change = changes.setdefault((subject_id, predicate_key), SlotChange())
            change.instants.setdefault(object_id, set()).add(instant)
            change.added_many |= bool(added_many)
            change.removed_many |= bool(removed_many)
    new = {(s, p) for s, p in db.execute(
        f"SELECT n.subject_id, n.predicate_key FROM {_given(db, 'temp.owed_new_slots', 'n')}", [given]) if (s, p) in mine}
    for table in ("owed_changes", "owed_new_slots"):
        db.conn.executemany(f"DELETE FROM temp.{table} WHERE subject_id = ? AND predicate_key = ?", slots)
    few = _few_left(db, {slot: sum(map(len, change.instants.values())) for slot, change in changes.items()
                         if slot not in new})
    for slot in few | (new & changes.keys()):
        del changes[slot]
    return Released(changes, {slot: mine[slot] for slot in changes}, shared | few | new)


# A slot left with fewer active assertions than this many for each instant its change
# reaches (and a few) is resolved whole: reading them all costs less than finding where
# each stretch begins and ends. An undo of a whole ingest leaves most slots empty.
_WHOLE_BELOW_PER_INSTANT = 2
_WHOLE_BELOW = 8


def _few_left(db: Database, instants: dict[Slot, int]) -> set[Slot]:
    """Of these slots (with the number of instants their changes reach), those with few
    active assertions left; each is counted only up to where it stops being few."""
    if not instants:
        return set()
    bounds = {slot: _WHOLE_BELOW + _WHOLE_BELOW_PER_INSTANT * n for slot, n in instants.items()}
    return {(s, p) for s, p, left in db.execute(
        "SELECT s, p, (SELECT count(*) FROM (SELECT 1 FROM assertions a WHERE a.subject_id = s AND "
        f"a.predicate_key = p AND a.expired_at IS NULL LIMIT ?) AS held) FROM {given_slots(db)} g",
        [max(bounds.values()), json.dumps(list(bounds))])
        if left < bounds[s, p]}


def claim(db: Database, slots: Iterable[Slot]) -> set[Slot]:
    """Of these slots, those any operation owes; they are owed by none any more, as the
    caller resolves them whole."""
    if db.execute("SELECT 1 FROM underived_slots LIMIT 1").fetchone() is None:
        return set()  # nearly always: only a long ingest or undo in progress (or killed) owes any
    owed = {(s, p) for s, p in db.execute(f"SELECT DISTINCT u.subject_id, u.predicate_key "
                                          f"FROM {_given(db, 'underived_slots', 'u')}",
                                          [json.dumps(sorted(slots))])}
    db.conn.executemany("DELETE FROM underived_slots WHERE subject_id = ? AND predicate_key = ?", owed)
    return owed


def derive_left_over(db: Database, at: Callable[[], str]) -> None:
    """Resolve whole the slots owed by operations that are no longer running (killed, or
    interrupted and unable to derive them), in the caller's transaction, at the time
    ``at`` gives (asked only if there are any: it may take the next transaction time)."""
    owed = {(s, p) for s, p in db.execute(
        "SELECT DISTINCT u.subject_id, u.predicate_key FROM underived_slots u JOIN operations o "
        "ON o.id = u.operation_id WHERE o.status != 'running'")}
    if owed:
        from memctl.store.facts import recompute_slots

        recompute_slots(db, owed, at())  # which claims them from every operation


# What batches owe is derived once this many changed instants (about one an assertion)
# of slots that have facts are kept, or once the first of them has waited this many
# seconds: a hot slot that every batch changes is then resolved once in a while rather
# than once a batch, and a fact a long operation changes is never more than half a
# minute out of date. A slot that has no fact yet is not out of date, and costs no
# memory while it waits (``owe``): its facts come at the end, resolved once, whole. On a
# backfill of 1M assertions into new slots, deriving on the way made every later round
# resolve stretches of slots the earlier ones had made: 235 s in process, against 144 s.
DERIVE_EVERY_INSTANTS = 100_000
DERIVE_EVERY_SECONDS = 30.0
# The owed facts are derived in transactions of this many changed instants at first, then
# sized from how long the last took, to hold the write lock about DERIVE_SECONDS at a
# time; at most DERIVE_MOST_INSTANTS, as the rows a transaction reads around each
# instant are held in memory while it resolves them (at 1M assertions, 10,000 instants
# took 100 MB).
DERIVE_FIRST_INSTANTS = 5_000
DERIVE_MOST_INSTANTS = 50_000
DERIVE_SECONDS = 1.0


@dataclass
class Owed:
    """What one operation's committed batches owe in facts (kept with ``owe``), how much, and since when."""

    operation_id: str
    # A preview's: its changes and derivations happen in the caller's transaction, which
    # is rolled back, so it derives in no transaction of its own and lets nobody in.
    tentative: bool = False
    instants: int = 0  # changes kept instant by instant (``owe``)
    since: float | None = None  # when the first of them was kept (time.monotonic)
    _started: bool = field(default=False, init=False, repr=False)  # this connection's table is its own
    _taking_out: bool = field(default=False, init=False, repr=False)  # an undo: ``taking_out``

    def taking_out(self, db: Database, episode_ids: list[str]) -> None:
        """The operation is an undo of these episodes, all of them. A slot whose every
        active assertion is among theirs will have no facts once it is done: its facts end
        in the batch that first changes it (``add``), and the slot is owed whole, as one
        that has no fact is (``owe``). They are missing meanwhile, not wrong: any other
        change to the slot resolves it whole from what is left, and so does the operation
        if it stops before its end."""
        db.execute("CREATE TEMP TABLE IF NOT EXISTS taken_out (episode_id TEXT PRIMARY KEY) WITHOUT ROWID")
        db.execute("DELETE FROM temp.taken_out")
        db.conn.executemany("INSERT OR IGNORE INTO temp.taken_out VALUES (?)", ((e,) for e in episode_ids))
        self._taking_out = True

    def add(self, db: Database, touched: Touched, at: str,
            on_ended: Callable[[SlotChanges], object] = lambda changes: None) -> None:
        """What a batch committed at ``at`` touched, by its changes (never a slot to resolve
        whole: that needs no stretch of time, and is done at once); ``on_ended`` is told
        what it did to facts at once (an undo's slots left empty: ``taking_out``)."""
        from memctl.store.facts import end_if_left_empty

        assert not (touched.slots or touched.values), "a change to resolve whole is not owed"
        if not self._started:
            # An earlier operation of this connection that failed may have left changes, and
            # one of any process the slots it owed: a server that runs on is not reopened.
            forget_changes(db)
            derive_left_over(db, lambda: at)
            self._started = True
        if self._taking_out:
            end_if_left_empty(db, list(touched.changed), at, on_ended)
        kept = owe(db, self.operation_id, touched.changed, at)
        self.instants += kept
        if kept and self.since is None:
            self.since = time.monotonic()

    def derive_if_due(self, db: Database, clock: Clock, on_derived: Callable[[SlotChanges], object]) -> None:
        """Between batches: derive the facts that are out of date, once enough changes to
        them are kept or the first has waited long enough (DERIVE_EVERY_...). The slots that
        had no fact wait for the end: deriving them now would make every later change to
        them one to keep and resolve over stretches, instead of resolving them once, whole."""
        if self.since is not None and (self.instants >= DERIVE_EVERY_INSTANTS
                                       or time.monotonic() - self.since >= DERIVE_EVERY_SECONDS):
            self.derive(db, clock, on_derived, new=False)

    def derive(self, db: Database, clock: Clock, on_derived: Callable[[SlotChanges], object], *,
               new: bool = True) -> None:
        """Derive every fact owed (without ``new``, only those of slots that had facts), in
        write transactions of about ``DERIVE_SECONDS`` each (or, ``tentative``, in the
        caller's, in parts of that size); each reports what it did to ``on_derived``.
        Slots resolve independently, so each transaction leaves the slots it did exact. A
        writer waiting for the lock gets it between two (``store.turns``)."""
        from memctl.store.facts import recompute_slots

        slots = owed_slots(db, new=new) if self._started else []
        size, start, first = DERIVE_FIRST_INSTANTS, 0, time.monotonic()
        while start < len(slots):
            if start and not self.tentative:
                let_others_in(db, first)
            began = time.monotonic()
            end, instants = start, 0
            while end < len(slots) and (end == start or instants + slots[end][1] <= size):
                instants += slots[end][1]
                end += 1
            with nullcontext(db) if self.tentative else write_transaction(db):
                at = transaction_time(db, clock)
                released = release(db, self.operation_id, [slot for slot, _ in slots[start:end]])
                on_derived(recompute_slots(db, released.whole, at, (), released.changes, released.since))
            start = end
            size = next_batch_size(max(size, instants), time.monotonic() - began, DERIVE_SECONDS, least=100,
                                   most=DERIVE_MOST_INSTANTS)
        self.instants, self.since = 0, None
        if new and self._taking_out:  # the end: a server that runs on need not keep 334k ids
            db.execute("DELETE FROM temp.taken_out")
            self._taking_out = False

    def derive_if_it_can(self, db: Database, clock: Clock, on_derived: Callable[[SlotChanges], object]) -> None:
        """``derive``, for an operation that is failing or interrupted: what cannot be
        derived now (the failure may be the disk's) is left to the next writer, which
        derives what a no-longer-running operation owed (``derive_left_over``).

        Interrupted (Ctrl-C) with facts owed, it says so on the ``memctl`` logger (which,
        unconfigured, Python prints on stderr): after a long backfill into an empty store
        that is every fact, a minute's work at 1M assertions, and a user who sees nothing
        happen presses Ctrl-C again."""
        with suppress(Exception):  # counting them reads the file too, which may be what failed
            if isinstance(sys.exc_info()[1], KeyboardInterrupt) and self._started and (count := len(owed_slots(db))):
                import logging

                logging.getLogger("memctl").warning(
                    f"memctl: interrupted; deriving the facts of {count:,} slot(s) the stored batches changed "
                    "(Ctrl-C again leaves that to the next command that writes)")
            self.derive(db, clock, on_derived)
