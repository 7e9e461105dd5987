"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

Model "fake-normal" answers what the episode's sentences say; "fake-adversarial" answers
today at midnight for every other date, as the 1,384-edge report that the design brief
cites found; "fake-seed" lies as that report's counts say (``SEED_LIES``); "fake-down"
answers every call with 503. The server can also play an older local server: one that
refuses the strict ``json_schema`` response format, lists its models, wraps its replies
in a reasoning block or a code fence, or is slow.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API_KEY = "test-key"


def completion(content: str | None, prompt_tokens: int = 120, completion_tokens: int = 30) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def episode_section(user_content: str) -> str:
    match = re.search(r"<episode>\n(.*)\n</episode>\Z", user_content, re.DOTALL)
    assert match, user_content
    return match.group(1)


# --- the request ---------------------------------------------------------------------------

# A date as the sentences below write it: a day, a month, a quarter or a year.
_DATE = r"\d{1,2} [A-Z][a-z]+ \d{4}|[A-Z][a-z]+ \d{4}|Q[1-4] \d{4}|(?:early |late |mid-)?\d{4}"
_SENTENCE = re.compile(
    rf"(?P<s>[A-Z]\w+) (?P<p>uses|lives in|works as) (?P<o>[A-Z]\w+)"
    rf"(?P<span>(?: (?:since|from) (?P<start>{_DATE}))?(?: until (?P<end>{_DATE}))?)"
)
PREDICATES = {"uses": ("uses", "many"), "lives in": ("lives_in", "one"), "works as": ("works_as", "one")}
# The seed's report: 771 of 1,384 starts (56%) and 100 ends (7%) at "today 00:00".
SEED_LIES = {"start": 0.56, "end": 0.07}


def read_date(words: str) -> tuple[str, str]:
    """(first day, precision) of a date as ``_DATE`` writes it, as an honest model gives it."""
    year = re.search(r"\d{4}$", words)[0]
    if re.fullmatch(r"\d{1,2} [A-Z][a-z]+ \d{4}", words):
        return datetime.strptime(words, "%d %B %Y").strftime("%Y-%m-%d"), "day"
    if words.startswith("Q"):
        return f"{year}-{3 * int(words[1]) - 2:02d}-01", "quarter"
    if re.fullmatch(r"[A-Z][a-z]+ \d{4}", words):
        return datetime.strptime(words, "%B %Y").strftime("%Y-%m-01"), "month"
    return f"{year}-01-01", "year"


