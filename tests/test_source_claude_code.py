"""Claude Code session logs: every real file, and a hand-made file for each pitfall.

What these check is the rule memctl exists for: an episode is dated by the user
message's own timestamp (never the import, never the file's mtime), one episode per
human turn, the reply's text once, and the same turn seen again in a resumed session
gets the same episode id.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from memctl.model import Episode
from memctl.sources import MAX_EPISODE_CHARS, NO_TIME, IngestOptions, Skipped, detect_format, parse
from memctl.sources import claude_code as cc
from memctl.times import normalize_instant
from tests.conftest import REALDATA, needs_realdata, write_jsonl

REAL = REALDATA / "daaain-claude-code-log" / "real_projects"
REAL_FILES = sorted(REAL.rglob("*.jsonl")) if REAL.is_dir() else []


def run(path: Path, **options) -> tuple[list[Episode], list[Skipped]]:
    episodes, skipped = [], []
    for item in parse(path, IngestOptions(**options), "claude-code"):
        (skipped if isinstance(item, Skipped) else episodes).append(item)
    return episodes, skipped


# ---------------------------------------------------------------------------------------
# Every real file, checked against an independent reading of its raw JSON.


def raw_records(path: Path) -> list[tuple[int, dict]]:
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                records.append((number, json.loads(line)))
    return records


_NOT_TYPED = re.compile(
    r"^(<command-|<local-command-|<bash-|Caveat: The messages below|\[Request interrupted by user)"
)
_IDE = re.compile(r"<(ide_opened_file|ide_selection)>.*?</\1>", re.DOTALL)


def answered_commands(records: list[tuple[int, dict]]) -> set[str]:
    """uuids of slash-command lines the model answered: an assistant line right under the
    command's expanded prompt (the isMeta line whose parent is the command)."""
    commands = {r["uuid"] for _, r in records if r.get("type") == "user" and "<command-name>" in json.dumps(r)}
    parents = {r.get("parentUuid") for _, r in records if r.get("type") == "assistant"}
    return {r["parentUuid"] for _, r in records
            if r.get("isMeta") and r.get("uuid") in parents and r.get("parentUuid") in commands}


def looks_typed(record: dict, commands: set[str] = frozenset()) -> bool:
    """A crude, separate reading of 'a person typed this' (or a parent agent's task)."""
    if record.get("uuid") in commands:
        return True
    if record.get("type") != "user" or record.get("isMeta") or record.get("isCompactSummary"):
        return False
    content = record["message"]["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if any(b.get("type") == "tool_result" for b in blocks):
        return False
    text = " ".join(b["text"] for b in blocks if b.get("type") == "text")
    text = _IDE.sub("", text).strip()
    if not text or _NOT_TYPED.match(text):
        return False
    return not (record.get("isSidechain") and text == "Warmup")


@needs_realdata
def test_real_sample_is_there():
    assert len(REAL_FILES) >= 90
    assert any("subagents" in p.parts for p in REAL_FILES)
    assert any(p.name.startswith("agent-") and "subagents" not in p.parts for p in REAL_FILES)


@needs_realdata
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: str(p.relative_to(REAL)))
def test_every_real_file(path: Path):
    records = raw_records(path)
    stamps = [normalize_instant(r["timestamp"]) for _, r in records if isinstance(r.get("timestamp"), str)]
    by_line = dict(records)
    commands = answered_commands(records)
    typed = [n for n, r in records if looks_typed(r, commands)]

    # --from-mtime is on: a parser that lost a record's time would show up as "mtime".
    episodes, skipped = run(path, from_mtime=True)

    assert not [s for s in skipped if s.malformed], "the real files are well-formed"
    assert [e.position for e in episodes] == typed
    for episode in episodes:
        assert stamps and min(stamps) <= episode.reference_time <= max(stamps)
        assert episode.reference_time_source == "record"
        record = by_line[episode.position]
        # dated by the user message's own timestamp, and identified by its uuid
        assert episode.reference_time == normalize_instant(record["timestamp"])
        assert episode.source_id == record["uuid"]
        assert episode.identity == f"claude-code\x1f{record['uuid']}"
        assert episode.content.startswith("User: ")
        assert "tool_use_id" not in episode.content and "toolu_" not in episode.content
    # a summary line is a generated title, never an episode
    titles = sum(1 for _, r in records if r.get("type") == "summary")
    assert Counter(s.reason for s in skipped)[cc.GENERATED_TITLE] == titles


