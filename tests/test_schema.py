"""The blank database's schema is pinned: a change here must come as a new migration."""

from __future__ import annotations

from pathlib import Path

from memctl.store.connection import open_database
from memctl.store.schema import migrations

PINNED = Path(__file__).parent / "blank_schema.sql"


def schema_of(db) -> str:
    rows = db.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE 'facts_fts_%' ORDER BY type DESC, name"
    ).fetchall()
    return "\n".join(row[0].strip() + ";" for row in rows) + "\n"


def test_blank_schema_is_pinned(tmp_path):
    db = open_database(tmp_path / "blank.db")
    assert schema_of(db) == PINNED.read_text(), "schema changed: add a migration and update tests/blank_schema.sql"


def test_migrations_apply_once_in_order_and_database_is_wal(tmp_path):
    path = tmp_path / "m.db"
    db = open_database(path)
    assert [m.name for m in migrations.applied(db)] == ["0001_core"]
    assert migrations.pending(db) == []
    db.conn.close()
    again = open_database(path)
    assert [m.name for m in migrations.applied(again)] == ["0001_core"]
    assert again.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert again.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
