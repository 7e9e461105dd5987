"""Writers taking turns at one database file.

SQLite lets one writer at a time hold the write lock; another that wants it waits in
SQLite's busy handler. A long operation (an ingest, an undo, a derivation of the facts
they owe) commits in many transactions, and would take the lock again at once after
each: a waiting writer, which only looks every 100 ms at most, might never see it free.
So a writer that has to wait raises its hand (a shared ``flock`` on the file
``<database>-waiting``, held until it has the lock) and tries the lock every 5 ms, and a
long operation, between two of its transactions, lets the lock go until every raised
hand is down (``let_others_in``). Nobody waits, nobody pauses: a long operation alone
pays nothing.

Where a hand cannot be raised (an in-memory database, a system without ``flock``, a
folder that cannot be written), a long operation pauses BETWEEN_BATCHES_S after each
transaction once it has run PAUSE_AFTER_S, whether anyone waits or not.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None  # type: ignore[assignment]

from memctl.store import database_file, on_postgres

if TYPE_CHECKING:
    from memctl.store import Database

# How long a long operation waits at most for raised hands to go down: a waiting writer
# tries the lock every 5 ms; a hand that stays up longer belongs to a writer waiting on a
# third one, or to a stopped process.
LET_IN_AT_MOST_S = 0.5
_LOOK_EVERY_S = 0.002
# How often a waiting writer tries the lock again.
_TRY_EVERY_S = 0.005
# Without hands: a long operation lets the lock go this long, once it has run PAUSE_AFTER_S
# (a short one keeps nobody waiting long); a waiting writer tries again every 5 ms.
BETWEEN_BATCHES_S = 0.15
PAUSE_AFTER_S = 1.5


def hand_file(db: Database) -> Path | None:
    """The file waiting writers lock; None where no hand can be raised."""
    name = database_file(db)
    return None if fcntl is None or name is None else Path(f"{name}-waiting")


@contextmanager
def hand_raised(db: Database) -> Iterator[None]:
    """While waiting for the write lock: a long operation lets it go for us."""
    path = hand_file(db)
    handle = None
    if path is not None:
        with suppress(OSError):  # a folder that cannot be written: wait unseen
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(handle, fcntl.LOCK_SH)
    try:
        yield
    finally:
        if handle is not None:
            os.close(handle)  # and with it the lock


def begin_immediate(db: Database) -> None:
    """BEGIN IMMEDIATE; if the lock is taken, with a hand raised while waiting for it, for
    as long as the connection's busy timeout, then SQLite's "database is locked".

    It waits here rather than in SQLite's busy handler, which sleeps up to 100 ms between
    two tries: a long operation that lets the lock go waits until this writer has it, so
    the sooner it looks, the less both wait.
    """
    conn = db.conn
    busy_timeout = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        if _began(conn):
            return
        with hand_raised(db):
            deadline = time.monotonic() + busy_timeout / 1000
            while not _began(conn):
                if time.monotonic() >= deadline:
                    conn.execute("BEGIN IMMEDIATE")  # once more, to raise what SQLite says
                time.sleep(_TRY_EVERY_S)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout}")


def _began(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("BEGIN IMMEDIATE")
        return True
    except sqlite3.OperationalError as error:
        if "locked" in str(error) or "busy" in str(error):
            return False
        raise


def hands_up(path: Path) -> bool:
    """Whether a writer is waiting for the lock of the database ``path`` belongs to."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return False  # no writer has ever waited here
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(handle)


def let_others_in(db: Database, began: float) -> None:
    """Between two transactions of a long operation that began at ``began``
    (time.monotonic): let a waiting writer have the lock first. On PostgreSQL nothing
    to do: the server grants its lock to waiters in the order they asked."""
    if on_postgres(db):
        return
    path = hand_file(db)
    if path is None:
        if time.monotonic() - began > PAUSE_AFTER_S:
            time.sleep(BETWEEN_BATCHES_S)
        return
    deadline = time.monotonic() + LET_IN_AT_MOST_S
    while hands_up(path) and time.monotonic() < deadline:
        time.sleep(_LOOK_EVERY_S)
