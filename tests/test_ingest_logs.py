"""Ingesting session logs through the CLI (issue 3): true times, idempotence, reports."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from memctl.sources import MAX_EPISODE_CHARS, MIN_USER_CHARS, Turn, cut, render
from tests.conftest import REALDATA, dict_rows, made_nothing, needs_realdata, open_store, stored_text, write_jsonl

CLAUDE = REALDATA / "daaain-claude-code-log" / "real_projects"
LOG_FORMATS = {"claude-code", "codex", "chatgpt", "claude-ai", "gemini", "aider", "jsonl"}


def stored(db) -> list[dict]:
    with open_store(db) as conn:
        return dict_rows(conn, "SELECT * FROM episodes")


@needs_realdata
def test_all_real_logs_ingest_with_their_own_times_and_twice_adds_nothing(cli, db_path):
    first = cli("ingest", REALDATA, "--tz", "Europe/Oslo", "--json")
    # README.md is a note without a date: refused, the rest kept
    assert first.code == 1 and "README.md" in first.err
    report = first.json()
    assert report["refused"] == [r for r in report["refused"] if "README.md" in r] and len(report["refused"]) == 1
    assert report["malformed"] == []
    assert set(report["formats"]) >= LOG_FORMATS - {"jsonl"}
    assert report["added"] == report["episodes"] > 100
    episodes = stored(db_path)
    assert {e["reference_time_source"] for e in episodes if e["format"] in LOG_FORMATS} <= {"record", "session"}
    again = cli("ingest", REALDATA, "--tz", "Europe/Oslo", "--json").json()
    assert (again["added"], again["reactivated"], again["revised"], again["already_present"]) == (
        0, 0, 0, report["episodes"])


@needs_realdata
def test_a_resumed_session_repeating_lines_is_stored_once(cli, tmp_path):
    original = max(CLAUDE.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    folder = tmp_path / "projects"
    folder.mkdir()
    shutil.copy(original, folder / "first-session.jsonl")
    # the resumed session: every earlier line again, in another file
    (folder / "resumed-session.jsonl").write_bytes(original.read_bytes())
    report = cli("ingest", folder, "--json").json()
    assert report["episodes"] > 0 and report["added"] == report["episodes"] // 2
    assert report["already_present"] == report["episodes"] // 2


def test_mtime_is_used_only_with_from_mtime_and_never_over_a_record_time(cli, db_path, tmp_path):
    note = tmp_path / "meeting.md"
    note.write_text("We agreed billing moves to Postgres.\n")
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "which db?", "timestamp": "2024-05-01T10:00:00Z"},
        {"role": "assistant", "content": "Postgres.", "timestamp": "2024-05-01T10:00:05Z"},
    ])
    mtime = datetime(2023, 7, 4, 12, 0, tzinfo=UTC).timestamp()
    for path in (note, chat):
        os.utime(path, (mtime, mtime))
    refused = cli("ingest", note, chat, "--json")
    assert refused.code == 1 and "meeting.md" in refused.err and "--from-mtime" in refused.err
    assert [e["format"] for e in stored(db_path)] == ["jsonl"]
    assert cli("ingest", note, chat, "--from-mtime").code == 0
    by_format = {e["format"]: e for e in stored(db_path)}
    assert (by_format["markdown"]["reference_time"], by_format["markdown"]["reference_time_source"]) == (
        "2023-07-04T12:00:00.000000Z", "mtime")
    assert (by_format["jsonl"]["reference_time"], by_format["jsonl"]["reference_time_source"]) == (
        "2024-05-01T10:00:00.000000Z", "record")


def test_dry_run_shows_every_episode_and_skip_and_writes_nothing(cli, db_path, tmp_path):
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "hello", "timestamp": 1714557600},
        {"role": "assistant", "content": "hi", "timestamp": 1714557601},
        {"role": "user", "content": "later", "timestamp": "not a time"},
    ])
    run = cli("ingest", chat, "--dry-run", "--json")
    assert run.code == 1  # as the real run would: a line is bad input
    rows = sorted((json.loads(line) for line in run.out.splitlines()), key=lambda row: row["position"])
    keys = {"source", "position", "format", "reference_time", "reference_time_source", "chars", "skipped_reason",
            "bad_input"}
    assert all(keys <= set(row) for row in rows)
    assert [(r["position"], r["reference_time"], r["skipped_reason"] is None) for r in rows] == [
        (1, "2024-05-01T10:00:00.000000Z", True), (3, None, False)]
    assert "not a time" in rows[1]["skipped_reason"] and rows[1]["bad_input"] is True
    assert made_nothing(db_path)
    assert cli("ingest", chat).code == 1


def test_a_malformed_line_is_reported_with_its_number_and_the_rest_kept(cli, db_path, tmp_path):
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        json.dumps({"role": "user", "content": "first", "timestamp": "2024-05-01T10:00:00Z"}) + "\n"
        + '{"role": "assistant", "content": "trunc\n'
        + json.dumps({"role": "user", "content": "second", "timestamp": "2024-05-02T10:00:00Z"}) + "\n"
    )
    run = cli("ingest", chat, "--json")
    assert run.code == 1
    assert f"{chat.resolve()}:2:" in run.err
    assert run.json()["added"] == 2 and len(stored(db_path)) == 2


def test_secrets_are_redacted_before_storage_and_counted(cli, db_path, tmp_path):
    secret = "sk-proj-0123456789abcdefghijklmnopqrstu"
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": f"my key is {secret}, keep it", "timestamp": "2024-05-01T10:00:00Z"},
        {"role": "assistant", "content": "Noted; never paste keys.", "timestamp": "2024-05-01T10:00:01Z"},
    ])
    report = cli("ingest", chat, "--json").json()
    assert report["redactions"] == 1 and report["redacted"] == {"openai_key": 1}
    (episode,) = stored(db_path)
    assert secret not in episode["content"] and "[REDACTED:openai_key]" in episode["content"]


def test_unknown_zone_is_bad_usage(cli, tmp_path):
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": "x", "timestamp": 1714557600}])
    run = cli("ingest", chat, "--tz", "Mars/Olympus")
    assert run.code == 2 and "Mars/Olympus" in run.err


def _claude_line(uuid, parent, role, text, second):
    content = text if role == "user" else [{"type": "text", "text": text}]
    return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
            "timestamp": f"2025-01-01T10:00:{second:02d}Z", "message": {"role": role, "content": content}}


def test_a_turn_read_again_after_its_reply_grew_takes_the_new_reading_and_undo_gives_the_old_back(cli, db_path,
                                                                                                   tmp_path):
    """A session still being written when it was ingested: the next ingest must not lose the rest."""
    session = tmp_path / "project" / "s1.jsonl"
    session.parent.mkdir()
    lines = [_claude_line("u1", None, "user", "Which database does billing use?", 0),
             _claude_line("a1", "u1", "assistant", "Billing uses MySQL. Let me double check.", 5)]
    write_jsonl(session, lines)
    first = cli("ingest", session, "--extractor", "rules", "--json").json()
    assert first["added"] == 1
    # A resumed session copied the turn as it was; then the reply grew in the original.
    write_jsonl(tmp_path / "project" / "s2.jsonl", lines)
    lines.append(_claude_line("a2", "a1", "assistant", "Billing uses Postgres.", 9))
    write_jsonl(session, lines)
    second = cli("ingest", session.parent, "--extractor", "rules", "--json").json()
    assert (second["revised"], second["added"], second["assertions"]) == (1, 0, 2)  # the whole turn, extracted again
    (episode,) = cli("episodes", "--json").json()
    assert "Billing uses Postgres" in cli("show", episode["id"], "--json").json()["content"]
    found = cli("recall", "--kind", "fact", "billing uses", "--json").json()["results"]
    assert sorted(r["object"] for r in found) == ["MySQL", "Postgres"]
    again = cli("ingest", session.parent, "--extractor", "rules", "--json").json()
    assert (again["revised"], again["already_present"], again["assertions"]) == (0, 2, 0)
    # The shorter copy alone is not a new reading either.
    assert cli("ingest", tmp_path / "project" / "s2.jsonl", "--extractor", "rules", "--json").json()["revised"] == 0

    preview = cli("undo", second["operation_id"])
    assert preview.code == 0 and "0 episode(s) and 1 grown reading(s)" in preview.out
    plan = cli("undo", second["operation_id"], "--apply", "--json").json()
    assert plan["applied"] and plan["revisions_reverted"] == [episode["id"]] and plan["episodes"] == []
    assert [r["object"] for r in plan["removed"]] == ["Postgres"]
    assert "Postgres" not in cli("show", episode["id"], "--json").json()["content"]
    assert [r["object"] for r in cli("recall", "--kind", "fact", "billing uses", "--json").json()["results"]] == ["MySQL"]
    assert cli("rebuild", "--json").json()["facts_created"] == 0
    assert cli("undo", first["operation_id"], "--apply", "--json").json()["episodes"] == [episode["id"]]
    assert cli("recall", "--kind", "fact", "billing uses", "--json").json()["results"] == []


def test_purging_a_revised_episode_erases_its_older_readings(cli, db_path, tmp_path):
    session = tmp_path / "s1.jsonl"
    lines = [_claude_line("u1", None, "user", "The staging token is hunter2-staging, keep it.", 0)]
    write_jsonl(session, lines)
    assert cli("ingest", session, "--extractor", "rules").code == 0
    write_jsonl(session, lines + [_claude_line("a1", "u1", "assistant", "Noted.", 3)])
    assert cli("ingest", session, "--extractor", "rules", "--json").json()["revised"] == 1
    (episode,) = cli("episodes", "--json").json()
    assert cli("undo", episode["id"], "--purge", "--apply").code == 0
    assert "hunter2" not in stored_text(db_path)


@given(st.text(alphabet="ab\n ", max_size=400), st.integers(min_value=0, max_value=300))
def test_a_cut_keeps_the_start_and_the_end_and_counts_the_rest(text, limit):
    kept, removed = cut(text, limit)
    if len(text) <= limit:
        assert (kept, removed) == (text, 0)
        return
    head, marker, tail = kept.partition(f"\n[cut: {removed} characters]\n")
    assert marker and text.startswith(head) and text.endswith(tail)
    assert len(head) + removed + len(tail) == len(text) and len(head) + len(tail) <= limit


@given(st.integers(min_value=0, max_value=60_000), st.integers(min_value=0, max_value=60_000))
def test_a_long_turn_is_cut_in_the_user_part_first(user_chars, reply_chars):
    user, reply = "x" * user_chars, "y" * reply_chars
    text, removed = render(Turn(position=1, user=user, assistant=reply))
    # a reply with no user turn is rendered alone
    user_kept, _, reply_kept = ("User: \n\n" + text if text.startswith("Assistant: ") else text).removeprefix(
        "User: ").partition("\n\nAssistant: ")
    assert len(text) <= MAX_EPISODE_CHARS + 100
    if reply_chars + min(user_chars, MIN_USER_CHARS) <= MAX_EPISODE_CHARS:
        assert reply_kept == reply  # the reply is whole whenever the user part can give way
    assert reply_kept.count("y") + user_kept.count("x") + removed == user_chars + reply_chars
    assert user_kept.count("x") >= min(user_chars, MIN_USER_CHARS)


def test_structured_content_is_cut_by_the_same_rule_and_the_report_says_so(cli, db_path, tmp_path):
    # a facts line whose "content" is a whole dump: stored cut like a log turn, facts whole
    facts = write_jsonl(tmp_path / "dump.facts.jsonl", [{
        "reference_time": "2024-05-01T10:00:00Z", "content": "export\n" + "row of data\n" * 10_000,
        "facts": [{"subject": "billing", "predicate": "uses", "object": "Postgres"}]}])
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "here is the log:\n" + "GET /x 200\n" * 5_000, "timestamp": "2024-05-01T10:00:00Z"},
        {"role": "assistant", "content": "The log shows no errors.", "timestamp": "2024-05-01T10:00:05Z"}])
    report = cli("ingest", facts, chat, "--json").json()
    assert report["cut"] == 2 and report["assertions"] >= 1
    contents = {e["format"]: e["content"] for e in stored(db_path)}
    assert all(len(text) <= MAX_EPISODE_CHARS + 100 and "characters]" in text for text in contents.values())
    assert contents["jsonl"].endswith("Assistant: The log shows no errors.")
    table = cli("ingest", facts, chat, db=tmp_path / "other.db")
    assert f"cut to {MAX_EPISODE_CHARS:,} characters" in table.out
