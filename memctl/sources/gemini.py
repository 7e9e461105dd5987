"""``gemini``: Gemini CLI sessions, ``~/.gemini/tmp/<project hash>/chats/session-*.json``.

One JSON object per session: ``sessionId``, ``startTime``, ``lastUpdated`` and
``messages[]``, each ``{id, timestamp, type, content}`` with ``type`` ``user``,
``gemini``, ``info``, ``error`` or ``warning``; ``gemini`` messages may carry
``toolCalls`` (with their results) and ``thoughts``. ``content`` is text, or in newer
versions a list of parts (``{"text"}``, ``{"inlineData"}``, ``{"functionCall"}``…).

An episode is a ``user`` message and the text of the ``gemini`` messages up to the
next ``user`` message. Tool calls (``tool_use``), their results (``tool_result``),
thoughts (``thinking``), images and files, and ``info`` / ``error`` / ``warning``
notices are left out of the text and counted.

**Time.** A user message's own ``timestamp`` (source ``record``). One without a
timestamp is placed between the nearest messages that have one, linearly by position in
the list (``startTime`` stands before the first message and ``lastUpdated`` after the
last); with a known time on one side only, it takes that time (source ``session``).
Turns keep their order that way, and each stays within the times around it.

``identity`` is ``"<sessionId>:<message id>"``: a resumed session that copies messages
into another file gives the same turn the same identity.

The ``logs.json`` beside the chats (the prompt history of the project) is not a
session; auto-detection does not take it, and read as ``--format gemini`` it yields no
episode, only a skip saying so: its prompts are the user messages of the sessions.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

from memctl import times
from memctl.errors import FileRefused
from memctl.sources import Head, IngestOptions, Skipped, TooDeep, Turn, load_json

NAME = "gemini"

PROMPT_LOG = "Gemini CLI prompt log (logs.json), not a session: its prompts are in the session files"
EMPTY = "empty user turn"


def sniff(path: Path, head: Head) -> bool:
    """A session's keys near the start (logs.json has sessionId but no messages)."""
    text = head.json_text
    return '"messages"' in text and ('"startTime"' in text or '"sessionId"' in text)


class _Bad(ValueError):
    """A message whose fields have the wrong types; the message is the skip reason."""


def _is_prompt_log(data: object) -> bool:
    return isinstance(data, list) and all(
        isinstance(entry, dict) and "messageId" in entry and "sessionId" in entry for entry in data
    )


def _parts(content: object) -> tuple[str, dict[str, int]]:
    """(text, what was left out) of a message's content: text, a part, or a list of them."""
    left_out: dict[str, int] = {}

    def add(kind: str) -> None:
        left_out[kind] = left_out.get(kind, 0) + 1

    if content is None:
        return "", left_out
    if isinstance(content, str):
        return content, left_out
    items = [content] if isinstance(content, dict) else content
    if not isinstance(items, list):
        raise _Bad("message content is neither text nor parts")
    texts: list[str] = []
    for part in items:
        if isinstance(part, str):
            texts.append(part)
        elif not isinstance(part, dict):
            raise _Bad("message content part is not an object")
        elif part.get("thought") is True:
            add("thinking")
        elif "text" in part:
            if not isinstance(part["text"], str):
                raise _Bad("message text is not a string")
            texts.append(part["text"])
        elif "functionCall" in part:
            add("tool_use")
        elif "functionResponse" in part:
            add("tool_result")
        elif "inlineData" in part or "fileData" in part:
            data = part.get("inlineData") or part.get("fileData") or {}
            mime = data.get("mimeType", "") if isinstance(data, dict) else ""
            add("image" if isinstance(mime, str) and mime.startswith("image/") else "file")
    return "\n".join(t for t in texts if t.strip()), left_out


