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
- **Time.** A user message's own ``create_time`` (time source ``record``). Epoch
  numbers are told apart by magnitude: below 1e11 seconds, below 1e14 milliseconds,
  else microseconds; ISO strings are accepted too. A null (or non-positive) time is
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

The helpers below (``Message``, ``assemble``, ``instant``) are shared with the
Claude.ai export (``claude_ai``), which has the same shape of problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl import times
from memctl.errors import FileRefused
from memctl.sources import IngestOptions, Skipped, Turn, load_json

# Reasons for deliberate skips: fixed strings, so a summary can group them.
HIDDEN = "hidden message"
SYSTEM = "system message"
INSTRUCTIONS = "custom instructions"
NO_TEXT = "user message without text"
ORPHAN_REPLY = "reply before any user message"
ABANDONED = "user message on an abandoned branch (edited or regenerated)"

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


# --- shared with claude_ai ------------------------------------------------------------


class Malformed(ValueError):
    """A record of the wrong shape; the message says what is wrong."""


def instant(value: object) -> str | None:
    """A record's time in storage form (``memctl.times.record_time_to_storage``).

    None when absent: the exports write null, an empty string or a zero (or negative)
    number for a time they do not know. Raises Malformed for anything else that is not a
    time.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
        return None
    try:
        return times.record_time_to_storage(value)
    except times.BadInstant as error:
        raise Malformed(str(error)) from None


def count(into: dict[str, int], key: str, n: int = 1) -> None:
    if n:
        into[key] = into.get(key, 0) + n


@dataclass
class Message:
    """One message on the branch that happened, as a format reads it.

    ``role`` is ``user`` (starts a turn), ``assistant`` (part of the reply: assistant
    text, tool calls, tool output) or ``other`` (neither; always has ``skip``). A user
    message with ``skip`` ends the previous turn and its reply is dropped with it.
    """

    position: int
    role: str
    text: str = ""
    left_out: dict[str, int] = field(default_factory=dict)
    time: str | None = None  # the message's own time, storage form
    source_id: str | None = None
    identity: str | None = None
    skip: Skipped | None = None


def assemble(messages: list[Message], session_time: str | None) -> Iterator[Turn | Skipped]:
    """Turns (user message + reply) and skips of one conversation, in message order.

    A user message without a time of its own gets, as a session time, the time of the
    nearest later message that has one, else of the nearest earlier one, else
    ``session_time``.
    """
    later: list[str | None] = [None] * len(messages)
    earlier: list[str | None] = [None] * len(messages)
    seen = None
    for i in range(len(messages) - 1, -1, -1):
        later[i] = seen
        seen = messages[i].time or seen
    seen = None
    for i, message in enumerate(messages):
        earlier[i] = seen
        seen = message.time or seen

    turn: Turn | None = None
    pending: list[Skipped] = []  # skips met inside a turn, reported after it
    dropping = False  # inside the reply to a skipped user message
    for i, message in enumerate(messages):
        if message.role == "user":
            if turn is not None:
                yield turn
                yield from pending
            turn, pending = None, []
            dropping = True
            if message.skip is not None:
                yield message.skip
                continue
            if not message.text.strip():
                what = ", ".join(f"{n} {kind}" for kind, n in sorted(message.left_out.items()))
                yield Skipped(message.position, f"{NO_TEXT} ({what})" if what else NO_TEXT)
                continue
            dropping = False
            time, source = message.time, "record"
            if time is None:
                time, source = later[i] or earlier[i] or session_time, "session"
            turn = Turn(
                position=message.position,
                user=message.text,
                time=time,
                time_source=source if time is not None else "record",
                source_id=message.source_id,
                identity=message.identity,
                left_out=dict(message.left_out),
            )
        elif message.role == "assistant" and message.skip is None:
            if turn is not None:
                if message.text.strip():
                    turn.assistant = f"{turn.assistant}\n\n{message.text}" if turn.assistant else message.text
                for kind, n in message.left_out.items():
                    count(turn.left_out, kind, n)
            elif not dropping:
                yield Skipped(message.position, ORPHAN_REPLY)
        else:
            skip = message.skip or Skipped(message.position, SYSTEM)
            if turn is not None:
                pending.append(skip)
            else:
                yield skip
    if turn is not None:
        yield turn
        yield from pending


def conversations(path: Path, data: object, key: str, what: str) -> list:
    """The conversations of an export: a JSON array of objects with ``key``, or one such object."""
    if isinstance(data, dict) and key in data:
        return [data]
    if not isinstance(data, list):
        raise FileRefused(f"{path}: not a {what} export (expected a JSON array of conversations)")
    if data and not any(isinstance(item, dict) and key in item for item in data):
        raise FileRefused(f"{path}: not a {what} export (no conversation in it has {key!r})")
    return data


def export_turns(path: Path, key: str, kind: type, label: str,
                 conversation_turns: Callable[[dict, Any, int, int], Iterable[Turn | Skipped]]) -> Iterator[Turn | Skipped]:
    """The turns of a JSON export of conversations, each conversation's in position order.

    ``conversation_turns(conversation, container, index, base)`` reads one conversation
    whose ``key`` entry is a ``kind``; a conversation without one is a Skipped record.
    Positions run across the file: one per container entry, one for a conversation
    that cannot be read.
    """
    position = 0
    for index, conversation in enumerate(conversations(path, load_json(path), key, label), 1):
        container = conversation.get(key) if isinstance(conversation, dict) else None
        if not isinstance(container, kind):
            position += 1
            shape = "object" if kind is dict else "list"
            what = "not an object" if not isinstance(conversation, dict) else f"has no {key} {shape}"
            yield Skipped(position, f"conversation {index}: {what}", malformed=True)
            continue
        yield from sorted(conversation_turns(conversation, container, index, position), key=lambda item: item.position)
        position += len(container)


# --- ChatGPT ----------------------------------------------------------------------------


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
    author, content = message.get("author"), message.get("content")
    metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    return (
        isinstance(author, dict)
        and author.get("role") == "user"
        and isinstance(content, dict)
        and content.get("content_type") != "user_editable_context"
        and not metadata.get("is_visually_hidden_from_conversation")
        and not metadata.get("is_user_system_message")
    )


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
    metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
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
        count(left_out, _KINDS.get(content_type, content_type if isinstance(content_type, str) else "unknown"))
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
                count(left_out, _PART_KINDS.get(kind, "attachment"))
        elif part is not None:
            raise Malformed(f"content.parts holds a {type(part).__name__}")
    return "\n".join(texts), left_out
