"""The vector ranker: facts and episodes whose vectors lie nearest the question's (issue 10).

Optional. It runs when an embeddings model is configured (``memctl.embeddings.
configured_embedder``) and numpy is installed (``memctl[embeddings]``); numpy is imported
only here, so plain recall and ``memctl --help`` never load it. The vectors are those
``memctl.embeddings.embed_new`` stored.

The window is applied in SQL to every fact and episode before any ranking
(``store.embeddings.vectors_in_window``), so a limit never cuts away what was true, or
said, in the window. Cosine similarity is one matrix product over each chunk of rows;
only what shares some direction with the question (cosine above 0) is ranked.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from sqlite_utils import Database

from memctl.embeddings import Embedder
from memctl.errors import MissingExtra
from memctl.recall.fusion import Key
from memctl.recall.query import Query
from memctl.redact import redact
from memctl.store import embeddings as store
from memctl.store.search import Window

if TYPE_CHECKING:
    import numpy as np

# Questions are asked again (an agent retries, a person rephrases and comes back): a
# repeated one costs no call.
CACHED_QUESTIONS = 256


class VectorRanker:
    name = "vectors"
    kinds = frozenset({"fact", "episode"})

    def __init__(self, embedder: Embedder, *, cached_questions: int = CACHED_QUESTIONS):
        try:
            import numpy  # noqa: F401  (here, so that a missing extra is said before any recall)
        except ImportError:
            raise MissingExtra("recall by vectors", "embeddings") from None
        self.embedder = embedder
        self._question = lru_cache(maxsize=cached_questions)(self._embed)

    def rank(self, db: Database, query: Query, window: Window, limit: int) -> Sequence[Key]:
        import numpy as np

        # The question goes to a model: secrets are taken out first, as from stored text.
        question = self._question(redact(query.text)[0])
        length = float(np.linalg.norm(question))
        if length == 0.0:
            return []
        keys: list[Key] = []
        parts: list[np.ndarray] = []
        for rows in store.vectors_in_window(db, self.embedder.model, window, question.nbytes):
            matrix = np.frombuffer(b"".join(vector for _, vector in rows), dtype=store.DTYPE).reshape(len(rows), -1)
            lengths = np.linalg.norm(matrix, axis=1)
            parts.append((matrix @ question) / (np.maximum(lengths, np.finfo(np.float32).tiny) * length))
            keys += [key for key, _ in rows]
        if not keys:
            return []
        scores = np.concatenate(parts)
        # The limit-th best score, then every item at least as close, so that ties at the
        # edge are broken the same way on every run: by kind and id.
        cut = len(scores) - min(limit, len(scores))
        edge = np.partition(scores, cut)[cut]
        chosen = np.flatnonzero((scores >= edge) & (scores > 0)).tolist()
        best = sorted(chosen, key=lambda i: (-float(scores[i]), keys[i][0], str(keys[i][1])))
        return [keys[i] for i in best[:limit]]

    def _embed(self, text: str) -> np.ndarray:
        import numpy as np

        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)
