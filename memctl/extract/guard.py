"""The date guard: dates an extractor invented are replaced before anything is stored.

architecture §3. Models asked about a past conversation answer "today at midnight" for dates
the text never gave (an issue with 1,384 real edges found 56% of ``valid_at`` were that).
The guard is pure: an assertion, the episode text and its reference time in; the
assertion with honest dates and the list of what changed out. ``repair`` (architecture §3)
uses the same code on assertions already stored.

- ``valid_at`` at clean midnight UTC on the day the extraction ran (the signature
  ``dates.is_extraction_day_midnight``), for an episode from another day, when the text
  states no such day → the reference time (evidence ``reference``). Such an
  ``invalid_at`` → dropped.
- A date after the reference time that the text does not state is treated the same
  way: an episode cannot know what happened after it unless it says so.
- When the assertion's ``date_span`` is in the text and names one day, that day is used
  instead of the reference time: a model that quotes "on 20 June 2022" but writes today's
  date got the words right and the date wrong.

The text is checked here, not the evidence the extractor claimed: a model that says
"text" can be wrong.
"""

from __future__ import annotations

from datetime import datetime

from memctl import times
from memctl.extract import dates
from memctl.model import Assertion


def stated_days(text: str, reference_time: str) -> set[str]:
    """Every calendar day (``YYYY-MM-DD``) the text names, resolved against its reference time.

    Generous: a day counts when the text could mean it, so "June 20" is that day of the
    reference's year even when it is after the reference time (a plan).
    """
    reference = times.from_storage(reference_time)
    named: list[datetime] = []
    for match in dates.EXPLICIT_DAY.finditer(text):
        try:
            named.append(dates.explicit_day(match[0], reference))
        except ValueError:
            continue  # "31 June": not a day
    lowered = text.lower()
    named += [dates.relative_day(words, reference) for words in dates.RELATIVE_DAYS if words in lowered]
    for match in dates.AGO.finditer(text):
        try:
            when, precision = dates.ago(match, reference)
        except (ValueError, OverflowError):
            continue  # before year 1
        if precision == "day":  # "2 months ago" is no day
            named.append(when)
    return {when.date().isoformat() for when in named}


def _day_of_span(span: str | None, text: str, reference_time: str) -> str | None:
    """Midnight of the one day that ``span`` names, if the span really is in the text."""
    if not span or span not in text:
        return None
    days = stated_days(span, reference_time)
    return f"{days.pop()}{dates.MIDNIGHT}" if len(days) == 1 else None


def _invented(stored: str, extracted_at: str | None, reference_time: str, stated: set[str]) -> str | None:
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


def guard(assertion: Assertion, text: str, reference_time: str) -> tuple[Assertion, list[str]]:
    """The assertion with invented dates replaced, and a line per change."""
    stated = stated_days(text, reference_time)
    changes: list[str] = []
    fields = assertion.model_dump()
    if assertion.valid_at is not None:
        why = _invented(assertion.valid_at, assertion.extracted_at, reference_time, stated)
        if why:
            spanned = _day_of_span(assertion.date_span, text, reference_time)
            if spanned is not None:  # the model named the right words and wrote the wrong date
                fields.update(valid_at=spanned, valid_at_evidence="text", valid_at_precision="day")
            else:
                fields.update(valid_at=reference_time, valid_at_evidence="reference", valid_at_precision="instant",
                              date_span=None)
            changes.append(f"valid_at {assertion.valid_at} → {fields['valid_at']}: {why}")
    if assertion.invalid_at is not None:
        why = _invented(assertion.invalid_at, assertion.extracted_at, reference_time, stated)
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

