"""Date phrases of English text, the days they name, and the signature of an invented date.

One vocabulary for the two readers of dates in an episode's text (architecture §3): the rules
extractor, which takes one date per sentence and only the past, and the date guard, which
collects every day a text names to tell a stated date from an invented one. Each builds
its own phrases from the pieces here (they want different things: the guard reads "June
20" as a day of the reference's year, the rules only "on June 20", as the latest such day
not after it), and what a phrase means is resolved here, the same for both.

Pure: a phrase and the reference time in, a UTC day out; no clock, no I/O, no SQL.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from memctl.times import MIDNIGHT

if TYPE_CHECKING:  # the model needs pydantic, which recall (a user of this module) does not load
    from memctl.model import Precision

# ------------------------------------------------------------------------------------ months

MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
               "november", "december")
# a month is also written with its first three letters, and September as "sept"
MONTH_NUMBER = ({name: number for number, name in enumerate(MONTH_NAMES, start=1)}
                | {name[:3]: number for number, name in enumerate(MONTH_NAMES, start=1)} | {"sept": 9})
MONTH_ABBREVIATIONS = frozenset(MONTH_NUMBER) - frozenset(MONTH_NAMES)
# Any month name, for patterns that ignore case. Longest first, so that "june" is not read as "jun".
MONTH = "(?:" + "|".join(sorted(MONTH_NUMBER, key=len, reverse=True)) + ")"
# Only a capitalised full name: for phrases that have no year to show that "may" or "march" is a month.
CAPITALISED_MONTH = "(?:" + "|".join(name.capitalize() for name in MONTH_NAMES) + ")"
ORDINAL = r"(?:st|nd|rd|th)?"

# ------------------------------------------------------------------------------ explicit days

ISO_DAY = r"\d{4}-\d{2}-\d{2}"  # 2022-06-20
DAY_MONTH = rf"\d{{1,2}}{ORDINAL}\s+(?:of\s+)?{MONTH}\.?"  # 20 June, 20th of June
MONTH_DAY = rf"{MONTH}\.?\s+\d{{1,2}}{ORDINAL}"  # June 20
AND_YEAR = r",?\s+\d{4}"  # the year after either: "20 June 2022", "June 20, 2022"
# Every way a text writes one calendar day, its year optional.
EXPLICIT_DAY = re.compile(rf"\b(?:{ISO_DAY}|{DAY_MONTH}(?:{AND_YEAR})?|{MONTH_DAY}(?:{AND_YEAR})?)\b", re.I)

_NUMBER = re.compile(r"\d+")
_MONTH_WORD = re.compile(rf"\b{MONTH}", re.I)


def utc_day(year: int, month: int, day: int) -> datetime:
    """Midnight UTC of that day; ValueError when there is no such day."""
    return datetime(year, month, day, tzinfo=UTC)


def start_of_day(at: datetime) -> datetime:
    """Midnight UTC of the day of ``at`` (a UTC instant)."""
    return utc_day(at.year, at.month, at.day)


def day_parts(phrase: str) -> tuple[int | None, int, int]:
    """(year, None when the phrase names none; month; day) of a phrase that names a day with
    the pieces above: "2022-06-20", "on the 20th of June", "June 20, 2022"."""
    numbers = [int(number) for number in _NUMBER.findall(phrase)]
    named = _MONTH_WORD.findall(phrase)
    if not named:  # 2022-06-20
        year, month, day = numbers
        return year, month, day
    day_number, *year_number = numbers  # the day is written before the year
    return (year_number[0] if year_number else None), MONTH_NUMBER[named[0].lower()], day_number


def explicit_day(phrase: str, reference: datetime) -> datetime:
    """Midnight UTC of the day a phrase names, in the reference's year when it names no year;
    ValueError when there is no such day ("31 June")."""
    year, month, day = day_parts(phrase)
    return utc_day(reference.year if year is None else year, month, day)


# ------------------------------------------------------------------------------ relative days

RELATIVE_DAYS = {"today": 0, "tonight": 0, "this morning": 0, "yesterday": -1, "tomorrow": 1}


def relative_day(words: str, reference: datetime) -> datetime:
    """Midnight UTC of the day that one of the ``RELATIVE_DAYS`` names, seen from the reference day."""
    return start_of_day(reference) + timedelta(days=RELATIVE_DAYS[words.lower()])


# ------------------------------------------------------------------ months, quarters, years

# Periods a text names with less than a day, each dated by its first day with the
# precision it carries: "October 2024" and "2024-10" a month, "Q3 2024" a quarter, "2019",
# "since 2019" and "early 2023" a year. A text names a day inside a period too ("20 June
# 2022" holds "June 2022" and "2022"): a reader looks for periods where it found no day.
YEAR = r"(?:19|20)\d{2}"
MONTH_OF_YEAR = re.compile(rf"\b(?P<mon>{MONTH})\.?,?\s+(?:of\s+)?(?P<y>{YEAR})\b"
                           rf"|\b(?P<iy>{YEAR})-(?P<im>0[1-9]|1[0-2])\b(?!-\d)", re.I)
QUARTER = re.compile(rf"\bQ(?P<q>[1-4])(?:\s+of\s+|[\s/-]?)(?P<y>{YEAR})\b|\b(?P<qy>{YEAR})[\s/-]?Q(?P<qq>[1-4])\b",
                     re.I)
# A year standing alone ("2019", "mid-2023", "2019-2021"), not part of a longer number, a
# word, a version or a time ("v2019", "2019.1", "12:2019").
LONE_YEAR = re.compile(rf"(?<![\w.:/])(?P<y>{YEAR})(?![\w:/]|\.\d)")
# A month without its year, only after "in" and capitalised ("in October"), where "may"
# and "march" are not words.
IN_MONTH = re.compile(rf"\bin\s+(?:early\s+|late\s+|mid-?)?(?P<mon>{CAPITALISED_MONTH})\b(?!\.?,?\s*\d)")


def month_of_year(match: re.Match[str]) -> datetime:
    """The first day of the month a ``MONTH_OF_YEAR`` match names."""
    if match["mon"] is not None:
        return utc_day(int(match["y"]), MONTH_NUMBER[match["mon"].lower()], 1)
    return utc_day(int(match["iy"]), int(match["im"]), 1)


def quarter(match: re.Match[str]) -> datetime:
    """The first day of the quarter a ``QUARTER`` match names."""
    year, number = (match["y"], match["q"]) if match["q"] is not None else (match["qy"], match["qq"])
    return utc_day(int(year), 3 * int(number) - 2, 1)


def next_month_named(match: re.Match[str], reference: datetime) -> datetime:
    """The first day of the month an ``IN_MONTH`` match names: the reference's own month or
    the next one of that name ("in March", said in November, is next March). An earlier
    one needs no proof from the text: a date before the episode is never taken for invented."""
    month = MONTH_NUMBER[match["mon"].lower()]
    return utc_day(reference.year + (month < reference.month), month, 1)


# ----------------------------------------------------------------------------- N units ago

NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2}
# longest first, so that "a couple of" is not read as "a"
_COUNT = r"(?P<n>\d{1,3}|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + ")"
AGO = re.compile(rf"\b{_COUNT}\s+(?P<unit>day|week|month|year)s?\s+ago\b", re.I)
LAST = re.compile(r"\blast\s+(?P<unit>week|month|year)\b", re.I)  # "last week" is one week ago


def ago(match: re.Match[str], reference: datetime) -> tuple[datetime, Precision]:
    """Where what an ``AGO`` or ``LAST`` match names starts, seen from the reference time, and
    how precise that is: N days or weeks back from the reference day, the first of the month
    N months back, 1 January N years back. ValueError or OverflowError before year 1."""
    count = match.groupdict().get("n")
    n = 1 if count is None else int(count) if count.isdigit() else NUMBERS[count.lower()]
    unit = match["unit"].lower()
    if unit == "day":
        return start_of_day(reference) - timedelta(days=n), "day"
    if unit == "week":
        return start_of_day(reference) - timedelta(weeks=n), "day"
    if unit == "month":
        # Here, not at the top: recall reads this module's time words, and dateutil would cost it 2 ms.
        from dateutil.relativedelta import relativedelta

        return utc_day(reference.year, reference.month, 1) - relativedelta(months=n), "month"
    return utc_day(reference.year - n, 1, 1), "year"


# -------------------------------------------------------------------- the invented midnight

# Words that say when rather than what: in a question asked with a time window, the
# window already holds them (recall leaves them out of what it searches for).
_TIME_WORD = re.compile(r"^(?:(?:19|20)\d\d|q[1-4]|spring|summer|autumn|fall|winter|ago|last|week|month|year|"
                        r"day|today|yesterday|weeks|months|years|days|early|late|mid)$")


def is_time_word(word: str) -> bool:
    """``word`` (lower case) names a time: a month, a year, a season, "ago"..."""
    return word in MONTH_NUMBER or bool(_TIME_WORD.match(word))




def is_extraction_day_midnight(stored: str, extracted_at: str) -> bool:
    """The "today @ 00:00" signature (architecture §3): ``stored`` is at clean midnight, every
    fraction digit zero, on the UTC day the assertion was extracted (``extracted_at``).

    This is what a model writes when asked for a date the text never gave, and the one
    definition of it: the date guard tests it here before anything is stored, and for
    dates already stored ``store.repairs._signature`` and the partial indexes of schema migration
    0003 spell it in SQL, ``substr(date, 11) = MIDNIGHT AND substr(date, 1, 10) =
    substr(extracted_at, 1, 10)`` (0007 indexes each half without the other, the near
    misses repair counts). A microsecond off midnight is not the signature (a supersession
    chain writes those), nor is a midnight on another day.
    """
    return stored.endswith(MIDNIGHT) and stored[:10] == extracted_at[:10]
