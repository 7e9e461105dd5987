"""An ingest or undo of many batches derives the facts its batches owe together
(store.underived.Owed): every so often and at the end, while each batch's episodes and
assertions commit as before. Whatever happens in between, the facts come out as one
transaction would have made them: another writer that touches an owed slot resolves it
whole, and a killed or failed operation's owed facts are derived by the next writer."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memctl import ingest as ingest_module
from memctl import long_operation, times
from memctl import undo as undo_module
from memctl.memory import Memory
from memctl.model import Assertion, Episode, content_hash
from memctl.store import facts as stored_facts
from memctl.store import underived
from memctl.store.connection import tentative
from tests.conftest import FakeClock, current_facts, open_store

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
    with open_store(path) as conn:
        return conn.execute("SELECT s.name, u.predicate_key, u.operation_id FROM underived_slots u "
                            "JOIN entities s ON s.id = u.subject_id ORDER BY 1, 2").fetchall()


def values(memory: Memory, subject: str) -> list[str]:
    """The values of ``subject``'s current facts, in timeline order."""
    return [row[2] for row in sorted((row for row in current_facts(memory) if row[0] == subject), key=lambda r: r[6])]


def expected_facts(episodes: list[Episode]) -> list[tuple]:
    memory = Memory.open(":memory:", FakeClock())
    memory.ingest_episodes(episodes, batch_size=len(episodes))  # one batch
    return current_facts(memory)


def watched(episodes: list[Episode], at: int, look: Callable[[], None]) -> Iterator[Episode]:
    """The episodes, calling ``look`` just before the one at ``at`` is handed over: every batch before it has committed."""
    for n, made in enumerate(episodes):
        if n == at:
            look()
        yield made


def seen_between_batches(path: Path) -> tuple[dict, Callable[[], None]]:
    """What another process sees of the file when called (``watched``): the slots owed,
    and billing's values; filled into the dict returned."""
    seen: dict = {}

    def look() -> None:
        seen["owed"] = owed_rows(path)
        seen["billing"] = values(Memory.open(path, FakeClock()), "billing")

    return seen, look


def assert_exact(memory: Memory) -> None:
    report = memory.rebuild()
    assert (report.facts_created, report.facts_expired) == (0, 0)


def test_later_batches_owe_their_facts_and_the_end_derives_them(tmp_path, db_path):
    path = db_path
    memory = Memory.open(path, FakeClock())
    seen = {}

    def look():
        seen["owed"] = owed_rows(path)
        reader = Memory.open(path, FakeClock())
        seen["billing"] = values(reader, "billing")
        seen["awaiting"] = reader.stats().slots_awaiting_facts

    report = memory.ingest_episodes(watched(MADE, 8, look), batch_size=2)
    # Four batches (episodes 0-7) have committed their episodes and owe their facts.
    assert {(name, key) for name, key, _ in seen["owed"]} == {("billing", "runs_on"), ("svc0", "runs_on"),
                                                                ("svc1", "runs_on"), ("svc2", "runs_on"),
                                                                ("svc3", "runs_on")}
    assert {operation for *_, operation in seen["owed"]} == {report.operation_id}
    assert seen["billing"] == [] and seen["awaiting"] == 5  # and the store says so
    assert owed_rows(path) == [] and memory.stats().slots_awaiting_facts == 0
    assert current_facts(memory) == expected_facts(MADE)
    # The journal counts what the derivations did too: every version made is current or ended.
    assert report.facts_created - report.facts_expired == len(current_facts(memory)) > 0
    assert memory.operations()[0].counts["facts_created"] == report.facts_created
    assert_exact(memory)


def test_another_writer_resolves_an_owed_slot_whole_and_leaves_the_rest_owed(tmp_path, db_path):
    path = db_path
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


@pytest.mark.parametrize("bound", ["DERIVE_EVERY_INSTANTS", "DERIVE_EVERY_SECONDS"])
def test_a_long_ingest_derives_what_it_changes_of_facts_on_the_way(tmp_path, monkeypatch, bound, db_path):
    monkeypatch.setattr(underived, bound, 0)
    path = db_path
    seen, look = seen_between_batches(path)
    memory = Memory.open(path, FakeClock())
    memory.ingest_episodes(MADE[:1])  # billing has a fact before the long ingest changes it
    memory.ingest_episodes(watched(MADE[1:], 8, look), batch_size=2)
    # Billing's facts, out of date, were derived on the way; the new slots wait for the end.
    assert seen["billing"] == ["db0", "db1", "db2", "db0", "db1"]  # episodes 0, 2, 4, 6, 8
    assert {name for name, *_ in seen["owed"]} == {"svc0", "svc1", "svc2", "svc3"}
    assert owed_rows(path) == []
    assert current_facts(memory) == expected_facts(MADE)


