"""An ingest of many batches derives the facts of its later batches together (ingest.Owed,
store.underived): every so often and at the end, while each batch's episodes and
assertions commit as before. Whatever happens in between, the facts come out as one
transaction would have made them: another writer that touches an owed slot resolves it
whole, and a killed or failed ingest's owed facts are derived by the next writer."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memctl import ingest, times
from memctl.memory import Memory
from memctl.model import Assertion, Episode, content_hash
from tests.conftest import FakeClock, current_facts

DAYS = [times.normalize_instant(f"2024-01-{day:02d}") for day in range(1, 29)]


def episode(position: int, subject: str, value: str) -> Episode:
    """An episode saying that ``subject`` runs on ``value`` from its day on (one value at a time)."""
    text = f"{subject} runs on {value} (episode {position})"
    day = DAYS[position % len(DAYS)]
    return Episode(source="generated", position=position, format="facts", content=text,
                   content_hash=content_hash(text), reference_time=day, reference_time_source="record",
                   assertions=[Assertion(subject=subject, predicate="runs on", object=value, fact=text, valid_at=day,
                                         valid_at_evidence="reference", extractor="facts")])


# A hot slot restated with changing values, and a cold slot per episode.
MADE = [e for n in range(12) for e in (episode(2 * n, "billing", f"db{n % 3}"), episode(2 * n + 1, f"svc{n}", "k8s"))]


def owed_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT s.name, u.predicate_key, u.operation_id FROM underived_slots u "
                            "JOIN entities s ON s.id = u.subject_id ORDER BY 1, 2").fetchall()


def values(memory: Memory, subject: str) -> list[str]:
    """The values of ``subject``'s current facts, in timeline order."""
    return [row[2] for row in sorted((row for row in current_facts(memory) if row[0] == subject), key=lambda r: r[6])]


def expected_facts(episodes: list[Episode]) -> list[tuple]:
    memory = Memory.open(":memory:", FakeClock())
    memory.ingest_episodes(episodes, batch_size=len(episodes))  # one batch: derived in its own transaction
    return current_facts(memory)


def watched(episodes: list[Episode], at: int, look: Callable[[], None]) -> Iterator[Episode]:
    """The episodes, calling ``look`` just before the one at ``at`` is handed over: every batch before it has committed."""
    for n, made in enumerate(episodes):
        if n == at:
            look()
        yield made


def assert_exact(memory: Memory) -> None:
    report = memory.rebuild()
    assert (report.facts_created, report.facts_expired) == (0, 0)


def test_later_batches_owe_their_facts_and_the_end_derives_them(tmp_path):
    path = tmp_path / "m.db"
    memory = Memory.open(path, FakeClock())
    seen = {}

    def look():
        seen["owed"] = owed_rows(path)
        seen["billing"] = values(Memory.open(path, FakeClock()), "billing")

    report = memory.ingest_episodes(watched(MADE, 8, look), batch_size=2)
    # Four batches (episodes 0-7) have committed their episodes and owe their facts.
    assert {(name, key) for name, key, _ in seen["owed"]} == {("billing", "runs_on"), ("svc0", "runs_on"),
                                                                ("svc1", "runs_on"), ("svc2", "runs_on"),
                                                                ("svc3", "runs_on")}
    assert {operation for *_, operation in seen["owed"]} == {report.operation_id}
    assert seen["billing"] == []
    assert owed_rows(path) == []
    assert current_facts(memory) == expected_facts(MADE)
    # The journal counts what the derivations did too: every version made is current or ended.
    assert report.facts_created - report.facts_expired == len(current_facts(memory)) > 0
    assert memory.operations()[0].counts["facts_created"] == report.facts_created
    assert_exact(memory)


