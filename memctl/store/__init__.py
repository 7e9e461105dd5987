"""The SQLite store: schema, connections, and the write paths for episodes and facts."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from sqlite_utils import Database

T = TypeVar("T")
Slot = tuple[int, str]  # (subject_id, predicate_key): a timeline of one subject's values of one predicate


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


def database_file(db: Database) -> Path | None:
    """The file a connection writes to; None for an in-memory database."""
    name = db.conn.execute("PRAGMA database_list").fetchone()[2]
    return Path(name) if name else None
