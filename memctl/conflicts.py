"""Conflicts: statements about a one-valued slot that cannot all be true (architecture §1,
"Conflicts"). Pure: a slot's statements in, its conflict groups out.

A statement (an active assertion that starts a value) *claims* its value over a stretch
of valid time: from its start to its stated end, or, with none, to when it was said (its
episode's reference time): "billing has used Postgres since 2022", said in June 2024,
claims Postgres for all of 2022 to June 2024. A statement said before the time it starts
(a plan) claims only its start. Two statements conflict when they come from different
episodes, give different values, and their claims meet, unless one of the two episodes
says that the other's value ended (it states the change).

So plain supersession is no conflict: "billing uses MySQL" said in January and "billing
moved to Postgres" said in March claim January and March, which do not meet. Two values
said from one instant are one ("moved to Postgres in March" and "moved to MySQL in
March"); so is a later statement that a value holds over a time for which another value
had been stated ("MySQL since 2023", said in May, then "Postgres since 2022, and still",
said in June).

Statements in conflict with each other, directly or through others, form a group. A
group is closed by a later statement, one that starts after the group's claims meet for
the last time and was said after all of its statements ("billing moved to SQLite in
2025"), or by ``memctl resolve``, which takes the values not kept out (``settle``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from memctl.results import Conflict
from memctl.store import Queryable, Slot


class Statement(NamedTuple):
    """One active assertion of a one-valued slot, as conflict finding reads it."""

    assertion_id: int
    episode_id: str
    ordinal: int
    object_id: int
    valid_at: str | None  # None: a retraction, which only ever says a value ended
    invalid_at: str | None
    reference_time: str  # when it was said

    def claim(self) -> tuple[str, str, bool] | None:
        """(start, end, whether the end is in it) of the valid time it says its value held."""
        if self.valid_at is None:
            return None
        if self.invalid_at is not None:
            return self.valid_at, self.invalid_at, False
        return self.valid_at, max(self.valid_at, self.reference_time), True


class Group(NamedTuple):
    """Statements that cannot all be true, and the valid time over which they meet."""

    id: str
    subject_id: int
    predicate_key: str
    statements: tuple[Statement, ...]  # in timeline order
    since: str  # where the first two claims meet
    until: str  # where the last two stop meeting (the end of the stretch)
    closed_by: Statement | None  # the later statement that closed it, if one did by the asking time

    def values(self) -> list[int]:
        return list(dict.fromkeys(statement.object_id for statement in self.statements))


def _meet(a: tuple[str, str, bool], b: tuple[str, str, bool]) -> tuple[str, str] | None:
    """Where two claims overlap (its start and end), or None."""
    start, end = max(a[0], b[0]), min(a[1], b[1])
    end_in = (a[2] if a[1] == end else True) and (b[2] if b[1] == end else True)
    if start < end or (start == end and end_in):
        return start, end
    return None


def groups_of_slot(subject_id: int, predicate_key: str, statements: Iterable[Statement], *,
                   as_of: str | None = None) -> list[Group]:
    """The conflict groups among one slot's active statements, as said by ``as_of`` (all
    when None); each with the later statement that closed it by then, if any."""
    said = [s for s in statements if as_of is None or s.reference_time <= as_of]
    ends: dict[str, set[int]] = {}  # episode -> the values it says ended
    for statement in said:
        if statement.invalid_at is not None:
            ends.setdefault(statement.episode_id, set()).add(statement.object_id)
    claims = sorted(((claim, s) for s in said if (claim := s.claim()) is not None),
                    key=lambda item: (item[0], item[1].assertion_id))
    parent: dict[int, int] = {}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    spans: dict[int, tuple[str, str]] = {}  # a root's stretch of meeting claims
    for i, (claim, statement) in enumerate(claims):
        for j in range(i + 1, len(claims)):
            other_claim, other = claims[j]
            if other_claim[0] > claim[1]:
                break  # sorted by start: no later claim meets this one
            if (other.object_id == statement.object_id or other.episode_id == statement.episode_id
                    or statement.object_id in ends.get(other.episode_id, ())
                    or other.object_id in ends.get(statement.episode_id, ())):
                continue
            met = _meet(claim, other_claim)
            if met is None:
                continue
            for k in (i, j):
                parent.setdefault(k, k)
            a, b = root(i), root(j)
            joined = [span for span in (spans.pop(a, None), spans.pop(b, None), met) if span is not None]
            parent[b] = a
            spans[a] = (min(span[0] for span in joined), max(span[1] for span in joined))
    members: dict[int, list[int]] = {}
    for i in parent:
        members.setdefault(root(i), []).append(i)
    groups = []
    for head, indexes in members.items():
        group = tuple(claims[i][1] for i in sorted(indexes))
        since, until = spans[head]
        last_said = max(statement.reference_time for statement in group)
        in_group = {statement.assertion_id for statement in group}
        closers = [statement for claim, statement in claims if statement.assertion_id not in in_group
                   and claim[0] > until and statement.reference_time >= last_said
                   and (as_of is None or claim[0] <= as_of)]
        groups.append(Group(group_id(subject_id, predicate_key, group), subject_id, predicate_key, group, since, until,
                            min(closers, key=lambda s: (s.valid_at, s.reference_time)) if closers else None))
    return sorted(groups, key=lambda group: (group.since, group.id))


def group_id(subject_id: int, predicate_key: str, statements: Sequence[Statement]) -> str:
    """A group's name: its slot and its statements (each by episode and place in it), so
    that it stays the same while they do."""
    import hashlib  # 3 ms to import: only where a store has a conflict, not in every recall

    parts = sorted(f"{s.episode_id}:{s.ordinal}" for s in statements)
    digest = hashlib.sha1(f"{subject_id}\x00{predicate_key}\x00{' '.join(parts)}".encode()).hexdigest()
    return f"cf_{digest[:12]}"


# --- reading them from the store ------------------------------------------------------

STATEMENTS_SHOWN = 3  # of a value's statements in a group, the latest this many


def groups_of_slots(db: Queryable, slots: Iterable[Slot], *, as_of: str,
                    known_at: str | None) -> dict[Slot, list[Group]]:
    """Each slot's conflict groups among its statements held at ``known_at`` and said by ``as_of``."""
    from memctl.store import conflicts as store

    return {slot: groups for slot, rows in store.statements(db, slots, known_at).items()
            if (groups := groups_of_slot(*slot, (Statement(*row) for row in rows), as_of=as_of))}


