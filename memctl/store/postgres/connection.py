"""A PostgreSQL database as the store's code sees a SQLite one.

The store's SQL is written once, in what both engines run (docs/architecture.md §8). A
``PostgresDatabase`` takes it as a sqlite-utils ``Database`` would: ``execute`` and
``executemany`` with ``?`` placeholders, ``conn`` for the connection itself, and explicit
``BEGIN``/``COMMIT`` around writes (autocommit otherwise, as SQLite's
``isolation_level=None``). What differs only in spelling is respelled here, once per
statement (``translate``); what differs in meaning (text search, JSON arrays, pragmas) is
chosen by the store through ``memctl.store.dialect``.

Values come back as SQLite gives them: a comparison as 0 or 1, a ``sum`` or ``avg`` as a
Python number, never a ``Decimal``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.adapt import Loader

from memctl.errors import BadInput, StoreUnavailable

if TYPE_CHECKING:
    from memctl.store import Database
    from memctl.store.connection import Clock

# Held by every write transaction until it ends (pg_advisory_xact_lock): writes take
# turns, as SQLite's one write lock has them do, so transaction times are handed out and
# committed in one order (docs/postgres.md, "Concurrency"). Readers never take it.
WRITE_LOCK = 0x6D656D77  # "memw"
_URL = re.compile(r"(?i)^postgres(?:ql)?://")


def shown(url: str) -> str:
    """The URL without a password, to name the store in messages."""
    url = re.sub(r"(//[^/@:]*):[^/@]*@", r"\1@", _URL.sub("postgresql://", url, count=1))
    return re.sub(r"([?&])password=[^&]*&?", r"\1", url).rstrip("?&")


class _Number(Loader):
    """numeric as int when whole, else float: what SQLite's sum() and avg() give."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        return int(text) if text.lstrip("-").isdigit() else float(text)


class _Truth(Loader):
    """boolean as 1 or 0, as SQLite gives a comparison."""

    def load(self, data: Any) -> int:
        return int(bytes(data) == b"t")


class PostgresDatabase:
    """One psycopg connection, in autocommit unless a ``BEGIN`` was executed (module docstring)."""

    dialect = "postgresql"

    def __init__(self, connection: psycopg.Connection, url: str):
        self.pg = connection
        self.url = url

    @property
    def conn(self) -> PostgresDatabase:
        return self

    def execute(self, sql: str, parameters: Sequence | dict | None = None, /) -> Any:
        cursor = self.pg.cursor()
        cursor.execute(translate(sql), _values(parameters))
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence], /) -> psycopg.Cursor:
        cursor = self.pg.cursor()
        listed = [_values(row) for row in rows]
        if listed:
            cursor.executemany(translate(sql), listed)
        return cursor

    def close(self) -> None:
        self.pg.close()


def _values(parameters: Sequence | dict | None) -> list | dict:
    # Always given, so that psycopg reads every statement's placeholders and its "%%".
    if isinstance(parameters, dict):
        return parameters
    return [] if parameters is None else [int(value) if isinstance(value, bool) else value for value in parameters]


_QUOTED_OR_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|--[^\n]*|(\?)|(%)|(?<![:\w]):([A-Za-z_]\w*)")
_INSERT_OR_IGNORE = re.compile(r"(?is)^\s*INSERT\s+OR\s+IGNORE\s+INTO\b(.*?)(\s+RETURNING\b.*)?$")
_TEMP = re.compile(r"\btemp\.")
# SQLite's planner hint; PostgreSQL's planner takes none.
_INDEXED_BY = re.compile(r"(?i)\s+INDEXED\s+BY\s+\w+")
_INSTR = re.compile(r"(?i)\binstr\(")
_GROUP_CONCAT = re.compile(r"(?i)\bgroup_concat\(")
_WITHOUT_ROWID = re.compile(r"(?i)\)\s*WITHOUT\s+ROWID\s*$")
# An index's name takes no schema in PostgreSQL: it lives in its table's.
_TEMP_INDEX = re.compile(r"(?i)(CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?)temp\.")


# SQLite reads CROSS JOIN ... ON as an inner join in the order written; PostgreSQL takes
# no ON after CROSS JOIN (and chooses the order itself).
_CROSS_JOIN_ON = re.compile(r"(?i)\bCROSS\s+JOIN(\s+[\w.]+(?:\s+(?:AS\s+)?(?!ON\b)\w+)?\s+ON)\b")
_FROM_PAREN = re.compile(r"(?i)\bFROM\s*\(")
# What may follow a subquery in FROM that has no alias.
_NO_ALIAS = re.compile(r"(?i)\s*(?:$|\)|;|,|WHERE\b|GROUP\b|ORDER\b|LIMIT\b|UNION\b|JOIN\b|CROSS\b|LEFT\b|INNER\b"
                       r"|WINDOW\b|HAVING\b|EXCEPT\b|INTERSECT\b)")