def _between(before: tuple[float, str] | None, after: tuple[float, str] | None, at: float) -> str | None:
    """The time at position ``at`` between two known (position, time) points."""
    if before is None:
        return after[1] if after is not None else None
    if after is None or after[1] <= before[1]:
        return before[1]
    start, end = times.from_storage(before[1]), times.from_storage(after[1])
    fraction = (at - before[0]) / (after[0] - before[0])
    return times.to_storage(start + timedelta(microseconds=round((end - start) / timedelta(microseconds=1) * fraction)))


def turns(path: Path, options: IngestOptions) -> Iterator[Turn | Skipped]:
    data = load_json(path, levels=2)  # a message too deep to read is skipped, not the session
    if _is_prompt_log(data):
        yield Skipped(1, PROMPT_LOG)
        return
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise FileRefused(f"{path}: not a Gemini CLI session (no \"messages\" list)")
    session_id = data.get("sessionId") if isinstance(data.get("sessionId"), str) else path.stem
    messages: list = data["messages"]

    # Known times by position: startTime at -1, each message's own, lastUpdated at the end.
    known: list[tuple[float, str]] = []
    start_time = times.record_time_or_none(data.get("startTime"))
    if start_time:
        known.append((-1, start_time))
    for index, message in enumerate(messages):
        if isinstance(message, dict) and (stamp := times.record_time_or_none(message.get("timestamp"))):
            known.append((index, stamp))
    end_time = times.record_time_or_none(data.get("lastUpdated"))
    if end_time:
        known.append((len(messages), end_time))

    def time_at(index: int) -> str | None:
        before = next((k for k in reversed(known) if k[0] < index), None)
        after = next((k for k in known if k[0] > index), None)
        return _between(before, after, index)

    current: Turn | None = None
    replies: list[str] = []

    def flush() -> Iterator[Turn | Skipped]:
        nonlocal current
        if current is not None:
            if current.user.strip():
                current.assistant = "\n\n".join(replies)
                yield current
            else:
                yield Skipped(current.position, EMPTY)
        current = None
        replies.clear()

    def count(left_out: dict[str, int]) -> None:
        if current is not None:
            for kind, n in left_out.items():
                if n:
                    current.left_out[kind] = current.left_out.get(kind, 0) + n

    for index, message in enumerate(messages):
        position = index + 1
        if not isinstance(message, dict):
            if isinstance(message, TooDeep):  # perhaps a user message: its replies go with it
                yield from flush()
            yield Skipped(position, str(message) if isinstance(message, TooDeep) else "message is not an object",
                          malformed=True)
            continue
        kind = message.get("type")
        try:
            text, left_out = _parts(message.get("content"))
        except _Bad as error:
            if kind == "user":  # its replies must not land in the turn before
                yield from flush()
            yield Skipped(position, str(error), malformed=True)
            continue
        if kind == "user":
            yield from flush()
            raw_time = message.get("timestamp")
            stamp = times.record_time_or_none(raw_time)
            if raw_time is not None and stamp is None:
                yield Skipped(position, "bad timestamp", malformed=True)
                continue
            time, source = (stamp, "record") if stamp else (time_at(index), "session")
            message_id = message.get("id")
            key = f"{session_id}:{message_id}" if isinstance(message_id, (str, int)) else f"{session_id}:#{position}"
            current = Turn(position=position, user=text, time=time, time_source=source,
                           source_id=str(message_id) if isinstance(message_id, (str, int)) else None,
                           identity=key, left_out=left_out)
        elif kind in ("gemini", "model", "assistant"):
            if current is None:
                continue
            if text.strip():
                replies.append(text.strip())
            count(left_out)
            calls = message.get("toolCalls")
            if isinstance(calls, list):
                count({"tool_use": len(calls),
                       "tool_result": sum(1 for c in calls if isinstance(c, dict) and c.get("result") is not None)})
            thoughts = message.get("thoughts")
            if isinstance(thoughts, list):
                count({"thinking": len(thoughts)})
        elif isinstance(kind, str):
            count({kind: 1})  # info, error, warning notices (and any newer kind): not the exchange
        else:
            yield Skipped(position, "message has no type", malformed=True)
    yield from flush()
