"""Which entity a name is: resolution, merges and splits (docs/entities.md).

A name resolves by its key when an entity has that key. Otherwise by its group
(``memctl.aliases.Reading``): the one entity of the group the store knows, when there is
exactly one and, across a generic noun ("billing service" → billing), when no other
entity's name goes on from the same stem ("billing-v2": then "the billing service" may be
either, and stays its own). A merged entity's names resolve to the entity it was merged
into. Otherwise the name is a new entity.

Resolution is decided when a name is first stored; a user who disagrees merges two
entities, or splits a name off (``memctl.merging``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memctl import aliases, names
from memctl.errors import BadInput, NotFound
from memctl.store import Queryable, in_chunks

if TYPE_CHECKING:
    from memctl.store import Database


def entity_ids(db: Database, surface_forms: set[str], at: str) -> dict[str, int]:
    """Entity id for each surface form, resolving it (module docstring) and creating
    entities for names that resolve to none."""
    known = aliases.known_aliases()
    readings = {form: aliases.reading(form, known) for form in surface_forms}
    found, own = _held(db, {key for r in readings.values() for key in (r.key, r.plain)})
    unknown = [form for form in sorted(surface_forms) if readings[form].key not in found]
    # Each group's entities, read at once for the names not known yet (a backfill's many).
    groups = _groups(db, {readings[form].group for form in unknown})
    merging = any_merges(db)
    new_resolutions = []
    # In sorted order, so that a batch resolves alike in whatever order its names came.
    for form in unknown:
        reading = readings[form]
        if reading.key in found:  # another spelling of this batch had the key
            continue
        by_group = None if reading.plain in found else _by_group(db, reading, groups.get(reading.group, []), merging)
        if reading.plain in found:  # "the billing service" is what "billing service" is
            entity_id, rules = found[reading.plain], reading.rules
            if reading.plain in own:  # its own name, not resolved: only the article or possessive came off
                rules = tuple(r for r in rules if r in ("article", "possessive"))
        elif by_group is not None:
            # "billing" joining "billing service" came by the other name's rule
            (entity_id, member_key), rules = by_group, reading.rules
            rules = rules or aliases.reading(member_key, known).rules
        else:
            new_id = _inserted(db, form, reading.key, reading.group, at)
            found[reading.key] = new_id
            own.add(reading.key)
            groups.setdefault(reading.group, []).append((new_id, reading.key))
            continue
        found[reading.key] = entity_id
        new_resolutions.append((reading.key, entity_id, ", ".join(rules) or "alias", at))
    db.conn.executemany("INSERT INTO resolutions (name_key, entity_id, rule, created_at) VALUES (?, ?, ?, ?)",
                        new_resolutions)
    into = merged_into(db, set(found.values())) if merging else {}
    return {form: into.get(found[readings[form].key], found[readings[form].key]) for form in surface_forms}


def _held(db: Queryable, keys: set[str]) -> tuple[dict[str, int], set[str]]:
    """Name key -> the entity it names: its own, else the one it resolved to before; and
    the keys that are their entity's own."""
    found: dict[str, int] = {}
    own: set[str] = set()
    for chunk, marks in in_chunks(sorted(keys)):
        found.update(db.execute(f"SELECT name_key, entity_id FROM resolutions WHERE name_key IN ({marks})",
                                chunk).fetchall())
        rows = db.execute(f"SELECT name_key, id FROM entities WHERE name_key IN ({marks})", chunk).fetchall()
        found.update(rows)
        own.update(key for key, _ in rows)
    return found, own


def _groups(db: Queryable, group_keys: set[str]) -> dict[str, list[tuple[int, str]]]:
    """Group key -> its entities, (id, own key), in id order."""
    found: dict[str, list[tuple[int, str]]] = {}
    for chunk, marks in in_chunks(sorted(group_keys)):
        for entity_id, key, group in db.execute(
                f"SELECT id, name_key, group_key FROM entities WHERE group_key IN ({marks}) ORDER BY id", chunk):
            found.setdefault(group, []).append((entity_id, key))
    return found


