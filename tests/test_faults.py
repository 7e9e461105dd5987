"""Nothing lost under faults, and errors a user can act on (issue 14)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memctl.extract import Result
from tests.conftest import needs_realdata, open_store, write_jsonl

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"


class FailsEverything:
    """An extractor whose every call fails (a 429 storm, a model answering nonsense)."""

    name = "test:fails"

    def extract(self, requests):
        for request in requests:
            yield request, Result(error="HTTP 429 after 4 tries", calls=4)


def test_an_ingest_whose_extractions_all_failed_says_so_and_exits_1(cli, tmp_path, monkeypatch):
    monkeypatch.setattr("memctl.extract.build_extractor", lambda *args, **kwargs: FailsEverything())
    chat = write_jsonl(tmp_path / "c.jsonl", [
        {"role": "user", "content": "we use Kafka", "timestamp": "2024-03-01T10:00:00Z"},
        {"role": "user", "content": "we use Redis", "timestamp": "2024-03-02T10:00:00Z"}])
    run = cli("ingest", chat, "--extractor", "rules", "--json")
    assert run.code == 1
    assert run.err.count("\n") == 1 and "extraction failed for 2 episode(s)" in run.err and "retry --failed" in run.err
    report = run.json()
    assert report["partial"] is True and report["extraction_failures"] == 2 and report["added"] == 2
    assert "HTTP 429" in report["first_failure"]
    # The episodes are kept, marked failed, for `memctl retry --failed`.
    assert {cli("show", e["id"], "--json").json()["extraction"] for e in cli("episodes", "--json").json()} == {"failed"}


@needs_realdata
def test_a_dry_run_over_every_real_log_folder_shows_a_table_and_exits_as_the_run_would(cli, realdata):
    for folder in sorted(p for p in realdata.iterdir() if p.is_dir()):
        run = cli("ingest", folder, "--dry-run")
        assert run.code == 0, (folder.name, run.err)
        assert "Dry run:" in run.out and "internal error" not in run.err


def test_a_dry_run_of_a_file_with_a_malformed_line_exits_1_as_the_run_would(cli, tmp_path):
    chat = write_jsonl(tmp_path / "c.jsonl", ['{"role": "user", "content": "hi", "timestamp": "2024-03-01T10:00:00Z"}',
                                              "{not json"])
    dry = cli("ingest", chat, "--dry-run")
    assert dry.code == 1 and "Would skip 1" in dry.out
    assert cli("ingest", chat).code == 1


@pytest.mark.parametrize("make", ["directory", "text file", "device", "under a file"])
def test_a_path_that_is_no_database_is_bad_input_naming_it(cli, tmp_path, make):
    target = {"directory": tmp_path, "device": Path("/dev/null"), "text file": tmp_path / "notes.txt",
              "under a file": tmp_path / "notes.txt" / "memory.db"}[make]
    (tmp_path / "notes.txt").write_text("shopping list\n")
    chat = write_jsonl(tmp_path / "c.jsonl", [{"role": "user", "content": "hi", "timestamp": "2024-03-01T10:00:00Z"}])
    for args in (("stats",), ("ingest", chat), ("recall", "hi")):
        run = cli(*args, db=target)
        assert run.code == 2 and run.err.count("\n") == 1 and "internal error" not in run.err, (args, run.err)
        assert str(target) in run.err
    assert (tmp_path / "notes.txt").read_text() == "shopping list\n"


def test_another_programs_sqlite_file_is_refused_and_left_untouched(cli, tmp_path):
    foreign = tmp_path / "app.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.commit()
    conn.close()
    before = foreign.read_bytes()
    for args in (("stats",), ("recall", "ada"), ("ingest", write_jsonl(tmp_path / "c.jsonl", []))):
        run = cli(*args, db=foreign)
        assert run.code == 2 and "another program's SQLite database (tables users)" in run.err, args
    assert foreign.read_bytes() == before and not (tmp_path / "app.db-wal").exists()


def test_a_read_only_command_on_an_empty_file_writes_nothing(cli, tmp_path):
    empty = tmp_path / "empty.db"
    empty.touch()
    for args in (("stats",), ("recall", "x"), ("episodes",), ("facts",)):
        run = cli(*args, db=empty)
        assert run.code == 2 and "no memory at" in run.err, args
    assert empty.stat().st_size == 0
    assert cli("ingest", FIXTURE, db=empty).code == 0  # a writing command makes it a memory


def test_what_sqlite_reports_is_told_in_the_users_words_with_its_exit_code(tmp_path):
    from memctl.entry import exit_code
    from memctl.store.connection import explain

    cases = {"database is locked": (1, "stayed locked"), "database or disk is full": (1, "disk holding"),
             "attempt to write a readonly database": (2, "read-only"), "unable to open database file": (2, "cannot open")}
    for text, (code, words) in cases.items():
        error = explain(sqlite3.OperationalError(text), tmp_path / "m.db")
        assert error is not None and exit_code(error) == code and words in str(error) and "m.db" in str(error)
    assert explain(sqlite3.OperationalError("no such column: nope"), tmp_path / "m.db") is None  # a bug, not the user's


def test_a_write_lock_held_past_the_timeout_is_one_line_and_exit_1(cli, db_path, tmp_path, monkeypatch):
    """Another process holds the write lock (a transaction left open, a stopped process):
    past the timeout a writer gives up in one line, exit 1, on SQLite as on PostgreSQL,
    where a lock is otherwise waited for without end."""
    import memctl.store.connection as connection

    assert cli("ingest", FIXTURE).code == 0
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 200)
    with open_store(db_path) as holder:
        if isinstance(db_path, str):
            from memctl.store.postgres.connection import begin

            begin(holder)
        else:
            holder.execute("BEGIN IMMEDIATE")
        try:
            run = cli("ingest", write_jsonl(tmp_path / "c.jsonl", [
                {"role": "user", "content": "we use Kafka", "timestamp": "2024-03-01T10:00:00Z"}]))
        finally:
            holder.execute("ROLLBACK")
    assert run.code == 1 and run.err.strip().endswith("run it again") and "locked" in run.err, run.err
    assert run.err.count("\n") == 1 and "internal error" not in run.err
    assert cli("stats", "--json").json()["episodes"] == 5  # what was stored before is all there


def test_a_line_nested_thousands_deep_is_skipped_and_the_rest_stored(cli, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    deep = '{"a":' * 2000 + "1" + "}" * 2000
    write_jsonl(folder / "a.jsonl", [{"role": "user", "content": "first", "timestamp": "2024-03-01T10:00:00Z"}, deep,
                                     {"role": "user", "content": "second", "timestamp": "2024-03-02T10:00:00Z"}])
    write_jsonl(folder / "b.jsonl", [{"role": "user", "content": "third", "timestamp": "2024-03-03T10:00:00Z"}])
    (folder / "export.json").write_text("[" * 3000 + "]" * 3000)
    run = cli("ingest", folder, "--json")
    assert run.code == 1 and "a.jsonl:2: " in run.err and "nested too deeply" in run.err
    assert run.json()["added"] == 3 and "internal error" not in run.err
    forced = cli("ingest", folder / "export.json", "--format", "chatgpt")
    assert forced.code == 1 and "export.json" in forced.err and "too deep to read" in forced.err
    # A structured import stays all or nothing (README): the bad line is named, exit 2.
    facts = tmp_path / "f.jsonl"
    facts.write_text('{"reference_time": "2024-01-01", "facts": ' + "[" * 3000 + "]" * 3000 + "}\n")
    run = cli("ingest", facts, "--format", "facts")
    assert run.code == 2 and run.err.count("\n") == 1 and "f.jsonl:1: " in run.err


def test_a_pipe_and_a_link_to_a_device_are_skipped_saying_what_they_are(cli, tmp_path):
    import os

    folder = tmp_path / "logs"
    folder.mkdir()
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    write_jsonl(folder / "ok.jsonl", [{"role": "user", "content": "hi", "timestamp": "2024-03-01T10:00:00Z"}])
    run = cli("ingest", folder, "--json")
    assert run.code == 1 and run.json()["added"] == 1
    assert any("pipe.jsonl: a pipe, not a file" in line for line in run.json()["refused"])
    assert any("zero.jsonl: a device (a link to /dev/zero)" in line for line in run.json()["refused"])
    named = cli("ingest", folder / "zero.jsonl")
    assert named.code == 1 and "a device" in named.err and "no such file" not in named.err


@pytest.mark.parametrize("forced", [None, "jsonl"])
def test_an_unreadable_file_is_reported_and_the_rest_stored(cli, tmp_path, monkeypatch, forced):
    """As root nothing is unreadable by permission, so the file system's answer is faked
    for one file: with or without --format, it is refused by name and the rest is kept."""
    import builtins

    import memctl.sources

    folder = tmp_path / "logs"
    folder.mkdir()
    locked = write_jsonl(folder / "locked.jsonl", [{"role": "user", "content": "a", "timestamp": "2024-03-01T10:00:00Z"}])
    write_jsonl(folder / "ok.jsonl", [{"role": "user", "content": "b", "timestamp": "2024-03-02T10:00:00Z"}])

    def guarded_open(path, *args, **kwargs):
        if Path(path).name == locked.name:
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(memctl.sources, "open", guarded_open, raising=False)
    run = cli("ingest", folder, "--json", *(["--format", forced] if forced else []))
    assert run.code == 1 and run.json()["added"] == 1
    assert [line for line in run.json()["refused"] if "locked.jsonl: cannot be read: Permission denied" in line]


def test_a_claude_code_file_whose_first_line_has_a_bad_byte_is_read_and_the_line_reported(cli, tmp_path):
    from tests.test_source_claude_code import assistant, text, user

    lines = [user("u1", None, "2025-03-01T09:00:00Z", "we use Kafka \udcff"),
             user("u2", None, "2025-03-01T10:00:00Z", "and Redis"),
             assistant("a2", "u2", "2025-03-01T10:00:05Z", "m2", text("Noted."))]
    path = tmp_path / "session.jsonl"
    encoded = [json.dumps(line, ensure_ascii=False).encode("utf-8", "surrogateescape") for line in lines]
    path.write_bytes(b"\n".join(encoded) + b"\n")
    run = cli("ingest", path, "--json")
    assert run.code == 1 and run.json()["formats"] == {"claude-code": 1} and run.json()["added"] == 1
    assert "session.jsonl:1: " in run.err and "utf-8" in run.err


@pytest.mark.parametrize(("name", "forced", "content"), [
    ("archive.md", None, b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)) * 4),
    ("photo.txt", None, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4),
    ("blob.bin", "text", b"\x00\x01\x02 not text at all \x00" * 100),
    ("latin.jsonl", "jsonl", bytes(range(128, 256)) * 40),
])
def test_binary_content_is_refused_not_stored_as_notes(cli, tmp_path, name, forced, content):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / name).write_bytes(content)
    (folder / "real.md").write_text("We moved billing to Postgres.")
    args = ["--format", forced] if forced else []
    run = cli("ingest", folder, "--reference-time", "2024-05-01", "--json", *args)
    assert run.code == 1, run.err
    refused = [line for line in run.json()["refused"] if "real.md" not in line]
    assert len(refused) == 1 and name in refused[0] and "binary content" in refused[0]
    assert run.err.count(f"{name}:") == 1  # one line for the file, not one per line of noise
    stored = cli("episodes", "--json").json()
    assert name not in {Path(e["source"]).name for e in stored}
    assert forced == "jsonl" or {Path(e["source"]).name for e in stored} == {"real.md"}
    preview = cli("ingest", folder / name, "--reference-time", "2024-05-01", "--dry-run", "--json", *args)
    assert preview.code == 1 and "binary content" in preview.out


def test_a_text_note_with_a_few_odd_bytes_is_still_read(cli, tmp_path):
    note = tmp_path / "cafe.txt"
    note.write_bytes(b"Meeting at the caf" + b"\xe9 on Friday; we chose Postgres.\n" * 3)
    run = cli("ingest", note, "--reference-time", "2024-05-01", "--json")
    assert run.code == 0 and run.json()["added"] == 1


def test_malformed_lines_are_summed_by_kind(cli, tmp_path):
    chat = tmp_path / "c.jsonl"
    lines = [json.dumps({"role": "user", "content": "hello", "timestamp": "2024-03-01T10:00:00Z"})]
    lines += [f'{{"role": "user", "content": "broken {i}"' for i in range(30)]  # truncated records
    lines += [json.dumps({"role": f"bot{i}", "content": "x"}) for i in range(5)]
    chat.write_text("\n".join(lines) + "\n")
    run = cli("ingest", chat, "--json")
    assert run.code == 1
    skipped = run.json()["skipped"]
    assert skipped == {"bad JSON": 30, "unknown role": 5} or skipped.get("bad JSON") == 30, skipped
    assert len(run.json()["malformed"]) == 35  # each one still listed whole
    table = cli("ingest", chat).out
    assert sum(1 for line in table.splitlines() if line.startswith("skipped:")) <= 3


def test_ctrl_c_exits_130_saying_what_was_kept_and_the_operation_is_interrupted(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    big = tmp_path / "big.jsonl"
    with big.open("w") as out:
        for i in range(150_000):
            out.write(json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"service {i} uses Kafka",
                                  "timestamp": f"2024-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z"}) + "\n")
    db = tmp_path / "m.db"
    proc = subprocess.Popen([sys.executable, "-m", "memctl", "--db", str(db), "ingest", str(big), "--extractor", "rules"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # a shell's background job ignores SIGINT; the test must not inherit that
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                    if conn.execute("SELECT count(*) FROM operations").fetchone()[0]:
                        break
            except sqlite3.OperationalError:
                pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the ingest finished before the interrupt landed")
    assert proc.returncode == 130, err
    assert "interrupted: what was written before is kept" in err and "run the same command again" in err
    assert "Traceback" not in err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM operations").fetchall() == [("interrupted",)]


def test_an_ingest_killed_without_a_word_is_marked_interrupted_by_the_next_writer(cli, tmp_path, db_path):
    """A process that died holding a 'running' operation (kill -9, a power cut): the next
    writer marks it; one still alive (this test's own process) is left running."""
    import subprocess
    import sys

    assert cli("ingest", FIXTURE).code == 0
    script = ("import os, sys\nfrom memctl.store.connection import open_database, write_transaction\n"
              "from memctl.store import operations\n"
              "db = open_database(sys.argv[1])\n"
              "with write_transaction(db):\n"
              "    operations.record(db, 'ingest', '2024-01-01T00:00:00.000000Z', {}, 'running')\n"
              "os._exit(0)  # gone without finishing, as a killed process is\n")
    from memctl.store import operations
    from memctl.store.connection import open_database, write_transaction

    live = open_database(db_path)  # open to the end: on PostgreSQL its connection is what says it runs
    with write_transaction(live):
        mine = operations.record(live, "ingest", "2024-01-02T00:00:00.000000Z", {}, "running")
    subprocess.run([sys.executable, "-c", script, str(db_path)], check=True, timeout=60)
    before = {op["id"]: op["status"] for op in cli("operations", "--json").json()}
    assert sorted(before.values()) == ["done", "running", "running"]  # reading marks nothing
    assert cli("ingest", FIXTURE).code == 0  # a write: already present, but it opens the writer
    after = {op["id"]: op["status"] for op in cli("operations", "--json").json()}
    assert after[mine.id] == "running"
    assert sorted(after.values()) == ["done", "interrupted", "running"]
    live.conn.close()
