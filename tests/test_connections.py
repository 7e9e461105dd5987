"""A Memory opened in one thread serves calls from others, as an MCP server makes them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memctl.memory import Memory
from memctl.sources import IngestOptions
from memctl.store.connection import write_transaction
from tests.conftest import FakeClock

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"


def test_reads_in_other_threads_do_not_wait_for_a_write_and_see_only_what_was_committed(tmp_path):
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    memory.ingest([FIXTURE], IngestOptions())
    episodes = memory.stats().episodes
    with ThreadPoolExecutor(2) as pool, memory.connections.writing() as db, write_transaction(db):
        # A write in progress in this thread: another thread's reader neither waits for
        # the lock nor sees the uncommitted row.
        db.execute("UPDATE episodes SET status = 'undone'")
        assert pool.submit(lambda: memory.stats().episodes).result(timeout=30) == episodes
        assert pool.submit(lambda: len(memory.recall("billing", kind="fact").results)).result(timeout=30) > 0
    assert memory.stats().episodes == 0  # committed now, and the opening thread sees it
    memory.close()


def test_calls_from_many_threads_at_once_give_the_answers_one_thread_gives(tmp_path):
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    memory.ingest([FIXTURE], IngestOptions())
    kinds = ("recall", "history", "episodes")

    def read(n: int) -> tuple[str, object]:
        """One of three reads, as what it says (fact versions get new ids when redone)."""
        kind = kinds[n % 3]
        if kind == "recall":
            found = memory.recall("which database does billing use", as_of="2024-03-01T00:00:00.000000Z", kind="fact").results
            return kind, [(f.object, f.valid_at, f.invalid_at, f.status, f.episodes) for f in found]
        if kind == "history":
            return kind, [(s.predicate, f.object, f.valid_at, f.invalid_at, f.status)
                          for s in memory.history("billing").slots for f in s.facts]
        return kind, [e.to_json() for e in memory.episodes()]

    expected = [read(n) for n in range(3)]
    ids = [e.id for e in memory.episodes()]

    def undo_and_redo(episode_id: str) -> bool:
        # Writes from worker threads take turns on the one writer; each leaves the store as it found it.
        undone = memory.undo([episode_id], apply=True)
        redone = memory.undo([undone.operation_id], apply=True)
        return undone.applied and redone.applied

    with ThreadPoolExecutor(6) as pool:
        writes = [pool.submit(undo_and_redo, episode_id) for episode_id in ids[:3]]
        reads = [pool.submit(read, n) for n in range(60)]
        assert all(write.result(timeout=60) for write in writes)
        results = [read.result(timeout=60) for read in reads]
    assert {kind for kind, _ in results} == set(kinds)  # every kind of read answered, none raised
    # Once the writes are done, every thread reads the state the opening thread started from.
    with ThreadPoolExecutor(3) as pool:
        assert [pool.submit(read, n).result(timeout=30) for n in range(3)] == expected
    memory.close()


def test_an_in_memory_database_is_shared_by_every_thread(clock):
    memory = Memory.open(":memory:", clock)
    memory.ingest([FIXTURE], IngestOptions())
    with ThreadPoolExecutor(4) as pool:
        counts = list(pool.map(lambda _: memory.stats().episodes, range(8)))
        undone = pool.submit(lambda: memory.undo([memory.episodes()[0].id], apply=True)).result(timeout=30)
    assert undone.applied and counts == [5] * 8 and memory.stats().episodes == 4
    memory.close()


def test_a_process_that_only_reads_opens_no_writer_and_imports_no_sqlite_utils(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "m.db"
    Memory.open(path).ingest([FIXTURE], IngestOptions())
    probe = ("import sys; from memctl.memory import Memory; memory = Memory.open(sys.argv[1]); "
             "found = memory.recall('billing database', kind='fact').results; memory.stats(); "
             "print(bool(found), 'sqlite_utils' in sys.modules, memory.connections._writer is None)")
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False", "True"]


def test_a_reader_on_a_file_that_is_not_migrated_yet_migrates_it_first(tmp_path):
    import sqlite3

    path = tmp_path / "fresh.db"
    sqlite3.connect(path).close()  # an empty file: no schema at all
    memory = Memory.open(path)
    assert memory.stats().episodes == 0 and memory.recall("anything").results == []
    memory.close()


def test_an_undo_orders_its_episodes_latest_first_and_names_those_gone_or_undone(tmp_path):
    """What an undo looks up first: its episodes, latest first; one undone is named so,
    and one purged by another process since it was named is named purged, not undone again."""
    from memctl.store.episodes import latest_first

    memory = Memory.open(tmp_path / "m.db", FakeClock())
    memory.ingest([FIXTURE], IngestOptions())
    episodes = memory.episodes()
    memory.undo([episodes[0].id], apply=True)
    named = [e.id for e in episodes] + ["ep_gone"]
    ordered, inactive = latest_first(memory.db, named)
    by_time = sorted(episodes, key=lambda e: (e.reference_time, e.id), reverse=True)
    assert ordered == [e.id for e in by_time] and inactive == {episodes[0].id: "undone", "ep_gone": "purged"}
    memory.close()


def test_an_undo_reads_its_episodes_before_the_lock_and_again_if_another_writer_committed_since(tmp_path, monkeypatch):
    """Undo looks its episodes up before taking the write lock (for a whole ingest that is
    seconds of lookups); another process's commit in between must not be missed: the
    episode it undid is reported as undone already, and undoing this undo leaves it so."""
    from memctl import undo as undo_module

    memory, other = Memory.open(tmp_path / "m.db", FakeClock()), Memory.open(tmp_path / "m.db", FakeClock())
    memory.ingest([FIXTURE], IngestOptions())
    first, second = [e.id for e in memory.episodes()][:2]
    read = undo_module.latest_first
    calls = []

    def read_then_another_writer_commits(db, episode_ids):
        found = read(db, episode_ids)
        calls.append(len(episode_ids))
        if len(calls) == 1:
            other.undo([first], apply=True)  # between this undo's look-up and its lock
        return found

    monkeypatch.setattr(undo_module, "latest_first", read_then_another_writer_commits)
    plan = memory.undo([first, second], apply=True)
    assert plan.episodes == [second] and plan.already_undone == [first]
    assert len(calls) == 3, "the other undo's look-up, and this one's again under the lock"
    monkeypatch.setattr(undo_module, "latest_first", read)
    assert memory.undo([plan.operation_id], apply=True).episodes == [second]
    assert {e.id: e.status for e in memory.episodes()}[first] == "undone"
    memory.close()
    other.close()
