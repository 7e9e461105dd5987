"""Invariant 5 (a crash keeps every episode fully in or fully out, and running the same
command again finishes the job) and several writers sharing one database.

An undo commits a batch of episodes per transaction (``UNDO_FIRST_BATCH`` first, then
sized by time), so a long purge lets another writer in between its batches, and a kill
keeps what its batches committed.

Everything here drives the real CLI in subprocesses, as a user or a cron job would,
and looks at the database file directly with sqlite3 in between: read-only while a
writer runs, ``query_only`` once nobody does.

An ingest commits a batch of ``BATCH_EPISODES`` (2,000) episodes at first, then more
while each stays short, or whatever was parsed within ``BATCH_SECONDS``, per
transaction, so the files here are a few batches long: that is what lets kills land
before, inside and between batch transactions, and concurrent writers take turns more
than once.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import random
import signal
import sqlite3
import struct
import subprocess
import sys
import time
import traceback
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memctl.ingest import BATCH_EPISODES
from memctl.undo import PREVIEW_ON_A_COPY, UNDO_FIRST_BATCH

RUN_TIMEOUT = 120  # seconds; a generous bound for any single CLI run
POLL_INTERVAL = 0.005


# --- input ------------------------------------------------------------------------------


def write_facts_file(path: Path, n: int, *, seed: int, tag: str) -> dict[str, int]:
    """A --format facts JSONL file of ``n`` episodes; returns source_id -> number of facts.

    Subjects come from a sliding window (so neighbouring episodes, and files generated
    with another seed, write to the same slots) plus one hot subject that every batch
    touches; objects drift over time, so later values supersede earlier ones, while
    restatements of the current value merge into one fact. A few facts carry an
    earlier explicit start or are retractions.
    """
    rng = random.Random(seed)
    start = datetime(2020, 1, 1, tzinfo=UTC)

    def iso(hours: int) -> str:
        return (start + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")

    expected: dict[str, int] = {}
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            k = 1 + rng.randrange(3)
            facts = []
            for _ in range(k):
                era = i // 150 + (rng.random() < 0.1)
                subject = f"svc {i // 25 + rng.randrange(8)}"
                roll = rng.random()
                if roll < 0.05:
                    fact = {"subject": "platform", "predicate": rng.choice(["owner", "region"]), "object": f"v{era % 4}"}
                elif roll < 0.07:
                    fact = {"subject": subject, "predicate": "owner", "object": f"obj {era % 5}", "retracted": True}
                else:
                    predicate = rng.choice(["primary database", "owner", "uses"])
                    fact = {"subject": subject, "predicate": predicate, "object": f"obj {era % 5}"}
                    if predicate == "uses":
                        fact["cardinality"] = "many"
                    elif rng.random() < 0.1:
                        fact["valid_at"] = iso(max(0, i - rng.randrange(200)))
                facts.append(fact)
            source_id = f"{tag}-{i:05d}"
            expected[source_id] = k
            handle.write(json.dumps({"reference_time": iso(i), "source_id": source_id, "facts": facts}) + "\n")
    return expected


# --- running memctl -----------------------------------------------------------------------


def ingest_command(db: Path, *files: Path, json_output: bool = False) -> list[str]:
    return [sys.executable, "-m", "memctl", "--db", str(db), "ingest", *map(str, files),
            *(["--json"] if json_output else [])]


def run_memctl(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memctl", "--db", str(db), *args],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT)


def run_together(commands: list[list[str]]) -> list[tuple[int, str, str]]:
    """Start every command before waiting on any; (returncode, stdout, stderr) of each."""
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    results = []
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail(f"{proc.args} did not finish within {RUN_TIMEOUT}s")
            results.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    return results


def assert_rebuild_changes_nothing(db: Path) -> None:
    result = run_memctl(db, "rebuild", "--json")
    wal = db.with_name(db.name + "-wal")
    if db.stat().st_size == 0 and not (wal.exists() and wal.stat().st_size):
        # Killed before its first commit: an empty file, which holds no memory yet.
        assert result.returncode == 2 and "no memory at" in result.stderr, result.stderr
        return
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["facts_created"] == 0 and data["facts_expired"] == 0, f"facts disagree with the assertions: {data}"


def stats(db: Path) -> dict:
    result = run_memctl(db, "stats", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# --- looking at the database ------------------------------------------------------------------


def read_only(db: Path) -> sqlite3.Connection:
    """For watching a database another process is writing."""
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def query_only(db: Path) -> sqlite3.Connection:
    """For looking at a database nobody is writing, e.g. right after a kill.

    Not ``mode=ro``: a process killed while still in rollback-journal mode (before its
    switch to WAL) leaves a hot journal, which only a connection that may write can roll
    back, exactly as memctl's next open would. query_only keeps this connection from
    changing any data itself.
    """
    conn = sqlite3.connect(f"file:{db}?mode=rw", uri=True, timeout=30)
    conn.execute("PRAGMA query_only = 1")
    return conn


def episode_count(db: Path) -> int:
    """Committed episodes, as another process sees them; 0 before the schema exists."""
    if not db.exists():
        return 0
    try:
        conn = read_only(db)
        try:
            return conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:  # no such table yet, or the file is still being created
        return 0


_FLOCK = "hhqqi4x"  # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid
_WAL_WRITE_LOCK_BYTE = 120  # WALINDEX_LOCK_OFFSET + WAL_WRITE_LOCK in the -shm file


def writer_in_transaction(db: Path) -> bool | None:
    """Whether some process holds the WAL write lock, i.e. is inside a write transaction.

    Asks the kernel (F_GETLK) who holds SQLite's lock byte in the -shm file, which takes
    no lock and changes nothing. None where that cannot be asked.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        fd = os.open(f"{db}-shm", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        probe = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, _WAL_WRITE_LOCK_BYTE, 1, 0)
        return struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, probe))[0] != fcntl.F_UNLCK
    finally:
        os.close(fd)


