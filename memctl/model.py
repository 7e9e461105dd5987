"""What flows from sources and extractors into the store.

Every extractor (structured import, rules, LLM) produces ``Assertion`` objects, checked
when built, so the store never sees a garbage date.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args

from memctl import names

if TYPE_CHECKING:
    from pydantic import ValidationError

Evidence = Literal["text", "relative", "reference", "explicit", "repair"]
Precision = Literal["instant", "day", "month", "quarter", "year"]
Cardinality = Literal["one", "many"]


class InvalidAssertion(ValueError):
    """Fields that make no assertion; the message names the field, as pydantic's do
    ("subject: '' is not a usable name")."""


_EVIDENCE: frozenset[str | None] = frozenset([*get_args(Evidence), None])
_PRECISION: frozenset[str | None] = frozenset([*get_args(Precision), None])
_CARDINALITY: frozenset[str | None] = frozenset(get_args(Cardinality))


class _AssertionFields(NamedTuple):
    subject: str
    predicate: str
    object: str
    fact: str
    valid_at: str | None  # None only for a retraction
    valid_at_evidence: Evidence | None = None
    valid_at_precision: Precision | None = None
    invalid_at: str | None = None
    invalid_at_evidence: Evidence | None = None
    invalid_at_precision: Precision | None = None
    date_span: str | None = None
    cardinality: Cardinality = "one"
    extractor: str = ""  # required when built (``Assertion.__new__``)
    extracted_at: str | None = None  # None: when the store takes it in


class Assertion(_AssertionFields):
    """One thing an episode said, with its dates already in storage form.

    Checked when built (InvalidAssertion), so that the store never sees a garbage date
    or a name with no key; immutable. A tuple rather than a pydantic model: a backfill
    builds one per fact, and a model cost five times as much to build. ``_make`` and
    ``_replace`` do not check again: they are for values that were an assertion already.
    """

    __slots__ = ()

    def __new__(cls, subject: str, predicate: str, object: str, fact: str, valid_at: str | None, *,
                valid_at_evidence: Evidence | None = None, valid_at_precision: Precision | None = None,
                invalid_at: str | None = None, invalid_at_evidence: Evidence | None = None,
                invalid_at_precision: Precision | None = None, date_span: str | None = None,
                cardinality: Cardinality = "one", extractor: str, extracted_at: str | None = None) -> Assertion:
        strings: tuple[tuple[str, Any], ...] = (("subject", subject), ("predicate", predicate),
                                                   ("object", object), ("fact", fact), ("extractor", extractor))
        for name, value in strings:
            if not isinstance(value, str):
                raise InvalidAssertion(f"{name}: must be a string, got {value!r}")
        optional: tuple[tuple[str, Any], ...] = (("valid_at", valid_at), ("invalid_at", invalid_at),
                                                    ("date_span", date_span), ("extracted_at", extracted_at))
        for name, value in optional:
            if value is not None and not isinstance(value, str):
                raise InvalidAssertion(f"{name}: must be a string or null, got {value!r}")
        chosen: tuple[tuple[str, Any, frozenset[str | None]], ...] = (
            ("valid_at_evidence", valid_at_evidence, _EVIDENCE), ("valid_at_precision", valid_at_precision, _PRECISION),
            ("invalid_at_evidence", invalid_at_evidence, _EVIDENCE),
            ("invalid_at_precision", invalid_at_precision, _PRECISION), ("cardinality", cardinality, _CARDINALITY))
        for name, value, allowed in chosen:
            if value not in allowed:
                raise InvalidAssertion(f"{name}: {value!r} is not one of {sorted(v for v in allowed if v)}")
        for name, value in (("subject", subject), ("object", object)):
            if not names.entity_key(value):
                raise InvalidAssertion(f"{name}: {value!r} is not a usable name")
        if not names.predicate_key(predicate):
            raise InvalidAssertion(f"predicate: {predicate!r} is not a usable predicate")
        if valid_at is None and invalid_at is None:
            raise InvalidAssertion("an assertion needs valid_at, or invalid_at for a retraction")
        if valid_at is not None and invalid_at is not None and invalid_at <= valid_at:
            raise InvalidAssertion(f"invalid_at {invalid_at} is not after valid_at {valid_at}")
        return tuple.__new__(cls, (subject.strip(), predicate.strip(), object.strip(), fact, valid_at,
                                   valid_at_evidence, valid_at_precision, invalid_at, invalid_at_evidence,
                                   invalid_at_precision, date_span, cardinality, extractor, extracted_at))

    def __getnewargs_ex__(self) -> tuple[tuple[str | None, ...], dict[str, str | None]]:
        # How pickle and copy build it again: through __new__, which takes the fields after
        # the fifth by keyword only.
        fields = self._asdict()
        return tuple(fields.pop(name) for name in self._fields[:5]), fields


def validation_messages(error: ValidationError) -> list[str]:
    """One line per problem pydantic found, led by where it is ("valid_at: ...")."""
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)
    return lines


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Episode:
    """One dated slice of a source, with what was extracted from it."""

    source: str
    position: int
    format: str
    content: str
    content_hash: str
    reference_time: str
    reference_time_source: str  # record | session | user | mtime
    source_id: str | None = None
    assertions: list[Assertion] = field(default_factory=list)
    # The same turn seen in another file (a resumed session repeats earlier lines) has
    # the same identity, and so the same id: it is stored once.
    identity: str | None = None
    redacted: dict[str, int] = field(default_factory=dict)  # secrets replaced before it was stored, by kind
    extraction: str = "structured"  # structured | done | failed | pending (see schema 0002)
    extraction_error: str | None = None
    left_out: dict[str, int] = field(default_factory=dict)  # tool calls, thinking, images...
    cut_chars: int = 0  # characters cut from a text over memctl.sources.MAX_EPISODE_CHARS
    # The conversation it is part of in a source of many (an export); None: the source is
    # one session (store.search.SESSION).
    session: str | None = None

    @property
    def redactions(self) -> int:
        return sum(self.redacted.values())

    @cached_property
    def id(self) -> str:
        # Derived from content only: re-ingesting is idempotent, and ties between
        # assertions break the same way whatever order episodes arrive in.
        if self.identity is not None:
            key = self.identity
        else:
            where = self.source_id if self.source_id is not None else f"#{self.position}"
            key = f"{self.source}\x1f{where}\x1f{self.content_hash}"
        return f"ep_{hashlib.sha256(key.encode()).hexdigest()[:16]}"