@needs_realdata
def test_every_real_log_is_detected_as_claude_code():
    logs = [p for p in REAL_FILES if p.stat().st_size > 0]
    assert [p for p in logs if detect_format(p) != "claude-code"] == []


@needs_realdata
def test_real_totals_and_skips():
    episodes, reasons = 0, Counter()
    for path in REAL_FILES:
        got, skipped = run(path)
        episodes += len(got)
        reasons.update(s.reason for s in skipped)
    assert episodes >= 75
    assert reasons[cc.GENERATED_TITLE] >= 30
    assert reasons[cc.WARMUP] >= 20
    assert reasons[cc.LOCAL_COMMAND] >= 30
    assert reasons[cc.META_MESSAGE] >= 15
    assert reasons[cc.INTERRUPTION] >= 5
    assert NO_TIME not in reasons


@needs_realdata
def test_real_empty_summary_only_and_snapshot_only_files_give_nothing():
    empty = [p for p in REAL_FILES if p.stat().st_size == 0]
    assert empty
    for path in empty:
        assert run(path) == ([], [])
    summary_only = REAL / "-Users-dain-workspace-claude-code-log-sample" / "4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl"
    episodes, skipped = run(summary_only)
    assert episodes == [] and [s.reason for s in skipped] == [cc.GENERATED_TITLE]
    snapshots = REAL / "-experiments-ideas" / "a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl"
    assert run(snapshots) == ([], [])


@needs_realdata
def test_real_reply_found_through_a_parent_written_after_its_child():
    # Parallel tool results: line 145 names as parent the line written at 146, and the
    # reply that ends the turn hangs below 145.
    path = REAL / "-experiments-worktrees" / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
    episodes, _ = run(path)
    turn = next(e for e in episodes if e.position == 117)
    assert turn.content.startswith("User: Well, the subagents seem to be either stuck or done")
    assert "All three round-2 agents" in turn.content
    assert "Experiment complete." in turn.content
    assert turn.left_out["tool_use"] == turn.left_out["tool_result"] > 5


@needs_realdata
def test_real_subagent_logs():
    new = REAL / "-experiments-worktrees" / "ef958aa1-0e93-49f0-bb71-150f63befcd1" / "subagents"
    episodes, _ = run(new / "agent-a4ca7529859c158c2.jsonl")
    assert len(episodes) == 1
    assert episodes[0].content.startswith("User: You are **alice**")  # the parent agent's task
    assert "Assistant: " in episodes[0].content
    assert list(cc.turns(new / "agent-a4ca7529859c158c2.meta.json", IngestOptions())) == []
    warmup = REAL / "-Users-dain-workspace-claude-code-log-sample" / "agent-3be551df.jsonl"
    episodes, skipped = run(warmup)
    assert episodes == [] and [(s.position, s.reason) for s in skipped] == [(1, cc.WARMUP)]


@needs_realdata
def test_real_slash_command_session_is_a_turn_with_its_reply():
    # /init (line 3) expands to an isMeta prompt (line 4); the reply under it answers the
    # command, and only the command: the next human turn (line 47) does not get it.
    path = REAL / "-Users-dain-workspace-JSSoundRecorder" / "7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl"
    episodes, skipped = run(path)
    assert (3, cc.LOCAL_COMMAND) not in [(s.position, s.reason) for s in skipped]
    assert [e.position for e in episodes] == [3, 47, 59, 64, 99, 169]
    init, after = episodes[0], episodes[1]
    user_part, _, reply = init.content.partition("\n\nAssistant: ")
    assert user_part.startswith("User: /init\n\nPlease analyze this codebase and create a CLAUDE.md file")
    assert "I've created a [CLAUDE.md](CLAUDE.md) file for this repository" in reply
    assert init.reference_time == "2025-11-17T23:50:06.058000Z" and init.reference_time_source == "record"
    assert "Please analyze this codebase" not in after.content and "I've created a" not in after.content
    assert "<ide_opened_file>" not in after.content and after.left_out["ide_context"] == 1


