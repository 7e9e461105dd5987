"""LLM replies kept in the database, so re-runs and retries of unchanged input cost no call."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memctl.store import Database



class ResponseCache:
    """``get``/``put`` by key, over the ``llm_cache`` table; values are opaque text."""

    def __init__(self, db: Database, now: Callable[[], str]):
        self.db = db
        self.now = now

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT response FROM llm_cache WHERE key = ?", [key]).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, text: str, episode_id: str) -> None:
        # Its own small write, outside the batch transaction: a reply paid for survives a crash.
        self.db.execute(
            "INSERT INTO llm_cache (key, response, created_at, episode_id) VALUES (?, ?, ?, ?) ON CONFLICT (key) "
            "DO UPDATE SET response = excluded.response, created_at = excluded.created_at, episode_id = excluded.episode_id",
            [key, text, self.now(), episode_id],
        )


def refile(db: Database, old_episode_id: str, new_episode_id: str) -> None:
    """The replies cached for an episode filed under the id it is stored with after all,
    so that a purge of it erases them too."""
    db.execute("UPDATE llm_cache SET episode_id = ? WHERE episode_id = ?", [new_episode_id, old_episode_id])
