"""Sources: files in, dated episodes out. One module per format.

Every episode is stamped with its true time, resolved per architecture §2: the record's own
time, then session times, then ``--reference-time``, then the file's mtime with
``--from-mtime``; otherwise the episode is skipped and its file reported as refused.
Never the import's clock.

Each format module is a ``Source`` (below): it declares its ``NAME``, a cheap ``sniff``
that recognises its files, and ``turns(path, options)``, yielding ``Turn`` (one user turn
and the assistant's reply) or ``Skipped`` (a record left out, with the reason). ``parse``
turns those into ``Episode`` objects: it resolves the time, redacts secrets
(``memctl.redact``), and cuts long turns to ``MAX_EPISODE_CHARS`` (``render``), in that
order. The structured ``facts`` format yields episodes itself, because its bad input
refuses the whole command instead; its content is redacted, then cut by the same rule
(``cut``).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, cast

import jsonlines

from memctl import times
from memctl.errors import BadInput, FileRefused, NotFound
from memctl.model import Episode, content_hash
from memctl.results import REPLY_PREFIX, USER_PREFIX

# format name -> module under memctl.sources, imported when the format is first used
MODULES = {
    "facts": "facts",
    "claude-code": "claude_code",
    "codex": "codex",
    "chatgpt": "chatgpt",
    "claude-ai": "claude_ai",
    "gemini": "gemini",
    "aider": "aider",
    "jsonl": "chat_jsonl",
    "text": "notes",
    "markdown": "markdown",
}
FORMATS = tuple(MODULES)
MEMORY_FORMAT = "memory"  # an add_memory episode's format: written live, not read from a file

# The order auto-detection asks the formats in; the first whose sniff says yes reads the
# file. Aider goes first because it also answers for its other ".aider.*" files (not
# conversations, whatever their suffix). Among JSONL formats a codex rollout's name wins
# over claude-code's keys, and generic jsonl comes last; among JSON exports, chatgpt,
# claude-ai, then gemini.
DETECTION_ORDER = ("aider", "facts", "codex", "claude-code", "jsonl", "chatgpt", "claude-ai", "gemini", "markdown", "text")

# An episode's text is at most this long, whatever its format: one turn that pastes a
# whole log, or one structured line with a huge "content", must not become an enormous
# extraction prompt or row. What is cut is said where it was cut (``cut``).
MAX_EPISODE_CHARS = 20_000
# A long turn is cut in its user part first (a pasted log, a HAR file), so that the reply,
# which says what was done, stays whole; the user part keeps at least this much (its
# start and end: the question is usually said before or after the paste).
MIN_USER_CHARS = 4_000
# A cut ends at a line break when one is this close, so that no half line is read as a sentence.
_SNAP_CHARS = 400

NO_TIME = "no reference time: pass --reference-time ISO or --from-mtime"


@dataclass(frozen=True)
class IngestOptions:
    format: str = "auto"
    reference_time: str | None = None  # for records without a time; any ISO-8601 form, kept in storage form
    from_mtime: bool = False
    tz: str | None = None  # IANA zone for naive local times (Aider); None: this machine's

    def __post_init__(self) -> None:
        object.__setattr__(self, "reference_time", times.instant_argument(self.reference_time, what="reference_time"))


@dataclass
class Turn:
    """One user turn and the assistant's reply, as a format module reads it."""

    position: int  # line or record number of the user message in its file (1-based)
    user: str
    assistant: str = ""
    time: str | None = None  # storage form; the user record's own time, or a session time
    time_source: str = "record"  # "record" | "session"
    source_id: str | None = None  # the format's id of the user message, if it has one
    identity: str | None = None  # same turn in another file (a resumed session) -> same value
    # The conversation it is part of, in a file that holds many (an export, a chat log of
    # several threads): recall's session. None: the file is one session.
    session: str | None = None
    left_out: dict[str, int] = field(default_factory=dict)  # e.g. {"tool_use": 2, "thinking": 1}


