"""``text`` (and, through ``memctl.sources.markdown``, ``markdown``): a note file is one episode.

The episode is the note's text (the "user" side; no reply), position 1, with any YAML
front matter (``---`` on the first line up to the next ``---`` or ``...``) removed.

Its time, first that works:

1. ``date:`` in the front matter, then ``created:`` (top-level keys, any case; quotes
   and a trailing ``# comment`` are dropped). Only that key is read, without a YAML
   library. The value is read as every format reads a record's time
   (``memctl.times.record_time_to_storage``): ISO-8601, where a bare date is 00:00 UTC, a
   naive datetime is UTC and an offset is honoured, or an epoch number.
2. A date in the file name: ``2024-03-05-standup.md``, ``notes_20240305.txt``,
   ``2024_03_05.md``, ``2024.03.05.txt`` (the same separator twice, or none; not part of a
   longer run of digits; years 1900–2099), as 00:00 UTC that day.
3. None: ``--reference-time`` or ``--from-mtime`` apply, else the file is refused.

Both 1 and 2 are the note's own record (time source ``record``). A value that is not a
real date (``2024-02-31``, ``last tuesday``) is not a date: the next rule is tried.

The file is read once, as UTF-8 (undecodable bytes replaced); ``parse`` cuts the episode
to ``MAX_EPISODE_CHARS``. (Aider's own logs end in ``.md`` too; detection asks Aider
first, see ``memctl.sources.DETECTION_ORDER``.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path

from memctl import times
from memctl.sources import Head, IngestOptions, Notice, Skipped, Turn, read_text

NAME = "text"

FRONT_MATTER_KEYS = ("date", "created")
FRONT_MATTER_MAX_LINES = 200  # an opening "---" not closed by then is not front matter

_KEY = re.compile(r"^([A-Za-z_]+)\s*:(.*)$")
_NAME_DATE = re.compile(r"(?<!\d)(\d{4})([-_.]?)(\d{2})\2(\d{2})(?!\d)")

EMPTY = "empty note"


def sniff(path: Path, head: Head) -> bool:
    return path.suffix.lower() == ".txt"


def _scalar(raw: str) -> str:
    value = raw.strip()
    if value[:1] in ("'", '"'):
        end = value.find(value[0], 1)
        return value[1:end] if end > 0 else value[1:]
    return re.split(r"\s+#", value, maxsplit=1)[0].strip()


def front_matter_time(lines: list[str]) -> str | None:
    """Storage form of the front matter's ``date:`` (else ``created:``); None if neither is a date."""
    found: dict[str, str] = {}
    for line in lines:
        match = _KEY.match(line)
        if match:
            found.setdefault(match.group(1).lower(), match.group(2))
    for key in FRONT_MATTER_KEYS:
        if key in found:
            try:
                return times.record_time_to_storage(_scalar(found[key]))
            except times.BadInstant:
                continue
    return None


def name_time(name: str) -> str | None:
    """Storage form (00:00 UTC) of the first real date in a file name; None if there is none."""
    for match in _NAME_DATE.finditer(name):
        year, month, day = int(match.group(1)), int(match.group(3)), int(match.group(4))
        if not 1900 <= year <= 2099:
            continue
        try:
            return f"{date(year, month, day).isoformat()}T00:00:00.000000Z"
        except ValueError:  # 2024-02-31
            continue
    return None


def read_note(path: Path) -> tuple[list[str], str, Notice | None]:
    """(front matter lines, text without them, a note on how it was decoded), reading the file once."""
    whole, notice = read_text(path)
    lines = whole.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return [], whole, notice
    for end, line in enumerate(lines[1:FRONT_MATTER_MAX_LINES + 1], 1):
        if line.rstrip() in ("---", "..."):
            return lines[1:end], "".join(lines[end + 1:]), notice
    return [], whole, notice


def turns(path: Path, options: IngestOptions) -> Iterator[Turn | Skipped | Notice]:
    front, text, notice = read_note(path)
    if notice is not None:
        yield notice
    if not text.strip():
        yield Skipped(1, EMPTY)
        return
    time = front_matter_time(front) or name_time(path.name)
    yield Turn(position=1, user=text, time=time, time_source="record")