@pytest.mark.parametrize("bound", ["DERIVE_EVERY_INSTANTS", "DERIVE_EVERY_SECONDS"])
def test_slots_without_facts_wait_for_the_end_and_keep_no_instants(tmp_path, monkeypatch, bound, db_path):
    """A slot with no fact is not out of date, and is resolved whole: its changes are kept
    as one row however many there are, and never make the ingest derive on the way."""
    monkeypatch.setattr(underived, bound, 0)
    path = db_path
    memory = Memory.open(path, FakeClock())
    seen, look_outside = seen_between_batches(path)

    def look():
        look_outside()
        seen["kept"] = memory.db.execute("SELECT count(*) FROM temp.owed_changes").fetchone()[0]
        seen["new"] = memory.db.execute("SELECT s.name, n.instants FROM temp.owed_new_slots n "
                                        "JOIN entities s ON s.id = n.subject_id ORDER BY 1").fetchall()

    memory.ingest_episodes(watched(MADE, 8, look), batch_size=2)
    assert len(seen["owed"]) == 5 and seen["billing"] == []
    assert seen["kept"] == 0
    assert seen["new"] == [("billing", 4), ("svc0", 1), ("svc1", 1), ("svc2", 1), ("svc3", 1)]
    assert owed_rows(path) == []
    assert current_facts(memory) == expected_facts(MADE)
    assert_exact(memory)


def test_an_interrupted_ingest_derives_what_it_owes_before_it_stops(tmp_path, caplog, db_path):
    def interrupted():
        yield from MADE[:9]
        raise KeyboardInterrupt

    memory = Memory.open(db_path, FakeClock())
    with pytest.raises(KeyboardInterrupt):
        memory.ingest_episodes(interrupted(), batch_size=2)
    # It says what it does meanwhile (a minute's work after a 1M backfill), and how to leave it.
    said = [record.getMessage() for record in caplog.records if record.name == "memctl"]
    assert said == ["memctl: interrupted; deriving the facts of 5 slot(s) the stored batches changed "
                    "(Ctrl-C again leaves that to the next command that writes)"]
    assert owed_rows(db_path) == []
    assert current_facts(memory) == expected_facts(MADE[:8])  # four whole batches; the ninth never landed
    assert memory.operations()[0].status == "interrupted"


def failing():
    yield from MADE[:9]
    raise OSError("disk gone")


def cannot_derive(*_):
    raise sqlite3.OperationalError("disk I/O error")


def test_what_a_failed_ingest_could_not_derive_the_next_writer_does(tmp_path, monkeypatch, caplog, db_path):
    path = db_path
    memory = Memory.open(path, FakeClock())
    with monkeypatch.context() as patched:
        patched.setattr(underived.Owed, "derive", cannot_derive)
        with pytest.raises(OSError):
            memory.ingest_episodes(failing(), batch_size=2)
    assert not [r for r in caplog.records if r.name == "memctl"]  # a failure's own error says what happened
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


