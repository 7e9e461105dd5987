"""Ingesting session logs through the CLI (issue 3): true times, idempotence, reports."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from datetime import datetime, timezone

from tests.conftest import REALDATA, needs_realdata, write_jsonl

CLAUDE = REALDATA / "daaain-claude-code-log" / "real_projects"
LOG_FORMATS = {"claude-code", "codex", "chatgpt", "claude-ai", "gemini", "aider", "jsonl"}


def stored(db) -> list[dict]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM episodes")]


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
    assert (again["added"], again["reactivated"], again["already_present"]) == (0, 0, report["episodes"])


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
    mtime = datetime(2023, 7, 4, 12, 0, tzinfo=timezone.utc).timestamp()
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
    assert run.code == 0
    rows = sorted((json.loads(line) for line in run.out.splitlines()), key=lambda row: row["position"])
    keys = {"source", "position", "format", "reference_time", "reference_time_source", "chars", "skipped_reason"}
    assert all(keys <= set(row) for row in rows)
    assert [(r["position"], r["reference_time"], r["skipped_reason"] is None) for r in rows] == [
        (1, "2024-05-01T10:00:00.000000Z", True), (3, None, False)]
    assert "not a time" in rows[1]["skipped_reason"]
    assert not db_path.exists()


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
    assert report["redactions"] == 1
    (episode,) = stored(db_path)
    assert secret not in episode["content"] and "[REDACTED:api_key]" in episode["content"]


def test_unknown_zone_is_bad_usage(cli, tmp_path):
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": "x", "timestamp": 1714557600}])
    run = cli("ingest", chat, "--tz", "Mars/Olympus")
    assert run.code == 2 and "Mars/Olympus" in run.err
