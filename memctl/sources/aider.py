"""``aider``: Aider's ``.aider.chat.history.md``.

The file is Markdown that Aider appends to as it runs::

    # aider chat started at 2024-05-01 14:03:22      <- a session starts (naive LOCAL time)

    > Aider v0.83.1                                  <- Aider's own output ("tool output")

    #### first line of what the user typed           <- user input, one "#### " per line
    #### second line

    The model's reply, in Markdown, until the next "#### " line or session header.

    > Tokens: 615 sent, 1.6k received.               <- Aider's own output again

Reading rules (they follow Aider's own reader, ``split_chat_history_markdown``):

* A turn is a run of consecutive ``#### `` lines (the user's input) and everything after
  it up to the next ``#### `` line or session header (the reply). A ``#### `` line is always
  user input, even inside the reply: that is how Aider itself reads the file back.
* Lines starting with ``> `` are Aider's output (banners, token counts, "Applied edit",
  command output): left out of the episode and counted as ``left_out["tool_output"]`` on
  the turn they follow; those before a session's first turn are counted on that turn.
* Time: the session header's naive local time, read in ``IngestOptions.tz`` (an IANA
  zone; None means this machine's zone) and converted to UTC. Turns carry no time of
  their own, so EVERY turn of a session gets the session's start time, with time source
  ``session``: no precision is invented (no per-turn offsets); turns that tie are ordered
  downstream by episode id. An ambiguous local time (the repeated hour when DST ends) is
  read as its first occurrence (``fold=0``).
* A turn before any session header, or in a session whose header cannot be read, has no
  time (``None``), so ``--reference-time`` / ``--from-mtime`` apply; an unreadable header
  is reported as a malformed record, never skipped silently.
* A turn that is only an Aider command (``/commit``, ``/res``, ``/ask ...``) with no reply
  is skipped on purpose: Aider logs ``/ask X`` and then ``X`` again as the next turn, and a
  bare command says nothing to remember. A command turn with a reply is kept.
* Position: the line number of the turn's first ``#### `` line.

Streaming: one line at a time; only the current turn is held in memory.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil import tz as dateutil_tz

from memctl import times
from memctl.errors import BadInput
from memctl.sources import Head, IngestOptions, Notice, Skipped, Turn, read_text

NAME = "aider"
CHAT_HISTORY = ".aider.chat.history.md"

HEADER_PREFIX = "# aider chat started at"
_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
USER_PREFIX = "#### "
TOOL_PREFIX = "> "

COMMAND_ONLY = "aider command with no reply"


def sniff(path: Path, head: Head) -> bool | None:
    if path.name == CHAT_HISTORY:
        return True
    # Aider's input history and raw LLM log hold no conversation, whatever their suffix.
    return None if path.name.startswith(".aider.") else False


def zone(name: str | None) -> tzinfo:
    """The zone naive Aider times are read in: the IANA ``name``, or this machine's."""
    if name is None:
        return dateutil_tz.tzlocal()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadInput(
            f"unknown time zone {name!r}; give an IANA name such as --tz Europe/Oslo or --tz America/New_York"
        ) from None


def session_start(line: str, where: tzinfo) -> str | None:
    """Storage form of a ``# aider chat started at ...`` line; None if it does not parse."""
    match = _HEADER.match(line)
    if not match:
        return None
    try:
        naive = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")
    except ValueError:  # Feb 31, hour 25...
        return None
    return times.to_storage(naive.replace(tzinfo=where, fold=0))


def _is_user_line(line: str) -> bool:
    # "####" alone: a blank input line whose trailing spaces an editor stripped
    return line.startswith(USER_PREFIX) or line == "####"


class _Open:
    """The turn being read."""

    def __init__(self, position: int, time: str | None, left_out: Counter):
        self.position = position
        self.time = time
        self.user: list[str] = []
        self.reply: list[str] = []
        self.left_out = left_out


def _finish(turn: _Open) -> Turn | Skipped:
    user = "\n".join(turn.user)
    assistant = "\n".join(turn.reply).strip()
    if not assistant and user.lstrip().startswith("/"):
        return Skipped(turn.position, COMMAND_ONLY)
    return Turn(
        position=turn.position,
        user=user,
        assistant=assistant,
        time=turn.time,
        time_source="session",
        left_out=dict(turn.left_out),
    )


def turns(path: Path, options: IngestOptions) -> Iterator[Turn | Skipped | Notice]:
    where = zone(options.tz)
    session_time: str | None = None
    pending: Counter = Counter()  # Aider output seen before the session's first turn
    turn: _Open | None = None
    in_user: _Open | None = None  # `turn`, while its "#### " lines are being read

    text, notice = read_text(path)
    if notice is not None:
        yield notice
    for number, raw in enumerate(io.StringIO(text, newline=None), 1):  # any line end ends a line
        line = raw.rstrip("\n")
        if line.startswith(HEADER_PREFIX):
            if turn is not None:
                yield _finish(turn)
                turn = None
            in_user = None
            pending = Counter()
            session_time = session_start(line, where)
            if session_time is None:
                yield Skipped(
                    number,
                    f"unreadable aider session header {line.strip()!r}: its turns get no session time",
                    malformed=True,
                )
            continue
        if _is_user_line(line):
            if in_user is None:
                if turn is not None:
                    yield _finish(turn)
                turn = in_user = _Open(number, session_time, pending)
                pending = Counter()
            in_user.user.append(line[len(USER_PREFIX):].rstrip())
            continue
        in_user = None
        if line.startswith(TOOL_PREFIX) or line.rstrip() == ">":
            (turn.left_out if turn is not None else pending)["tool_output"] += 1
            continue
        if turn is not None:
            turn.reply.append(line.rstrip())
    if turn is not None:
        yield _finish(turn)
