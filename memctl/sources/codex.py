"""``codex``: OpenAI Codex CLI rollouts, ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

Each line is ``{"timestamp", "type", "payload"}`` with type ``session_meta``,
``response_item``, ``event_msg``, ``turn_context`` or ``compacted``. Older rollouts
(before the wrapper, 2025) have a first line ``{"id", "timestamp", "instructions"}``
followed by bare response items and ``{"record_type": "state"}`` markers, without
per-line timestamps; both are read.

**Which user messages are human turns.** Codex records what the human typed twice: a
``response_item`` message with role ``user`` and an ``event_msg`` ``user_message``.
It also injects context as role ``user`` messages (``<environment_context>``,
``# AGENTS.md instructions…``, ``<user_instructions>``, ``<turn_aborted>``…), which
have no ``user_message`` event. So:

- in a file that has ``user_message`` events, each event (kind ``plain`` when a kind is
  given) is one human turn; the role-``user`` item beside it is the same turn, not a
  second one (it is matched by equal text, else it is the last unmatched role-``user``
  item before the event), and every other role-``user`` item is skipped as injected
  context;
- in a file without them (old rollouts), each role-``user`` item is a human turn unless
  its text starts with one of Codex's context markers.

Role-``user`` items are held until that is decided: until the next ``user_message``
event, the next output of the model, or the end of the file. Only one turn and those few
held items are in memory at a time; the file is streamed.

**Time.** A turn's time is its user record's own ``timestamp`` (source ``record``); the
file name is local time and is never used. A record without a timestamp takes the
latest timestamp of the records before it, or the session start of ``session_meta``
(source ``session``): both are the last known instant before the message was written,
since a rollout is appended in order. A turn with no earlier time at all takes the first
timestamp written after it, while the turn is open; else it has none and ``parse``
applies ``--reference-time`` / ``--from-mtime``.

**What is left out.** Reasoning (``thinking``), tool calls (``tool_use``), tool output
(``tool_result``) and images (``image``) are counted per turn, not put in the text. The
``event_msg`` copies of the assistant's messages and reasoning are ignored (the
``response_item`` ones are used). ``compacted`` lines restate earlier turns at a later
time and are skipped as "compaction summary".

``source_id`` and ``identity`` are ``"<session id>:<line number of the user message>"``
(the event's line when there is one): a resumed Codex session appends to its own file,
so the same turn keeps its line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memctl import times
from memctl.sources import BadLine, Head, IngestOptions, Skipped, Turn, read_jsonl

NAME = "codex"

COMPACTION = "compaction summary"
INJECTED = "context injected as a user message, not typed by the user"
EMPTY = "empty user turn"

# Codex's markers for context it sends as a role-user message (codex-rs "session prefix"
# and contextual fragments); compared case-insensitively with the start of the text.
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# agents.md instructions for",
    "<instructions>",
    "<developer_instructions>",
    "<permissions instructions>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<skill>",
    "<subagent_notification>",
    "<collaboration_mode>",
    "<realtime_conversation>",
    "<personality_spec>",
    "<tool_context>",
    "<reasoning_context>",
    "<pinned_notes>",
    "<agent_message_board_notification>",
    "<recommended_plugins>",
)
# IDE extensions send their context first and the request after this heading.
_REQUEST_HEADING = "## My request for Codex:"
_IMAGE_TAG = re.compile(r"^\s*</?image\b[^>]*>\s*$", re.I)
_SESSION_IN_NAME = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$", re.I)

# response_item types produced by the model: left out of the text, counted, and a sign
# that the user's part of the turn is over.
_MODEL_OUTPUT = {
    "reasoning": "thinking",
    "function_call": "tool_use",
    "custom_tool_call": "tool_use",
    "local_shell_call": "tool_use",
    "web_search_call": "tool_use",
    "tool_search_call": "tool_use",
    "image_generation_call": "tool_use",
}
_TOOL_RESULTS = {
    "function_call_output": "tool_result",
    "custom_tool_call_output": "tool_result",
    "local_shell_call_output": "tool_result",
    "tool_search_output": "tool_result",
}
_COMPACTION_ITEMS = {"compaction", "compaction_summary"}
_INTERNAL_ITEMS = {"ghost_snapshot", "other"}


class _Bad(ValueError):
    """A record whose fields have the wrong types; the message is the skip reason."""


@dataclass
class _Held:
    """A role-user item waiting to be told apart: human turn, twin of an event, or context."""

    line: int
    text: str
    time: str | None
    source: str  # "record" or "session"
    attached: dict[str, int]  # images and files pasted with the message


@dataclass
class _Open:
    """The turn being read."""

    turn: Turn
    parts: list[str] = field(default_factory=list)
    from_event: bool = False
    twin_seen: bool = False  # an event turn whose role-user item has been matched
    answered: bool = False  # the model has said or done something since


def _is_injected(text: str) -> bool:
    return text.lstrip().lower().startswith(_INJECTED_PREFIXES)


def _typed_part(text: str) -> str:
    if _REQUEST_HEADING in text:
        return text.split(_REQUEST_HEADING, 1)[1]
    return text


def _content(content: object) -> tuple[str, int, int]:
    """(text, images, files) of a message's content: a string or a list of parts."""
    if isinstance(content, str):
        return content, 0, 0
    if not isinstance(content, list):
        raise _Bad("message content is neither text nor a list of parts")
    texts: list[str] = []
    images = files = 0
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise _Bad("message content part is not an object")
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            text = part.get("text")
            if not isinstance(text, str):
                raise _Bad("message text is not a string")
            if not _IMAGE_TAG.match(text):  # the <image> </image> wrappers around a pasted image
                texts.append(text)
        elif kind in ("input_image", "output_image", "image"):
            images += 1
        elif kind == "input_file":
            files += 1
    return "\n".join(t for t in texts if t.strip()), images, files


