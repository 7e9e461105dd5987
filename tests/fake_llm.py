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
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

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
                 models: list[str] | None = None, wrap: str | None = None,
                 count_tokens: Callable[[dict], int] | None = None):
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
        # The Batch API (``BatchAPI``): files and batches as OpenAI keeps them; every request
        # counted by route; the tokens of a request, as the server counts them.
        self.batch_api = BatchAPI(self)
        self.count_tokens = count_tokens or (lambda body: len(json.dumps(body)) // 4)
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
                if self.path.startswith(("/v1/files", "/v1/batches")):
                    return self.batch_route("GET", b"")
                if self.path != "/v1/models" or server.models is None:
                    return self.answer(404, {"error": {"message": f"no route {self.path}"}})
                if self.authorised():
                    self.answer(200, {"object": "list", "data": [
                        {"id": name, "object": "model", "created": 1_700_000_000, "owned_by": "me"}
                        for name in server.models]})

            def batch_route(self, method: str, raw: bytes):
                if not self.authorised():
                    return
                status, payload = server.batch_api.route(method, self.path, raw, self.headers.get("Content-Type", ""))
                if isinstance(payload, bytes):
                    self.send_response(status)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                else:
                    self.answer(status, payload)

            def do_POST(self):
                if self.path.startswith(("/v1/files", "/v1/batches")):
                    return self.batch_route("POST", self.rfile.read(int(self.headers["Content-Length"])))
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
                self.answer(*server.chat(body))

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

    def chat(self, body: dict, created: int = 1_700_000_000) -> tuple[int, dict]:
        """(status, payload) of a chat completion, live or in a batch."""
        if body["model"] == "fake-down":  # overloaded for good: every call a 503
            return 503, {"error": {"message": "The server is overloaded"}}
        content = self.model_reply(body["model"], body["messages"][1]["content"], corrected=len(body["messages"]) > 2)
        if self.wrap == "think":
            content = f"<think>\nThe user wants facts. Dates come from the text.\n</think>\n\n{content}"
        elif self.wrap == "fence":
            content = f"Here is the JSON:\n```json\n{content}\n```"
        answer = completion(content, prompt_tokens=self.count_tokens(body), completion_tokens=len(content) // 4)
        answer["created"] = created
        return 200, answer

    def model_reply(self, model: str, user: str, *, corrected: bool = False) -> str:
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
            if model == "fake-sloppy" and not corrected and valid_evidence == "text":
                valid_evidence = None  # says a written date without saying whence, until told what is wrong
            assertions.append({
                "subject": match["s"], "predicate": predicate, "object": match["o"], "fact": match[0] + ".",
                "cardinality": cardinality, "valid_at": valid_at, "valid_at_evidence": valid_evidence,
                "valid_at_precision": valid_precision, "invalid_at": invalid_at,
                "invalid_at_evidence": invalid_evidence, "invalid_at_precision": invalid_precision,
                "date_span": span,
            })
        entities = [{"name": n, "type": "thing"} for a in assertions for n in (a["subject"], a["object"])]
        return json.dumps({"entities": entities, "assertions": assertions})


# --- the Batch API ---------------------------------------------------------------------------


class BatchAPI:
    """/v1/files and /v1/batches as OpenAI serves them, over the server's chat answers.

    A batch stays ``in_progress`` until ``finish`` runs it (``finish_on_poll``: when it is
    retrieved that many times). ``finish`` can expire it after some requests, fail it whole, answer
    some requests with an error, or cut its output file short. ``fail_next`` makes the
    next request of a route (``"POST /v1/batches"``) answer an error status once.
    """

    def __init__(self, server: FakeOpenAIServer):
        self.server = server
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.requests: Counter[str] = Counter()  # "POST /v1/files": how many
        self.finish_on_poll: int | None = None
        self.polls: Counter[str] = Counter()
        self.fail_next: dict[str, int] = {}
        self.replied_at = 1_700_000_000  # the completions' "created", seconds since the epoch
        self.enabled = True  # False: a local server's, which has no Batch API (404)
        self.lock = threading.Lock()

    @property
    def http_requests(self) -> int:
        return sum(self.requests.values())

    def route(self, method: str, path: str, raw: bytes, content_type: str) -> tuple[int, dict | bytes]:
        split = urlsplit(path)
        parts = split.path.split("/")[2:]  # ["files", id, "content"], ["batches", id, "cancel"]
        name = "/".join(p if i == 0 or p in ("content", "cancel") else "{id}" for i, p in enumerate(parts))
        with self.lock:
            self.requests[f"{method} /v1/{name}"] += 1
            failing = self.fail_next.pop(f"{method} /v1/{name}", None)
        if failing is not None:
            return failing, {"error": {"message": "injected failure", "type": "server_error"}}
        if not self.enabled:
            return 404, {"error": {"message": f"no route {method} {path}"}}
        if method == "POST" and name == "files":
            return 200, self._upload(raw, content_type)
        if method == "GET" and name == "files":
            return 200, _listed(list(self.files.values()), strip="content")
        if method == "GET" and name == "files/{id}/content":
            found = self.files.get(parts[1])
            return (200, found["content"]) if found else (404, {"error": {"message": "No such file"}})
        if method == "POST" and name == "batches":
            return self._create(json.loads(raw))
        if method == "GET" and name == "batches":
            return 200, _listed(sorted(self.batches.values(), key=lambda b: -b["created_at"]))
        if method == "GET" and name == "batches/{id}":
            batch = self.batches.get(parts[1])
            if batch is None:
                return 404, {"error": {"message": "No such batch"}}
            self.polls[batch["id"]] += 1
            if batch["status"] == "in_progress" and self.polls[batch["id"]] == self.finish_on_poll:
                self.finish(batch["id"])
            return 200, batch
        if method == "POST" and name == "batches/{id}/cancel":
            batch = self.batches.get(parts[1])
            if batch is None:
                return 404, {"error": {"message": "No such batch"}}
            if batch["status"] not in ("validating", "in_progress"):
                return 400, {"error": {"message": f"Cannot cancel a batch with status '{batch['status']}'."}}
            batch["status"] = "cancelled"
            return 200, batch
        return 404, {"error": {"message": f"no route {method} {path}"}}

    def _upload(self, raw: bytes, content_type: str) -> dict:
        message = BytesParser().parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
        fields = {part.get_param("name", header="content-disposition"): part for part in message.get_payload()}
        file_id = f"file-{len(self.files) + 1}"
        content = fields["file"].get_payload(decode=True)
        self.files[file_id] = {"id": file_id, "object": "file", "bytes": len(content), "created_at": 1_700_000_000,
                               "filename": fields["file"].get_filename(), "status": "processed",
                               "purpose": fields["purpose"].get_payload(), "content": content}
        return {k: v for k, v in self.files[file_id].items() if k != "content"}

    def _create(self, body: dict) -> tuple[int, dict]:
        if body["input_file_id"] not in self.files:
            return 400, {"error": {"message": "No such file"}}
        batch_id = f"batch_{len(self.batches) + 1}"
        lines = self.files[body["input_file_id"]]["content"].splitlines()
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": body["endpoint"], "errors": None,
            "input_file_id": body["input_file_id"], "completion_window": body["completion_window"],
            "status": "in_progress", "output_file_id": None, "error_file_id": None,
            "created_at": 1_700_000_000 + len(self.batches), "metadata": body.get("metadata"),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
        return 200, self.batches[batch_id]

    def finish(self, batch_id: str | None = None, *, expire_after: int | None = None, fail: bool = False,
               errors: dict[str, int] | None = None, truncate: bool = False) -> None:
        """Run a batch (the only one in progress, unless named) to its end."""
        if batch_id is None:
            [batch_id] = [b["id"] for b in self.batches.values() if b["status"] == "in_progress"]
        batch = self.batches[batch_id]
        if fail:
            batch.update(status="failed", errors={"object": "list", "data": [
                {"code": "invalid_request", "message": "the input file is not valid", "line": 1}]})
            return
        outputs, failures = [], []
        for number, raw in enumerate(self.files[batch["input_file_id"]]["content"].splitlines()):
            if expire_after is not None and number >= expire_after:
                break
            line = json.loads(raw)
            status = (errors or {}).get(line["custom_id"])
            if status is not None:
                failures.append({"id": f"req_{number}", "custom_id": line["custom_id"], "response": {
                    "status_code": status, "request_id": f"r{number}", "body": {"error": {
                        "message": "This model's maximum context length is exceeded", "type": "invalid_request_error"}}},
                    "error": None})
                continue
            status, payload = self.server.chat(line["body"], created=self.replied_at)
            with self.server.lock:
                self.server.calls += 1
            (outputs if status == 200 else failures).append({
                "id": f"req_{number}", "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": f"r{number}", "body": payload}, "error": None})
        batch["status"] = "expired" if expire_after is not None else "completed"
        batch["request_counts"].update(completed=len(outputs), failed=len(failures))
        for kind, rows in (("output_file_id", outputs), ("error_file_id", failures)):
            if rows:
                content = "".join(json.dumps(row) + "\n" for row in rows).encode()
                if truncate and kind == "output_file_id":
                    content = content[: len(content) - len(json.dumps(rows[-1])) // 2]
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = {"id": file_id, "object": "file", "bytes": len(content),
                                       "created_at": 1_700_000_000, "filename": f"{batch_id}_{kind}.jsonl",
                                       "status": "processed", "purpose": "batch_output", "content": content}
                batch[kind] = file_id


def _listed(items: list[dict], strip: str | None = None) -> dict:
    data = [{k: v for k, v in item.items() if k != strip} for item in items]
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": False}


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
