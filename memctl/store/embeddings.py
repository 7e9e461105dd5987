"""Vectors of stored texts (migration 0009), for recall's vector ranker.

A vector is kept once per (text hash, model): an episode's under its ``content_hash``,
a fact version's under the hash of its sentence (``fact_text_hashes``), so a text
embedded once serves every episode and every fact version that says it. Vectors are
float32, little-endian (``DTYPE`` for numpy), scaled to length 1 when stored, so that a
cosine is one dot product.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from memctl.store import Queryable, in_chunks
from memctl.store.search import Window, episode_window, fact_window

if TYPE_CHECKING:
    from memctl.store import Database

DTYPE = "<f4"

# ("episode", id) or ("fact", id): what has a text, and so a vector
Item = tuple[str, str | int]


def pack(vector: Sequence[float]) -> bytes:
    """The vector at length 1 (a zero vector stays zero: it is near nothing), as stored."""
    length = math.hypot(*vector)
    values = array("f", [value / length for value in vector] if length else vector)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


# --- what embed_new reads and writes ----------------------------------------------------


def facts_without_hash(db: Database, after_id: int, limit: int) -> list[tuple[int, str]]:
    """(id, sentence) of fact versions with no text hash yet, in id order from ``after_id``."""
    return [tuple(row) for row in db.execute(
        """SELECT f.id, f.fact FROM facts f
           WHERE f.id > ? AND NOT EXISTS (SELECT 1 FROM fact_text_hashes h WHERE h.fact_id = f.id)
           ORDER BY f.id LIMIT ?""", [after_id, limit]).fetchall()]


def put_fact_hashes(db: Database, rows: Iterable[tuple[int, str]]) -> None:
    db.conn.executemany("INSERT OR IGNORE INTO fact_text_hashes (fact_id, text_hash) VALUES (?, ?)", rows)


def items_without_vector(db: Database, model: str) -> list[Item]:
    """One item per text that has no vector from ``model``: every stored episode's (an
    undone one can still be recalled as it was held) and every current fact's. An
    episode is named before a fact with the same text."""
    missing = "NOT EXISTS (SELECT 1 FROM embeddings v WHERE v.text_hash = {} AND v.model = ?)"
    episodes = db.execute(f"""SELECT min(e.id), e.content_hash FROM episodes e GROUP BY e.content_hash
                              HAVING {missing.format("e.content_hash")} ORDER BY 1""", [model]).fetchall()
    said = {text_hash for _, text_hash in episodes}
    facts = db.execute(f"""SELECT min(f.id), h.text_hash FROM facts f JOIN fact_text_hashes h ON h.fact_id = f.id
                           WHERE f.expired_at IS NULL GROUP BY h.text_hash
                           HAVING {missing.format("h.text_hash")} ORDER BY 1""", [model]).fetchall()
    return ([("episode", episode_id) for episode_id, _ in episodes]
            + [("fact", fact_id) for fact_id, text_hash in facts if text_hash not in said])


def texts_of(db: Database, items: Sequence[Item]) -> list[tuple[str, str]]:
    """(text hash, text) of each item, in order."""
    found: dict[Item, tuple[str, str]] = {}
    episode_ids = [item_id for kind, item_id in items if kind == "episode"]
    fact_ids = [item_id for kind, item_id in items if kind == "fact"]
    for chunk, marks in in_chunks(episode_ids):
        for episode_id, text_hash, text in db.execute(
                f"SELECT id, content_hash, content FROM episodes WHERE id IN ({marks})", chunk):
            found[("episode", episode_id)] = (text_hash, text)
    for chunk, marks in in_chunks(fact_ids):
        for fact_id, text_hash, text in db.execute(
                f"SELECT f.id, h.text_hash, f.fact FROM facts f JOIN fact_text_hashes h ON h.fact_id = f.id "
                f"WHERE f.id IN ({marks})", chunk):
            found[("fact", fact_id)] = (text_hash, text)
    return [found[item] for item in items if item in found]


def put_vectors(db: Database, model: str, rows: Iterable[tuple[str, Sequence[float]]]) -> None:
    """Store (text hash, vector) pairs; one another process stored meanwhile is kept."""
    db.conn.executemany("INSERT OR IGNORE INTO embeddings (text_hash, model, vector) VALUES (?, ?, ?)",
                        ((text_hash, model, pack(vector)) for text_hash, vector in rows))


# --- what the ranker reads ----------------------------------------------------------------


def texts_in_window(db: Queryable, window: Window) -> dict[str, list[Item]]:
    """Every fact and episode in the window, by the hash of its text."""
    facts, fact_params = fact_window("f", window)
    episodes, episode_params = episode_window("e", window)
    found: dict[str, list[Item]] = {}
    # Two statements, not a UNION: a fact's id is a number and an episode's text, which
    # PostgreSQL will not put in one column.
    for fact_id, text_hash in db.execute(
            f"SELECT f.id, h.text_hash FROM facts f JOIN fact_text_hashes h ON h.fact_id = f.id WHERE {facts}",
            fact_params):
        found.setdefault(text_hash, []).append(("fact", fact_id))
    for episode_id, text_hash in db.execute(f"SELECT e.id, e.content_hash FROM episodes e WHERE {episodes}",
                                            episode_params):
        found.setdefault(text_hash, []).append(("episode", episode_id))
    return found


def vectors(db: Queryable, model: str, size: int, chunk: int = 8192) -> Iterator[list[tuple[str, bytes]]]:
    """(text hash, vector) of every vector of ``size`` bytes from ``model``, in chunks of
    rows. Read in storage order: looking up each text's vector in turn reads the file
    at random, four times slower at 100k texts. Vectors of another size (the model's
    dimensions changed) are left out."""
    cursor = db.execute("SELECT text_hash, vector FROM embeddings WHERE model = ? AND length(vector) = ?", [model, size])
    while rows := cursor.fetchmany(chunk):
        yield rows


# --- purge ----------------------------------------------------------------------------------


def forget_vectors(db: Database, episode_ids: list[str]) -> None:
    """Purge: a vector encodes its text, so the vectors of the episodes' texts (as they
    are and as their revisions kept them) and of every fact version they supported go,
    from every model. Call before those rows are deleted. A text that something else
    still says is embedded again by the next ``embed_new``."""
    for chunk, marks in in_chunks(episode_ids):
        supported = f"SELECT fact_id FROM fact_provenance WHERE episode_id IN ({marks})"
        db.execute(
            f"""DELETE FROM embeddings WHERE text_hash IN (
                    SELECT content_hash FROM episodes WHERE id IN ({marks})
                    UNION SELECT old_content_hash FROM revisions WHERE episode_id IN ({marks})
                    UNION SELECT text_hash FROM fact_text_hashes WHERE fact_id IN ({supported}))""", chunk * 3)
        db.execute(f"DELETE FROM fact_text_hashes WHERE fact_id IN ({supported})", chunk)