def test_an_undo_in_batches_derives_what_it_took_out_as_one_transaction_would(tmp_path, monkeypatch, db_path):
    """The later batches of an undo owe their facts too. Deriving them later, what they took
    out still counts as the stored facts' support: here the end that the undone episode
    stated for a fact another episode also supports (a resolution that forgot it would
    keep the fact ending where the undone episode said)."""
    monkeypatch.setattr(undo_module, "UNDO_FIRST_BATCH", 1)

    def said(position: int, day: int, facts: list[dict]) -> Episode:
        text = f"episode {position}"
        return Episode(source="generated", position=position, format="facts", content=text,
                       content_hash=content_hash(text), reference_time=DAYS[day], reference_time_source="record",
                       assertions=[Assertion(extractor="facts", fact=f"{f['subject']} runs on {f['object']}",
                                             predicate="runs on", valid_at_evidence="explicit", **f) for f in facts])

    ended = said(0, 0, [{"subject": "billing", "object": "db0", "valid_at": DAYS[0], "invalid_at": DAYS[20]}])
    # Said again and again: enough left that the slot is resolved over its stretches, not whole.
    confirmed = [said(n, 5 + n, [{"subject": "billing", "object": "db0", "valid_at": DAYS[5 + n]}]) for n in range(1, 12)]
    later = said(30, 25, [{"subject": "cache", "object": "redis", "valid_at": DAYS[25]}])
    memory = Memory.open(db_path, FakeClock())
    memory.ingest_episodes([ended, *confirmed, later], batch_size=20)
    assert values(memory, "billing") == ["db0"]
    memory.clock.advance(seconds=1)
    seen = {}
    derive = underived.Owed.derive

    def watched_derive(self, db, *args, **kwargs):
        seen["owed"] = db.execute("SELECT count(*) FROM underived_slots").fetchone()[0]
        return derive(self, db, *args, **kwargs)

    monkeypatch.setattr(underived.Owed, "derive", watched_derive)
    memory.clock.advance(seconds=1)
    plan = memory.undo([later.id, ended.id], apply=True)  # latest first: the cache, then (owed) billing
    assert plan.applied and seen["owed"] == 1
    assert owed_rows(db_path) == []
    assert current_facts(memory) == expected_facts(confirmed)
    assert [row[7] for row in current_facts(memory)] == [None]  # open again: nobody else said it ended
    assert_exact(memory)


def test_what_is_resolved_whole_and_what_over_its_stretches(tmp_path, db_path):
    """Each operation's changes are known only to its own connection: the first to derive a
    slot that another operation owes too resolves it whole, for both. So is a slot with
    few active assertions left for its changes (an undo that empties it)."""
    from memctl.store.facts import SlotChange

    memory = Memory.open(db_path, FakeClock())
    busy = [episode(n, "busy", f"db{n % 3}") for n in range(12)]
    memory.ingest_episodes(busy + [episode(12, "quiet", "k8s"), episode(13, "shared", "k8s")], batch_size=14)
    db = memory.db
    ids = dict(db.execute("SELECT name, id FROM entities").fetchall())
    underived.forget_changes(db)
    db.execute("INSERT INTO operations (id, kind, at, status) VALUES ('op_a', 'ingest', ?, 'running'), "
               "('op_b', 'undo', ?, 'running')", [DAYS[0], DAYS[0]])
    shared, quiet, busy_slot = ((ids[name], "runs_on") for name in ("shared", "quiet", "busy"))
    underived.owe(db, "op_a", {shared: SlotChange({7: {DAYS[1]}}), quiet: SlotChange({8: {DAYS[2]}}),
                               busy_slot: SlotChange({9: {DAYS[2]}})}, DAYS[3])
    underived.owe(db, "op_b", {shared: SlotChange({9: {DAYS[4]}})}, DAYS[4])
    released = underived.release(db, "op_a", [shared, quiet, busy_slot])
    assert released.whole == {shared, quiet}  # another owes it; one assertion left for one instant
    assert list(released.changes) == [busy_slot] and released.changes[busy_slot].instants == {9: {DAYS[2]}}
    assert released.since == {busy_slot: DAYS[3]}
    assert db.execute("SELECT count(*) FROM underived_slots").fetchone() == (0,)


def test_a_batch_that_revises_an_episode_owes_what_it_took_out_too(tmp_path, db_path):
    """A turn read again after its reply grew takes its old reading's assertions out at its
    batch's time, and owes the facts of that as of any other batch."""
    import dataclasses

    grown = dataclasses.replace(MADE[2], identity="turn 2")  # billing on db1, in the second batch
    longer = dataclasses.replace(grown, content=grown.content + " and then it moved to db9",
                                 content_hash=content_hash(grown.content + " and then it moved to db9"),
                                 assertions=[*grown.assertions, Assertion(
                                     subject="billing", predicate="runs on", object="db9", fact="billing moved to db9",
                                     valid_at=DAYS[3], valid_at_evidence="explicit", extractor="facts")])
    assert longer.id == grown.id
    path = db_path
    memory = Memory.open(path, FakeClock())
    seen, look = seen_between_batches(path)
    episodes = [*MADE[:2], grown, *MADE[3:8], longer, *MADE[8:]]
    report = memory.ingest_episodes(watched(episodes, 10, look), batch_size=2)
    assert report.revised == 1
    assert {name for name, *_ in seen["owed"]} == {"billing", "svc0", "svc1", "svc2", "svc3"}
    assert seen["billing"] == []
    assert current_facts(memory) == expected_facts([*MADE[:2], longer, *MADE[3:]])
    assert_exact(memory)


