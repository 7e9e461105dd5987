"""Reading the store for people and programs: facts, episodes, entities, counts.

Every query a command runs to show something lives here, so the SQL of the store stays
in ``memctl.store``. Nothing here writes.

Both time axes are one condition (``time_window``): versions held at ``known_at``
(``created_at <= K < expired_at``; without K, the versions held now) and, unless the
whole history is asked for, valid at ``as_of`` (``valid_at <= T < invalid_at``).
"""

from __future__ import annotations

from collections.abc import Iterator

from memctl.results import EpisodeDetail, EpisodeSummary, Fact, FactStatus, Stats, StoredAssertion
from memctl.store import Queryable, in_chunks


def time_window(alias: str, *, known_at: str | None, as_of: str | None = None) -> tuple[str, list]:
    """SQL condition (and its parameters) on ``alias``: held at ``known_at``, valid at ``as_of``."""
    if known_at is None:
        condition, params = f"{alias}.expired_at IS NULL", []
    else:
        condition = f"{alias}.created_at <= ? AND ({alias}.expired_at IS NULL OR ? < {alias}.expired_at)"
        params = [known_at, known_at]
    if as_of is not None:
        condition += f" AND {alias}.valid_at <= ? AND ({alias}.invalid_at IS NULL OR ? < {alias}.invalid_at)"
        params += [as_of, as_of]
    return condition, params


def fact_status(invalid_at: str | None, end_reason: str | None, as_of: str) -> FactStatus:
    if invalid_at is None or as_of < invalid_at:
        return "current"
    return "superseded" if end_reason == "superseded" else "ended"


def facts_where(db: Queryable, condition: str, params: list, *, order: str, status_at: str,
                limit: int | None = None) -> list[tuple[Fact, str]]:
    """Facts with names and their status at ``status_at``, each with its predicate key;
    ``condition`` names the facts ``f``."""
    rows = db.execute(
        f"""
        SELECT f.id, f.fact, s.name, f.predicate, o.name, f.valid_at, f.invalid_at, f.end_reason, f.created_at,
               f.expired_at, f.cardinality, f.predicate_key
        FROM facts f
        JOIN entities s ON s.id = f.subject_id
        JOIN entities o ON o.id = f.object_id
        WHERE {condition}
        ORDER BY {order}
        {"LIMIT ?" if limit is not None else ""}
        """,
        params + ([limit] if limit is not None else []),
    ).fetchall()
    return [(Fact(fact_id=r[0], fact=r[1], subject=r[2], predicate=r[3], object=r[4], predicate_key=None,
                  valid_at=r[5], invalid_at=r[6], end_reason=r[7], created_at=r[8], expired_at=r[9],
                  cardinality=r[10], status=fact_status(r[6], r[7], status_at)), r[11]) for r in rows]


def facts_of_subject(db: Queryable, subject_id: int, now: str) -> list[tuple[Fact, str]]:
    """Every current version of every slot of an entity, with its predicate key, by slot and time."""
    condition, params = time_window("f", known_at=None)
    facts = facts_where(db, f"{condition} AND f.subject_id = ?", [*params, subject_id],
                        order="f.predicate_key, f.valid_at, f.id", status_at=now)
    return list(zip(with_episodes(db, [fact for fact, _ in facts], None), [key for _, key in facts], strict=True))


