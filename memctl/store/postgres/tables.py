"""The PostgreSQL side of ``memctl copy``: a store's tables as rows, out and in
(``memctl.store.tables`` is SQLite's, and says which tables and in what order)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from psycopg import sql

if TYPE_CHECKING:
    import psycopg

ROWS_AT_ONCE = 5000


def columns(conn: psycopg.Connection, table: str) -> list[str]:
    """The table's stored columns, in order (not a generated one)."""
    return [row[0] for row in conn.execute(
        """SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s
           AND is_generated = 'NEVER' ORDER BY ordinal_position""", [table])]


def rows(conn: psycopg.Connection, table: str) -> Iterator[list[tuple]]:
    """The table's rows in chunks, in primary key order, read through a server-side cursor."""
    key = [row[0] for row in conn.execute(
        """SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
           WHERE i.indrelid = %s::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)""",
        [table])]
    query = sql.SQL("SELECT {} FROM {} ORDER BY {}").format(
        sql.SQL(", ").join(map(sql.Identifier, columns(conn, table))), sql.Identifier(table),
        sql.SQL(", ").join(map(sql.Identifier, key)))
    with conn.transaction(), conn.cursor(name=f"copy_{table}") as cursor:
        cursor.execute(query)
        while chunk := cursor.fetchmany(ROWS_AT_ONCE):
            yield [tuple(row) for row in chunk]


def is_empty(conn: psycopg.Connection, tables: tuple[str, ...]) -> bool:
    return all(conn.execute(sql.SQL("SELECT 1 FROM {} LIMIT 1").format(sql.Identifier(table))).fetchone() is None
               for table in tables)


def put(conn: psycopg.Connection, table: str, names: list[str], chunk: list[tuple]) -> None:
    """Rows into a table of a new store, through COPY."""
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(table),
                                                        sql.SQL(", ").join(map(sql.Identifier, names)))
    with conn.cursor().copy(statement) as copy:
        for row in chunk:
            copy.write_row(row)


def continue_ids(conn: psycopg.Connection, table: str) -> None:
    """The table's identity column goes on after the ids copied in, if it has one."""
    found = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' "
                         "AND table_name = %s AND is_identity = 'YES'", [table]).fetchone()
    if found is not None:
        conn.execute(sql.SQL("SELECT setval(pg_get_serial_sequence({}, {}), coalesce(max({}), 0) + 1, false) FROM {}")
                     .format(sql.Literal(table), sql.Literal(found[0]), sql.Identifier(found[0]),
                             sql.Identifier(table)))
