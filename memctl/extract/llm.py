"""The LLM extractor: one structured-output chat call per episode (architecture §3).

Any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp server) through the
``openai`` client, which is imported lazily in ``make_client``: it costs ~0.5 s and most
commands never need it. The client is made, and the model looked up when none is named
(``only_model``), when the first episode needs them: a run with nothing to extract needs
neither.

- One chat-completions call per episode, with the strict JSON schema of
  ``memctl.extract.prompt``. An endpoint that refuses that response format (older Ollama
  and llama.cpp builds) is asked with ``json_object`` and the schema in the prompt, and
  one that refuses that too with none; each refusal is learnt once per run.
- Every reply is re-read here (local servers may not enforce the schema): a reasoning
  block or a code fence around it is taken off, each assertion is read on its own, its
  dates go through the date guard (``memctl.extract.guard``) and only then is it checked
  as a ``memctl.model.Assertion`` (an end after its start). What is still wrong goes back
  to the model once, with the errors; after that the assertions that stand are kept and
  the others dropped and named in the result (``Result.dropped``). Only a reply that
  cannot be read at all, twice, fails the episode (``Result.error``).
- Transport retries are ours (the client is built with ``max_retries=0``) so every call
  is counted: exponential backoff on 429, 5xx, timeouts and connection errors
  (``call_with_retries``, which the embeddings client uses too).
- A rejected key (401/403), an unknown model (404), no model to use (``NoModel``) or an
  endpoint that cannot be reached after the retries raise ``LLMUnavailable``: the whole
  run stops with one clear line and the episodes stay pending. It is never turned into
  per-episode failures.
- Bounded concurrency: ``concurrency`` worker threads; results are yielded as they
  complete. The cache is only touched from the consuming thread, so a SQLite-backed
  cache works as is.
- A response cache keyed by sha256 of (model, PROMPT_VERSION, the episode's text and
  reference time): re-runs and retries of unchanged input make no call.
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
from memctl.errors import BadInput, LLMUnavailable, NoModel
from memctl.extract import Request, Result
from memctl.extract.guard import Stated, guard_fields, stated_dates
from memctl.extract.prompt import (
    JSON_OBJECT_FORMAT,
    PROMPT_VERSION,
    RESPONSE_FORMAT,
    build_messages,
    correction_message,
    with_schema_in_prompt,
)
from memctl.model import Assertion, InvalidAssertion, Precision, validation_messages

DEFAULT_TIMEOUT = 120.0  # seconds per call; local models on a laptop are slow
DEFAULT_MAX_RETRIES = 4  # transport retries per call, so up to 5 attempts
NO_KEY = "no-key"  # local servers (Ollama, llama.cpp) want some bearer token, not a real one

Clock = Callable[[], datetime]


class ResponseCache(Protocol):
    def get(self, key: str) -> str | None: ...

    def put(self, key: str, text: str, episode_id: str) -> None: ...


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


def only_model(client: Any, retries: Retries) -> str:
    """The model to use when none is named: the only one a server lists (``GET /models``).

    For a server of one's own (``OPENAI_BASE_URL``: Ollama, llama.cpp, vLLM), which often
    serves one model. OpenAI's own endpoint lists dozens, so there a model must be named.
    Raises ``NoModel`` when the server lists none or several, or cannot list them.
    """
    import openai  # already imported by make_client; cheap here

    where = endpoint_of(client)
    ask = "pass --model or set MEMCTL_MODEL"
    if getattr(getattr(client, "base_url", None), "host", None) == "api.openai.com":
        raise NoModel(f"no model named: {ask}")

    def listing() -> list[str] | None:
        try:
            return [model.id for model in client.models.list()]
        except openai.NotFoundError:
            return None

    try:
        names = call_with_retries(listing, retries, client=client, service="LLM", model="(none named)",
                                  model_option="--model/MEMCTL_MODEL")
    except CallFailed as failed:
        raise NoModel(f"no model named, and the models of {where} could not be listed ({failed}); {ask}") from None
    if names is None:
        raise NoModel(f"no model named, and {where} does not list its models (GET /models: HTTP 404); {ask}")
    if len(names) == 1:
        return names[0]
    if not names:
        raise NoModel(f"no model named, and {where} lists no models; {ask}")
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    raise NoModel(f"no model named, and {where} lists {len(names)} models ({shown}); {ask} to choose one")


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


class _ReplyAssertion(BaseModel):
    # Nullable fields may be left out (some local servers drop nulls); everything given
    # must have the right type and value. Extra keys are a schema violation: a misnamed
    # date ("start_date") must not pass as no date at all.
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
    # Each assertion is checked on its own (``_ReplyAssertion``), so that one bad item
    # costs that item, not the reply. The entities are for the model's benefit only.
    model_config = ConfigDict(extra="forbid")
    entities: list[Any] = []
    assertions: list[Any]


class InvalidReply(ValueError):
    """A reply that cannot be read at all; the message goes back to the model once."""


@dataclass(frozen=True)
class Problem:
    """One assertion of a reply that is wrong even after the date guard."""

    where: str  # "assertions.2"
    what: str  # "billing uses Postgres", or the item's position when it has no names
    why: str

    def for_model(self) -> str:
        return f"{self.where} ({self.what}): {self.why}"

    def dropped(self) -> str:
        return f"{self.what}: {self.why}"


@dataclass
class Reply:
    """A reply read, its dates guarded: the assertions that stand, and the problems left."""

    assertions: list[Assertion]
    problems: list[Problem]
    guard_changes: int


# A reasoning block ends here; some chat templates open it in the prompt, so a reply may only close it.
_THINKING_END = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[\w-]*[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_MAX_ERRORS = 12
# A reply's most: one episode is at most 20,000 characters, and what it says fits in far
# fewer assertions; a model that runs away (13.6 MB replies, 20k junk items) fails the
# episode, which `retry --failed` takes again, rather than fill the cache and the store.
MAX_REPLY_CHARS = 200_000
MAX_ASSERTIONS = 200


def unwrap_text(text: str) -> str:
    """A reply without its reasoning block (``<think>…</think>``, which reasoning models put first)."""
    return _THINKING_END.split(text)[-1].strip()


def unwrap(text: str) -> str:
    """The JSON in a reply: without a reasoning block (``unwrap_text``), out of a code
    fence, or from the first ``{`` to the last ``}`` when a model wrote words around it."""
    body = unwrap_text(text)
    fenced = _FENCE.search(body)
    if fenced:
        body = fenced.group(1).strip()
    start, end = body.find("{"), body.rfind("}")
    return body[start:end + 1] if 0 <= start < end else body


def redacted_reply(text: str) -> str:
    """A reply with every secret in it replaced, before anything of it is read, cached or
    sent back: a model repeats what it was shown (a key in the context, a password in a
    quoted log) in a subject, an object or a sentence, and made-up ones look alike. Each
    string of a JSON reply is redacted on its own, so no rule reaches across its quotes;
    a reply that is no JSON is redacted as text (it fails as a reply anyway)."""
    from memctl.redact import could_hold_secret, redact

    if not could_hold_secret(text):  # most replies: a cheap test of each rule's substrings
        return text
    try:
        data = json.loads(unwrap(text))
    except ValueError:
        return redact(text)[0]

    def each(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value)[0]
        if isinstance(value, list):
            return [each(item) for item in value]
        if isinstance(value, dict):
            return {key: each(item) for key, item in value.items()}
        return value

    return json.dumps(each(data), ensure_ascii=False)


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


def _named(item: Any, index: int) -> str:
    """How a problem names its assertion: by its triple when it has one."""
    if isinstance(item, dict) and all(isinstance(item.get(key), str) for key in ("subject", "predicate", "object")):
        return f"{item['subject']} {item['predicate']} {item['object']}"
    return f"assertion {index}"


def parse_reply(text: str, *, extractor: str, extracted_at: str, episode: str, reference_time: str,
                stated: Mapping[str, Stated] | None = None) -> Reply:
    """A model's reply → assertions, each read, its dates guarded against the ``episode``
    text and its ``reference_time``, then checked (an end after its start).

    Raises ``InvalidReply`` when the reply cannot be read at all; an assertion that is
    wrong after the guard is a ``Problem`` of the result, the others stand.
    """
    try:
        data = json.loads(unwrap(text))
    except json.JSONDecodeError as error:
        raise InvalidReply(f"the reply is not valid JSON ({error})") from None
    try:
        reply = _Reply.model_validate(data)
    except ValidationError as error:
        raise InvalidReply("\n".join(validation_messages(error)[:_MAX_ERRORS])) from None
    if len(reply.assertions) > MAX_ASSERTIONS:
        raise InvalidReply(f"the reply has {len(reply.assertions)} assertions; give at most {MAX_ASSERTIONS}, "
                           "the ones the text states")

    if stated is None:
        stated = stated_dates(episode, reference_time)
    result = Reply([], [], 0)
    for index, raw in enumerate(reply.assertions):
        where, what = f"assertions.{index}", _named(raw, index)
        errors: list[str] = []
        try:
            item = _ReplyAssertion.model_validate(raw)
        except ValidationError as error:
            result.problems.append(Problem(where, what, "; ".join(validation_messages(error))))
            continue
        valid_at, valid_evidence, valid_precision = _date(
            item.valid_at, item.valid_at_evidence, item.valid_at_precision, "valid_at", errors)
        invalid_at, invalid_evidence, invalid_precision = _date(
            item.invalid_at, item.invalid_at_evidence, item.invalid_at_precision, "invalid_at", errors)
        if errors:
            result.problems.append(Problem(where, what, "; ".join(errors)))
            continue
        fields = {
            "subject": item.subject, "predicate": item.predicate, "object": item.object,
            "fact": item.fact.strip() or f"{item.subject} {item.predicate.replace('_', ' ')} {item.object}",
            "valid_at": valid_at, "valid_at_evidence": valid_evidence, "valid_at_precision": valid_precision,
            "invalid_at": invalid_at, "invalid_at_evidence": invalid_evidence,
            "invalid_at_precision": invalid_precision, "date_span": (item.date_span or "").strip() or None,
            "cardinality": item.cardinality, "extractor": extractor, "extracted_at": extracted_at,
        }
        # The guard first: a date the model invented is replaced before the interval is
        # checked, so it never costs the assertion or a second call.
        fields, changes = guard_fields(fields, episode, reference_time, stated)
        try:
            result.assertions.append(Assertion(**fields))
        except InvalidAssertion as error:
            result.problems.append(Problem(where, what, str(error)))
            continue
        result.guard_changes += len(changes)
    return result


def judge(text: str, request: Request, *, extractor: str, extracted_at: str,
          stated: Mapping[str, Stated] | None = None) -> tuple[Reply | None, str]:
    """(the reply read, or None when it cannot be; what is wrong in it, for the model's
    correction, or "" when nothing is)."""
    try:
        reply = parse_reply(text, extractor=extractor, extracted_at=extracted_at, episode=request.text,
                            reference_time=request.reference_time, stated=stated)
    except InvalidReply as invalid:
        return None, str(invalid)
    return reply, "\n".join(p.for_model() for p in reply.problems[:_MAX_ERRORS])


def correction_conversation(request: Request, text: str, problem: str) -> list[dict[str, str]]:
    """The request's messages, the reply, and what was wrong in it: the one correction asked."""
    return [*build_messages(request), {"role": "assistant", "content": text},
            {"role": "user", "content": correction_message(problem)}]


