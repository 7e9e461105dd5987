"""The date guard: dates an extractor invented are replaced before anything is stored.

architecture §3. Models asked about a past conversation answer "today at midnight" for dates
the text never gave (an issue with 1,384 real edges found 56% of ``valid_at`` were that).
The guard is pure: an assertion's fields, the episode text and its reference time in; the
fields with honest dates and the list of what changed out. It runs on the fields before
an ``Assertion`` is built, so the interval check (an end after its start) sees the dates
after the guard: a reply whose only fault was an invented date is never rejected for it.
``repair`` (architecture §3) uses the same reading of the text on assertions already stored.

- ``valid_at`` at clean midnight UTC on the day the extraction ran (the signature
  ``dates.is_extraction_day_midnight``), for an episode from another day, when the text
  states no such date → the reference time (evidence ``reference``). Such an
  ``invalid_at`` → dropped.
- A date after the reference time that the text does not state is treated the same
  way: an episode cannot know what happened after it unless it says so.
- A date the text states may be a day ("on 20 June 2022", "yesterday") or a period named
  by its first day with the precision it carries ("October 2024" a month, "Q3 2024" a
  quarter, "since 2019" a year). Such a date is kept, and a claim finer than the text
  ("2024-10-01", precision day, for "October 2024") is given the text's precision.
- When the assertion's ``date_span`` is in the text, the date it names that the dates left
  standing do not account for is used instead of the reference time: a model that quotes
  "on 20 June 2022" but writes today's date got the words right and the date wrong. A
  span that names two dates ("from 2019 until 2021") gives both, earlier the start.
- A start that was invented, before a stated end that the episode's own time is not
  before, is dropped instead: the text gives the end and no start (a retraction).

The text is checked here, not the evidence the extractor claimed: a model that says
"text" can be wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from memctl import times
from memctl.extract import dates
from memctl.model import Assertion, Evidence, Precision
from memctl.times import MIDNIGHT

# finest first: a date named as a day is also the first day of its month
PRECISIONS: tuple[Precision, ...] = ("instant", "day", "month", "quarter", "year")


class Stated(NamedTuple):
    """How the text names a date: the precision it carries and whether it gives the date
    itself (``text``) or relative to the episode's time (``relative``)."""

    precision: Precision
    evidence: Evidence


def _finer(precision: str | None, than: str) -> bool:
    return precision in PRECISIONS and PRECISIONS.index(precision) < PRECISIONS.index(than)


def _blank(text: str, *patterns: re.Pattern[str]) -> str:
    """``text`` with what the patterns match replaced by spaces, so what is read next
    cannot match inside it."""
    for pattern in patterns:
        text = pattern.sub(lambda match: " " * len(match[0]), text)
    return text


# What every date phrase ``stated_dates`` reads holds: a digit (a day, a year, a quarter,
# "3 days ago"), a word of a relative one, or a month's name ("in March"). A text with
# none of them states no date, which is most of them: a repair reads 100k episodes.
_COULD_STATE = re.compile(r"\d|ago|last|today|tonight|morning|yesterday|tomorrow|"
                          + "|".join(dates.MONTH_NAMES), re.IGNORECASE)


def stated_dates(text: str, reference_time: str) -> dict[str, Stated]:
    """Every date the text names, by the day it starts (``YYYY-MM-DD``), resolved against
    its reference time; a day named more than one way keeps the finest.

    Generous: a date counts when the text could mean it, so "June 20" is that day of the
    reference's year even when it is after the reference time (a plan), and "in October"
    the next October from the reference's month.
    """
    if not _COULD_STATE.search(text):
        return {}
    reference = times.from_storage(reference_time)
    found: dict[str, Stated] = {}

    def note(when: datetime, precision: Precision, evidence: Evidence) -> None:
        day = when.date().isoformat()
        known = found.get(day)
        if known is None or _finer(precision, known.precision) or (
                precision == known.precision and evidence == "text"):
            found[day] = Stated(precision, evidence)

    for match in dates.EXPLICIT_DAY.finditer(text):
        try:
            note(dates.explicit_day(match[0], reference), "day", "text")
        except ValueError:
            continue  # "31 June": not a day
    lowered = text.lower()
    for words in dates.RELATIVE_DAYS:
        if words in lowered:
            note(dates.relative_day(words, reference), "day", "relative")
    for pattern in (dates.AGO, dates.LAST):
        for match in pattern.finditer(text):
            try:
                when, precision = dates.ago(match, reference)
            except (ValueError, OverflowError):
                continue  # before year 1
            note(when, precision, "relative")
    rest = _blank(text, dates.EXPLICIT_DAY)
    for match in dates.MONTH_OF_YEAR.finditer(rest):
        note(dates.month_of_year(match), "month", "text")
    for match in dates.QUARTER.finditer(rest):
        note(dates.quarter(match), "quarter", "text")
    rest = _blank(rest, dates.MONTH_OF_YEAR, dates.QUARTER)
    for match in dates.LONE_YEAR.finditer(rest):
        note(dates.utc_day(int(match["y"]), 1, 1), "year", "text")
    for match in dates.IN_MONTH.finditer(rest):
        note(dates.next_month_named(match, reference), "month", "relative")
    return found


class _SpanDate(NamedTuple):
    at: str  # storage form
    day: str
    stated: Stated


