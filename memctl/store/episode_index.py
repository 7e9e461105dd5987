"""What was said, kept searchable: the episode text index and the spans of time memctl
held each episode.

``episodes_fts`` indexes the text of every stored episode, active or undone, so that
``recall --known-at`` can find one as it was before its undo; ``episode_texts`` says
which row holds whose text, and ``episode_spans`` when each episode was held. Every
write path that stores, revises, undoes, brings back or purges episodes calls these
functions in its own transaction.

The index keeps no copy of the text: it reads ``episodes.content`` (through the view
``episode_text_content``), so a row's tokens can only be removed while the text they
came from is still there. Whoever changes or deletes an episode's text unindexes it
first, and indexes the new text after.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memctl.store import in_chunks

if TYPE_CHECKING:
    from sqlite_utils import Database


def index_texts(db: Database, texts: Iterable[tuple[str, str]]) -> None:
    """Index (episode id, text) pairs, each text as ``episodes.content`` now holds it.

    New rows take the next numbers (we hold the write lock): FTS5 appends rows in
    ascending order cheaply, and flushes its pending index whenever a smaller one comes.
    """
    texts = list(texts)
    first = db.execute("SELECT coalesce(max(text_id), 0) + 1 FROM episode_texts").fetchone()[0]
    db.conn.executemany("INSERT INTO episode_texts (text_id, episode_id) VALUES (?, ?)",
                        [(first + n, episode_id) for n, (episode_id, _) in enumerate(texts)])
    db.conn.executemany("INSERT INTO episodes_fts (rowid, content) VALUES (?, ?)",
                        [(first + n, text) for n, (_, text) in enumerate(texts)])


def unindex_texts(db: Database, episode_ids: list[str]) -> None:
    """Remove the episodes' tokens: call it before their text changes or goes."""
    for chunk, marks in in_chunks(episode_ids):
        rows = db.execute(f"""SELECT c.text_id, c.content FROM episode_text_content c
                              JOIN episode_texts x ON x.text_id = c.text_id
                              WHERE x.episode_id IN ({marks})""", chunk).fetchall()
        db.conn.executemany("INSERT INTO episodes_fts (episodes_fts, rowid, content) VALUES ('delete', ?, ?)", rows)
        db.conn.executemany("DELETE FROM episode_texts WHERE text_id = ?", [(row[0],) for row in rows])


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
