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

* conversation: ``session_id``, ``sessionId``, ``conversation_id``, ``conversationId``,
  ``thread_id``, ``threadId``, ``chat_id``, ``chatId``, ``conversation`` (a string or a
  number); a file may interleave several conversations.

Each user message is one turn with the assistant messages that follow it in the same
conversation. A turn's time is its user message's own time; if that message has none,
the first reply's time (the exchange's own record, seconds later) — else None, so
``--reference-time`` / ``--from-mtime`` apply.

A reply that answers no question before it is an episode of its own (``Assistant: …``, at
its own time), never glued to an older question: one at the start of the file, one whose
conversation key differs from the open turn's, and one that comes more than
``REPLY_GAP`` (one hour) after the turn's last message. A chat reply arrives seconds or
minutes after its question; an hour later it is another exchange whose question is not
in this file (a log cut in two, a merged export), and splitting it wrongly costs less
(the reply is kept, at its own time) than gluing it wrongly (dated by an unrelated
question). Replies after a skipped user message answer that message, so they are skipped
too.

Bad JSON, a line that is not an object, a missing or unknown role, content of the wrong
type and a time that cannot be read are each skipped as malformed, with the line number
and the value: never a silent fallback to another time. A bad JSON line cannot say whose
it was, so it does not end the turn.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
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
CONVERSATION_KEYS = ("session_id", "sessionId", "conversation_id", "conversationId", "thread_id", "threadId",
                     "chat_id", "chatId", "conversation")
REPLY_GAP = timedelta(hours=1)  # a reply later than this after the turn's last message is not its answer

USER_ROLES = frozenset({"user", "human"})
ASSISTANT_ROLES = frozenset({"assistant", "ai", "bot", "model", "gpt"})
OTHER_ROLES = frozenset({"system", "tool", "function", "developer"})  # left out, counted
TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})

NO_QUESTION = "assistant message after a skipped user message"


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


def _source_id(record: dict) -> str | None:
    _, value = _first(record, ID_KEYS)
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _conversation(record: dict) -> str | None:
    _, value = _first(record, CONVERSATION_KEYS)
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


class _Open:
    """A turn being read: a user message (or a reply that answers none) and its replies."""

    def __init__(self, position: int, user: str, time: str | None, source_id: str | None, left_out: Counter,
                 conversation: str | None):
        self.position = position
        self.user = user
        self.time = time
        self.source_id = source_id
        self.replies: list[str] = []
        self.left_out = left_out
        self.conversation = conversation
        self.last_time = time  # of its latest message that had one

    def answered_by(self, conversation: str | None, time: str | None) -> bool:
        """Whether a reply of this conversation at this time belongs to the turn."""
        if conversation is not None and self.conversation is not None and conversation != self.conversation:
            return False
        return time is None or self.last_time is None or (
            times.from_storage(time) - times.from_storage(self.last_time) <= REPLY_GAP)

    def add_reply(self, text: str, time: str | None, blocks: Counter) -> None:
        self.replies.append(text)
        self.left_out.update(blocks)
        if self.time is None:
            self.time = time
        if time is not None and (self.last_time is None or time > self.last_time):
            self.last_time = time

    def turn(self) -> Turn:
        return Turn(
            position=self.position,
            user=self.user,
            assistant="\n\n".join(r for r in self.replies if r.strip()),
            time=self.time,
            time_source="record",
            source_id=self.source_id,
            left_out=dict(self.left_out),
            session=self.conversation,
        )


def turns(path: Path, options: IngestOptions) -> Iterator[Turn | Skipped]:
    turn: _Open | None = None
    after_bad_question = False  # the replies that follow answer a skipped user message
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
            if role in USER_ROLES:
                # the replies that follow answer the skipped message, not the previous one
                if turn is not None:
                    yield turn.turn()
                turn, after_bad_question = None, True
            continue
        conversation = _conversation(record)
        if role in USER_ROLES:
            if turn is not None:
                yield turn.turn()
            turn = _Open(number, text, time, _source_id(record), pending + blocks, conversation)
            pending, after_bad_question = Counter(), False
            continue
        if turn is not None and turn.answered_by(conversation, time):
            turn.add_reply(text, time, blocks)
            continue
        if turn is not None:
            yield turn.turn()
            turn = None
        if after_bad_question:
            yield Skipped(number, NO_QUESTION)
            continue
        # a reply that answers no question in this file: a turn of its own, with no user text
        turn = _Open(number, "", None, _source_id(record), pending, conversation)
        pending = Counter()
        turn.add_reply(text, time, blocks)
    if turn is not None:
        yield turn.turn()
