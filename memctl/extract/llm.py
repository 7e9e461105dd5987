"""The LLM extractor: one structured-output chat call per episode (architecture §3).

Any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp server) through the
``openai`` client, which is imported lazily in ``make_client``: it costs ~0.5 s and most
commands never need it.

- One chat-completions call per episode, with the strict JSON schema of
  ``memctl.extract.prompt``. Every reply is re-validated here (local servers may not
  enforce the schema) into ``memctl.model.Assertion`` objects with dates in storage form.
  An invalid reply gets one retry with the validation error appended to the
  conversation; after that the episode's result is failed (``Result.error``), never
  garbage assertions.
- Transport retries are ours (the client is built with ``max_retries=0``) so every call
  is counted: exponential backoff on 429, 5xx, timeouts and connection errors
  (``call_with_retries``, which the embeddings client uses too).
- A rejected key (401/403), an unknown model (404) or an endpoint that cannot be reached
  after the retries raise ``LLMUnavailable``: the whole run stops with one clear line and
  the episodes stay pending. It is never turned into per-episode failures.
- Bounded concurrency: ``concurrency`` worker threads; results are yielded as they
  complete. The cache is only touched from the consuming thread, so a SQLite-backed
  cache works as is.
- A response cache keyed by sha256 of (model, PROMPT_VERSION, the request messages and
  the response format): re-runs and retries of unchanged input make no call.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from memctl import times
from memctl.errors import BadInput, LLMUnavailable
from memctl.extract import Request, Result
from memctl.extract.prompt import PROMPT_VERSION, RESPONSE_FORMAT, build_messages, correction_message
from memctl.model import Assertion

DEFAULT_TIMEOUT = 120.0  # seconds per call; local models on a laptop are slow
DEFAULT_MAX_RETRIES = 4  # transport retries per call, so up to 5 attempts
NO_KEY = "no-key"  # local servers (Ollama, llama.cpp) want some bearer token, not a real one

Clock = Callable[[], datetime]


class ResponseCache(Protocol):
    def get(self, key: str) -> str | None: ...

    def put(self, key: str, text: str, episode_id: str) -> None: ...


def llm_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether an endpoint is configured (for ``--extractor auto``)."""
    env = os.environ if environ is None else environ
    return bool(env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"))


def make_client(
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    http_client: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
):
    """The one place an ``openai.OpenAI`` client is built.

    ``api_key``/``base_url`` default to ``OPENAI_API_KEY``/``OPENAI_BASE_URL``. A local
    server (a base URL and no key) gets a placeholder key. Tests pass ``http_client=
    httpx2.Client(transport=httpx2.MockTransport(handler))``. The client never retries by
    itself: the extractor does, and counts every call.
    """
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    if key is None:
        if url is None:
            raise LLMUnavailable(
                "no LLM endpoint configured: set OPENAI_API_KEY, or OPENAI_BASE_URL for a local "
                "OpenAI-compatible server (e.g. http://localhost:11434/v1)"
            )
        key = NO_KEY
    import openai  # lazily: ~0.5 s

    return openai.OpenAI(api_key=key, base_url=url, http_client=http_client, timeout=timeout, max_retries=0)


def cache_key(model: str, request: Request) -> str:
    """(model, prompt version, episode text, reference time): what the answer depends on.

    Context episodes and the predicates in use are left out on purpose: they change as
    the store grows, and a retry of unchanged input must cost no call (issue 4).
    """
    payload = json.dumps(
        {"model": model, "prompt_version": PROMPT_VERSION, "text": request.text,
         "reference_time": request.reference_time},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# --- the reply, as the model gives it ------------------------------------------------------

ModelEvidence = Literal["text", "relative", "reference"]
Precision = Literal["instant", "day", "month", "year"]


class _ReplyEntity(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    type: str | None = None


class _ReplyAssertion(BaseModel):
    # Nullable fields may be left out (some local servers drop nulls); everything given
    # must have the right type and value. Extra keys are a schema violation.
    model_config = ConfigDict(extra="forbid")
    subject: str
    predicate: str
    object: str
    fact: str
    cardinality: Literal["one", "many"]
    valid_at: str | None = None
    valid_at_evidence: ModelEvidence | None = None
    valid_at_precision: Precision | None = None
    invalid_at: str | None = None
    invalid_at_evidence: ModelEvidence | None = None
    invalid_at_precision: Precision | None = None
    date_span: str | None = None


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    entities: list[_ReplyEntity] = []
    assertions: list[_ReplyAssertion]


class InvalidReply(ValueError):
    """A reply that does not validate; the message goes back to the model once."""


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)
_MAX_ERRORS = 12


def _describe(error: ValidationError, prefix: str = "") -> list[str]:
    lines = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"])
        where = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or "reply")
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message}")
    return lines


