"""The two text indexes as recall asks them, one small protocol with an implementation per
engine: SQLite's FTS5 tables here, PostgreSQL's ``tsvector`` columns in
``memctl.store.postgres.text_search``. ``memctl.store.search`` ranks and windows through it.

A question's words reach an index as an FTS5 expression (``memctl.recall.query``: quoted
terms and phrases joined by OR and AND); ``query`` turns one into the parameter the
index's SQL takes. Index names are SQLite's: ``facts_fts`` (a row per fact version, by
the fact's id) and ``episodes_fts`` (a row per episode text, by its ``text_id``).
"""

from __future__ import annotations

from typing import Protocol

from memctl.store import on_postgres


class TextSearch(Protocol):
    def query(self, match: str) -> str:
        """The parameter that the SQL below takes for the FTS5 expression ``match``."""
        ...

    def ranked(self, index: str) -> str:
        """SQL of (rowid, rank) of the rows matching ``?`` (a query), lower rank better,
        best first, up to ``?`` rows."""
        ...

    def matching(self, index: str) -> str:
        """SQL of the rowid of each row matching ``?`` (a query)."""
        ...

    def count(self, index: str) -> str:
        """SQL of how many rows match ``?`` (a query)."""
        ...

    def highlighted(self, start: str, end: str, match: str, episode_ids: list[str]) -> tuple[str, list]:
        """SQL and parameters of (episode id, its text with each word that ``match`` (an
        FTS5 expression) found between ``start`` and ``end``) of those of the episodes it
        matches."""
        ...


class Fts5:
    """SQLite's FTS5 (``bm25``: lower is better)."""

    def query(self, match: str) -> str:
        return match

    def ranked(self, index: str) -> str:
        return f"SELECT rowid, bm25({index}) AS rank FROM {index} WHERE {index} MATCH ? ORDER BY rank LIMIT ?"

    def matching(self, index: str) -> str:
        return f"SELECT rowid FROM {index} WHERE {index} MATCH ?"

    def count(self, index: str) -> str:
        return f"SELECT count(*) FROM {index} WHERE {index} MATCH ?"

    def highlighted(self, start: str, end: str, match: str, episode_ids: list[str]) -> tuple[str, list]:
        return (f"""SELECT e.id, highlight(episodes_fts, 0, ?, ?)
                    FROM episodes_fts JOIN episodes e ON e.text_id = episodes_fts.rowid
                    WHERE episodes_fts MATCH ? AND e.id IN ({", ".join("?" * len(episode_ids))})""",
                [start, end, match, *episode_ids])


FTS5 = Fts5()


def of(db: object) -> TextSearch:
    """The text search of the engine ``db`` speaks to."""
    if on_postgres(db):
        from memctl.store.postgres.text_search import TSVECTOR

        return TSVECTOR
    return FTS5