def table_exists(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [name]).fetchone() is not None


def check_whole_episodes(db: Path, expected: dict[str, int]) -> int:
    """Every stored episode is whole and stored once; returns how many are stored."""
    if not db.exists():
        return 0
    conn = query_only(db)
    try:
        if not table_exists(conn, "episodes"):
            return 0  # killed before or during the migration: nothing was written
        rows = conn.execute(
            """SELECT e.id, e.source_id, e.position, e.status, count(a.id), coalesce(max(a.ordinal), -1)
               FROM episodes e LEFT JOIN assertions a ON a.episode_id = e.id
               GROUP BY e.id"""
        ).fetchall()
        for episode_id, source_id, position, status, assertions, max_ordinal in rows:
            assert source_id in expected, f"episode {episode_id} has an unknown source_id {source_id!r}"
            assert assertions == expected[source_id], (
                f"episode {episode_id} ({source_id}, line {position}) has {assertions} assertions but its line "
                f"has {expected[source_id]} facts: a partial episode"
            )
            assert max_ordinal == assertions - 1, f"episode {episode_id} has gaps in its assertion ordinals"
            assert status == "active", f"episode {episode_id} is {status}"
        total, places, source_ids = conn.execute(
            "SELECT count(*), count(DISTINCT source || char(31) || position), count(DISTINCT source_id) FROM episodes"
        ).fetchone()
        assert total == places == source_ids == len(rows), (
            f"duplicate episodes: {total} rows, {places} distinct (source, position), {source_ids} distinct source_id"
        )
        orphans = conn.execute("SELECT count(*) FROM assertions WHERE episode_id NOT IN (SELECT id FROM episodes)").fetchone()[0]
        assert orphans == 0, f"{orphans} assertions belong to no stored episode"
        return total
    finally:
        conn.close()


def stored_positions(db: Path) -> list[int]:
    conn = query_only(db)
    try:
        return [row[0] for row in conn.execute("SELECT position FROM episodes ORDER BY position")]
    finally:
        conn.close()


def done_ingests(db: Path) -> set[str]:
    if not db.exists():
        return set()
    conn = query_only(db)
    try:
        if not table_exists(conn, "operations"):
            return set()
        return {row[0] for row in conn.execute("SELECT id FROM operations WHERE kind = 'ingest' AND status = 'done'")}
    finally:
        conn.close()


