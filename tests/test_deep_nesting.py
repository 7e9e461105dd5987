"""A value nested deeper than Python's JSON reader follows (a message 5,000 brackets deep)
skips its conversation, or its message, with the reason; the rest of the export is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctl.errors import FileRefused
from memctl.model import Episode
from memctl.sources import IngestOptions, Skipped, TooDeep, load_json, parse
from tests.test_source_chat_exports import chain, claude_conversation, claude_message, conversation

DEEP = "[" * 5000 + "]" * 5000
PLACE = "__deep__"


def write_with_deep(path: Path, data) -> Path:
    """``data`` as JSON, with the string PLACE replaced by a value 5,000 levels deep."""
    path.write_text(json.dumps(data).replace(json.dumps(PLACE), DEEP))
    return path


def read(path: Path, fmt: str) -> tuple[list[Episode], list[Skipped]]:
    items = list(parse(path, IngestOptions(), fmt))
    return [i for i in items if isinstance(i, Episode)], [i for i in items if isinstance(i, Skipped)]


def test_chatgpt_export_keeps_every_conversation_but_the_deep_one(tmp_path):
    exchange = lambda text, t: chain(("user", text, t), ("assistant", "noted", t + 1))  # noqa: E731
    mapping_deep, current_deep = exchange("second", 1_700_000_100.0)
    mapping_deep[current_deep]["message"]["content"]["parts"] = [PLACE]
    path = write_with_deep(tmp_path / "conversations.json", [
        conversation("c1", *exchange("we use Postgres for billing", 1_700_000_000.0)),
        conversation("c2", mapping_deep, current_deep),
        conversation("c3", *exchange("the cache is Redis", 1_700_000_200.0)),
    ])
    episodes, skipped = read(path, "chatgpt")
    assert [e.content.splitlines()[0] for e in episodes] == ["User: we use Postgres for billing", "User: the cache is Redis"]
    assert [(s.reason, s.malformed) for s in skipped] == [
        (f"conversation 2: {TooDeep()}", True)]


def test_claude_ai_export_keeps_every_conversation_but_the_deep_one(tmp_path):
    deep = claude_message("m3", "human", "2025-01-02T00:00:00Z", "second")
    deep["content"] = [{"type": "text", "text": "second", "citations": PLACE}]
    path = write_with_deep(tmp_path / "conversations.json", [
        claude_conversation("c1", [claude_message("m1", "human", "2025-01-01T00:00:00Z", "we use Postgres for billing")]),
        claude_conversation("c2", [deep]),
        claude_conversation("c3", [claude_message("m5", "human", "2025-01-03T00:00:00Z", "the cache is Redis")]),
    ])
    episodes, skipped = read(path, "claude-ai")
    assert len(episodes) == 2 and "the cache is Redis" in episodes[1].content
    assert [s.reason for s in skipped] == [f"conversation 2: {TooDeep()}"]


def test_gemini_session_skips_the_deep_message_and_keeps_its_neighbours(tmp_path):
    messages = [
        {"id": "1", "type": "user", "timestamp": "2025-03-01T10:00:00Z", "content": "we use Postgres for billing"},
        {"id": "2", "type": "gemini", "timestamp": "2025-03-01T10:00:05Z", "content": "noted"},
        {"id": "3", "type": "user", "timestamp": "2025-03-01T10:01:00Z", "content": PLACE},
        {"id": "4", "type": "gemini", "timestamp": "2025-03-01T10:01:05Z", "content": "a reply to the lost turn"},
        {"id": "5", "type": "user", "timestamp": "2025-03-01T10:02:00Z", "content": "the cache is Redis"},
    ]
    path = write_with_deep(tmp_path / "session-2025-03-01T10-00-abc.json",
                           {"sessionId": "s", "startTime": "2025-03-01T10:00:00Z", "messages": messages})
    episodes, skipped = read(path, "gemini")
    assert [e.content for e in episodes] == ["User: we use Postgres for billing\n\nAssistant: noted",
                                             "User: the cache is Redis"]
    assert [(s.position, s.reason) for s in skipped] == [(3, str(TooDeep()))]


def test_the_split_reading_gives_what_a_whole_reading_gives(tmp_path):
    """Where nothing is too deep below the split, the container-by-container reading is the
    same value as json.loads: strings with brackets, commas, colons and escapes, nesting."""
    data = {"a": [1, {"b": "x,]}:\\\"[{", "c": []}, "y"], "": {}, "d": [[], [[]], {"e": None}], "f": -1.5e3}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(data)[:-1] + ', "deep": ' + DEEP + "}")
    loaded = load_json(path, levels=1)
    assert isinstance(loaded, dict) and isinstance(loaded.pop("deep"), TooDeep)
    assert loaded == data


def test_a_deep_file_that_is_also_broken_is_refused_as_not_json(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text('[{"mapping": ' + DEEP + '}, {"mapping": {,}}]')
    with pytest.raises(FileRefused, match="not valid JSON"):
        load_json(path, levels=2)