@needs_realdata
def test_real_pasted_har_file_is_cut_and_the_reply_kept_whole():
    # The user pastes a whole HAR file (36 kB) and asks what is wrong; the answer is the
    # episode's point. The paste is cut in the middle: its start (the question) and its end
    # stay, and the reply is whole.
    path = REAL / "-Users-dain-workspace-danieldemmel-me-next" / "9e953218-585f-4692-89df-9e0747a31c68.jsonl"
    [har] = [e for e in run(path)[0] if e.position == 123]
    user_part, _, reply = har.content.partition("\n\nAssistant: ")
    assert user_part.startswith("User: Are you sure the HTML is the issue?") and "This is the full HAR:" in user_part
    assert re.search(r"\n\[cut: \d+ characters\]\n", user_part) and har.cut_chars > 15_000
    assert reply.startswith("Ah! I see the issue now. Looking at the HAR file:")
    assert reply.endswith("Your changes are staged and ready to commit!")
    assert len(har.content) <= MAX_EPISODE_CHARS + 100


@needs_realdata
def test_real_skill_loaded_mid_turn_does_not_cut_the_reply():
    # A subagent loads a skill (a tool call); Claude Code writes the skill's text as an
    # isMeta line under the tool result. The agent's work after it is still the task's reply.
    path = REAL / "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a52886dc180afb356.jsonl"
    [task], skipped = run(path)
    assert (7, cc.META_MESSAGE) in [(s.position, s.reason) for s in skipped]
    assert "Base directory for this skill" not in task.content
    assert "I have the skill guidance loaded." in task.content


# ---------------------------------------------------------------------------------------
# Hand-made files, one pitfall each.

SESSION = "11111111-1111-1111-1111-111111111111"


def user(uuid, parent, ts, content, **extra) -> dict:
    line = {"parentUuid": parent, "isSidechain": False, "userType": "external", "sessionId": SESSION,
            "type": "user", "message": {"role": "user", "content": content}, "uuid": uuid}
    if ts is not None:
        line["timestamp"] = ts
    line.update(extra)
    return line


def assistant(uuid, parent, ts, message_id, *blocks, **extra) -> dict:
    line = {"parentUuid": parent, "isSidechain": False, "sessionId": SESSION, "type": "assistant",
            "message": {"id": message_id, "role": "assistant", "model": "claude-x", "content": list(blocks)},
            "uuid": uuid, "timestamp": ts}
    line.update(extra)
    return line


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def tool_use(tool_id: str) -> dict:
    return {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": "/x"}}


def tool_result(uuid, parent, ts, tool_id) -> dict:
    return user(uuid, parent, ts, [{"type": "tool_result", "tool_use_id": tool_id, "content": "SECRET OUTPUT"}])


THINK = {"type": "thinking", "thinking": "hmm", "signature": "sig"}


def test_one_episode_per_turn_with_split_reply_joined_once(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "isSnapshotUpdate": False},
        user("u1", None, "2025-03-01T10:00:00.000Z", "We moved billing to Postgres."),
        assistant("a1", "u1", "2025-03-01T10:00:01.000Z", "msg_1", THINK),
        assistant("a2", "a1", "2025-03-01T10:00:02.000Z", "msg_1", text("Noted.")),
        assistant("a3", "a2", "2025-03-01T10:00:03.000Z", "msg_1", tool_use("t1")),
        tool_result("r1", "a3", "2025-03-01T10:00:04.000Z", "t1"),
        # a later line of the same message that repeats a block already written
        assistant("a4", "r1", "2025-03-01T10:00:05.000Z", "msg_1", text("Noted.")),
        assistant("a5", "a4", "2025-03-01T10:00:06.000Z", "msg_2", text("Done, see the file.")),
        user("u2", "a5", "2025-03-01T11:00:00.000Z", [text("And the cache?"), {"type": "image", "source": {}}]),
        assistant("a6", "u2", "2025-03-01T11:00:01.000Z", "msg_3", text("Redis.")),
    ])
    episodes, skipped = run(path)
    assert skipped == []
    first, second = episodes
    assert first.content == "User: We moved billing to Postgres.\n\nAssistant: Noted.\n\nDone, see the file."
    assert first.left_out == {"thinking": 1, "tool_use": 1, "tool_result": 1}
    assert first.position == 2 and first.reference_time == "2025-03-01T10:00:00.000000Z"
    assert first.reference_time_source == "record" and first.source_id == "u1"
    assert "SECRET OUTPUT" not in first.content
    assert second.content == "User: And the cache?\n\nAssistant: Redis."
    assert second.left_out == {"image": 1}
    assert second.reference_time == "2025-03-01T11:00:00.000000Z"