def test_a_writer_that_runs_on_derives_what_its_failed_ingest_owed_at_its_next_one(tmp_path, monkeypatch, db_path):
    """A server is not reopened: its next long operation derives what an earlier one of any
    process could not, before it owes anything itself."""
    memory = Memory.open(db_path, FakeClock())
    with monkeypatch.context() as patched:
        patched.setattr(underived.Owed, "derive", cannot_derive)
        with pytest.raises(OSError):
            memory.ingest_episodes(failing(), batch_size=2)
    assert len(owed_rows(db_path)) == 5
    memory.clock.advance(seconds=1)
    memory.ingest_episodes(MADE[8:], batch_size=2)
    assert owed_rows(db_path) == []
    assert current_facts(memory) == expected_facts(MADE)
    assert_exact(memory)


def test_an_interrupted_undo_derives_what_its_batches_owe_before_it_stops(tmp_path, monkeypatch, caplog, db_path):
    monkeypatch.setattr(undo_module, "UNDO_FIRST_BATCH", 1)
    monkeypatch.setattr(undo_module, "next_batch_size", lambda *_, **__: 2)
    memory = Memory.open(db_path, FakeClock())
    operation = memory.ingest_episodes(MADE, batch_size=len(MADE)).operation_id
    memory.clock.advance(seconds=1)
    batch = undo_module._undo_batch
    calls = []

    def interrupted_at_the_fourth(*args, **kwargs):
        calls.append(args[2])  # its episodes
        if len(calls) == 4:
            raise KeyboardInterrupt
        return batch(*args, **kwargs)

    monkeypatch.setattr(undo_module, "_undo_batch", interrupted_at_the_fourth)
    with pytest.raises(KeyboardInterrupt):
        memory.undo([operation], apply=True)
    assert [r.getMessage().split(";")[0] for r in caplog.records if r.name == "memctl"] == ["memctl: interrupted"]
    undone = {episode_id for episodes in calls[:3] for episode_id in episodes}
    assert len(undone) == 5  # one, then two and two: the later two batches owed their facts
    assert owed_rows(db_path) == []
    assert current_facts(memory) == expected_facts([e for e in MADE if e.id not in undone])
    assert [op.status for op in memory.operations()] == ["done", "interrupted"]


def test_a_preview_derives_as_the_undo_it_shows_and_leaves_nothing_owed(tmp_path, monkeypatch, db_path):
    """A preview runs the undo's batches in one transaction that it rolls back; its later
    batches owe their facts as the undo's do, so it costs what the undo does."""
    monkeypatch.setattr(undo_module, "UNDO_FIRST_BATCH", 1)
    monkeypatch.setattr(undo_module, "next_batch_size", lambda *_, **__: 2)
    memory = Memory.open(db_path, FakeClock())
    operation = memory.ingest_episodes(MADE, batch_size=len(MADE)).operation_id
    memory.clock.advance(seconds=1)
    derived: list[bool] = []  # each derivation of owed facts: whether it was a preview's
    derive = underived.Owed.derive
    monkeypatch.setattr(underived.Owed, "derive",
                        lambda self, *args: derived.append(self.tentative) or derive(self, *args))
    before = current_facts(memory)
    preview = memory.undo([operation])
    assert derived == [True] and not preview.applied
    assert current_facts(memory) == before and owed_rows(db_path) == []
    applied = memory.undo([operation], apply=True)
    assert derived == [True, False]
    assert preview.effects.counts() == applied.effects.counts() and applied.effects.counts()["removed"] > 0
    assert current_facts(memory) == [] and owed_rows(db_path) == []
    assert_exact(memory)