def reply_text(response: Any) -> str:
    """The reply a completion holds, checked for size (``CallFailed`` past MAX_REPLY_CHARS:
    not read, not cached, not sent back) and with its secrets redacted."""
    text = LLMExtractor.text_of(response)
    if len(text) > MAX_REPLY_CHARS:
        raise CallFailed(f"the model's reply ran to {len(text):,} characters, over the {MAX_REPLY_CHARS:,} a reply "
                         "may have")
    return redacted_reply(text)


def taken(reply: Reply, *, cache_hit: bool = False, **counts: Any) -> Result:
    """The result of a reply that was read: its assertions that stand, the others named as dropped."""
    return Result(assertions=reply.assertions, cache_hit=cache_hit, guarded=True, guard_changes=reply.guard_changes,
                  dropped=[p.dropped() for p in reply.problems], **counts)


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


def envelope(text: str, extracted_at: str) -> str:
    # The cache keeps when the model said it: a cached "today 00:00" is then still
    # recognised by the date guard as the day of that extraction, not of the re-run.
    return json.dumps({"reply": text, "extracted_at": extracted_at}, ensure_ascii=False)


# A server that cannot give the strict schema says so in its error: older Ollama and
# llama.cpp builds, llama-cpp-python (with HTTP 500), some vLLM set-ups.
_REFUSES_FORMAT = re.compile(r"response.?format|json.?schema", re.IGNORECASE)