def _session_from_name(path: Path) -> str:
    found = _SESSION_IN_NAME.search(path.name)
    return found.group(1) if found else path.stem


def sniff(path: Path, head: Head) -> bool:
    """A rollout by its file name, or a first line in Codex's wrapper shape."""
    record = head.jsonl_record
    return isinstance(record, dict) and (path.name.startswith("rollout-") or ("payload" in record and "type" in record))


def turns(path: Path, options: IngestOptions) -> Iterator[Turn | Skipped]:
    return _Reader(path).turns()


def _kind(value: dict) -> tuple[str, object] | None:
    """(kind, payload) of a line, in the wrapper or in an old bare form; None for a line to pass over."""
    if isinstance(value.get("type"), str) and "payload" in value:
        return value["type"], value["payload"]
    if "record_type" in value:
        return None
    if isinstance(value.get("type"), str):
        return "response_item", value
    if "id" in value and "timestamp" in value:
        return "session_meta", value
    return None


class _Reader:
    """One rollout, read line by line; what a line needs from the lines before it is kept here."""

    def __init__(self, path: Path):
        self.path = path
        self.session_id = _session_from_name(path)
        self.meta_seen = False
        self.last_time: str | None = None  # the latest record time so far (or the session start)
        self.events_seen = False  # the file records human turns as user_message events
        self.held: list[_Held] = []
        self.current: _Open | None = None

    def turns(self) -> Iterator[Turn | Skipped]:
        for line_no, _raw, value in read_jsonl(self.path, strict=False):
            if isinstance(value, BadLine):
                yield Skipped(line_no, "not valid JSON", malformed=True)
            elif not isinstance(value, dict):
                yield Skipped(line_no, "not a JSON object", malformed=True)
            else:
                yield from self._line(line_no, value)
        yield from self._release(at_end=True)
        yield from self._flush()

    def _line(self, line_no: int, value: dict) -> Iterator[Turn | Skipped]:
        stamp: str | None = None
        bad_time = False
        raw_time = value.get("timestamp")
        if raw_time is not None:
            try:
                stamp = times.record_time_to_storage(raw_time)
            except times.BadInstant:
                bad_time = True
        kind_payload = _kind(value)
        if kind_payload is None:
            return
        kind, payload = kind_payload
        if kind == "session_meta":
            self._session_meta(payload, stamp)
            return
        if stamp:
            self._time_passes(stamp)
        if kind == "compacted":
            yield Skipped(line_no, COMPACTION)
        elif kind not in ("response_item", "event_msg"):
            return  # turn_context and anything newer: no conversation in it
        elif not isinstance(payload, dict):
            yield Skipped(line_no, "payload is not an object", malformed=True)
        elif kind == "event_msg":
            yield from self._event_msg(line_no, payload, stamp, bad_time)
        else:
            yield from self._response_item(line_no, payload, stamp, bad_time)

    def _time_passes(self, stamp: str) -> None:
        """A record written at ``stamp``: the open turn, if it has no time yet, was written before."""
        if self.current is not None and self.current.turn.time is None:
            self.current.turn.time, self.current.turn.time_source = stamp, "session"
        self.last_time = stamp

    def _session_meta(self, payload: object, stamp: str | None) -> None:
        if isinstance(payload, dict) and not self.meta_seen:
            self.meta_seen = True
            if isinstance(payload.get("id"), str) and payload["id"]:
                self.session_id = payload["id"]
            started = times.record_time_or_none(payload.get("timestamp"))
            self.last_time = self.last_time or started or stamp
        if stamp:
            self.last_time = stamp

    def _event_msg(self, line_no: int, payload: dict, stamp: str | None, bad_time: bool) -> Iterator[Turn | Skipped]:
        if payload.get("type") != "user_message":
            return  # copies of response items, token counts, task markers...
        message = payload.get("message")
        self.events_seen = True
        if isinstance(message, str) and (payload.get("kind") not in (None, "plain") or _is_injected(message)):
            yield Skipped(line_no, INJECTED)
            return
        text = _typed_part(message) if isinstance(message, str) else ""
        twin = next((h for h in reversed(self.held) if h.text.strip() == text.strip()), None)
        if twin is None and self.held:
            twin = self.held[-1]
        for item in self.held:
            if item is not twin:
                yield Skipped(item.line, INJECTED)
        self.held.clear()
        yield from self._flush()
        if not isinstance(message, str) or bad_time:
            # a human turn we cannot read (nor its twin): its replies must not land in the turn before
            reason = "user_message without text" if not isinstance(message, str) else "bad timestamp"
            yield Skipped(line_no, reason, malformed=True)
            return
        images = sum(len(payload[k]) for k in ("images", "local_images") if isinstance(payload.get(k), list))
        attached = dict(twin.attached) if twin is not None else {}
        attached["image"] = max(images, attached.get("image", 0))  # the same images, counted once
        time: str | None
        if stamp:
            time, source = stamp, "record"
        elif twin is not None and twin.time:
            time, source = twin.time, twin.source
        else:
            time, source = self.last_time, "session"
        self.current = self._open(line_no, text, time, source, attached)
        self.current.from_event = True
        self.current.twin_seen = twin is not None

    def _response_item(self, line_no: int, payload: dict, stamp: str | None, bad_time: bool) -> Iterator[Turn | Skipped]:
        item_type = payload.get("type")
        if item_type == "message":
            yield from self._message(line_no, payload, stamp, bad_time)
        elif item_type in _COMPACTION_ITEMS:
            yield Skipped(line_no, COMPACTION)
        elif item_type in _MODEL_OUTPUT:
            yield from self._release()
            self._count(_MODEL_OUTPUT[item_type])
        elif item_type in _TOOL_RESULTS:
            self._count(_TOOL_RESULTS[item_type])
        elif isinstance(item_type, str) and item_type not in _INTERNAL_ITEMS:
            self._count(item_type)  # a kind of item this reader does not know: left out, but said so

    def _message(self, line_no: int, payload: dict, stamp: str | None, bad_time: bool) -> Iterator[Turn | Skipped]:
        role = payload.get("role")
        if role not in ("user", "assistant"):
            return  # developer / system instructions: not part of an exchange
        try:
            text, images, files = _content(payload.get("content"))
        except _Bad as error:
            yield Skipped(line_no, str(error), malformed=True)
            return
        if role == "assistant":
            yield from self._release()
            if self.current is not None:
                if text.strip():
                    self.current.parts.append(text.strip())
                self._count("image", images)
            return
        text = _typed_part(text)
        current = self.current
        if (current is not None and current.from_event and not current.twin_seen
                and not current.answered and text.strip() == current.turn.user.strip()):
            current.twin_seen = True  # the event came first this time
        elif _is_injected(text):
            yield Skipped(line_no, INJECTED)
        elif bad_time:
            yield Skipped(line_no, "bad timestamp", malformed=True)
        else:
            time, source = (stamp, "record") if stamp else (self.last_time, "session")
            self.held.append(_Held(line_no, text, time, source, {"image": images, "file": files}))

    def _open(self, position: int, text: str, time: str | None, source: str, attached: dict[str, int]) -> _Open:
        key = f"{self.session_id}:{position}"
        return _Open(Turn(position=position, user=text, time=time, time_source=source, source_id=key, identity=key,
                          left_out={k: n for k, n in attached.items() if n}))

    def _flush(self) -> Iterator[Turn | Skipped]:
        if self.current is not None:
            turn = self.current.turn
            if not turn.user.strip():
                yield Skipped(turn.position, EMPTY)
            else:
                turn.assistant = "\n\n".join(self.current.parts)
                yield turn
        self.current = None

    def _release(self, at_end: bool = False) -> Iterator[Turn | Skipped]:
        """The model has answered (or the file ended): decide what the held items were."""
        items = self.held[:]
        self.held.clear()
        for item in items:
            if self.events_seen:
                yield Skipped(item.line, INJECTED)
                continue
            yield from self._flush()
            time, source = (item.time, item.source) if item.time else (self.last_time, "session")
            self.current = self._open(item.line, item.text, time, source, item.attached)
        if not at_end and self.current is not None:
            self.current.answered = True

    def _count(self, kind: str, n: int = 1) -> None:
        if self.current is not None and n:
            left_out = self.current.turn.left_out
            left_out[kind] = left_out.get(kind, 0) + n
