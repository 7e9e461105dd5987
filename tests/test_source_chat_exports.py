"""ChatGPT and Claude.ai exports: the branch that happened, text only, each turn at its true time."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memctl.errors import FileRefused
from memctl.model import Episode
from memctl.sources import NO_TIME, IngestOptions, Skipped, detect_format, parse
from tests.conftest import REALDATA, needs_realdata


def run(path: Path, fmt: str | None = None, **options) -> tuple[list[Episode], list[Skipped]]:
    items = list(parse(path, IngestOptions(**options), fmt))
    return [i for i in items if isinstance(i, Episode)], [i for i in items if isinstance(i, Skipped)]


def write(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def as_datetime(stored: str) -> datetime:
    return datetime.strptime(stored, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def real_files(fmt: str) -> list[Path]:
    if not REALDATA.is_dir():
        return []
    return [p for p in sorted(REALDATA.rglob("*.json")) if detect_format(p) == fmt]


# --- real exports --------------------------------------------------------------------


@needs_realdata
def test_the_real_samples_are_found():
    assert REALDATA / "realazthat-chatgpt2graph" / "conversations.json" in real_files("chatgpt")
    assert REALDATA / "yaleman-anthropic-data" / "conversations.json" in real_files("claude-ai")


@needs_realdata
@pytest.mark.parametrize("path", real_files("chatgpt"), ids=str)
def test_real_chatgpt_export(path):
    conversations = json.loads(path.read_text())
    # Independently: every message time in the file (epoch seconds), and the user
    # messages on each branch that ends at current_node.
    stamps = [
        node["message"]["create_time"]
        for c in conversations
        for node in c["mapping"].values()
        if node.get("message") and node["message"].get("create_time")
    ]
    branch_users = {}
    tool_calls = 0
    for c in conversations:
        node_id = c["current_node"]
        while node_id:
            node = c["mapping"][node_id]
            message = node.get("message")
            if message and message["author"]["role"] == "user" and message["create_time"]:
                branch_users[f"{c['id']}:{message['id']}"] = message["create_time"]
            if message and message["author"]["role"] == "assistant" and message.get("recipient") not in (None, "all"):
                tool_calls += 1
            node_id = node["parent"]
    assert stamps and branch_users

    episodes, skipped = run(path)  # auto-detected; no --reference-time, no --from-mtime
    assert episodes
    # the records' own times win over --reference-time and --from-mtime
    offered, _ = run(path, reference_time="2000-01-01T00:00:00.000000Z", from_mtime=True)
    assert [(e.reference_time, e.reference_time_source) for e in offered] == [
        (e.reference_time, e.reference_time_source) for e in episodes
    ]
    low, high = min(stamps), max(stamps)
    for episode in episodes:
        assert episode.format == "chatgpt"
        assert episode.reference_time_source == "record"
        at = as_datetime(episode.reference_time).timestamp()
        assert low - 1e-6 <= at <= high + 1e-6
        identity = episode.identity.split("\x1f", 1)[1]
        assert abs(at - branch_users[identity]) < 1e-5  # the user message's own time
        assert episode.content.startswith("User: ")
        assert not any(c["title"] and episode.content.startswith(f"User: {c['title']}") for c in conversations)
    assert {e.identity.split("\x1f", 1)[1] for e in episodes} == set(branch_users)
    assert sum(e.left_out.get("tool_use", 0) for e in episodes) == tool_calls
    assert len({e.id for e in episodes}) == len(episodes)
    assert not any(s.malformed for s in skipped)


@needs_realdata
def test_real_chatgpt_sample_numbers():
    episodes, skipped = run(REALDATA / "realazthat-chatgpt2graph" / "conversations.json")
    assert len(episodes) == 8
    assert Counter(s.reason for s in skipped) == {"hidden message": 2}
    # one conversation spanning two days, in order
    assert [e.reference_time[:10] for e in episodes] == ["2023-09-21"] * 4 + ["2023-09-22"] * 4
    assert episodes[0].reference_time == "2023-09-21T19:57:53.969279Z"
    first = episodes[0]
    assert first.content.startswith("User: given two random independent variables x,y in U(0,1)")
    assert first.left_out == {"tool_use": 3, "tool_result": 3}
    assert "from sympy import" not in first.content  # the code sent to the tool is left out
    assert first.content.count("Assistant:") == 1
    assert "Average Distance in U(0,1)" not in "".join(e.content for e in episodes)  # the title
    assert [e.position for e in episodes] == sorted(e.position for e in episodes)


@needs_realdata
@pytest.mark.parametrize("path", real_files("claude-ai"), ids=str)
def test_real_claude_ai_export(path):
    conversations = json.loads(path.read_text())
    stamps = [m["created_at"] for c in conversations for m in c["chat_messages"] if m.get("created_at")]
    messages = [(c, m) for c in conversations for m in c["chat_messages"]]
    human = {f"{c['uuid']}:{m['uuid']}": m["created_at"] for c, m in messages if m["sender"] == "human"}
    thinking = [b["thinking"] for _, m in messages for b in m["content"] if b["type"] == "thinking"]
    low = min(datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps)
    high = max(datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps)

    episodes, skipped = run(path)
    assert episodes and not any(s.malformed for s in skipped)
    offered, _ = run(path, reference_time="2000-01-01T00:00:00.000000Z", from_mtime=True)
    assert {e.reference_time_source for e in offered} == {"record"}
    for episode in episodes:
        assert episode.format == "claude-ai"
        assert episode.reference_time_source == "record"
        assert low <= as_datetime(episode.reference_time) <= high
        own = human[episode.identity.split("\x1f", 1)[1]]
        assert as_datetime(episode.reference_time) == datetime.fromisoformat(own.replace("Z", "+00:00"))
        for thought in thinking:
            assert thought[:200] not in episode.content
    assert len(episodes) == len(human)
    assert sum(e.left_out.get("thinking", 0) for e in episodes) == len(thinking)


@needs_realdata
def test_real_claude_ai_sample_leaves_the_thinking_out():
    (episode,), skipped = run(REALDATA / "yaleman-anthropic-data" / "conversations.json")
    assert skipped == []
    assert episode.reference_time == "2025-07-06T03:10:13.609691Z"
    assert episode.content.startswith("User: Tell me about the facts behind the belief that dog saliva")
    assert "Assistant: Dog saliva does contain some antibacterial compounds" in episode.content
    assert "The user is asking" not in episode.content  # the thinking, which `text` includes
    assert "Bleep bloop" not in episode.content  # the generated name
    assert episode.left_out == {"thinking": 1}
    assert episode.position == 1


# --- ChatGPT, hand-made --------------------------------------------------------------

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def node(node_id, parent, children, role=None, text="", t=None, **extra):
    if role is None:
        return {"id": node_id, "message": None, "parent": parent, "children": children}
    content = extra.pop("content", {"content_type": "text", "parts": [text]})
    message = {"id": node_id, "author": {"role": role}, "create_time": t, "content": content,
               "recipient": extra.pop("recipient", "all"), "metadata": extra.pop("metadata", {}), **extra}
    return {"id": node_id, "message": message, "parent": parent, "children": children}


def chain(*messages):
    """A linear conversation's mapping: root, then (role, text, time[, extra]) in order."""
    ids = ["root"] + [f"m{i}" for i in range(1, len(messages) + 1)]
    mapping = {"root": node("root", None, ids[1:2])}
    for i, spec in enumerate(messages, 1):
        role, text, t, *extra = spec
        mapping[ids[i]] = node(ids[i], ids[i - 1], ids[i + 1:i + 2], role, text, t, **(extra[0] if extra else {}))
    return mapping, ids[-1]


