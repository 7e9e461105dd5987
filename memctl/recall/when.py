"""The stretch of time a question names, for a question asked without a window.

"Who led billing in mid 2023?" asks about mid-2023, as ``--since 2023-05-01 --until
2023-09-01`` would: a person puts the time in the question. The phrases are the ones the
extractors read (``memctl.extract.dates``), each taken as the whole stretch it names:

- a day with its year ("on 2 April 2024", "2024-04-02"): that day;
- a month of a year ("in June 2024", "2024-06"), a quarter ("Q3 2024"): all of it;
- "early", "mid" or "late" and a year: its first four months, the four after, the last four;
- a year after "in", "during", "throughout" or "around": that year;
- a capitalised month alone ("in October"): the latest October that has begun;
- "yesterday" (and "last night"), "the day before yesterday"; "last February" (the latest
  February that has ended); "last week" (the seven days before today), "last month", "last year"
  (the calendar ones before this); "N days / weeks / months / years ago"; "a few" (or
  "several") "days / weeks / months ago": from five of them back to two;
- "this week" (from its Monday), "this month", "this year": all of it (recall looks no
  later than the asking time); "the past two weeks", "the last 3 days", "the past
  month": back that far from today, open towards the asking time;
- a weekday ("last Friday", "on Tuesday"): the latest such day before today; "last
  weekend": the latest Saturday and Sunday before today;
- a season (northern, by whole months: spring March–May, summer June–August, autumn
  September–November, winter December–February): "last spring", "in the summer", "this
  winter" the latest that has begun ("last" one that has ended), "spring 2023" that
  year's ("winter 2024" the one whose January is in 2024).

The most precise phrase wins; words inside "quotes" are a phrase to search, not a time.
After "since" or "from" a stretch is where the window starts, after "after" where it
ends, and before "before" or "until" where the window ends: "what changed since March
2024" has no end, "who led billing before 2024" no start; a bare year is read there too.
Pure: the question and the asking time (``now``: the present, or ``--as-of``) in, UTC
instants out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple

# Looked for before the date vocabulary is loaded (4 ms): most questions name no time, and
# every phrase read holds a year or one of these words.
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # the month each begins
_HINTS = frozenset({*_MONTHS, *(month[:3] for month in _MONTHS), "sept", "last", "ago", "yesterday", "week", "month",
                    "year", "weeks", "months", "years", "days", "past", "weekend", *_WEEKDAYS, *_SEASONS})


class NamedWindow(NamedTuple):
    since: str | None  # storage form, inclusive; None: open towards the past
    until: str | None  # storage form, exclusive; None: open towards the present
    words: str  # the question's words it was read from


def named_window(question: str, now: datetime) -> NamedWindow | None:
    """The stretch of time ``question`` names, seen from ``now`` (a UTC datetime); None
    when it names none."""
    words = re.findall(r"[a-z]+|\d+", question.lower())
    if not any(word in _HINTS or (len(word) == 4 and word[:2] in ("19", "20")) for word in words):
        return None
    from memctl import times

    text = re.sub(r'"[^"]*"', " ", question)  # a quoted phrase is searched for, not read
    impossible: list[tuple[int, int]] = []  # "31 June 2024": no part of it is read as a time either
    for pattern, start, end in _readings(now):
        for match in pattern.finditer(text):
            if any(match.start() < right and left < match.end() for left, right in impossible):
                continue
            try:
                first = start(match)
            except (ValueError, OverflowError):  # no such day (31 June), or before year 1
                impossible.append(match.span())
                continue
            if first is None:
                continue
            since: datetime | None = first
            until: datetime | None = end(first, match)
            # "since March 2024": the bound is before the phrase, or in it ("since 2023")
            before = _BOUND.search(text, 0, match.start())
            bound = (before["bound"] if before is not None else match.groupdict().get("bound") or "").lower()
            if bound:
                since, until = _OPEN_ENDS[bound](first, until)
                if since is not None and since > now:  # "after March", asked in March: not a time yet
                    continue
            return NamedWindow(None if since is None else times.to_storage(since),
                               None if until is None else times.to_storage(until),
                               text[before.start() if before is not None else match.start():match.end()].strip())
    return None


# (since, until) of a stretch after each bound word, from its (first, last) instants.
_OPEN_ENDS: dict[str, Callable[[datetime, datetime | None], tuple[datetime | None, datetime | None]]] = {
    "since": lambda first, _: (first, None), "from": lambda first, _: (first, None),
    "after": lambda _, last: (last, None),
    "before": lambda first, _: (None, first), "until": lambda first, _: (None, first),
    "till": lambda first, _: (None, first),
}


# Compiled when a question may name a time (re caches them), not by every recall's import.
_PART_OF_YEAR = r"(?i)\b(?P<part>early|mid|late)[\s-]+(?P<y>(?:19|20)\d{2})\b"
_PART_MONTHS = {"early": 0, "mid": 4, "late": 8}  # a third of the year each
_IN_YEAR = r"(?i)\b(?:in|during|throughout|around|(?P<bound>since|from|after|before|until|till))\s+" \
           r"(?P<y>(?:19|20)\d{2})\b(?![.:/\-]\d)"
# "since October": a capitalised month alone after a bound, as "in October" is read.
_BOUND_MONTH = r"\b(?P<bound>[Ss]ince|[Ff]rom|[Aa]fter|[Bb]efore|[Uu]ntil|[Tt]ill)\s+(?P<mon>{month})\b(?!\.?,?\s*\d)"
# The word that makes a stretch one end of the window, right before its phrase.
_BOUND = re.compile(r"(?i)\b(?P<bound>since|from|after|before|until|till)\s+(?:the\s+)?\Z")
# "Today" is not read: "what do we use today" asks about the present, which is the default.
_YESTERDAY = r"(?i)\b(?:yesterday|last\s+night)\b"
# "A few weeks ago", "several days ago": from five of the unit back to two.
_A_FEW_AGO = r"(?i)\b(?:a\s+few|several)\s+(?P<unit>day|week|month)s\s+ago\b"
A_FEW = (2, 5)
_DAY_BEFORE_YESTERDAY = r"(?i)\b(?:the\s+)?day\s+before\s+yesterday\b"
# "last February": the latest February that has ended (asked in February, a year back).
_LAST_MONTH_NAMED = r"\b[Ll]ast\s+(?P<mon>{month})\b(?!\.?,?\s*\d)"
_WEEKDAY = r"(?i)\b(?:last|on|this\s+past)\s+(?P<weekday>{})\b".format("|".join(_WEEKDAYS))
_LAST_WEEKEND = r"(?i)\b(?:last|this\s+past)\s+weekend\b"
_THIS = r"(?i)\bthis\s+(?P<unit>week|month|year)\b"
# "The past two weeks", "the last 3 days", "the past month": back from today to the asking time.
_PAST = r"(?i)\b(?:past|last)\s+(?:(?P<n>\d{{1,3}}|{numbers})\s+(?P<units>day|week|month|year)s|" \
        r"(?<=past\s)(?P<unit>day|week|month|year))\b"
# A season needs a word that makes it a time ("last spring", "in the summer", "winter
# 2024"): "Spring Boot" is a framework.
_SEASON = r"(?i)\b(?:(?P<rel>last|this|past)\s+|(?P<in>in|during)\s+(?:the\s+)?)?" \
          r"(?P<season>spring|summer|autumn|fall|winter)\b(?:,?\s+(?:of\s+)?(?P<y>(?:19|20)\d{2})\b)?"

Start = Callable[[re.Match[str]], "datetime | None"]
End = Callable[[datetime, re.Match[str]], "datetime | None"]  # None: open towards the asking time


def _readings(now: datetime) -> tuple[tuple[re.Pattern[str], Start, End], ...]:
    """(phrase, where the stretch it names starts (None: it names none), where it ends),
    most precise first."""
    from dateutil.relativedelta import relativedelta

    from memctl.extract import dates

    def day(match: re.Match[str]) -> datetime | None:
        year, month, number = dates.day_parts(match.group(0))
        return None if year is None else dates.utc_day(year, month, number)  # "on June 20": which year's?

    def latest_month_ended(match: re.Match[str]) -> datetime:
        month = dates.MONTH_NUMBER[match["mon"].lower()]
        return dates.utc_day(now.year - (month >= now.month), month, 1)

    def latest_month_named(match: re.Match[str]) -> datetime:
        month = dates.MONTH_NUMBER[match["mon"].lower()]
        return dates.utc_day(now.year - (month > now.month), month, 1)  # the latest that has begun

    def part_of_year(match: re.Match[str]) -> datetime:
        return dates.utc_day(int(match["y"]), 1, 1) + relativedelta(months=_PART_MONTHS[match["part"].lower()])

    units = {"day": relativedelta(days=1), "week": relativedelta(weeks=1), "month": relativedelta(months=1),
             "year": relativedelta(years=1)}

    def span(length: relativedelta) -> End:
        return lambda first, _: first + length

    def one_of_its_unit(first: datetime, match: re.Match[str]) -> datetime:  # "3 weeks ago": that week
        return first + units[match["unit"].lower()]

    today = dates.start_of_day(now)

    def weekday(match: re.Match[str]) -> datetime:  # the latest before today ("on Friday", asked on a Friday: a week back)
        back = (today.weekday() - _WEEKDAYS.index(match["weekday"].lower())) % 7 or 7
        return today - relativedelta(days=back)

    def last_weekend(_: re.Match[str]) -> datetime:  # its Saturday, at least two days back: its Sunday is over
        back = (today.weekday() - 5) % 7
        return today - relativedelta(days=back if back >= 2 else back + 7)

    def this(match: re.Match[str]) -> datetime:
        unit = match["unit"].lower()
        if unit == "week":
            return today - relativedelta(days=today.weekday())
        return dates.utc_day(now.year, now.month if unit == "month" else 1, 1)

    def past(match: re.Match[str]) -> datetime:
        count = match["n"]
        n = 1 if count is None else int(count) if count.isdigit() else dates.NUMBERS[count.lower()]
        return today - n * units[(match["units"] or match["unit"]).lower()]

    def season(match: re.Match[str]) -> datetime | None:
        first_month = _SEASONS[match["season"].lower()]
        if match["y"] is not None:  # "winter 2024": the one whose January is in 2024
            return dates.utc_day(int(match["y"]) - (first_month == 12), first_month, 1)
        rel = (match["rel"] or "").lower()
        if not rel and not match["in"]:
            return None
        # "last spring": the latest that has ended; "this spring", "in the spring": the latest begun
        ended = rel in ("last", "past")
        for year in range(now.year, now.year - 3, -1):
            first = dates.utc_day(year, first_month, 1)
            if first + relativedelta(months=3 if ended else 0) <= now:
                return first
        return None

    return (
        (dates.EXPLICIT_DAY, day, span(units["day"])),
        (re.compile(_DAY_BEFORE_YESTERDAY), lambda _: dates.relative_day("yesterday", now) - units["day"],
         span(units["day"])),
        (re.compile(_YESTERDAY), lambda _: dates.relative_day("yesterday", now), span(units["day"])),
        (re.compile(_WEEKDAY), weekday, span(units["day"])),
        (re.compile(_LAST_WEEKEND), last_weekend, span(relativedelta(days=2))),
        (dates.MONTH_OF_YEAR, dates.month_of_year, span(units["month"])),
        (dates.QUARTER, dates.quarter, span(relativedelta(months=3))),
        (re.compile(_LAST_MONTH_NAMED.format(month=dates.CAPITALISED_MONTH)), latest_month_ended, span(units["month"])),
        (dates.IN_MONTH, latest_month_named, span(units["month"])),
        (re.compile(_BOUND_MONTH.format(month=dates.CAPITALISED_MONTH)), latest_month_named, span(units["month"])),
        (re.compile(_SEASON), season, span(relativedelta(months=3))),
        (re.compile(_PART_OF_YEAR), part_of_year, span(relativedelta(months=4))),
        (dates.AGO, lambda m: dates.ago(m, now)[0], one_of_its_unit),
        (re.compile(_A_FEW_AGO), lambda m: today - A_FEW[1] * units[m["unit"].lower()],
         lambda first, m: first + (A_FEW[1] - A_FEW[0]) * units[m["unit"].lower()]),
        (re.compile(_PAST.format(numbers="|".join(sorted(dates.NUMBERS, key=len, reverse=True)))), past,
         lambda *_: None),
        (dates.LAST, lambda m: dates.ago(m, now)[0], one_of_its_unit),
        (re.compile(_THIS), this, lambda first, match: first + units[match["unit"].lower()]),
        (re.compile(_IN_YEAR), lambda m: dates.utc_day(int(m["y"]), 1, 1), span(units["year"])),
    )