@dataclass
class Skipped:
    """A record that gives no episode, and why (a malformed line, a compaction summary...)."""

    position: int
    reason: str
    malformed: bool = False  # bad input, as opposed to something left out on purpose


@dataclass
class Notice:
    """Something a reader did that the user should hear of, though nothing was lost: a file
    that is not UTF-8, read in another encoding."""

    text: str


def read_text(path: Path) -> tuple[str, Notice | None]:
    """A text file's content: UTF-8 (a byte-order mark dropped), else Windows-1252, which
    reads Latin-1 too (a note saved by an old editor) and says so; never replacement
    characters in place of what the file holds."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as error:
        fallback = "cp1252" if all(byte not in raw for byte in (0x81, 0x8D, 0x8F, 0x90, 0x9D)) else "latin-1"
        return raw.decode(fallback), Notice(f"not UTF-8 (byte {error.start}): read as "
                                            f"{'Windows-1252' if fallback == 'cp1252' else 'Latin-1'}")


class BadLine(str):
    """What ``read_jsonl(strict=False)`` yields in place of a value it could not read."""


def fallback_reference_time(path: Path, options: IngestOptions) -> tuple[str, str]:
    """(time, source) for records without a time of their own; BadInput if none."""
    if options.reference_time is not None:
        return options.reference_time, "user"
    if options.from_mtime:
        return times.epoch_to_storage(os.stat(path).st_mtime), "mtime"
    raise BadInput(
        f"{path}: no reference time for its records; pass --reference-time ISO "
        "(e.g. --reference-time 2025-03-01) or --from-mtime to date them by the file's modification time"
    )


class _NumberedLines:
    """Lines of a file opened in binary mode that remember the number and bytes of the
    last one read; from line ``first``, up to the line that ends at or past byte ``stop``."""

    def __init__(self, handle: BinaryIO, first: int = 1, stop: int | None = None):
        self._handle = handle
        self._first = first
        self._left = stop - handle.tell() if stop is not None else None
        self.number = first - 1
        self.text = b""

    def __iter__(self) -> Iterator[bytes]:
        for number, text in enumerate(self._handle, self._first):
            self.number, self.text = number, text
            yield text
            if self._left is not None:
                self._left -= len(text)
                if self._left <= 0:
                    return


def read_jsonl(path: Path, *, strict: bool = True, start: int = 0, stop: int | None = None,
               first_line: int = 1) -> Iterator[tuple[int, str, object]]:
    """(line number, raw line, value) per non-blank line, streaming; only the lines from
    byte ``start`` (where line ``first_line`` begins) to the one that ends at or past
    byte ``stop``, if given.

    A bad line raises BadInput when ``strict``; otherwise its value is a ``BadLine``
    saying what is wrong, and reading goes on.
    """
    with open(path, "rb") as handle:
        handle.seek(start)
        lines = _NumberedLines(handle, first_line, stop)
        reader = jsonlines.Reader(lines, loads=_loads)
        while True:
            try:
                value = reader.read(skip_empty=True, allow_none=True)
            except EOFError:
                return
            except jsonlines.InvalidLineError as error:
                if strict:  # the file's line number: the reader counts from where it began
                    raise BadInput(f"{path}:{lines.number}: {error.args[0]}") from None
                value = BadLine(error.args[0])
            raw = lines.text.decode("utf-8", errors="replace")
            yield lines.number, raw, value


def files_under(paths: list[Path], not_files: list[str] | None = None) -> list[Path]:
    """The files named, and those inside directories named, each once, in path order.

    What is there but is no regular file (a pipe, a device, a socket, a link to one, as
    ``/dev/zero``) is never opened: reading it could block or never end. It goes into
    ``not_files``, saying what it is; a name that is not there at all is NotFound.
    """
    check_present(paths)
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            children = sorted(p for p in path.rglob("*") if not p.is_dir())
        else:
            children = [path]
        for child in children:
            if child.is_file():
                found.setdefault(child.resolve(), None)
            elif not_files is not None:
                not_files.append(f"{child}: {_what_it_is(child)}, not a file: skipped")
    return list(found)


def agent_log_folders(environ: Mapping[str, str] = os.environ) -> list[tuple[str, Path]]:
    """(agent, folder) of each agent's own log folder that exists here: what `memctl
    ingest` with no path reads. Each agent's setting of where it keeps them is honoured."""
    home = Path(environ.get("HOME") or Path.home())
    claude = Path(environ["CLAUDE_CONFIG_DIR"]) if environ.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    codex = Path(environ["CODEX_HOME"]) if environ.get("CODEX_HOME") else home / ".codex"
    known = [("Claude Code", claude / "projects"), ("Codex", codex / "sessions"), ("Gemini CLI", home / ".gemini" / "tmp")]
    return [(agent, folder) for agent, folder in known if folder.is_dir()]


def check_present(paths: Iterable[Path]) -> None:
    """NotFound for the first of ``paths`` that is not there at all: asked before a store
    is opened, so that a mistyped path leaves no empty database behind."""
    for path in paths:
        if not (path.exists() or path.is_symlink()):
            raise NotFound(f"{path}: no such file or directory")


def cannot_read(path: Path) -> str | None:
    """Why ``path`` cannot be read (no permission, an I/O error), as a report line; None
    when it can. Asked before sniffing, which would take an unreadable file for one of no
    format we know and say nothing."""
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as error:
        return f"{path}: cannot be read: {error.strerror or error}"
    return None


BINARY_SNIFF = 8192  # bytes looked at, as git does to tell binary files from text


def binary_content(path: Path) -> str | None:
    """Why a file a format would read is refused as binary (a zip named .md, an image
    forced as text), as a report line; None for text. Binary is a NUL byte in the first
    8 KiB (git's test), or a start of which much is not UTF-8; a text file in another
    8-bit encoding with a few odd bytes is still read."""
    with open(path, "rb") as handle:
        start = handle.read(BINARY_SNIFF)
    if b"\0" in start:
        return f"{path}: binary content (NUL bytes), not text: skipped"
    text = start.decode("utf-8", errors="replace")
    # A character cut at the 8 KiB boundary decodes as a replacement or two: no evidence.
    if text.count("\ufffd") > max(4, len(text) // 10):
        return f"{path}: binary content (not UTF-8 text): skipped"
    return None


def _what_it_is(path: Path) -> str:
    if not path.exists():
        return "a link to nothing"
    if path.is_fifo():
        return "a pipe"
    if path.is_socket():
        return "a socket"
    if path.is_char_device() or path.is_block_device():
        return "a device" + (f" (a link to {os.path.realpath(path)})" if path.is_symlink() else "")
    return "not a regular file"


SNIFF_LINES = 20  # lines a bad start of a .jsonl file may take before its first good record


class Head:
    """The start of a file, as sniffing sees it: each part read once, when first asked for."""

    def __init__(self, path: Path):
        self._path = path

    @cached_property
    def jsonl_record(self) -> object | None:
        """The first good value of a ``.jsonl`` file; None for other files and unreadable ones.

        A bad first line (one byte of invalid UTF-8, a truncated record) does not hide
        what the file is: the next good one within SNIFF_LINES decides, and reading the
        file reports the bad line like any other.
        """
        if self._path.suffix.lower() != ".jsonl":
            return None
        try:
            for number, _, value in read_jsonl(self._path, strict=False):
                if not isinstance(value, BadLine):
                    return value
                if number >= SNIFF_LINES:
                    return None
        except (OSError, UnicodeDecodeError):
            return None
        return None

    @cached_property
    def json_text(self) -> str:
        """The first 64 KiB of a ``.json`` file, decoded; "" for other files."""
        if self._path.suffix.lower() != ".json":
            return ""
        with open(self._path, "rb") as handle:
            return handle.read(65536).decode("utf-8", errors="replace")


class Source(Protocol):
    """A log format: what each format module defines at module level.

    ``sniff`` tells from a file's name and ``Head`` whether the file is this format's:
    True, False (ask the next format), or None (a file of this format's tool that holds no
    conversation, so no format reads it). ``turns`` reads the file into ``Turn`` and
    ``Skipped`` items; a format that builds its own ``Episode`` objects (facts, whose bad
    input refuses the whole command rather than skipping a record) yields those instead.
    """

    NAME: str

    def sniff(self, path: Path, head: Head) -> bool | None: ...

    def turns(self, path: Path, options: IngestOptions) -> Iterable[Turn | Skipped | Episode | Notice]: ...


def source(fmt: str) -> Source:
    """The module of format ``fmt``; imported here, so that ``memctl --help`` imports none."""
    return cast(Source, importlib.import_module(f"memctl.sources.{MODULES[fmt]}"))


def detect_format(path: Path) -> str | None:
    """The format of a file by its name and first record; None when it is not one we read."""
    head = Head(path)
    for fmt in DETECTION_ORDER:
        verdict = source(fmt).sniff(path, head)
        if verdict is None:
            return None
        if verdict:
            return fmt
    return None


def format_of(path: Path, options: IngestOptions) -> str | None:
    if options.format == "auto":
        return detect_format(path)
    if options.format not in MODULES:
        raise BadInput(f"unknown format {options.format!r}; choose one of: auto, {', '.join(FORMATS)}")
    return options.format


def render(turn: Turn) -> tuple[str, int]:
    """An episode's stored text (the user turn and the reply, nothing else) and the number
    of characters cut from it.

    The text is at most ``MAX_EPISODE_CHARS`` (and the cut markers). The user part is cut
    first, down to ``MIN_USER_CHARS``; only a reply longer than what is left is cut too. A
    reply with no user turn (a chat reply that answers nothing in its file) is rendered
    alone, ``Assistant: …``.
    """
    user, reply = turn.user.strip(), turn.assistant.strip()
    least_user = min(len(user), MIN_USER_CHARS)
    reply, reply_cut = cut(reply, MAX_EPISODE_CHARS - least_user)
    user, user_cut = cut(user, max(MAX_EPISODE_CHARS - len(reply), least_user))
    parts = [USER_PREFIX + user] if user or not reply else []
    if reply:
        parts.append(REPLY_PREFIX + reply)
    return "\n\n".join(parts), user_cut + reply_cut


def cut(text: str, limit: int = MAX_EPISODE_CHARS) -> tuple[str, int]:
    """``text`` at most ``limit`` characters long, and how many were cut.

    The middle goes: the first three quarters of ``limit`` and the last quarter are kept,
    each ending at a line break when one is near, and a line in between says how many
    characters were cut.
    """
    if len(text) <= limit:
        return text, 0
    head_end, tail_start = limit * 3 // 4, len(text) - limit // 4
    newline = text.rfind("\n", max(0, head_end - _SNAP_CHARS), head_end)
    head_end = newline if newline > 0 else head_end
    newline = text.find("\n", tail_start, tail_start + _SNAP_CHARS)
    tail_start = newline + 1 if newline >= 0 else tail_start
    removed = tail_start - head_end
    return f"{text[:head_end]}\n[cut: {removed} characters]\n{text[tail_start:]}", removed


def parse(path: Path, options: IngestOptions, fmt: str | None = None) -> Iterator[Episode | Skipped | Notice]:
    """Episodes of one file (and the records it skipped), streaming, in file order."""
    fmt = fmt or format_of(path, options)
    if fmt is None:
        return
    from memctl.redact import redact_into

    fallback: tuple[str, str] | None = None
    for item in source(fmt).turns(path, options):
        if not isinstance(item, Turn):
            yield item  # a Skipped record, a Notice, or an Episode the format built itself
            continue
        if item.time is not None:
            reference_time, reference_source = item.time, item.time_source
        else:
            try:
                fallback = fallback or fallback_reference_time(path, options)
            except BadInput:
                yield Skipped(item.position, NO_TIME)
                continue
            reference_time, reference_source = fallback
        # Redacted before the cut: a cut through a secret would leave a part no rule knows.
        redacted: dict[str, int] = {}
        said = replace(item, user=redact_into(item.user, redacted), assistant=redact_into(item.assistant, redacted))
        text, cut_chars = render(said)
        yield Episode(
            source=str(path),
            position=item.position,
            format=fmt,
            content=text,
            content_hash=content_hash(text),
            reference_time=reference_time,
            reference_time_source=reference_source,
            source_id=item.source_id,
            identity=f"{fmt}\x1f{item.identity}" if item.identity else None,
            session=item.session,
            redacted=redacted,
            left_out=dict(item.left_out),
            cut_chars=cut_chars,
            extraction="pending",
        )


def load_json(path: Path, *, levels: int = 0) -> object:
    """A whole JSON export (ChatGPT, Claude.ai, Gemini); FileRefused naming the file if bad.

    A value nested deeper than Python's JSON reader can follow (one message 5,000
    brackets deep) must not refuse the whole export: the file is then read container by
    container, down to ``levels`` below the top, and the element that is still too deep
    is a ``TooDeep`` in its place, for the format to skip with its reason.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        try:
            return json.loads(raw)
        except RecursionError:
            return _loads_splitting(raw.decode("utf-8-sig"), levels)
    except (ValueError, UnicodeDecodeError) as error:
        raise FileRefused(f"{path}: not valid JSON ({error})") from None


class TooDeep:
    """What ``load_json`` holds in place of a value nested too deeply to read."""

    def __str__(self) -> str:
        return f"nested more than {sys.getrecursionlimit()} levels deep: too deep to read"


# A JSON string, or one of the characters that give a JSON text its structure.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)


def _loads_splitting(text: str, levels: int) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        if levels == 0:
            return TooDeep()
    members = _members(text)
    if text.lstrip().startswith("["):
        return [_loads_splitting(text[start:end], levels - 1) for _, (start, end) in members]
    return {json.loads(text[key[0]:key[1]]) if key else "": _loads_splitting(text[start:end], levels - 1)
            for key, (start, end) in members}


def _members(text: str) -> list[tuple[tuple[int, int] | None, tuple[int, int]]]:
    """(key span or None, value span) of each member of the array or object ``text`` holds,
    found by following brackets and strings, never recursing however deep the values go."""
    members: list[tuple[tuple[int, int] | None, tuple[int, int]]] = []
    depth, start, key = 0, 0, None
    for token in _JSON_TOKEN.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth == 1:
                start = token.end()
        elif mark in "]}" or (mark == "," and depth == 1):
            if depth == 1 and text[start:token.start()].strip():
                members.append((key, (start, token.start())))
            if mark == ",":
                start, key = token.end(), None
            else:
                depth -= 1
                if depth == 0:
                    return members
        elif mark == ":" and depth == 1:
            key, start = (start, token.start()), token.end()
    raise ValueError("unbalanced brackets")


def _loads(text: str | bytes) -> object:
    """json.loads, with a value nested deeper than Python's recursion allows (a 4 kB line
    of 2,000 brackets) reported as the bad input it is: a ValueError, which jsonlines
    turns into a bad line like any other, instead of a RecursionError that ends the run."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to be a record") from None


if TYPE_CHECKING:
    # The format modules are imported lazily, by name; this lets mypy check each against Source.
    from memctl.sources import aider, chat_jsonl, chatgpt, claude_ai, claude_code, codex, facts, gemini, markdown, notes

    _SOURCES: tuple[Source, ...] = (aider, chat_jsonl, chatgpt, claude_ai, claude_code, codex, facts, gemini, markdown, notes)
