"""Vectors for what memctl stores, and the models that make them (issue 10).

- ``Embedder``: texts in, one vector each out. ``OpenAIEmbedder`` asks any
  OpenAI-compatible embeddings endpoint (OpenAI; Ollama, llama.cpp and vLLM locally)
  through ``llm.make_client``, 64 texts a call, with the extractor's transport retries
  (``llm.call_with_retries``). ``WordLlamaEmbedder`` runs on the CPU with the weights its
  wheel ships (``pip install 'memctl[local-embeddings]'``): nothing is downloaded.
- ``configured_embedder``: the one the user named (``--embeddings-model`` /
  ``MEMCTL_EMBEDDINGS_MODEL``; ``local:wordllama`` for the local one), or None.
- ``embed_new``: vectors for the stored episodes and current facts that have none yet
  from that model. Texts are redacted when stored, and again when sent.

The vectors are kept by (text hash, model) (``memctl.store.embeddings``); recall's
``memctl.recall.vectors.VectorRanker`` ranks by them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from memctl.errors import BadInput, LLMUnavailable, MissingExtra
from memctl.store import embeddings as store
from memctl.store.connection import write_transaction

if TYPE_CHECKING:
    from sqlite_utils import Database

    from memctl.extract.llm import Retries

BATCH = 64  # texts per call: far under any endpoint's request limit, and a refused batch is cheap to split
# An episode can be a whole pasted log; its opening says what it is about, and the
# smallest local models read a few hundred tokens. A text the endpoint still refuses is
# sent again halved, down to MIN_INPUT_CHARS.
MAX_INPUT_CHARS = 8000
MIN_INPUT_CHARS = 250
MODEL_OPTION = "--embeddings-model/MEMCTL_EMBEDDINGS_MODEL"
LOCAL_WORDLLAMA = "local:wordllama"


class Embedder(Protocol):
    model: str  # what the vectors are kept under: two embedders with one name give the same vectors

    def embed(self, texts: list[str]) -> list[list[float]]: ...


class OpenAIEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint, through an ``openai.OpenAI`` client
    from ``llm.make_client``.

    A rejected key, an unknown model, an endpoint that cannot be reached, or one still
    failing after the retries raise ``LLMUnavailable``: what was embedded so far is kept,
    and the rest waits for the next run. A batch the endpoint refuses (HTTP 400: a text
    too long for the model) is split until the text at fault is found, and that one is
    sent shorter.
    """

    def __init__(self, client: Any, model: str, *, batch: int = BATCH, retries: Retries | None = None):
        from memctl.extract.llm import Retries

        if not model or not model.strip():
            raise BadInput("not given: name an embeddings model", parameter="embeddings_model")
        if batch < 1:
            raise BadInput(f"must be at least 1, got {batch}", parameter="batch")
        self.client = client
        self.model = model.strip()
        self.batch = batch
        self.retries = retries or Retries()

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            vectors += self._embed([text[:MAX_INPUT_CHARS] for text in texts[start:start + self.batch]])
        return vectors

    def _embed(self, texts: list[str]) -> list[list[float]]:
        from memctl.extract.llm import CallFailed, call_with_retries, endpoint_of

        try:
            response = call_with_retries(
                lambda: self.client.embeddings.create(model=self.model, input=texts, encoding_format="float"),
                self.retries, client=self.client, service="embeddings", model=self.model, model_option=MODEL_OPTION)
        except CallFailed as failed:
            if failed.refused and len(texts) > 1:
                half = len(texts) // 2
                return self._embed(texts[:half]) + self._embed(texts[half:])
            if failed.refused and len(texts[0]) > MIN_INPUT_CHARS:
                return self._embed([texts[0][:len(texts[0]) // 2]])
            hint = f"; check {MODEL_OPTION}" if failed.refused else ""
            raise LLMUnavailable(f"the embeddings endpoint {endpoint_of(self.client)} gave no vectors: {failed}{hint}") \
                from None
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise LLMUnavailable(f"the embeddings endpoint {endpoint_of(self.client)} answered {len(data)} vectors "
                                 f"for {len(texts)} texts")
        return [list(item.embedding) for item in data]


class WordLlamaEmbedder:
    """WordLlama's l2_supercat model (256 dimensions), on the CPU, from the weights and
    tokenizer inside its wheel: it never reaches the network."""

    def __init__(self) -> None:
        try:
            import wordllama
        except ImportError:
            raise MissingExtra(f"the embeddings model {LOCAL_WORDLLAMA}", "local-embeddings") from None
        from pathlib import Path

        # The wheel keeps its files as WordLlama's cache would (weights/, tokenizers/):
        # pointing the cache there finds both, and disable_download makes a missing file
        # an error instead of a download.
        self._model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        # A new release may bring other weights: vectors are kept per version.
        self.model = f"{LOCAL_WORDLLAMA}@{_version('wordllama')}"

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._model.embed(texts).tolist() if texts else []


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def embeddings_model_named(model: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The model ``model`` names, or else ``MEMCTL_EMBEDDINGS_MODEL``; None for none. An
    empty ``model`` says "no vectors", even where the environment names one."""
    env = os.environ if environ is None else environ
    name = (env.get("MEMCTL_EMBEDDINGS_MODEL", "") if model is None else model).strip()
    return name or None


def configured_embedder(model: str | None = None, environ: Mapping[str, str] | None = None, *,
                        retries: Retries | None = None, timeout: float | None = None) -> Embedder | None:
    """The embedder ``model`` (None: ``MEMCTL_EMBEDDINGS_MODEL``; "": none) names: ``local:wordllama``,
    or a model of the OpenAI-compatible endpoint that ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` name. None when neither names one: recall then runs without vectors.

    ``retries`` and ``timeout`` (seconds per call) are for the endpoint: a question
    being answered waits less long for it than an ingest does.
    """
    env = os.environ if environ is None else environ
    name = embeddings_model_named(model, env)
    if name is None:
        return None
    if name == LOCAL_WORDLLAMA:
        return WordLlamaEmbedder()
    if name.startswith("local:"):
        raise BadInput(f"names no local model: {name!r}; the local one is {LOCAL_WORDLLAMA}",
                       parameter="embeddings_model")
    from memctl.extract.llm import DEFAULT_TIMEOUT, make_client

    client = make_client(api_key=env.get("OPENAI_API_KEY"), base_url=env.get("OPENAI_BASE_URL"),
                         timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
    return OpenAIEmbedder(client, name, retries=retries)


# --- filling the store -----------------------------------------------------------------------

HASH_BATCH = 5000


def embed_new(db: Database, embedder: Embedder, *, batch: int = BATCH) -> int:
    """Vectors for every stored episode and current fact whose text has none from
    ``embedder.model``; returns how many texts were embedded.

    Call it outside any transaction. The model is called outside any write transaction,
    and each batch of vectors is written in a short one of its own, so another process's writes go on meanwhile and
    an interruption keeps what was paid for. A text already embedded (another fact
    version, the same words in another episode) costs no call.
    """
    # Here, not at the top: recall imports this module to learn whether a model is named,
    # and the redaction rules' patterns cost it 8 ms to compile.
    from memctl.redact import redact

    _hash_fact_texts(db)
    missing = store.items_without_vector(db, embedder.model)
    embedded = 0
    for start in range(0, len(missing), batch):
        texts = store.texts_of(db, missing[start:start + batch])  # an item purged meanwhile is gone
        # Stored text is redacted; a store written by an earlier memctl is redacted again on the way out.
        vectors = embedder.embed([redact(text)[0] for _, text in texts])
        with write_transaction(db):
            store.put_vectors(db, embedder.model, zip([text_hash for text_hash, _ in texts], vectors))
        embedded += len(texts)
    return embedded


def _hash_fact_texts(db: Database) -> None:
    """Each fact version's text hash, which its vector is found by."""
    from memctl.model import content_hash  # pydantic comes with it: only when vectors are made

    last = 0
    while rows := store.facts_without_hash(db, last, HASH_BATCH):
        with write_transaction(db):
            store.put_fact_hashes(db, [(fact_id, content_hash(text)) for fact_id, text in rows])
        last = rows[-1][0]
