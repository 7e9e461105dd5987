"""An entity's summary: what is true about it at a time, and what it replaced, in a few
lines an agent reads first (issue 29, its offline part).

Built from the entity's facts as memctl held them at ``known_at``, valid by ``as_of``:
for each slot, the values that hold then with the day each began and the value it
replaced; then the slots whose last value ended, with the day it did. Deterministic, no
model, exact at any time, at most ``SUMMARY_CHARS``. Pure: facts in, text out.
"""

from __future__ import annotations

from collections.abc import Sequence

from memctl.results import Fact

SUMMARY_CHARS = 600
REPLACED_SHOWN = 2  # of the values a slot held before, the latest this many


def offline_summary(entity: str, facts: Sequence[Fact], as_of: str) -> str:
    """``entity``'s facts (their status at ``as_of``, predicate key, in valid-time order)
    as a few lines. A one-valued slot says the values it held before; in a many-valued
    one, values do not replace each other, and one that ended says so."""
    slots: dict[str, list[Fact]] = {}
    for fact in facts:
        slots.setdefault(fact.predicate_key or fact.predicate, []).append(fact)
    holding, ended = [], []
    for versions in slots.values():
        predicate = versions[-1].predicate  # as last said
        now = [fact for fact in versions if fact.status == "current"]
        past = [fact for fact in reversed(versions) if fact.status != "current"]
        held_now = {fact.object for fact in now}
        many = versions[-1].cardinality == "many"
        if not now and not many:  # the slot's last value ended
            ended.append(f"{predicate} {versions[-1].object} (until {_day(versions[-1].invalid_at)})")
            continue
        if many:  # each value that ended, the latest first
            gone = {fact.object: fact for fact in past if fact.object not in held_now}
            ended += [f"{predicate} {value} (until {_day(fact.invalid_at)})" for value, fact in gone.items()]
        if not now:
            continue
        line = f"{predicate} " + ", ".join(f"{fact.object} (since {_day(fact.valid_at)})" for fact in now)
        replaced = list(dict.fromkeys(fact.object for fact in past if fact.object not in held_now))
        if replaced and not many:
            line += "; before: " + ", ".join(replaced[:REPLACED_SHOWN]) + (" …" if len(replaced) > REPLACED_SHOWN else "")
        holding.append(line)
    if not holding and not ended:
        return f"{entity}, as of {_day(as_of)}: nothing known yet."
    parts = [f"{entity}, as of {_day(as_of)}:", *(f"{line}." for line in holding)]
    if ended:
        parts.append("No longer: " + "; ".join(ended) + ".")
    return _cut(" ".join(parts))


def _day(instant: str | None) -> str:
    return "…" if instant is None else instant[:10]


def _cut(text: str) -> str:
    """``text`` in SUMMARY_CHARS, cut after a whole sentence or clause where it can be."""
    if len(text) <= SUMMARY_CHARS:
        return text
    head = text[:SUMMARY_CHARS - 1]
    end = max(head.rfind(". "), head.rfind("; "))
    return (head[:end + 1] if end > SUMMARY_CHARS // 2 else head.rstrip()) + " …"
