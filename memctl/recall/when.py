"""The stretch of time a question names, for a question asked without a window.

"Who led billing in mid 2023?" asks about mid-2023, as ``--since 2023-05-01 --until
2023-09-01`` would: a person puts the time in the question. The phrases are the ones the
extractors read (``memctl.extract.dates``), each taken as the whole stretch it names:

- a day with its year ("on 2 April 2024", "2024-04-02"): that day;
- a month of a year ("in June 2024", "2024-06"), a quarter ("Q3 2024"): all of it;
- "early", "mid" or "late" and a year: its first four months, the four after, the last four;
- a year after "in", "during", "throughout" or "around": that year;
- a capitalised month alone ("in October"): the latest October that has begun;
- "yesterday", "today"; "last week" (the seven days before today), "last month", "last
  year" (the calendar ones before this); "N days / weeks / months / years ago".

The most precise phrase wins; words inside "quotes" are a phrase to search, not a time.
Pure: the question and the present in, UTC instants out.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import NamedTuple

# Tried before the date vocabulary is loaded (4 ms): most questions name no time.
_COULD_NAME_A_TIME = re.compile(r"(?i)\d{4}|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|last|ago|yesterday|"
                                r"today)")
_QUOTED = re.compile(r'"[^"]*"')


class NamedWindow(NamedTuple):
    since: str  # storage form, inclusive
    until: str  # storage form, exclusive
    words: str  # the question's words it was read from


def named_window(question: str, now: datetime) -> NamedWindow | None:
    """The stretch of time ``question`` names, seen from ``now`` (a UTC datetime); None
    when it names none."""
    text = _QUOTED.sub(" ", question)
    if not _COULD_NAME_A_TIME.search(text):
        return None
    from memctl import times

    for find in _FINDERS:
        found = find(text, now)
        if found is not None:
            (since, until), match = found
            return NamedWindow(times.to_storage(since), times.to_storage(until), match.group(0).strip())
    return None


Found = tuple[tuple[datetime, datetime], re.Match[str]]


def _months_later(first: datetime, months: int) -> datetime:
    month = first.month - 1 + months
    return first.replace(year=first.year + month // 12, month=month % 12 + 1, day=1)


def _day(text: str, now: datetime) -> Found | None:
    from memctl.extract import dates

    for match in dates.EXPLICIT_DAY.finditer(text):
        year, month, day = dates.day_parts(match.group(0))
        if year is None:  # "on June 20": which year's is not said
            continue
        try:
            first = dates.utc_day(year, month, day)
        except ValueError:  # 31 June
            continue
        return (first, first + timedelta(days=1)), match
    return None


def _quarter(text: str, now: datetime) -> Found | None:
    from memctl.extract import dates

    match = dates.QUARTER.search(text)
    if match is None:
        return None
    first = dates.quarter(match)
    return (first, _months_later(first, 3)), match


def _month_of_year(text: str, now: datetime) -> Found | None:
    from memctl.extract import dates

    match = dates.MONTH_OF_YEAR.search(text)
    if match is None:
        return None
    first = dates.month_of_year(match)
    return (first, _months_later(first, 1)), match


_PART_OF_YEAR = re.compile(r"(?i)\b(?P<part>early|mid|late)[\s-]+(?P<y>(?:19|20)\d{2})\b")
_PART_MONTHS = {"early": 0, "mid": 4, "late": 8}  # a third of the year each


def _part_of_year(text: str, now: datetime) -> Found | None:
    from memctl.extract import dates

    match = _PART_OF_YEAR.search(text)
    if match is None:
        return None
    first = _months_later(dates.utc_day(int(match["y"]), 1, 1), _PART_MONTHS[match["part"].lower()])
    return (first, _months_later(first, 4)), match


_IN_YEAR = re.compile(r"(?i)\b(?:in|during|throughout|around)\s+(?P<y>(?:19|20)\d{2})\b(?![.:/\-]\d)")


def _year(text: str, now: datetime) -> Found | None:
    from memctl.extract import dates

    match = _IN_YEAR.search(text)
    if match is None:
        return None
    first = dates.utc_day(int(match["y"]), 1, 1)
    return (first, _months_later(first, 12)), match


def _month_alone(text: str, now: datetime) -> Found | None:
    from memctl.extract import dates

    match = dates.IN_MONTH.search(text)
    if match is None:
        return None
    month = dates.MONTH_NUMBER[match["mon"].lower()]
    first = dates.utc_day(now.year - (month > now.month), month, 1)  # the latest that has begun
    return (first, _months_later(first, 1)), match


_DAY_WORDS = re.compile(r"(?i)\b(?P<word>yesterday|today)\b")


def _relative_day(text: str, now: datetime) -> Found | None:
    from memctl.extract import dates

    match = _DAY_WORDS.search(text)
    if match is None:
        return None
    first = dates.relative_day(match["word"], now)
    return (first, first + timedelta(days=1)), match


def _ago(text: str, now: datetime) -> Found | None:
    """The day, week, month or year that "N units ago" or "last unit" points into."""
    from memctl.extract import dates

    match = dates.AGO.search(text) or dates.LAST.search(text)
    if match is None:
        return None
    try:
        first, _ = dates.ago(match, now)
    except (ValueError, OverflowError):  # before year 1
        return None
    unit = match["unit"].lower()
    if unit == "day":
        return (first, first + timedelta(days=1)), match
    if unit == "week":
        return (first, first + timedelta(days=7)), match
    return (first, _months_later(first, 1 if unit == "month" else 12)), match


# Most precise first.
_FINDERS = (_day, _relative_day, _month_of_year, _quarter, _month_alone, _part_of_year, _ago, _year)
