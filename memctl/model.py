"""What flows from sources and extractors into the store.

Every extractor (structured import, rules, LLM) produces ``Assertion`` objects; pydantic
validates them before anything is stored, so the store never sees a garbage date.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from memctl import names

Evidence = Literal["text", "relative", "reference", "explicit", "repair"]
Precision = Literal["instant", "day", "month", "quarter", "year"]
Cardinality = Literal["one", "many"]


class Assertion(BaseModel):
    """One thing an episode said, with its dates already in storage form."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
    extractor: str
    extracted_at: str | None = None  # None: when the store takes it in

    @field_validator("subject", "object")
    @classmethod
    def _named(cls, value: str) -> str:
        if not names.entity_key(value):
            raise ValueError(f"{value!r} is not a usable name")
        return value.strip()

    @field_validator("predicate")
    @classmethod
    def _predicate(cls, value: str) -> str:
        if not names.predicate_key(value):
            raise ValueError(f"{value!r} is not a usable predicate")
        return value.strip()

    @model_validator(mode="after")
    def _interval(self) -> Assertion:
        if self.valid_at is None and self.invalid_at is None:
            raise ValueError("an assertion needs valid_at, or invalid_at for a retraction")
        if self.valid_at is not None and self.invalid_at is not None and self.invalid_at <= self.valid_at:
            raise ValueError(f"invalid_at {self.invalid_at} is not after valid_at {self.valid_at}")
        return self


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
