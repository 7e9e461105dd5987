"""The PostgreSQL backend's schema (memctl/store/postgres/schema.py; issue 33): its migrations
apply to a new database once and only once, the blank schema is pinned, its tables and
columns are SQLite's, and its text indexes find what was written."""

from __future__ import annotations

import tempfile
from pathlib import Path

from memctl.store.connection import open_database
from memctl.store.postgres import schema

BLANK = Path(__file__).with_name("blank_schema_postgres.sql")
AT = "2026-11-28T10:00:00.000000Z"


def schema_of(conn) -> str:
    """The database's tables, columns, views, constraints and indexes, in a stable order."""
    lines = []
    for table, column, kind, nullable, default, generated in conn.execute(
            """SELECT table_name, column_name, data_type, is_nullable, column_default, generation_expression
               FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"""):
        lines.append(f"column {table}.{column} {kind}{'' if nullable == 'YES' else ' NOT NULL'}"
                     f"{f' DEFAULT {default}' if default else ''}{f' AS {generated}' if generated else ''}")
    for table, name, definition in conn.execute(
            """SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
               WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2"""):
        lines.append(f"constraint {table}.{name} {definition}")
    for (definition,) in conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname"):
        lines.append(f"index {definition}")
    for name, definition in conn.execute(
            "SELECT viewname, definition FROM pg_views WHERE schemaname = 'public' ORDER BY viewname"):
        lines.append(f"view {name} {' '.join(definition.split())}")
    return "\n".join(lines) + "\n"


def test_migrations_apply_once_and_the_blank_schema_is_pinned(postgres):
    assert schema.apply(postgres, AT) == [m.name for m in schema.MIGRATIONS]
    assert schema.apply(postgres, AT) == [] and schema.pending(postgres) == []
    made = schema_of(postgres)
    assert made == BLANK.read_text(), "the PostgreSQL schema changed: if on purpose, regenerate " \
        "tests/blank_schema_postgres.sql (docs/testing.md) and add a migration rather than editing a shipped one"


def test_the_tables_and_columns_are_sqlites(postgres):
    """Every table of SQLite's schema, with its columns in its order (but FTS5's, which are
    tsvector columns here, and the migrations' own table), so that a copy between the two
    loses nothing."""
    schema.apply(postgres, AT)
    sqlite = open_database(Path(tempfile.mkdtemp()) / "m.db")
    expected = {}
    for (table,) in sqlite.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%' "
                                   "AND name NOT LIKE '\\_%' ESCAPE '\\'"):
        expected[table] = [row[1] for row in sqlite.execute(f"PRAGMA table_xinfo({table})")]
    found: dict[str, list[str]] = {}
    for table, column in postgres.execute(
            """SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'
               AND table_name IN (SELECT table_name FROM information_schema.tables
                                  WHERE table_schema = 'public' AND table_type = 'BASE TABLE')
               ORDER BY table_name, ordinal_position"""):
        found.setdefault(table, []).append(column)
    found.pop("memctl_migrations")
    assert found.pop("fact_texts") == ["fact_id", "fact", "subject", "predicate", "object", "document"]
    assert found["episodes"].pop() == "content_tsv"
    assert found == expected


def test_two_processes_migrating_at_once_apply_each_migration_once(postgres_server, postgres):
    import threading

    import psycopg

    url = postgres.info.dsn
    results: list[list[str]] = []

    def migrate() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            results.append(schema.apply(conn, AT))

    threads = [threading.Thread(target=migrate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The lock is taken per migration, so the work may be shared; none is done twice, in order.
    applied = [name for names in results for name in names]
    assert sorted(applied) == [migration.name for migration in schema.MIGRATIONS]
    assert all(names == sorted(names) for names in results)


def test_the_text_indexes_find_what_was_written(postgres):
    schema.apply(postgres, AT)
    postgres.execute("""INSERT INTO episodes (id, source, position, format, content, content_hash, reference_time,
                                              reference_time_source, status, created_at)
                        VALUES ('ep_1', 's', 1, 'text', 'Billing moved its databases to Postgres.', 'h', %s,
                                'user', 'active', %s)""", [AT, AT])
    found = postgres.execute("SELECT id FROM episodes WHERE content_tsv @@ websearch_to_tsquery('english', %s)",
                             ["which database does billing use"]).fetchall()
    assert found == []  # every word must match: "which", "does" are stop words, "use" is not said
    found = postgres.execute("SELECT id FROM episodes WHERE content_tsv @@ websearch_to_tsquery('english', %s)",
                             ["billing database"]).fetchall()
    assert found == [("ep_1",)]  # stemmed: "databases" is "database"
    postgres.execute("INSERT INTO entities (name, name_key, created_at) VALUES ('billing', 'billing', %s), "
                     "('Postgres', 'postgres', %s)", [AT, AT])
    postgres.execute("""INSERT INTO facts (subject_id, predicate, predicate_key, object_id, fact, cardinality,
                                           valid_at, created_at) VALUES (1, 'primary database', 'primary_database', 2,
                                           'Billing runs on Postgres', 'one', %s, %s)""", [AT, AT])
    postgres.execute("INSERT INTO fact_texts (fact_id, fact, subject, predicate, object) "
                     "VALUES (1, 'Billing runs on Postgres', 'billing', 'primary database', 'Postgres')")
    found = postgres.execute("SELECT fact_id FROM fact_texts WHERE document @@ plainto_tsquery('english', %s)",
                             ["primary databases of billing"]).fetchall()
    assert found == [(1,)]
