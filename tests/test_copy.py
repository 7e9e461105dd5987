"""``memctl copy`` (issue 33): a whole store into a new one, SQLite to PostgreSQL and back,
losing nothing: every table compared row for row after the round trip, and the copy
answers as the original does."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memctl.copying import copy
from memctl.errors import BadInput
from memctl.memory import Memory
from memctl.sources import IngestOptions
from memctl.store import tables
from tests.conftest import FakeClock

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "team.facts.jsonl"
NOW = "2026-11-28T10:00:00.000000Z"


def url_of(conn) -> str:
    info = conn.info
    return f"postgresql:///{info.dbname}?host={info.host}&user={info.user}"


def a_store(path: Path) -> Memory:
    """A store with something in every kind of table: a journal of several operations, an
    undone episode, a merge, resolutions, a summary's state, cached replies and vectors."""
    memory = Memory.open(path, FakeClock("2026-11-21T15:00:00Z"))
    memory.ingest([FIXTURE], IngestOptions())
    memory.clock.advance(hours=1)
    facts = path.parent / "more.facts.jsonl"
    facts.write_text("".join(json.dumps({"reference_time": t, "facts": [f]}) + "\n" for t, f in (
        ("2024-02-01", {"subject": "the billing service", "predicate": "owner", "object": "Sam"}),
        ("2024-03-01", {"subject": "payments-core", "predicate": "owner", "object": "Kim"}))))
    memory.ingest([facts], IngestOptions())
    memory.clock.advance(hours=1)
    memory.merge("billing", "payments-core", apply=True)
    memory.clock.advance(hours=1)
    memory.undo([memory.episodes()[0].id], apply=True)
    memory.add_memory("We moved billing to Aurora.", reference_time="2024-10-01",
                      facts=[{"subject": "billing", "predicate": "primary database", "object": "Aurora"}])
    conn = sqlite3.connect(path)  # what a model and an embedder would have left
    with conn:
        conn.execute("INSERT INTO llm_cache (key, response, created_at, episode_id) VALUES ('k', '{\"a\": 1}', ?, NULL)",
                     [NOW])
        conn.execute("INSERT INTO embeddings (text_hash, model, vector) VALUES ('h', 'm', ?)", [bytes(range(256))])
    conn.close()
    return memory


def dump(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows, and the facts' text index, as SQLite holds them."""
    conn = sqlite3.connect(path)
    found = {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall() for table in tables.TABLES}
    found["facts_fts"] = conn.execute("SELECT rowid, * FROM facts_fts ORDER BY rowid").fetchall()
    found["episodes_fts"] = conn.execute("SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH 'billing' "
                                         "ORDER BY rowid").fetchall()
    conn.close()
    return found


def test_a_round_trip_through_postgresql_loses_nothing(tmp_path, postgres):
    original = tmp_path / "original.db"
    a_store(original).close()
    there = copy(str(original), url_of(postgres), NOW)
    assert there.rows["episodes"] == 8 and there.rows["merges"] == 1 and there.rows["embeddings"] == 1
    back = copy(url_of(postgres), str(tmp_path / "back.db"), NOW)
    assert back.rows == there.rows
    before, after = dump(original), dump(tmp_path / "back.db")
    assert before == after
    # The copy answers as the original does, and goes on from where it was.
    question = "which database does billing use"
    first, second = Memory.open(original), Memory.open(tmp_path / "back.db")
    assert second.recall(question, as_of="2025-01-01").to_json() == first.recall(question, as_of="2025-01-01").to_json()
    assert [e.to_json() for e in second.entities()] == [e.to_json() for e in first.entities()]
    # On PostgreSQL, new rows take ids after those copied in.
    postgres.execute("INSERT INTO entities (name, name_key, created_at) VALUES ('new', 'new', %s)", [NOW])
    assert postgres.execute("SELECT max(id) FROM entities").fetchone()[0] == len(before["entities"]) + 1


def test_a_copy_goes_into_an_empty_store_only_and_leaves_nothing_when_it_fails(tmp_path, postgres, cli):
    original = tmp_path / "original.db"
    a_store(original).close()
    copy(str(original), url_of(postgres), NOW)
    rows = postgres.execute("SELECT count(*) FROM assertions").fetchone()[0]
    again = cli("copy", str(original), url_of(postgres))
    assert again.code == 2 and "holds a memory already" in again.err and again.err.count("\n") == 1
    assert postgres.execute("SELECT count(*) FROM assertions").fetchone()[0] == rows
    # A failure half way leaves the target as it was: empty.
    target = tmp_path / "target.db"
    broken = tmp_path / "broken.db"
    a_store(broken).close()
    with sqlite3.connect(broken) as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("UPDATE assertions SET episode_id = 'ep_gone' WHERE id = (SELECT max(id) FROM assertions)")
    with pytest.raises(BadInput, match="assertions cannot be copied into .*; nothing was written"):
        copy(str(broken), str(target), NOW)
    assert tables.is_empty(sqlite3.connect(target))


def test_a_store_that_cannot_be_written_is_copied_and_left_as_it_was(tmp_path):
    from tests.test_startup import read_only, state_of

    folder = tmp_path / "ro"
    folder.mkdir()
    a_store(folder / "m.db").close()
    before = state_of(folder)
    with read_only(folder):
        copied = copy(str(folder / "m.db"), str(tmp_path / "copy.db"), NOW)
    assert copied.rows["episodes"] == 8 and state_of(folder) == before
    assert dump(tmp_path / "copy.db") == dump(folder / "m.db")


def test_copy_refuses_what_is_no_store_in_one_line(cli, tmp_path):
    for args, words in ((("copy", tmp_path / "none.db", tmp_path / "b.db"), "no memory at"),
                        (("copy", FIXTURE, tmp_path / "b.db"), "not a SQLite database"),
                        (("copy", tmp_path / "a.db", tmp_path / "a.db"), "one store"),
                        (("copy", FIXTURE, "postgresql://nobody@127.0.0.1:1/none"), "")):
        run = cli(*args)
        assert run.code == 2 and run.err.count("\n") == 1 and words in run.err, (args, run.err)
        assert "internal error" not in run.err
