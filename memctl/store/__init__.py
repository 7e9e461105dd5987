"""The SQLite store: schema, connections, and the write paths for episodes and facts."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
Slot = tuple[int, str]  # (subject_id, predicate_key): a timeline of one subject's values of one predicate


class Database(Protocol):
    """The writer's connection, as the store uses it: a sqlite-utils ``Database`` on a file,
    or a ``memctl.store.postgres.connection.PostgresDatabase``. Statements go through
    ``execute`` (and ``conn.executemany``) in SQLite's spelling; ``dialect`` tells the
    engines apart where they differ in meaning (docs/architecture.md §8)."""

    @property
    def conn(self) -> Any: ...

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...


class Queryable(Protocol):
    """What a read needs of a connection: a plain ``sqlite3.Connection`` (the readers, which
    spare a command that only reads the import of sqlite-utils) or a sqlite-utils
    ``Database`` (the writer)."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

# A batch of whole episodes is one transaction; the facts its assertions make are derived
# later, for many batches at once (store.underived). An ingest's first batch holds 2,000
# episodes, and the next ones as many as take about BATCH_WRITE_SECONDS to store, up to
# 8,000: each commit writes every index page its batch touched, so fewer, larger batches
# write fewer pages (a 100k ingest commits 6 times instead of 17: 3% faster, and 5% for
# 100k more into a store of 1M), while the lock is still held about a second and a
# batch's rows and objects stay near 50 MB. The age bound keeps a slow source (an LLM)
# committing every few seconds, so a crash loses little.
BATCH_EPISODES = 2000
BATCH_MOST_EPISODES = 8000
BATCH_WRITE_SECONDS = 1.0
BATCH_SECONDS = 2.0


def next_batch_size(size: int, took: float, seconds: float, *, least: int, most: int) -> int:
    """The size of a batch that should take ``seconds``, after one of ``size`` took ``took``:
    in proportion, but growing at most twofold (a batch that went fast may have been
    lucky), and within ``least`` and ``most``."""
    return max(least, min(most, 2 * size, int(size * seconds / max(took, 1e-3))))


def in_chunks(values: Sequence, size: int = 500) -> Iterator[tuple[list, str]]:
    """Slices of ``values`` with matching ``?, ?`` placeholders for an ``IN (...)``.

    SQLite caps the number of bound variables per statement, so id lists of any length
    (a whole file's episodes, every entity in a rebuild) go in slices.
    """
    values = list(values)
    for start in range(0, len(values), size):
        chunk = values[start : start + size]
        yield chunk, ", ".join("?" * len(chunk))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Bulk work builds hundreds of thousands of tuples (a repair loads a million
    assertions); the cyclic garbage collector would walk the growing heap again and
    again meanwhile (2 of 5 seconds of a recomputation), and rows of strings and
    numbers form no cycles. Reference counting still frees everything as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # What was made meanwhile and is still alive is taken as old, without a walk:
            # the collector's first run would otherwise go through all of it (the rows a
            # transaction left in its locals) after every transaction of a long ingest,
            # half a second of a 100k ingest. Not where the process keeps objects frozen
            # itself (before a fork): unfreezing would let those go too.
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def batches(items: Iterable[T], size: int | Callable[[], int], seconds: float = BATCH_SECONDS) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (asked again for each list, if a callable), or of
    what came in ``seconds``."""
    batch: list[T] = []
    started = time.monotonic()
    limit = size if isinstance(size, int) else 0
    for item in items:
        if not batch:
            started = time.monotonic()
            limit = size if isinstance(size, int) else size()
        batch.append(item)
        if len(batch) >= limit or time.monotonic() - started >= seconds:
            yield batch
            batch = []
    if batch:
        yield batch


def dialect(db: object) -> str:
    """Which engine's SQL a connection speaks: "sqlite" (a sqlite-utils ``Database`` or a
    plain ``sqlite3`` connection) or "postgresql" (``memctl.store.postgres.connection``)."""
    return getattr(db, "dialect", "sqlite")


def on_postgres(db: object) -> bool:
    return dialect(db) == "postgresql"


# Where the engines differ in meaning, not in spelling (memctl.store.postgres.connection respells
# the rest), the store asks for the fragment: a JSON array given as one parameter, read as
# rows. One parameter rather than one per value: SQLite caps a statement's variables.

def given_values(db: object, kind: str = "text") -> str:
    """A FROM item (``value`` column) of the values of a JSON array given as one ``?``:
    ``kind`` "text" or "integer"."""
    if on_postgres(db):
        return f"(SELECT value::{'bigint' if kind == 'integer' else 'text'} AS value " \
               "FROM json_array_elements_text(?::json) AS j(value))"
    return "(SELECT value FROM json_each(?))"


def given_slots(db: object) -> str:
    """A FROM item (``s``, ``p`` columns) of the (subject id, predicate key) pairs of a JSON
    array given as one ``?``."""
    if on_postgres(db):
        return "(SELECT (value->>0)::bigint AS s, value->>1 AS p FROM json_array_elements(?::json) AS j(value))"
    return "(SELECT json_extract(value, '$[0]') AS s, json_extract(value, '$[1]') AS p FROM json_each(?))"


def json_texts(db: object, column: str) -> str:
    """A FROM item (``value`` column) of the texts of a JSON array held in ``column``."""
    if on_postgres(db):
        return f"json_array_elements_text({column}::json) AS j(value)"
    return f"json_each({column})"


def database_file(db: Database) -> Path | None:
    """The file a connection writes to; None for an in-memory database or a server's."""
    if on_postgres(db):
        return None
    name = db.conn.execute("PRAGMA database_list").fetchone()[2]
    return Path(name) if name else None
