"""The vector ranker: facts and episodes whose vectors lie nearest the question's (issue 10).

Optional. It runs when an embeddings model is configured (``memctl.embeddings.
configured_embedder``) and numpy is installed (``memctl[embeddings]``); numpy is imported
only here, so plain recall and ``memctl --help`` never load it. The vectors are those
``memctl.embeddings.embed_new`` stored.

The window is applied in SQL to every fact and episode before any ranking
(``store.embeddings.texts_in_window``), so a limit never cuts away what was true, or
said, in the window. The vectors, stored at length 1, are read in chunks, and the cosines
of those in the window are one matrix product per chunk; only what shares some
direction with the question (cosine above 0) is ranked.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from memctl.embeddings import Embedder, query_vectors
from memctl.errors import MissingExtra
from memctl.recall.fusion import Key
from memctl.recall.query import Query
from memctl.redact import redact
from memctl.store import Queryable, collector_paused
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
    weight = 1.0
    by_meaning = True

    def __init__(self, embedder: Embedder, *, cached_questions: int = CACHED_QUESTIONS):
        try:
            import numpy  # noqa: F401  (here, so that a missing extra is said before any recall)
        except ImportError:
            raise MissingExtra("recall by vectors", "embeddings") from None
        self.embedder = embedder
        self._question = lru_cache(maxsize=cached_questions)(self._embed)

    def rank(self, db: Queryable, query: Query, window: Window, limit: int) -> Sequence[Key]:
        import numpy as np

        # The question goes to a model: secrets are taken out first, as from stored text.
        question = self._question(redact(query.text)[0])
        if not question.any():
            return []
        hashes: list[str] = []
        parts: list[np.ndarray] = []
        with collector_paused():  # a row or two per text, and no cycles among them
            wanted = store.texts_in_window(db, window)
            for rows in store.vectors(db, self.embedder.model, question.nbytes):
                kept = [row for row in rows if row[0] in wanted]
                if kept:
                    matrix = np.frombuffer(b"".join(vector for _, vector in kept), dtype=store.DTYPE)
                    parts.append(matrix.reshape(len(kept), -1) @ question)  # stored at length 1: the cosines
                    hashes += [text_hash for text_hash, _ in kept]
        if not hashes:
            return []
        scores = np.concatenate(parts)
        # The texts of the best ``limit`` scores hold at least ``limit`` items; every text
        # as close as the last of them comes too, so ties at the edge are broken the same
        # way on every run: by kind and id.
        cut = len(scores) - min(limit, len(scores))
        edge = scores[np.argpartition(scores, cut)[cut]]
        found = [(-float(scores[i]), kind, str(item_id), (kind, item_id))
                 for i in np.flatnonzero((scores >= edge) & (scores > 0)).tolist() for kind, item_id in wanted[hashes[i]]]
        return [key for *_, key in sorted(found)[:limit]]

    def _embed(self, text: str) -> np.ndarray:
        import numpy as np

        vector = np.asarray(query_vectors(self.embedder, [text])[0], dtype=np.float32)  # a question, not a stored text
        length = np.linalg.norm(vector)
        return vector / length if length else vector
