"""A newcomer's first hour (issue 30): the defects a new user met, each held by a test."""

from __future__ import annotations

from pathlib import Path

import pytest

from memctl.errors import BadInput
from memctl.memory import Memory
from tests.conftest import made_nothing, where_of

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "team.facts.jsonl"


def test_a_limit_past_64_bits_is_one_clear_line(cli):
    assert cli("ingest", FIXTURE).code == 0
    for command in (["recall", "billing"], ["episodes"], ["facts"], ["operations"], ["sessions"]):
        run = cli(*command, "--limit", str(2**70))
        assert run.code == 2 and run.err.strip() == f"memctl: error: --limit must be between 1 and 1,000,000, got {2**70}"
    assert cli("recall", "billing", "--limit", "1000000").code == 0


def test_memctl_db_with_a_tilde_is_the_home_folder(raw_cli, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMCTL_DB", "~/mem/memory.db")  # as an MCP client's JSON config passes it
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mem").mkdir()
    assert raw_cli("ingest", FIXTURE).code == 0
    assert (tmp_path / "mem" / "memory.db").is_file() and not (tmp_path / "~").exists()
    assert raw_cli("--db", "~/mem/memory.db", "stats").code == 0  # quoted on a command line: the same


def test_an_empty_db_is_bad_input_not_an_internal_error(raw_cli):
    run = raw_cli("--db", "", "stats")
    assert run.code == 2 and "is a folder; name a database file" in run.err and "internal error" not in run.err


@pytest.mark.parametrize("url", ["postgresql://me@127.0.0.1:1/memory", "postgres://me:pw@127.0.0.1:1/db",
                                 "postgresql://me@127.0.0.1:1/db?password=pw&connect_timeout=5",
                                 "https://example.org/m.db"])
def test_a_url_memctl_cannot_reach_is_refused_and_makes_no_file(raw_cli, tmp_path, monkeypatch, url):
    """As a path, a PostgreSQL URL made a SQLite file in a folder named "postgresql:". Now
    one is a server's database: one that cannot be reached is one line, exit 2, naming it
    without its password; a URL of another kind is refused as no memctl store."""
    monkeypatch.chdir(tmp_path)
    shown = url.replace("postgres://", "postgresql://").replace(":pw@", "@").replace("password=pw&", "")
    for args in (("--db", url, "add", "billing uses Postgres", "--reference-time", "2024-01-01"),
                 ("--db", url, "stats"), ("--db", url, "recall", "billing", "--json")):
        run = raw_cli(*args)
        assert run.code == 2 and run.err.count("\n") == 1 and shown in run.err and "pw" not in run.err, (args, run.err)
    monkeypatch.setenv("MEMCTL_DB", url)
    assert raw_cli("ingest", FIXTURE).code == 2
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(BadInput, match="URL|cannot connect"):
        Memory.open(url)


def test_a_missing_path_leaves_no_database_behind(cli, db_path, tmp_path):
    run = cli("ingest", FIXTURE, tmp_path / "missing")
    assert run.code == 2 and "missing: no such file or directory" in run.err
    assert made_nothing(db_path)


def test_a_dry_run_exits_as_the_real_run_does(cli, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "README.md").write_text("# Hello\n\nSome notes with no date.\n")
    (folder / "team.facts.jsonl").write_text(FIXTURE.read_text())
    dry, real = cli("ingest", folder, "--dry-run"), cli("ingest", folder)
    assert dry.code == real.code == 1
    assert cli("ingest", folder, "--dry-run", "--from-mtime").code == cli("ingest", folder, "--from-mtime").code == 0


def test_a_source_as_the_listing_shows_it_names_it(cli, tmp_path):
    for folder in ("alpha", "beta"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "team.facts.jsonl").write_text(FIXTURE.read_text())
        assert cli("ingest", tmp_path / folder).code == 0
    shown = cli("episodes", "--source", "alpha/team.facts.jsonl", "--json")
    assert shown.code == 0 and {row["source"] for row in shown.json()} == {str(tmp_path / "alpha" / "team.facts.jsonl")}
    both = cli("episodes", "--source", "team.facts.jsonl")
    assert both.code == 2 and "names 2 sources" in both.err
    assert cli("episodes", "--source", "gamma/team.facts.jsonl").code == 2


def test_a_repair_with_nothing_to_fix_says_so(cli):
    assert cli("ingest", FIXTURE).code == 0
    done = cli("repair", "midnight-hallucinations", "--apply")
    assert done.code == 0 and "nothing to fix" in done.out and "pass --apply" not in done.out
    assert "pass --apply" in cli("repair", "midnight-hallucinations").out


def test_a_reader_that_stops_early_is_no_failure(db_path, tmp_path):
    import json
    import subprocess
    import sys

    # Far more than a pipe holds (64 KB), so that writing meets the closed pipe.
    many = tmp_path / "many.facts.jsonl"
    many.write_text("".join(json.dumps({"reference_time": f"2024-01-01T00:{n // 60:02d}:{n % 60:02d}Z",
                                        "content": f"note {n}", "facts": [{"subject": f"service {n}",
                                                                            "predicate": "uses", "object": "Kafka"}]})
                            + "\n" for n in range(3000)))
    memctl = [sys.executable, "-m", "memctl", "--db", str(db_path)]
    subprocess.run([*memctl, "ingest", str(many)], check=True, capture_output=True)
    for command in (["episodes", "--json"], ["facts"], ["operations", "--json"]):
        producer = subprocess.Popen([*memctl, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert producer.stdout is not None
        producer.stdout.readline()
        producer.stdout.close()  # as `| head -1` does
        assert producer.wait(timeout=60) == 0, command
        assert producer.stderr is not None and producer.stderr.read() == b""


def test_episodes_lists_the_latest_first_with_a_title_searched_and_counted(cli, tmp_path):
    assert cli("ingest", FIXTURE).code == 0
    latest = cli("episodes", "-n", "2")
    lines = latest.out.splitlines()
    assert lines[0].split("\t") == ["episode", "said", "title", "source:position", "status"]
    assert [line.split("\t")[1][:10] for line in lines[1:]] == ["2024-09-12", "2024-05-20"]  # the latest first
    assert "We dropped Redis" in lines[1] and "… 3 more" in latest.err and "more" not in latest.out
    assert [row["reference_time"][:10] for row in cli("episodes", "-n", "2", "--json").json()] == [
        "2024-05-20", "2024-09-12"]  # programs get the latest two in time order
    found = cli("episodes", "-q", "Postgres move", "--json").json()
    assert [row["title"][:5] for row in found] == ["Retro"] and found[0]["extraction"] == "structured"
    assert cli("episodes", "-q", "?!").code == 2


def test_list_commands_print_json_lines_csv_and_tsv(cli):
    import csv
    import io
    import json

    assert cli("ingest", FIXTURE).code == 0
    for command in (["episodes"], ["facts"], ["operations"], ["sessions"]):
        lines = cli(*command, "--nl").out.splitlines()
        as_json = cli(*command, "--json").json()
        assert [json.loads(line) for line in lines] == as_json, command
        for flag, delimiter in (("--csv", ","), ("--tsv", "\t")):
            rows = list(csv.reader(io.StringIO(cli(*command, flag).out), delimiter=delimiter))
            assert rows[0] == list(as_json[0]) and len(rows) == len(as_json) + 1, (command, flag)
    both = cli("facts", "--json", "--csv")
    assert both.code == 2 and "choose one way to print" in both.err


def test_history_keeps_each_slots_latest(cli):
    assert cli("ingest", FIXTURE).code == 0
    slots = cli("history", "billing", "-n", "1", "--json").json()["slots"]
    assert [[f["object"] for f in slot["facts"]] for slot in slots] == [["Postgres"], ["Sentry"]]
    assert [len(slot["facts"]) for slot in cli("history", "billing", "--json").json()["slots"]] == [2, 2]


def test_episodes_the_model_never_saw_are_counted_and_listed(cli, db_path, clock):
    from memctl import Memory
    from memctl.extract.llm import LLMExtractor, make_client

    memory = Memory.open(db_path, clock)
    down = LLMExtractor(make_client(api_key="k", base_url="http://127.0.0.1:9/v1"), "m", clock, max_retries=0)
    waiting = memory.add_memory("Billing moved to Spanner.", reference_time="2025-01-01", extractor=down)
    memory.close()
    assert waiting.extraction == "pending"
    assert cli("stats", "--json").json()["episodes_awaiting_extraction"] == 1
    assert [row["id"] for row in cli("episodes", "--extraction", "pending", "--json").json()] == [waiting.episode_id]
    assert cli("episodes", "--extraction", "soon").code == 2


def test_a_latin_1_note_is_read_as_written_and_said_so(cli, tmp_path):
    note = tmp_path / "2024-03-01-café.md"
    note.write_bytes("Le café est fermé; billing uses Postgres.\n".encode("latin-1"))
    run = cli("ingest", note, "--json")
    assert run.code == 0 and "not UTF-8" in run.err and "read as Windows-1252" in run.err
    assert run.json()["notices"] and run.json()["added"] == 1
    [episode] = cli("episodes", "--json").json()
    text = cli("show", episode["id"], "--json").json()["content"]
    assert "Le café est fermé" in text and "\ufffd" not in text


def test_an_empty_id_names_nothing(cli):
    assert cli("ingest", FIXTURE).code == 0
    for command in (["show", ""], ["undo", ""]):
        run = cli(*command)
        assert run.code == 2 and "empty" in run.err and "ambiguous" not in run.err, command


def claude_code_session(path: Path, text: str) -> Path:
    """A minimal Claude Code session log (named by its file): one turn and its reply."""
    from tests.conftest import write_jsonl

    path.parent.mkdir(parents=True, exist_ok=True)
    session, user, reply = f"session-{path.stem}", f"u-{path.stem}", f"a-{path.stem}"
    return write_jsonl(path, [
        {"parentUuid": None, "sessionId": session, "type": "user", "uuid": user, "timestamp": "2025-03-01T09:00:00Z",
         "message": {"role": "user", "content": text}},
        {"parentUuid": user, "sessionId": session, "type": "assistant", "uuid": reply,
         "timestamp": "2025-03-01T09:00:05Z",
         "message": {"id": "m1", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": "Done."}]}}])


def test_ingest_with_no_path_reads_the_agents_log_folders_it_finds(cli, monkeypatch, tmp_path):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    nothing = cli("ingest")
    assert nothing.code == 2 and "no agent's log folder here" in nothing.err
    claude_code_session(home / ".claude" / "projects" / "-work-app" / "s1.jsonl", "Set up the staging cluster.")
    first = cli("ingest", "--json")
    assert first.code == 0 and "Claude Code's logs" in first.err and first.json()["added"] == 1
    again = cli("ingest", "--json")
    assert again.code == 0 and again.json()["added"] == 0  # idempotent
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "elsewhere"))  # Claude Code's own setting is honoured
    claude_code_session(tmp_path / "elsewhere" / "projects" / "-work-b" / "s2.jsonl", "Add a retry to the consumer.")
    assert cli("ingest", "--json").json()["added"] == 1


def test_the_claude_code_hook_ingests_each_session_that_ends(cli, db_path, tmp_path, monkeypatch):
    import io
    import json
    import shlex
    import sys

    shown = cli("hook", "claude-code")
    assert shown.code == 0 and "settings.json" in shown.err
    [entry] = shown.json()["hooks"]["SessionEnd"]
    command = shlex.split(entry["hooks"][0]["command"])
    assert command[-5:] == ["--db", where_of(db_path), "hook", "claude-code", "--run"]
    session = claude_code_session(tmp_path / "projects" / "-work-app" / "s1.jsonl", "Set up the staging cluster.")
    payload = {"session_id": "s1", "transcript_path": str(session), "cwd": "/work/app", "hook_event_name": "SessionEnd",
               "reason": "exit"}
    for _ in range(2):  # a session ended twice (resumed in between) adds only what is new
        monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(payload)))
        assert cli("hook", "claude-code", "--run").code == 0
        assert len(cli("episodes", "--json").json()) == 1
    monkeypatch.setattr(sys, "stdin", io.StringIO("not json"))
    bad = cli("hook", "claude-code", "--run")
    assert bad.code == 2 and "transcript_path" in bad.err


def test_export_ingests_back_into_the_same_facts(tmp_path, clock):
    import json

    from memctl import IngestOptions, Memory
    from memctl.names import entity_key

    source = Memory.open(tmp_path / "a.db", clock)
    source.ingest([FIXTURE], IngestOptions())
    source.add_memory("Billing dropped Sentry.", reference_time="2025-02-01", facts=[
        {"subject": "billing", "predicate": "uses", "object": "Sentry", "retracted": True, "cardinality": "many"}])
    source.add_memory("Billing's lead until May was Sam.", reference_time="2025-06-01", facts=[
        {"subject": "billing", "predicate": "lead", "object": "Sam", "valid_at": "2024-01-01", "invalid_at": "2025-05-01"}])
    source.undo([source.episodes()[0].id], apply=True)  # what memctl no longer holds is not exported
    lines = list(source.export())
    assert len(lines) == len(source.episodes(status="active"))
    exported = tmp_path / "memory.facts.jsonl"
    exported.write_text("".join(json.dumps(line) + "\n" for line in lines))
    copy = Memory.open(tmp_path / "b.db", clock)
    copy.ingest([exported], IngestOptions())

    def timeline(memory: Memory) -> list[tuple]:
        return sorted((entity_key(f.subject), f.predicate, entity_key(f.object), f.valid_at, f.invalid_at, f.end_reason)
                      for f in memory.facts(history=True))

    assert timeline(copy) == timeline(source) and len(timeline(source)) >= 5
    assert [e.reference_time for e in copy.episodes()] == [e.reference_time for e in source.episodes(status="active")]


def test_backup_path_and_the_views_a_browser_reads(cli, db_path, tmp_path):
    import sqlite3

    assert cli("ingest", FIXTURE).code == 0
    assert cli("path").out.strip() == where_of(db_path)
    made = cli("backup", tmp_path / "copy.db", "--json")
    assert made.code == 0 and made.json()["path"] == str((tmp_path / "copy.db").resolve())
    assert not (tmp_path / "copy.db-wal").exists()  # one self-contained file
    assert cli("--db", tmp_path / "copy.db", "stats", "--json").json() == cli("stats", "--json").json()
    again = cli("backup", tmp_path / "copy.db")
    assert again.code == 2 and "exists already" in again.err
    with sqlite3.connect(tmp_path / "copy.db") as conn:
        held = conn.execute("SELECT subject, predicate, object, valid_at FROM facts_held WHERE object = 'Postgres'").fetchall()
        assert held == [("billing", "primary_database", "Postgres", "2024-04-02T00:00:00.000000Z")]
        assert conn.execute("SELECT count(*) FROM facts_named").fetchone()[0] >= len(held)


def test_one_bad_facts_file_is_refused_and_the_folder_goes_on(cli, tmp_path):
    """Issue 31, item 7: a JSONL whose first record has a facts key is read as the facts
    format, and one bad line there refused every file of the folder (exit 2, 0 episodes)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "team.facts.jsonl").write_text(FIXTURE.read_text())
    (folder / "bad.jsonl").write_text('{"reference_time": "2024-01-01", "facts": []}\nnot json\n')
    claude_code_session(folder / "session.jsonl", "Set up the staging cluster.")
    for dry in ([], ["--dry-run"]):
        run = cli("ingest", folder, *dry)
        assert run.code == 1 and "bad.jsonl" in run.err + run.out, (dry, run.err)
    assert len(cli("episodes", "--json").json()) == 6  # the five facts lines and the session's turn
    alone = cli("ingest", folder / "bad.jsonl")
    assert alone.code == 2 and "bad.jsonl:2" in alone.err


def test_a_time_outside_the_plausible_years_is_never_stored_silently(cli, tmp_path, monkeypatch):
    """Issue 31, item 10: 9999-12-31 was accepted in log formats and through add_memory, and
    a ChatGPT create_time in the wrong unit (2.53e14) was stored as 1978-01-11."""
    from tests.conftest import write_jsonl

    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "a note from nowhere", "timestamp": "9999-12-31T00:00:00Z"},
        {"role": "user", "content": "a note from 1978", "timestamp": 2.53e14},
        {"role": "user", "content": "a note from 2024", "timestamp": "2024-05-01T10:00:00Z"}])
    run = cli("ingest", chat, "--json")
    assert run.code == 1 and run.json()["added"] == 1
    assert "outside the years 1990..2100" in run.err and "9999-12-31" in run.err
    bad = cli("add", "the deploy freeze ends", "--reference-time", "9999-12-31")
    assert bad.code == 2 and "outside the years" in bad.err
    monkeypatch.setenv("MEMCTL_TIME_WINDOW", "1970..10000")  # widened, on purpose
    assert cli("add", "the deploy freeze ends", "--reference-time", "9999-12-31").code == 0


def test_the_new_commands_refuse_what_they_cannot_do_in_one_line(cli, tmp_path, monkeypatch):
    import io
    import sys

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert cli("ingest", FIXTURE).code == 0
    (tmp_path / "taken.jsonl").write_text("")
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"transcript_path": "/no/such/session.jsonl"}'))
    for command, said in [
        (["backup", tmp_path / "no" / "such" / "copy.db"], "no such folder"),
        (["export", "-o", tmp_path / "taken.jsonl"], "exists already"),
        (["summarize"], "no model to write summaries"),
        (["resolve", "", "--keep", "MySQL"], "not an empty string"),
        (["hook", "claude-code", "--run"], "no such file or directory"),
    ]:
        run = cli(*command)
        assert run.code == 2 and said in run.err and run.err.count("\n") == 1, (command, run.err)
    assert (tmp_path / "taken.jsonl").read_text() == ""  # what was there is left as it was