def snapshot(db: Path) -> dict:
    """Row counts of every table, and the transaction clock."""
    conn = query_only(db)
    try:
        tables = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        counts = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
        counts["clock"] = conn.execute("SELECT last_at FROM clock").fetchall()
        return counts
    finally:
        conn.close()


# --- invariant 5: SIGKILL mid-ingest ----------------------------------------------------------


def test_sigkill_mid_ingest_leaves_whole_episodes_and_rerun_completes(tmp_path):
    n = 3 * BATCH_EPISODES + 1000  # three batch transactions or more: 2,000, 4,000 if that was quick, the rest
    source = tmp_path / "big.facts.jsonl"
    expected = write_facts_file(source, n, seed=5, tag="big")
    db = tmp_path / "memory.db"
    command = ingest_command(db, source)

    # Each run resumes the previous one. (threshold, where): wait until at least
    # `threshold` episodes are committed, and more than when the run started (so each
    # run makes progress), then kill right away ("after commit": while the next batch
    # is parsed) or once the writer is inside its next write transaction. threshold
    # None: kill as soon as the database file appears (during the schema migration).
    kill_points = [(None, "at start"), (1, "in transaction"), (n // 3, "after commit"), (2 * n // 3, "in transaction")]
    outcomes = []
    for threshold, where in kill_points:
        before = episode_count(db)
        done_before = done_ingests(db)
        stderr_path = tmp_path / f"stderr-{len(outcomes)}.txt"
        with open(stderr_path, "w") as stderr:
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
            try:
                deadline = time.monotonic() + RUN_TIMEOUT
                target = None if threshold is None else max(threshold, before + 1)
                while proc.poll() is None and not (db.exists() if target is None else episode_count(db) >= target):
                    if time.monotonic() > deadline:
                        pytest.fail(f"{target} episodes not committed within {RUN_TIMEOUT}s")
                    time.sleep(POLL_INTERVAL)
                if where == "in transaction":
                    while proc.poll() is None and writer_in_transaction(db) is False:
                        if time.monotonic() > deadline:
                            pytest.fail(f"no write transaction began within {RUN_TIMEOUT}s")
                        time.sleep(0.001)
                    time.sleep(0.05)  # some of the batch is written, none of it committed
                proc.kill()  # a no-op if it has finished already
            finally:
                if proc.poll() is None:
                    proc.kill()
                returncode = proc.wait(timeout=30)
        # Killed, or finished before the kill arrived (fine at this point); nothing else.
        assert returncode in (-signal.SIGKILL, 0), (returncode, stderr_path.read_text())
        killed = returncode == -signal.SIGKILL

        stored = check_whole_episodes(db, expected)
        outcomes.append((threshold, where, "killed" if killed else "finished", before, stored))
        # Batches commit in file order, so what is stored is the start of the file.
        assert stored == 0 or stored_positions(db) == list(range(1, stored + 1)), outcomes
        if killed:
            assert done_ingests(db) == done_before, f"a killed ingest says it is done: {outcomes}"
        assert_rebuild_changes_nothing(db)  # (this also migrates a database killed before that)
        assert check_whole_episodes(db, expected) == stored

    mid_ingest = [o for o in outcomes if o[2] == "killed" and 0 < o[4] < n]
    assert mid_ingest, f"no kill landed mid-ingest: {outcomes}"

    # Running the same command again finishes the job.
    before = episode_count(db)
    done = subprocess.run(ingest_command(db, source, json_output=True), capture_output=True, text=True,
                          timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["episodes"], report["added"], report["already_present"], report["reactivated"]) == (
        n, n - before, before, 0), outcomes

    assert check_whole_episodes(db, expected) == n
    assert stored_positions(db) == list(range(1, n + 1))
    if before < n:
        assert report["operation_id"] in done_ingests(db), outcomes
    else:  # the last run was killed deriving, after its last batch: there was nothing left to add
        assert report["operation_id"] is None, outcomes
    # The killed runs that got as far as their journal row are no longer "running": the
    # next writer saw their processes gone (issue 14, item 6).
    statuses = [row[0] for row in read_only(db).execute("SELECT status FROM operations WHERE kind = 'ingest'")]
    assert "running" not in statuses and statuses.count("interrupted") >= 1, (statuses, outcomes)
    counts = stats(db)
    assert (counts["episodes"], counts["episodes_undone"], counts["assertions"]) == (n, 0, sum(expected.values()))
    assert_rebuild_changes_nothing(db)


# --- several writers --------------------------------------------------------------------------


def test_two_processes_ingest_concurrently(tmp_path):
    n = BATCH_EPISODES + 1000  # two transactions each, so the writers take turns
    first, second = tmp_path / "first.facts.jsonl", tmp_path / "second.facts.jsonl"
    expected = write_facts_file(first, n, seed=11, tag="first")
    expected.update(write_facts_file(second, n, seed=12, tag="second"))  # the same subjects: the same slots
    db = tmp_path / "shared.db"  # fresh: both processes race the migration too

    results = run_together([ingest_command(db, first, json_output=True), ingest_command(db, second, json_output=True)])
    for returncode, out, err in results:
        assert returncode == 0, err
        report = json.loads(out)
        assert (report["added"], report["already_present"]) == (n, 0)

    assert check_whole_episodes(db, expected) == 2 * n
    conn = query_only(db)
    try:
        by_source = dict(conn.execute("SELECT source, count(*) FROM episodes GROUP BY source").fetchall())
        migrations = conn.execute("SELECT name, count(*) FROM _sqlite_migrations GROUP BY name").fetchall()
        times = [row[0] for row in conn.execute("SELECT DISTINCT created_at FROM episodes")]
    finally:
        conn.close()
    assert by_source == {str(first.resolve()): n, str(second.resolve()): n}
    assert migrations and all(count == 1 for _, count in migrations), f"a migration ran twice: {migrations}"
    assert len(times) >= 4, "each batch is its own transaction with its own time"
    counts = stats(db)
    assert (counts["episodes"], counts["assertions"]) == (2 * n, sum(expected.values()))
    assert_rebuild_changes_nothing(db)


def test_two_processes_ingest_the_same_file_at_once(tmp_path):
    n = BATCH_EPISODES + 1000
    source = tmp_path / "same.facts.jsonl"
    expected = write_facts_file(source, n, seed=21, tag="same")
    db = tmp_path / "same.db"

    results = run_together([ingest_command(db, source, json_output=True)] * 2)
    reports = []
    for returncode, out, err in results:
        assert returncode == 0, err
        reports.append(json.loads(out))
    # Each episode was stored by exactly one of them; the other found it present.
    assert sum(r["added"] for r in reports) == n
    assert sum(r["already_present"] for r in reports) == n

    assert check_whole_episodes(db, expected) == n
    counts = stats(db)
    assert (counts["episodes"], counts["assertions"]) == (n, sum(expected.values()))
    assert_rebuild_changes_nothing(db)


def _cli_in_forked_child(argv: list[str], barrier, output: str) -> None:
    """Run the CLI entry point in a forked child, in step with its siblings.

    The children wait for each other right after connecting to the database file, so
    that they set it up at the same moment rather than whenever each gets there.
    """
    sys.stdout = sys.stderr = open(output, "w", buffering=1)
    os.dup2(sys.stdout.fileno(), 1)
    os.dup2(sys.stdout.fileno(), 2)
    sys.argv = ["memctl", *argv]
    from memctl.entry import main

    connect = sqlite3.connect

    def connect_in_step(*args, **kwargs):
        conn = connect(*args, **kwargs)
        barrier.wait(timeout=30)
        return conn

    sqlite3.connect = connect_in_step
    code = 0
    try:
        main()
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 98
    sys.stdout.flush()
    os._exit(code)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_simultaneous_first_opens_of_a_fresh_database(tmp_path):
    """Two ``memctl ingest`` runs that set up a brand-new database at the same moment.

    Separate interpreters rarely reach the database within the same millisecond, so
    test_two_processes_ingest_concurrently only rarely hits this window. Here the CLI
    entry point (``memctl.entry.main``) runs in two forked children that wait for each
    other right after connecting, round after round on fresh files; every run must
    succeed, as the busy timeout promises.
    """
    import memctl.cli  # noqa: F401  (imported before forking, so the children start at once)
    import memctl.entry  # noqa: F401

    source = tmp_path / "one.facts.jsonl"
    source.write_text(json.dumps({"reference_time": "2024-01-01", "source_id": "one",
                                  "facts": [{"subject": "billing", "predicate": "uses", "object": "Postgres"}]}) + "\n")
    context = multiprocessing.get_context("fork")
    # A round (~0.1 s) hits the window in about 1 of 20 tries on 2 cores; 80 rounds
    # catch it with ~98% probability.
    deadline = time.monotonic() + 9
    for round_number in range(80):
        if time.monotonic() > deadline:
            break
        db = tmp_path / f"fresh-{round_number}.db"
        barrier = context.Barrier(2)
        outputs = [tmp_path / f"out-{round_number}-{i}.txt" for i in range(2)]
        children = [context.Process(target=_cli_in_forked_child,
                                    args=(["--db", str(db), "ingest", str(source)], barrier, str(out)))
                    for out in outputs]
        try:
            for child in children:
                child.start()
            for child in children:
                child.join(timeout=RUN_TIMEOUT)
                if child.exitcode is None:
                    pytest.fail(f"round {round_number}: an ingest did not finish within {RUN_TIMEOUT}s")
        finally:
            for child in children:
                if child.exitcode is None and child.pid is not None:
                    child.kill()
                    child.join(timeout=10)
        failures = [(child.exitcode, out.read_text().strip().splitlines()[-1:])
                    for child, out in zip(children, outputs) if child.exitcode != 0]
        assert not failures, f"round {round_number}: simultaneous first opens failed: {failures}"
        assert check_whole_episodes(db, {"one": 1}) == 1
        for leftover in [*tmp_path.glob(f"{db.name}*"), *outputs]:
            leftover.unlink()


# --- bad input writes nothing -------------------------------------------------------------------


@pytest.mark.parametrize("bad_line, lines", [(3, 5), (BATCH_EPISODES + 3, BATCH_EPISODES + 10)])
def test_bad_line_leaves_existing_database_untouched(tmp_path, bad_line, lines):
    db = tmp_path / "memory.db"
    good = tmp_path / "good.facts.jsonl"
    write_facts_file(good, 40, seed=31, tag="good")
    first = run_memctl(db, "ingest", str(good))
    assert first.returncode == 0, first.stderr
    before = snapshot(db)
    assert before["episodes"] == 40 and before["assertions"] > 0

    # A bad line after a whole batch's worth of good ones must not let that batch in.
    bad = tmp_path / "bad.facts.jsonl"
    write_facts_file(bad, lines, seed=32, tag="bad")
    text = bad.read_text().splitlines(keepends=True)
    text[bad_line - 1] = '{"reference_time": "2024-01-01", "facts": [ this is not JSON\n'
    bad.write_text("".join(text))

    result = run_memctl(db, "ingest", str(bad))
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.endswith("\n"), result.stderr
    assert result.stderr.startswith("memctl: error: "), result.stderr
    assert f"{bad.resolve()}:{bad_line}:" in result.stderr, result.stderr

    assert snapshot(db) == before


# --- a retry whose model is down -------------------------------------------------------------


def test_a_retry_whose_model_is_down_changes_nothing_killed_or_finished(tmp_path):
    """Issue 14, item 1 under a kill: retrying with a model that answers only 503 must
    leave every assertion and fact as it was, whether the process is killed while it
    waits on the model or runs to its end (exit 1, one line)."""
    from tests.conftest import write_jsonl
    from tests.fake_llm import API_KEY, FakeOpenAIServer

    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": f"Service{i} uses Kafka since 3 March 2024.", "timestamp": f"2024-03-{i + 1:02d}T10:00:00Z"}
        for i in range(12)])
    db = tmp_path / "memory.db"
    stored = run_memctl(db, "ingest", str(chat), "--extractor", "rules", "--json")
    assert stored.returncode == 0, stored.stderr
    operation = json.loads(stored.stdout)["operation_id"]

    def state() -> tuple:
        with query_only(db) as conn:
            return (conn.execute("SELECT * FROM assertions ORDER BY id").fetchall(),
                    conn.execute("SELECT * FROM facts ORDER BY id").fetchall(),
                    conn.execute("SELECT id, extraction FROM episodes ORDER BY id").fetchall())

    before = state()
    assert before[0], "the rules extractor found nothing to protect"
    with FakeOpenAIServer(datetime.now(UTC), latency=0.05) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": API_KEY}
        # --timeout 2: each call gives up after 2 s of 503s rather than the whole backoff (70 s for the test)
        command = [sys.executable, "-m", "memctl", "--db", str(db), "retry", operation, "--extractor", "llm",
                   "--model", "fake-down", "--concurrency", "2", "--timeout", "2"]
        killed = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + RUN_TIMEOUT
        while server.calls < 3 and killed.poll() is None and time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL)
        killed.kill()
        killed.wait(timeout=30)
        assert state() == before
        finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert finished.returncode == 1, finished.stderr
    assert finished.stderr.count("\n") == 1 and "extraction failed for 12 episode(s)" in finished.stderr
    assert state() == before
    assert_rebuild_changes_nothing(db)


