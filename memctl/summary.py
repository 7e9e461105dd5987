"""An entity's summary: what is true about it at a time, and what it replaced, in a few
lines an agent reads first; and the novelty gate that decides when a model rewrites one.
Pure: facts and gate state in, text and decisions out (``memctl.summarize`` runs them).

The offline summary is built from the entity's facts as memctl held them at
``known_at``, valid by ``as_of``: for each slot, the values that hold then with the day
each began and the value it replaced; then the slots whose last value ended, with the day
it did. Deterministic, no model, exact at any time, at most ``SUMMARY_CHARS``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Literal

from memctl import times
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
    parts = [f"{entity}, as of {_day(as_of)}:", *(line if line.endswith("…") else f"{line}." for line in holding)]
    if ended:
        parts.append("No longer: " + "; ".join(ended) + ".")
    return cut(" ".join(parts))


def _day(instant: str | None) -> str:
    return "…" if instant is None else instant[:10]


def cut(text: str, most: int = SUMMARY_CHARS) -> str:
    """``text`` in ``most`` characters, cut after a whole sentence or clause where it can be."""
    if len(text) <= most:
        return text
    head = text[:most - 2]
    end = max(head.rfind(". "), head.rfind("; "))
    return (head[:end + 1] if end > most // 2 else head.rstrip()) + " …"


def facts_hash(rows: Iterable[tuple]) -> str:
    """The fact set a summary is written from, as a short hash: each fact version's
    (predicate key, value, valid_at, invalid_at, end_reason), as ``store.summaries.fact_rows``
    gives them. The same set, after an undo say, gives the same hash."""
    import hashlib  # 3 ms to import: not in every recall

    payload = json.dumps(sorted(list(row) for row in rows), separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


# --- the novelty gate (docs/summaries.md) ---------------------------------------------------

# An entity changed by this many operations since its summary is in a burst: its summary
# waits until no change has come for BURST_QUIET, or until BURST_CAP operations.
BURST_PASSES = 3
BURST_QUIET = timedelta(minutes=10)
BURST_CAP = 20
# A summary older than this is rewritten at its entity's next change, whatever it is.
STALE_AFTER = timedelta(days=7)

Reason = Literal["new", "invalidated", "burst", "stale", "fresh"]


def decide(*, invalidated: bool, passes: int, last_changed_at: str | None, refreshed_at: str | None,
           now: str) -> tuple[bool, Reason]:
    """(whether to ask the model now, why) for an entity whose facts changed, to a set
    no summary was written for. Refreshed: a fact of it ended, was superseded or went
    (``invalidated``); it has had none (``new``, before any other reason); its summary is older than
    STALE_AFTER (``stale``); its burst of changes ended, or reached BURST_CAP (``burst``).
    Waiting: a burst still going on (``burst``), or only facts begun since a summary
    written lately (``fresh``). Meanwhile the offline summary, always exact, is served."""
    if refreshed_at is None:
        return True, "new"
    if invalidated:
        return True, "invalidated"
    at = times.from_storage(now)
    if at - times.from_storage(refreshed_at) >= STALE_AFTER:
        return True, "stale"
    if passes >= BURST_CAP:
        return True, "burst"
    if passes >= BURST_PASSES:
        quiet = last_changed_at is not None and at - times.from_storage(last_changed_at) >= BURST_QUIET
        return quiet, "burst"
    return False, "fresh"
