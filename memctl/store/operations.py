"""The operation journal: every ingest, undo, retry, repair and rebuild, with its counts.

An operation's row goes in inside the transaction that makes its first change, so the
journals that refer to it (``repairs``, ``retries``, ``revisions``, ``episodes``) always
find it, and a rolled-back preview leaves no row behind.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memctl.results import Operation
from memctl.store import Queryable, on_postgres
from memctl.store.connection import Clock, transaction_time, write_transaction

if TYPE_CHECKING:
    from memctl.store import Database


def new_operation_id() -> str:
    # os.urandom, not secrets.token_hex: the same bytes without importing hmac and hashlib.
    return f"op_{os.urandom(6).hex()}"


@dataclass
class Entry:
    """An operation being written: fill in ``counts`` (and ``episode_ids``) as it goes."""

    id: str
    counts: dict[str, Any] = field(default_factory=dict)
    episode_ids: list[str] | None = None


def record(db: Database, kind: str, at: str, command: dict, status: str) -> Entry:
    """A new operation's row, in the caller's write transaction."""
    entry = Entry(new_operation_id())
    db.execute("INSERT INTO operations (id, kind, at, status, command, process) VALUES (?, ?, ?, ?, ?, ?)",
               [entry.id, kind, at, status, json.dumps(command, sort_keys=True), this_process()])
    if status == "running" and on_postgres(db):
        # Held by this connection until the operation finishes or the process is gone,
        # whatever machine it runs on: ``mark_abandoned`` asks the server, not the host.
        db.execute("SELECT pg_advisory_lock(hashtext(?))", [entry.id])
    return entry


def this_process() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def mark_abandoned(db: Database) -> list[str]:
    """Mark 'interrupted' every operation still 'running' whose process on this host is
    gone (killed, or the machine went down): nothing will finish it. When it stopped is
    not known, so ``finished_at`` stays empty. An operation of another host, or of a
    process that is still there, is left running. On PostgreSQL, whatever its host: an
    operation is running while the connection that began it holds its lock (``record``)."""
    if on_postgres(db):
        return _abandoned_on_server(db)
    host = socket.gethostname()
    abandoned = [operation_id for operation_id, process in db.execute(
        "SELECT id, process FROM operations WHERE status = 'running'").fetchall()
        if process is not None and process.rpartition(":")[0] == host and not _alive(int(process.rpartition(":")[2]))]
    if abandoned:
        db.execute(f"UPDATE operations SET status = 'interrupted' WHERE id IN ({', '.join('?' * len(abandoned))})",
                   abandoned)
    return abandoned


def _abandoned_on_server(db: Database) -> list[str]:
    abandoned = []
    for (operation_id,) in db.execute("SELECT id FROM operations WHERE status = 'running'").fetchall():
        if db.execute("SELECT pg_try_advisory_lock(hashtext(?))", [operation_id]).fetchone()[0]:
            db.execute("SELECT pg_advisory_unlock(hashtext(?))", [operation_id])
            abandoned.append(operation_id)
    for operation_id in abandoned:
        db.execute("UPDATE operations SET status = 'interrupted' WHERE id = ?", [operation_id])
    return abandoned


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # there, under another user
        return True
    return True


def save_counts(db: Database, entry: Entry) -> None:
    db.execute("UPDATE operations SET counts = ?, episode_ids = ? WHERE id = ?",
               [json.dumps(entry.counts), None if entry.episode_ids is None else json.dumps(entry.episode_ids),
                entry.id])


def finish(db: Database, operation_id: str, status: str, at: str) -> None:
    db.execute("UPDATE operations SET status = ?, finished_at = ? WHERE id = ?", [status, at, operation_id])
    if on_postgres(db):
        db.execute("SELECT pg_advisory_unlock(hashtext(?))", [operation_id])


def finish_apart(db: Database, clock: Clock, operation_id: str, status: str) -> None:
    """Mark an operation that spans many transactions (an ingest, a long undo) done or
    interrupted, in a transaction of its own."""
    with write_transaction(db):
        finish(db, operation_id, status, transaction_time(db, clock))


@contextmanager
def journaled(db: Database, kind: str, at: str, command: dict) -> Iterator[Entry]:
    """An operation made in one write transaction (undo, retry, repair, rebuild): its
    row goes in first, its counts and end when the block finishes. If the block raises,
    the caller's transaction rolls the row back with everything else."""
    entry = record(db, kind, at, command, "done")
    yield entry
    save_counts(db, entry)
    finish(db, entry.id, "done", at)


def mark_undone(db: Database, operation_id: str) -> None:
    db.execute("UPDATE operations SET status = 'undone' WHERE id = ?", [operation_id])


def kind_of(db: Database, operation_id: str) -> str | None:
    row = db.execute("SELECT kind FROM operations WHERE id = ?", [operation_id]).fetchone()
    return None if row is None else row[0]


@dataclass
class Journaled:
    """What an undo needs of an earlier operation."""

    status: str
    at: str
    command: dict[str, Any]
    episode_ids: list[str]


def journaled_row(db: Database, operation_id: str) -> Journaled:
    status, at, command, episode_ids = db.execute(
        "SELECT status, at, command, episode_ids FROM operations WHERE id = ?", [operation_id]).fetchone()
    return Journaled(status, at, json.loads(command or "{}"), json.loads(episode_ids or "[]"))


def operations(db: Queryable, *, limit: int | None = None) -> list[Operation]:
    """The journal in time order; with ``limit``, only its last ``limit`` operations."""
    rows = db.execute(
        f"""SELECT * FROM (SELECT id, kind, at, finished_at, status, command, counts FROM operations
                           ORDER BY at DESC, id DESC {'LIMIT ?' if limit is not None else ''})
            ORDER BY at, id""", [limit] if limit is not None else []).fetchall()
    return [Operation(id=r[0], kind=r[1], at=r[2], finished_at=r[3], status=r[4], command=json.loads(r[5] or "{}"),
                      counts=json.loads(r[6] or "{}")) for r in rows]