def _date(value: str | None, evidence: str | None, precision: str | None, where: str, errors: list[str]):
    """(storage form, evidence, precision) of one reported date, or errors."""
    if value is None:
        return None, None, None
    try:
        parsed = times.parse_instant(value, what=where)
    except times.BadInstant as bad:
        errors.append(str(bad))
        return None, None, None
    if evidence is None:
        errors.append(f"{where}_evidence is null but {where} is given; say where the date came from")
    return times.to_storage(parsed.at), evidence, precision or parsed.precision


def parse_reply(text: str, *, extractor: str, extracted_at: str) -> list[Assertion]:
    """A model's reply → validated assertions; raises ``InvalidReply`` listing every problem."""
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text
    try:
        data = json.loads(body)
    except json.JSONDecodeError as error:
        raise InvalidReply(f"the reply is not valid JSON ({error})") from None
    try:
        reply = _Reply.model_validate(data)
    except ValidationError as error:
        raise InvalidReply("\n".join(_describe(error)[:_MAX_ERRORS])) from None

    assertions: list[Assertion] = []
    errors: list[str] = []
    for index, item in enumerate(reply.assertions):
        here = f"assertions.{index}"
        problems: list[str] = []
        valid_at, valid_evidence, valid_precision = _date(
            item.valid_at, item.valid_at_evidence, item.valid_at_precision, f"{here}.valid_at", problems
        )
        invalid_at, invalid_evidence, invalid_precision = _date(
            item.invalid_at, item.invalid_at_evidence, item.invalid_at_precision, f"{here}.invalid_at", problems
        )
        if problems:
            errors.extend(problems)
            continue
        fact = item.fact.strip() or f"{item.subject} {item.predicate.replace('_', ' ')} {item.object}"
        try:
            assertions.append(
                Assertion(
                    subject=item.subject,
                    predicate=item.predicate,
                    object=item.object,
                    fact=fact,
                    valid_at=valid_at,
                    valid_at_evidence=valid_evidence,
                    valid_at_precision=valid_precision,
                    invalid_at=invalid_at,
                    invalid_at_evidence=invalid_evidence,
                    invalid_at_precision=invalid_precision,
                    date_span=(item.date_span or "").strip() or None,
                    cardinality=item.cardinality,
                    extractor=extractor,
                    extracted_at=extracted_at,
                )
            )
        except ValidationError as error:
            errors.extend(_describe(error, here))
    if errors:
        raise InvalidReply("\n".join(errors[:_MAX_ERRORS]))
    return assertions


# --- transport: one call, retried (shared with memctl.embeddings) -----------------------

T = TypeVar("T")


class CallFailed(Exception):
    """One call failed for good: its retries are spent, or (``refused``) the endpoint
    answered a 4xx that retrying won't fix, such as an input too long for the model."""

    def __init__(self, message: str, *, refused: bool = False):
        super().__init__(message)
        self.refused = refused


@dataclass(frozen=True)
class Retries:
    """How often a call is tried again, and the exponential backoff (with jitter) between."""

    max_retries: int = DEFAULT_MAX_RETRIES
    sleep: Callable[[float], None] = time.sleep
    backoff: float = 1.0
    max_backoff: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must not be negative")

    def wait(self, attempt: int, hint: float | None = None) -> None:
        delay = self.backoff * 2**attempt * (0.5 + random.random() / 2)
        if hint is not None:
            delay = max(delay, hint)
        self.sleep(min(delay, self.max_backoff))


