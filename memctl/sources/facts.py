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
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, NamedTuple, TypedDict

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from memctl import times
from memctl.errors import BadInput
from memctl.model import Assertion, Episode, Evidence, Precision, content_hash
from memctl.redact import redact_into
from memctl.sources import Head, IngestOptions, cut, fallback_reference_time, read_jsonl

NAME = "facts"


def sniff(path: Path, head: Head) -> bool:
    return isinstance(head.jsonl_record, dict) and "facts" in head.jsonl_record


class _Fact(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    subject: str
    predicate: str
    object: str
    fact: str | None = None
    valid_at: str | None = None
    invalid_at: str | None = None
    cardinality: Literal["one", "many"] = "one"
    retracted: bool = False
    extracted_at: str | None = None

    @model_validator(mode="after")
    def _retraction(self) -> _Fact:
        if self.retracted and self.valid_at is not None:
            raise ValueError("a retracted fact has no valid_at; give invalid_at, when it stopped holding")
        return self


class _Facts(BaseModel):
    """A list of fact objects: a line's, or what an agent hands ``add_memory``. Validated
    as one field so that a problem is named as in the file (``facts[2].valid_at``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    facts: list[_Fact]


class _Line(_Facts):
    reference_time: str | None = None
    source_id: str | None = None
    content: str | None = None
    extracted_at: str | None = None


def _instant(value: str | None, what: str) -> times.ParsedInstant | None:
    return None if value is None else times.parse_instant(value, what=what)


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


def _bound(given: times.ParsedInstant | None, reference_time: str | None) -> _Bound:
    """The date the line gives (``explicit``), else ``reference_time`` (``reference``), else none."""
    if given is not None:
        return times.to_storage(given.at), "explicit", given.precision
    if reference_time is not None:
        return reference_time, "reference", "instant"
    return _UNBOUNDED


def _interval(item: _Fact, where: str, reference_time: str) -> _Interval:
    """A fact holds from ``valid_at`` (default: the reference time) until ``invalid_at``, if
    given; a retraction only ends it, at ``invalid_at`` (default: the reference time)."""
    valid = _instant(item.valid_at, f"{where}.valid_at")
    invalid = _instant(item.invalid_at, f"{where}.invalid_at")
    if item.retracted:
        start, end = _UNBOUNDED, _bound(invalid, reference_time)
    else:
        start, end = _bound(valid, reference_time), _bound(invalid, None)
    return _Interval(valid_at=start[0], valid_at_evidence=start[1], valid_at_precision=start[2],
                     invalid_at=end[0], invalid_at_evidence=end[1], invalid_at_precision=end[2])


def _assertion(item: _Fact, index: int, reference_time: str, line_extracted_at: str | None,
               redacted: dict[str, int] | None) -> Assertion:
    """The fact as an assertion, its secrets redacted (counted into ``redacted``) first, so
    that a sentence made from subject and object has none either. ``redacted`` None: only
    checking, nothing is kept (a redaction never makes a valid fact invalid, or the reverse)."""
    where = f"facts[{index}]"
    interval = _interval(item, where, reference_time)
    extracted = _instant(item.extracted_at, f"{where}.extracted_at")
    subject, object_ = _clean(item.subject, redacted), _clean(item.object, redacted)
    try:
        return Assertion(
            subject=subject,
            predicate=item.predicate,
            object=object_,
            fact=_clean(item.fact, redacted) if item.fact else f"{subject} {item.predicate.replace('_', ' ')} {object_}",
            cardinality=item.cardinality,
            extractor="facts",
            extracted_at=times.to_storage(extracted.at) if extracted else line_extracted_at,
            **interval,
        )
    except ValidationError as error:
        raise ValueError(f"{where}: {_first_message(error)}") from None


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
        given = _Facts.model_validate({"facts": facts})
        return [_assertion(item, index, reference_time, None, redacted) for index, item in enumerate(given.facts)]
    except (ValidationError, ValueError) as error:
        raise BadInput(_problem(error)) from None


def check(path: Path, options: IngestOptions) -> None:
    """Read the whole file as ``turns`` does, keeping nothing: BadInput names its first bad
    line. Ingest checks a facts file whole before storing any of it (a half-stored file is
    half a migration); skipping what only storing needs (redaction, hashes, episodes)
    makes the check a third cheaper than reading the file twice."""
    for _ in _lines(path, options, redacting=False):
        pass


def turns(path: Path, options: IngestOptions) -> Iterator[Episode]:
    """Episodes, not turns: a line is read as given, and a bad one refuses the whole command (BadInput)."""
    for read in _lines(path, options, redacting=True):
        line = read.line
        # The hash is of the line as given, so that reading the file again finds the same
        # episode; only a digest of it is stored, never the text.
        canonical = json.dumps(read.value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        # The content is redacted, then cut as any episode's text is.
        content, cut_chars = cut(redact_into(line.content if line.content is not None else read.raw.rstrip("\r\n"),
                                             read.redacted))
        yield Episode(
            source=str(path),
            position=read.number,
            source_id=line.source_id,
            format="facts",
            content=content,
            cut_chars=cut_chars,
            content_hash=content_hash(canonical),
            reference_time=read.reference_time,
            reference_time_source=read.reference_source,
            assertions=read.assertions,
            redacted=read.redacted,
        )


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


def _lines(path: Path, options: IngestOptions, *, redacting: bool) -> Iterator[_Read]:
    """Each line read and checked (its facts' secrets redacted, if ``redacting``).
    BadInput names the first bad line."""
    fallback: tuple[str, str] | None = None
    for number, raw, value in read_jsonl(path):
        try:
            line = _Line.model_validate(value)
            if line.reference_time is not None:
                reference_time = times.normalize_instant(line.reference_time, what="reference_time")
                reference_source = "record"
            else:
                fallback = fallback or fallback_reference_time(path, options)
                reference_time, reference_source = fallback
            line_extracted = _instant(line.extracted_at, "extracted_at")
            redacted: dict[str, int] = {}
            assertions = [
                _assertion(item, index, reference_time, times.to_storage(line_extracted.at) if line_extracted else None,
                           redacted if redacting else None)
                for index, item in enumerate(line.facts)
            ]
        except BadInput:
            raise
        except (ValidationError, ValueError) as error:
            raise BadInput(f"{path}:{number}: {_problem(error)}") from None
        yield _Read(number, raw, value, line, reference_time, reference_source, assertions, redacted)
