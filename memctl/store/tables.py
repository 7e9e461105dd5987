"""A store's tables as rows, out and in: what ``memctl copy`` moves between backends.

Every table that holds what memctl knows, in an order that keeps foreign keys whole,
with its stored columns (a generated one is made again where the rows land). The text
indexes are not copied as tables: the episodes' is built again from their text, and the
facts' rows (sentence, subject, predicate, object) travel as ``fact_texts``, as the
PostgreSQL backend keeps them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memctl.store import Queryable

if TYPE_CHECKING:
    from memctl.store import Database

# Parents before children.
TABLES = ("operations", "episodes", "entities", "assertions", "facts", "fact_provenance", "fact_text_hashes",
          "repairs", "retries", "revisions", "episode_spans", "llm_cache", "embeddings", "clock", "underived_slots",
          "summaries", "summary_gates", "session_summaries", "resolutions", "merges",
          "api_batches", "api_batch_requests")
FACT_TEXTS = "fact_texts"  # (fact_id, fact, subject, predicate, object): facts_fts's rows
FACT_TEXT_COLUMNS = ("fact_id", "fact", "subject", "predicate", "object")
ROWS_AT_ONCE = 5000


def columns(db: Queryable, table: str) -> list[str]:
    """The table's stored columns, in order (not a generated one: ``hidden`` 2 or 3)."""
    if table == FACT_TEXTS:
        return list(FACT_TEXT_COLUMNS)
    return [row[1] for row in db.execute(f"PRAGMA table_xinfo({table})") if row[6] == 0]


def rows(db: Queryable, table: str) -> Iterator[list[tuple]]:
    """The table's rows in chunks, in primary key order (``fact_texts``: facts_fts's)."""
    if table == FACT_TEXTS:
        query = "SELECT rowid, fact, subject, predicate, object FROM facts_fts ORDER BY rowid"
    else:
        query = f"SELECT {', '.join(columns(db, table))} FROM {table} ORDER BY {_key(db, table)}"
    cursor = db.execute(query)
    while chunk := cursor.fetchmany(ROWS_AT_ONCE):
        yield [tuple(row) for row in chunk]


def _key(db: Queryable, table: str) -> str:
    key = [row[1] for row in sorted(db.execute(f"PRAGMA table_info({table})"), key=lambda r: r[5]) if row[5]]
    return ", ".join(key) if key else "rowid"


def is_empty(db: Queryable) -> bool:
    return all(db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is None for table in TABLES)


def put(db: Database, table: str, names: list[str], chunk: list[tuple]) -> None:
    """Rows into a table of a new store, in the caller's transaction."""
    if table == FACT_TEXTS:
        db.conn.executemany("INSERT INTO facts_fts (rowid, fact, subject, predicate, object) VALUES (?, ?, ?, ?, ?)",
                            chunk)
        return
    db.conn.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", chunk)


def index_episode_texts(db: Database) -> None:
    """The episodes' text index, built from their text (an external-content index)."""
    db.execute("INSERT INTO episodes_fts (episodes_fts) VALUES ('rebuild')")
