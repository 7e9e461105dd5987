"""``jsonl``: generic chat JSONL, one message per line.

    {"role": "user", "content": "which database does billing use?", "timestamp": "2024-05-01T14:03:22Z"}
    {"role": "assistant", "content": [{"type": "text", "text": "Postgres."}], "timestamp": 1714572210}

Keys are found by what they usually mean, first match wins:

* role: ``role``, ``author``, ``speaker`` (a string, or an object with ``role``/``name``).
  ``user``/``human`` start a turn; ``assistant``/``ai``/``bot``/``model``/``gpt`` reply;
  ``system``/``tool``/``function``/``developer`` are left out and counted.
* content: ``content``, ``text``, ``message``: a string, a list of strings or of
  ``{"type", "text"}`` blocks (other block types are left out and counted by type), or an
  object with ``parts``/``text``/``content``.
* time: ``timestamp``, ``time``, ``created_at``, ``create_time``, ``date``, ``ts``: an
  ISO-8601 string (a naive one is UTC, as everywhere in memctl), or epoch seconds /
  milliseconds / microseconds / nanoseconds, told apart by magnitude (``memctl.times.record_time_to_storage``),
  as a number or a string of 9+ digits (shorter digit strings are ISO years and
  basic dates: ``2024``, ``20240501``). A number below 1e8 is refused, not read as 1970.

Each user message is one turn with the assistant messages that follow it. A turn's time
is its user message's own time; if that message has none, the first reply's time (the
exchange's own record, seconds later) — else None, so ``--reference-time`` /
``--from-mtime`` apply. Bad JSON, a line that is not an object, a missing or unknown role,
content of the wrong type and a time that cannot be read are each skipped as malformed,
with the line number and the value: never a silent fallback to another time. Replies with
no user message before them (also those after a skipped user message) are skipped on
purpose rather than attached to an earlier question. A bad JSON line cannot say whose it
was, so it does not end the turn.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from memctl import times
from memctl.sources import BadLine, Head, IngestOptions, Skipped, Turn, read_jsonl

# This format takes every shape of time a log may hold; the rule is the one all formats share.
from memctl.times import record_time_to_storage as time_to_storage

NAME = "jsonl"

ROLE_KEYS = ("role", "author", "speaker")
CONTENT_KEYS = ("content", "text", "message")
TIME_KEYS = ("timestamp", "time", "created_at", "create_time", "date", "ts")
ID_KEYS = ("id", "uuid", "message_id")

USER_ROLES = frozenset({"user", "human"})
ASSISTANT_ROLES = frozenset({"assistant", "ai", "bot", "model", "gpt"})
OTHER_ROLES = frozenset({"system", "tool", "function", "developer"})  # left out, counted
TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})

def sniff(path: Path, head: Head) -> bool:
    return isinstance(head.jsonl_record, dict) and any(key in head.jsonl_record for key in ROLE_KEYS)


def _first(record: dict, keys: tuple[str, ...]) -> tuple[str | None, object]:
    for key in keys:
        if key in record:
            return key, record[key]
    return None, None


def _role(value: object) -> str | None:
    if isinstance(value, dict):
        value = value.get("role", value.get("name"))
    return value.strip().lower() if isinstance(value, str) else None


def _content(value: object, left_out: Counter) -> str:
    """The text of a content value; other block types counted in ``left_out``. TypeError if bad."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "parts" in value and isinstance(value["parts"], list):
            return _content(value["parts"], left_out)
        for key in ("text", "content"):
            if key in value:
                return _content(value[key], left_out)
        if "type" in value:
            return _content([value], left_out)
        raise TypeError("content object has no text")
    if isinstance(value, list):
        texts = []
        for block in value:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, dict):
                kind = block.get("type", "text")
                if kind in TEXT_BLOCKS and isinstance(block.get("text"), str):
                    texts.append(block["text"])
                else:
                    left_out[str(kind)] += 1
            elif block is not None:
                raise TypeError(f"content block of type {type(block).__name__}")
        return "\n\n".join(t for t in texts if t)
    raise TypeError(f"content of type {type(value).__name__}")


class _Open:
    def __init__(self, position: int, user: str, time: str | None, source_id: str | None, left_out: Counter):
        self.position = position
        self.user = user
        self.time = time
        self.source_id = source_id
        self.replies: list[str] = []
        self.left_out = left_out

    def turn(self) -> Turn:
        return Turn(
            position=self.position,
            user=self.user,
            assistant="\n\n".join(r for r in self.replies if r.strip()),
            time=self.time,
            time_source="record",
            source_id=self.source_id,
            left_out=dict(self.left_out),
        )


def turns(path: Path, options: IngestOptions) -> Iterator[Turn | Skipped]:
    turn: _Open | None = None
    pending: Counter = Counter()  # left out before the first user message
    for number, _raw, record in read_jsonl(path, strict=False):
        if isinstance(record, BadLine):
            yield Skipped(number, f"bad JSON: {record}", malformed=True)
            continue
        if not isinstance(record, dict):
            yield Skipped(number, f"not a JSON object but {type(record).__name__}", malformed=True)
            continue
        role_key, role_value = _first(record, ROLE_KEYS)
        if role_key is None:
            yield Skipped(number, f"no role key ({', '.join(ROLE_KEYS)})", malformed=True)
            continue
        role = _role(role_value)
        if role is None:
            yield Skipped(number, f"{role_key} {role_value!r} is not a role name", malformed=True)
            continue
        counts = turn.left_out if turn is not None else pending
        if role in OTHER_ROLES:
            counts[role] += 1
            continue
        if role not in USER_ROLES and role not in ASSISTANT_ROLES:
            yield Skipped(number, f"unknown role {role_value!r}", malformed=True)
            continue
        time_key, time_value = _first(record, TIME_KEYS)
        blocks: Counter = Counter()
        _, content_value = _first(record, CONTENT_KEYS)
        try:
            time = None if time_value is None else time_to_storage(time_value)
            text = _content(content_value, blocks)
        except (times.BadInstant, TypeError) as error:
            what = f"unreadable {time_key}" if isinstance(error, times.BadInstant) else "bad content"
            yield Skipped(number, f"{what}: {error}", malformed=True)
            if role in USER_ROLES and turn is not None:
                # the replies that follow answer the skipped message, not the previous one
                yield turn.turn()
                turn = None
            continue
        if role in USER_ROLES:
            if turn is not None:
                yield turn.turn()
            _, id_value = _first(record, ID_KEYS)
            source_id = str(id_value) if isinstance(id_value, (str, int)) and not isinstance(id_value, bool) else None
            turn = _Open(number, text, time, source_id, pending + blocks)
            pending = Counter()
        elif turn is None:
            yield Skipped(number, "assistant message with no user message before it")
        else:
            turn.replies.append(text)
            turn.left_out.update(blocks)
            if turn.time is None:
                turn.time = time
    if turn is not None:
        yield turn.turn()
