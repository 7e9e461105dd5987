"""The Batch API's jobs as the store keeps them: every SQL statement of ``memctl.batch``.

A batch is recorded (``preparing``) with its requests before anything is uploaded, and
each step after (file uploaded, batch created, results taken) is written as it happens,
so that a process killed at any point leaves a row to resume from, and an episode that
is awaiting a batch is never put in a second one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memctl.store import in_chunks

if TYPE_CHECKING:
    from memctl.store import Database, Queryable

# A batch memctl still has to do something about: send it, poll it, or cancel it.
OPEN_STATES = ("preparing", "submitted", "cancelling")
# A request whose episode waits on a batch: its reply is still to come, or its correction.
AWAITING_STATES = ("sent", "correcting")
REQUEST_STATES = ("sent", "answered", "correcting", "corrected", "failed", "unanswered")


@dataclass
class Batch:
    id: str
    kind: str  # extraction | correction
    model: str
    state: str
    file_id: str | None
    remote_id: str | None
    remote_status: str | None
    requests: int
    input_tokens: int
    output_tokens: int
    error: str | None
    created_at: str
    updated_at: str
    # The episodes' requests by state ("answered": 12, ...): filled in by ``listing``.
    episodes: dict[str, int] = field(default_factory=dict)

    @property
    def open(self) -> bool:
        return self.state in OPEN_STATES

    def to_json(self) -> dict:
        from dataclasses import asdict

        return {**asdict(self), "open": self.open}


@dataclass(frozen=True)
class Row:
    """One episode's request in a batch."""

    episode_id: str
    cache_key: str
    state: str
    reply: str | None = None
    error: str | None = None


_COLUMNS = ("id, kind, model, state, file_id, remote_id, remote_status, requests, input_tokens, output_tokens, "
            "error, created_at, updated_at")


def new_batch_id() -> str:
    return f"mb_{os.urandom(6).hex()}"


def record(db: Database, batch_id: str, kind: str, model: str, at: str, rows: Iterable[Row]) -> None:
    """A batch about to be sent and its requests (one per episode), in the caller's transaction.

    A correction batch takes over requests that were ``correcting``: those become
    ``corrected``, their first replies now kept by the new rows.
    """
    rows = list(rows)
    requests = len({row.cache_key for row in rows})
    db.execute("INSERT INTO api_batches (id, kind, model, state, requests, created_at, updated_at) "
               "VALUES (?, ?, ?, 'preparing', ?, ?, ?)", [batch_id, kind, model, requests, at, at])
    db.conn.executemany("INSERT INTO api_batch_requests (batch_id, episode_id, cache_key, state, reply) "
                        "VALUES (?, ?, ?, 'sent', ?)", [(batch_id, r.episode_id, r.cache_key, r.reply) for r in rows])
    if kind == "correction":
        db.conn.executemany("UPDATE api_batch_requests SET state = 'corrected', reply = NULL "
                            "WHERE episode_id = ? AND state = 'correcting'", [(r.episode_id,) for r in rows])


def update(db: Database, batch_id: str, at: str, **columns: object) -> None:
    """Set some of a batch's columns (``state``, ``file_id``, ``remote_id``, ...)."""
    names = ", ".join(f"{name} = ?" for name in columns)
    db.execute(f"UPDATE api_batches SET {names}, updated_at = ? WHERE id = ?", [*columns.values(), at, batch_id])


def add_tokens(db: Database, batch_id: str, input_tokens: int, output_tokens: int) -> None:
    db.execute("UPDATE api_batches SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ? "
               "WHERE id = ?", [input_tokens, output_tokens, batch_id])


def get(db: Queryable, batch_id: str) -> Batch | None:
    row = db.execute(f"SELECT {_COLUMNS} FROM api_batches WHERE id = ?", [batch_id]).fetchone()
    return None if row is None else Batch(*row)


def open_batches(db: Queryable) -> list[Batch]:
    """The batches still to send, poll or cancel, oldest first."""
    marks = ", ".join("?" * len(OPEN_STATES))
    return [Batch(*row) for row in db.execute(
        f"SELECT {_COLUMNS} FROM api_batches WHERE state IN ({marks}) ORDER BY created_at, id", OPEN_STATES)]


def listing(db: Queryable, *, limit: int | None = None) -> list[Batch]:
    """Every batch, newest first, with its requests counted by state."""
    found = [Batch(*row) for row in db.execute(
        f"SELECT {_COLUMNS} FROM api_batches ORDER BY created_at DESC, id DESC"
        + (" LIMIT ?" if limit is not None else ""), [limit] if limit is not None else [])]
    by_id = {batch.id: batch for batch in found}
    for chunk, marks in in_chunks(list(by_id)):
        for batch_id, state, count in db.execute(
                f"SELECT batch_id, state, count(*) FROM api_batch_requests WHERE batch_id IN ({marks}) "
                "GROUP BY batch_id, state", chunk):
            by_id[batch_id].episodes[state] = count
    return found


