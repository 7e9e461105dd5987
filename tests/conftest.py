from __future__ import annotations

import json
import os
import sqlite3
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memctl.entry import main
from memctl.memory import Memory

# Real session logs live beside the repository (../shared/realdata), never inside it.
# CI has them: there (CI set, as .ci/run does) a test that needs them and cannot find
# them fails, saying so; elsewhere it is skipped.
REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"
needs_realdata = (pytest.mark.usefixtures("realdata") if REALDATA.is_dir() or os.environ.get("CI")
                  else pytest.mark.skip(reason="../shared/realdata is not beside this checkout"))


@pytest.fixture
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.fail(f"{REALDATA} is missing: CI runs the real-log tests against ../shared/realdata beside the checkout")
    return REALDATA


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


# The store a test's memory is kept in: each test that takes one runs on both backends
# (issue 33), a SQLite file and a new PostgreSQL database. MEMCTL_TEST_BACKENDS=sqlite
# narrows a local run to one; CI runs both. A test of what only a file has (its bytes,
# its -wal, a read-only mount) is marked ``sqlite_only`` and runs on SQLite alone.
BACKENDS = tuple(os.environ.get("MEMCTL_TEST_BACKENDS", "sqlite,postgresql").split(","))


def pytest_configure(config):
    config.addinivalue_line("markers", "sqlite_only: a test of what only a SQLite file has; not run on PostgreSQL")


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_server = callspec is not None and callspec.params.get("backend") == "postgresql"
        (dropped if on_server and item.get_closest_marker("sqlite_only") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def db_path(backend, tmp_path: Path, request):
    """Where this test's memory is: a file's path, or a new PostgreSQL database's URL."""
    if backend == "sqlite":
        return tmp_path / "memory.db"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def raw_cli(monkeypatch, capsys):
    """Run the real CLI entry point in-process with exactly these arguments."""

    def run(*args) -> Run:
        monkeypatch.setattr(sys, "argv", ["memctl", *map(str, args)])
        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code or 0
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture
def cli(raw_cli, db_path):
    """Run the real CLI entry point in-process on this test's database: argv in, exit
    code and output out."""

    def run(*args, db: Path | None = None) -> Run:
        return raw_cli("--db", db or db_path, *args)

    return run


@contextmanager
def open_store(where):
    """A connection to look into the store a test wrote, whichever backend it is on (a
    file's path, or a PostgreSQL URL): ``execute`` takes SQLite's spelling on both, and
    rows are tuples (``dict_rows`` gives them by name)."""
    if isinstance(where, str) and where.startswith("postgresql://"):
        from memctl.store.postgres.connection import connect

        conn = connect(where)
    else:
        conn = sqlite3.connect(where, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def where_of(db_path) -> str:
    """The store as memctl names it: a file's whole path, a URL without its password."""
    if isinstance(db_path, str):
        from memctl.store.postgres.connection import shown

        return shown(db_path)
    return str(db_path.resolve())


def made_nothing(db_path) -> bool:
    """Nothing was written to the store: no file, or (a server's database, made with the
    schema in place) no operation journaled."""
    if isinstance(db_path, str):
        with open_store(db_path) as conn:
            return conn.execute("SELECT count(*) FROM operations").fetchone()[0] == 0
    return not db_path.exists()


def stored_text(db_path) -> str:
    """Every row of every table of the store as text: what a user could read back out of it
    (a file's dump after its log is checkpointed; a server's tables)."""
    from memctl.store.tables import FACT_TEXTS, TABLES

    with open_store(db_path) as conn:
        if isinstance(db_path, str):
            return "\n".join(repr(row) for table in (*TABLES, FACT_TEXTS)
                             for row in conn.execute(f"SELECT * FROM {table}"))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return "\n".join(conn.iterdump())


def dict_rows(conn, sql: str, parameters=()) -> list[dict]:
    cursor = conn.execute(sql, parameters)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


class FakeClock:
    """A transaction clock that moves only when told to."""

    def __init__(self, start: str = "2026-01-01T00:00:00Z"):
        self.now = datetime.fromisoformat(start.replace("Z", "+00:00"))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def memory(backend, clock, request) -> Memory:
    mem = Memory.open(":memory:" if backend == "sqlite" else request.getfixturevalue("postgres_url"), clock)
    yield mem
    mem.close()


def current_facts(memory: Memory) -> list[tuple]:
    """Every current fact, with names as shown and its supporting episodes: the state to compare."""
    rows = memory.db.execute(
        """
        SELECT s.name, f.predicate_key, o.name, f.predicate, f.fact, f.cardinality, f.valid_at, f.invalid_at,
               f.end_reason,
               (SELECT group_concat(episode_id, ' ') FROM (
                    SELECT DISTINCT p.episode_id FROM fact_provenance p JOIN assertions a ON a.id = p.assertion_id
                    WHERE p.fact_id = f.id AND a.expired_at IS NULL ORDER BY p.episode_id))
        FROM facts f JOIN entities s ON s.id = f.subject_id JOIN entities o ON o.id = f.object_id
        WHERE f.expired_at IS NULL
        """
    ).fetchall()
    return sorted(rows, key=lambda r: tuple("" if v is None else str(v) for v in r))


def utc(text: str) -> str:
    """Storage form of an ISO instant, for readable expectations."""
    from memctl.times import normalize_instant

    return normalize_instant(text)


__all__ = ["REALDATA", "needs_realdata", "Run", "write_jsonl", "FakeClock", "current_facts", "utc", "timezone",
           "open_store", "dict_rows", "where_of", "made_nothing", "stored_text", "BACKENDS"]


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for the session (tests/postgres_server.py): skipped outside CI
    when none can be had, saying why; in CI, a failure."""
    from tests.postgres_server import NoServer, start

    try:
        server = start()
    except NoServer as why:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the PostgreSQL tests and no server could be started: {why}")
        pytest.skip(f"no PostgreSQL server: {why}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_template(postgres_server):
    """A database with memctl's schema, which each test's database is made from (a copy of
    a template is much faster than migrating each anew)."""
    import psycopg

    from memctl.store.postgres import schema

    name = "memctl_template"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"'.encode())
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    with psycopg.connect(postgres_server.database_url(name), autocommit=True) as conn:
        schema.apply(conn, "2000-01-01T00:00:00.000000Z")
    return name


@pytest.fixture
def postgres_url(postgres_server, postgres_template):
    """The URL of a new database holding memctl's (empty) schema, dropped after the test."""
    name, url = postgres_server.new_database(template=postgres_template)
    yield url
    postgres_server.drop_database(name)


@pytest.fixture
def postgres(postgres_server):
    """A connection to a new, empty database on the session's server, dropped after."""
    psycopg = pytest.importorskip("psycopg") if not os.environ.get("CI") else __import__("psycopg")

    name, url = postgres_server.new_database()
    conn = psycopg.connect(url, autocommit=True)
    yield conn
    conn.close()
    postgres_server.drop_database(name)
