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

from memctl.store import in_chunks

if TYPE_CHECKING:
    from sqlite_utils import Database


def next_text_ids(db: Database) -> int:
    """The first free index row number: new rows take the next numbers (we hold the write
    lock), so FTS5 appends them in ascending order cheaply; a smaller one makes it flush."""
    return db.execute("SELECT coalesce(max(text_id), 0) + 1 FROM episodes").fetchone()[0]


def index_texts(db: Database, rows: Iterable[tuple[int, str]]) -> None:
    """Index (text id, text) pairs, each as ``episodes`` now holds it."""
    db.conn.executemany("INSERT INTO episodes_fts (rowid, content) VALUES (?, ?)", rows)


def unindex_texts(db: Database, episode_ids: list[str]) -> None:
    """Remove the episodes' tokens: call it before their text changes or goes."""
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
    db.execute("INSERT INTO episodes_fts (episodes_fts) VALUES ('optimize')")


def hold(db: Database, episode_ids: list[str], at: str) -> None:
    """The episodes are held from ``at`` on (stored, or brought back)."""
    db.conn.executemany("INSERT INTO episode_spans (episode_id, held_from) VALUES (?, ?)",
                        [(episode_id, at) for episode_id in episode_ids])


def release(db: Database, episode_ids: list[str], at: str) -> None:
    """The episodes are no longer held from ``at`` on (undone)."""
    for chunk, marks in in_chunks(episode_ids):
        db.execute(f"UPDATE episode_spans SET held_until = ? WHERE held_until IS NULL AND episode_id IN ({marks})",
                   [at, *chunk])
