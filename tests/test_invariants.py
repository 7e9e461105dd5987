"""architecture §7 invariants 1-3 over generated episodes with overlapping slots.

1. Any permutation of the same episodes (in any batching) gives identical current facts.
2. ingest(S) then undo(E) == ingest(S - E), also when later episodes touched the same
   slots, and also with --purge.
3. rebuild from the assertions changes nothing in the incrementally maintained facts.

Each runs on both backends: a SQLite database in memory, and databases of the test
session's PostgreSQL server, emptied for each store an example makes.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctl import times, undo
from memctl.memory import Memory
from memctl.model import Assertion, Episode, content_hash
from memctl.store import facts as stored_facts
from memctl.store import on_postgres
from tests.conftest import FakeClock, current_facts

# Few names and instants, so slots overlap, values return and times tie.
SUBJECTS = ["Alice", "alice", "ALICE!", "Billing"]
PREDICATES = ["lives in", "lives_in", "uses", "primary database"]
OBJECTS = ["Oslo", "oslo", "Bergen", "N.Y.C.", "NYC", "Postgres"]
INSTANTS = [times.normalize_instant(f"2024-0{m}-0{d}") for m in (1, 2, 3) for d in (1, 5)]

settings.register_profile("memctl", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])
settings.load_profile("memctl")


@st.composite
def assertions(draw, reference_time):
    retraction = draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans())
    valid_at = None if retraction else draw(st.sampled_from(INSTANTS + [reference_time]))
    ends = [t for t in INSTANTS + ["2024-06-01T00:00:00.000000Z"] if valid_at is None or t > valid_at]
    invalid_at = draw(st.sampled_from(ends)) if retraction else draw(st.one_of(st.none(), st.none(), st.sampled_from(ends)))
    subject, predicate, obj = (draw(st.sampled_from(pool)) for pool in (SUBJECTS, PREDICATES, OBJECTS))
    return Assertion(
        subject=subject, predicate=predicate, object=obj, fact=f"{subject} {predicate} {obj}",
        valid_at=valid_at, valid_at_evidence=None if retraction else "explicit",
        invalid_at=invalid_at, invalid_at_evidence=invalid_at and "explicit",
        cardinality=draw(st.sampled_from(["one", "one", "many"])), extractor="facts",
        extracted_at="2026-01-01T00:00:00.000000Z",
    )


@st.composite
def episodes(draw, min_size=1, max_size=10):
    count = draw(st.integers(min_size, max_size))
    made = []
    for position in range(count):
        reference_time = draw(st.sampled_from(INSTANTS))
        items = draw(st.lists(assertions(reference_time), min_size=0, max_size=3))
        text = f"episode {position}"
        made.append(Episode(
            source="generated", position=position, format="facts", content=text, content_hash=content_hash(text),
            reference_time=reference_time, reference_time_source="record", assertions=items,
        ))
    return made


def _in_memory() -> Memory:
    return Memory.open(":memory:", FakeClock())


_new_store: Callable[[], Memory] = _in_memory
# Stores one example holds at once, at most (the repair test's three, and one spare).
POOL = 4
SERVER_EXAMPLES = 15


@pytest.fixture(autouse=True)
def stores(backend, request):
    """Where ``fresh`` makes each store: in memory, or in turn in one of POOL databases of
    the PostgreSQL server, each emptied first (the example that used it is over)."""
    global _new_store
    if backend == "sqlite":
        _new_store = _in_memory
        yield
        return
    from memctl.store.tables import FACT_TEXTS, TABLES

    server, template = request.getfixturevalue("postgres_server"), request.getfixturevalue("postgres_template")
    pool = [server.new_database(template=template) for _ in range(POOL)]
    opened: dict[int, Memory] = {}
    turns = itertools.count()
    emptied = "; ".join(f"DELETE FROM {table}" for table in (FACT_TEXTS, *reversed(TABLES)))

    def in_the_pool() -> Memory:
        """The next database of the pool, emptied, through the memory opened on it
        before (with a new clock): connecting anew for each example took most of the time."""
        n = next(turns) % POOL
        if n not in opened:
            opened[n] = Memory.open(pool[n][1], FakeClock())
        memory = opened[n]
        memory.clock = memory.connections.clock = FakeClock()
        memory.db.pg.execute(emptied)
        return memory

    _new_store = in_the_pool
    # Fewer examples on the server: each is some 270 round trips to it (two minutes for
    # the module at SQLite's count). @given reads its settings when the test runs.
    test = request.node.function
    given_settings = getattr(test, "_hypothesis_internal_use_settings", None)
    if given_settings is not None:
        test._hypothesis_internal_use_settings = settings(given_settings, max_examples=min(
            given_settings.max_examples, SERVER_EXAMPLES))
    yield
    if given_settings is not None:
        test._hypothesis_internal_use_settings = given_settings
    for memory in opened.values():
        memory.close()
    for name, _ in pool:
        server.drop_database(name)
    _new_store = _in_memory


def fresh() -> Memory:
    return _new_store()


def ingested(batches: list[list[Episode]], batch_size: int = 500) -> Memory:
    memory = fresh()
    for batch in batches:
        memory.clock.advance(seconds=1)
        memory.ingest_episodes(batch, batch_size=batch_size)
    return memory


def assert_rebuild_is_a_no_op(memory: Memory) -> None:
    before = current_facts(memory)
    report = memory.rebuild()
    assert (report["facts_created"], report["facts_expired"]) == (0, 0)
    assert current_facts(memory) == before
    assert_episode_index_is_exact(memory)
    # The last value said at an instant wins: no version holds for no time unless its end was stated so.
    assert memory.db.execute("SELECT count(*) FROM facts WHERE end_reason = 'superseded' "
                             "AND invalid_at = valid_at").fetchone() == (0,)


def assert_episode_index_is_exact(memory: Memory) -> None:
    """The episode text index holds exactly the stored episodes' tokens, where they are,
    and each episode is held (an open span) exactly when it is active."""
    db = memory.db
    assert db.execute("SELECT count(*) FROM episodes WHERE text_id IS NULL").fetchone() == (0,)
    if not on_postgres(db):  # PostgreSQL's index is a column generated from the text: exact by construction
        assert_fts_index_is_exact(db)
    held = [row[0] for row in db.execute("SELECT episode_id FROM episode_spans WHERE held_until IS NULL")]
    active = {row[0] for row in db.execute("SELECT id FROM episodes WHERE status = 'active'")}
    assert sorted(held) == sorted(active)


def assert_fts_index_is_exact(db) -> None:
    db.execute("INSERT INTO episodes_fts (episodes_fts) VALUES ('integrity-check')")
    # The index reads the text from episodes: its tokens must be those of that text now,
    # as an index built afresh from it has them (a missed 'delete' leaves stale ones).
    db.execute("CREATE VIRTUAL TABLE temp.fresh USING fts5(content, tokenize = 'porter unicode61 remove_diacritics 2')")
    db.execute("INSERT INTO temp.fresh (rowid, content) SELECT text_id, content FROM episodes")
    db.execute("CREATE VIRTUAL TABLE temp.indexed_tokens USING fts5vocab(main, episodes_fts, instance)")
    db.execute("CREATE VIRTUAL TABLE temp.fresh_tokens USING fts5vocab(temp, fresh, instance)")
    try:
        tokens = "SELECT term, doc, offset FROM temp.{} ORDER BY term, doc, offset"
        assert db.execute(tokens.format("indexed_tokens")).fetchall() == db.execute(tokens.format("fresh_tokens")).fetchall()
    finally:
        for table in ("indexed_tokens", "fresh_tokens", "fresh"):
            db.execute(f"DROP TABLE temp.{table}")


@given(episodes(), st.randoms(), st.integers(1, 4))
def test_permutation_and_batching_give_identical_facts(made, rnd, batch_size):
    expected = current_facts(ingested([made]))
    shuffled = made[:]
    rnd.shuffle(shuffled)
    other = ingested([shuffled], batch_size=batch_size)
    assert current_facts(other) == expected
    assert_rebuild_is_a_no_op(other)


@given(episodes(min_size=2), st.data(), st.booleans())
def test_undo_is_an_exact_inverse(made, data, purge):
    split = data.draw(st.integers(1, len(made)))
    first, later = made[:split], made[split:]  # later episodes touch the same slots after the undone ones
    undone = data.draw(st.lists(st.sampled_from(first), min_size=1, unique_by=lambda e: e.id))
    memory = ingested([first, later])
    memory.clock.advance(seconds=1)
    # In batches: the first resolves its facts as it commits, the rest owe theirs until the end.
    # ...and the slots a batch leaves empty have their facts ended a few slots at a time.
    with patch.object(undo, "UNDO_FIRST_BATCH", data.draw(st.integers(1, 3))), \
            patch.object(stored_facts, "ENDED_SLOTS_AT_ONCE", data.draw(st.integers(1, 2))):
        plan = memory.undo([e.id for e in undone], apply=True, purge=purge)
    assert plan["applied"] and sorted(plan["episodes"]) == sorted(e.id for e in undone)
    remaining = [e for e in made if e.id not in {u.id for u in undone}]
    assert current_facts(memory) == current_facts(ingested([remaining]))
    assert_rebuild_is_a_no_op(memory)
    if purge:
        gone = [e.id for e in undone]
        marks = ", ".join("?" * len(gone))
        for table, column in [("episodes", "id"), ("assertions", "episode_id"), ("fact_provenance", "episode_id")]:
            assert memory.db.execute(f"SELECT count(*) FROM {table} WHERE {column} IN ({marks})", gone).fetchone()[0] == 0


@given(episodes(min_size=2), st.data())
def test_undo_then_reingest_restores_the_facts(made, data):
    undone = data.draw(st.lists(st.sampled_from(made), min_size=1, unique_by=lambda e: e.id))
    memory = ingested([made])
    expected = current_facts(memory)
    memory.clock.advance(seconds=1)
    memory.undo([e.id for e in undone], apply=True)
    memory.clock.advance(seconds=1)
    report = memory.ingest_episodes(made)
    assert report.reactivated == len(undone) and report.already_present == len(made) - len(undone)
    assert current_facts(memory) == expected
    assert_rebuild_is_a_no_op(memory)


@given(episodes(min_size=2), st.data())
def test_undo_preview_changes_nothing(made, data):
    undone = data.draw(st.sampled_from(made))
    memory = ingested([made])
    before = [memory.db.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
              for t in ("episodes", "assertions", "facts", "fact_provenance", "entities", "operations")]
    memory.undo([undone.id], apply=False)
    after = [memory.db.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
             for t in ("episodes", "assertions", "facts", "fact_provenance", "entities", "operations")]
    assert before == after


@given(episodes(min_size=1))
def test_reingest_adds_nothing(made):
    memory = ingested([made])
    state = current_facts(memory)
    versions = memory.db.execute("SELECT count(*) FROM facts").fetchone()[0]
    report = memory.ingest_episodes(made)
    assert (report.added, report.reactivated, report.operation_id) == (0, 0, None)
    assert report.already_present == len({e.id for e in made})
    assert current_facts(memory) == state
    assert memory.db.execute("SELECT count(*) FROM facts").fetchone()[0] == versions


def test_interrupted_ingest_keeps_whole_batches_and_says_so():
    made = [
        Episode(source="s", position=i, format="facts", content=f"e{i}", content_hash=content_hash(f"e{i}"),
                reference_time=INSTANTS[i % len(INSTANTS)], reference_time_source="record",
                assertions=[Assertion(subject="svc", predicate="uses", object=f"lib{i}", fact=f"svc uses lib{i}",
                                      valid_at=INSTANTS[i % len(INSTANTS)], cardinality="many", extractor="facts")])
        for i in range(5)
    ]

    def interrupted():
        yield from made[:3]
        raise KeyboardInterrupt

    memory = fresh()
    try:
        memory.ingest_episodes(interrupted(), batch_size=2)
    except KeyboardInterrupt:
        pass
    (operation,) = memory.operations()
    assert operation["status"] == "interrupted" and operation["counts"]["added"] == 2
    assert memory.stats()["episodes"] == 2  # the first batch, whole; the third episode never landed
    report = memory.ingest_episodes(made, batch_size=2)
    assert (report.added, report.already_present) == (3, 2)
    assert current_facts(memory) == current_facts(ingested([made]))


@given(episodes(min_size=1, max_size=6), st.integers(-14 * 60, 14 * 60))
def test_as_of_boundaries_hold_for_every_fact(made, offset_minutes):
    """Invariant 6: start inclusive, end exclusive, offsets compared as instants."""
    from datetime import timedelta, timezone

    memory = ingested([made])
    zone = timezone(timedelta(minutes=offset_minutes))

    def written_with_offset(stored: str) -> str:
        return times.from_storage(stored).astimezone(zone).isoformat()

    def found(fact_id: int, instant: str) -> bool:
        as_of = times.normalize_instant(written_with_offset(instant))
        results = memory.recall(" ".join(SUBJECTS), as_of=as_of, limit=1000, kind="fact")["results"]
        return fact_id in {r["fact_id"] for r in results}

    facts = memory.db.execute("SELECT id, valid_at, invalid_at FROM facts WHERE expired_at IS NULL").fetchall()
    for fact_id, valid_at, invalid_at in facts:
        if invalid_at == valid_at:
            assert not found(fact_id, valid_at)  # superseded at the same instant: never valid
            continue
        assert found(fact_id, valid_at)
        assert not found(fact_id, times.to_storage(times.from_storage(valid_at) - timedelta(microseconds=1)))
        if invalid_at is not None:
            assert found(fact_id, times.to_storage(times.from_storage(invalid_at) - timedelta(microseconds=1)))
            assert not found(fact_id, invalid_at)


def test_batches_close_at_their_size_or_their_age():
    from memctl.ingest import batches

    assert list(batches(range(5), 2, seconds=3600)) == [[0, 1], [2, 3], [4]]
    # an age bound of zero closes every batch at once: a slow source commits each episode
    assert list(batches(range(3), 1000, seconds=0)) == [[0], [1], [2]]


EXTRACTION_DAY = "2026-01-01T12:00:00.000000Z"
INVENTED = "2026-01-01T00:00:00.000000Z"


class _Relocating:
    """A deterministic re-extractor for retries: where Alice lives follows the text's length."""

    name = "test:relocating"

    def extract(self, requests):
        from memctl.extract import Result

        for request in requests:
            yield request, Result(calls=1, assertions=[Assertion(
                subject="Alice", predicate="lives in", object=f"City{len(request.text) % 3}", fact="Alice moved",
                valid_at=request.reference_time, valid_at_evidence="reference", extractor=self.name,
                extracted_at=EXTRACTION_DAY)])


