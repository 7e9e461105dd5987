"""What was said, kept searchable: the episode text index and the spans of time memctl
held each episode.

``episodes_fts`` holds the text of every stored episode, active or undone, so that
``recall --known-at`` can find one as it was before its undo; ``episode_spans`` says
when each was held. Every write path that stores, revises, undoes, brings back or
purges episodes calls these functions in its own transaction.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlite_utils import Database

from memctl.store import in_chunks

_SIGN = 1 << 63


def text_rowid(episode_id: str) -> int:
    """The episode id's 64 bits (``ep_`` + 16 hex digits) as SQLite's signed rowid."""
    value = int(episode_id[3:], 16)
    return value - (1 << 64) if value >= _SIGN else value


def episode_id_of(rowid: int) -> str:
    return f"ep_{rowid & 0xFFFF_FFFF_FFFF_FFFF:016x}"


def index_texts(db: Database, texts: Iterable[tuple[str, str]], *, replacing: Iterable[str] = ()) -> None:
    """Index (episode id, text) pairs; ``replacing``: the ids among them indexed before."""
    unindex_texts(db, list(replacing))
    db.conn.executemany("INSERT INTO episodes_fts (rowid, content) VALUES (?, ?)",
                        ((text_rowid(episode_id), text) for episode_id, text in texts))


def unindex_texts(db: Database, episode_ids: list[str]) -> None:
    db.conn.executemany("DELETE FROM episodes_fts WHERE rowid = ?", [(text_rowid(e),) for e in episode_ids])


def forget_texts(db: Database, episode_ids: list[str]) -> None:
    """Purge: the episodes' text and spans go, and the index is merged into one segment
    so that no earlier segment keeps their tokens (secure_delete zeroes the freed pages)."""
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
