"""``--format chatgpt``: ChatGPT data exports, ``conversations.json`` (or split
``conversations-000.json``, ``conversations-001.json`` ... of the same shape).

A JSON array of conversations ``{id, title, create_time, update_time, mapping,
current_node}``; ``mapping`` is a tree of nodes ``{id, message, parent, children}``.

- **Which messages.** Only the branch that ends at ``current_node`` is read: walk the
  parents from ``current_node`` to the root, then reverse. Edited or regenerated
  branches are not what happened; each *user* message on one is reported as skipped.
  Without a usable ``current_node`` the newest leaf (latest message ``create_time``,
  the last in ``mapping`` order on a tie) ends the branch.
- **Episodes.** One per user message: its text, plus the text of the assistant messages
  that follow it up to the next user message. Left out, but counted in ``left_out``:
  tool calls (assistant messages addressed to a tool, ``recipient`` other than
  ``all``: ``tool_use``), tool output (``tool`` messages: ``tool_result``), reasoning
  (``thoughts``: ``thinking``; ``reasoning_recap``), images / audio / attachments of
  a message (``image``, ``audio``, ``attachment``) and any other non-text content, by
  its ``content_type``. Titles are generated and never part of an episode. Hidden
  messages (``metadata.is_visually_hidden_from_conversation``), system messages and
  custom instructions (``user_editable_context``) are skipped on purpose; so is a user
  message with no text, together with its reply.
- **Time.** A user message's own ``create_time`` (time source ``record``): epoch
  numbers in s, ms, µs or ns told apart by magnitude, as numbers or digit strings, and
  ISO strings (``memctl.times.record_time_to_storage``). A null (or non-positive) time is
  interpolated (source ``session``): the ``create_time`` of the nearest *later*
  message on the branch that has one (normally the message's own reply, seconds
  later), else of the nearest earlier one, else the conversation's ``create_time``;
  with none of these the time is left to ``--reference-time`` / ``--from-mtime``. A
  user message whose ``create_time`` is of the wrong type is skipped as malformed.
- **Position.** The 1-based number of the message's node in the file, counting the
  ``mapping`` entries of every conversation in file order (the message-less root and
  abandoned branches take numbers too; a conversation without a readable ``mapping``
  takes one). Items come out in position order within each conversation.
- **Identity.** ``"{conversation id}:{message id}"``, so the same conversation in a later
  (or split) export gives the same episodes.

What this shares with the Claude.ai export (``Message``, ``assemble``, ``instant``...)
is in ``memctl.sources.exports``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from memctl import times
from memctl.sources import Head, IngestOptions, Skipped, Turn
from memctl.sources.exports import ABANDONED, SYSTEM, Malformed, Message, assemble, count, export_turns, instant

NAME = "chatgpt"

# Reasons for deliberate skips: fixed strings, so a summary can group them.
HIDDEN = "hidden message"
INSTRUCTIONS = "custom instructions"

# content_type of assistant / tool content left out of the text -> left_out key
_KINDS = {
    "code": "tool_use",
    "execution_output": "tool_result",
    "tether_browsing_display": "tool_result",
    "tether_quote": "tool_result",
    "thoughts": "thinking",
}
# content_type of a non-text part of a message -> left_out key
_PART_KINDS = {
    "image_asset_pointer": "image",
    "audio_asset_pointer": "audio",
    "real_time_user_audio_video_asset_pointer": "audio",
}
_TEXT_TYPES = ("text", "multimodal_text")


def sniff(path: Path, head: Head) -> bool:
    return '"mapping"' in head.json_text


def turns(path: Path, options: IngestOptions) -> Iterator[Turn | Skipped]:
    return export_turns(path, "mapping", dict, "ChatGPT conversations", _conversation)


def _conversation(conversation: dict, mapping: dict, index: int, base: int) -> Iterator[Turn | Skipped]:
    numbers = {node_id: base + n for n, node_id in enumerate(mapping, 1)}
    conversation_id = conversation.get("id") or conversation.get("conversation_id")
    conversation_id = conversation_id if isinstance(conversation_id, str) else None
    where = f"conversation {index}" + (f" ({conversation_id})" if conversation_id else "")

    branch, cycle = _branch(mapping, conversation.get("current_node"))
    if cycle:
        yield Skipped(numbers[branch[0]] if branch else base + 1, f"{where}: parent links form a cycle", malformed=True)
    messages = []
    for node_id in branch:
        message = _message(mapping[node_id], node_id, numbers[node_id], conversation_id, where)
        if message is not None:
            messages.append(message)
    yield from assemble(messages, times.record_time_or_none(conversation.get("create_time")))

    on_branch = set(branch)
    for node_id, node in mapping.items():
        if node_id not in on_branch and _is_visible_user_message(node):
            yield Skipped(numbers[node_id], ABANDONED)


def _branch(mapping: dict, current: object) -> tuple[list[str], bool]:
    """Node ids from the root to ``current`` (or to the newest leaf), and whether a cycle cut it."""
    if not (isinstance(current, str) and current in mapping):
        current = _newest_leaf(mapping)
    chain: list[str] = []
    seen: set[str] = set()
    node_id = current
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            chain.reverse()
            return chain, True
        seen.add(node_id)
        chain.append(node_id)
        node = mapping[node_id]
        node_id = node.get("parent") if isinstance(node, dict) else None
    chain.reverse()
    return chain, False


def _newest_leaf(mapping: dict) -> str | None:
    parents = {node.get("parent") for node in mapping.values() if isinstance(node, dict)}
    best, best_time = None, ""
    for node_id, node in mapping.items():
        if node_id in parents or not isinstance(node, dict):
            continue
        message = node.get("message")
        time = (times.record_time_or_none(message.get("create_time")) if isinstance(message, dict) else None) or ""
        if best is None or time >= best_time:
            best, best_time = node_id, time
    return best


def _is_visible_user_message(node: object) -> bool:
    message = node.get("message") if isinstance(node, dict) else None
    if not isinstance(message, dict):
        return False
    author, content, metadata = message.get("author"), message.get("content"), _metadata(message)
    return (
        isinstance(author, dict)
        and author.get("role") == "user"
        and isinstance(content, dict)
        and content.get("content_type") != "user_editable_context"
        and not metadata.get("is_visually_hidden_from_conversation")
        and not metadata.get("is_user_system_message")
    )


def _metadata(message: dict) -> dict:
    metadata = message.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _message(node: object, node_id: str, position: int, conversation_id: str | None, where: str) -> Message | None:
    """The message of a node on the branch; None for a node without one (the root)."""

    def malformed(problem: str, role: str = "other") -> Message:
        return Message(position, role, skip=Skipped(position, f"{where}, node {node_id}: {problem}", malformed=True))

    if not isinstance(node, dict):
        return malformed("node is not an object")
    message = node.get("message")
    if message is None:
        return None
    if not isinstance(message, dict):
        return malformed("message is not an object")
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    if not isinstance(role, str):
        return malformed("message has no author.role")
    content = message.get("content")
    if not isinstance(content, dict):
        return malformed("message has no content object", "user" if role == "user" else "other")
    metadata = _metadata(message)
    content_type = content.get("content_type")
    message_id = message.get("id") if isinstance(message.get("id"), str) else node_id

    if role == "user":
        try:
            time = instant(message.get("create_time"))
        except Malformed as error:
            return malformed(f"create_time {error}", "user")
        if metadata.get("is_visually_hidden_from_conversation"):
            return Message(position, "user", time=time, skip=Skipped(position, HIDDEN))
        if content_type == "user_editable_context" or metadata.get("is_user_system_message"):
            return Message(position, "user", time=time, skip=Skipped(position, INSTRUCTIONS))
        try:
            text, left_out = _parts(content)
        except Malformed as error:
            return malformed(str(error), "user")
        attachments = metadata.get("attachments")
        count(left_out, "attachment", len(attachments) if isinstance(attachments, list) else 0)
        return Message(
            position,
            "user",
            text,
            left_out,
            time,
            source_id=message_id,
            identity=f"{conversation_id}:{message_id}" if conversation_id else None,
        )

    time = times.record_time_or_none(message.get("create_time"))
    if metadata.get("is_visually_hidden_from_conversation"):
        return Message(position, "other", time=time, skip=Skipped(position, HIDDEN))
    if role == "system":
        return Message(position, "other", time=time, skip=Skipped(position, SYSTEM))
    if role not in ("assistant", "tool"):
        return Message(position, "other", time=time, skip=Skipped(position, f"message from {role!r}"))
    text, left_out = "", {}
    recipient = message.get("recipient")
    if role == "tool":
        count(left_out, "tool_result")
    elif recipient not in (None, "all"):
        count(left_out, "tool_use")
    elif content_type in _TEXT_TYPES:
        try:
            text, left_out = _parts(content)
        except Malformed as error:
            return malformed(str(error), "assistant")
    else:
        kind = content_type if isinstance(content_type, str) else "unknown"
        count(left_out, _KINDS.get(kind, kind))
    return Message(position, "assistant", text, left_out, time)


def _parts(content: dict) -> tuple[str, dict[str, int]]:
    """The text of a message's content, and what was left out of it."""
    parts = content.get("parts")
    left_out: dict[str, int] = {}
    if parts is None:
        text = content.get("text")
        return (text if isinstance(text, str) else ""), left_out
    if not isinstance(parts, list):
        raise Malformed("content.parts is not a list")
    texts = []
    for part in parts:
        if isinstance(part, str):
            if part.strip():
                texts.append(part)
        elif isinstance(part, dict):
            kind = part.get("content_type")
            if kind == "audio_transcription" and isinstance(part.get("text"), str):
                if part["text"].strip():
                    texts.append(part["text"])
            else:
                count(left_out, _PART_KINDS.get(kind, "attachment") if isinstance(kind, str) else "attachment")
        elif part is not None:
            raise Malformed(f"content.parts holds a {type(part).__name__}")
    return "\n".join(texts), left_out