@pytest.mark.parametrize(("write_seconds", "sizes"), [(1e6, [2, 4, 8, 8, 2]), (1e-9, [2] * 12)])
def test_an_ingest_sizes_its_batches_by_how_long_the_last_took_unless_told(memory, monkeypatch, write_seconds, sizes):
    """By default a batch is as big as the last one's time says (twice as big at most, and
    within BATCH_EPISODES and BATCH_MOST_EPISODES, here 2 and 8); a batch size the caller
    gives is kept."""
    stored: list[int] = []
    real = ingest_module.store_episodes
    monkeypatch.setattr(ingest_module, "store_episodes",
                        lambda db, added, *args: stored.append(len(added.to_store)) or real(db, added, *args))
    monkeypatch.setattr(ingest_module, "BATCH_EPISODES", 2)
    monkeypatch.setattr(ingest_module, "BATCH_MOST_EPISODES", 8)
    monkeypatch.setattr(ingest_module, "BATCH_WRITE_SECONDS", write_seconds)
    memory.ingest_episodes(MADE)
    assert stored == sizes
    stored.clear()
    Memory.open(":memory:", memory.clock).ingest_episodes(MADE, batch_size=5)
    assert stored == [5, 5, 5, 5, 4]


def between_undo_batches(batches: int, look: Callable[[], None]):
    """``long_operation.let_others_in`` (between an undo's batches), calling ``look`` once that
    many batches have committed, before the next begins."""
    let_others_in = long_operation.let_others_in
    calls = []

    def watched(*args, **kwargs):
        calls.append(None)
        if len(calls) == batches:
            look()
        return let_others_in(*args, **kwargs)

    return watched


def test_a_slot_the_undo_leaves_empty_loses_its_facts_in_the_batch_that_first_changes_it(tmp_path, monkeypatch, db_path):
    """Undoing a whole ingest empties most slots it touches: their facts end when the undo
    first takes one of their assertions out, instead of being resolved anew each time a
    batch takes the latest off. A slot that keeps an assertion of another ingest keeps its
    facts (resolved from what is left), and the end is what one transaction would make."""
    monkeypatch.setattr(undo_module, "UNDO_FIRST_BATCH", 1)
    monkeypatch.setattr(stored_facts, "ENDED_SLOTS_AT_ONCE", 1)  # each slot's facts ended, and told, on its own
    monkeypatch.setattr(undo_module, "next_batch_size", lambda *_, **__: 2)
    path = db_path
    memory = Memory.open(path, FakeClock())
    operation = memory.ingest_episodes(MADE, batch_size=len(MADE)).operation_id
    kept = episode(100, "svc10", "nomad")  # said by another ingest: svc10 is not left empty
    memory.ingest_episodes([kept])
    memory.clock.advance(seconds=1)
    seen, look = seen_between_batches(path)

    def look_further() -> None:
        look()
        seen["svc10"] = values(Memory.open(path, FakeClock()), "svc10")
        with open_store(path) as conn:
            seen["billing_said"] = conn.execute("SELECT count(*) FROM assertions a JOIN entities s ON s.id = a.subject_id "
                                                "WHERE s.name = 'billing' AND a.expired_at IS NULL").fetchone()[0]

    # Latest first: episode 23 (svc11) alone, then 22 (billing) and 21 (svc10), then ...
    monkeypatch.setattr(long_operation, "let_others_in", between_undo_batches(2, look_further))
    plan = memory.undo([operation], apply=True)
    # billing still has ten episodes to go, and no fact already; it is owed, whole.
    assert seen["billing"] == [] and seen["billing_said"] == 11
    assert ("billing", "runs_on") in {(name, key) for name, key, _ in seen["owed"]}
    # Not ended: k8s is taken out of it over its stretch of time, on the way or at the end, as before.
    assert seen["svc10"] == ["nomad", "k8s"]
    assert current_facts(memory) == expected_facts([kept])
    # Every fact of the undone ingest removed; svc10's nomad, which k8s had ended, open again.
    assert [(change.object, change.invalid_at) for change in plan.effects.reopened] == [("nomad", None)]
    assert len(plan.effects.removed) == len(expected_facts(MADE)) and not plan.effects.changed
    assert owed_rows(path) == []
    # The connection, which a server keeps open, holds no list of the episodes any more.
    assert memory.db.execute("SELECT count(*) FROM temp.taken_out").fetchone()[0] == 0
    assert_exact(memory)