@st.composite
def damaged(draw):
    """Extracted episodes, some of whose dates an LLM invented as 'today at midnight'."""
    made = draw(episodes(min_size=2, max_size=8))
    for episode in made:
        episode.format, episode.extraction = "jsonl", "done"
        episode.assertions = [
            a._replace(extracted_at=EXTRACTION_DAY,
                       **({"valid_at": INVENTED} if a.invalid_at is None and a.valid_at and draw(st.booleans())
                          else {}))
            for a in episode.assertions
        ]
    return made


@given(damaged(), st.data())
def test_undo_stays_exact_with_retries_and_repairs_mixed_in(made, data):
    """Invariant 2 with issue 5's operations in between: repair and retry act per episode,
    so undoing E afterwards must equal never having ingested E."""
    undone = {e.id for e in data.draw(st.lists(st.sampled_from(made), min_size=1, unique_by=lambda e: e.id))}
    retried = {e.id for e in data.draw(st.lists(st.sampled_from(made), unique_by=lambda e: e.id))}

    def treat(memory, ids):
        memory.clock.advance(seconds=1)
        if ids:
            memory.retry(sorted(ids), _Relocating())
        memory.clock.advance(seconds=1)
        memory.repair_midnight_hallucinations(apply=True)

    everything = ingested([made])
    treat(everything, retried)
    everything.clock.advance(seconds=1)
    everything.undo(sorted(undone), apply=True)
    remaining = [e for e in made if e.id not in undone]
    expected = ingested([remaining])
    treat(expected, retried - undone)
    assert current_facts(everything) == current_facts(expected)
    assert_rebuild_is_a_no_op(everything)


