"""Extraction: an episode's text in, validated assertions out (DESIGN §3).

Every extractor takes ``Request`` objects and yields one ``Result`` each. A result's
assertions are ``memctl.model.Assertion`` objects (pydantic-validated, dates already in
storage form, each with its evidence and precision); the date guard
(``memctl.extract.guard``) then runs over them before anything is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from memctl.model import Assertion


@dataclass(frozen=True)
class Request:
    episode_id: str
    text: str  # the episode's stored (already redacted) content
    reference_time: str  # storage form: when the episode happened
    context: tuple[str, ...] = ()  # the last few episodes of the same session, oldest first
    predicates: tuple[str, ...] = ()  # predicates already used for the entities in view


@dataclass
class Result:
    assertions: list[Assertion] = field(default_factory=list)
    error: str | None = None  # why extraction failed; the episode is then kept without assertions
    calls: int = 0  # model calls made for this episode (retries included)
    cache_hit: bool = False
    input_tokens: int = 0
    output_tokens: int = 0


class Extractor(Protocol):
    name: str  # "rules", or "llm:<model>"

    def extract(self, requests: Iterable[Request]) -> Iterator[tuple[Request, Result]]:
        """One result per request, in any order (an LLM extractor works concurrently)."""
        ...