def _chance(*key: object) -> float:
    """A fixed number in [0, 1) for ``key``: the scripted model lies the same way every run."""
    digest = hashlib.sha256("\x1f".join(map(str, key)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class FakeOpenAIServer:
    """POST /v1/chat/completions and GET /v1/models, OpenAI-compatible enough for the ``openai`` client.

    Model "fake-normal" extracts "<Subject> uses|lives in|works as <Object> [since|from
    DATE] [until DATE]" sentences from the episode, dating them from the text or
    REFERENCE_TIME. Model "fake-adversarial" does the same but answers ``today``
    00:00:00Z, claiming evidence "text", for every other valid_at it reports (counted
    across all requests). Model "fake-seed" answers today's midnight for a start with
    the chance ``SEED_LIES["start"]`` and for an end (there is one or not) with
    ``SEED_LIES["end"]``, fixed per episode and sentence; like the models of that report
    it keeps the words of the date (``date_span``) right.

    ``accepts``: the response formats served ("json_schema" strict, "json_object",
    "none"); another is refused with ``refusal_status`` and an error naming it, as older
    servers do. ``models``: what GET /v1/models lists (None: 404). ``wrap``: "think" or
    "fence" around every reply. ``latency`` (seconds) before each answer. What each call
    asked for is recorded: ``formats``, ``read_timeouts`` (the client's timeout header)
    and ``systems`` (the system messages).
    """

    def __init__(self, today: datetime, api_key: str = API_KEY, latency: float = 0.0, *,
                 accepts: tuple[str, ...] = ("json_schema",), refusal_status: int = 400,
                 models: list[str] | None = None, wrap: str | None = None):
        self.today_midnight = today.strftime("%Y-%m-%dT00:00:00Z")
        self.api_key = api_key
        self.latency = latency
        self.accepts = accepts
        self.refusal_status = refusal_status
        self.models = models
        self.wrap = wrap
        self.calls = 0
        self.summary_calls = 0  # summary requests (memctl.summarize), not counted in calls
        self.summary_requests: list[str] = []
        self.summary_extra = ""  # said at the end of every summary (a test plants a secret there)
        self.bodies: list[bytes] = []  # every request body as it came over the wire
        self.dates_answered = 0
        # what "fake-seed" said: starts and ends reported, and how many of each it lied about
        self.seed = {"assertions": 0, "starts": 0, "start_lies": 0, "end_lies": 0, "both_lies": 0}
        self.formats: list[str] = []
        self.read_timeouts: list[str | None] = []
        self.systems: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def authorised(self) -> bool:
                if self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self.answer(401, {"error": {"message": "Incorrect API key provided"}})
                    return False
                return True

            def do_GET(self):
                if self.path != "/v1/models" or server.models is None:
                    return self.answer(404, {"error": {"message": f"no route {self.path}"}})
                if self.authorised():
                    self.answer(200, {"object": "list", "data": [
                        {"id": name, "object": "model", "created": 1_700_000_000, "owned_by": "me"}
                        for name in server.models]})

            def do_POST(self):
                if self.path != "/v1/chat/completions":
                    return self.answer(404, {"error": {"message": f"no route {self.path}"}})
                if not self.authorised():
                    return
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                body = json.loads(raw)
                format_ = body.get("response_format") or {"type": "none"}
                if body["messages"][0]["content"].startswith("You summarise"):  # memctl.summarize's request
                    return self.summary(body)
                with server.lock:
                    server.bodies.append(raw)
                    server.formats.append(format_["type"])
                    server.read_timeouts.append(self.headers.get("x-stainless-read-timeout"))
                    server.systems.append(body["messages"][0]["content"])
                if format_["type"] not in server.accepts:
                    return self.answer(server.refusal_status, {"error": {
                        "message": f"response_format type must be one of {', '.join(server.accepts)}, "
                                   f"but got: {format_['type']}", "type": "invalid_request_error"}})
                if format_["type"] == "json_schema" and format_["json_schema"].get("strict") is not True:
                    return self.answer(400, {"error": {"message": "expected a strict json_schema"}})
                with server.lock:
                    server.calls += 1
                if server.latency:
                    time.sleep(server.latency)
                if body["model"] == "fake-down":  # overloaded for good: every call a 503
                    return self.answer(503, {"error": {"message": "The server is overloaded"}})
                content = server.model_reply(body["model"], body["messages"][1]["content"])
                if server.wrap == "think":
                    content = f"<think>\nThe user wants facts. Dates come from the text.\n</think>\n\n{content}"
                elif server.wrap == "fence":
                    content = f"Here is the JSON:\n```json\n{content}\n```"
                self.answer(200, completion(content, prompt_tokens=len(json.dumps(body)) // 4,
                                            completion_tokens=len(content) // 4))

            def summary(self, body):
                """A summary: the entity and its facts, as the request gives them (its
                ``summary_calls`` and ``summary_requests`` count and keep them)."""
                user = body["messages"][1]["content"]
                with server.lock:
                    server.summary_calls += 1
                    server.summary_requests.append(user)
                if body["model"] == "fake-down":
                    return self.answer(503, {"error": {"message": "The server is overloaded"}})
                if user.startswith("SESSION: "):  # a session's sentence: its first turn's first line
                    first = re.search(r"<turn time=\"[^\"]*\">\n(.*)$", user, re.MULTILINE).group(1)
                    return self.answer(200, completion(f"The session began with: {first} {server.summary_extra}"))
                entity = re.search(r"^ENTITY: (.*)$", user, re.MULTILINE).group(1)
                facts = re.search(r"^FACTS:\n(.*?)\n\nLATEST EPISODES:", user, re.DOTALL | re.MULTILINE).group(1)
                self.answer(200, completion(f"<think>about {entity}</think>In short, {facts} {server.summary_extra}"))

            def answer(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def model_reply(self, model: str, user: str) -> str:
        reference = re.search(r"^REFERENCE_TIME: (\S+)$", user, re.MULTILINE).group(1)
        episode = episode_section(user)
        assertions = []
        for index, match in enumerate(_SENTENCE.finditer(episode)):
            predicate, cardinality = PREDICATES[match["p"]]
            span = match["span"].strip() or None
            valid_at = valid_evidence = valid_precision = None
            invalid_at = invalid_evidence = invalid_precision = None
            if match["start"]:
                valid_at, valid_precision = read_date(match["start"])
                valid_evidence = "text"
            elif not match["end"]:
                valid_at, valid_evidence, valid_precision = reference, "reference", "instant"
            if match["end"]:
                invalid_at, invalid_precision = read_date(match["end"])
                invalid_evidence = "text"
            if model == "fake-adversarial" and valid_at is not None:
                with self.lock:
                    lie = self.dates_answered % 2 == 0
                    self.dates_answered += 1
                if lie:
                    valid_at, valid_evidence, valid_precision = self.today_midnight, "text", "instant"
            elif model == "fake-seed":
                lie_start = valid_at is not None and _chance(episode, index, "start") < SEED_LIES["start"]
                lie_end = _chance(episode, index, "end") < SEED_LIES["end"]
                if lie_start:
                    valid_at, valid_evidence, valid_precision = self.today_midnight, "text", "instant"
                if lie_end:
                    invalid_at, invalid_evidence, invalid_precision = self.today_midnight, "text", "instant"
                with self.lock:
                    for counted, value in (("assertions", True), ("starts", valid_at is not None),
                                           ("start_lies", lie_start), ("end_lies", lie_end),
                                           ("both_lies", lie_start and lie_end)):
                        self.seed[counted] += value
            assertions.append({
                "subject": match["s"], "predicate": predicate, "object": match["o"], "fact": match[0] + ".",
                "cardinality": cardinality, "valid_at": valid_at, "valid_at_evidence": valid_evidence,
                "valid_at_precision": valid_precision, "invalid_at": invalid_at,
                "invalid_at_evidence": invalid_evidence, "invalid_at_precision": invalid_precision,
                "date_span": span,
            })
        entities = [{"name": n, "type": "thing"} for a in assertions for n in (a["subject"], a["object"])]
        return json.dumps({"entities": entities, "assertions": assertions})


# --- for tests that run the command line against the server --------------------------------


def point_at(monkeypatch, server: FakeOpenAIServer, key: str | None = API_KEY) -> None:
    """The environment of a user whose OPENAI_BASE_URL is ``server`` (and no proxy in the way)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "MEMCTL_MODEL",
                 "MEMCTL_LLM_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    if key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", key)


def chat_file(path, turns: list[tuple[str, str]]):
    """A generic chat JSONL file: each (time, text) a user turn, answered "Noted."."""
    lines = []
    for when, text in turns:
        lines += [{"role": "user", "content": text, "timestamp": when},
                  {"role": "assistant", "content": "Noted.", "timestamp": when}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