def facts_of_subject_at(db: Queryable, subject_id: int, as_of: str, known_at: str | None,
                        latest: tuple[int, int] | None = None) -> list[Fact]:
    """The facts of an entity that began by ``as_of``, as held at ``known_at``, with their
    status at ``as_of`` and their predicate key, by slot and time. ``latest`` (slots, per
    slot): only the slots that changed last by ``as_of``, and of each the facts that began
    or ended last: what a summary of a few lines shows (an entity with 20,000 fact
    versions in 500 slots took 150 ms to read whole, and a recall reads one)."""
    condition, params = time_window("f", known_at=known_at)
    condition += " AND f.subject_id = ? AND f.valid_at <= ?"
    params += [subject_id, as_of]
    if latest is not None:
        condition = f"""f.id IN (
            WITH changes AS (SELECT f.id, f.predicate_key,
                                    CASE WHEN f.invalid_at <= ? THEN f.invalid_at ELSE f.valid_at END AS changed
                             FROM facts f WHERE {condition}),
                 slots AS (SELECT predicate_key, max(changed) AS last FROM changes GROUP BY predicate_key
                           ORDER BY last DESC LIMIT ?)
            SELECT id FROM (SELECT c.id, row_number() OVER (PARTITION BY c.predicate_key
                                                            ORDER BY c.changed DESC, c.id DESC) AS place
                            FROM changes c JOIN slots s ON s.predicate_key = c.predicate_key)
            WHERE place <= ?)"""
        params = [as_of, *params, *latest]
    return [fact._replace(predicate_key=key) for fact, key in facts_where(
        db, condition, params, order="f.predicate_key, f.valid_at, f.id", status_at=as_of)]


def latest_texts_of_subject(db: Queryable, subject_id: int, limit: int) -> list[tuple[str, str]]:
    """(reference time, text) of the latest episodes behind the entity's current facts."""
    return db.execute("""SELECT e.reference_time, e.content FROM episodes e WHERE e.id IN (
                             SELECT p.episode_id FROM facts f JOIN fact_provenance p ON p.fact_id = f.id
                             WHERE f.subject_id = ? AND f.expired_at IS NULL)
                         ORDER BY e.reference_time DESC, e.id DESC LIMIT ?""", [subject_id, limit]).fetchall()


def facts_of_episode(db: Queryable, episode_id: str, now: str) -> list[Fact]:
    """The current facts an episode's active assertions support."""
    condition, params = time_window("f", known_at=None)
    facts = facts_where(db, f"""{condition} AND f.id IN (
                            SELECT p.fact_id FROM fact_provenance p JOIN assertions a ON a.id = p.assertion_id
                            WHERE a.episode_id = ? AND a.expired_at IS NULL)""",
                   [*params, episode_id], order="f.valid_at, f.id", status_at=now)
    return [fact._replace(predicate_key=key) for fact, key in facts]


def with_episodes(db: Queryable, facts: list[Fact], known_at: str | None) -> list[Fact]:
    """The facts, each with its supporting episodes as they stood at ``known_at`` (or now)."""
    if not facts:
        return []
    condition, params = time_window("a", known_at=known_at)
    rows = []
    for chunk, marks in in_chunks([f.fact_id for f in facts]):
        rows += db.execute(
            f"""
            SELECT p.fact_id, p.episode_id FROM fact_provenance p JOIN assertions a ON a.id = p.assertion_id
            WHERE p.fact_id IN ({marks}) AND {condition}
            ORDER BY p.fact_id, a.valid_at, p.episode_id
            """,
            chunk + params,
        ).fetchall()
    by_fact: dict[int, list[str]] = {}
    for fact_id, episode_id in rows:
        episodes = by_fact.setdefault(fact_id, [])
        if episode_id not in episodes:
            episodes.append(episode_id)
    return [fact._replace(episodes=by_fact.get(fact.fact_id, [])) for fact in facts]