def call_with_retries(create: Callable[[], T], retries: Retries, *, client: Any, service: str, model: str,
                      model_option: str) -> T:
    """``create()``, one request through ``client``, tried again on 429, 5xx, timeouts and
    connection errors.

    Raises ``LLMUnavailable`` when the endpoint cannot be used at all (a rejected key, an
    unknown model, an exhausted quota, no answer after the retries), and ``CallFailed``
    when this call failed for good. ``service`` ("LLM", "embeddings") and
    ``model_option`` (where the model is named) make the messages. What else ``create``
    raises goes through untouched (the extractor stops its workers that way).
    """
    import openai  # already imported by make_client; cheap here

    where = endpoint_of(client)
    attempt = 0
    while True:
        try:
            return create()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
            raise LLMUnavailable(
                f"the {service} endpoint {where} rejected the API key "
                f"(HTTP {error.status_code}: {_short(error.message)}); check OPENAI_API_KEY"
            ) from None
        except openai.NotFoundError as error:
            raise LLMUnavailable(
                f"model {model!r} or its endpoint was not found at {where} "
                f"(HTTP 404: {_short(error.message)}); check {model_option} and OPENAI_BASE_URL"
            ) from None
        except openai.APIStatusError as error:
            status = error.status_code
            if status == 429 and getattr(error, "code", None) == "insufficient_quota":
                raise LLMUnavailable(
                    f"the {service} endpoint {where} refused the key: quota exhausted "
                    f"(HTTP 429: {_short(error.message)})"
                ) from None
            if status not in (408, 409, 429) and status < 500:
                raise CallFailed(f"the model endpoint answered HTTP {status}: {_short(error.message)}",
                                 refused=True) from None
            if attempt >= retries.max_retries:
                raise CallFailed(
                    f"the model endpoint answered HTTP {status} {attempt + 1} times: {_short(error.message)}"
                ) from None
            retries.wait(attempt, _retry_after(error))
        except openai.APITimeoutError:
            if attempt >= retries.max_retries:
                raise CallFailed(f"the model call timed out {attempt + 1} times") from None
            retries.wait(attempt)
        except openai.APIConnectionError as error:
            if attempt >= retries.max_retries:
                cause = error.__cause__ or error
                raise LLMUnavailable(
                    f"cannot reach the {service} endpoint {where} after {attempt + 1} attempts "
                    f"({_short(cause, 120)}); check OPENAI_BASE_URL"
                ) from None
            retries.wait(attempt)
        except openai.OpenAIError as error:
            raise CallFailed(f"the model call failed: {_short(error)}") from None
        attempt += 1


def endpoint_of(client: Any) -> str:
    return str(getattr(client, "base_url", "")) or "(default endpoint)"


