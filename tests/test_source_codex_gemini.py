"""Codex rollouts and Gemini CLI sessions: every episode at the true time of its turn.

The real samples are checked against what the test itself reads from the raw JSON: which
lines are human turns, their timestamps, what each turn did with tools; the hand-made
files cover each pitfall of the two formats.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from memctl.errors import FileRefused
from memctl.model import Episode
from memctl.sources import NO_TIME, IngestOptions, Skipped, detect_format, parse
from memctl.sources.codex import COMPACTION, EMPTY, INJECTED
from memctl.sources.gemini import PROMPT_LOG
from tests.conftest import REALDATA, needs_realdata, utc, write_jsonl

CODEX_DIR = REALDATA / "madshn-localpush" / "codex-2026-02-23"
GEMINI_DIR = REALDATA / "codemie-ai-codemie-code" / "gemini"
CODEX_FILES = sorted((CODEX_DIR / "sessions").glob("*.jsonl")) if CODEX_DIR.is_dir() else []
GEMINI_SESSIONS = sorted(GEMINI_DIR.glob("session-*.json")) if GEMINI_DIR.is_dir() else []

EPOCH_1999 = utc("1999-01-01")


def run(path: Path, fmt: str | None = None, **options) -> tuple[list[Episode], list[Skipped]]:
    episodes, skipped = [], []
    for item in parse(path, IngestOptions(**options), fmt):
        (skipped if isinstance(item, Skipped) else episodes).append(item)
    return episodes, skipped


def reasons(skipped: list[Skipped]) -> Counter:
    return Counter(s.reason for s in skipped)


# --------------------------------------------------------------------------- codex, real


def _raw_lines(path: Path) -> list[tuple[int, dict]]:
    return [(n, json.loads(line)) for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]


@needs_realdata
def test_every_codex_sample_is_found():
    manifest = json.loads((CODEX_DIR / "manifest.json").read_text())
    assert len(CODEX_FILES) == manifest["input_files"]["session_file_count"] == 6
    assert all(detect_format(path) == "codex" for path in CODEX_FILES)


@needs_realdata
@pytest.mark.parametrize("path", CODEX_FILES, ids=lambda p: p.name[:37])
def test_codex_real_file(path: Path):
    lines = _raw_lines(path)
    stamps = [utc(r["timestamp"]) for _, r in lines if "timestamp" in r]
    stamps += [utc(r["payload"]["timestamp"]) for _, r in lines if r["type"] == "session_meta"]
    low, high = min(stamps), max(stamps)
    # Human turns are the user_message events; the role-user items are their twins or context.
    events = [(n, r) for n, r in lines if r["type"] == "event_msg" and r["payload"]["type"] == "user_message"]
    user_items = [n for n, r in lines if r["type"] == "response_item"
                  and r["payload"].get("type") == "message" and r["payload"].get("role") == "user"]
    assert events, "every sample has human turns"

    episodes, skipped = run(path)

    assert [e.position for e in episodes] == [n for n, _ in events]
    assert [e.reference_time for e in episodes] == [utc(r["timestamp"]) for _, r in events]
    assert all(low <= e.reference_time <= high for e in episodes)
    assert {e.reference_time_source for e in episodes} == {"record"}
    assert all(e.content.startswith("User: " + r["payload"]["message"]) for e, (_, r) in zip(episodes, events))
    session_id = next(r["payload"]["id"] for _, r in lines if r["type"] == "session_meta")
    assert [e.identity for e in episodes] == [f"codex\x1f{session_id}:{n}" for n, _ in events]

    # Each role-user item is the twin of one event (the line just before it, in these files) or
    # skipped as context: none counted twice.
    event_lines = {n for n, _ in events}
    assert [s.position for s in skipped if s.reason == INJECTED] == [n for n in user_items if n + 1 not in event_lines]
    assert not any(s.malformed for s in skipped)
    assert reasons(skipped) == Counter({
        INJECTED: len(user_items) - len(events),
        **({COMPACTION: n} if (n := sum(r["type"] == "compacted" for _, r in lines)) else {}),
    })

    # What each turn left out, read from the lines between its event and the next one.
    kinds = {"reasoning": "thinking", "function_call": "tool_use", "custom_tool_call": "tool_use",
             "web_search_call": "tool_use", "function_call_output": "tool_result",
             "custom_tool_call_output": "tool_result"}
    bounds = [n for n, _ in events] + [len(lines) + 1]
    for episode, (start, end), (_, event) in zip(episodes, zip(bounds, bounds[1:]), events):
        span = [r for n, r in lines if start < n < end]
        expected = Counter(kinds[r["payload"]["type"]] for r in span
                           if r["type"] == "response_item" and r["payload"].get("type") in kinds)
        expected["image"] += len(event["payload"].get("images") or [])
        assert episode.left_out == {k: v for k, v in expected.items() if v}
        replies = [c["text"] for r in span if r["type"] == "response_item"
                   and r["payload"].get("role") == "assistant" for c in r["payload"]["content"]]
        assert all(reply in episode.content for reply in replies)
        # tool arguments and output, reasoning: not in the text
        for hidden in ("[REDACTED_OUTPUT", "[REDACTED_ARGUMENTS", "[REDACTED_ENCRYPTED"):
            assert hidden not in episode.content

    # Records carry their time: --reference-time and --from-mtime change nothing.
    again, _ = run(path, reference_time=EPOCH_1999, from_mtime=True)
    assert [(e.reference_time, e.reference_time_source) for e in again] == \
        [(e.reference_time, e.reference_time_source) for e in episodes]


@needs_realdata
def test_codex_real_totals():
    counts = {p.name[8:27]: len(run(p)[0]) for p in CODEX_FILES}
    assert counts == {"2026-02-23T12-40-23": 5, "2026-02-23T12-41-04": 1, "2026-02-23T12-47-42": 7,
                      "2026-02-23T12-54-34": 38, "2026-02-23T13-19-38": 1, "2026-02-23T20-34-25": 1}


# --------------------------------------------------------------------------- gemini, real


def _gemini_stamps(data: dict) -> list[str]:
    found = [data["startTime"], data["lastUpdated"]]
    for message in data["messages"]:
        found.append(message["timestamp"])
        found += [c["timestamp"] for c in message.get("toolCalls", []) if "timestamp" in c]
        found += [t["timestamp"] for t in message.get("thoughts", []) if "timestamp" in t]
    return [utc(s) for s in found]


@needs_realdata
def test_every_gemini_sample_is_found():
    assert len(GEMINI_SESSIONS) == 1
    assert detect_format(GEMINI_SESSIONS[0]) == "gemini"


@needs_realdata
@pytest.mark.parametrize("path", GEMINI_SESSIONS, ids=lambda p: p.name)
def test_gemini_real_file(path: Path):
    data = json.loads(path.read_text())
    stamps = _gemini_stamps(data)
    users = [(i + 1, m) for i, m in enumerate(data["messages"]) if m["type"] == "user"]
    assert users

    episodes, skipped = run(path)

    assert skipped == []
    assert [e.position for e in episodes] == [n for n, _ in users]
    assert [e.reference_time for e in episodes] == [utc(m["timestamp"]) for _, m in users]
    assert all(min(stamps) <= e.reference_time <= max(stamps) for e in episodes)
    assert {e.reference_time_source for e in episodes} == {"record"}
    assert [e.identity for e in episodes] == [f"gemini\x1f{data['sessionId']}:{m['id']}" for _, m in users]

    bounds = [n for n, _ in users] + [len(data["messages"]) + 1]
    for episode, (_, user), (start, end) in zip(episodes, users, zip(bounds, bounds[1:])):
        replies = data["messages"][start:end - 1]
        assert episode.content.startswith("User: " + user["content"])
        assert all(r["content"].strip() in episode.content for r in replies)
        calls = [c for r in replies for c in r.get("toolCalls", [])]
        expected = {"tool_use": len(calls), "tool_result": sum(c.get("result") is not None for c in calls),
                    "thinking": sum(len(r.get("thoughts", [])) for r in replies)}
        assert episode.left_out == {k: v for k, v in expected.items() if v}
        for call in calls:  # tool arguments and what the tools read are not in the text
            assert json.dumps(call["args"])[1:-1] not in episode.content
            for result in call.get("result") or []:
                output = json.dumps(result["functionResponse"]["response"])
                assert output[20:80] not in episode.content
        for reply_ in replies:  # nor the model's thoughts
            for thought in reply_.get("thoughts", []):
                assert thought["description"].strip()[:60] not in episode.content

    again, _ = run(path, reference_time=EPOCH_1999, from_mtime=True)
    assert [e.reference_time for e in again] == [e.reference_time for e in episodes]


@needs_realdata
def test_gemini_prompt_log_is_not_a_session():
    logs = GEMINI_DIR / "logs.json"
    assert detect_format(logs) is None
    episodes, skipped = run(logs, "gemini")
    assert episodes == []
    assert reasons(skipped) == Counter({PROMPT_LOG: 1})


# --------------------------------------------------------------------------- codex, hand-made

SID = "0195aaaa-bbbb-7ccc-8ddd-eeeeffff0000"


def _name(local: str = "2025-03-01T01-30-00") -> str:
    return f"rollout-{local}-{SID}.jsonl"


def meta(ts: str = "2025-02-28T23:30:00.000Z", **extra) -> dict:
    return {"timestamp": ts, "type": "session_meta", "payload": {"id": SID, "timestamp": ts, "cwd": "/w", **extra}}


def user_item(text: str, ts: str | None = None, *parts: dict) -> dict:
    line = {"type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}, *parts]}}
    return {"timestamp": ts, **line} if ts else line


def user_event(text: str, ts: str | None = None, **extra) -> dict:
    line = {"type": "event_msg", "payload": {"type": "user_message", "message": text, **extra}}
    return {"timestamp": ts, **line} if ts else line


def reply(text: str, ts: str | None = None) -> dict:
    line = {"type": "response_item", "payload": {
        "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}}
    return {"timestamp": ts, **line} if ts else line


def item(kind: str, ts: str, **payload) -> dict:
    return {"timestamp": ts, "type": "response_item", "payload": {"type": kind, **payload}}


def test_codex_file_name_is_local_time_records_are_utc(tmp_path):
    # Written at 01:30 local time in UTC+2: the name says March 1st, the exchange was Feb 28th UTC.
    path = write_jsonl(tmp_path / _name("2025-03-01T01-30-00"), [
        meta("2025-02-28T23:30:00.000Z"),
        user_item("what day is it", "2025-02-28T23:30:05.123Z"),
        user_event("what day is it", "2025-02-28T23:30:05.124Z"),
        reply("the last day of February", "2025-02-28T23:30:09.000Z"),
    ])
    assert detect_format(path) == "codex"
    episodes, skipped = run(path)
    assert skipped == []
    [episode] = episodes
    assert (episode.reference_time, episode.reference_time_source) == (utc("2025-02-28T23:30:05.124Z"), "record")
    assert episode.content == "User: what day is it\n\nAssistant: the last day of February"
    assert (episode.position, episode.source_id) == (3, f"{SID}:3")


def test_codex_one_turn_from_item_and_event_and_context_skipped(tmp_path):
    path = write_jsonl(tmp_path / _name(), [
        meta(),
        user_item("# AGENTS.md instructions for /w\n<INSTRUCTIONS>be brief</INSTRUCTIONS>", "2025-03-01T10:00:00Z"),
        user_item("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>", "2025-03-01T10:00:00Z"),
        {"timestamp": "2025-03-01T10:00:00Z", "type": "event_msg", "payload": {"type": "task_started", "turn_id": "t1"}},
        user_item("fix the failing test", "2025-03-01T10:00:01Z"),
        user_event("fix the failing test", "2025-03-01T10:00:01Z", images=[], kind="plain"),
        {"timestamp": "2025-03-01T10:00:01Z", "type": "turn_context", "payload": {"turn_id": "t1", "model": "m"}},
        item("reasoning", "2025-03-01T10:00:02Z", summary=[{"type": "summary_text", "text": "SECRET PLAN"}]),
        {"timestamp": "2025-03-01T10:00:02Z", "type": "event_msg",
         "payload": {"type": "agent_reasoning", "text": "SECRET PLAN"}},
        item("function_call", "2025-03-01T10:00:03Z", name="shell", arguments='{"cmd":"pytest"}', call_id="c1"),
        item("function_call_output", "2025-03-01T10:00:04Z", call_id="c1", output="1 failed TOOL OUTPUT"),
        item("custom_tool_call", "2025-03-01T10:00:05Z", name="apply_patch", input="*** patch", call_id="c2"),
        item("custom_tool_call_output", "2025-03-01T10:00:06Z", call_id="c2", output="ok"),
        {"timestamp": "2025-03-01T10:00:07Z", "type": "event_msg", "payload": {"type": "agent_message", "message": "Fixed."}},
        reply("Fixed.", "2025-03-01T10:00:07Z"),
        user_item("<turn_aborted>interrupted</turn_aborted>", "2025-03-01T10:00:08Z"),
    ])
    episodes, skipped = run(path)
    [episode] = episodes
    assert episode.content == "User: fix the failing test\n\nAssistant: Fixed."
    assert episode.left_out == {"thinking": 1, "tool_use": 2, "tool_result": 2}
    assert (episode.position, episode.reference_time) == (6, utc("2025-03-01T10:00:01Z"))
    assert [(s.position, s.reason, s.malformed) for s in skipped] == [
        (2, INJECTED, False), (3, INJECTED, False), (16, INJECTED, False)]


def test_codex_context_without_marker_is_told_apart_by_the_event(tmp_path):
    # Redacted or unknown context has no marker; only the user_message event says what was typed.
    path = write_jsonl(tmp_path / _name(), [
        meta(),
        user_item("[opaque context 1]", "2025-03-01T10:00:00Z"),
        user_item("hello", "2025-03-01T10:00:01Z"),
        user_event("hello", "2025-03-01T10:00:01Z"),
        reply("hi", "2025-03-01T10:00:02Z"),
        # event first, then its item: still one turn
        user_event("and again", "2025-03-01T10:01:00Z"),
        user_item("and again", "2025-03-01T10:01:00Z"),
        reply("hi again", "2025-03-01T10:01:02Z"),
        user_item("[opaque context 2]", "2025-03-01T10:02:00Z"),
        item("reasoning", "2025-03-01T10:02:01Z"),
    ])
    episodes, skipped = run(path)
    assert [(e.position, e.content) for e in episodes] == [
        (4, "User: hello\n\nAssistant: hi"), (6, "User: and again\n\nAssistant: hi again")]
    assert episodes[1].left_out == {"thinking": 1}  # the lone reasoning at the end belongs to the last turn
    assert [(s.position, s.reason) for s in skipped] == [(2, INJECTED), (9, INJECTED)]


def test_codex_message_sent_during_a_turn_is_its_own_turn(tmp_path):
    path = write_jsonl(tmp_path / _name(), [
        meta(),
        user_item("build it", "2025-03-01T10:00:00Z"),
        user_event("build it", "2025-03-01T10:00:00Z"),
        reply("building", "2025-03-01T10:00:05Z"),
        user_item("use release mode", "2025-03-01T10:00:09Z"),  # steering while the turn runs
        user_event("use release mode", "2025-03-01T10:00:09Z"),
        reply("switched to release", "2025-03-01T10:00:12Z"),
    ])
    episodes, skipped = run(path)
    assert skipped == []
    assert [(e.reference_time, e.content) for e in episodes] == [
        (utc("2025-03-01T10:00:00Z"), "User: build it\n\nAssistant: building"),
        (utc("2025-03-01T10:00:09Z"), "User: use release mode\n\nAssistant: switched to release"),
    ]


def test_codex_compaction_is_skipped_not_restated(tmp_path):
    path = write_jsonl(tmp_path / _name(), [
        meta(),
        user_event("first question", "2025-03-01T10:00:00Z"),
        reply("first answer", "2025-03-01T10:00:01Z"),
        {"timestamp": "2025-03-02T08:00:00Z", "type": "compacted", "payload": {
            "message": "SUMMARY: the user asked a first question",
            "replacement_history": [user_item("first question")["payload"], reply("first answer")["payload"]]}},
        {"timestamp": "2025-03-02T08:00:00Z", "type": "event_msg", "payload": {"type": "context_compacted"}},
        user_event("second question", "2025-03-02T08:00:05Z"),
        reply("second answer", "2025-03-02T08:00:06Z"),
    ])
    episodes, skipped = run(path)
    assert [(s.position, s.reason, s.malformed) for s in skipped] == [(4, COMPACTION, False)]
    assert [(e.reference_time, e.content) for e in episodes] == [
        (utc("2025-03-01T10:00:00Z"), "User: first question\n\nAssistant: first answer"),
        (utc("2025-03-02T08:00:05Z"), "User: second question\n\nAssistant: second answer"),
    ]


def test_codex_malformed_lines_are_skipped_with_their_line(tmp_path):
    path = write_jsonl(tmp_path / _name(), [
        meta(),
        user_event("one", "2025-03-01T10:00:00Z"),
        '{"timestamp": "2025-03-01T10:00:01Z", "type": "response_item", "payl',
        [1, 2, 3],
        {"timestamp": "2025-03-01T10:00:02Z", "type": "response_item", "payload": "not an object"},
        {"timestamp": "2025-03-01T10:00:03Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": 42}},
        reply("reply one", "2025-03-01T10:00:04Z"),
        user_event("two", "2025-02-31T10:00:05Z"),  # no such day
        {"timestamp": "2025-03-01T10:00:06Z", "type": "event_msg", "payload": {"type": "user_message", "message": 7}},
        user_event("three", "2025-03-01T10:00:07Z"),
        reply("reply three", "2025-03-01T10:00:08Z"),
    ])
    with path.open("a") as handle:
        handle.write('{"timestamp": "2025-03-01T10:00:09Z", "type": "respo')  # cut off mid-write
    episodes, skipped = run(path)
    assert [(e.position, e.content) for e in episodes] == [
        (2, "User: one\n\nAssistant: reply one"), (10, "User: three\n\nAssistant: reply three")]
    assert [(s.position, s.malformed) for s in skipped] == [(n, True) for n in (3, 4, 5, 6, 8, 9, 12)]
    assert skipped[0].reason == skipped[-1].reason == "not valid JSON"
    assert skipped[4].reason == "bad timestamp"


def test_codex_records_without_time_take_the_last_known_time(tmp_path):
    path = write_jsonl(tmp_path / _name(), [
        meta("2025-03-01T09:00:00Z"),
        user_event("no time of its own"),
        reply("a", "2025-03-01T09:05:00Z"),
        item("function_call", "2025-03-01T09:06:00Z", name="x", arguments="{}", call_id="c"),
        user_item("also none"),
        user_event("also none"),
        reply("b"),
    ])
    episodes, _ = run(path, reference_time=EPOCH_1999, from_mtime=True)
    assert [(e.reference_time, e.reference_time_source) for e in episodes] == [
        (utc("2025-03-01T09:00:00Z"), "session"),  # the session start
        (utc("2025-03-01T09:06:00Z"), "session"),  # the record before it
    ]


def test_codex_without_any_time_needs_reference_time_or_mtime(tmp_path):
    path = write_jsonl(tmp_path / _name(), [user_event("when was this?"), reply("nobody knows")])
    episodes, skipped = run(path)
    assert episodes == [] and [(s.position, s.reason) for s in skipped] == [(1, NO_TIME)]
    [given], _ = run(path, reference_time=utc("2024-06-01"))
    assert (given.reference_time, given.reference_time_source) == (utc("2024-06-01"), "user")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    [dated], _ = run(path, from_mtime=True)
    assert (dated.reference_time, dated.reference_time_source) == (utc("2023-11-14T22:13:20Z"), "mtime")


def test_codex_legacy_rollout_without_wrapper(tmp_path):
    # 2025 rollouts: a meta line, then bare items without timestamps, and state markers.
    path = write_jsonl(tmp_path / "rollout-2025-04-20T12-00-00-abc.jsonl", [
        {"id": SID, "timestamp": "2025-04-20T10:00:00.000Z", "instructions": None},
        {"record_type": "state"},
        user_item("<user_instructions>\nalways use tabs\n</user_instructions>"),
        user_item("<environment_context>\n<cwd>/w</cwd>\n</environment_context>"),
        user_item("rename the module"),
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "local_shell_call", "call_id": "c", "status": "completed", "action": {"command": ["mv"]}},
        {"type": "local_shell_call_output", "call_id": "c", "output": "done"},
        reply("renamed"),
        {"record_type": "state"},
        user_item("thanks"),
        reply("you're welcome"),
    ])
    assert detect_format(path) == "codex"
    episodes, skipped = run(path)
    assert [(e.position, e.content, e.reference_time, e.reference_time_source, e.left_out) for e in episodes] == [
        (5, "User: rename the module\n\nAssistant: renamed", utc("2025-04-20T10:00:00Z"), "session",
         {"thinking": 1, "tool_use": 1, "tool_result": 1}),
        (11, "User: thanks\n\nAssistant: you're welcome", utc("2025-04-20T10:00:00Z"), "session", {}),
    ]
    assert [(s.position, s.reason) for s in skipped] == [(3, INJECTED), (4, INJECTED)]
    assert episodes[0].identity == f"codex\x1f{SID}:5"


def test_codex_injected_event_kinds_and_ide_context(tmp_path):
    path = write_jsonl(tmp_path / _name(), [
        meta(),
        user_event("<user_instructions>x</user_instructions>", "2025-03-01T10:00:00Z", kind="user_instructions"),
        user_event("<environment_context>y</environment_context>", "2025-03-01T10:00:00Z", kind="environment_context"),
        user_event("# Context from my IDE\n## Open tabs: a.py\n## My request for Codex:\nrename foo to bar",
                   "2025-03-01T10:00:01Z", kind="plain"),
        reply("done", "2025-03-01T10:00:02Z"),
    ])
    episodes, skipped = run(path)
    assert [e.content for e in episodes] == ["User: rename foo to bar\n\nAssistant: done"]
    assert [(s.position, s.reason) for s in skipped] == [(2, INJECTED), (3, INJECTED)]


def test_codex_images_counted_once_and_empty_turns_skipped(tmp_path):
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    path = write_jsonl(tmp_path / _name(), [
        meta(),
        user_item("what is in this picture", "2025-03-01T10:00:00Z",
                  {"type": "input_text", "text": "<image>"}, image, {"type": "input_text", "text": "</image>"}),
        user_event("what is in this picture", "2025-03-01T10:00:00Z", images=["data:image/png;base64,AAAA"]),
        reply("a cat", "2025-03-01T10:00:03Z"),
        user_item("", "2025-03-01T10:01:00Z", image),
        user_event("", "2025-03-01T10:01:00Z", images=["data:image/png;base64,BBBB"]),
        reply("another cat", "2025-03-01T10:01:03Z"),
    ])
    episodes, skipped = run(path)
    [episode] = episodes
    assert episode.content == "User: what is in this picture\n\nAssistant: a cat"
    assert episode.left_out == {"image": 1}
    assert [(s.position, s.reason, s.malformed) for s in skipped] == [(6, EMPTY, False)]


# --------------------------------------------------------------------------- gemini, hand-made

GID = "5b959dae-0000-4000-8000-000000000001"


def session(tmp_path: Path, messages: list, name: str = "session-2025-12-01T21-45-5b959dae.json", **top) -> Path:
    data = {"sessionId": GID, "projectHash": "ab", "startTime": "2025-12-01T21:45:00.000Z",
            "lastUpdated": "2025-12-01T22:00:00.000Z", **top, "messages": messages}
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def msg(mid: str, kind: str, content, ts: str | None = None, **extra) -> dict:
    return {"id": mid, **({"timestamp": ts} if ts else {}), "type": kind, "content": content, **extra}


def test_gemini_turns_text_only_with_everything_else_counted(tmp_path):
    path = session(tmp_path, [
        msg("u1", "user", "list the files", "2025-12-01T21:45:10.000Z"),
        msg("g1", "gemini", "", "2025-12-01T21:45:12.000Z",
            thoughts=[{"subject": "s", "description": "THOUGHT TEXT", "timestamp": "2025-12-01T21:45:11.000Z"}],
            toolCalls=[{"id": "t1", "name": "list_directory", "args": {"dir_path": "/secret/dir"},
                        "result": [{"functionResponse": {"response": {"output": "TOOL OUTPUT"}}}],
                        "status": "success", "timestamp": "2025-12-01T21:45:12.000Z"},
                       {"id": "t2", "name": "read_file", "args": {}, "status": "cancelled"}]),
        msg("i1", "info", "Request cancelled.", "2025-12-01T21:45:13.000Z"),
        msg("e1", "error", "quota exceeded", "2025-12-01T21:45:14.000Z"),
        msg("g2", "gemini", "There are two files.", "2025-12-01T21:45:15.000Z"),
        msg("u2", "user", [{"text": "what is this?"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}],
            "2025-12-01T23:45:20.000+02:00"),  # an offset is honoured
        msg("g3", "gemini", [{"text": "deliberating", "thought": True}, {"text": "A diagram."}],
            "2025-12-01T21:45:25.000Z"),
    ])
    episodes, skipped = run(path)
    assert skipped == []
    assert [(e.position, e.reference_time, e.reference_time_source, e.content, e.left_out, e.identity)
            for e in episodes] == [
        (1, utc("2025-12-01T21:45:10Z"), "record", "User: list the files\n\nAssistant: There are two files.",
         {"thinking": 1, "tool_use": 2, "tool_result": 1, "info": 1, "error": 1}, f"gemini\x1f{GID}:u1"),
        (6, utc("2025-12-01T21:45:20Z"), "record", "User: what is this?\n\nAssistant: A diagram.",
         {"image": 1, "thinking": 1}, f"gemini\x1f{GID}:u2"),
    ]


def test_gemini_missing_timestamps_are_interpolated(tmp_path):
    path = session(tmp_path, [
        msg("u1", "user", "first"),  # between startTime (21:45:00, before index 0) and g1
        msg("g1", "gemini", "ok", "2025-12-01T21:45:10.000Z"),
        msg("u2", "user", "second"),  # a third of the way from g1 to u3
        msg("g2", "gemini", "ok"),
        msg("u3", "user", "third", "2025-12-01T21:45:40.000Z"),
        msg("g3", "gemini", "ok", "2025-12-01T21:45:41.000Z"),
        msg("u4", "user", "fourth"),  # between g3 and lastUpdated (22:00:00, after the last)
    ])
    episodes, _ = run(path, reference_time=EPOCH_1999, from_mtime=True)
    assert [(e.reference_time, e.reference_time_source) for e in episodes] == [
        (utc("2025-12-01T21:45:05Z"), "session"),
        (utc("2025-12-01T21:45:20Z"), "session"),
        (utc("2025-12-01T21:45:40Z"), "record"),
        (utc("2025-12-01T21:52:50.500Z"), "session"),
    ]


def test_gemini_without_any_time_needs_reference_time(tmp_path):
    path = session(tmp_path, [msg("u1", "user", "hi"), msg("g1", "gemini", "hello")],
                   startTime=None, lastUpdated=None)
    episodes, skipped = run(path)
    assert episodes == [] and [(s.position, s.reason) for s in skipped] == [(1, NO_TIME)]
    [episode], _ = run(path, reference_time=utc("2025-12-01"))
    assert (episode.reference_time, episode.reference_time_source) == (utc("2025-12-01"), "user")


def test_gemini_malformed_messages_are_skipped_alone(tmp_path):
    path = session(tmp_path, [
        "not a message",
        msg("u1", "user", 42, "2025-12-01T21:45:01Z"),
        msg("u2", "user", "fine", "2025-12-01T21:45:02Z"),
        msg("g2", "gemini", "answer", "2025-12-01T21:45:03Z"),
        msg("u3", "user", "bad date", "2025-13-01T00:00:00Z"),
        msg("u4", "user", "   ", "2025-12-01T21:45:05Z"),
        msg("g4", "gemini", "answer to nothing", "2025-12-01T21:45:06Z"),
    ])
    episodes, skipped = run(path)
    assert [(e.position, e.content) for e in episodes] == [(3, "User: fine\n\nAssistant: answer")]
    assert [(s.position, s.reason, s.malformed) for s in skipped] == [
        (1, "message is not an object", True),
        (2, "message content is neither text nor parts", True),
        (5, "bad timestamp", True),
        (6, EMPTY, False),
    ]


def test_gemini_bad_or_foreign_json_is_refused(tmp_path):
    broken = tmp_path / "session-broken.json"
    broken.write_text('{"sessionId": "x", "messages": [')
    with pytest.raises(FileRefused, match="not valid JSON"):
        run(broken, "gemini")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"sessionId": "x", "startTime": "2025-01-01T00:00:00Z"}))
    assert detect_format(other) is None
    with pytest.raises(FileRefused, match="not a Gemini CLI session"):
        run(other, "gemini")


def test_gemini_prompt_log_shape(tmp_path):
    logs = tmp_path / "logs.json"
    logs.write_text(json.dumps([{"sessionId": GID, "messageId": 0, "type": "user", "message": "hi",
                                 "timestamp": "2025-12-01T21:45:34.356Z"}]))
    assert detect_format(logs) is None
    episodes, skipped = run(logs, "gemini")
    assert episodes == [] and reasons(skipped) == Counter({PROMPT_LOG: 1})
