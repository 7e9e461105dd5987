"""Extraction: an episode's text in, validated assertions out (architecture §3).

Every extractor takes ``Request`` objects and yields one ``Result`` each. A result's
assertions are ``memctl.model.Assertion`` objects (pydantic-validated, dates already in
storage form, each with its evidence and precision); the date guard
(``memctl.extract.guard``) then runs over them before anything is stored, unless the
extractor ran it itself (``Result.guarded``: the LLM's does, before its interval check).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from memctl.errors import BadInput

if TYPE_CHECKING:  # pydantic, which the model needs, is not for the recall path to import
    from memctl.model import Assertion


@dataclass(frozen=True)
class Request:
    episode_id: str
    text: str  # the episode's stored (already redacted) content
    reference_time: str  # storage form: when the episode happened
    context: tuple[str, ...] = ()  # the last few episodes of the same session, oldest first
    predicates: tuple[str, ...] = ()  # predicates already used for the entities in view
    entities: tuple[str, ...] = ()  # the entities in view, by the names the store gives them


@dataclass
class Result:
    assertions: list[Assertion] = field(default_factory=list)
    error: str | None = None  # why extraction failed; the episode is then kept without assertions
    calls: int = 0  # model calls made for this episode (retries included)
    cache_hit: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    # Set by an extractor that runs the date guard itself (the LLM's, before its interval
    # check): the stage then takes its assertions as they are.
    guarded: bool = False
    guard_changes: int = 0
    dropped: list[str] = field(default_factory=list)  # "what: why" of each assertion left out as wrong


class Extractor(Protocol):
    """What turns episode text into assertions.

    An extractor that reads only a request's text may say so with ``reads_context =
    False`` (the rules do): its requests then carry no context and no predicates, and
    cost no query for them, which for one live memory cost more than the extraction.
    """

    @property
    def name(self) -> str:
        """"rules", or "llm:<model>" ("llm" while the model is still to be looked up)."""
        ...

    def extract(self, requests: Iterable[Request]) -> Iterator[tuple[Request, Result]]:
        """One result per request, in any order (an LLM extractor works concurrently)."""
        ...


def reads_context(extractor: Extractor) -> bool:
    """Whether ``extractor`` reads a request's context and predicates (a model's prompt
    does); one that does not say is assumed to."""
    return getattr(extractor, "reads_context", True)


EXTRACTOR_CHOICES = ("auto", "llm", "rules")
TIMEOUT_VARIABLE = "MEMCTL_LLM_TIMEOUT"


def check_options(choice: str, *, concurrency: int = 4, timeout: float | None = None) -> float | None:
    """Refuse a bad extractor choice, concurrency or timeout (``BadInput``) before
    anything is opened; the timeout of a model call in seconds: ``timeout``, else
    ``$MEMCTL_LLM_TIMEOUT``, else None (the extractor's default)."""
    if choice not in EXTRACTOR_CHOICES:
        raise BadInput(f"must be auto, llm or rules, got {choice!r}", parameter="extractor")
    if concurrency < 1:
        raise BadInput(f"must be at least 1, got {concurrency}", parameter="concurrency")
    if timeout is None and os.environ.get(TIMEOUT_VARIABLE, "").strip():
        value = os.environ[TIMEOUT_VARIABLE]
        try:
            timeout = float(value)
        except ValueError:
            raise BadInput(f"{TIMEOUT_VARIABLE} must be a number of seconds, got {value!r}") from None
        if not 0 < timeout < float("inf"):
            raise BadInput(f"{TIMEOUT_VARIABLE} must be a positive number of seconds, got {value!r}")
    elif timeout is not None and not 0 < timeout < float("inf"):
        raise BadInput(f"must be a positive number of seconds, got {timeout}", parameter="timeout")
    return timeout


class _SaidOnce:
    """The rules extractor standing in for an LLM, saying so the first time it has work."""

    def __init__(self, extractor: Extractor, notice: Callable[[str], None]):
        self.extractor = extractor
        self.name = extractor.name
        self.reads_context = reads_context(extractor)
        self.notice = notice
        self.said = False

    def extract(self, requests: Iterable[Request]) -> Iterator[tuple[Request, Result]]:
        requests = list(requests)
        if requests and not self.said:
            self.said = True
            self.notice("no LLM configured (OPENAI_API_KEY or OPENAI_BASE_URL); "
                        "extracting with the offline rules extractor")
        return self.extractor.extract(requests)


def llm_configured() -> bool:
    """Whether an endpoint is configured (for ``--extractor auto``)."""
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


def build_extractor(choice: str, *, clock: Callable[[], datetime], cache: Any = None, model: str | None = None,
                    concurrency: int = 4, timeout: float | None = None,
                    notice: Callable[[str], None] = lambda message: None) -> Extractor:
    """The extractor ``choice`` names: ``llm``, ``rules``, or ``auto`` (an LLM when one is
    configured in the environment, else rules, told through ``notice``).

    ``model`` defaults to ``MEMCTL_MODEL``, else the endpoint's only model; ``timeout``
    (seconds a model call may take) to ``MEMCTL_LLM_TIMEOUT``; ``cache`` keeps the
    model's replies (a ``memctl.store.cache.ResponseCache``). Nothing is asked of the
    endpoint until an episode needs the model, so a run that extracts nothing (a
    structured import) works without one.
    """
    timeout = check_options(choice, concurrency=concurrency, timeout=timeout)
    if choice == "rules" or (choice == "auto" and not llm_configured()):
        from memctl.extract.rules import RulesExtractor

        rules = RulesExtractor(clock)
        return _SaidOnce(rules, notice) if choice == "auto" else rules
    # Imported only here: the LLM extractor's module, its models and its prompt cost 80 ms
    # of every ingest's start-up, a structured import's too.
    from memctl.extract import llm

    return llm.LLMExtractor(None, model or os.environ.get("MEMCTL_MODEL"), clock, cache, concurrency=concurrency,
                            timeout=llm.DEFAULT_TIMEOUT if timeout is None else timeout)