# --- a long purge beside another writer, and killed -------------------------------------------


def undo_rows(db: Path) -> list[tuple[str, str | None, str]]:
    """(at, finished_at, status) of each undo in the journal, as another process sees it."""
    try:
        conn = read_only(db)
        try:
            return conn.execute("SELECT at, finished_at, status FROM operations WHERE kind = 'undo'").fetchall()
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return []


def start_long_purge(tmp_path: Path, seed: int) -> tuple[Path, str, dict[str, int], subprocess.Popen]:
    """A store of a few undo batches' worth of episodes, and `undo --purge --apply` of
    their ingest started on it, once its first batch has committed."""
    n = 26 * UNDO_FIRST_BATCH  # batches of 250, 500, 1,000, ... growing while each stays short: five or more
    source = tmp_path / "old.facts.jsonl"
    expected = write_facts_file(source, n, seed=seed, tag="old")
    db = tmp_path / "m.db"
    stored = run_memctl(db, "ingest", str(source), "--json")
    assert stored.returncode == 0, stored.stderr
    operation = json.loads(stored.stdout)["operation_id"]
    purge = subprocess.Popen([sys.executable, "-m", "memctl", "--db", str(db), "undo", operation, "--purge", "--apply",
                              "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + RUN_TIMEOUT
    while not undo_rows(db) and purge.poll() is None and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL)
    return db, operation, expected, purge


def test_a_long_purge_commits_in_batches_and_a_concurrent_ingest_gets_in_between(tmp_path):
    # The ingest takes the lock twice (opening the file, then its batch), and each time the
    # purge lets it in at its next batch's start, as it waits with its hand up
    # (store.turns). When a long operation paused for 150 ms once it had run 1.5 s instead,
    # whether anyone waited or not, this 2 s purge left the ingest no gap 1 run in 4.
    db, _, _, purge = start_long_purge(tmp_path, seed=21)
    new = tmp_path / "new.facts.jsonl"
    expected = write_facts_file(new, 300, seed=22, tag="new")  # the same subjects: the same slots
    ingested = run_memctl(db, "ingest", str(new), "--json")
    out, err = purge.communicate(timeout=RUN_TIMEOUT)
    assert purge.returncode == 0, err
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(out)["applied"]
    # The ingest did not wait for the whole purge: it committed between two of its batches.
    ((undo_at, undo_finished, status),) = undo_rows(db)
    conn = query_only(db)
    try:
        ingest_at, ingest_finished = conn.execute(
            "SELECT at, finished_at FROM operations WHERE kind = 'ingest' AND command LIKE ?", [f"%{new.name}%"]
        ).fetchone()
    finally:
        conn.close()
    assert status == "done" and undo_at < ingest_at <= ingest_finished < undo_finished
    # All that is left is the new file's episodes, each whole, and facts agree with them.
    assert check_whole_episodes(db, expected) == 300
    assert_rebuild_changes_nothing(db)


def test_sigkill_mid_purge_leaves_whole_episodes_and_rerun_completes(tmp_path):
    db, operation, expected, purge = start_long_purge(tmp_path, seed=23)
    time.sleep(random.uniform(0, 1))  # somewhere in a later batch, or between two
    purge.send_signal(signal.SIGKILL)
    purge.wait(timeout=RUN_TIMEOUT)
    left = check_whole_episodes(db, expected)  # every episode left is whole
    assert left < len(expected), "the first batch was committed before the kill"
    assert_rebuild_changes_nothing(db)
    again = run_memctl(db, "undo", operation, "--purge", "--apply", "--json")
    if left:
        assert again.returncode == 0, again.stderr
        assert len(json.loads(again.stdout)["episodes"]) == left
    assert check_whole_episodes(db, expected) == 0
    assert_rebuild_changes_nothing(db)


def test_a_long_undo_is_previewed_on_a_copy_without_taking_the_write_lock(tmp_path):
    n = PREVIEW_ON_A_COPY + 500
    source = tmp_path / "old.facts.jsonl"
    write_facts_file(source, n, seed=25, tag="old")
    db = tmp_path / "m.db"
    stored = run_memctl(db, "ingest", str(source), "--json")
    assert stored.returncode == 0, stored.stderr
    operation = json.loads(stored.stdout)["operation_id"]
    before = snapshot(db)
    output = tmp_path / "plan.json"
    with open(output, "w") as out:  # a file, not a pipe: the plan is big, and nobody reads it meanwhile
        preview = subprocess.Popen([sys.executable, "-m", "memctl", "--db", str(db), "undo", operation, "--purge",
                                    "--json"], stdout=out, stderr=subprocess.PIPE, text=True)
        # Watched while the copy exists: closing the file at the end may checkpoint the
        # log, which takes the lock for a moment, as any command's last close does.
        copied = locked = False
        while preview.poll() is None:
            if any(tmp_path.glob(".memctl-preview-*")):
                copied = True
                locked = locked or bool(writer_in_transaction(db))
            time.sleep(POLL_INTERVAL)
    assert preview.returncode == 0, preview.stderr.read() if preview.stderr else ""
    plan = json.loads(output.read_text())
    assert not plan["applied"] and len(plan["episodes"]) == n and plan["removed"]
    assert copied and not locked, "the preview held the write lock: another writer would have waited for it"
    assert snapshot(db) == before, "a preview changed the database"
    assert not list(tmp_path.glob(".memctl-preview-*")), "the copy was left behind"


def test_sigterm_mid_ingest_is_answered_as_ctrl_c(tmp_path):
    """Issue 30: a SIGTERM (a service manager, an agent stopping memctl) exits 143 saying
    so, leaves whole episodes, and marks the operation interrupted at once, not `running`
    until the next writer opens the file; the same command then finishes the job."""
    n = 3 * BATCH_EPISODES + 1000
    source = tmp_path / "big.facts.jsonl"
    expected = write_facts_file(source, n, seed=9, tag="term")
    db = tmp_path / "memory.db"
    proc = subprocess.Popen(ingest_command(db, source), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + RUN_TIMEOUT
    while proc.poll() is None and episode_count(db) < 1:
        if time.monotonic() > deadline:
            pytest.fail(f"no episode committed within {RUN_TIMEOUT}s")
        time.sleep(POLL_INTERVAL)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=RUN_TIMEOUT)
    if proc.returncode == 0:
        pytest.skip("the ingest finished before the signal came")
    assert proc.returncode == 143 and err.strip().splitlines()[-1].startswith("memctl: terminated:")
    assert "Traceback" not in err
    conn = query_only(db)
    try:
        statuses = [row[0] for row in conn.execute("SELECT status FROM operations WHERE kind = 'ingest'")]
    finally:
        conn.close()
    assert statuses == ["interrupted"]
    finished = run_memctl(db, "ingest", str(source))
    assert finished.returncode == 0, finished.stderr
    assert episode_count(db) == len(expected)
