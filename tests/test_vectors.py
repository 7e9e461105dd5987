"""Recall by vectors (issue 10): embeddings made at ingest, kept by text, ranked inside the window.

The embeddings endpoint is a fake behind the real ``openai`` client (``httpx2.MockTransport``):
each word counts in one of 64 dimensions, by a hash of its concept, so "Postgres" and "DB"
are close and a question can find a text that shares none of its words. No network: backoff
sleeps are recorded, not slept.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest

from memctl import times
from memctl.embeddings import (
    LOCAL_WORDLLAMA,
    MIN_INPUT_CHARS,
    OpenAIEmbedder,
    WordLlamaEmbedder,
    configured_embedder,
    embed_new,
)
from memctl.errors import BadInput, LLMUnavailable
from memctl.extract.llm import Retries, make_client
from memctl.model import Assertion, Episode, content_hash
from memctl.recall import recall
from memctl.recall.query import parse, stop_words
from memctl.recall.rankers import DEFAULT_RANKERS
from memctl.recall.vectors import VectorRanker
from memctl.store import embeddings as vector_store
from memctl.store.search import Window
from tests.fake_llm import API_KEY

MODEL = "fake-embed"
DIMENSIONS = 64
CONCEPTS = {word: concept for concept, words in {
    "database": ("postgres", "mysql", "sqlite", "db", "database", "databases"),
    "editor": ("neovim", "emacs", "vim", "editor", "editors"),
    "city": ("oslo", "bergen", "paris", "city", "town"),
}.items() for word in words}

REPO = Path(__file__).resolve().parents[1]


def fake_vector(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        if word not in stop_words():
            concept = CONCEPTS.get(word, word)
            vector[int(hashlib.sha256(concept.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    return vector


def vectors(inputs: list[str]) -> httpx2.Response:
    return httpx2.Response(200, json={
        "object": "list", "model": MODEL,
        "data": [{"object": "embedding", "index": i, "embedding": fake_vector(text)} for i, text in enumerate(inputs)],
        "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
    })


def refusal(status: int, message: str, **headers: str) -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": message, "type": "error", "code": None}}, headers=headers)


class FakeEndpoint:
    """POST /v1/embeddings: checks the key and the model, records every input, and
    answers ``respond(call number, inputs)`` (fake vectors by default)."""

    def __init__(self, respond=lambda n, inputs: vectors(inputs)):
        self.respond = respond
        self.inputs: list[list[str]] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/embeddings"
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return refusal(401, "Incorrect API key provided")
        body = json.loads(request.content)
        if body["model"] != MODEL:
            return refusal(404, f"model {body['model']!r} not found")
        assert body["encoding_format"] == "float"
        with self.lock:
            self.inputs.append(body["input"])
            n = len(self.inputs)
        return self.respond(n, body["input"])

    @property
    def texts(self) -> list[str]:
        return [text for call in self.inputs for text in call]


def embedder(endpoint, *, sleeps: list[float] | None = None, key: str = API_KEY, model: str = MODEL,
             **kwargs) -> OpenAIEmbedder:
    client = make_client(api_key=key, base_url="http://embeddings.test/v1",
                         http_client=httpx2.Client(transport=httpx2.MockTransport(endpoint)))
    sleep = sleeps.append if sleeps is not None else (lambda _s: None)
    return OpenAIEmbedder(client, model, retries=Retries(max_retries=kwargs.pop("max_retries", 4), sleep=sleep),
                          **kwargs)


def said(position: int, text: str, when: str, *facts: tuple[str, str, str]) -> Episode:
    """An episode said at ``when``, with its facts (subject, predicate, object) valid from then."""
    at = times.to_storage(times.parse_instant(when, what="when").at)
    return Episode(source="notes", position=position, format="facts", content=text, content_hash=content_hash(text),
                   reference_time=at, reference_time_source="record",
                   assertions=[Assertion(subject=s, predicate=p, object=o, fact=f"{s} {p.replace('_', ' ')} {o}",
                                         valid_at=at, cardinality="one", extractor="facts") for s, p, o in facts])


STORY = [
    said(1, "We moved billing onto Postgres last week.", "2024-03-01T09:00:00Z", ("billing", "uses", "Postgres")),
    said(2, "Alice prefers Neovim for everything she writes.", "2024-03-02T09:00:00Z"),
    said(3, "The cat sleeps all afternoon in the garden.", "2024-03-03T09:00:00Z"),
]
QUESTION = "Which DB do we run?"  # shares no word with the Postgres episode, but its concept


def test_a_question_in_other_words_finds_the_episode_by_vectors_alone_and_fused(memory):
    memory.ingest_episodes(STORY)
    endpoint = FakeEndpoint()
    vectors_of = embedder(endpoint)
    assert embed_new(memory.db, vectors_of) == 4  # three episodes and one fact
    postgres = STORY[0].id
    now = memory.now()

    # No word of the question is in any text: the other rankers find nothing.
    assert recall(memory.db, QUESTION, now=now).results == []

    found = VectorRanker(vectors_of).rank(memory.db, parse(QUESTION), Window(as_of=now), 10)
    (fact_id,) = memory.db.execute("SELECT id FROM facts").fetchone()
    assert set(found) == {("episode", postgres), ("fact", fact_id)}  # nothing else shares a direction with it

    fused = recall(memory.db, QUESTION, now=now, rankers=(*DEFAULT_RANKERS, VectorRanker(vectors_of))).results
    (best,) = fused  # the fact took in the episode it came from
    assert best.kind == "fact" and best.object == "Postgres" and best.episodes == [postgres]
    episodes_only = recall(memory.db, QUESTION, now=now, kind="episode",
                           rankers=(*DEFAULT_RANKERS, VectorRanker(vectors_of))).results
    assert [hit.episode_id for hit in episodes_only] == [postgres]
    assert episodes_only[0].snippet.startswith("We moved billing")  # no word matched: the opening


def test_the_question_is_redacted_and_its_vector_cached(memory):
    memory.ingest_episodes(STORY)
    endpoint = FakeEndpoint()
    ranker = VectorRanker(embedder(endpoint))
    secret = "sk-" + "a1" * 15
    for _ in range(3):
        ranker.rank(memory.db, parse(f"which db takes the key {secret}"), Window(as_of=memory.now()), 5)
    (question,) = endpoint.inputs  # asked three times, embedded once
    assert question == ["which db takes the key [REDACTED:openai_key]"]


def test_the_window_applies_inside_the_ranker_before_its_limit(memory, clock):
    early = said(1, "billing runs on Postgres", "2024-01-01T00:00:00Z", ("billing", "runs_on", "Postgres"))
    # Nearer the question, and many, but said (and true) only later.
    later = [said(10 + n, f"db db db database {n}", f"2024-06-{n + 1:02d}T00:00:00Z", ("shop", "db", f"MySQL{n}"))
             for n in range(20)]
    memory.ingest_episodes([early, *later])
    vectors_of = embedder(FakeEndpoint())
    embed_new(memory.db, vectors_of)
    ranker = VectorRanker(vectors_of)
    question = parse("which db")

    assert ranker.rank(memory.db, question, Window(as_of=memory.now()), 1)[0][1] != early.id
    before = Window(as_of="2024-02-01T00:00:00.000000Z")
    assert ranker.rank(memory.db, question, before, 1) == [("episode", early.id)]
    assert {kind for kind, _ in ranker.rank(memory.db, question, before, 50)} == {"episode", "fact"}

    held = memory.now()
    clock.advance(days=1)
    memory.undo([early.id], apply=True)
    undone = Window(as_of="2024-02-01T00:00:00.000000Z", known_at=memory.now())
    assert ranker.rank(memory.db, question, undone, 1) == []  # undone before known_at: never returned
    assert ranker.rank(memory.db, question, Window(as_of="2024-02-01T00:00:00.000000Z", known_at=held), 1) == [
        ("episode", early.id)]  # ...but memctl held it then


def test_embed_new_is_incremental_and_a_text_is_embedded_once(memory, clock):
    memory.ingest_episodes(STORY)
    endpoint = FakeEndpoint()
    vectors_of = embedder(endpoint)
    assert embed_new(memory.db, vectors_of) == 4
    assert embed_new(memory.db, vectors_of) == 0
    assert len(endpoint.inputs) == 1

    # The same words in another file, and billing moving away and back: new versions of
    # the Postgres fact, whose text has its vector already. Only new texts cost a call.
    clock.advance(days=1)
    memory.ingest_episodes([
        replace(STORY[0], source="other", assertions=[]),
        said(4, "Billing is on MySQL now.", "2024-04-01T09:00:00Z", ("billing", "uses", "MySQL")),
        said(5, "Billing went back.", "2024-05-01T09:00:00Z", ("billing", "uses", "Postgres")),
    ])
    assert embed_new(memory.db, vectors_of) == 3
    assert sorted(endpoint.inputs[1]) == ["Billing is on MySQL now.", "Billing went back.", "billing uses MySQL"]
    assert memory.db.execute("SELECT count(*) FROM facts WHERE fact = 'billing uses Postgres' "
                             "AND expired_at IS NULL").fetchone()[0] == 2
    found = VectorRanker(vectors_of).rank(memory.db, parse("postgres"), Window(as_of=memory.now(), history=True), 50)
    assert sum(kind == "fact" for kind, _ in found) == 3  # Postgres twice, and MySQL, over all valid time
    assert embed_new(memory.db, vectors_of) == 0


def test_vectors_are_float32_by_text_and_model(memory):
    memory.ingest_episodes(STORY[:1])
    embed_new(memory.db, embedder(FakeEndpoint()))
    rows = memory.db.execute("SELECT text_hash, model, length(vector) FROM embeddings ORDER BY text_hash").fetchall()
    assert {row[0] for row in rows} == {STORY[0].content_hash, content_hash("billing uses Postgres")}
    assert {(row[1], row[2]) for row in rows} == {(MODEL, 4 * DIMENSIONS)}


def test_a_purge_deletes_the_vectors_of_what_it_erases(memory, clock):
    memory.ingest_episodes(STORY)
    vectors_of = embedder(FakeEndpoint())
    embed_new(memory.db, vectors_of)
    postgres = STORY[0]

    clock.advance(days=1)
    memory.undo([postgres.id], apply=True, purge=True)

    hashes = {row[0] for row in memory.db.execute("SELECT text_hash FROM embeddings")}
    assert hashes == {episode.content_hash for episode in STORY[1:]}
    assert memory.db.execute("SELECT count(*) FROM fact_text_hashes").fetchone()[0] == 0
    assert VectorRanker(vectors_of).rank(memory.db, parse(QUESTION), Window(as_of=memory.now()), 10) == []
    assert embed_new(memory.db, vectors_of) == 0


def test_a_rejected_key_an_unknown_model_and_no_endpoint_raise_llm_unavailable(memory):
    memory.ingest_episodes(STORY)
    sleeps: list[float] = []
    with pytest.raises(LLMUnavailable, match="embeddings endpoint .* rejected the API key") as rejected:
        embed_new(memory.db, embedder(FakeEndpoint(), key="wrong", sleeps=sleeps))
    assert "OPENAI_API_KEY" in str(rejected.value) and sleeps == []

    with pytest.raises(LLMUnavailable, match="--embeddings-model/MEMCTL_EMBEDDINGS_MODEL"):
        embed_new(memory.db, embedder(FakeEndpoint(), model="no-such-model"))

    def refuse(request):
        raise httpx2.ConnectError("[Errno 111] Connection refused")

    with pytest.raises(LLMUnavailable, match="cannot reach the embeddings endpoint"):
        embed_new(memory.db, embedder(refuse, sleeps=sleeps, max_retries=2))
    assert len(sleeps) == 2
    assert memory.db.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 0


def test_busy_and_failing_endpoints_are_retried_with_backoff(memory):
    memory.ingest_episodes(STORY)
    sleeps: list[float] = []
    busy = FakeEndpoint(lambda n, inputs: refusal(429, "slow down", **{"retry-after": "7"}) if n == 1 else vectors(inputs))
    assert embed_new(memory.db, embedder(busy, sleeps=sleeps)) == 4
    assert sleeps == [7.0] and len(busy.inputs) == 2

    down = FakeEndpoint(lambda n, inputs: refusal(503, "overloaded"))
    memory.ingest_episodes([said(9, "One more thing.", "2024-03-09T00:00:00Z")])
    with pytest.raises(LLMUnavailable, match="HTTP 503 3 times"):
        embed_new(memory.db, embedder(down, max_retries=2))


def test_a_refused_batch_is_split_and_a_text_too_long_is_sent_shorter(memory):
    limit = 1000
    long_text = "postgres " * 400  # 3,600 characters
    memory.ingest_episodes([*STORY, said(7, long_text, "2024-03-07T00:00:00Z")])
    picky = FakeEndpoint(lambda n, inputs: refusal(400, "input is too long") if any(len(t) > limit for t in inputs)
                         else vectors(inputs))
    assert embed_new(memory.db, embedder(picky)) == 5
    taken = [text for call in picky.inputs if all(len(text) <= limit for text in call) for text in call]
    assert len(taken) == 5 and long_text[:len(long_text) // 4] in taken  # halved twice, then taken
    assert memory.db.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 5

    stubborn = FakeEndpoint(lambda n, inputs: refusal(400, "this model does not embed"))
    memory.ingest_episodes([said(8, "x" * (MIN_INPUT_CHARS + 1), "2024-03-08T00:00:00Z")])
    with pytest.raises(LLMUnavailable, match="gave no vectors.*does not embed.*--embeddings-model"):
        embed_new(memory.db, embedder(stubborn))


def test_batches_are_at_most_the_batch_size(memory):
    memory.ingest_episodes([said(n, f"note number {n}", "2024-03-01T00:00:00Z") for n in range(10)])
    endpoint = FakeEndpoint()
    assert embed_new(memory.db, embedder(endpoint, batch=4)) == 10
    assert [len(call) for call in endpoint.inputs] == [4, 4, 2]


def test_without_configuration_there_is_no_embedder():
    assert configured_embedder(environ={}) is None
    assert configured_embedder(environ={"MEMCTL_EMBEDDINGS_MODEL": "  "}) is None
    env = {"MEMCTL_EMBEDDINGS_MODEL": "nomic-embed-text", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    named = configured_embedder(environ=env)
    assert isinstance(named, OpenAIEmbedder) and named.model == "nomic-embed-text"
    assert str(named.client.base_url).startswith("http://127.0.0.1:1/v1")
    assert configured_embedder("other-model", environ=env).model == "other-model"  # the option wins
    patient = configured_embedder(environ=env, retries=Retries(max_retries=1), timeout=5)
    assert patient.retries.max_retries == 1 and patient.client.timeout == 5
    with pytest.raises(BadInput, match="local:wordllama"):
        configured_embedder("local:nope", environ={})


def test_vectors_need_numpy_only_in_the_ranker_and_say_which_extra_brings_it():
    # numpy made unimportable (sqlite_utils imports it whenever it is installed)
    code = """
