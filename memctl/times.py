"""Instants on both time axes: parsing user and file input, and the storage format.

Pure functions, no clock and no I/O, so every rule here can be tested exhaustively.
Storage is TEXT ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in UTC with six fraction digits, so
that string order is time order and SQLite can compare instants as strings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from memctl.errors import BadInput

if TYPE_CHECKING:
    from memctl.model import Precision

EXAMPLE = "2025-03-01 or 2025-03-01T14:30:00Z"

# isoparse also accepts week dates and ordinal days; precision follows the shape of
# what the user wrote, so a bare "2024" is a year and "2024-03" a month.
# The one stored form of an instant: UTC, microseconds, Z.
STORAGE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")
_YEAR = re.compile(r"^\d{4}$")
_MONTH = re.compile(r"^\d{4}-\d{2}$")
_DAY = re.compile(r"^\d{4}-?\d{2}-?\d{2}$")
# The forms nearly every file uses, storage's own among them: datetime.fromisoformat reads
# them as dateutil's isoparse does, ten times faster (a facts file has a date per fact).
_COMMON = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)?)?")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

MIDNIGHT = "T00:00:00.000000Z"  # what follows the day in a stored instant at clean midnight UTC


T = TypeVar("T")


class BadInstant(ValueError):
    """Input that is not an instant; the message is fit to show a user."""


class ParsedInstant(NamedTuple):
    at: datetime  # aware, UTC
    precision: Precision


def parse_instant(text: object, *, what: str = "date") -> ParsedInstant:
    """Parse an ISO-8601 date or datetime as a UTC instant.

    A bare date is 00:00:00 UTC that day; a naive datetime is UTC; an offset is
    honoured (``2025-01-01T00:00:00+02:00`` is ``2024-12-31T22:00:00Z``). Anything
    else raises BadInstant naming ``what`` and showing an example — never a fallback.
    """
    return _read(_parse_text, text, what)


def stored_instant(text: object, *, what: str = "date") -> tuple[str, Precision]:
    """``parse_instant``'s instant in storage form, and the precision it was given with."""
    return _read(_stored_text, text, what)


def _read(parse: Callable[[str], T], text: object, what: str) -> T:
    if not isinstance(text, str):
        raise BadInstant(f"{what} must be an ISO-8601 string, got {text!r}; example: {EXAMPLE}")
    try:
        return parse(text)
    except BadInstant as error:
        raise BadInstant(f"{what} {error}") from None


@lru_cache(maxsize=1 << 12)
def _stored_text(text: str) -> tuple[str, Precision]:
    parsed = _parse_text(text)
    return to_storage(parsed.at), parsed.precision


@lru_cache(maxsize=1 << 12)  # pure, and a backfill repeats its dates: a line's facts, a day's lines
def _parse_text(text: str) -> ParsedInstant:
    """``parse_instant`` of a string; BadInstant's message lacks only what the string is."""
    stripped = text.strip()
    if not stripped:
        raise BadInstant(f"is empty; give an ISO-8601 date or datetime, example: {EXAMPLE}")
    if _COMMON.fullmatch(stripped):
        try:
            fast = datetime.fromisoformat(stripped)
            return ParsedInstant((fast if fast.tzinfo else fast.replace(tzinfo=UTC)).astimezone(UTC),
                                 "instant" if "T" in stripped else "day")
        except (ValueError, OverflowError):  # out of range (a 13th month, hour 24): read below, or refused why
            pass
    # Imported here: dateutil's parser costs ~12 ms of start-up that a recall without
    # dates never needs.
    from dateutil.parser import isoparse

    try:
        parsed = isoparse(stripped)
    except (ValueError, OverflowError) as error:
        reason = str(error) or "not ISO-8601"
        raise BadInstant(
            f"{text!r} is not a valid ISO-8601 date ({reason}); example: {EXAMPLE}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        at = parsed.astimezone(UTC)
    except OverflowError:
        raise BadInstant(f"{text!r} is out of range; example: {EXAMPLE}") from None
    precision: Precision
    if _YEAR.match(stripped):
        precision = "year"
    elif _MONTH.match(stripped):
        precision = "month"
    elif _DAY.match(stripped):
        precision = "day"
    else:
        precision = "instant"
    return ParsedInstant(at, precision)


def to_storage(at: datetime) -> str:
    """The one storage format: UTC, six fraction digits, trailing Z."""
    if at.tzinfo is None:
        raise ValueError("naive datetime reached storage; every instant must be aware")
    utc = at.astimezone(UTC)
    # strftime does not zero-pad years below 1000 on every platform
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T"
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}.{utc.microsecond:06d}Z"
    )


def from_storage(text: str) -> datetime:
    # Stored strings were validated on the way in; fromisoformat is ~20x faster than
    # strptime, which matters when a repair checks a hundred thousand of them.
    return datetime.fromisoformat(text)


def normalize_instant(text: object, *, what: str = "date") -> str:
    """User or file input → storage string; raises BadInstant on anything invalid."""
    return stored_instant(text, what=what)[0]


def instant_argument(value: str | None, *, what: str) -> str | None:
    """A time a caller passed (an option, a library argument) in storage form, or None.

    Times meet stored columns as strings, so "2024-03-01" must become
    "2024-03-01T00:00:00.000000Z" first. Bad input is the caller's to fix: BadInput.
    """
    if value is None:
        return None
    try:
        return normalize_instant(value, what=what)
    except BadInstant as error:
        raise BadInput(str(error)) from None


def after(stored: str, micros: int = 1) -> str:
    """The storage string ``micros`` microseconds after ``stored``."""
    return to_storage(from_storage(stored) + timedelta(microseconds=micros))


