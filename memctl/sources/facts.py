"""``--format facts``: structured JSONL, one episode per line, no inference.

    {"reference_time": ISO, "source_id"?: str, "content"?: str, "extracted_at"?: ISO,
     "facts": [{"subject", "predicate", "object", "fact"?, "valid_at"?, "invalid_at"?,
                "cardinality"?: "one"|"many", "retracted"?: bool, "extracted_at"?: ISO}]}

Dates are stored as given (evidence ``explicit``); a fact without ``valid_at`` is valid
from the episode's reference time (evidence ``reference``). ``"retracted": true`` states
only that the fact stopped holding at ``invalid_at`` (default: the reference time).
Unknown keys are refused rather than ignored: a misspelt "valid_from" would otherwise
silently lose its date. Secrets are redacted from the content and from each fact's
subject, object and sentence before anything is stored.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal, NamedTuple, Required

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict  # pydantic reads typing's own only from Python 3.12

from memctl import times
from memctl.errors import BadInput, MemctlError, StoreUnavailable
from memctl.forking import forking_helps
from memctl.model import Assertion, Episode, Evidence, InvalidAssertion, Precision, content_hash
from memctl.redact import could_hold_secret, redact_into
from memctl.sources import Head, IngestOptions, cut, fallback_reference_time, read_jsonl

if TYPE_CHECKING:
    import multiprocessing.connection

NAME = "facts"


def sniff(path: Path, head: Head) -> bool:
    return isinstance(head.jsonl_record, dict) and "facts" in head.jsonl_record


@with_config(ConfigDict(extra="forbid", strict=True))
class _Fact(TypedDict, total=False):
    subject: Required[str]
    predicate: Required[str]
    object: Required[str]
    fact: str | None
    valid_at: str | None
    invalid_at: str | None
    cardinality: Literal["one", "many"]
    retracted: bool
    extracted_at: str | None


@with_config(ConfigDict(extra="forbid", strict=True))
class _Line(TypedDict, total=False):
    facts: Required[list[_Fact]]
    reference_time: str | None
    source_id: str | None
    content: str | None
    extracted_at: str | None


# Plain dicts checked by pydantic rather than models built by it: a model per fact cost
# three times as much, and a problem is still named as in the file (``facts[2].valid_at``).
_LINE: TypeAdapter[_Line] = TypeAdapter(_Line)


def _instant(value: str | None, what: str) -> tuple[str, Precision] | None:
    return None if value is None else times.stored_instant(value, what=what)


class _Interval(TypedDict):
    """An assertion's dates, as the keywords ``Assertion`` takes them."""

    valid_at: str | None
    valid_at_evidence: Evidence | None
    valid_at_precision: Precision | None
    invalid_at: str | None
    invalid_at_evidence: Evidence | None
    invalid_at_precision: Precision | None


# One end of the interval: (storage time, evidence, precision), or all None.
_Bound = tuple[str | None, Evidence | None, Precision | None]
_UNBOUNDED: _Bound = (None, None, None)


def _bound(given: tuple[str, Precision] | None, reference_time: str | None) -> _Bound:
    """The date the line gives (``explicit``), else ``reference_time`` (``reference``), else none."""
    if given is not None:
        return given[0], "explicit", given[1]
    if reference_time is not None:
        return reference_time, "reference", "instant"
    return _UNBOUNDED


def _interval(item: _Fact, where: str, reference_time: str) -> _Interval:
    """A fact holds from ``valid_at`` (default: the reference time) until ``invalid_at``, if
    given; a retraction only ends it, at ``invalid_at`` (default: the reference time)."""
    valid = _instant(item.get("valid_at"), f"{where}.valid_at")
    invalid = _instant(item.get("invalid_at"), f"{where}.invalid_at")
    if item.get("retracted"):
        if valid is not None:
            raise ValueError(f"{where}: a retracted fact has no valid_at; give invalid_at, when it stopped holding")
        start, end = _UNBOUNDED, _bound(invalid, reference_time)
    else:
        start, end = _bound(valid, reference_time), _bound(invalid, None)
    return _Interval(valid_at=start[0], valid_at_evidence=start[1], valid_at_precision=start[2],
                     invalid_at=end[0], invalid_at_evidence=end[1], invalid_at_precision=end[2])


def _assertion(item: _Fact, index: int, reference_time: str, line_extracted_at: str | None,
               redacted: dict[str, int] | None) -> Assertion:
    """The fact as an assertion, its secrets redacted (counted into ``redacted``) first, so
    that a sentence made from subject and object has none either. ``redacted`` None: the
    line holds nothing a secret could be (``_redacting``)."""
    where = f"facts[{index}]"
    interval = _interval(item, where, reference_time)
    extracted = _instant(item.get("extracted_at"), f"{where}.extracted_at")
    subject, object_ = _clean(item["subject"], redacted), _clean(item["object"], redacted)
    predicate, sentence = item["predicate"], item.get("fact")
    try:
        return Assertion(
            subject=subject,
            predicate=predicate,
            object=object_,
            fact=_clean(sentence, redacted) if sentence else f"{subject} {predicate.replace('_', ' ')} {object_}",
            cardinality=item.get("cardinality", "one"),
            extractor="facts",
            extracted_at=extracted[0] if extracted else line_extracted_at,
            **interval,
        )
    except InvalidAssertion as error:
        raise ValueError(f"{where}: {error}") from None


