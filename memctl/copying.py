"""``memctl copy SOURCE TARGET``: a whole store, from SQLite to PostgreSQL or back (or
to another file), into a new, empty one: episodes, assertions, facts and both their time
axes, entities and their resolutions and merges, the journal, the reply cache, vectors,
summaries. Row ids are kept, so the journal's references stay true; the text indexes are
built again where the rows land (``memctl.store.tables``).

The target is written in one transaction: a copy that fails leaves it empty, never half a
store. A round trip loses nothing (``tests/test_copy.py`` compares every table).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Protocol

from memctl.errors import BadInput, MissingExtra
from memctl.reports import Copied
from memctl.store import tables


class End(Protocol):
    """One side of a copy: a store's tables as rows, out or in."""

    name: str

    def columns(self, table: str) -> list[str]: ...
    def rows(self, table: str) -> Iterator[list[tuple]]: ...
    def is_empty(self) -> bool: ...
    def put(self, table: str, names: list[str], chunk: list[tuple]) -> None: ...
    def writing(self) -> Any: ...  # a context manager: the one transaction a copy writes in
    def close(self) -> None: ...


class SQLiteEnd:
    def __init__(self, path: Path, *, target: bool):
        from memctl.store.connection import Connections, open_database

        self.name = str(path)
        self._open = ExitStack()
        if target:
            self.db: Any = open_database(path)  # made and migrated
            self._open.callback(self.db.conn.close)
        else:  # read as any reading command reads it: also from a read-only mount
            connections = Connections(path)
            self._open.callback(connections.close)
            self.db = self._open.enter_context(connections.reading())

    def columns(self, table: str) -> list[str]:
        return tables.columns(self.db, table)

    def rows(self, table: str) -> Iterator[list[tuple]]:
        return tables.rows(self.db, table)

    def is_empty(self) -> bool:
        return tables.is_empty(self.db)

    def put(self, table: str, names: list[str], chunk: list[tuple]) -> None:
        tables.put(self.db, table, names, chunk)

    @contextmanager
    def writing(self) -> Iterator[None]:
        from memctl.store.connection import write_transaction

        with write_transaction(self.db):
            yield
            tables.index_episode_texts(self.db)

    def close(self) -> None:
        self._open.close()


class PostgresEnd:
    def __init__(self, url: str, clock_now: str):
        try:
            import psycopg
        except ModuleNotFoundError:
            raise MissingExtra("a PostgreSQL store", "postgres") from None
        from memctl.store.postgres import schema
        from memctl.store.postgres import tables as pg

        self.pg = pg
        from memctl.store.postgres.connection import shown

        self.name = shown(url)
        try:
            self.conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as error:
            raise BadInput(f"cannot connect to {self.name}: {' '.join(str(error).split())}") from None
        schema.apply(self.conn, clock_now)

    def columns(self, table: str) -> list[str]:
        return self.pg.columns(self.conn, table)

    def rows(self, table: str) -> Iterator[list[tuple]]:
        return self.pg.rows(self.conn, table)

    def is_empty(self) -> bool:
        return self.pg.is_empty(self.conn, tables.TABLES)

    def put(self, table: str, names: list[str], chunk: list[tuple]) -> None:
        self.pg.put(self.conn, table, names, chunk)

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self.conn.transaction():
            yield
            for table in tables.TABLES:
                self.pg.continue_ids(self.conn, table)

    def close(self) -> None:
        self.conn.close()


def end_of(where: str, now: str, *, target: bool) -> End:
    """The store ``where`` names: a PostgreSQL URL, else a file's path."""
    from memctl.store.connection import check_file, is_server_url

    if is_server_url(where):
        return PostgresEnd(where, now)
    path = Path(where).expanduser()
    if not target and not path.is_file():
        raise BadInput(f"no memory at {path} to copy")
    check_file(path)
    return SQLiteEnd(path, target=target)


def copy(source: str, target: str, now: str) -> Copied:
    """Every row of the store ``source`` into the new store ``target`` (module docstring)."""
    if source == target:
        raise BadInput("the source and the target are one store")
    src = end_of(source, now, target=False)
    try:
        dst = end_of(target, now, target=True)
        try:
            if not dst.is_empty():
                raise BadInput(f"{dst.name} holds a memory already; copy into a new file or an empty database")
            counted: dict[str, int] = {}
            with dst.writing():
                for table in (*tables.TABLES, tables.FACT_TEXTS):
                    names = src.columns(table)
                    if names != dst.columns(table):
                        raise BadInput(f"{table} has other columns in {src.name} than in {dst.name}: "
                                       "are both at this memctl's schema?")
                    counted[table] = 0
                    for chunk in src.rows(table):
                        try:
                            dst.put(table, names, chunk)
                        except Exception as error:  # the database's own error: sqlite3's or psycopg's
                            if type(error).__module__.split(".")[0] not in ("sqlite3", "psycopg"):
                                raise
                            raise BadInput(f"{table} cannot be copied into {dst.name} ({' '.join(str(error).split())})"
                                           "; nothing was written") from None
                        counted[table] += len(chunk)
            return Copied(source=src.name, target=dst.name, rows=counted)
        finally:
            dst.close()
    finally:
        src.close()
