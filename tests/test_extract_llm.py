"""The LLM extractor through the real ``openai`` client (architecture §3, issue 4).

Unit tests drive the client with ``httpx2.MockTransport`` (openai 3.x sends through
httpx2); one end-to-end test talks HTTP to a small OpenAI-compatible server on
127.0.0.1. No other network, no timing assertions: backoff sleeps are recorded, not slept.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx2
import pytest

from memctl import times
from memctl.entry import exit_code
from memctl.extract import Request, Result
from memctl.extract.llm import NO_KEY, LLMExtractor, LLMUnavailable, cache_key, make_client, parse_reply
from memctl.extract.prompt import PROMPT_VERSION, RESPONSE_FORMAT, RESPONSE_SCHEMA
from tests.fake_llm import API_KEY, FakeOpenAIServer, completion, episode_section

REF = "2024-03-05T10:00:00.000000Z"
NOW = datetime(2026, 1, 15, 12, 34, 56, tzinfo=UTC)  # the extractor's clock
TODAY_MIDNIGHT = "2026-01-15T00:00:00.000000Z"


def clock() -> datetime:
    return NOW


class DictCache:
    def __init__(self):
        self.data: dict[str, str] = {}
        self.gets = 0
        self.puts = 0

    def get(self, key: str) -> str | None:
        self.gets += 1
        return self.data.get(key)

    def put(self, key: str, text: str, episode_id: str) -> None:
        self.puts += 1
        self.data[key] = text


def item(subject="billing", predicate="primary_database", obj="Postgres", **overrides) -> dict:
    base = {
        "subject": subject,
        "predicate": predicate,
        "object": obj,
        "fact": f"{subject} uses {obj} as its primary database.",
        "cardinality": "one",
        "valid_at": REF,
        "valid_at_evidence": "reference",
        "valid_at_precision": "instant",
        "invalid_at": None,
        "invalid_at_evidence": None,
        "invalid_at_precision": None,
        "date_span": None,
    }
    return {**base, **overrides}


def reply(*items: dict, entities: list | None = None) -> str:
    names = entities if entities is not None else [
        {"name": n, "type": "thing"} for i in items for n in (i["subject"], i["object"])
    ]
    return json.dumps({"entities": names, "assertions": list(items)})


def ok(content: str, **usage) -> httpx2.Response:
    return httpx2.Response(200, json=completion(content, **usage))


def error(status: int, message: str = "nope", code: str | None = None, **headers) -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": message, "type": "error", "code": code}},
                           headers={k.replace("_", "-"): v for k, v in headers.items()})


class Recorder:
    """A MockTransport handler: records each request body, answers from ``respond``."""

    def __init__(self, respond: Callable[[int, dict], httpx2.Response]):
        self.respond = respond
        self.bodies: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        with self.lock:
            self.bodies.append(body)
            n = len(self.bodies)
        return self.respond(n, body)


def extractor(handler, *, cache=None, sleeps=None, clock=clock, **kwargs) -> LLMExtractor:
    client = make_client(api_key=API_KEY, base_url="http://llm.test/v1",
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    sleep = sleeps.append if sleeps is not None else (lambda _s: None)
    return LLMExtractor(client, "test-model", clock, cache, sleep=sleep, **kwargs)


def request(n: int = 0, text: str | None = None, **kwargs) -> Request:
    return Request(episode_id=f"ep_{n:04d}", text=text or f"Episode {n}: billing runs on Postgres.",
                   reference_time=kwargs.pop("reference_time", REF), **kwargs)


def run(ex: LLMExtractor, *requests: Request) -> dict[str, Result]:
    results = dict((req.episode_id, res) for req, res in ex.extract(requests))
    assert len(results) == len(requests)
    return results


def one(ex: LLMExtractor, req: Request | None = None) -> Result:
    return next(iter(run(ex, req or request()).values()))


def test_request_carries_strict_schema_reference_time_context_and_predicates():
    dated = item(obj="MySQL", valid_at="2022-06-20", valid_at_evidence="text", valid_at_precision="day",
                 date_span="on 20 June 2022")
    handler = Recorder(lambda n, body: ok(reply(item(), dated), prompt_tokens=321, completion_tokens=45))
    text = "We moved billing to MySQL on 20 June 2022. Today billing runs on Postgres."
    req = request(1, text, context=("ctx-one", "ctx-two", "ctx-three", "ctx-four"), predicates=("uses", "primary_database"))

    result = one(extractor(handler), req)

    assert result.error is None and result.calls == 1 and not result.cache_hit
    assert (result.input_tokens, result.output_tokens) == (321, 45)
    (body,) = handler.bodies
    assert body["model"] == "test-model"
    assert body["response_format"] == RESPONSE_FORMAT
    schema = body["response_format"]["json_schema"]
    assert schema["strict"] is True and schema["schema"] == RESPONSE_SCHEMA
    system, user = body["messages"]
    assert system["role"] == "system" and "REFERENCE_TIME" in system["content"]
    assert user["role"] == "user"
    assert f"REFERENCE_TIME: {REF}" in user["content"]
    assert "EXISTING PREDICATES: primary_database, uses" in user["content"]
    # The last three context episodes, before the episode; the oldest is left out.
    assert "<context>\nctx-two\n</context>" in user["content"] and "ctx-one" not in user["content"]
    assert user["content"].index("ctx-four") < user["content"].index("<episode>")
    # The episode goes in verbatim: no timestamp injected into its text.
    episode = episode_section(user["content"])
    assert episode == text
    assert REF not in episode and "2024-03-05" not in episode

    undated, from_text = result.assertions
    assert undated.valid_at == REF and undated.valid_at_evidence == "reference"
    assert from_text.valid_at == "2022-06-20T00:00:00.000000Z"
    assert (from_text.valid_at_evidence, from_text.valid_at_precision, from_text.date_span) == (
        "text", "day", "on 20 June 2022")
    for assertion in result.assertions:
        assert assertion.extractor == "llm:test-model"
        assert assertion.extracted_at == times.to_storage(NOW)
        assert assertion.invalid_at is None


def test_response_schema_is_strict_everywhere():
    def objects(schema):
        if isinstance(schema, dict):
            if schema.get("type") == "object":
                yield schema
            for value in schema.values():
                yield from objects(value)
        elif isinstance(schema, list):
            for value in schema:
                yield from objects(value)

    found = list(objects(RESPONSE_SCHEMA))
    assert len(found) == 3
    for schema in found:
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) == set(schema["properties"])


def test_dates_are_normalised_to_storage_form_with_offsets_honoured():
    text = reply(item(valid_at="2025-01-01T00:00:00+02:00", valid_at_evidence="text", valid_at_precision="instant",
                      invalid_at="2025-03", invalid_at_evidence="text", invalid_at_precision=None,
                      date_span="from New Year until March"))
    (assertion,) = parse_reply(text, extractor="llm:m", extracted_at=REF, episode="From New Year until March.",
                               reference_time="2025-06-01T00:00:00.000000Z").assertions
    assert assertion.valid_at == "2024-12-31T22:00:00.000000Z"
    assert assertion.invalid_at == "2025-03-01T00:00:00.000000Z"
    assert assertion.invalid_at_precision == "month"  # from the date's shape when the model gives none


def test_a_retraction_without_a_start_is_kept():
    text = reply(item(valid_at=None, valid_at_evidence=None, valid_at_precision=None,
                      invalid_at=REF, invalid_at_evidence="reference", invalid_at_precision="instant"))
    (assertion,) = parse_reply(text, extractor="llm:m", extracted_at=REF, episode="We no longer use it.",
                               reference_time=REF).assertions
    assert assertion.valid_at is None and assertion.invalid_at == REF


# --- transport retries ---------------------------------------------------------------------


def test_429_then_200_is_retried_and_both_calls_are_counted():
    handler = Recorder(lambda n, body: error(429, "slow down", retry_after="7") if n == 1 else ok(reply(item())))
    sleeps: list[float] = []

    result = one(extractor(handler, sleeps=sleeps))

    assert result.error is None and len(result.assertions) == 1
    assert result.calls == 2 and len(handler.bodies) == 2
    assert sleeps == [7.0]  # Retry-After honoured (and recorded, never slept)


@pytest.mark.parametrize("failure", [
    lambda: error(500, "boom"),
    lambda: error(503, "overloaded"),
    lambda: (_ for _ in ()).throw(httpx2.ReadTimeout("slow")),
])
def test_transient_failures_beyond_the_retry_budget_fail_the_episode(failure):
    handler = Recorder(lambda n, body: failure())
    sleeps: list[float] = []

    result = one(extractor(handler, sleeps=sleeps, max_retries=2))

    assert result.calls == 3 and len(handler.bodies) == 3
    assert len(sleeps) == 2 and sleeps[0] < sleeps[1]  # exponential
    assert result.assertions == [] and result.error
    assert "3 times" in result.error


def test_a_bad_request_fails_the_episode_without_retrying():
    handler = Recorder(lambda n, body: error(400, "context length exceeded"))
    ex = extractor(handler)
    result = one(ex)
    assert result.calls == 1 and "HTTP 400" in result.error and "context length" in result.error
    one(ex, request(1))  # an error that does not name the response format keeps it
    assert [body["response_format"] for body in handler.bodies] == [RESPONSE_FORMAT, RESPONSE_FORMAT]


# --- invalid replies -----------------------------------------------------------------------


UNREADABLE_REPLIES = {
    "not json": ("{not json", "not valid JSON"),
    "empty": ("", "not valid JSON"),
    "no assertions key": (json.dumps({"entities": []}), "assertions"),
    "assertions not a list": (json.dumps({"entities": [], "assertions": {"subject": "x"}}), "assertions"),
    "only reasoning": ("<think>billing uses Postgres, I think</think>", "not valid JSON"),
}


@pytest.mark.parametrize("bad", UNREADABLE_REPLIES.values(), ids=UNREADABLE_REPLIES.keys())
def test_an_unreadable_reply_is_retried_once_with_the_error_then_fails(bad):
    content, expected = bad
    handler = Recorder(lambda n, body: ok(content, prompt_tokens=10, completion_tokens=5))
    cache = DictCache()

    result = one(extractor(handler, cache=cache))

    assert result.assertions == [] and result.error and expected in result.error
    assert result.calls == 2 and len(handler.bodies) == 2
    assert (result.input_tokens, result.output_tokens) == (20, 10)
    first, second = handler.bodies
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assistant, correction = second["messages"][len(first["messages"]):]
    assert assistant == {"role": "assistant", "content": content}
    assert correction["role"] == "user" and expected in correction["content"]
    assert second["response_format"] == RESPONSE_FORMAT
    assert cache.data == {}  # failures are never cached


WRONG_ASSERTIONS = {
    "impossible date": (item(valid_at="2024-02-31", valid_at_evidence="text"), "2024-02-31"),
    "garbage date": (item(valid_at="last Tuesday", valid_at_evidence="relative"), "last Tuesday"),
    "unknown evidence": (item(valid_at_evidence="guess"), "valid_at_evidence"),
    "date without evidence": (item(valid_at_evidence=None), "valid_at_evidence is null"),
    "ends before it starts": (item(invalid_at="2020-01-01", invalid_at_evidence="text"), "not after"),
    "unusable name": (item(subject="!!!"), "not a usable name"),
    "extra key": ({**item(), "confidence": 0.9}, "confidence"),
    "bad cardinality": (item(cardinality="several"), "cardinality"),
}


@pytest.mark.parametrize("bad", WRONG_ASSERTIONS.values(), ids=WRONG_ASSERTIONS.keys())
def test_a_wrong_assertion_goes_back_once_then_is_dropped_and_the_rest_kept(bad):
    wrong, expected = bad
    good = item(subject="invoices", obj="MySQL")
    content = reply(good, wrong)  # the model repeats its mistake
    handler = Recorder(lambda n, body: ok(content, prompt_tokens=10, completion_tokens=5))
    cache = DictCache()

    result = one(extractor(handler, cache=cache))

    assert result.error is None  # the episode is done, not failed
    assert [(a.subject, a.object) for a in result.assertions] == [("invoices", "MySQL")]
    (dropped,) = result.dropped
    assert expected in dropped and dropped.startswith(f"{wrong['subject']} {wrong['predicate']} {wrong['object']}: ")
    assert result.calls == 2 and len(handler.bodies) == 2
    first, second = handler.bodies
    assistant, correction = second["messages"][len(first["messages"]):]
    assert assistant == {"role": "assistant", "content": content}
    # only what is wrong goes back, named by its place and its triple
    assert "assertions.1 (" in correction["content"] and expected in correction["content"]
    assert "assertions.0" not in correction["content"]
    # what was taken is cached: a re-run makes no call and drops the same
    again = one(extractor(handler, cache=cache))
    assert again.cache_hit and again.calls == 0 and again.dropped == result.dropped
    assert again.assertions == result.assertions


def test_a_corrected_assertion_is_taken_from_the_retry():
    wrong = item(invalid_at="2020-01-01", invalid_at_evidence="text")
    handler = Recorder(lambda n, body: ok(reply(wrong) if n == 1 else reply(item())))
    result = one(extractor(handler))
    assert result.error is None and result.dropped == [] and result.calls == 2
    assert [(a.valid_at, a.invalid_at) for a in result.assertions] == [(REF, None)]


def test_an_unreadable_retry_keeps_what_stood_in_the_first_reply():
    good, wrong = item(subject="invoices", obj="MySQL"), item(subject="!!!")
    handler = Recorder(lambda n, body: ok(reply(good, wrong) if n == 1 else "{oops"))
    result = one(extractor(handler))
    assert result.error is None and result.calls == 2
    assert [a.subject for a in result.assertions] == ["invoices"] and len(result.dropped) == 1


def test_a_model_that_puts_every_date_at_todays_midnight_costs_one_call_and_keeps_its_facts():
    """The seed's report: 'today @ 00:00' for starts and ends. The guard reads the reply
    before the interval check, so nothing goes back to the model and nothing is lost."""
    today = {"valid_at": TODAY_MIDNIGHT, "valid_at_evidence": "text", "valid_at_precision": "instant",
             "invalid_at": TODAY_MIDNIGHT, "invalid_at_evidence": "text", "invalid_at_precision": "instant"}
    text = "Billing moved to Postgres on 20 June 2022; invoices use MySQL."
    handler = Recorder(lambda n, body: ok(reply(item(**today, date_span="on 20 June 2022"),
                                               item(subject="invoices", obj="MySQL", **today))))
    result = one(extractor(handler), request(text=text))

    assert result.error is None and result.calls == 1 and result.dropped == []
    billing, invoices = result.assertions
    assert (billing.valid_at, billing.valid_at_precision, billing.invalid_at) == (
        "2022-06-20T00:00:00.000000Z", "day", None)
    assert (invoices.valid_at, invoices.valid_at_evidence, invoices.invalid_at) == (REF, "reference", None)
    assert result.guarded and result.guard_changes == 4


def test_an_invented_start_after_a_stated_end_keeps_the_end():
    text = "Billing used Oracle until March 2023."
    handler = Recorder(lambda n, body: ok(reply(item(
        obj="Oracle", valid_at=TODAY_MIDNIGHT, valid_at_evidence="text", invalid_at="2023-03",
        invalid_at_evidence="text", invalid_at_precision="month", date_span="until March 2023"))))
    result = one(extractor(handler), request(text=text, reference_time="2024-03-05T10:00:00.000000Z"))
    assert result.calls == 1 and result.dropped == []
    (oracle,) = result.assertions
    assert (oracle.valid_at, oracle.invalid_at, oracle.invalid_at_precision) == (
        None, "2023-03-01T00:00:00.000000Z", "month")


def test_an_invalid_reply_then_a_valid_one_succeeds_and_is_cached():
    handler = Recorder(lambda n, body: ok("```json\n{oops" if n == 1 else reply(item())))
    cache = DictCache()
    result = one(extractor(handler, cache=cache))
    assert result.error is None and len(result.assertions) == 1 and result.calls == 2
    assert len(cache.data) == 1




# --- cache ---------------------------------------------------------------------------------


def test_a_rerun_of_unchanged_input_is_a_cache_hit_with_no_call():
    handler = Recorder(lambda n, body: ok(reply(item(valid_at=TODAY_MIDNIGHT, valid_at_evidence="text"))))
    cache = DictCache()
    requests = [request(n) for n in range(3)]

    first = run(extractor(handler, cache=cache), *requests)
    assert len(handler.bodies) == 3 and cache.puts == 3

    later = NOW + timedelta(days=3)
    again = run(extractor(handler, cache=cache, clock=lambda: later), *requests)

    assert len(handler.bodies) == 3  # no new call
    for req in requests:
        hit = again[req.episode_id]
        assert hit.cache_hit and hit.calls == 0 and hit.error is None
        assert (hit.input_tokens, hit.output_tokens) == (0, 0)
        # Same assertions, including when the model said them: the date guard must still
        # see a cached "today 00:00" as the day of that extraction.
        assert hit.assertions == first[req.episode_id].assertions
        assert hit.assertions[0].extracted_at == times.to_storage(NOW)

    changed = run(extractor(handler, cache=cache), request(0, "Episode 0, edited."))
    assert len(handler.bodies) == 4 and not changed["ep_0000"].cache_hit


def test_a_rerun_answered_by_the_cache_needs_no_endpoint(monkeypatch):
    """With the model named, a cached run makes no client: no endpoint needs to be
    configured or reachable, and openai is not imported for it."""
    cache = DictCache()
    first = run(extractor(Recorder(lambda n, body: ok(reply(item()))), cache=cache), request())
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)  # make_client would raise LLMUnavailable
    again = run(LLMExtractor(None, "test-model", clock, cache), request())
    assert again["ep_0000"].cache_hit and again["ep_0000"].assertions == first["ep_0000"].assertions


def test_the_cache_key_covers_model_prompt_version_text_and_time_but_not_context():
    key = cache_key("m", request())
    assert key == cache_key("m", request())
    assert key != cache_key("other", request())
    assert key != cache_key("m", request(reference_time="2024-03-06T10:00:00.000000Z"))
    assert key != cache_key("m", request(text="something else entirely"))
    # the store's growing context must not make a retry of unchanged input pay again
    assert key == cache_key("m", request(predicates=("uses",)))
    assert key == cache_key("m", request(entities=("billing",)))
    assert PROMPT_VERSION == "3"


def test_an_unusable_cache_entry_is_ignored():
    handler = Recorder(lambda n, body: ok(reply(item())))
    cache = DictCache()
    req = request()
    cache.data[cache_key("test-model", req)] = "garbage"
    result = one(extractor(handler, cache=cache), req)
    assert not result.cache_hit and result.calls == 1 and len(result.assertions) == 1


# --- concurrency ---------------------------------------------------------------------------


def test_calls_overlap_up_to_the_concurrency_bound():
    concurrency = 4
    barrier = threading.Barrier(concurrency, timeout=10)  # only ever waits this long on failure
    lock = threading.Lock()
    state = {"in_flight": 0, "max": 0}

    def respond(n, body):
        with lock:
            state["in_flight"] += 1
            state["max"] = max(state["max"], state["in_flight"])
        try:
            barrier.wait()  # returns only when `concurrency` calls are in flight together
        except threading.BrokenBarrierError:
            pass
        finally:
            with lock:
                state["in_flight"] -= 1
        return ok(reply(item()))

    results = run(extractor(Recorder(respond), concurrency=concurrency), *[request(n) for n in range(12)])

    assert state["max"] == concurrency
    assert not barrier.broken
    assert all(r.error is None and r.calls == 1 for r in results.values())


def test_requests_are_streamed_not_loaded_up_front():
    taken = []

    def requests():
        for n in range(40):
            taken.append(n)
            yield request(n)

    ex = extractor(Recorder(lambda n, body: ok(reply(item()))), concurrency=2)
    stream = ex.extract(requests())
    next(stream)
    assert len(taken) <= 2 * 2 + 1
    stream.close()


# --- an unusable endpoint ------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_raises_llm_unavailable_not_per_episode_failures(status):
    handler = Recorder(lambda n, body: error(status, "Incorrect API key provided"))
    sleeps: list[float] = []
    ex = extractor(handler, sleeps=sleeps)

    with pytest.raises(LLMUnavailable) as raised:
        list(ex.extract([request(n) for n in range(5)]))

    message = str(raised.value)
    assert "rejected the API key" in message and "OPENAI_API_KEY" in message and "\n" not in message
    assert exit_code(raised.value) == 1  # the CLI exits 1: the episodes stay pending
    assert sleeps == []  # no retrying a rejected key
    assert len(handler.bodies) <= 4  # the run stopped: no call after the first answer came back


def test_an_unreachable_endpoint_raises_llm_unavailable_after_retries():
    def refuse(request):
        raise httpx2.ConnectError("[Errno 111] Connection refused")

    sleeps: list[float] = []
    ex = extractor(refuse, sleeps=sleeps, max_retries=3, concurrency=1)
    with pytest.raises(LLMUnavailable) as raised:
        list(ex.extract([request()]))
    assert "cannot reach the LLM endpoint" in str(raised.value) and "Connection refused" in str(raised.value)
    assert len(sleeps) == 3


def test_a_closed_local_port_raises_llm_unavailable():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends
    client = make_client(api_key=API_KEY, base_url=f"http://127.0.0.1:{port}/v1",
                         http_client=httpx2.Client(trust_env=False))
    ex = LLMExtractor(client, "m", clock, None, max_retries=1, sleep=lambda _s: None)
    with pytest.raises(LLMUnavailable, match="cannot reach"):
        list(ex.extract([request()]))


def test_make_client_needs_a_key_or_a_base_url(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY"):
        make_client()
    local = make_client(base_url="http://127.0.0.1:11434/v1")
    assert local.api_key == NO_KEY and local.max_retries == 0
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    env = make_client()
    assert env.api_key == "from-env" and str(env.base_url).startswith("http://127.0.0.1:1/v1")


def test_importing_the_extractor_does_not_import_openai():
    code = "import sys, memctl.extract.llm, memctl.extract.prompt; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- end to end: a small OpenAI-compatible server on 127.0.0.1 -----------------------------


EPISODES = [
    ("2023-02-10T09:15:00.000000Z", "Alice lives in Oslo since 20 June 2022. Alice uses Neovim."),
    ("2023-05-01T18:00:00.000000Z", "Billing uses Postgres since 3 March 2021."),
    ("2023-07-14T08:30:00.000000Z", "Bob works as Engineer. Bob uses Rust."),
    ("2023-11-30T23:59:59.000000Z", "Alice lives in Bergen."),
    ("2024-01-02T12:00:00.000000Z", "Carol uses Emacs since 1 January 2020. Carol lives in Paris."),
    ("2024-06-18T07:45:00.000000Z", "Dave works as Designer since 12 April 2019."),
]


def test_end_to_end_against_a_local_openai_compatible_server(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    requests = [Request(f"ep_{n}", text, ref) for n, (ref, text) in enumerate(EPISODES)]

    with FakeOpenAIServer(today=NOW) as server:
        def extract(model: str) -> dict[str, Result]:
            client = make_client(api_key=API_KEY, base_url=server.base_url, timeout=10)
            ex = LLMExtractor(client, model, clock, DictCache(), concurrency=3, sleep=lambda _s: None)
            assert ex.name == f"llm:{model}"
            return run(ex, *requests)

        normal = extract("fake-normal")
        adversarial = extract("fake-adversarial")

        with pytest.raises(LLMUnavailable, match="rejected the API key"):
            bad = LLMExtractor(make_client(api_key="wrong", base_url=server.base_url), "fake-normal", clock, None)
            list(bad.extract(requests))

    assert server.calls == 2 * len(EPISODES)
    for req in requests:
        assert normal[req.episode_id].error is None and normal[req.episode_id].calls == 1
        assert normal[req.episode_id].input_tokens > 0

    honest = {(a.subject, a.object): a for r in normal.values() for a in r.assertions}
    assert len(honest) == 9
    oslo = honest[("Alice", "Oslo")]
    assert (oslo.valid_at, oslo.valid_at_evidence, oslo.valid_at_precision, oslo.date_span) == (
        "2022-06-20T00:00:00.000000Z", "text", "day", "since 20 June 2022")
    assert (oslo.predicate, oslo.cardinality) == ("lives_in", "one")
    bergen = honest[("Alice", "Bergen")]
    assert (bergen.valid_at, bergen.valid_at_evidence, bergen.date_span) == ("2023-11-30T23:59:59.000000Z", "reference", None)
    assert honest[("Bob", "Rust")].cardinality == "many"

    # The adversarial model's invented "today 00:00" dates are guarded before anything
    # else: a lie over a stated date is read back from its span, one over an undated fact
    # becomes the episode's time, exactly what the honest model said, and no call is spent.
    lies = 0
    for req in requests:
        result = adversarial[req.episode_id]
        assert result.error is None and result.calls == 1 and result.dropped == []
        lies += result.guard_changes
        for assertion in result.assertions:
            assert assertion.extracted_at == times.to_storage(NOW)
            assert assertion.extractor == "llm:fake-adversarial"
            truth = honest[(assertion.subject, assertion.object)]
            assert assertion._replace(extractor=truth.extractor) == truth
    assert lies == (len(honest) + 1) // 2  # every other date answered, counted from the first