def _clean(text: str, redacted: dict[str, int] | None) -> str:
    return text if redacted is None else redact_into(text, redacted)


def _first_message(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(f"[{part}]" if isinstance(part, int) else str(part) for part in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    return f"{where.replace('.[', '[')}: {message}" if where else message


def _problem(error: ValidationError | ValueError) -> str:
    return _first_message(error) if isinstance(error, ValidationError) else str(error)


def read_facts(facts: object, reference_time: str, redacted: dict[str, int]) -> list[Assertion]:
    """Fact objects given outside a file (``Memory.add_memory``) as assertions, read as a
    line's are: dates as given, nothing inferred, secrets counted into ``redacted``.
    BadInput names the first problem."""
    try:
        given = _LINE.validate_python({"facts": facts})
        return [_assertion(item, index, reference_time, None, redacted) for index, item in enumerate(given["facts"])]
    except (ValidationError, ValueError) as error:
        raise BadInput(_problem(error)) from None


# A facts file this big is checked in two halves at once, the second in a forked process,
# on a machine with two cores or more: checking is Python work on every line (JSON,
# pydantic, dates, secrets), a fifth of a 100k-assertion ingest.
CHECK_IN_HALVES_BYTES = 8 << 20


def check(path: Path, options: IngestOptions, spool: IO[bytes]) -> int:
    """Read the whole file as ``turns`` does, its episodes set aside in ``spool`` (a
    temporary file), and how many; BadInput names its first bad line.

    Ingest checks a facts file whole before storing any of it (a half-stored file is half
    a migration), and stores what it checked from the spool (``checked``): each line is
    read, checked and redacted once, and a line appended meanwhile is not stored unchecked.
    A big file's second half is checked meanwhile by another process (``_middle``).
    """
    middle = _middle(path)
    if middle is None:
        return _set_aside(path, _lines(path, options), spool)
    import multiprocessing

    try:
        second = tempfile.TemporaryFile()
    except OSError:  # nowhere to set the second half aside: one pass, whose spool says so if it cannot grow either
        return _set_aside(path, _lines(path, options), spool)
    with second:
        receive, send = multiprocessing.Pipe(duplex=False)
        worker = multiprocessing.get_context("fork").Process(
            target=_check_second_half, args=(path, options, middle, second, send), daemon=True)
        worker.start()
        send.close()
        try:
            count = _set_aside(path, _lines(path, options, stop=middle), spool)
            try:
                outcome = receive.recv()
            except EOFError:  # the worker died without a word: its half is checked here
                outcome = None
        except BaseException:  # the first bad line is in the first half, or the user stopped it
            worker.kill()
            raise
        finally:
            worker.join()
            receive.close()
        if outcome is None:
            return count + _set_aside(path, _lines_from(path, options, middle), spool)
        if isinstance(outcome, MemctlError):
            raise outcome
        second.seek(0)
        try:
            shutil.copyfileobj(second, spool)
        except OSError as error:
            raise _cannot_set_aside(path, error) from None
        return count + outcome


def _middle(path: Path) -> int | None:
    """Where a big file's second half begins (the start of a line), if it is to be checked
    in another process: not on one core, nor where a fork could copy another thread's lock."""
    size = path.stat().st_size
    if size < CHECK_IN_HALVES_BYTES or not forking_helps():
        return None
    with open(path, "rb") as handle:
        handle.seek(size // 2)
        handle.readline()
        middle = handle.tell()
    return middle if middle < size else None


def _check_second_half(path: Path, options: IngestOptions, start: int, into: IO[bytes],
                       result: multiprocessing.connection.Connection) -> None:
    """In the forked process: the lines from ``start`` on, set aside in ``into``; sends how
    many, or the error that refuses them. Anything else (a bug) sends nothing, and the
    parent checks the half itself. Ctrl-C is the parent's to handle: it ends this process.

    It ends with os._exit, at once: the parent's standard streams, copied by the fork,
    may hold output of the parent's that must not be written twice.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        count = _set_aside(path, _lines_from(path, options, start), into)
        into.flush()
        result.send(count)
    except MemctlError as error:
        result.send(error)
    except BaseException:  # the parent does the half again, and reports what it finds
        pass
    os._exit(0)


def _lines_from(path: Path, options: IngestOptions, start: int) -> Iterator[_Read]:
    """``_lines`` from byte ``start`` (the start of a line) on, numbered as in the whole file."""
    return _lines(path, options, start=start, first_line=_lines_before(path, start) + 1)


def _lines_before(path: Path, offset: int) -> int:
    """How many lines end before byte ``offset``."""
    count = 0
    with open(path, "rb") as handle:
        while offset > 0 and (block := handle.read(min(offset, 1 << 20))):
            count += block.count(b"\n")
            offset -= len(block)
    return count


def _set_aside(path: Path, lines: Iterator[_Read], spool: IO[bytes]) -> int:
    """Each line's episode written to ``spool``, marshalled, after its length; how many."""
    count = 0
    for read in lines:
        record = marshal.dumps(_record(path, read))
        try:
            spool.write(len(record).to_bytes(4, "little") + record)
        except OSError as error:
            raise _cannot_set_aside(path, error) from None
        count += 1
    return count


def _cannot_set_aside(path: Path, error: OSError) -> StoreUnavailable:
    return StoreUnavailable(f"cannot set aside the checked lines of {path} in a temporary file ({error.strerror}); "
                            "set TMPDIR to a directory with room")


def checked(spool: IO[bytes], count: int) -> Iterator[Episode]:
    """The next ``count`` episodes ``check`` set aside in ``spool``."""
    for _ in range(count):
        # Each read whole: marshal.load reads a file a few bytes at a time.
        yield _episode(marshal.loads(spool.read(int.from_bytes(spool.read(4), "little"))))


def turns(path: Path, options: IngestOptions) -> Iterator[Episode]:
    """Episodes, not turns: a line is read as given, and a bad one refuses the whole command (BadInput)."""
    for read in _lines(path, options):
        yield _episode(_record(path, read))


# An episode as plain values, which marshal writes and reads fastest: the fields of
# ``_episode``'s Episode, its assertions as tuples.
_Record = tuple[str, int, str | None, str, int, str, str, str, list[tuple], dict[str, int]]


def _record(path: Path, read: _Read) -> _Record:
    line = read.line
    # The hash is of the line as given, so that reading the file again finds the same
    # episode; only a digest of it is stored, never the text.
    canonical = json.dumps(read.value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    # The content is redacted, then cut as any episode's text is. Without one, it is the
    # line as written, or with its escapes undone if it has any: a secret spelt with them
    # (``https:\/\/deploy:pw@``, ``\u0067hp_…``) is then found as any other is.
    content = line.get("content")
    if content is None:
        content = read.raw.rstrip("\r\n") if "\\" not in read.raw else json.dumps(read.value, ensure_ascii=False)
    content, cut_chars = cut(_clean(content, read.redacted if read.redacting else None))
    return (str(path), read.number, line.get("source_id"), content, cut_chars, content_hash(canonical),
            read.reference_time, read.reference_source, [tuple(a) for a in read.assertions], read.redacted)


def _episode(record: _Record) -> Episode:
    source, position, source_id, content, cut_chars, hashed, reference_time, reference_source, assertions, redacted \
        = record
    return Episode(source=source, position=position, source_id=source_id, format="facts", content=content,
                   cut_chars=cut_chars, content_hash=hashed, reference_time=reference_time,
                   reference_time_source=reference_source,
                   # Checked when read (``_lines``): built again without checking.
                   assertions=[Assertion._make(values) for values in assertions], redacted=redacted)


class _Read(NamedTuple):
    """A line read and checked."""

    number: int
    raw: str  # as written
    value: object  # as JSON
    line: _Line
    reference_time: str
    reference_source: str  # where the reference time came from
    assertions: list[Assertion]
    redacted: dict[str, int]  # the secrets redacted from them, by kind
    redacting: bool  # whether the line may hold a secret at all (``_redacting``)


def _redacting(raw: str) -> bool:
    """Whether any string of the line may hold a secret. The strings of a line without
    escapes are parts of it as written, and no secret rule matches in a part of a text
    unless it can match in the text; most lines hold no secret, and are checked once."""
    return "\\" in raw or could_hold_secret(raw)


def _lines(path: Path, options: IngestOptions, *, start: int = 0, stop: int | None = None,
           first_line: int = 1) -> Iterator[_Read]:
    """Each line read and checked (of a part of the file: ``read_jsonl``), its facts'
    secrets redacted. BadInput names the first bad line."""
    fallback: tuple[str, str] | None = None
    for number, raw, value in read_jsonl(path, start=start, stop=stop, first_line=first_line):
        try:
            line = _LINE.validate_python(value)
            given_time = line.get("reference_time")
            if given_time is not None:
                reference_time = times.normalize_instant(given_time, what="reference_time")
                reference_source = "record"
            else:
                fallback = fallback or fallback_reference_time(path, options)
                reference_time, reference_source = fallback
            line_extracted = _instant(line.get("extracted_at"), "extracted_at")
            extracted_at = line_extracted[0] if line_extracted else None
            redacted: dict[str, int] = {}
            redacting = _redacting(raw)
            assertions = [_assertion(item, index, reference_time, extracted_at, redacted if redacting else None)
                          for index, item in enumerate(line["facts"])]
        except BadInput:
            raise
        except (ValidationError, ValueError) as error:
            raise BadInput(f"{path}:{number}: {_problem(error)}") from None
        yield _Read(number, raw, value, line, reference_time, reference_source, assertions, redacted, redacting)
