"""What one operation did to fact versions, and the plan made of it, kept in a scratch
SQLite database of its own rather than as Python objects.

An undo of a whole 334k-episode ingest expires 780k fact versions; held as tuples, and
then as the plan's changes and their JSON, they took the process to 970 MB. Here they
take the scratch database's page cache (``SCRATCH_CACHE_KIB``); the rest waits in a
temporary file that SQLite deletes when the last reference to it goes. A change that
must not reach the disk (a purge's: its facts may hold what is being erased) keeps the
scratch database in memory (``on_disk=False``), as does a small change, which never
outgrows the cache anyway.

This is not the store: nothing here is shared, journaled or kept past the plan that
reads it.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING

from memctl.store import in_chunks

if TYPE_CHECKING:
    from memctl.store.facts import SlotChanges

# What a plan reads of a fact version.
VERSION_COLUMNS = ("id", "subject_id", "predicate", "predicate_key", "object_id", "fact", "cardinality",
                   "valid_at", "invalid_at", "end_reason")
# What it says of each change (reports.FactChange's fields, in order).
CHANGE_COLUMNS = ("fact", "subject", "predicate", "object", "valid_at", "invalid_at", "compared", "invalid_at_before")
# 4 MB of pages; past it, the scratch database spills to its file. What it does is append,
# then read once in order, which a small cache serves as well as a big one.
SCRATCH_CACHE_KIB = 4096
_KEY = "subject_id, predicate_key, object_id, valid_at"  # one fact version's place: slot, value, start


class ChangedVersions:
    """The fact versions one operation expired and inserted, across its batches.

    ``absorb`` adds each batch's recomputation; ``pairs`` then reads them by place, the
    version that was there before beside the one there now; ``describe`` keeps the plan's
    changes, which ``changes`` reads back a page at a time.
    """

    def __init__(self, *, on_disk: bool) -> None:
        # "": a private temporary database that lives in its page cache until it outgrows it
        self.conn = sqlite3.connect("" if on_disk else ":memory:", isolation_level=None, check_same_thread=False)
        self.conn.execute(f"PRAGMA cache_size = -{SCRATCH_CACHE_KIB}")
        self.conn.execute("PRAGMA journal_mode = MEMORY")  # scratch: nothing to keep past a crash
        self.conn.execute("PRAGMA synchronous = OFF")
        columns = ", ".join(f"{name}{' INTEGER PRIMARY KEY' if name == 'id' else ''}" for name in VERSION_COLUMNS)
        for table in ("expired", "inserted"):
            self.conn.execute(f"CREATE TABLE {table} ({columns})")
        # One table for the four kinds: a table costs 30 µs to make, and most plans are small.
        self.conn.execute(f"CREATE TABLE described (kind TEXT, n INTEGER, {', '.join(CHANGE_COLUMNS)}, "
                          "PRIMARY KEY (kind, n)) WITHOUT ROWID")
        self._counts: Counter[str] = Counter()  # changes kept, by kind (reports.EFFECTS)

    def absorb(self, later: SlotChanges) -> ChangedVersions:
        """Add the operation's next recomputation: a version an earlier batch inserted and
        a later one expired was never there for anyone outside the operation."""
        with self._transaction():
            ours: set[int] = set()
            for chunk, marks in in_chunks([row["id"] for row in later.expired]):
                ours.update(id_ for (id_,) in self.conn.execute(f"SELECT id FROM inserted WHERE id IN ({marks})", chunk))
            for chunk, marks in in_chunks(sorted(ours)):
                self.conn.execute(f"DELETE FROM inserted WHERE id IN ({marks})", chunk)
            self._add("expired", (row for row in later.expired if row["id"] not in ours))
            self._add("inserted", later.inserted)
        return self

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction for a batch of writes: a statement alone is one of its own, and
        writing each change in its own made a plan of 77k changes take 3 s to keep."""
        self.conn.execute("BEGIN")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def _add(self, table: str, rows) -> None:
        marks = ", ".join("?" * len(VERSION_COLUMNS))
        # OR REPLACE: a version that comes twice is one change, its later reading kept
        self.conn.executemany(f"INSERT OR REPLACE INTO {table} VALUES ({marks})",
                              ([row[name] for name in VERSION_COLUMNS] for row in rows))

    def pairs(self) -> Iterator[tuple[sqlite3.Row | None, sqlite3.Row | None]]:
        """(before, now) for each place a version was expired or inserted at, in the order of
        their places: before is None for a fact that appears, now for one that goes. Of two
        versions at one place, the later one (by id) counts, as it would in a dict."""
        cursor = self.conn.cursor()
        cursor.row_factory = sqlite3.Row
        rows = cursor.execute(f"SELECT 0 AS now, * FROM expired UNION ALL SELECT 1 AS now, * FROM inserted "
                              f"ORDER BY {_KEY}, now, id")
        for _, versions in groupby(rows, key=itemgetter("subject_id", "predicate_key", "object_id", "valid_at")):
            before = now = None
            for version in versions:
                if version["now"]:
                    now = version
                else:
                    before = version
            yield before, now

    def describe(self, kind: str, changes: list[tuple]) -> None:
        """Keep changes of one kind (``CHANGE_COLUMNS`` each) for the plan, after those kept before."""
        if not changes:
            return
        first = self._counts[kind]
        with self._transaction():
            self.conn.executemany(f"INSERT INTO described VALUES (?, ?, {', '.join('?' * len(CHANGE_COLUMNS))})",
                                  ((kind, n, *change) for n, change in enumerate(changes, first)))
        self._counts[kind] += len(changes)

    def count(self, kind: str) -> int:
        return self._counts[kind]

    def changes(self, kind: str, start: int, stop: int) -> list[tuple]:
        """The changes of ``kind`` from ``start`` to ``stop`` (0-based, ``stop`` excluded), in
        the order they were kept."""
        return self.conn.execute(f"SELECT {', '.join(CHANGE_COLUMNS)} FROM described WHERE kind = ? AND n >= ? AND n < ? "
                                 "ORDER BY n", (kind, start, stop)).fetchall()