def test_file_order_is_not_tree_order_nor_time_order(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        # the second turn is written first; a reply is written before the line it hangs below
        user("u2", "a1", "2025-03-02T09:00:00Z", "second question"),
        assistant("a2", "x2", "2025-03-02T09:00:02Z", "msg_2", text("second answer")),
        {"type": "attachment", "uuid": "x2", "parentUuid": "u2", "timestamp": "2025-03-02T09:00:01Z",
         "attachment": {"type": "hook_success"}},
        user("u1", None, "2025-03-01T09:00:00+02:00", "first question"),
        assistant("a1", "u1", "2025-03-01T07:00:01Z", "msg_1", text("first answer")),
    ])
    episodes, _ = run(path)
    assert [(e.position, e.reference_time) for e in episodes] == [
        (1, "2025-03-02T09:00:00.000000Z"),
        (4, "2025-03-01T07:00:00.000000Z"),  # the offset is honoured
    ]
    assert episodes[0].content.endswith("Assistant: second answer")
    assert episodes[1].content.endswith("Assistant: first answer")


def test_branches_keep_each_reply_with_its_own_turn(tmp_path):
    # The user rewound and asked something else from the same point.
    path = write_jsonl(tmp_path / "s.jsonl", [
        user("u1", None, "2025-03-01T09:00:00Z", "plan A?"),
        assistant("a1", "u1", "2025-03-01T09:00:01Z", "msg_1", text("A is fine")),
        user("u2", None, "2025-03-01T09:05:00Z", "plan B?"),
        assistant("a2", "u2", "2025-03-01T09:05:01Z", "msg_2", text("B is better")),
    ])
    episodes, _ = run(path)
    assert [e.content for e in episodes] == [
        "User: plan A?\n\nAssistant: A is fine",
        "User: plan B?\n\nAssistant: B is better",
    ]


def test_compaction_summary_is_skipped_and_takes_no_reply(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        user("u1", None, "2025-03-01T09:00:00Z", "we use MySQL"),
        assistant("a1", "u1", "2025-03-01T09:00:01Z", "msg_1", text("ok")),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
         "logicalParentUuid": "a1", "timestamp": "2025-06-01T09:00:00Z", "content": "Conversation compacted"},
        user("c1", "b1", "2025-06-01T09:00:00Z",
             "This session is being continued from a previous conversation. Summary: we use MySQL",
             isCompactSummary=True, isVisibleInTranscriptOnly=True),
        assistant("a2", "c1", "2025-06-01T09:00:05Z", "msg_2", text("Continuing with MySQL work")),
        # an old log without the flag: recognised by its text
        user("c2", "a2", "2025-07-01T09:00:00Z",
             "This session is being continued from a previous conversation that ran out of context."),
    ])
    episodes, skipped = run(path)
    assert len(episodes) == 1
    assert episodes[0].content == "User: we use MySQL\n\nAssistant: ok"
    assert [(s.position, s.reason, s.malformed) for s in skipped] == [
        (4, cc.COMPACTION_SUMMARY, False),
        (6, cc.COMPACTION_SUMMARY, False),
    ]