def test_another_writer_resolves_an_owed_slot_whole_and_leaves_the_rest_owed(tmp_path):
    path = tmp_path / "m.db"
    memory = Memory.open(path, FakeClock())
    other = Memory.open(path, FakeClock("2026-01-01T00:00:30Z"))
    said = [("the cache runs on redis", DAYS[20], {"subject": "cache", "predicate": "runs on", "object": "redis"}),
            ("billing moved to db9", DAYS[5], {"subject": "billing", "predicate": "runs on", "object": "db9"})]
    seen = {}

    def look():
        owed = owed_rows(path)
        other.add_memory(said[0][0], reference_time=said[0][1], facts=[said[0][2]])
        assert owed_rows(path) == owed  # a slot nobody owes: the ingest still owes all its own
        other.add_memory(said[1][0], reference_time=said[1][1], facts=[said[1][2]])
        seen["owed"] = owed_rows(path)
        seen["billing"] = values(other, "billing")

    memory.ingest_episodes(watched(MADE, 10, look), batch_size=2)
    assert {name for name, *_ in seen["owed"]} == {"svc0", "svc1", "svc2", "svc3", "svc4"}
    # Resolved whole: the owed episodes' values are in, with the other writer's among them.
    assert seen["billing"] == ["db0", "db1", "db2", "db9", "db0", "db1"]
    assert owed_rows(path) == []
    # As if it had all been said in one go.
    fresh = Memory.open(":memory:", FakeClock())
    fresh.ingest_episodes(MADE, batch_size=len(MADE))
    for content, reference_time, fact in said:
        fresh.add_memory(content, reference_time=reference_time, facts=[fact])
    assert current_facts(memory) == current_facts(fresh)
    assert_exact(memory)


@pytest.mark.parametrize("bound", ["DERIVE_EVERY_ASSERTIONS", "DERIVE_EVERY_SECONDS"])
def test_a_long_ingest_derives_what_it_owes_on_the_way(tmp_path, monkeypatch, bound):
    monkeypatch.setattr(ingest, bound, 0)
    path = tmp_path / "m.db"
    seen = {}

    def look():
        seen["owed"] = owed_rows(path)
        seen["billing"] = values(Memory.open(path, FakeClock()), "billing")

    memory = Memory.open(path, FakeClock())
    memory.ingest_episodes(watched(MADE, 8, look), batch_size=2)
    assert seen["owed"] == []
    assert seen["billing"] == ["db0", "db1", "db2", "db0"]  # episodes 0, 2, 4, 6
    assert current_facts(memory) == expected_facts(MADE)


def test_an_interrupted_ingest_derives_what_it_owes_before_it_stops(tmp_path):
    def interrupted():
        yield from MADE[:9]
        raise KeyboardInterrupt

    memory = Memory.open(tmp_path / "m.db", FakeClock())
    with pytest.raises(KeyboardInterrupt):
        memory.ingest_episodes(interrupted(), batch_size=2)
    assert owed_rows(tmp_path / "m.db") == []
    assert current_facts(memory) == expected_facts(MADE[:8])  # four whole batches; the ninth never landed
    assert memory.operations()[0].status == "interrupted"


def test_what_a_failed_ingest_could_not_derive_the_next_writer_does(tmp_path, monkeypatch):
    def failing():
        yield from MADE[:9]
        raise OSError("disk gone")

    def cannot_derive(*_):
        raise sqlite3.OperationalError("disk I/O error")

    path = tmp_path / "m.db"
    memory = Memory.open(path, FakeClock())
    with monkeypatch.context() as patched:
        patched.setattr(ingest, "derive_owed", cannot_derive)
        with pytest.raises(OSError):
            memory.ingest_episodes(failing(), batch_size=2)
    assert len(owed_rows(path)) == 5
    assert values(memory, "billing") == []
    memory.close()

    reopened = Memory.open(path, FakeClock("2026-02-01T00:00:00Z"))
    assert reopened.stats()["assertions"] == 8  # a read opens no writer, and derives nothing
    assert len(owed_rows(path)) == 5
    # The first write opens the writer, which derives them before anything else.
    assert_exact(reopened)
    assert owed_rows(path) == []
    assert current_facts(reopened) == expected_facts(MADE[:8])