def _closing(sql: str, start: int) -> int:
    """The index of the parenthesis that closes the one at ``start`` (quotes skipped)."""
    depth, i = 0, start
    while i < len(sql):
        char = sql[i]
        if char in "'\"":
            i = sql.index(char, i + 1)
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(sql) - 1


_ORDER_BY = re.compile(r"(?i)\bORDER\s+BY\b")
_ORDER_END = re.compile(r"(?i)(?<![\w.])(?:LIMIT|OFFSET|ROWS|RANGE|GROUPS|UNION|EXCEPT|INTERSECT|FOR|WINDOW|RETURNING"
                        r"|ON\s+CONFLICT)\b")
_NULLS = re.compile(r"(?i)\bNULLS\s+(?:FIRST|LAST)\s*$")
_DESC = re.compile(r"(?i)\bDESC\s*$")


def _order_terms(sql: str, start: int) -> tuple[list[tuple[int, int]], int]:
    """The (start, end) of each term of the ORDER BY clause that begins at ``start``, and
    where the clause ends."""
    terms, depth, term_start, i = [], 0, start, start
    while i < len(sql):
        char = sql[i]
        if char in "'\"":
            i = sql.index(char, i + 1) + 1
            continue
        if char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif depth == 0 and (char in ",);" or _ORDER_END.match(sql, i)):
            terms.append((term_start, i))
            if char != ",":
                return terms, i
            term_start = i + 1
        i += 1
    terms.append((term_start, len(sql)))
    return terms, len(sql)


_COLUMN_TERM = re.compile(r"(?i)^\s*(?:\w+\.)?(\w+)(?:\s+(?:ASC|DESC))?\s*$")


@lru_cache(maxsize=1)
def _never_null() -> frozenset[str]:
    """The columns that are NOT NULL (or a primary key) in every table that has them: an
    ORDER BY of one of them needs no NULL placement, and so walks an index of it."""
    from memctl.store.postgres.schema import MIGRATIONS

    seen: dict[str, bool] = {}
    for migration in MIGRATIONS:
        for table in re.findall(r"(?is)CREATE TABLE \w+ \((.*?)\n\s*\);", migration.sql):
            keys = {name.strip() for found in re.findall(r"(?i)PRIMARY KEY \(([^)]*)\)", table)
                    for name in found.split(",")}
            for name, rest in re.findall(r"(?m)^\s+(\w+) \w+(.*)$", table):
                if name.upper() in ("PRIMARY", "UNIQUE"):
                    continue
                held = "NOT NULL" in rest or "PRIMARY KEY" in rest or name in keys
                seen[name] = seen.get(name, True) and held
    return frozenset(name for name, held in seen.items() if held)


def _nulls_as_sqlite(sql: str) -> str:
    """Each ORDER BY term with SQLite's place for NULL: first going up, last going down
    (PostgreSQL's default is the other way round). A column that is never NULL is left
    as it is, so that its index serves the order."""
    ends: list[tuple[int, str]] = []
    for match in _ORDER_BY.finditer(sql):
        for begin, end in _order_terms(sql, match.end())[0]:
            term = sql[begin:end].rstrip()
            column = _COLUMN_TERM.match(term)
            if column is not None and column[1] in _never_null():
                continue
            if term and not _NULLS.search(term):
                ends.append((begin + len(term), " NULLS LAST" if _DESC.search(term) else " NULLS FIRST"))
    for at, nulls in sorted(ends, reverse=True):
        sql = sql[:at] + nulls + sql[at:]
    return sql


def _aliased(sql: str) -> str:
    """Every subquery in FROM with an alias: SQLite lets one go without, PostgreSQL 15 not."""
    found, n = [], 0
    for match in _FROM_PAREN.finditer(sql):
        end = _closing(sql, match.end() - 1)
        if _NO_ALIAS.match(sql, end + 1):
            found.append(end + 1)
    for at in sorted(found, reverse=True):
        n += 1
        sql = f"{sql[:at]} AS subquery_{n}{sql[at:]}"
    return sql


# Spellings that differ and nothing else: (pattern, PostgreSQL's spelling).
_RESPELLED = (
    (_INDEXED_BY, ""),  # SQLite's planner hint
    (_GROUP_CONCAT, "string_agg("),  # with a separator, as memctl's SQL always gives one
    (_INSTR, "strpos("),
    (_WITHOUT_ROWID, ")"),  # an ordinary table with the same primary key
    (_TEMP_INDEX, r"\1"),  # an index's name takes no schema: it lives in its table's
    (_TEMP, "pg_temp."),
    (_CROSS_JOIN_ON, r"JOIN\1"),
)