def any_merges(db: Queryable) -> bool:
    """Whether any merge holds: most stores have none, and then no name needs following."""
    return db.execute("SELECT 1 FROM merges WHERE expired_at IS NULL LIMIT 1").fetchone() is not None


def _by_group(db: Queryable, reading: aliases.Reading, members: list[tuple[int, str]],
              merging: bool) -> tuple[int, str] | None:
    """The entity a name whose key no entity has resolves to by its group (``members``:
    the group's entities), with that entity's own key; None: a new one."""
    if not members:
        return None
    held = merged_into(db, {entity_id for entity_id, _ in members}) if merging else {}
    if len({held.get(entity_id, entity_id) for entity_id, _ in members}) > 1:
        return None  # the group names two things the store keeps apart: which is meant is unknown
    entity_id, key = members[0]
    across_a_noun = reading.stem is not None or key != reading.group and key.startswith(reading.group + " ")
    if across_a_noun and _another_goes_by(db, reading.group):
        return None  # "billing-v2" is known: "the billing service" may be either
    return entity_id, key


# Other names on one stem read to decide; past this many, the stem is taken as ambiguous.
_STEM_NAMES_READ = 64


def _another_goes_by(db: Queryable, stem: str) -> bool:
    """Whether an entity of another group has a name that goes on from ``stem`` with
    something that could be the thing itself ("billing v2", "billing gateway"), rather than
    a part of it or its people ("billing database", "billing team": aliases.PART_NOUNS)."""
    others = [row[0] for row in db.execute(
        "SELECT name_key FROM entities WHERE name_key > ? AND name_key < ? AND group_key != ? LIMIT ?",
        [stem + " ", stem + "!", stem, _STEM_NAMES_READ])]
    return len(others) == _STEM_NAMES_READ or any(key.rsplit(" ", 1)[-1] not in aliases.PART_NOUNS for key in others)


def merged_into(db: Queryable, entity_ids: Iterable[int]) -> dict[int, int]:
    """Of these entities, those merged into another (and held so), with the one each is now:
    a merge into an entity merged in turn is followed on (a merge never closes a loop:
    ``memctl.merging`` refuses one)."""
    found = _merged(db, set(entity_ids))
    while further := _merged(db, set(found.values())):
        found = {source: further.get(target, target) for source, target in found.items()}
    return found


def merged_sources(db: Queryable, entity_ids: set[int]) -> dict[int, list[int]]:
    """Of these entities, those that others were merged into (held so), with those others."""
    found: dict[int, list[int]] = {}
    for chunk, marks in in_chunks(sorted(entity_ids)):
        for from_id, into_id in db.execute(f"SELECT from_id, into_id FROM merges WHERE expired_at IS NULL "
                                           f"AND into_id IN ({marks}) ORDER BY from_id", chunk):
            found.setdefault(into_id, []).append(from_id)
    return found


def _merged(db: Queryable, entity_ids: set[int]) -> dict[int, int]:
    step: dict[int, int] = {}
    for chunk, marks in in_chunks(sorted(entity_ids)):
        step.update(db.execute(f"SELECT from_id, into_id FROM merges WHERE expired_at IS NULL AND from_id IN ({marks})",
                               chunk).fetchall())
    return step


def named(db: Queryable, name: str) -> int:
    """The entity ``name`` resolves to now (as a new mention of it would); NotFound if none."""
    reading = aliases.reading(name)
    held, _ = _held(db, {reading.key, reading.plain})
    by_group = None if held else _by_group(db, reading, _groups(db, {reading.group}).get(reading.group, []), True)
    entity_id = held.get(reading.key, held.get(reading.plain)) if held else by_group[0] if by_group else None
    if entity_id is None:
        raise NotFound(f"no entity named {name!r}; `memctl entities` lists them")
    return merged_into(db, {entity_id}).get(entity_id, entity_id)