def conversation(cid, mapping, current, title="A generated title", create_time=T0):
    return {"id": cid, "conversation_id": cid, "title": title, "create_time": create_time,
            "update_time": create_time, "mapping": mapping, "current_node": current}


def chatgpt_file(tmp_path, *conversations, name="conversations.json"):
    return write(tmp_path / name, list(conversations))


def test_chatgpt_follows_only_the_branch_ending_at_current_node(tmp_path):
    # root -> system -> u1 -> {a1 (first answer), a1b (regenerated)}; u1 -> a1b -> u2 -> a2
    # and an edited first question u1x -> a1x, abandoned.
    mapping = {
        "root": node("root", None, ["sys"]),
        "sys": node("sys", "root", ["u1", "u1x"], "system", "", None),
        "u1": node("u1", "sys", ["a1", "a1b"], "user", "I live in Austin.", T0),
        "a1": node("a1", "u1", [], "assistant", "Old answer.", T0 + 5),
        "a1b": node("a1b", "u1", ["u2"], "assistant", "Regenerated answer.", T0 + 9),
        "u2": node("u2", "a1b", ["a2"], "user", "I moved to NYC.", T0 + 100),
        "a2": node("a2", "u2", [], "assistant", "Noted.", T0 + 101),
        "u1x": node("u1x", "sys", ["a1x"], "user", "I live in Boston.", T0 - 50),
        "a1x": node("a1x", "u1x", [], "assistant", "Boston answer.", T0 - 49),
    }
    path = chatgpt_file(tmp_path, conversation("c1", mapping, "a2"))
    episodes, skipped = run(path, "chatgpt")
    assert [e.content for e in episodes] == [
        "User: I live in Austin.\n\nAssistant: Regenerated answer.",
        "User: I moved to NYC.\n\nAssistant: Noted.",
    ]
    assert [e.reference_time for e in episodes] == ["2023-11-14T22:13:20.000000Z", "2023-11-14T22:15:00.000000Z"]
    assert [e.identity for e in episodes] == ["chatgpt\x1fc1:u1", "chatgpt\x1fc1:u2"]
    assert [e.source_id for e in episodes] == ["u1", "u2"]
    # positions are the nodes' numbers in the file (mapping order, root = 1)
    assert [e.position for e in episodes] == [3, 6]
    assert sorted((s.position, s.reason) for s in skipped) == [
        (2, "system message"),
        (8, "user message on an abandoned branch (edited or regenerated)"),
    ]
    assert "Boston" not in "".join(e.content for e in episodes)
    assert "Old answer" not in "".join(e.content for e in episodes)


