"""What the ChatGPT and Claude.ai export readers share.

Both exports are a JSON array of conversations, each a list or tree of messages with a
branch that happened; both read it into ``Message`` objects and let ``assemble`` pair
user messages with their replies and date them. ``export_turns`` walks the file and
numbers positions across conversations; ``instant`` reads a message time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from memctl import times
from memctl.errors import FileRefused
from memctl.sources import Skipped, TooDeep, Turn, load_json

# Reasons for deliberate skips: fixed strings, so a summary can group them.
SYSTEM = "system message"
NO_TEXT = "user message without text"
ORPHAN_REPLY = "reply before any user message"
ABANDONED = "user message on an abandoned branch (edited or regenerated)"


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
        deep = sum(_holds_too_deep(item) for item in data)
        why = f"; {deep} of its {len(data)} entries {TooDeep()}" if deep else ""
        raise FileRefused(f"{path}: not a {what} export (no conversation in it has {key!r}{why})")
    return data


def _holds_too_deep(item: object) -> bool:
    """Whether an entry of the export is, or directly holds, a value too deep to read."""
    values = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
    return isinstance(item, TooDeep) or any(isinstance(value, TooDeep) for value in values)


# What holds a conversation's messages: ChatGPT's mapping (an object), Claude.ai's list.
Container = TypeVar("Container", dict[str, Any], list[Any])


def export_turns(path: Path, key: str, kind: type[Container], label: str,
                 conversation_turns: Callable[[dict[str, Any], Container, int, int], Iterable[Turn | Skipped]],
                 ) -> Iterator[Turn | Skipped]:
    """The turns of a JSON export of conversations, each conversation's in position order.

    ``conversation_turns(conversation, container, index, base)`` reads one conversation
    whose ``key`` entry is a ``kind``; a conversation without one is a Skipped record.
    Positions run across the file: one per container entry, one for a conversation
    that cannot be read.
    """
    position = 0
    # levels=2: a conversation with a value too deep to read is skipped, not the export.
    for index, conversation in enumerate(conversations(path, load_json(path, levels=2), key, label), 1):
        container = conversation.get(key) if isinstance(conversation, dict) else None
        if not isinstance(container, kind):
            position += 1
            shape = "object" if kind is dict else "list"
            what = "not an object" if not isinstance(conversation, dict) else f"has no {key} {shape}"
            if isinstance(deep := conversation if isinstance(conversation, TooDeep) else container, TooDeep):
                what = str(deep)
            yield Skipped(position, f"conversation {index}: {what}", malformed=True)
            continue
        session = _conversation_key(conversation, index)
        for item in sorted(conversation_turns(conversation, container, index, position), key=lambda item: item.position):
            if isinstance(item, Turn):
                item.session = session
            yield item
        position += len(container)


def _conversation_key(conversation: dict[str, Any], index: int) -> str:
    """What tells a conversation from the others of its file: its id, else its place in it."""
    for key in ("id", "conversation_id", "uuid"):
        value = conversation.get(key)
        if isinstance(value, str) and value:
            return value
    return f"#{index}"