def name_of(db: Queryable, entity_id: int) -> str:
    return db.execute("SELECT name FROM entities WHERE id = ?", [entity_id]).fetchone()[0]


def mentions(db: Queryable, entity_id: int) -> dict[int, tuple[int, int]]:
    """The active assertions that name the entity: id -> (subject id, object id)."""
    return {row[0]: (row[1], row[2]) for row in db.execute(
        """SELECT id, subject_id, object_id FROM assertions WHERE expired_at IS NULL AND subject_id = :e
           UNION SELECT id, subject_id, object_id FROM assertions WHERE expired_at IS NULL AND object_id = :e""",
        {"e": entity_id})}


def mentions_as_written(db: Queryable, entity_id: int) -> dict[int, tuple[tuple[int, str], tuple[int, str]]]:
    """The same, with each side's name as written: id -> ((subject id, subject), (object id, object))."""
    return {row[0]: ((row[1], row[2]), (row[3], row[4])) for row in db.execute(
        """SELECT id, subject_id, subject, object_id, object FROM assertions WHERE expired_at IS NULL AND subject_id = :e
           UNION SELECT id, subject_id, subject, object_id, object FROM assertions
                 WHERE expired_at IS NULL AND object_id = :e""", {"e": entity_id})}


def own_entity(db: Queryable, key: str) -> tuple[int | None, list[str]]:
    """The entity whose own key ``key`` is, if any, and the merges (operation ids) held
    that make it another entity."""
    row = db.execute("SELECT id FROM entities WHERE name_key = ?", [key]).fetchone()
    if row is None:
        return None, []
    return row[0], [r[0] for r in db.execute(
        "SELECT operation_id FROM merges WHERE from_id = ? AND expired_at IS NULL ORDER BY operation_id", [row[0]])]


def create(db: Database, name: str, key: str, at: str) -> int:
    """A new entity for a name split off: a group of its own, so no other name joins it by resolution."""
    return _inserted(db, name, key, key, at)


def _inserted(db: Database, name: str, key: str, group: str, at: str) -> int:
    # RETURNING, not lastrowid: a PostgreSQL cursor has no lastrowid.
    return db.execute("INSERT INTO entities (name, name_key, group_key, created_at) VALUES (?, ?, ?, ?) RETURNING id",
                      [name, key, group, at]).fetchone()[0]


def record_merge(db: Database, operation_id: str, from_id: int, into_id: int, at: str) -> None:
    if merged_into(db, {into_id}).get(into_id, into_id) == from_id:
        raise BadInput("that merge would make an entity part of itself")
    db.execute("INSERT INTO merges (operation_id, from_id, into_id, created_at) VALUES (?, ?, ?, ?)",
               [operation_id, from_id, into_id, at])


def end_merges(db: Database, at: str, *, operation_id: str | None = None, from_id: int | None = None) -> None:
    """The merges an operation made (or that make ``from_id`` another entity) end at ``at``."""
    column, value = ("operation_id", operation_id) if operation_id is not None else ("from_id", from_id)
    db.execute(f"UPDATE merges SET expired_at = ? WHERE {column} = ? AND expired_at IS NULL", [at, value])


def resume_merges(db: Database, from_id: int, operation_ids: list[str], ended_at: str) -> None:
    """Merges of ``from_id`` that ended at ``ended_at`` hold again (an undone split)."""
    for operation_id in operation_ids:
        db.execute("UPDATE merges SET expired_at = NULL WHERE operation_id = ? AND from_id = ? AND expired_at = ?",
                   [operation_id, from_id, ended_at])


def still_active(db: Queryable, assertion_ids: list[int]) -> list[int]:
    found: list[int] = []
    for chunk, marks in in_chunks(assertion_ids):
        found += [row[0] for row in db.execute(
            f"SELECT id FROM assertions WHERE expired_at IS NULL AND id IN ({marks})", chunk)]
    return found