def test_chatgpt_without_current_node_takes_the_newest_leaf(tmp_path):
    mapping = {
        "root": node("root", None, ["u1"]),
        "u1": node("u1", "root", ["a1", "a2"], "user", "Question", T0),
        "a1": node("a1", "u1", [], "assistant", "Older reply", T0 + 1),
        "a2": node("a2", "u1", [], "assistant", "Newer reply", T0 + 60),
    }
    data = conversation("c1", mapping, None)
    del data["current_node"]
    (episode,), _ = run(chatgpt_file(tmp_path, data), "chatgpt")
    assert episode.content == "User: Question\n\nAssistant: Newer reply"


def test_chatgpt_positions_run_on_across_conversations(tmp_path):
    first, end1 = chain(("user", "one", T0), ("assistant", "r1", T0 + 1))
    second, end2 = chain(("user", "two", T0 + 10), ("assistant", "r2", T0 + 11))
    episodes, _ = run(chatgpt_file(tmp_path, conversation("c1", first, end1), conversation("c2", second, end2)), "chatgpt")
    assert [e.position for e in episodes] == [2, 5]  # 3 nodes in the first conversation


def test_each_conversation_of_an_export_is_its_own_session(tmp_path):
    first, end1 = chain(("user", "one", T0), ("assistant", "r1", T0 + 1))
    second, end2 = chain(("user", "two", T0 + 10), ("assistant", "r2", T0 + 11))
    unnamed = conversation(None, *chain(("user", "three", T0 + 20), ("assistant", "r3", T0 + 21)))
    del unnamed["id"], unnamed["conversation_id"]
    episodes, _ = run(chatgpt_file(tmp_path, conversation("c1", first, end1), conversation("c2", second, end2),
                                   unnamed), "chatgpt")
    assert [e.session for e in episodes] == ["c1", "c2", "#3"]  # its id, else its place in the file
    (claude,), _ = run(claude_file(tmp_path, claude_conversation("u-1", [
        claude_message("h1", "human", "2025-03-01T10:00:00Z", "hi"),
        claude_message("a1", "assistant", "2025-03-01T10:00:05Z", "hello")]), name="claude.json"), "claude-ai")
    assert claude.session == "u-1"


