"""Endpoints as people run them (issue 12): older local servers, reasoning models, slow
models, a server with one model, and a key in the environment where no model is needed.

Each against a local fake server (tests/fake_llm.py) through the real ``openai`` client.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memctl.extract import Request
from memctl.extract.llm import NO_KEY, LLMExtractor, make_client, unwrap
from memctl.extract.prompt import RESPONSE_SCHEMA
from tests.conftest import made_nothing, open_store
from tests.fake_llm import API_KEY, FakeOpenAIServer, chat_file, point_at

NOW = datetime(2026, 1, 15, 12, tzinfo=UTC)
TURNS = [
    ("2023-02-10T09:15:00Z", "Alice lives in Oslo since 20 June 2022. Alice uses Neovim."),
    ("2023-05-01T18:00:00Z", "Billing uses Postgres since October 2021."),
    ("2023-07-14T08:30:00Z", "Bob works as Engineer. Bob uses Rust."),
]
REQUESTS = [Request(f"ep_{n}", text, f"{when[:-1]}.000000Z") for n, (when, text) in enumerate(TURNS)]


def extractor(server: FakeOpenAIServer, *, model: str | None = "fake-normal", concurrency: int = 1,
              timeout: float = 10, max_retries: int = 0, sleeps: list | None = None) -> LLMExtractor:
    client = make_client(api_key=API_KEY, base_url=server.base_url, timeout=timeout)
    return LLMExtractor(client, model, lambda: NOW, None, concurrency=concurrency, max_retries=max_retries,
                        sleep=(sleeps.append if sleeps is not None else lambda _s: None))


def extract_all(ex: LLMExtractor, requests=REQUESTS) -> dict:
    return {request.episode_id: result for request, result in ex.extract(requests)}


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


# --- a server that refuses the strict schema -----------------------------------------------


@pytest.mark.parametrize("status", [400, 422, 500])  # llama.cpp, FastAPI-style servers, llama-cpp-python
def test_a_refused_json_schema_falls_back_to_json_object_once_per_run(status):
    sleeps: list[float] = []
    with FakeOpenAIServer(NOW, accepts=("json_object", "none"), refusal_status=status) as server:
        results = extract_all(extractor(server, max_retries=3, sleeps=sleeps))
    assert all(r.error is None and r.assertions for r in results.values())
    # learnt from the first refusal: every later call goes straight to json_object
    assert server.formats == ["json_schema"] + ["json_object"] * len(REQUESTS)
    assert sleeps == []  # a refused format is no transient failure: no backoff, no retrying it
    schema = json.dumps(RESPONSE_SCHEMA, separators=(",", ":"))
    refused, *asked = server.systems
    assert schema not in refused and all(schema in system for system in asked)
    assert sum(r.calls for r in results.values()) == len(REQUESTS) + 1  # the refused call is counted too


def test_concurrent_calls_learn_the_refusal_once_between_them():
    with FakeOpenAIServer(NOW, accepts=("json_object",)) as server:
        many = [Request(f"ep_{n}", f"Service{n} uses Postgres.", "2024-01-01T00:00:00.000000Z") for n in range(12)]
        results = extract_all(extractor(server, concurrency=4), many)
    assert all(r.error is None and len(r.assertions) == 1 for r in results.values())
    refusals = server.formats.count("json_schema")
    assert 1 <= refusals <= 4  # at most the calls already in flight when the first refusal came back
    assert server.formats.count("json_object") == len(many)  # each episode answered once, in the format taken


def test_a_server_that_takes_no_response_format_is_asked_with_none():
    with FakeOpenAIServer(NOW, accepts=("none",)) as server:
        results = extract_all(extractor(server))
    assert all(r.error is None for r in results.values())
    assert server.formats == ["json_schema", "json_object"] + ["none"] * len(REQUESTS)


def test_a_server_that_refuses_even_no_format_fails_the_episode_once_tried_without():
    """Every format dropped, the last call (none asked for) fails like any bad request.
    (A 400 that does not name the format never drops one: test_extract_llm's bad request.)"""
    with FakeOpenAIServer(NOW, accepts=()) as server:
        result = extract_all(extractor(server), REQUESTS[:1])["ep_0"]
    assert server.formats == ["json_schema", "json_object", "none"]
    assert result.error and "HTTP 400" in result.error


# --- replies with something around the JSON ------------------------------------------------


@pytest.mark.parametrize("wrap", ["think", "fence"])
def test_a_reply_in_a_reasoning_block_or_a_code_fence_is_unwrapped(wrap):
    with FakeOpenAIServer(NOW, wrap=wrap) as server:
        results = extract_all(extractor(server))
    assert all(r.error is None and r.calls == 1 for r in results.values())
    oslo = next(a for a in results["ep_0"].assertions if a.object == "Oslo")
    assert (oslo.valid_at, oslo.valid_at_precision) == ("2022-06-20T00:00:00.000000Z", "day")


@pytest.mark.parametrize("reply", [
    '<think>\nsome "reasoning" {with braces}\n</think>\n{"assertions": []}',
    'reasoning whose opening tag was in the prompt</think>{"assertions": []}',
    '```json\n{"assertions": []}\n```',
    '```\n{"assertions": []}\n```',
    'Sure! Here it is:\n{"assertions": []}\nHope this helps.',
    '  {"assertions": []}  ',
])
def test_unwrap_finds_the_json(reply):
    assert json.loads(unwrap(reply)) == {"assertions": []}


# --- slow models ---------------------------------------------------------------------------


def test_a_call_slower_than_the_timeout_is_tried_again_then_fails_the_episode():
    with FakeOpenAIServer(NOW, latency=0.5) as server:
        slow = extract_all(extractor(server, timeout=0.1, max_retries=1), REQUESTS[:1])["ep_0"]
        patient = extract_all(extractor(server, timeout=5), REQUESTS[:1])["ep_0"]
    assert slow.error and "timed out 2 times" in slow.error and slow.calls == 2
    assert patient.error is None and patient.assertions


def test_timeout_bounds_the_whole_call_not_each_read():
    """Issue 31, item 2: a server that sends its reply a byte at a time kept an ingest with
    a 5 s timeout going for 400 s, as each read came within the timeout. The timeout is a
    deadline for the whole call, its retries counted."""
    import time

    import httpx2

    from tests.fake_llm import completion

    body = json.dumps(completion('{"entities": [], "assertions": []}')).encode()

    def trickle(request: httpx2.Request) -> httpx2.Response:
        def drip():
            for byte in body:  # a byte every 20 ms: the whole reply in several seconds, no read slower
                time.sleep(0.02)
                yield bytes([byte])

        return httpx2.Response(200, headers={"content-type": "application/json"}, content=drip())

    client = make_client(api_key=API_KEY, base_url="http://llm.test/v1",
                         http_client=httpx2.Client(transport=httpx2.MockTransport(trickle)))
    result = extract_all(LLMExtractor(client, "trickle", lambda: NOW, timeout=1.0, max_retries=2), REQUESTS[:1])["ep_0"]
    assert result.error and "still coming after the 1 s a call may take" in result.error
    # A summary's call, through the same endpoint, is bounded alike.
    from memctl.extract.llm import CallFailed
    from memctl.summarize import ModelSummarizer

    summarizer = ModelSummarizer(LLMExtractor(client, "trickle", lambda: NOW, timeout=1.0, max_retries=2))
    with pytest.raises(CallFailed, match="still coming after the 1 s a call may take"):
        summarizer.write("billing", "billing uses Postgres", [])


@pytest.mark.parametrize(("flag", "variable", "sent"), [
    ([], None, "120.0"), (["--timeout", "3"], None, "3.0"), ([], "7.5", "7.5"), (["--timeout", "2"], "7.5", "2.0")])
def test_timeout_reaches_the_client_of_every_command_that_calls_a_model(cli, tmp_path, monkeypatch, flag, variable,
                                                                      sent):
    with FakeOpenAIServer(NOW) as server:
        point_at(monkeypatch, server)
        if variable is not None:
            monkeypatch.setenv("MEMCTL_LLM_TIMEOUT", variable)
        model = ["--extractor", "llm", "--model", "fake-normal", *flag]
        assert cli("ingest", chat_file(tmp_path / "chat.jsonl", TURNS[:1]), *model).code == 0
        assert cli("add", "Carol uses Emacs.", "--reference-time", "2024-01-01", *model).code == 0
        episode = cli("episodes", "--json").json()[0]["id"]
        assert cli("retry", episode, *model[:4], "--model", "other-model", *flag).code == 0
    assert len(server.read_timeouts) == 3 and set(server.read_timeouts) == {sent}


# --- a server with one model ---------------------------------------------------------------


def test_without_a_model_the_servers_only_model_is_used(cli, tmp_path, monkeypatch):
    with FakeOpenAIServer(NOW, api_key=NO_KEY, models=["qwen3:8b"]) as server:
        point_at(monkeypatch, server, key=None)  # a local server: no key either
        run = cli("ingest", chat_file(tmp_path / "chat.jsonl", TURNS), "--json")
    assert run.code == 0, run.err
    report = run.json()
    assert report["extractor"] == "llm:qwen3:8b" and report["extraction_calls"] == len(TURNS)
    assert report["assertions"] == 5
    operation = cli("operations", "--json").json()[0]
    assert operation["command"]["extractor"] == "llm:qwen3:8b"


@pytest.mark.parametrize(("models", "said"), [
    ([], "lists no models"),
    (["llama3", "qwen3:8b"], "lists 2 models (llama3, qwen3:8b)"),
    (None, "does not list its models"),
])
def test_no_model_to_choose_keeps_the_episodes_pending_says_so_once_and_exits_1(cli, db_path, tmp_path, monkeypatch,
                                                                              models, said):
    with FakeOpenAIServer(NOW, models=models) as server:
        point_at(monkeypatch, server)
        first = chat_file(tmp_path / "a.jsonl", TURNS[:2])
        second = chat_file(tmp_path / "b.jsonl", TURNS[2:])
        run = cli("ingest", first, second)
        assert server.calls == 0
        # a retry has nothing to keep: naming no model is bad usage there
        episode = cli("episodes", "--json").json()[0]["id"]
        retried = cli("retry", episode)
    assert run.code == 1 and run.err.count(said) == 1 and "--model" in run.err
    assert "3 episode(s) wait for the model" in run.err
    with open_store(db_path) as conn:
        assert conn.execute("SELECT extraction, count(*) FROM episodes GROUP BY 1").fetchall() == [("pending", 3)]
    assert retried.code == 2 and said in retried.err and "Traceback" not in retried.err


def test_openais_own_endpoint_needs_a_model_named(cli, db_path, tmp_path, monkeypatch):
    for name in ("OPENAI_BASE_URL", "MEMCTL_MODEL", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")  # no request is made: it needs a model first
    run = cli("ingest", chat_file(tmp_path / "chat.jsonl", TURNS))
    assert run.code == 1 and "no model named: pass --model or set MEMCTL_MODEL" in run.err
    with open_store(db_path) as conn:
        assert conn.execute("SELECT DISTINCT extraction FROM episodes").fetchall() == [("pending",)]


# --- what needs no model works without one ---------------------------------------------------


FACTS = "fixtures/team.facts.jsonl"


@pytest.mark.parametrize("extractor_choice", ["auto", "llm"])
def test_a_key_without_a_model_does_not_stop_a_structured_import(cli, monkeypatch, extractor_choice):
    for name in ("OPENAI_BASE_URL", "MEMCTL_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-exported-for-something-else")
    run = cli("ingest", FACTS, "--extractor", extractor_choice, "--json")
    assert run.code == 0 and run.err == ""
    assert run.json()["assertions"] > 0 and run.json()["extraction_calls"] == 0
    assert cli("recall", "billing database", "--json").code == 0
    assert cli("retry", "--failed", "--json").code == 0  # nothing pending: nothing to call a model for
    assert cli("add", "x", "--facts", '[{"subject": "a", "predicate": "uses", "object": "b"}]').code == 0


def test_an_llm_with_nothing_configured_does_not_stop_a_structured_import(cli, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MEMCTL_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert cli("ingest", FACTS, "--extractor", "llm").code == 0


@pytest.mark.parametrize(("arguments", "said"), [
    (["ingest", FACTS, "--extractor", "gpt"], "--extractor must be auto, llm or rules"),
    (["ingest", FACTS, "--timeout", "0"], "--timeout must be a positive number of seconds"),
    (["ingest", FACTS, "--timeout", "-5"], "--timeout must be a positive number of seconds"),
    (["ingest", FACTS, "--concurrency", "0"], "--concurrency must be at least 1"),
    (["add", "Billing uses Postgres.", "--timeout", "0"], "--timeout must be a positive"),
    (["add", "Billing uses Postgres.", "--extractor", "gpt"], "--extractor must be"),
    (["retry", "--failed", "--timeout", "0"], "--timeout must be a positive"),
    (["mcp", "--extractor", "gpt"], "--extractor must be"),
])
def test_a_bad_extractor_option_is_refused_before_the_database_is_made(cli, db_path, arguments, said):
    run = cli(*arguments)
    assert run.code == 2 and said in run.err and run.err.count("\n") == 1
    assert made_nothing(db_path)


def test_a_bad_timeout_in_the_environment_is_refused_naming_it(cli, db_path, monkeypatch):
    monkeypatch.setenv("MEMCTL_LLM_TIMEOUT", "soon")
    run = cli("ingest", FACTS)
    assert run.code == 2 and "MEMCTL_LLM_TIMEOUT must be a number of seconds, got 'soon'" in run.err
    assert made_nothing(db_path)