import sys
sys.modules["numpy"] = None
import memctl.cli, memctl.recall, memctl.recall.vectors
from memctl.embeddings import configured_embedder
from memctl.errors import MissingExtra
assert configured_embedder(environ={}) is None
try:
    memctl.recall.vectors.VectorRanker(None)
except MissingExtra as missing:
    print(missing)
print(sorted(name for name in ("openai", "wordllama", "pydantic") if name in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        f"recall by vectors needs memctl's embeddings extra: pip install -e '{REPO}[embeddings]'", "[]"]


def test_the_local_model_runs_from_its_wheel_without_the_network(monkeypatch, memory):
    pytest.importorskip("wordllama")
    import socket

    def no_network(*args, **kwargs):
        raise AssertionError("the local model reached for the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    local = configured_embedder(LOCAL_WORDLLAMA, environ={})
    assert isinstance(local, WordLlamaEmbedder) and local.model.startswith(LOCAL_WORDLLAMA + "@")

    memory.ingest_episodes(STORY)
    assert embed_new(memory.db, local) == 4
    found = VectorRanker(local).rank(memory.db, parse("which database does billing use"), Window(as_of=memory.now()), 1)
    assert found[0] in {("episode", STORY[0].id)} | {("fact", fact_id) for (fact_id,) in memory.db.execute(
        "SELECT id FROM facts")}
    assert vector_store.DTYPE == "<f4"


def write_chat(path, *turns):
    path.write_text("".join(json.dumps({"role": role, "content": text, "timestamp": at}) + "\n"
                            for at, user, reply in turns for role, text in (("user", user), ("assistant", reply))))
    return path


def test_ingest_makes_the_vectors_recall_searches_and_embed_catches_up(cli, monkeypatch, tmp_path):
    pytest.importorskip("wordllama")
    chat = write_chat(tmp_path / "c.jsonl", ("2024-03-01T10:00:00Z", "ok, fine, let's do vite", "Done."),
                      ("2024-03-02T10:00:00Z", "the logo should be blue", "Blue it is."))
    first = cli("ingest", chat, "--extractor", "rules", "--embeddings-model", "local:wordllama", "--json")
    assert first.code == 0 and first.json()["embedded"] == 2
    assert cli("ingest", chat, "--extractor", "rules", "--embeddings-model", "local:wordllama", "--json").json()[
        "embedded"] == 0  # nothing new, nothing embedded again
    monkeypatch.setenv("MEMCTL_EMBEDDINGS_MODEL", "local:wordllama")
    found = cli("recall", "vite", "--json")
    assert found.code == 0 and found.json()["results"] and "unavailable" not in found.json()
    assert cli("embed", "--json").json() == {"embedded": 0}
    monkeypatch.delenv("MEMCTL_EMBEDDINGS_MODEL")
    refused = cli("embed")
    assert refused.code == 2 and "MEMCTL_EMBEDDINGS_MODEL" in refused.err


def test_an_embeddings_endpoint_that_is_down_keeps_the_episodes_and_the_other_rankers(cli, monkeypatch, tmp_path):
    from tests.fake_llm import FakeOpenAIServer

    chat = write_chat(tmp_path / "c.jsonl", ("2024-03-01T10:00:00Z", "ok, fine, let's do vite", "Done."))
    with FakeOpenAIServer(times.from_storage("2026-01-01T00:00:00.000000Z")) as server:  # no embeddings route: 404
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        monkeypatch.setenv("MEMCTL_EMBEDDINGS_MODEL", "nomic-embed-text")
        ingest = cli("ingest", chat, "--extractor", "rules", "--json")
        assert ingest.code == 1 and ingest.json()["added"] == 1 and ingest.json()["embeddings_unavailable"]
        assert ingest.err.count("\n") == 1 and "memctl embed" in ingest.err
        recall = cli("recall", "vite", "--json")
    assert recall.code == 1 and recall.json()["results"][0]["kind"] == "episode"
    assert recall.json()["unavailable"][0].startswith("vectors:") and recall.err.startswith("memctl: answered without")


def test_what_vectors_are_worth_follows_what_the_words_miss():
    from memctl.recall.fusion import MEANING_LEAST, MEANING_MOST, meaning_worth

    assert meaning_worth(1.0) == MEANING_LEAST  # every word of the question in one of the best texts
    assert meaning_worth(0.0) == MEANING_MOST  # none: the meaning is all there is
    assert meaning_worth(0.75) < meaning_worth(0.5) < meaning_worth(0.25)


def test_where_the_words_are_found_together_vectors_do_not_reorder_them(memory, monkeypatch):
    """A question that names what it asks for, word for word, keeps its answer first even
    when vectors rank another text first; one that shares no word with its answer is
    answered by the vectors (the test above)."""
    from memctl.recall import fusion

    rotates = said(1, "The staging database password rotates every Monday.", "2024-03-01T09:00:00Z")
    compared = said(2, "Postgres and MySQL and SQLite: we compared every database.", "2024-03-02T09:00:00Z")
    memory.ingest_episodes([rotates, compared])
    vectors_of = embedder(FakeEndpoint())
    embed_new(memory.db, vectors_of)
    question = "when does the staging database password rotate"
    by_vectors = VectorRanker(vectors_of).rank(memory.db, parse(question), Window(as_of=memory.now()), 10)
    assert by_vectors[0] == ("episode", compared.id)  # three words of one concept outweigh the question's
    rankers = (*DEFAULT_RANKERS, VectorRanker(vectors_of))
    assert recall(memory.db, question, now=memory.now(), rankers=rankers).results[0].episode_id == rotates.id
    monkeypatch.setattr(fusion, "MEANING_LEAST", fusion.MEANING_MOST)  # vectors at full say whatever the words
    assert recall(memory.db, question, now=memory.now(), rankers=rankers).results[0].episode_id == compared.id