def test_chatgpt_title_is_never_an_episode(tmp_path):
    mapping, end = chain(("user", "hello there", T0), ("assistant", "hi", T0 + 1))
    episodes, _ = run(chatgpt_file(tmp_path, conversation("c1", mapping, end, title="Moved to Paris")), "chatgpt")
    assert [e.content for e in episodes] == ["User: hello there\n\nAssistant: hi"]


def test_chatgpt_milliseconds_and_seconds_give_the_same_instant(tmp_path):
    seconds, end_s = chain(("user", "in seconds", 1_695_326_273.969), ("assistant", "ok", None))
    millis, end_m = chain(("user", "in ms", 1_695_326_273_969), ("assistant", "ok", None))
    micros, end_u = chain(("user", "in us", 1_695_326_273_969_000), ("assistant", "ok", None))
    iso, end_i = chain(("user", "iso", "2023-09-21T19:57:53.969+00:00"), ("assistant", "ok", None))
    path = chatgpt_file(tmp_path, conversation("s", seconds, end_s), conversation("m", millis, end_m),
                        conversation("u", micros, end_u), conversation("i", iso, end_i))
    episodes, _ = run(path, "chatgpt")
    assert [e.reference_time[:23] for e in episodes] == ["2023-09-21T19:57:53.969"] * 4
    assert {e.reference_time_source for e in episodes} == {"record"}


def test_chatgpt_null_user_time_takes_its_reply_time_as_a_session_time(tmp_path):
    mapping, end = chain(
        ("user", "first", T0),
        ("assistant", "r1", T0 + 1),
        ("user", "next day, no time of its own", None),
        ("assistant", "r2", T0 + 86_400),
        ("user", "last, unanswered, no time", None),
    )
    episodes, _ = run(chatgpt_file(tmp_path, conversation("c1", mapping, end)), "chatgpt")
    assert [(e.reference_time, e.reference_time_source) for e in episodes] == [
        ("2023-11-14T22:13:20.000000Z", "record"),
        ("2023-11-15T22:13:20.000000Z", "session"),  # the nearest later message: its reply
        ("2023-11-15T22:13:20.000000Z", "session"),  # no later one: the nearest earlier
    ]


def test_chatgpt_no_message_times_fall_back_to_the_conversation_then_to_the_user(tmp_path):
    mapping, end = chain(("user", "undated", None), ("assistant", "ok", None))
    dated = chatgpt_file(tmp_path, conversation("c1", mapping, end, create_time=T0), name="a.json")
    (episode,), _ = run(dated, "chatgpt")
    assert (episode.reference_time, episode.reference_time_source) == ("2023-11-14T22:13:20.000000Z", "session")

    undated = chatgpt_file(tmp_path, conversation("c1", mapping, end, create_time=None), name="b.json")
    episodes, skipped = run(undated, "chatgpt")
    assert episodes == [] and [s.reason for s in skipped] == [NO_TIME]  # never the import's clock
    (episode,), _ = run(undated, "chatgpt", reference_time="2024-01-02T00:00:00.000000Z")
    assert (episode.reference_time, episode.reference_time_source) == ("2024-01-02T00:00:00.000000Z", "user")


def test_chatgpt_hidden_system_and_custom_instructions_are_skipped(tmp_path):
    hidden = {"metadata": {"is_visually_hidden_from_conversation": True}}
    mapping, end = chain(
        ("system", "", None, hidden),
        ("user", "", None, {"content": {"content_type": "user_editable_context", "user_profile": "I am a chef",
                                        "user_instructions": "be brief"}, **hidden}),
        ("assistant", "memory context", None, {"content": {"content_type": "model_editable_context",
                                                           "model_set_context": "x"}, **hidden}),
        ("user", "What should I cook?", T0),
        ("assistant", "Pasta.", T0 + 2),
    )
    episodes, skipped = run(chatgpt_file(tmp_path, conversation("c1", mapping, end)), "chatgpt")
    assert [e.content for e in episodes] == ["User: What should I cook?\n\nAssistant: Pasta."]
    assert [s.reason for s in skipped] == ["hidden message"] * 3
    assert not any(s.malformed for s in skipped)