def test_facts_an_undo_ended_early_come_back_if_it_stops_before_its_end(tmp_path, monkeypatch, db_path):
    """An undo killed (here: unable to derive on its way out) after it ended a slot's facts
    early leaves that slot owed; the next writer resolves it whole from the assertions
    that are still active, so nothing the undo did not take out stays without its fact."""
    monkeypatch.setattr(undo_module, "UNDO_FIRST_BATCH", 1)
    monkeypatch.setattr(undo_module, "next_batch_size", lambda *_, **__: 2)
    path = db_path
    memory = Memory.open(path, FakeClock())
    operation = memory.ingest_episodes(MADE, batch_size=len(MADE)).operation_id
    memory.clock.advance(seconds=1)

    def stop() -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(long_operation, "let_others_in", between_undo_batches(3, stop))
    monkeypatch.setattr(underived.Owed, "derive", cannot_derive)
    with pytest.raises(OSError):
        memory.undo([operation], apply=True)
    assert values(memory, "billing") == []  # ended early, with ten of its episodes left
    assert ("billing", "runs_on") in {(name, key) for name, key, _ in owed_rows(path)}
    memory.close()
    monkeypatch.undo()

    reopened = Memory.open(path, FakeClock("2026-02-01T00:00:00Z"))
    assert_exact(reopened)  # the first write derives what the undo left owed
    undone = {e.id for e in reopened.episodes() if e.status == "undone"}
    assert len(undone) == 5
    assert current_facts(reopened) == expected_facts([e for e in MADE if e.id not in undone])
    assert values(reopened, "billing") and owed_rows(path) == []


def test_an_interrupted_ingest_whose_file_fails_too_still_stops_as_interrupted(tmp_path, monkeypatch, db_path):
    """Counting what it owes, to say so, reads the file: if that fails too, the
    interruption is what propagates, and the next writer derives what was owed."""
    def interrupted():
        yield from MADE[:9]
        raise KeyboardInterrupt

    memory = Memory.open(db_path, FakeClock())
    monkeypatch.setattr(underived, "owed_slots", cannot_derive)
    with pytest.raises(KeyboardInterrupt):
        memory.ingest_episodes(interrupted(), batch_size=2)
    assert len(owed_rows(db_path)) == 5
    monkeypatch.undo()
    memory.close()
    assert_exact(Memory.open(db_path, FakeClock("2026-02-01T00:00:00Z")))
    assert owed_rows(db_path) == []


def test_the_facts_of_slots_left_empty_are_ended_and_told_a_few_slots_at_a_time(monkeypatch, db_path):
    """What ends at once, a lot of ``ENDED_SLOTS_AT_ONCE`` slots at a time: every open fact
    of each slot whose every assertion the undo takes out, and none of a slot that keeps
    one; each lot handed on (to the plan) as it ends, not all of them at the end."""
    monkeypatch.setattr(stored_facts, "ENDED_SLOTS_AT_ONCE", 2)
    memory = Memory.open(db_path, FakeClock())
    memory.ingest_episodes(MADE, batch_size=len(MADE))
    kept = episode(100, "svc10", "nomad")  # said by another ingest: svc10 is not left empty
    memory.ingest_episodes([kept])
    db = memory.db
    slots = [tuple(row) for row in db.execute("SELECT DISTINCT subject_id, predicate_key FROM facts ORDER BY 1, 2")]
    names = dict(db.execute("SELECT id, name FROM entities").fetchall())
    told: list[list[str]] = []
    with tentative(db):
        underived.Owed(operation_id="op_test").taking_out(db, [e.id for e in MADE])
        stored_facts.end_if_left_empty(db, slots, "2030-01-01T00:00:00.000000Z",
                                       lambda ended: told.append([names[row["subject_id"]] for row in ended.expired]))
        still_open = {names[row[0]] for row in db.execute("SELECT subject_id FROM facts WHERE expired_at IS NULL")}
    left_empty = sorted({f"svc{n}" for n in range(12)} - {"svc10"} | {"billing"})
    assert [len(set(lot)) for lot in told] == [2] * (len(left_empty) // 2) + [1] * (len(left_empty) % 2)
    assert sorted({name for lot in told for name in lot}) == left_empty and still_open == {"svc10"}
    assert sum(map(len, told)) == sum(1 for row in current_facts(memory) if row[0] != "svc10")