def entity_names(db: Queryable, ids: set[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    for chunk, marks in in_chunks(sorted(ids)):
        found.update(db.execute(f"SELECT id, name FROM entities WHERE id IN ({marks})", chunk).fetchall())
    return found


def episodes_of_assertions(db: Queryable, assertion_ids: list[int]) -> list[str]:
    """The episodes these assertions come from, once each, in id order."""
    found: set[str] = set()
    for chunk, marks in in_chunks(assertion_ids):
        found.update(row[0] for row in db.execute(f"SELECT episode_id FROM assertions WHERE id IN ({marks})", chunk))
    return sorted(found)


def exported(db: Queryable) -> Iterator[dict]:
    """Every active episode with its active assertions, in time order, as a line of the
    structured format (``memctl.sources.facts``) that ingest reads back into the same
    facts. One query, read as it streams: a whole store is never held."""
    line: dict | None = None
    for (episode_id, reference_time, content, subject, predicate, object_, fact, valid_at, invalid_at, cardinality,
         extracted_at) in db.execute(
            """SELECT e.id, e.reference_time, e.content, a.subject, a.predicate, a.object, a.fact, a.valid_at,
                      a.invalid_at, a.cardinality, a.extracted_at
               FROM episodes e LEFT JOIN assertions a ON a.episode_id = e.id AND a.expired_at IS NULL
               WHERE e.status = 'active' ORDER BY e.reference_time, e.id, a.ordinal"""):
        if line is None or line["source_id"] != episode_id:
            if line is not None:
                yield line
            line = {"reference_time": reference_time, "source_id": episode_id, "content": content, "facts": []}
        if subject is None:
            continue  # an episode with no assertion (pending, or nothing said)
        item = {"subject": subject, "predicate": predicate, "object": object_, "fact": fact, "cardinality": cardinality,
                "extracted_at": extracted_at}
        if valid_at is None:  # a retraction: the value stopped holding then
            item.update(retracted=True, invalid_at=invalid_at)
        else:
            item.update(valid_at=valid_at, **({"invalid_at": invalid_at} if invalid_at else {}))
        line["facts"].append(item)
    if line is not None:
        yield line


def ids_with_prefix(db: Queryable, table: str, prefix: str) -> list[str]:
    """Ids in ``table`` (episodes or operations) that start with ``prefix``; a few at most."""
    assert table in ("episodes", "operations")
    return [row[0] for row in db.execute(
        f"SELECT id FROM {table} WHERE id >= ? AND id < ? ORDER BY id LIMIT 6", [prefix, prefix + "\U0010ffff"]
    ).fetchall()]


def episode_ids_of_operation(db: Queryable, operation_id: str) -> list[str]:
    return [row[0] for row in db.execute("SELECT id FROM episodes WHERE operation_id = ? ORDER BY id", [operation_id])]


def episode_ids_of_source(db: Queryable, source: str) -> list[str]:
    return [row[0] for row in db.execute(
        "SELECT id FROM episodes WHERE source = ? ORDER BY position", [source]).fetchall()]


def sources_ending(db: Queryable, tail: str) -> list[str]:
    """The stored sources that end with ``/tail`` (a listing's short form of a file's path)."""
    return [row[0] for row in db.execute(
        "SELECT DISTINCT source FROM episodes WHERE substr(source, length(source) - ? + 1) = ? ORDER BY source",
        [len(tail) + 1, "/" + tail]).fetchall()]


def next_position(db: Queryable, source: str) -> int:
    """The position after the last episode of ``source`` (1 for a new one), undone ones included."""
    return db.execute("SELECT coalesce(max(position), 0) + 1 FROM episodes WHERE source = ?", [source]).fetchone()[0]


def _episode_filter(db: Queryable, source: str | None, status: str | None, format: str | None, since: str | None,
                    until: str | None, extraction: str | None = None, words: str | None = None) -> tuple[str, list[str]]:
    from memctl.store import text_search

    search = text_search.of(db)
    where, params = ["TRUE"], []
    for condition, value in (("source = ?", source), ("status = ?", status), ("format = ?", format),
                             ("reference_time >= ?", since), ("reference_time < ?", until),
                             ("extraction = ?", extraction),
                             (f"text_id IN ({search.matching('episodes_fts')})",
                              None if words is None else search.query(words))):
        if value is not None:
            where.append(condition)
            params.append(value)
    return " AND ".join(where), params


# Of a turn's text, what its title is read from: its first line is in here.
TITLE_READ = 400


def episodes(db: Queryable, *, source: str | None, status: str | None, limit: int | None, since: str | None = None,
             until: str | None = None, format: str | None = None, extraction: str | None = None,
             words: str | None = None, latest_first: bool = False) -> list[EpisodeSummary]:
    """Episodes by reference time (``latest_first``: the other way), of one source,
    status, format and extraction state if named, said in [``since``, ``until``), holding
    ``words`` (an FTS5 expression) if given."""
    from memctl.store.search import title_of

    where, params = _episode_filter(db, source, status, format, since, until, extraction, words)
    order = "reference_time DESC, id DESC" if latest_first else "reference_time, id"
    rows = db.execute(
        f"""SELECT id, source, position, format, reference_time, reference_time_source, status, extraction,
                   substr(content, 1, {TITLE_READ})
            FROM episodes WHERE {where} ORDER BY {order}
            {'LIMIT ?' if limit else ''}""",
        params + ([limit] if limit else []),
    ).fetchall()
    return [EpisodeSummary._make((*row[:-1], title_of(row[-1]))) for row in rows]


def episode_count(db: Queryable, *, source: str | None, status: str | None, since: str | None = None,
                  until: str | None = None, format: str | None = None, extraction: str | None = None,
                  words: str | None = None) -> int:
    """How many episodes ``episodes`` would list without a limit."""
    where, params = _episode_filter(db, source, status, format, since, until, extraction, words)
    return db.execute(f"SELECT count(*) FROM episodes WHERE {where}", params).fetchone()[0]


def episode(db: Queryable, episode_id: str, now: str) -> EpisodeDetail:
    row = db.execute(
        """SELECT id, source, position, source_id, format, content, content_hash, reference_time,
                  reference_time_source, status, created_at, operation_id, extraction, extraction_error
           FROM episodes WHERE id = ?""", [episode_id]).fetchone()
    assertions = [StoredAssertion(*a) for a in db.execute(
        """SELECT id, subject, predicate, object, fact, valid_at, valid_at_evidence, valid_at_precision,
                  invalid_at, invalid_at_evidence, invalid_at_precision, cardinality, extractor, extracted_at,
                  created_at, expired_at
           FROM assertions WHERE episode_id = ? ORDER BY created_at, ordinal""", [episode_id]).fetchall()]
    return EpisodeDetail._make([*row, assertions, facts_of_episode(db, episode_id, now)])


def entity_named(db: Queryable, name_key: str) -> tuple[int, str] | None:
    """(id, name as shown) of the entity with this matching key."""
    row = db.execute("SELECT id, name FROM entities WHERE name_key = ?", [name_key]).fetchone()
    return None if row is None else (row[0], row[1])


def stats(db: Queryable, now: str) -> Stats:
    def one(sql: str, *params: str) -> int:
        return db.execute(sql, params).fetchone()[0]

    valid_now, params = time_window("f", known_at=None, as_of=now)
    low, high = db.execute(
        "SELECT min(reference_time), max(reference_time) FROM episodes WHERE status = 'active'").fetchone()
    return Stats(
        episodes=one("SELECT count(*) FROM episodes WHERE status = 'active'"),
        episodes_undone=one("SELECT count(*) FROM episodes WHERE status = 'undone'"),
        episodes_awaiting_extraction=one("SELECT count(*) FROM episodes WHERE extraction IN ('pending', 'failed') "
                                         "AND status = 'active'"),
        assertions=one("SELECT count(*) FROM assertions WHERE expired_at IS NULL"),
        entities=one("SELECT count(*) FROM entities WHERE id IN (SELECT subject_id FROM assertions WHERE "
                     "expired_at IS NULL UNION SELECT object_id FROM assertions WHERE expired_at IS NULL)"),
        facts_valid_now=one(f"SELECT count(*) FROM facts f WHERE {valid_now}", *params),
        facts_current_versions=one("SELECT count(*) FROM facts WHERE expired_at IS NULL"),
        fact_versions=one("SELECT count(*) FROM facts"),
        slots_awaiting_facts=one("SELECT count(*) FROM (SELECT DISTINCT subject_id, predicate_key FROM underived_slots)"),
        operations=one("SELECT count(*) FROM operations"),
        reference_time_range=[low, high],
    )