def test_chatgpt_leaves_out_tools_thinking_and_images_but_counts_them(tmp_path):
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x", "width": 10, "height": 10}
    mapping, end = chain(
        ("user", "", T0, {"content": {"content_type": "multimodal_text", "parts": [image, image, "What is in these?"]},
                          "metadata": {"attachments": [{"id": "f", "name": "notes.pdf"}]}}),
        ("assistant", "", T0 + 1, {"content": {"content_type": "thoughts", "thoughts": [{"content": "THOUGHT"}]}}),
        ("assistant", "", T0 + 2, {"content": {"content_type": "reasoning_recap", "content": "Thought for 3s"}}),
        ("assistant", "", T0 + 3, {"recipient": "python", "content": {"content_type": "code", "text": "print(1)"}}),
        ("tool", "", T0 + 4, {"content": {"content_type": "execution_output", "text": "TOOL-OUTPUT"}}),
        ("assistant", "search(\"weather\")", T0 + 5, {"recipient": "browser"}),
        ("tool", "", T0 + 6, {"content": {"content_type": "multimodal_text", "parts": [image]}}),
        ("assistant", "Two cats.", T0 + 7),
        ("assistant", "", T0 + 8, {"content": {"content_type": "multimodal_text", "parts": ["And a dog.", image]}}),
    )
    (episode,), skipped = run(chatgpt_file(tmp_path, conversation("c1", mapping, end)), "chatgpt")
    assert skipped == []
    assert episode.content == "User: What is in these?\n\nAssistant: Two cats.\n\nAnd a dog."
    assert episode.left_out == {"image": 3, "attachment": 1, "thinking": 1, "reasoning_recap": 1,
                                "tool_use": 2, "tool_result": 2}