def listed(db: Queryable, *, as_of: str, known_at: str | None, closed: bool = False) -> list[Conflict]:
    """Every open conflict group at ``as_of`` (with ``closed``, the closed ones too), the
    latest first: ``memctl conflicts``."""
    from memctl.store import conflicts as store

    found = groups_of_slots(db, store.rival_slots(db, known_at), as_of=as_of, known_at=known_at)
    groups = [group for groups in found.values() for group in groups if closed or group.closed_by is None]
    return sorted(described(db, groups, as_of=as_of, known_at=known_at), key=lambda c: (c.until, c.conflict_id),
                  reverse=True)


def described(db: Queryable, groups: Sequence[Group], *, as_of: str, known_at: str | None) -> list[Conflict]:
    """The groups as a person reads them: names, sentences, the value that holds."""
    from memctl.store import conflicts as store
    from memctl.store.reads import entity_names

    slots = {(group.subject_id, group.predicate_key) for group in groups}
    held = store.values_held(db, slots, as_of, known_at)
    shown = {group.id: _shown(group) for group in groups}
    closers = [group.closed_by for group in groups if group.closed_by is not None]
    sentences = store.sentences(db, {s.assertion_id for statements in shown.values() for s in statements}
                                | {s.assertion_id for s in closers})
    names = entity_names(db, {group.subject_id for group in groups} | set(held.values())
                         | {s.object_id for group in groups for s in group.statements}
                         | {s.object_id for s in closers})
    predicates = store.slot_names(db, slots)

    def said(statement: Statement) -> dict:
        return {"episode_id": statement.episode_id, "fact": sentences.get(statement.assertion_id, ""),
                "valid_at": statement.valid_at, **({"invalid_at": statement.invalid_at} if statement.invalid_at else {}),
                "said_at": statement.reference_time}

    result = []
    for group in groups:
        slot = (group.subject_id, group.predicate_key)
        by_value: dict[int, list[dict]] = {}
        for statement in shown[group.id]:
            by_value.setdefault(statement.object_id, []).append(said(statement))
        holds = held.get(slot)
        result.append(Conflict(
            conflict_id=group.id, subject=names.get(group.subject_id, ""), predicate=predicates[slot],
            since=group.since, until=group.until, status="open" if group.closed_by is None else "closed",
            holds=names.get(holds) if holds is not None else None,
            values=[{"value": names.get(object_id, ""), "statements": statements}
                    for object_id, statements in by_value.items()],
            closed_by=None if group.closed_by is None else {"value": names.get(group.closed_by.object_id, ""),
                                                            **said(group.closed_by)}))
    return result


def _shown(group: Group) -> list[Statement]:
    """Each value's latest statements in the group (said last first), values in timeline order."""
    by_value: dict[int, list[Statement]] = {}
    for statement in group.statements:
        by_value.setdefault(statement.object_id, []).append(statement)
    return [s for statements in by_value.values()
            for s in sorted(statements, key=lambda s: s.reference_time, reverse=True)[:STATEMENTS_SHOWN]]


def of_facts(db: Queryable, facts: dict[int, tuple[Slot, int, str, str | None]], *, as_of: str,
             known_at: str | None) -> dict[int, list[dict[str, Any]]]:
    """Of these facts, those in an open conflict at ``as_of``: fact id → the other values'
    statements (``Fact.conflicts``). A fact is in a group when its value is one of the
    group's, and its valid time meets the group's stretch or holds the start of one of the
    group's statements of its value (which it then rests on: the value the timeline cut
    short is in the conflict too). ``facts``: as ``store.conflicts.contested_facts`` gives them."""
    found = groups_of_slots(db, {slot for slot, *_ in facts.values()}, as_of=as_of, known_at=known_at)
    open_groups = [group for groups in found.values() for group in groups if group.closed_by is None]
    if not open_groups:
        return {}
    conflicts = {conflict.conflict_id: conflict for conflict in described(db, open_groups, as_of=as_of,
                                                                          known_at=known_at)}
    result: dict[int, list[dict[str, Any]]] = {}
    for fact_id, (slot, object_id, valid_at, invalid_at) in facts.items():
        for group in found.get(slot, ()):
            if group.closed_by is not None or object_id not in group.values():
                continue
            meets = valid_at <= group.until and (invalid_at is None or invalid_at > group.since)
            if not meets and not any(s.object_id == object_id and s.valid_at is not None and valid_at <= s.valid_at
                                     and (invalid_at is None or s.valid_at < invalid_at) for s in group.statements):
                continue
            conflict = conflicts[group.id]
            # ``described`` lists a group's values in the order of ``Group.values``
            others = [value for value, v_id in zip(conflict.values, group.values(), strict=True) if v_id != object_id]
            result.setdefault(fact_id, []).extend(
                {"conflict_id": group.id, "value": value["value"], **statement}
                for value in others for statement in value["statements"])
    return result