def test_meta_local_commands_caveats_and_interruptions_are_not_turns(tmp_path):
    caveat = ("Caveat: The messages below were generated by the user while running local commands. "
              "DO NOT respond to these messages or otherwise consider them in your response unless the user "
              "explicitly asks you to.")
    path = write_jsonl(tmp_path / "s.jsonl", [
        user("u1", None, "2025-03-01T09:00:00Z", "real question"),
        assistant("a1", "u1", "2025-03-01T09:00:01Z", "msg_1", text("real answer")),
        user("m1", "a1", "2025-03-01T09:01:00Z", caveat, isMeta=True),
        user("m2", "m1", "2025-03-01T09:01:00Z",
             "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>"),
        user("m3", "m2", "2025-03-01T09:01:00Z", "<local-command-stdout>Set model to opus</local-command-stdout>"),
        user("m4", "m3", "2025-03-01T09:02:00Z", "<bash-input>uv run pytest</bash-input>"),
        user("m5", "m4", "2025-03-01T09:02:01Z", "<bash-stdout>3 passed</bash-stdout><bash-stderr></bash-stderr>"),
        user("m6", "m5", "2025-03-01T09:03:00Z", "<local-command-caveat>" + caveat + "</local-command-caveat>", isMeta=True),
        user("m7", "m6", "2025-03-01T09:04:00Z", "<command-message>init is analyzing…</command-message>\n<command-name>/init</command-name>"),
        user("m8", "m7", "2025-03-01T09:04:00Z", [text("Please analyze this codebase and create a CLAUDE.md")], isMeta=True),
        assistant("a8", "m8", "2025-03-01T09:04:05Z", "msg_8", text("CLAUDE.md written")),
        user("i1", "a8", "2025-03-01T09:05:00Z", [text("[Request interrupted by user for tool use]")]),
        user("i2", "i1", "2025-03-01T09:05:01Z", [text("[Request interrupted by user]")]),
        user("u2", "i2", "2025-03-01T09:06:00Z", "follow-up"),
    ])
    episodes, skipped = run(path)
    assert [(e.position, e.content) for e in episodes] == [
        (1, "User: real question\n\nAssistant: real answer"),
        # /init is answered by the model: a turn, with its expanded prompt as context
        (9, "User: /init\n\nPlease analyze this codebase and create a CLAUDE.md\n\nAssistant: CLAUDE.md written"),
        (14, "User: follow-up"),
    ]
    assert [(s.position, s.reason) for s in skipped] == [
        (3, cc.META_MESSAGE), (4, cc.LOCAL_COMMAND), (5, cc.LOCAL_COMMAND), (6, cc.LOCAL_COMMAND),
        (7, cc.LOCAL_COMMAND), (8, cc.META_MESSAGE), (12, cc.INTERRUPTION), (13, cc.INTERRUPTION),
    ]
    assert not any(s.malformed for s in skipped)