def rows_of(db: Queryable, batch_id: str, *, states: tuple[str, ...] = REQUEST_STATES) -> list[Row]:
    marks = ", ".join("?" * len(states))
    return [Row(*row) for row in db.execute(
        f"SELECT episode_id, cache_key, state, reply, error FROM api_batch_requests "
        f"WHERE batch_id = ? AND state IN ({marks}) ORDER BY episode_id", [batch_id, *states])]


def set_rows(db: Database, batch_id: str, changes: Iterable[tuple[str, str, str | None, str | None]]) -> None:
    """(cache_key, state, reply, error) for every request of the batch under that key."""
    db.conn.executemany("UPDATE api_batch_requests SET state = ?, reply = ?, error = ? "
                        "WHERE batch_id = ? AND cache_key = ? AND state = 'sent'",
                        [(state, reply, error, batch_id, key) for key, state, reply, error in changes])


def awaiting(db: Queryable, episode_ids: list[str] | None = None) -> set[str]:
    """The episodes (of ``episode_ids``, or all) whose requests wait on a batch."""
    marks = ", ".join("?" * len(AWAITING_STATES))
    query = f"SELECT DISTINCT episode_id FROM api_batch_requests WHERE state IN ({marks})"
    if episode_ids is None:
        return {row[0] for row in db.execute(query, AWAITING_STATES)}
    found: set[str] = set()
    for chunk, chunk_marks in in_chunks(episode_ids):
        found.update(row[0] for row in db.execute(f"{query} AND episode_id IN ({chunk_marks})",
                                                  [*AWAITING_STATES, *chunk]))
    return found


def correcting(db: Queryable) -> list[tuple[str, Row]]:
    """(model, request) of every reply that waits to be sent back for its correction."""
    return [(row[0], Row(*row[1:])) for row in db.execute(
        "SELECT b.model, r.episode_id, r.cache_key, r.state, r.reply, r.error FROM api_batch_requests r "
        "JOIN api_batches b ON b.id = r.batch_id WHERE r.state = 'correcting' ORDER BY b.model, r.episode_id")]


def answered_pending(db: Queryable) -> list[tuple[str, str]]:
    """(model, episode id) of every answered request whose episode is still to extract."""
    return [(row[0], row[1]) for row in db.execute(
        "SELECT DISTINCT b.model, r.episode_id FROM api_batch_requests r JOIN api_batches b ON b.id = r.batch_id "
        "JOIN episodes e ON e.id = r.episode_id WHERE r.state = 'answered' AND e.status = 'active' "
        "AND e.extraction IN ('pending', 'failed') ORDER BY b.model, r.episode_id")]


def still_needed(db: Queryable, batch_id: str) -> bool:
    """Whether an active episode still waits for this batch's replies."""
    return db.execute(
        "SELECT 1 FROM api_batch_requests r JOIN episodes e ON e.id = r.episode_id WHERE r.batch_id = ? "
        "AND r.state IN ('sent', 'correcting') AND e.status = 'active' AND e.extraction IN ('pending', 'failed') "
        "LIMIT 1", [batch_id]).fetchone() is not None


def give_up(db: Database, batch_id: str, why: str) -> None:
    """The batch's requests that are still out will not be answered: their episodes stay
    pending, for ``retry --failed --batch`` to send again."""
    db.execute("UPDATE api_batch_requests SET state = 'unanswered', error = ? WHERE batch_id = ? AND state = 'sent'",
               [why, batch_id])



def contents(db: Queryable, episode_ids: list[str]) -> dict[str, tuple[str, str]]:
    """(content, reference time) of these episodes, undone or not: a reply is judged
    against the text it was asked of."""
    found: dict[str, tuple[str, str]] = {}
    for chunk, marks in in_chunks(episode_ids):
        found.update((row[0], (row[1], row[2])) for row in db.execute(
            f"SELECT id, content, reference_time FROM episodes WHERE id IN ({marks})", chunk))
    return found


def settle_correction(db: Database, episode_id: str, state: str, error: str | None) -> None:
    """A reply that waited for its correction, corrected live: ``answered`` or ``failed``."""
    db.execute("UPDATE api_batch_requests SET state = ?, reply = NULL, error = ? "
               "WHERE episode_id = ? AND state = 'correcting'", [state, error, episode_id])


def pending_of_sources(db: Queryable, sources: list[str]) -> list[str]:
    """The active episodes of these sources whose extraction is pending (as a live ingest
    extracts them; a failed one is for ``retry --failed``)."""
    found: list[str] = []
    for chunk, marks in in_chunks(sources):
        found += [row[0] for row in db.execute(
            f"SELECT id FROM episodes WHERE status = 'active' AND extraction = 'pending' "
            f"AND source IN ({marks}) ORDER BY reference_time, id", chunk)]
    return found


def anything_to_collect(db: Queryable) -> bool:
    """Whether a collect has anything to do: a batch open, a reply to correct, or an
    answered episode still to extract."""
    return bool(open_batches(db) or correcting(db) or answered_pending(db))
