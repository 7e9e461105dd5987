from __future__ import annotations

import json
import os
import sys
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


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


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
def memory(clock) -> Memory:
    mem = Memory.open(":memory:", clock)
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


__all__ = ["REALDATA", "needs_realdata", "Run", "write_jsonl", "FakeClock", "current_facts", "utc", "timezone"]


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


@pytest.fixture
def postgres(postgres_server):
    """A connection to a new, empty database on the session's server, dropped after."""
    psycopg = pytest.importorskip("psycopg") if not os.environ.get("CI") else __import__("psycopg")
    import uuid

    name = f"memctl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    url = postgres_server.url.replace("///postgres?", f"///{name}?", 1) if "///postgres?" in postgres_server.url \
        else f"{postgres_server.url.rstrip('/')}/{name}"
    conn = psycopg.connect(url, autocommit=True)
    yield conn
    conn.close()
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())