def _short(text: object, limit: int = 200) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _retry_after(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        if headers.get("retry-after"):
            return float(headers["retry-after"])
    except ValueError:  # an HTTP date; fall back to our own backoff
        return None
    return None


# --- calls ---------------------------------------------------------------------------------


@dataclass
class _Tally:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def result(self, **fields: Any) -> Result:
        return Result(calls=self.calls, input_tokens=self.input_tokens, output_tokens=self.output_tokens, **fields)


class _Stopped(Exception):
    """The run is stopping (endpoint unavailable, or the consumer went away)."""


class _Run:
    def __init__(self) -> None:
        self.stop = threading.Event()
        self.unavailable: LLMUnavailable | None = None
        self._lock = threading.Lock()

    def fail(self, error: LLMUnavailable) -> LLMUnavailable:
        with self._lock:
            if self.unavailable is None:
                self.unavailable = error
        self.stop.set()
        return error


def _envelope(text: str, extracted_at: str) -> str:
    # The cache keeps when the model said it: a cached "today 00:00" is then still
    # recognised by the date guard as the day of that extraction, not of the re-run.
    return json.dumps({"reply": text, "extracted_at": extracted_at}, ensure_ascii=False)


class LLMExtractor:
    """``Request`` → ``Result`` through one structured chat call per episode."""

    def __init__(
        self,
        client: Any,
        model: str,
        clock: Clock,
        cache: ResponseCache | None = None,
        concurrency: int = 4,
        max_retries: int = DEFAULT_MAX_RETRIES,
        *,
        sleep: Callable[[float], None] = time.sleep,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
    ):
        if not model or not model.strip():
            raise BadInput("not given: name a model or set MEMCTL_MODEL", parameter="model")
        if concurrency < 1:
            raise BadInput(f"must be at least 1, got {concurrency}", parameter="concurrency")
        self.client = client
        self.model = model.strip()
        self.name = f"llm:{self.model}"
        self.clock = clock
        self.cache = cache
        self.concurrency = concurrency
        self.retries = Retries(max_retries, sleep, backoff, max_backoff)

    # -- the public interface -------------------------------------------------------------

    def extract(self, requests: Iterable[Request]) -> Iterator[tuple[Request, Result]]:
        """One result per request, as they complete; raises ``LLMUnavailable`` mid-way.

        At most ``2 × concurrency`` requests are taken from ``requests`` ahead of the
        results, so a long backfill is streamed, not loaded.
        """
        run = _Run()
        source = iter(requests)
        exhausted = False
        pending: dict[Future, tuple[Request, str]] = {}
        executor = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="memctl-llm")
        try:
            while True:
                while not exhausted and len(pending) < 2 * self.concurrency:
                    try:
                        request = next(source)
                    except StopIteration:
                        exhausted = True
                        break
                    messages = build_messages(request)
                    key = cache_key(self.model, request)
                    cached = self._cached(key)
                    if cached is not None:
                        yield request, cached
                        continue
                    pending[executor.submit(self._extract_one, messages, run)] = (request, key)
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    request, key = pending.pop(future)
                    try:
                        result, envelope = future.result()
                    except _Stopped:
                        if run.unavailable is not None:
                            raise run.unavailable from None
                        continue
                    if envelope is not None and self.cache is not None:
                        self.cache.put(key, envelope, request.episode_id)
                    yield request, result
        finally:
            run.stop.set()
            executor.shutdown(wait=True, cancel_futures=True)

    # -- one episode ----------------------------------------------------------------------

    def _cached(self, key: str) -> Result | None:
        if self.cache is None:
            return None
        stored = self.cache.get(key)
        if stored is None:
            return None
        try:
            envelope = json.loads(stored)
            assertions = parse_reply(envelope["reply"], extractor=self.name, extracted_at=envelope["extracted_at"])
        except (ValueError, KeyError, TypeError):
            return None  # an entry this version cannot use: ask the model again
        return Result(assertions=assertions, cache_hit=True, calls=0)

    def _extract_one(self, messages: list[dict[str, str]], run: _Run) -> tuple[Result, str | None]:
        """(result, cache envelope of the accepted reply) — in a worker thread."""
        tally = _Tally()
        conversation = list(messages)
        problem = ""
        for _ in range(2):  # the reply, and one retry with the validation error
            extracted_at = times.to_storage(self.clock())
            try:
                text = self._complete(conversation, tally, run)
            except CallFailed as failed:
                return tally.result(error=str(failed)), None
            try:
                assertions = parse_reply(text, extractor=self.name, extracted_at=extracted_at)
            except InvalidReply as invalid:
                problem = str(invalid)
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": correction_message(problem)},
                ]
                continue
            return tally.result(assertions=assertions), _envelope(text, extracted_at)
        return tally.result(error=f"invalid model reply, also after a retry: {_short(problem, 300)}"), None

    def _complete(self, messages: list[dict[str, str]], tally: _Tally, run: _Run) -> str:
        """One logical call: the reply's text, after transport retries."""

        def attempt() -> Any:
            if run.stop.is_set():
                raise _Stopped
            tally.calls += 1
            return self.client.chat.completions.create(model=self.model, messages=messages,
                                                       response_format=RESPONSE_FORMAT)

        try:
            response = call_with_retries(attempt, self.retries, client=self.client, service="LLM", model=self.model,
                                         model_option="--model/MEMCTL_MODEL")
        except LLMUnavailable as error:
            raise run.fail(error) from None
        self._count(response, tally)
        return self._text(response)

    @staticmethod
    def _count(response: Any, tally: _Tally) -> None:
        usage = getattr(response, "usage", None)
        tally.input_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        tally.output_tokens += int(getattr(usage, "completion_tokens", 0) or 0)

    @staticmethod
    def _text(response: Any) -> str:
        """The reply's content; a response that has none is an invalid reply (as text)."""
        choices = getattr(response, "choices", None)
        if isinstance(response, str) or not choices:
            return response if isinstance(response, str) else ""
        message = choices[0].message
        if getattr(message, "refusal", None):
            return f"(the model refused: {message.refusal})"
        return message.content or ""
