"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

Model "fake-normal" answers what the episode's sentences say; "fake-adversarial" answers
today at midnight for every other date, as the 1,384-edge report that the design brief cites found;
"fake-down" answers every call with 503.
"""

from __future__ import annotations

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


_SENTENCE = re.compile(
    r"(?P<s>[A-Z]\w+) (?P<p>uses|lives in|works as) (?P<o>[A-Z]\w+)(?P<span> since (?P<d>\d{1,2} [A-Z][a-z]+ \d{4}))?"
)
PREDICATES = {"uses": ("uses", "many"), "lives in": ("lives_in", "one"), "works as": ("works_as", "one")}


class FakeOpenAIServer:
    """POST /v1/chat/completions, OpenAI-compatible enough for the ``openai`` client.

    Model "fake-normal" extracts "<Subject> uses|lives in|works as <Object> [since D Month
    YYYY]" sentences from the episode, dating them from the text or REFERENCE_TIME.
    Model "fake-adversarial" does the same but answers ``today`` 00:00:00Z, claiming
    evidence "text", for every other valid_at it reports (counted across all requests),
    as the 1,384-edge report that the design brief cites found. ``latency`` (seconds) is for benchmarks.
    """

    def __init__(self, today: datetime, api_key: str = API_KEY, latency: float = 0.0):
        self.today_midnight = today.strftime("%Y-%m-%dT00:00:00Z")
        self.api_key = api_key
        self.latency = latency
        self.calls = 0
        self.dates_answered = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                if self.path != "/v1/chat/completions":
                    return self.answer(404, {"error": {"message": f"no route {self.path}"}})
                if self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    return self.answer(401, {"error": {"message": "Incorrect API key provided"}})
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                format_ = body.get("response_format", {})
                if format_.get("type") != "json_schema" or format_["json_schema"].get("strict") is not True:
                    return self.answer(400, {"error": {"message": "expected a strict json_schema"}})
                with server.lock:
                    server.calls += 1
                if server.latency:
                    time.sleep(server.latency)
                if body["model"] == "fake-down":  # overloaded for good: every call a 503
                    return self.answer(503, {"error": {"message": "The server is overloaded"}})
                content = server.model_reply(body["model"], body["messages"][-1]["content"])
                self.answer(200, completion(content, prompt_tokens=len(json.dumps(body)) // 4,
                                            completion_tokens=len(content) // 4))

            def answer(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

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
        for match in _SENTENCE.finditer(episode):
            predicate, cardinality = PREDICATES[match["p"]]
            if match["d"]:
                valid_at = datetime.strptime(match["d"], "%d %B %Y").strftime("%Y-%m-%d")
                evidence, precision, span = "text", "day", match["span"].strip()
            else:
                valid_at, evidence, precision, span = reference, "reference", "instant", None
            if model == "fake-adversarial":
                with self.lock:
                    lie = self.dates_answered % 2 == 0
                    self.dates_answered += 1
                if lie:
                    valid_at, evidence, precision = self.today_midnight, "text", "instant"
            assertions.append({
                "subject": match["s"], "predicate": predicate, "object": match["o"], "fact": match[0] + ".",
                "cardinality": cardinality, "valid_at": valid_at, "valid_at_evidence": evidence,
                "valid_at_precision": precision, "invalid_at": None, "invalid_at_evidence": None,
                "invalid_at_precision": None, "date_span": span,
            })
        entities = [{"name": n, "type": "thing"} for a in assertions for n in (a["subject"], a["object"])]
        return json.dumps({"entities": entities, "assertions": assertions})