@settings(max_examples=150)
@given(damaged(), st.data())
def test_repair_and_its_undo_recompute_exactly_what_a_rebuild_would(made, data):
    """Repair re-resolves only the slots (or single values) its date moves can change, and
    looks up only names whose first mention moved later; a full rebuild must agree. Its
    undo puts the dates back even where episodes were undone in between."""
    undone = sorted({e.id for e in data.draw(st.lists(st.sampled_from(made), unique_by=lambda e: e.id))})
    memory = ingested([made])
    memory.clock.advance(seconds=1)
    repaired = memory.repair_midnight_hallucinations(apply=True)
    assert_rebuild_is_a_no_op(memory)
    if undone:
        memory.clock.advance(seconds=1)
        memory.undo(undone, apply=True)
    if repaired["applied"]:
        memory.clock.advance(seconds=1)
        memory.undo([repaired["operation_id"]], apply=True)
        assert_rebuild_is_a_no_op(memory)
    never_repaired = ingested([made])
    if undone:
        never_repaired.undo(undone, apply=True)
    assert current_facts(memory) == current_facts(never_repaired)


def assert_later_undos_stay_exact(memory: Memory, made: list[Episode], data) -> None:
    """Invariant 2 from here on: undoing any episodes equals never having ingested them."""
    undone = {e.id for e in data.draw(st.lists(st.sampled_from(made), min_size=1, unique_by=lambda e: e.id))}
    memory.clock.advance(seconds=1)
    memory.undo(sorted(undone), apply=True)
    assert current_facts(memory) == current_facts(ingested([[e for e in made if e.id not in undone]]))