def epoch_to_storage(seconds: float) -> str:
    return to_storage(datetime.fromtimestamp(seconds, tz=UTC))


# Epoch magnitude -> divisor to seconds. Seconds from 1e8 (1973-03-03) up to 1e11 (year
# 5138); milliseconds up to 1e14; microseconds up to 1e17; nanoseconds up to 1e20. Each
# unit's range starts where the previous one's would reach 5138, so every value in it is
# after 1973-03-03: a millisecond time below 1e11 would be before that, not a chat log.
# Below 1e8 a number is a counter or a bug, not a time, and is refused.
EPOCH_MIN = 1e8
EPOCH_UNITS = ((1e11, 1), (1e14, 1_000), (1e17, 1_000_000), (1e20, 1_000_000_000))


def epoch_divisor(value: float | int) -> int:
    """The divisor to seconds of an epoch number in s, ms, µs or ns, by its magnitude."""
    for limit, divisor in EPOCH_UNITS:
        if abs(value) < limit:
            return divisor
    raise BadInstant(f"epoch time {value!r} is too large for seconds, milliseconds, microseconds or nanoseconds")


def epoch_number_to_storage(value: float | int | str) -> str:
    """Storage form of an epoch number in s, ms, µs or ns (told apart by magnitude), exactly.

    Pure: no clock. Integers are converted without floating-point rounding; floats to the
    nearest microsecond. Numbers below 1e8, zero, negatives, NaN, infinities and booleans
    are refused (``BadInstant``): a zero time is a missing value, not 1970.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BadInstant(f"time {value!r} is not a number or a string")
    from decimal import Decimal, InvalidOperation  # here: only sources with epoch times need it

    try:
        number = Decimal(value.strip()) if isinstance(value, str) else Decimal(repr(value) if isinstance(value, float) else value)
    except InvalidOperation:
        raise BadInstant(f"time {value!r} is not a number") from None
    if not number.is_finite():
        raise BadInstant(f"time {value!r} is not a finite number")
    if number <= 0:
        raise BadInstant(f"epoch time {value!r} is not after 1970-01-01")
    if number < EPOCH_MIN:
        raise BadInstant(f"number {value!r} is too small to be an epoch time (seconds before 1973)")
    micros = int((number * 1_000_000 / epoch_divisor(float(number))).to_integral_value())
    try:
        return to_storage(_EPOCH + timedelta(microseconds=micros))
    except OverflowError:
        raise BadInstant(f"epoch time {value!r} is out of range") from None


# A string of digits with at least 9 before any point is an epoch number; shorter ones
# ("2024", "20240501") are ISO-8601 years and basic dates.
_EPOCH_STRING = re.compile(r"^\d{9,}(?:\.\d+)?$")


def _iso_to_storage(text: str) -> str:
    """ISO-8601 as memctl reads it (naive is UTC); the stdlib parser first, as it is 5x faster."""
    try:
        at = datetime.fromisoformat(text)
    except ValueError:  # shapes only dateutil reads ("2024", "2024-121", hour 24...), or garbage
        return normalize_instant(text, what="time")
    return to_storage(at if at.tzinfo is not None else at.replace(tzinfo=UTC))


def record_time_to_storage(value: object) -> str:
    """Storage form of a time read from a log record, for every source format.

    An ISO-8601 string (a naive one is UTC), or an epoch number in s, ms, µs or ns
    (``epoch_number_to_storage``), as a number or as a string of 9 or more digits.
    Anything else raises BadInstant, whose message names the value but not the field:
    callers put the field's name before it. Whether null, empty or zero means "no time"
    is each format's own rule, decided before this is called.
    """
    if isinstance(value, str):
        text = value.strip()
        if _EPOCH_STRING.match(text):
            return plausible(epoch_number_to_storage(text), value)
        try:
            return plausible(_iso_to_storage(text), value)
        except (BadInstant, OverflowError) as error:
            if isinstance(error, BadInstant) and str(error).startswith(_IMPLAUSIBLE):
                raise
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return plausible(epoch_number_to_storage(value), value)
    raise BadInstant(f"{value!r} is not a time (neither an ISO-8601 date nor an epoch number)")


# The years a log's time may fall in. Outside them a time is a mistake, never silently
# stored: 9999-12-31 (a "never" placeholder), a ChatGPT create_time in the wrong unit
# (2.53e14 read as 1978). MEMCTL_TIME_WINDOW="1970..2200" widens it.
TIME_WINDOW = (1990, 2100)
_IMPLAUSIBLE = "outside the years"


def plausible(stored: str, value: object) -> str:
    """``stored`` (the storage form of a record's time ``value``), or BadInstant when its
    year is outside the plausible window."""
    import os

    earliest, latest = TIME_WINDOW
    if window := os.environ.get("MEMCTL_TIME_WINDOW"):
        try:
            earliest, latest = (int(year) for year in window.split(".."))
        except ValueError:
            raise BadInput(f"MEMCTL_TIME_WINDOW must be two years as 1990..2100, got {window!r}") from None
    if not earliest <= int(stored[:4]) < latest:
        raise BadInstant(f"{_IMPLAUSIBLE} {earliest}..{latest} a log's times fall in: {value!r} reads as {stored[:10]} "
                         "(MEMCTL_TIME_WINDOW widens them)")
    return stored


def record_time_or_none(value: object) -> str | None:
    """``record_time_to_storage``, or None when the value is missing or unreadable.

    For times that only help place another record (a neighbour's, a session's), where a
    bad value is no reason to skip anything.
    """
    if value is None:
        return None
    try:
        return record_time_to_storage(value)
    except BadInstant:
        return None
