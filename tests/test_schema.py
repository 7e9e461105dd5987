"""The blank database's schema is pinned: a change here must come as a new migration."""

from __future__ import annotations

from pathlib import Path

from memctl.store.connection import open_database
from memctl.store.schema import migrations

PINNED = Path(__file__).parent / "blank_schema.sql"
MIGRATIONS = ["0001_core", "0002_extraction", "0003_repairs", "0004_assertion_reference_time", "0005_retries_and_cache_episodes",
              "0006_revisions", "0007_repair_near_miss_indexes", "0008_episode_search", "0009_embeddings",
              "0010_episode_text_once", "0011_operation_process", "0012_timeline_indexes", "0013_underived_slots",
              "0014_episode_sessions", "0015_summaries", "0016_views", "0017_entity_resolution", "0018_api_batches"]


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
    assert [m.name for m in migrations.applied(db)] == MIGRATIONS
    assert migrations.pending(db) == []
    db.conn.close()
    again = open_database(path)
    assert [m.name for m in migrations.applied(again)] == MIGRATIONS
    assert again.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert again.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000


def test_an_existing_database_upgrades_and_keeps_its_data(tmp_path, cli):
    """A user's file from before 0002 gains the new columns; its episodes stay, as structured."""
    import sqlite3

    from sqlite_utils import Database

    path = tmp_path / "old.db"
    old = Database(sqlite3.connect(path, isolation_level=None))
    migrations.apply(old, stop_before="0002_extraction")
    old.execute("INSERT INTO operations (id, kind, at, status) VALUES ('op_1', 'ingest', '2024-01-01T00:00:00.000000Z', 'done')")
    old.execute(
        "INSERT INTO episodes (id, source, position, format, content, content_hash, reference_time, "
        "reference_time_source, status, created_at, operation_id) VALUES ('ep_1', 's', 1, 'facts', 'c', 'h', "
        "'2024-01-01T00:00:00.000000Z', 'record', 'active', '2024-01-01T00:00:00.000000Z', 'op_1')"
    )
    old.conn.close()
    upgraded = open_database(path)
    assert [m.name for m in migrations.applied(upgraded)] == MIGRATIONS
    assert upgraded.execute("SELECT id, extraction FROM episodes").fetchall() == [("ep_1", "structured")]
    assert cli("episodes", "--json", db=path).json()[0]["id"] == "ep_1"


def test_a_database_with_the_old_episode_index_upgrades_to_one_copy_of_the_text(tmp_path, cli):
    """A file indexed by 0008 (a text copy in episodes_fts, rows in episode_texts) gets
    the index over episodes.content, with the same row numbers and an exact index."""
    import sqlite3

    from sqlite_utils import Database

    from tests.test_invariants import assert_episode_index_is_exact

    path = tmp_path / "old.db"
    old = Database(sqlite3.connect(path, isolation_level=None))
    migrations.apply(old, stop_before="0010_episode_text_once")
    old.execute("INSERT INTO operations (id, kind, at, status) VALUES ('op_1', 'ingest', '2024-01-01T00:00:00.000000Z', 'done')")
    for n, text in enumerate(["we moved billing to postgres", "the ledger runs on mysql"], 1):
        old.execute(
            "INSERT INTO episodes (id, source, position, format, content, content_hash, reference_time, "
            "reference_time_source, status, created_at, operation_id) VALUES (?, 's', ?, 'jsonl', ?, 'h', "
            "'2024-01-01T00:00:00.000000Z', 'record', 'active', '2024-01-01T00:00:00.000000Z', 'op_1')",
            [f"ep_{n}", n, text])
        old.execute("INSERT INTO episode_texts (text_id, episode_id) VALUES (?, ?)", [n + 10, f"ep_{n}"])
        old.execute("INSERT INTO episodes_fts (rowid, content) VALUES (?, ?)", [n + 10, text])
        old.execute("INSERT INTO episode_spans (episode_id, held_from) VALUES (?, '2024-01-01T00:00:00.000000Z')",
                    [f"ep_{n}"])
    old.conn.close()
    upgraded = open_database(path)
    assert upgraded.execute("SELECT id, text_id FROM episodes ORDER BY id").fetchall() == [("ep_1", 11), ("ep_2", 12)]
    assert "episode_texts" not in upgraded.table_names()
    upgraded.conn.close()
    from memctl import Memory

    memory = Memory.open(path)
    assert_episode_index_is_exact(memory)
    [hit] = memory.recall("postgres", kind="episode").results
    assert hit.episode_id == "ep_1" and "**postgres**" in hit.snippet
    memory.close()


def test_readers_know_how_many_migrations_there_are():
    from memctl.store.connection import SCHEMA_MIGRATIONS

    assert SCHEMA_MIGRATIONS == len(MIGRATIONS)