@given(damaged(), st.data())
def test_undo_of_a_retry_is_an_exact_inverse(made, data):
    """Undoing a retry restores the facts as they were before it, and undoing episodes
    afterwards still equals never having ingested them."""
    retried = sorted({e.id for e in data.draw(st.lists(st.sampled_from(made), min_size=1, unique_by=lambda e: e.id))})
    memory = ingested([made])
    before = current_facts(memory)
    memory.clock.advance(seconds=1)
    retry_id = memory.retry(retried, _Relocating())["operation_id"]
    memory.clock.advance(seconds=1)
    assert memory.undo([retry_id], apply=True)["episodes"] == retried
    assert current_facts(memory) == before
    assert_rebuild_is_a_no_op(memory)
    assert_later_undos_stay_exact(memory, made, data)


@given(episodes(min_size=2), st.data())
def test_undo_of_an_undo_is_an_exact_inverse(made, data):
    """Undoing an undo of episodes brings back exactly the facts from before it, and the
    store then behaves as if the episodes had never left."""
    undone = sorted({e.id for e in data.draw(st.lists(st.sampled_from(made), min_size=1, unique_by=lambda e: e.id))})
    memory = ingested([made])
    before = current_facts(memory)
    memory.clock.advance(seconds=1)
    undo_id = memory.undo(undone, apply=True)["operation_id"]
    memory.clock.advance(seconds=1)
    assert memory.undo([undo_id], apply=True)["episodes"] == undone
    assert current_facts(memory) == before
    assert_rebuild_is_a_no_op(memory)
    assert_later_undos_stay_exact(memory, made, data)