def test_chatgpt_voice_transcription_is_text(tmp_path):
    parts = [{"content_type": "audio_transcription", "text": "my sister is called Ana"},
             {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://x"}]
    mapping, end = chain(("user", "", T0, {"content": {"content_type": "multimodal_text", "parts": parts}}),
                         ("assistant", "Nice name.", T0 + 1))
    (episode,), _ = run(chatgpt_file(tmp_path, conversation("c1", mapping, end)), "chatgpt")
    assert episode.content == "User: my sister is called Ana\n\nAssistant: Nice name."
    assert episode.left_out == {"audio": 1}


def test_chatgpt_user_message_without_text_is_skipped_with_its_reply(tmp_path):
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"}
    mapping, end = chain(
        ("assistant", "Hi! How can I help?", T0 - 10),
        ("user", "first", T0),
        ("assistant", "reply one", T0 + 1),
        ("user", "", T0 + 10, {"content": {"content_type": "multimodal_text", "parts": [image]}}),
        ("assistant", "That is a photo of a cat.", T0 + 11),
        ("user", "   ", T0 + 20),
        ("assistant", "reply to blank", T0 + 21),
    )
    episodes, skipped = run(chatgpt_file(tmp_path, conversation("c1", mapping, end)), "chatgpt")
    assert [e.content for e in episodes] == ["User: first\n\nAssistant: reply one"]
    assert [s.reason for s in skipped] == [
        "reply before any user message",
        "user message without text (1 image)",
        "user message without text",
    ]


def test_chatgpt_malformed_records_are_skipped_and_the_rest_kept(tmp_path):
    good, end = chain(("user", "good one", T0), ("assistant", "fine", T0 + 1))
    bad_time, _ = chain(
        ("user", "bad time", "yesterday-ish"),
        ("assistant", "r", T0 + 1),
        ("user", "bool time", True),
        ("user", "parts not a list", T0 + 3, {"content": {"content_type": "text", "parts": "x"}}),
        ("user", "kept", T0 + 4),
    )
    bad_time["m9"] = {"id": "m9", "message": "not an object", "parent": "m5", "children": []}
    bad_time["m5"]["children"] = ["m9"]
    path = chatgpt_file(tmp_path, "not a conversation", {"id": "x", "mapping": [1, 2]},
                        conversation("c2", bad_time, "m9"), conversation("c1", good, end))
    episodes, skipped = run(path, "chatgpt")
    assert [e.content for e in episodes] == ["User: kept", "User: good one\n\nAssistant: fine"]
    malformed = [s for s in skipped if s.malformed]
    assert len(malformed) == 6 and len(skipped) == 6
    assert [s.position for s in malformed[:2]] == [1, 2]  # a conversation without a mapping takes one number
    assert "create_time 'yesterday-ish' is not a time" in malformed[2].reason
    assert "True is not a time" in malformed[3].reason
    assert "content.parts is not a list" in malformed[4].reason
    assert "message is not an object" in malformed[5].reason


def test_chatgpt_parent_cycle_does_not_hang(tmp_path):
    mapping = {
        "a": node("a", "b", ["b"], "user", "loop one", T0),
        "b": node("b", "a", ["a"], "assistant", "loop two", T0 + 1),
    }
    episodes, skipped = run(chatgpt_file(tmp_path, conversation("c1", mapping, "b")), "chatgpt")
    assert [e.content for e in episodes] == ["User: loop one\n\nAssistant: loop two"]
    assert [s.malformed for s in skipped] == [True] and "cycle" in skipped[0].reason


def test_chatgpt_files_that_are_not_exports_are_refused(tmp_path):
    (tmp_path / "broken.json").write_text('[{"mapping": {')
    with pytest.raises(FileRefused, match="not valid JSON"):
        run(tmp_path / "broken.json", "chatgpt")
    with pytest.raises(FileRefused, match="not a ChatGPT"):
        run(write(tmp_path / "object.json", {"conversations": []}), "chatgpt")
    with pytest.raises(FileRefused, match="no conversation in it has 'mapping'"):
        run(write(tmp_path / "other.json", [{"uuid": "u", "chat_messages": []}]), "chatgpt")
    assert run(write(tmp_path / "empty.json", []), "chatgpt") == ([], [])


def test_chatgpt_split_exports_are_detected_and_give_the_same_episodes(tmp_path):
    mapping, end = chain(("user", "same turn in two exports", T0), ("assistant", "ok", T0 + 1))
    other, end2 = chain(("user", "only in the second", T0 + 50))
    a = chatgpt_file(tmp_path, conversation("c1", mapping, end), name="conversations-000.json")
    b = chatgpt_file(tmp_path, conversation("c2", other, end2), conversation("c1", mapping, end), name="conversations-001.json")
    assert detect_format(a) == detect_format(b) == "chatgpt"
    (first,), _ = run(a)
    episodes, _ = run(b)
    assert first.id in {e.id for e in episodes}  # the same turn in a later export is stored once
    assert first.position != [e for e in episodes if e.id == first.id][0].position


def test_chatgpt_secrets_are_redacted(tmp_path):
    mapping, end = chain(("user", "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123", T0), ("assistant", "ok", T0 + 1))
    (episode,), _ = run(chatgpt_file(tmp_path, conversation("c1", mapping, end)), "chatgpt")
    assert "abcdefghijklmnopqrstuvwxyz0123" not in episode.content and episode.redactions == 1


# --- Claude.ai, hand-made ------------------------------------------------------------


def claude_message(uuid, sender, created_at, text=None, content=None, **extra):
    message = {"uuid": uuid, "sender": sender, "created_at": created_at, "updated_at": created_at,
               "attachments": [], "files": [], **extra}
    if content is None:
        content = [{"type": "text", "text": text}] if text is not None else []
    message["content"] = content
    message["text"] = text if text is not None else "".join(str(b.get("text", b.get("thinking", ""))) for b in content)
    return message


def claude_conversation(uuid, messages, created_at="2025-01-01T00:00:00Z", **extra):
    return {"uuid": uuid, "name": "Generated name", "summary": "", "created_at": created_at,
            "updated_at": created_at, "chat_messages": messages, **extra}


def claude_file(tmp_path, *conversations, name="conversations.json"):
    return write(tmp_path / name, list(conversations))


def test_claude_ai_text_from_blocks_not_from_text_which_holds_the_thinking(tmp_path):
    reply = [
        {"type": "thinking", "thinking": "PRIVATE REASONING. "},
        {"type": "text", "text": "Paris is the capital"},
        {"type": "text", "text": " of France", "citations": [{"url": "x"}]},
        {"type": "text", "text": "."},
        {"type": "tool_use", "name": "web_search", "input": {"query": "TOOL-QUERY"}},
        {"type": "tool_result", "content": [{"type": "text", "text": "TOOL-OUTPUT"}]},
        {"type": "text", "text": "It has 2 million people."},
        {"type": "redacted_thinking", "data": "x"},
    ]
    messages = [
        claude_message("h1", "human", "2025-03-01T10:00:00.5+01:00", "Capital of France?",
                       files=[{"file_name": "photo.png"}], attachments=[{"file_name": "a.txt", "extracted_content": "PASTED"}]),
        claude_message("a1", "assistant", "2025-03-01T09:00:07Z", content=reply),
    ]
    (episode,), skipped = run(claude_file(tmp_path, claude_conversation("c1", messages)), "claude-ai")
    assert skipped == []
    assert episode.content == ("User: Capital of France?\n\n"
                               "Assistant: Paris is the capital of France.\n\nIt has 2 million people.")
    assert episode.left_out == {"thinking": 2, "tool_use": 1, "tool_result": 1, "file": 1, "attachment": 1}
    assert (episode.reference_time, episode.reference_time_source) == ("2025-03-01T09:00:00.500000Z", "record")
    assert episode.identity == "claude-ai\x1fc1:h1" and episode.source_id == "h1"
    assert "Generated name" not in episode.content


def test_claude_ai_old_messages_without_blocks_use_text(tmp_path):
    messages = [claude_message("h1", "human", "2024-05-01T12:00:00Z", "I adopted a dog."),
                claude_message("a1", "assistant", "2024-05-01T12:00:03Z", "Congratulations!")]
    for message in messages:
        del message["content"]
    (episode,), _ = run(claude_file(tmp_path, claude_conversation("c1", messages)), "claude-ai")
    assert episode.content == "User: I adopted a dog.\n\nAssistant: Congratulations!"


def test_claude_ai_null_times_are_interpolated(tmp_path):
    messages = [
        claude_message("h1", "human", None, "no time, answered"),
        claude_message("a1", "assistant", "2025-02-02T08:00:05Z", "r1"),
        claude_message("h2", "human", "2025-02-03T09:00:00Z", "own time"),
    ]
    lone = [claude_message("h3", "human", None, "nothing dated but the conversation")]
    path = claude_file(tmp_path, claude_conversation("c1", messages, created_at=None),
                       claude_conversation("c2", lone, created_at="2025-01-05T00:00:00Z"))
    episodes, _ = run(path, "claude-ai")
    assert [(e.reference_time, e.reference_time_source) for e in episodes] == [
        ("2025-02-02T08:00:05.000000Z", "session"),
        ("2025-02-03T09:00:00.000000Z", "record"),
        ("2025-01-05T00:00:00.000000Z", "session"),
    ]
    assert [e.position for e in episodes] == [1, 3, 4]


def test_claude_ai_follows_the_current_leaf_of_an_edited_conversation(tmp_path):
    root = "00000000-0000-4000-8000-000000000000"
    messages = [
        claude_message("h1", "human", "2025-01-01T10:00:00Z", "I work at Acme.", parent_message_uuid=root),
        claude_message("a1", "assistant", "2025-01-01T10:00:05Z", "Old reply.", parent_message_uuid="h1"),
        claude_message("a1b", "assistant", "2025-01-01T10:01:00Z", "Retried reply.", parent_message_uuid="h1"),
        claude_message("h2", "human", "2025-01-01T10:02:00Z", "I work at Initech.", parent_message_uuid="a1"),
        claude_message("a2", "assistant", "2025-01-01T10:02:05Z", "Noted Initech.", parent_message_uuid="h2"),
    ]
    with_leaf = claude_conversation("c1", messages, current_leaf_message_uuid="a1b")
    episodes, skipped = run(claude_file(tmp_path, with_leaf, name="a.json"), "claude-ai")
    assert [e.content for e in episodes] == ["User: I work at Acme.\n\nAssistant: Retried reply."]
    assert [(s.position, s.reason) for s in skipped] == [(4, "user message on an abandoned branch (edited or regenerated)")]

    newest_leaf = claude_conversation("c1", messages)  # no current leaf: the newest leaf, a2
    episodes, skipped = run(claude_file(tmp_path, newest_leaf, name="b.json"), "claude-ai")
    assert [e.content for e in episodes] == ["User: I work at Acme.\n\nAssistant: Old reply.",
                                             "User: I work at Initech.\n\nAssistant: Noted Initech."]
    assert skipped == []


def test_claude_ai_human_message_without_text_is_skipped_with_its_reply(tmp_path):
    messages = [
        claude_message("h1", "human", "2025-01-01T10:00:00Z", "hello"),
        claude_message("a1", "assistant", "2025-01-01T10:00:01Z", "hi"),
        claude_message("h2", "human", "2025-01-01T10:01:00Z", "", content=[],
                       attachments=[{"file_name": "", "extracted_content": "a long paste"}]),
        claude_message("a2", "assistant", "2025-01-01T10:01:05Z", "About your paste..."),
    ]
    messages[2]["text"] = ""
    episodes, skipped = run(claude_file(tmp_path, claude_conversation("c1", messages)), "claude-ai")
    assert [e.content for e in episodes] == ["User: hello\n\nAssistant: hi"]
    assert [s.reason for s in skipped] == ["user message without text (1 attachment)"]


def test_claude_ai_malformed_records_are_skipped_and_the_rest_kept(tmp_path):
    messages = [
        claude_message("h1", "human", "not a date", "bad time"),
        claude_message("a1", "assistant", "2025-01-01T10:00:01Z", "reply to the bad one"),
        claude_message("h2", "robot", "2025-01-01T10:00:02Z", "who?"),
        claude_message("h3", "human", "2025-01-01T10:00:03Z", content=[{"type": "text", "text": 42}]),
        "not a message",
        claude_message("h4", "human", "2025-02-30T10:00:00Z", "impossible date"),
        claude_message("h5", "human", "2025-01-01T10:00:05Z", "kept"),
    ]
    path = claude_file(tmp_path, claude_conversation("c1", messages), {"uuid": "c2", "chat_messages": "nope"},
                       claude_conversation("c3", [claude_message("h6", "human", "2025-01-02T00:00:00Z", "also kept")]))
    episodes, skipped = run(path, "claude-ai")
    assert [(e.position, e.content) for e in episodes] == [(7, "User: kept"), (9, "User: also kept")]
    assert all(s.malformed for s in skipped)
    assert [s.position for s in skipped] == [1, 3, 4, 5, 6, 8]
    assert "created_at 'not a date' is not a time" in skipped[0].reason
    assert "sender 'robot'" in skipped[1].reason


def test_claude_ai_projects_and_users_are_not_conversations(tmp_path):
    projects = write(tmp_path / "projects.json", [{"uuid": "p1", "name": "Proj", "description": "", "docs": [],
                                                   "created_at": "2025-01-01T00:00:00Z"}])
    users = write(tmp_path / "users.json", [{"uuid": "u1", "full_name": "A", "email_address": "a@example.com"}])
    assert detect_format(projects) is None and detect_format(users) is None
    with pytest.raises(FileRefused, match="no conversation in it has 'chat_messages'"):
        run(projects, "claude-ai")
    (tmp_path / "broken.json").write_text('[{"chat_messages": [')
    with pytest.raises(FileRefused, match="not valid JSON"):
        run(tmp_path / "broken.json", "claude-ai")
    assert run(write(tmp_path / "empty.json", []), "claude-ai") == ([], [])


def test_claude_ai_is_auto_detected(tmp_path):
    path = claude_file(tmp_path, claude_conversation("c1", [claude_message("h1", "human", "2025-01-01T00:00:00Z", "hi")]))
    assert detect_format(path) == "claude-ai"
    (episode,), _ = run(path)
    assert episode.format == "claude-ai"