def written_names(db: Queryable, entity_ids: set[int] | None = None) -> dict[int, dict[str, int]]:
    """Entity -> each name its active mentions wrote it as, with how many (of these
    entities, or of every entity with an active mention)."""
    where = ""
    params: list[int] = []
    if entity_ids is not None:
        marks = ", ".join("?" * len(entity_ids))
        where, params = f"AND {{column}} IN ({marks})", sorted(entity_ids)
    found: dict[int, dict[str, int]] = {}
    for id_column, form_column in (("subject_id", "subject"), ("object_id", "object")):
        for entity_id, form, count in db.execute(
                f"""SELECT {id_column}, {form_column}, count(*) FROM assertions
                    WHERE expired_at IS NULL {where.format(column=id_column)} GROUP BY {id_column}, {form_column}""",
                params):
            forms = found.setdefault(entity_id, {})
            forms[form] = forms.get(form, 0) + count
    return found


def entity_rows(db: Queryable, entity_ids: set[int]) -> dict[int, tuple[str, str, str | None]]:
    """Entity -> (name, name key, group key)."""
    found: dict[int, tuple[str, str, str | None]] = {}
    for chunk, marks in in_chunks(sorted(entity_ids)):
        found.update((row[0], tuple(row[1:])) for row in db.execute(
            f"SELECT id, name, name_key, group_key FROM entities WHERE id IN ({marks})", chunk))
    return found


def current_fact_counts(db: Queryable, entity_ids: set[int]) -> dict[int, int]:
    found: dict[int, int] = {}
    for chunk, marks in in_chunks(sorted(entity_ids)):
        found.update(db.execute(f"""SELECT subject_id, count(*) FROM facts WHERE expired_at IS NULL
                                    AND invalid_at IS NULL AND subject_id IN ({marks}) GROUP BY subject_id""", chunk))
    return found


# A value that this many subjects or fewer hold in a one-valued slot tells them alike; one
# that more hold ("language: Python") says nothing of which are the same.
TELLING_VALUE_HOLDERS = 5


def shared_values(db: Queryable) -> dict[tuple[int, int], list[tuple[str, int]]]:
    """Pairs of subjects (lower id first) whose current one-valued facts have the same value
    in the same slot, with those (predicate, value id): the same thing under two names
    has the same database."""
    pairs: dict[tuple[int, int], list[tuple[str, int]]] = {}
    holders: dict[tuple[str, int], set[int]] = {}
    for subject_id, predicate, object_id in db.execute(
            """SELECT subject_id, predicate, object_id FROM facts WHERE expired_at IS NULL AND invalid_at IS NULL
               AND cardinality = 'one'"""):
        holders.setdefault((predicate, object_id), set()).add(subject_id)
    for (predicate, object_id), subjects in holders.items():
        if 1 < len(subjects) <= TELLING_VALUE_HOLDERS:
            ordered = sorted(subjects)
            for i, first in enumerate(ordered):
                for second in ordered[i + 1:]:
                    pairs.setdefault((first, second), []).append((predicate, object_id))
    return pairs


def resolution_rules(db: Queryable, keys: set[str]) -> dict[str, str]:
    """Name key -> the rule that resolved it to an entity not its own, for those that did."""
    found: dict[str, str] = {}
    for chunk, marks in in_chunks(sorted(keys)):
        found.update(db.execute(f"SELECT name_key, rule FROM resolutions WHERE name_key IN ({marks})", chunk))
    return found


def entities_in_view(db: Queryable, name_keys: Iterable[str], limit: int) -> tuple[str, ...]:
    """The names the store gives the entities these keys name (their own keys, or names
    resolved to them before), in name order: what an extraction request lists, so that a
    model calls a known thing by its known name."""
    held, _ = _held(db, set(name_keys))
    if not held:
        return ()
    into = merged_into(db, set(held.values()))
    ids = {into.get(entity_id, entity_id) for entity_id in held.values()}
    shown = sorted({row[0] for row in entity_rows(db, ids).values()}, key=lambda name: (names.entity_key(name), name))
    return tuple(shown[:limit])