@st.composite
def readings(draw):
    """Turns with an identity, and for some of them a later, longer reading (the reply
    grew after the first ingest), saying more."""
    made = draw(episodes(min_size=1, max_size=6))
    first, later = [], []
    for episode in made:
        episode = dataclasses.replace(episode, identity=f"turn {episode.position}", format="jsonl", extraction="done")
        first.append(episode)
        if draw(st.booleans()):
            content = episode.content + " and then some"
            more = draw(st.lists(assertions(episode.reference_time), max_size=2))
            later.append(dataclasses.replace(episode, content=content, content_hash=content_hash(content),
                                             assertions=episode.assertions + more))
    return first, later


@given(readings())
def test_a_longer_reading_replaces_the_first_and_undoing_its_ingest_gives_the_first_back(both):
    first, later = both
    memory = ingested([first])
    after_first = current_facts(memory)
    memory.clock.advance(seconds=1)
    report = memory.ingest_episodes(later)
    assert report.revised == len(later)
    final = {e.id: e for e in first} | {e.id: e for e in later}
    assert current_facts(memory) == current_facts(ingested([list(final.values())]))
    assert_rebuild_is_a_no_op(memory)
    if report.operation_id:
        memory.clock.advance(seconds=1)
        memory.undo([report.operation_id], apply=True)
        assert current_facts(memory) == after_first
        assert_rebuild_is_a_no_op(memory)


def test_one_episode_saying_a_then_b_then_a_at_one_instant_stores_a_alone():
    at = "2024-03-01T00:00:00.000000Z"
    said = [Assertion(subject="Alice", predicate="lives in", object=city, fact=f"Alice lives in {city}", valid_at=at,
                      valid_at_evidence="explicit", cardinality="one", extractor="facts")
            for city in ("Oslo", "Bergen", "Oslo")]
    memory = ingested([[Episode(source="s", position=0, format="facts", content="moves", content_hash=content_hash("moves"),
                                reference_time=at, reference_time_source="record", assertions=said)]])
    rows = memory.db.execute("SELECT o.name, f.valid_at, f.invalid_at FROM facts f JOIN entities o ON o.id = f.object_id"
                             ).fetchall()
    assert rows == [("Oslo", at, None)]  # every version ever stored, not just the current ones
    assert_rebuild_is_a_no_op(memory)
