"""What was said, kept searchable: the episode text index and the spans of time memctl
held each episode.

``episodes_fts`` indexes the text of every stored episode, active or undone, so that
``recall --known-at`` can find one as it was before its undo; ``episodes.text_id`` is
the row that holds an episode's text, and ``episode_spans`` says when each episode was
held. Every write path that stores, revises, undoes, brings back or purges episodes
calls these functions in its own transaction.

The index keeps no copy of the text: it reads ``episodes.content``, so a row's tokens
can only be removed while the text they came from is still there. Whoever changes or
deletes an episode's text unindexes it first, writes the text with new row numbers
(``next_text_ids``), and indexes it after.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memctl.store import in_chunks, on_postgres

if TYPE_CHECKING:
    from memctl.store import Database


def fact_texts(db: object) -> tuple[str, str]:
    """The fact text index's table and the column holding a fact's id: SQLite's FTS5
    table ``facts_fts`` by rowid; on PostgreSQL ``fact_texts``, whose ``tsvector`` column
    is generated from the same four texts."""
    from memctl.store.tables import FACT_TEXTS

    return (FACT_TEXTS, "fact_id") if on_postgres(db) else ("facts_fts", "rowid")


def index_facts(db: Database, rows: Iterable[tuple[int, str, str, str, str]]) -> None:
    """Index (fact id, sentence, subject, predicate, object) of new fact versions."""
    table, key = fact_texts(db)
    db.conn.executemany(f"INSERT INTO {table} ({key}, fact, subject, predicate, object) VALUES (?, ?, ?, ?, ?)", rows)


def optimize(db: Database) -> None:
    """Merge both text indexes into one segment each, so that no older segment keeps the
    tokens of a text that went (a purge). PostgreSQL keeps no segments: its VACUUM, after
    the purge's transaction, reclaims the old row versions (``connection.checkpoint``)."""
    if not on_postgres(db):
        db.execute("INSERT INTO episodes_fts (episodes_fts) VALUES ('optimize')")
        db.execute("INSERT INTO facts_fts (facts_fts) VALUES ('optimize')")


def next_text_ids(db: Database) -> int:
    """The first free index row number: new rows take the next numbers (we hold the write
    lock), so FTS5 appends them in ascending order cheaply; a smaller one makes it flush."""
    return db.execute("SELECT coalesce(max(text_id), 0) + 1 FROM episodes").fetchone()[0]


def index_texts(db: Database, rows: Iterable[tuple[int, str]]) -> None:
    """Index (text id, text) pairs, each as ``episodes`` now holds it. On PostgreSQL the
    index is a generated column of ``episodes``, kept by the server."""
    if on_postgres(db):
        return
    db.conn.executemany("INSERT INTO episodes_fts (rowid, content) VALUES (?, ?)", rows)


def unindex_texts(db: Database, episode_ids: list[str]) -> None:
    """Remove the episodes' tokens: call it before their text changes or goes."""
    if on_postgres(db):
        return
    for chunk, marks in in_chunks(episode_ids):
        db.execute(f"""INSERT INTO episodes_fts (episodes_fts, rowid, content)
                       SELECT 'delete', text_id, content FROM episodes
                       WHERE id IN ({marks}) AND text_id IS NOT NULL""", chunk)


def forget_texts(db: Database, episode_ids: list[str]) -> None:
    """Purge: the episodes' text and spans go, and the index is merged into one segment
    so that no earlier segment keeps their tokens (the caller zeroes freed pages)."""
    if not episode_ids:
        return
    unindex_texts(db, episode_ids)
    for chunk, marks in in_chunks(episode_ids):
        db.execute(f"DELETE FROM episode_spans WHERE episode_id IN ({marks})", chunk)


def hold(db: Database, episode_ids: list[str], at: str) -> None:
    """The episodes are held from ``at`` on (stored, or brought back)."""
    db.conn.executemany("INSERT INTO episode_spans (episode_id, held_from) VALUES (?, ?)",
                        [(episode_id, at) for episode_id in episode_ids])


def release(db: Database, episode_ids: list[str], at: str) -> None:
    """The episodes are no longer held from ``at`` on (undone)."""
    for chunk, marks in in_chunks(episode_ids):
        db.execute(f"UPDATE episode_spans SET held_until = ? WHERE held_until IS NULL AND episode_id IN ({marks})",
                   [at, *chunk])