def test_custom_command_with_arguments_is_the_turn_and_its_long_prompt_is_cut_before_the_reply(tmp_path):
    # A custom command from .claude/commands: the line names it and its arguments, the
    # isMeta line under it is the command file with the arguments filled in. The prompt
    # may be long (a pasted checklist); it is cut like any long user turn, the reply kept.
    prompt = "Fix GitHub issue 123 following these steps:\n" + "\n".join(f"- step {i}: check it" for i in range(3000))
    path = write_jsonl(tmp_path / "s.jsonl", [
        user("c1", None, "2025-03-01T09:00:00Z",
             "<command-message>fix-issue is running…</command-message>\n<command-name>/fix-issue</command-name>\n"
             "<command-args>123 --quick</command-args>"),
        user("p1", "c1", "2025-03-01T09:00:00Z", [text(prompt)], isMeta=True),
        assistant("a1", "p1", "2025-03-01T09:00:04Z", "msg_1", text("Looking at issue 123."), tool_use("t1")),
        user("r1", "a1", "2025-03-01T09:00:05Z", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
        assistant("a2", "r1", "2025-03-01T09:00:09Z", "msg_2", text("Fixed: the parser now skips blank lines.")),
        # a command nobody answers: Claude Code ran it itself
        user("c2", "a2", "2025-03-01T09:01:00Z",
             "<command-name>/cost</command-name>\n<command-message>cost</command-message>\n<command-args></command-args>"),
        user("o2", "c2", "2025-03-01T09:01:00Z", "<local-command-stdout>Total cost: $0.12</local-command-stdout>"),
        user("u3", "o2", "2025-03-01T09:02:00Z", "thanks"),
    ])
    episodes, skipped = run(path)
    assert [(e.position, e.reference_time, e.identity) for e in episodes] == [
        (1, "2025-03-01T09:00:00.000000Z", "claude-code\x1fc1"), (8, "2025-03-01T09:02:00.000000Z", "claude-code\x1fu3")]
    fix = episodes[0]
    assert fix.content.startswith("User: /fix-issue 123 --quick\n\nFix GitHub issue 123 following these steps:")
    assert fix.content.endswith("Assistant: Looking at issue 123.\n\nFixed: the parser now skips blank lines.")
    assert fix.cut_chars > 0 and "characters]" in fix.content.partition("Assistant: ")[0]
    assert len(fix.content) <= MAX_EPISODE_CHARS + 100
    assert fix.left_out == {"tool_use": 1, "tool_result": 1}
    assert [(s.position, s.reason) for s in skipped] == [(6, cc.LOCAL_COMMAND), (7, cc.LOCAL_COMMAND)]


def test_a_meta_line_under_a_tool_result_does_not_end_the_turn(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        user("u1", None, "2025-03-01T09:00:00Z", "write the doc"),
        assistant("a1", "u1", "2025-03-01T09:00:01Z", "msg_1", tool_use("t1")),
        user("r1", "a1", "2025-03-01T09:00:02Z", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        user("m1", "r1", "2025-03-01T09:00:02Z", [text("Base directory for this skill: /x")], isMeta=True),
        assistant("a2", "m1", "2025-03-01T09:00:09Z", "msg_2", text("Doc written.")),
    ])
    [episode], skipped = run(path)
    assert episode.content == "User: write the doc\n\nAssistant: Doc written."
    assert [(s.position, s.reason) for s in skipped] == [(4, cc.META_MESSAGE)]


def test_injected_ide_context_and_reminders_are_left_out(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        user("u1", None, "2025-03-01T09:00:00Z", [
            text("<ide_opened_file>The user opened the file /a.py in the IDE.</ide_opened_file>"),
            text("<ide_selection>The user selected lines 1 to 2:\nx = 1</ide_selection>"),
            text("Why is x one? <system-reminder>be brief</system-reminder>"),
        ]),
        user("u2", "u1", "2025-03-01T09:01:00Z",
             [text("<ide_opened_file>The user opened the file /b.py</ide_opened_file>")]),
    ])
    episodes, skipped = run(path)
    assert [e.content for e in episodes] == ["User: Why is x one?"]
    assert episodes[0].left_out == {"ide_context": 2, "system_reminder": 1}
    assert [(s.position, s.reason) for s in skipped] == [(2, cc.EMPTY_TURN)]


def test_subagent_sidechain_task_is_a_turn_and_warmup_is_not(tmp_path):
    sidechain = {"isSidechain": True, "agentId": "a1b2"}
    path = write_jsonl(tmp_path / "agent-a1b2.jsonl", [
        user("w1", None, "2025-03-01T09:00:00Z", "Warmup", **sidechain),
        assistant("wa", "w1", "2025-03-01T09:00:01Z", "msg_w", text("Ready to help!"), **sidechain),
        user("t1", None, "2025-03-01T09:10:00Z", "Find where billing picks its database.", **sidechain),
        assistant("ta", "t1", "2025-03-01T09:10:05Z", "msg_t", text("It reads BILLING_DB."), tool_use("t9"),
                  **sidechain),
        {**tool_result("tr", "ta", "2025-03-01T09:10:06Z", "t9"), **sidechain},
    ])
    episodes, skipped = run(path)
    assert [(e.position, e.content) for e in episodes] == [
        (3, "User: Find where billing picks its database.\n\nAssistant: It reads BILLING_DB."),
    ]
    assert episodes[0].left_out == {"tool_use": 1, "tool_result": 1}
    assert [(s.position, s.reason) for s in skipped] == [(1, cc.WARMUP)]
    # "Warmup" typed in a main session is what a person said
    main = write_jsonl(tmp_path / "main.jsonl", [user("w2", None, "2025-03-01T09:00:00Z", "Warmup")])
    assert len(run(main)[0]) == 1