class _FormatRefused(Exception):
    """The endpoint refused the response format a call asked for."""

    def __init__(self, refused: Any, message: str):
        super().__init__(message)
        self.refused = refused


class LLMExtractor:
    """``Request`` → ``Result`` through one structured chat call per episode.

    ``client`` is an ``openai`` client, or None to make one from the environment
    (``make_client``, with ``timeout``) when the first call needs it; ``model`` is None
    to use the endpoint's only model (``only_model``), looked up then too. A run with
    nothing to extract (a structured import) so needs no endpoint and no model.
    """

    guards_dates = True  # its results come guarded (``parse_reply``)

    def __init__(
        self,
        client: Any,
        model: str | None,
        clock: Clock,
        cache: ResponseCache | None = None,
        concurrency: int = 4,
        max_retries: int = DEFAULT_MAX_RETRIES,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        cached_only: bool = False,
    ):
        if concurrency < 1:
            raise BadInput(f"must be at least 1, got {concurrency}", parameter="concurrency")
        self._client = client
        self._model = model.strip() if model and model.strip() else None
        self.timeout = timeout
        self.clock = clock
        self.cache = cache
        self.concurrency = concurrency
        self.retries = Retries(max_retries, sleep, backoff, max_backoff)
        # Only replies already cached (a batch's, collected): an episode without one fails
        # its extraction, which leaves it as it was, rather than cost a live call.
        self.cached_only = cached_only
        self._ready_lock = threading.Lock()
        # The response formats still to try, best first; one the endpoint refuses is
        # dropped for the rest of the run, by whichever call learns it first.
        self._formats: list[Any] = [RESPONSE_FORMAT, JSON_OBJECT_FORMAT, None]
        self._formats_lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"llm:{self._model}" if self._model else "llm"

    @property
    def response_format(self) -> Any:
        """What this run asks the endpoint for: the strict schema until it was refused."""
        return self._formats[0]

    @property
    def has_endpoint(self) -> bool:
        """Whether it was given a client or the environment names an endpoint: a run that
        extracts nothing (a structured import) may have neither."""
        from memctl.extract import llm_configured

        return self._client is not None or llm_configured()

    def endpoint(self) -> tuple[Any, str]:
        """(client, model) for a call of another kind on the same endpoint (a summary)."""
        return self._ready(client=True)

    def client(self) -> Any:
        """The ``openai`` client, made on first use; no model is looked up for it."""
        with self._ready_lock:
            if self._client is None:
                self._client = make_client(timeout=self.timeout)
            return self._client

    def of_model(self, model: str, *, cache: ResponseCache | None = None, cached_only: bool = False) -> LLMExtractor:
        """An extractor of ``model`` through the same client and settings, and ``cache``
        (else this one's)."""
        return LLMExtractor(self._client, model, self.clock, cache or self.cache, self.concurrency,
                            self.retries.max_retries,
                            timeout=self.timeout, sleep=self.retries.sleep, backoff=self.retries.backoff,
                            max_backoff=self.retries.max_backoff, cached_only=cached_only)

    def _ready(self, *, client: bool) -> tuple[Any, str]:
        """The model, looked up on first use, and (``client``) the client, made on first
        use: a run whose replies are all cached and whose model is named makes neither
        (importing ``openai`` alone is half a second)."""
        with self._ready_lock:
            if self._client is None and (client or self._model is None):
                self._client = make_client(timeout=self.timeout)
            if self._model is None:
                self._model = only_model(self._client, self.retries)
            return self._client, self._model

    @property
    def model(self) -> str:
        return self._ready(client=False)[1]

    # -- the public interface -------------------------------------------------------------

    def extract(self, requests: Iterable[Request]) -> Iterator[tuple[Request, Result]]:
        """One result per request, as they complete; raises ``LLMUnavailable`` mid-way
        (``NoModel`` when no model is named and the endpoint lists other than one).

        At most ``2 × concurrency`` requests are taken from ``requests`` ahead of the
        results, so a long backfill is streamed, not loaded.
        """
        run = _Run()
        source = iter(requests)
        exhausted = False
        pending: dict[Future, tuple[Request, str]] = {}
        executor: ThreadPoolExecutor | None = None
        try:
            while True:
                while not exhausted and len(pending) < 2 * self.concurrency:
                    try:
                        request = next(source)
                    except StopIteration:
                        exhausted = True
                        break
                    key = cache_key(self.model, request)
                    cached = self._cached(key, request)
                    if cached is not None:
                        yield request, cached
                        continue
                    if self.cached_only:
                        yield request, Result(error="no reply of its batch is cached for it")
                        continue
                    if executor is None:
                        executor = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="memctl-llm")
                    pending[executor.submit(self._extract_one, request, run)] = (request, key)
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
            if executor is not None:
                executor.shutdown(wait=True, cancel_futures=True)

    # -- one episode ----------------------------------------------------------------------

    def _cached(self, key: str, request: Request) -> Result | None:
        if self.cache is None:
            return None
        stored = self.cache.get(key)
        if stored is None:
            return None
        try:
            envelope = json.loads(stored)
            reply = parse_reply(envelope["reply"], extractor=self.name, extracted_at=envelope["extracted_at"],
                                episode=request.text, reference_time=request.reference_time)
        except (ValueError, KeyError, TypeError):
            return None  # an entry this version cannot use: ask the model again
        # A cached reply is the one the run took: what was wrong in it had its retry then.
        return taken(reply, cache_hit=True)

    def correct(self, request: Request, text: str, replied_at: str) -> tuple[Result, str | None]:
        """(result, cache envelope of the reply taken) of a reply that came another way (a
        batch's, given at ``replied_at``) and is judged as a live one: what is wrong in it
        goes back to the model once, now. Raises ``LLMUnavailable`` as ``extract`` does."""
        run = _Run()
        outcome = self._extract_one(request, run, first=(text, replied_at))
        if run.unavailable is not None:
            raise run.unavailable
        return outcome

    def _extract_one(self, request: Request, run: _Run,
                     first: tuple[str, str] | None = None) -> tuple[Result, str | None]:
        """(result, cache envelope of the reply taken) — in a worker thread.

        The reply (``first``: one already given, and when) is read and its dates
        guarded; what is still wrong goes back to the model once. After that the
        assertions that stand are kept and the others dropped, named in the result; only
        a reply that cannot be read at all, twice, fails the episode.
        """
        tally = _Tally()
        conversation = build_messages(request)
        stated = stated_dates(request.text, request.reference_time)
        kept: tuple[Reply, str, str] | None = None  # the last reply that could be read, its text and time
        problem = ""
        for attempt in range(2):  # the reply, and one retry with what was wrong
            if attempt == 0 and first is not None:
                text, extracted_at = first
            else:
                extracted_at = times.to_storage(self.clock())
                try:
                    text = self._complete(conversation, tally, run)
                except CallFailed as failed:
                    if kept is None:
                        return tally.result(error=str(failed)), None
                    break
            reply, problem = judge(text, request, extractor=self.name, extracted_at=extracted_at, stated=stated)
            if reply is not None:
                kept = (reply, text, extracted_at)
            if not problem:
                break
            if attempt == 0:
                conversation = correction_conversation(request, text, problem)
        if kept is None:
            return tally.result(error=f"invalid model reply, also after a retry: {_short(problem, 300)}"), None
        reply, text, extracted_at = kept
        return taken(reply, calls=tally.calls, input_tokens=tally.input_tokens,
                     output_tokens=tally.output_tokens), envelope(text, extracted_at)

    def _complete(self, messages: list[dict[str, str]], tally: _Tally, run: _Run) -> str:
        """One logical call: the reply's text, after transport retries, in a response
        format the endpoint takes."""
        while True:
            response_format = self.response_format
            try:
                return self._call(messages, response_format, tally, run)
            except _FormatRefused as refused:
                with self._formats_lock:
                    if self._formats[0] is refused.refused:  # not yet learnt by another call
                        self._formats.pop(0)

    def _call(self, messages: list[dict[str, str]], response_format: Any, tally: _Tally, run: _Run) -> str:
        import openai  # already imported by make_client; cheap here

        client, model = self._ready(client=True)
        if response_format is not RESPONSE_FORMAT:
            messages = with_schema_in_prompt(messages)
        kwargs = {} if response_format is None else {"response_format": response_format}
        # --timeout bounds the whole call, its retries counted: the client's own timeout is
        # each read's, and a server that sends a byte every half second never trips it.
        deadline = time.monotonic() + self.timeout

        def attempt() -> Any:
            if run.stop.is_set():
                raise _Stopped
            tally.calls += 1
            try:
                return self.attempt_by(deadline, client, lambda calling: calling.chat.completions
                                       .with_streaming_response.create(model=model, messages=messages, **kwargs))
            except openai.APIStatusError as error:
                said = f"{error.message} {error.body}"
                if response_format is not None and _REFUSES_FORMAT.search(said):
                    raise _FormatRefused(response_format, said) from None
                raise

        try:
            response = call_with_retries(attempt, self.retries, client=client, service="LLM", model=model,
                                         model_option="--model/MEMCTL_MODEL")
        except LLMUnavailable as error:
            raise run.fail(error) from None
        self._count(response, tally)
        return reply_text(response)

    def attempt_by(self, deadline: float, client: Any, send: Callable[[Any], Any]) -> Any:
        """One attempt of a call that must be over by ``deadline``: ``send(client)`` makes the
        streamed request, through a client whose reads wait no longer than the client was
        made to, nor (a second or more short of that: a retry's) past the deadline."""
        if (left := deadline - time.monotonic()) <= 0:
            raise CallFailed(f"no reply within the {self.timeout:g} s a call may take, its retries counted",
                             refused=True)
        configured = client.timeout if isinstance(client.timeout, int | float) else None
        calling = client if configured is not None and left > configured - 1 else client.with_options(timeout=left)
        return self._read_by(deadline, send(calling))

    def _read_by(self, deadline: float, streamed: Any) -> Any:
        """The completion a streamed response holds, its body read piece by piece until
        ``deadline`` (CallFailed past it); a body that is no JSON comes back as its text."""
        from openai.types.chat import ChatCompletion

        with streamed as response:
            body = bytearray()
            for piece in response.iter_bytes():
                body += piece
                if time.monotonic() > deadline:
                    raise CallFailed(f"the reply was still coming after the {self.timeout:g} s a call may take",
                                     refused=True)
        try:
            return ChatCompletion.model_validate_json(bytes(body))
        except ValueError:
            return body.decode("utf-8", errors="replace")

    @staticmethod
    def _count(response: Any, tally: _Tally) -> None:
        usage = getattr(response, "usage", None)
        tally.input_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        tally.output_tokens += int(getattr(usage, "completion_tokens", 0) or 0)

    @staticmethod
    def text_of(response: Any) -> str:
        """The reply's content; a response that has none is an invalid reply (as text)."""
        choices = getattr(response, "choices", None)
        if isinstance(response, str) or not choices:
            return response if isinstance(response, str) else ""
        message = choices[0].message
        if getattr(message, "refusal", None):
            return f"(the model refused: {message.refusal})"
        return message.content or ""
