"""The date guard: dates an extractor invented are replaced before anything is stored.

DESIGN §3. Models asked about a past conversation answer "today at midnight" for dates
the text never gave (an issue with 1,384 real edges found 56% of ``valid_at`` were that).
The guard is pure: an assertion, the episode text and its reference time in; the
assertion with honest dates and the list of what changed out. ``repair`` (DESIGN §4)
uses the same code on assertions already stored.

- ``valid_at`` at clean midnight UTC on the day the extraction ran, for an episode from
  another day, when the text states no such day → the reference time (evidence
  ``reference``). Such an ``invalid_at`` → dropped.
- A date after the reference time that the text does not state is treated the same
  way: an episode cannot know what happened after it unless it says so.
- When the assertion's ``date_span`` is in the text and names one day, that day is used
  instead of the reference time: a model that quotes "on 20 June 2022" but writes today's
  date got the words right and the date wrong.

The text is checked here, not the evidence the extractor claimed: a model that says
"text" can be wrong.
"""

from __future__ import annotations

import re
from datetime import timedelta

from dateutil import parser as dateutil_parser

from memctl import times
from memctl.model import Assertion

_MONTHS = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
           r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
_EXPLICIT = re.compile(
    rf"\b(?:\d{{4}}-\d{{2}}-\d{{2}}"  # 2022-06-20
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\.?(?:,?\s+\d{{4}})?"  # 20 June 2022, 20th of June
    rf"|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?)\b",  # June 20, 2022
    re.IGNORECASE,
)
_RELATIVE_DAYS = {"today": 0, "tonight": 0, "this morning": 0, "yesterday": -1, "tomorrow": 1}
_DAYS_AGO = re.compile(r"\b(\d{1,3})\s+days?\s+ago\b", re.IGNORECASE)
_MIDNIGHT = "T00:00:00.000000Z"


def stated_days(text: str, reference_time: str) -> set[str]:
    """Every calendar day (``YYYY-MM-DD``) the text names, resolved against its reference time."""
    reference = times.from_storage(reference_time)
    days: set[str] = set()
    for match in _EXPLICIT.finditer(text):
        try:
            when = dateutil_parser.parse(match.group(0), default=reference.replace(tzinfo=None), fuzzy=False)
        except (ValueError, OverflowError):
            continue  # "31 June": not a day
        days.add(when.date().isoformat())
    lowered = text.lower()
    for phrase, offset in _RELATIVE_DAYS.items():
        if phrase in lowered:
            days.add((reference + timedelta(days=offset)).date().isoformat())
    for match in _DAYS_AGO.finditer(text):
        days.add((reference - timedelta(days=int(match.group(1)))).date().isoformat())
    return days


def _day_of_span(span: str | None, text: str, reference_time: str) -> str | None:
    """Midnight of the one day that ``span`` names, if the span really is in the text."""
    if not span or span not in text:
        return None
    days = stated_days(span, reference_time)
    return f"{days.pop()}T00:00:00.000000Z" if len(days) == 1 else None


def _invented(stored: str, extracted_day: str, reference_time: str, stated: set[str]) -> str | None:
    """Why a stored date is not to be believed, or None when it may stand."""
    day = stored[:10]
    if day in stated:
        return None
    if stored.endswith(_MIDNIGHT) and day == extracted_day and reference_time[:10] != day:
        return "midnight on the day of extraction, not stated in the text"
    if stored > reference_time:
        return "after the episode, not stated in the text"
    return None


def guard(assertion: Assertion, text: str, reference_time: str) -> tuple[Assertion, list[str]]:
    """The assertion with invented dates replaced, and a line per change."""
    extracted_day = (assertion.extracted_at or "")[:10]
    stated = stated_days(text, reference_time)
    changes: list[str] = []
    fields = assertion.model_dump()
    if assertion.valid_at is not None:
        why = _invented(assertion.valid_at, extracted_day, reference_time, stated)
        if why:
            spanned = _day_of_span(assertion.date_span, text, reference_time)
            if spanned is not None:  # the model named the right words and wrote the wrong date
                fields.update(valid_at=spanned, valid_at_evidence="text", valid_at_precision="day")
            else:
                fields.update(valid_at=reference_time, valid_at_evidence="reference", valid_at_precision="instant",
                              date_span=None)
            changes.append(f"valid_at {assertion.valid_at} → {fields['valid_at']}: {why}")
    if assertion.invalid_at is not None:
        why = _invented(assertion.invalid_at, extracted_day, reference_time, stated)
        if not why and fields["valid_at"] is not None and assertion.invalid_at <= fields["valid_at"]:
            why = "no longer after valid_at once valid_at was corrected"
        if why:
            changes.append(f"invalid_at {assertion.invalid_at} dropped: {why}")
            fields.update(invalid_at=None, invalid_at_evidence=None, invalid_at_precision=None)
    if not changes:
        return assertion, []
    if fields["valid_at"] is None and fields["invalid_at"] is None:
        # a retraction whose only date was invented ends at the episode's time
        fields.update(invalid_at=reference_time, invalid_at_evidence="reference", invalid_at_precision="instant")
    return Assertion(**fields), changes