def test_titles_empty_and_summary_only_files(tmp_path):
    titles = write_jsonl(tmp_path / "t.jsonl", [
        {"type": "summary", "summary": "Billing moves to Postgres", "leafUuid": "zzz"},
        {"type": "summary", "summary": "Cache fix", "leafUuid": "yyy"},
    ])
    episodes, skipped = run(titles, from_mtime=True)
    assert episodes == []
    assert [(s.position, s.reason, s.malformed) for s in skipped] == [
        (1, cc.GENERATED_TITLE, False), (2, cc.GENERATED_TITLE, False)]
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    assert run(empty, from_mtime=True) == ([], [])
    blank = tmp_path / "b.jsonl"
    blank.write_text("\n\n")
    assert run(blank, from_mtime=True) == ([], [])


def test_truncated_last_line_is_reported_and_the_rest_kept(tmp_path):
    good = [
        user("u1", None, "2025-03-01T09:00:00Z", "first"),
        assistant("a1", "u1", "2025-03-01T09:00:01Z", "msg_1", text("one")),
        user("u2", "a1", "2025-03-01T09:01:00Z", "second"),
    ]
    cut = json.dumps(assistant("a2", "u2", "2025-03-01T09:01:01Z", "msg_2", text("two")))[:40]
    path = write_jsonl(tmp_path / "s.jsonl", [*good, cut])
    episodes, skipped = run(path)
    assert [e.content for e in episodes] == ["User: first\n\nAssistant: one", "User: second"]
    assert len(skipped) == 1
    assert skipped[0].position == 4 and skipped[0].malformed
    assert skipped[0].reason.startswith("malformed line")


def test_wrong_types_are_malformed_and_do_not_stop_the_file(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        "[1, 2, 3]",
        {"type": "user", "uuid": "x1", "parentUuid": None, "timestamp": "2025-03-01T09:00:00Z", "message": "hi"},
        {**user("x2", None, "2025-03-01T09:00:00Z", "hi"), "uuid": 42},
        user("x3", None, "2025-03-01T09:00:00Z", {"text": "not a list"}),
        user("x4", None, "2025-03-01T09:00:00Z", [text("ok"), "not a block"]),
        user("x5", None, "2025-03-01T09:00:00Z", [{"type": "text", "text": 7}]),
        user("x6", None, "last tuesday", "a time that is not an instant"),
        assistant("x7", None, "2025-03-01T09:00:00Z", "m", text("fine")) | {"message": None},
        user("ok", None, "2025-03-01T10:00:00Z", "still parsed"),
    ])
    episodes, skipped = run(path)
    assert [e.content for e in episodes] == ["User: still parsed"]
    assert [(s.position, s.malformed) for s in skipped] == [(n, True) for n in range(1, 9)]
    assert "timestamp" in skipped[6].reason


def test_user_line_without_its_own_time(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        user("u1", None, "2025-03-01T09:00:00Z", "first"),
        assistant("a1", "u1", "2025-03-01T09:00:30Z", "msg_1", text("one")),
        user("u2", "a1", None, "no time of its own"),  # dated by the line above it in the tree
        user("u3", None, None, "nothing above"),
        assistant("a3", "u3", "2025-03-05T12:00:00Z", "msg_3", text("dated by the reply")),
        user("u4", None, None, "no time anywhere"),
    ])
    episodes, skipped = run(path)
    assert [(e.position, e.reference_time, e.reference_time_source) for e in episodes] == [
        (1, "2025-03-01T09:00:00.000000Z", "record"),
        (3, "2025-03-01T09:00:30.000000Z", "session"),
        (4, "2025-03-05T12:00:00.000000Z", "session"),
    ]
    assert [(s.position, s.reason) for s in skipped] == [(6, NO_TIME)]
    episodes, _ = run(path, reference_time="2024-01-01T00:00:00.000000Z")
    assert (episodes[-1].position, episodes[-1].reference_time_source) == (6, "user")