@lru_cache(maxsize=2048)
def translate(sql: str) -> str:
    """SQLite's spelling of a statement in PostgreSQL's (``_RESPELLED``, and): ``?``
    placeholders as ``%s`` and ``:name`` as ``%(name)s`` (a literal ``%`` doubled),
    ``INSERT OR IGNORE`` as ``ON CONFLICT DO NOTHING``, NULL placed where SQLite sorts
    it, and an alias for each subquery in FROM that has none."""
    if (ignored := _INSERT_OR_IGNORE.match(sql)) is not None:
        sql = f"INSERT INTO{ignored[1]} ON CONFLICT DO NOTHING{ignored[2] or ''}"
    for pattern, spelling in _RESPELLED:
        sql = pattern.sub(spelling, sql)
    sql = _aliased(_nulls_as_sqlite(sql))

    def respelled(match: re.Match) -> str:
        if match[3]:
            return f"%({match[3]})s"
        return "%s" if match[1] else "%%" if match[2] else match[0].replace("%", "%%")

    return _QUOTED_OR_PLACEHOLDER.sub(respelled, sql)


def connect(url: str) -> PostgresDatabase:
    """A connection to the server ``url`` names; BadInput when it cannot be had."""
    try:
        connection = psycopg.connect(url, autocommit=True)
    except psycopg.Error as error:
        raise BadInput(f"cannot connect to {shown(url)}: {' '.join(str(error).split())}") from None
    # No JIT: memctl's statements are short, and the planner, which knows nothing of the
    # temporary tables' sizes, would compile many of them for 200 ms each.
    connection.execute("SET jit = off")
    connection.adapters.register_loader("numeric", _Number)
    connection.adapters.register_loader("bool", _Truth)
    return PostgresDatabase(connection, url)


def open_database(url: str, clock: Clock) -> PostgresDatabase:
    """Connect, migrate, and do what the first writer after a killed operation does
    (as ``memctl.store.connection.open_database`` for a file)."""
    from memctl import times
    from memctl.store import operations, underived
    from memctl.store.connection import transaction_time, write_transaction
    from memctl.store.postgres import schema

    db = connect(url)
    schema.apply(db.pg, times.to_storage(clock()))
    with write_transaction(db):
        operations.mark_abandoned(db)
        underived.derive_left_over(db, lambda: transaction_time(db, clock))
    return db


def begin(db: Database) -> None:
    """A write transaction, once this process has the write lock. A lock is waited for
    as long as SQLite's busy timeout, not without end: a process stopped in the middle of
    a write transaction would hold every writer up (``explain`` words the error)."""
    from memctl.store import connection

    db.execute("BEGIN")
    db.execute(f"SET LOCAL lock_timeout = {int(connection.BUSY_TIMEOUT_MS)}")
    db.execute("SELECT pg_advisory_xact_lock(?)", [WRITE_LOCK])


def explain(error: psycopg.Error, url: str) -> StoreUnavailable | BadInput | None:
    """What the server's error means for a user (as ``store.connection.explain`` for SQLite)."""
    if isinstance(error, psycopg.errors.LockNotAvailable):
        from memctl.store.connection import BUSY_TIMEOUT_MS

        return StoreUnavailable(f"{shown(url)} stayed locked by another process for over "
                                f"{max(BUSY_TIMEOUT_MS // 1000, 1)} s; nothing this command had not committed was "
                                "written: run it again")
    if isinstance(error, psycopg.OperationalError):
        return StoreUnavailable(f"{shown(url)}: {' '.join(str(error).split()) or 'the connection was lost'}; "
                                "nothing this command had not committed was written: run it again")
    if isinstance(error, psycopg.errors.InsufficientPrivilege | psycopg.errors.ReadOnlySqlTransaction):
        return BadInput(f"{shown(url)}: {' '.join(str(error).split())}: memctl cannot change it")
    return None


def holds_memory(db: PostgresDatabase) -> bool:
    """Whether the database holds a memory: a command that only reads must not make one."""
    return bool(db.execute("SELECT to_regclass('memctl_migrations') IS NOT NULL").fetchone()[0])


def schema_is_current(db: PostgresDatabase) -> bool:
    """Whether every migration is applied (by this memctl or a newer one)."""
    from memctl.store.postgres.schema import MIGRATIONS

    if not holds_memory(db):
        return False
    return db.execute("SELECT count(*) FROM memctl_migrations").fetchone()[0] >= len(MIGRATIONS)


def data_version(db: Database) -> str:
    """Changes whenever a transaction of any connection commits (or begins to write): the
    server's snapshot, with the transactions in progress in it (as SQLite's data_version
    for a file)."""
    return db.execute("SELECT pg_current_snapshot()::text").fetchone()[0]


def vacuum(db: Database) -> bool:
    """After a purge: VACUUM every table of the store (the purge deleted from most of
    them: episodes, statements, fact versions, text rows, replies, vectors, names), so
    that their dead row versions are reclaimed (not zeroed: docs/postgres.md says what
    stays). Outside any transaction, as VACUUM must be. True when it ran."""
    from memctl.store.tables import FACT_TEXTS, TABLES

    for table in (*TABLES, FACT_TEXTS):
        db.execute(f"VACUUM {table}")
    return True