def _dates_of_span(span: str | None, text: str, reference_time: str) -> list[_SpanDate]:
    """The dates that ``span`` names, earliest first, if the span really is in the text."""
    if not span or span not in text:
        return []
    return [_SpanDate(f"{day}{MIDNIGHT}", day, named)
            for day, named in sorted(stated_dates(span, reference_time).items())]


def _invented(stored: str, extracted_at: str | None, reference_time: str, stated: Mapping[str, Stated]) -> str | None:
    """Why a stored date is not to be believed, or None when it may stand."""
    day = stored[:10]
    if day in stated:
        return None
    if (extracted_at is not None and dates.is_extraction_day_midnight(stored, extracted_at)
            and reference_time[:10] != day):
        return "midnight on the day of extraction, not stated in the text"
    if stored > reference_time:
        return "after the episode, not stated in the text"
    return None


def _coarser_in_text(stored: str | None, precision: str | None, evidence: str | None,
                     stated: Mapping[str, Stated]) -> Stated | None:
    """What the text states when a date claims more of it than the text gives: a day at
    the start of a month, quarter or year the text names only as such."""
    if stored is None or evidence == "reference" or not stored.endswith(MIDNIGHT):
        return None
    named = stated.get(stored[:10])
    if named is None or named.precision in ("instant", "day") or not (
            precision is None or _finer(precision, named.precision)):
        return None
    return named


def guard_fields(fields: Mapping[str, Any], text: str, reference_time: str,
                 stated: Mapping[str, Stated] | None = None) -> tuple[dict[str, Any], list[str]]:
    """An assertion's fields (as ``Assertion(**fields)`` takes them) with invented dates
    replaced, and a line per change. ``stated``: ``stated_dates(text, reference_time)``,
    when the caller guards several assertions of one episode.

    The result may still not be an assertion: a stated start after a stated end is the
    model's mistake to correct, not the guard's to guess.
    """
    if stated is None:
        stated = stated_dates(text, reference_time)
    out = dict(fields)
    changes: list[str] = []
    extracted_at = fields.get("extracted_at")
    start, end = fields.get("valid_at"), fields.get("invalid_at")
    start_why = _invented(start, extracted_at, reference_time, stated) if start is not None else None
    end_why = _invented(end, extracted_at, reference_time, stated) if end is not None else None
    # The span's words name the assertion's dates ("since 2019", "from 2019 until 2021"):
    # those the dates that stand do not account for are the ones an invented date replaces.
    kept = {date[:10] for date, why in ((start, start_why), (end, end_why)) if date is not None and not why}
    free = [named for named in _dates_of_span(fields.get("date_span"), text, reference_time)
            if named.day not in kept]
    start_from_span = end_from_span = None
    if start_why and end_why and len(free) == 2:
        start_from_span, end_from_span = free  # both from words that give the interval
    elif start_why and len(free) == 1:
        start_from_span = free[0]
    elif end_why and len(free) == 1:
        end_from_span = free[0]

    if start_why:
        if start_from_span is not None:
            out.update(valid_at=start_from_span.at, valid_at_evidence=start_from_span.stated.evidence,
                       valid_at_precision=start_from_span.stated.precision)
        elif end is not None and not end_why and end <= reference_time:
            # the text gives the end and no start: what ended, ended then
            out.update(valid_at=None, valid_at_evidence=None, valid_at_precision=None)
            start_why += "; the episode's time is not before the stated end, so the text gives no start"
        else:
            out.update(valid_at=reference_time, valid_at_evidence="reference", valid_at_precision="instant")
            if end is None or end_why and end_from_span is None:
                out["date_span"] = None  # no date of the assertion is in the words any more
        changes.append(f"valid_at {start} → {out['valid_at'] or 'none'}: {start_why}")
    if end_why:
        new_start = out["valid_at"]
        if end_from_span is not None and (new_start is None or end_from_span.at > new_start):
            out.update(invalid_at=end_from_span.at, invalid_at_evidence=end_from_span.stated.evidence,
                       invalid_at_precision=end_from_span.stated.precision)
            changes.append(f"invalid_at {end} → {end_from_span.at}: {end_why}")
        else:
            out.update(invalid_at=None, invalid_at_evidence=None, invalid_at_precision=None)
            changes.append(f"invalid_at {end} dropped: {end_why}")
    for column, why in (("valid_at", start_why), ("invalid_at", end_why)):
        named = None if why else _coarser_in_text(out[column], out.get(f"{column}_precision"),
                                                  out.get(f"{column}_evidence"), stated)
        if named is not None:
            changes.append(f"{column} precision {out.get(f'{column}_precision')} → {named.precision}: "
                           f"the text names the {named.precision}, not the day")
            out[f"{column}_precision"] = named.precision
    if changes and out["valid_at"] is None and out["invalid_at"] is None:
        # a retraction whose only date was invented ends at the episode's time
        out.update(invalid_at=reference_time, invalid_at_evidence="reference", invalid_at_precision="instant")
    return out, changes


def guard(assertion: Assertion, text: str, reference_time: str,
          stated: Mapping[str, Stated] | None = None) -> tuple[Assertion, list[str]]:
    """``guard_fields`` on a built assertion. Raises ``InvalidAssertion`` when the guarded
    dates are no interval; see ``guard_fields``."""
    fields, changes = guard_fields(assertion._asdict(), text, reference_time, stated)
    return (Assertion(**fields) if changes else assertion), changes