def test_resumed_session_repeats_lines_with_the_same_episode_ids(tmp_path):
    earlier = [
        user("u1", None, "2025-03-01T09:00:00Z", "we use MySQL"),
        assistant("a1", "u1", "2025-03-01T09:00:01Z", "msg_1", text("ok")),
        user("u2", "a1", "2025-03-01T09:05:00Z", "and Redis for cache"),
        assistant("a2", "u2", "2025-03-01T09:05:01Z", "msg_2", text("noted")),
    ]
    first = write_jsonl(tmp_path / "aaaa.jsonl", earlier)
    resumed = [{**line, "sessionId": "22222222-2222-2222-2222-222222222222"} for line in earlier]
    second = write_jsonl(tmp_path / "bbbb.jsonl", [
        {"type": "summary", "summary": "DB choices", "leafUuid": "a2"},
        *resumed,
        user("u3", "a2", "2025-04-01T09:00:00Z", "we moved to Postgres"),
        assistant("a3", "u3", "2025-04-01T09:00:01Z", "msg_3", text("updated")),
    ])
    one, _ = run(first)
    two, _ = run(second)
    assert [e.id for e in one] == [e.id for e in two[:2]]
    assert [e.reference_time for e in one] == [e.reference_time for e in two[:2]]
    assert len({e.id for e in one + two}) == 3
    assert two[2].source_id == "u3" and two[2].reference_time == "2025-04-01T09:00:00.000000Z"


def test_a_line_repeated_within_one_file_counts_once(tmp_path):
    line_u = user("u1", None, "2025-03-01T09:00:00Z", "hello")
    line_a = assistant("a1", "u1", "2025-03-01T09:00:01Z", "msg_1", text("hi"), tool_use("t1"))
    path = write_jsonl(tmp_path / "s.jsonl", [line_u, line_a, line_u, line_a])
    episodes, skipped = run(path)
    assert [e.content for e in episodes] == ["User: hello\n\nAssistant: hi"]
    assert episodes[0].left_out == {"tool_use": 1}
    assert [(s.position, s.reason) for s in skipped] == [(3, cc.REPEATED_TURN)]


def test_reply_without_its_user_turn_is_reported(tmp_path):
    # Old agent-*.jsonl logs start with the subagent's answer; its prompt is elsewhere.
    path = write_jsonl(tmp_path / "agent-1234abcd.jsonl", [
        assistant("a1", None, "2025-03-01T09:00:00Z", "msg_1", text("I'll search"), tool_use("t1"),
                  isSidechain=True),
        tool_result("r1", "a1", "2025-03-01T09:00:01Z", "t1"),
        assistant("a2", "r1", "2025-03-01T09:00:02Z", "msg_2", text("found it"), isSidechain=True),
    ])
    episodes, skipped = run(path)
    assert episodes == []
    assert [(s.position, s.reason, s.malformed) for s in skipped] == [(1, cc.NO_USER_TURN, False)]


def test_synthetic_assistant_messages_are_left_out(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        user("u1", None, "2025-03-01T09:00:00Z", "hello"),
        {**assistant("a1", "u1", "2025-03-01T09:00:01Z", "msg_1", text("API Error: overloaded")),
         "isApiErrorMessage": True},
        assistant("a2", "a1", "2025-03-01T09:00:02Z", "msg_2", text("No response requested."))
        | {"message": {"id": "msg_2", "model": "<synthetic>", "content": [text("No response requested.")]}},
    ])
    episodes, _ = run(path)
    assert episodes[0].content == "User: hello"
    assert episodes[0].left_out == {"synthetic": 2}


def test_secrets_in_a_turn_are_redacted(tmp_path):
    key = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    path = write_jsonl(tmp_path / "s.jsonl", [user("u1", None, "2025-03-01T09:00:00Z", f"my key is {key}")])
    episodes, _ = run(path)
    assert key not in episodes[0].content and episodes[0].redactions >= 1


def test_odd_fields_on_lines_that_are_not_messages_are_passed_over(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        {"type": "progress", "uuid": 7, "parentUuid": None, "timestamp": 1700000000},
        {"type": "queue-operation", "operation": "enqueue", "timestamp": "2025-03-01T08:59:59Z",
         "content": [text("hello")]},
        user("u1", None, "2025-03-01T09:00:00Z", "hello"),
    ])
    episodes, skipped = run(path)
    assert [e.content for e in episodes] == ["User: hello"]  # the queued copy is not a second turn
    assert skipped == []
