"""The date guard (architecture §3): invented dates never reach storage; stated ones survive."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memctl import times
from memctl.extract.guard import guard, guard_fields, stated_dates
from memctl.model import Assertion
from tests.conftest import REALDATA, needs_realdata

EXTRACTED = "2026-11-21T15:42:10.123456Z"  # the extraction ran today
TODAY_MIDNIGHT = "2026-11-21T00:00:00.000000Z"
REFERENCE = "2024-03-14T09:30:00.000000Z"  # the episode is from 2024


def assertion(valid_at=TODAY_MIDNIGHT, invalid_at=None, evidence="text", **extra) -> Assertion:
    return Assertion(subject="billing", predicate="uses", object="Postgres", fact="billing uses Postgres",
                     valid_at=valid_at, valid_at_evidence=evidence if valid_at else None, invalid_at=invalid_at,
                     invalid_at_evidence="text" if invalid_at else None, extractor="llm:test",
                     extracted_at=EXTRACTED, **extra)


def test_invented_today_midnight_becomes_the_reference_time():
    fixed, changes = guard(assertion(), "We moved billing to Postgres.", REFERENCE)
    assert (fixed.valid_at, fixed.valid_at_evidence, fixed.valid_at_precision) == (REFERENCE, "reference", "instant")
    assert len(changes) == 1 and "midnight" in changes[0]


def test_invented_end_is_dropped_and_a_real_one_kept():
    fixed, _ = guard(assertion(valid_at=REFERENCE, invalid_at=TODAY_MIDNIGHT), "Billing uses Postgres.", REFERENCE)
    assert fixed.invalid_at is None and fixed.valid_at == REFERENCE
    stated_end = "2024-03-20T00:00:00.000000Z"
    kept, changes = guard(assertion(valid_at=REFERENCE, invalid_at=stated_end),
                          "Billing uses Postgres until March 20, 2024.", REFERENCE)
    assert (kept.invalid_at, changes) == (stated_end, [])


@pytest.mark.parametrize("text", [
    "On 2026-11-21 we moved billing to Postgres.",
    "We moved billing to Postgres on 21 November 2026.",
    "We moved billing to Postgres on Nov 21, 2026.",
])
def test_a_midnight_the_text_states_survives(text):
    fixed, changes = guard(assertion(), text, REFERENCE)
    assert (fixed.valid_at, changes) == (TODAY_MIDNIGHT, [])


def test_midnight_on_the_episodes_own_day_is_not_invented():
    own_day = "2026-11-21T08:00:00.000000Z"
    fixed, changes = guard(assertion(), "We moved billing to Postgres.", own_day)
    assert (fixed.valid_at, changes) == (TODAY_MIDNIGHT, [])


def test_midnight_on_another_day_and_microsecond_times_are_left_alone():
    for valid_at in ("2023-06-01T00:00:00.000000Z", "2023-06-01T10:11:12.000001Z"):
        fixed, changes = guard(assertion(valid_at=valid_at), "We moved billing to Postgres.", REFERENCE)
        assert (fixed.valid_at, changes) == (valid_at, [])


def test_dates_after_the_episode_need_the_text():
    later = "2024-05-01T00:00:00.000000Z"
    fixed, changes = guard(assertion(valid_at=later), "We will move billing to Postgres soon.", REFERENCE)
    assert fixed.valid_at == REFERENCE and "after the episode" in changes[0]
    planned, changes = guard(assertion(valid_at=later), "Billing moves to Postgres on 1 May 2024.", REFERENCE)
    assert (planned.valid_at, changes) == (later, [])


def test_relative_days_count_as_stated():
    assert set(stated_dates("yesterday we switched", REFERENCE)) == {"2024-03-13"}
    assert set(stated_dates("3 days ago", REFERENCE)) == {"2024-03-11"}
    assert stated_dates("on the 31st of June", REFERENCE) == {}  # no such day


def test_a_retraction_with_an_invented_end_ends_at_the_episode():
    retraction = assertion(valid_at=None, invalid_at=TODAY_MIDNIGHT)
    fixed, changes = guard(retraction, "We no longer use Postgres.", REFERENCE)
    assert (fixed.valid_at, fixed.invalid_at, fixed.invalid_at_evidence) == (None, REFERENCE, "reference")
    assert changes


days = st.integers(min_value=0, max_value=3000).map(
    lambda n: datetime(2020, 1, 1, tzinfo=UTC) + timedelta(days=n))


@given(days, days, st.booleans(), st.booleans(), st.integers(0, 86399))
def test_no_unstated_invented_date_survives_and_the_guard_is_idempotent(reference_day, valid_day, midnight,
                                                                        stated, seconds):
    extracted = times.to_storage(datetime(2026, 11, 21, 15, tzinfo=UTC))
    reference = times.to_storage(reference_day + timedelta(seconds=seconds))
    valid = times.to_storage(valid_day if midnight else valid_day + timedelta(seconds=seconds, microseconds=7))
    text = f"Billing uses Postgres since {valid[:10]}." if stated else "Billing uses Postgres."
    item = Assertion(subject="billing", predicate="uses", object="Postgres", fact=text, valid_at=valid,
                     valid_at_evidence="text", extractor="llm:test", extracted_at=extracted)
    fixed, _ = guard(item, text, reference)
    if not stated:
        assert fixed.valid_at <= reference
        assert not (fixed.valid_at.endswith("T00:00:00.000000Z") and fixed.valid_at[:10] == extracted[:10]
                    and reference[:10] != extracted[:10])
    else:
        assert fixed.valid_at == valid  # what the text states always survives
    again, changes = guard(fixed, text, reference)
    assert again == fixed and changes == []


def test_a_lie_over_a_stated_date_is_repaired_from_its_own_span():
    lie = assertion(date_span="on 20 June 2022")
    fixed, changes = guard(lie, "Billing moved to Postgres on 20 June 2022.", REFERENCE)
    assert (fixed.valid_at, fixed.valid_at_evidence, fixed.valid_at_precision) == (
        "2022-06-20T00:00:00.000000Z", "text", "day")
    assert changes
    # a span that is not in the text proves nothing
    made_up, _ = guard(assertion(date_span="on 20 June 2022"), "Billing moved to Postgres.", REFERENCE)
    assert made_up.valid_at == REFERENCE


# --- dates with less than a day: months, quarters, years ----------------------------------

MAY_2024 = "2024-05-10T09:00:00.000000Z"


@pytest.mark.parametrize(("text", "expected"), [
    ("We move to Berlin in October 2024.", {"2024-10-01": "month"}),
    ("October 2024 is when we move.", {"2024-10-01": "month"}),
    ("Planned for Oct. 2024, maybe Sept 2025.", {"2024-10-01": "month", "2025-09-01": "month"}),
    ("the 2024-10 release", {"2024-10-01": "month"}),
    ("We ship in Q3 2024.", {"2024-07-01": "quarter"}),
    ("Revenue for 2023 Q4 was flat.", {"2023-10-01": "quarter"}),
    ("It was built in 2019.", {"2019-01-01": "year"}),
    ("We have used Postgres since 2019.", {"2019-01-01": "year"}),
    ("We migrated in early 2023.", {"2023-01-01": "year"}),
    ("from mid-2021 through 2022", {"2021-01-01": "year", "2022-01-01": "year"}),
    # a day holds its month and year: the day alone is what the text states
    ("Billing moved on 20 June 2022.", {"2022-06-20": "day"}),
    ("last month", {"2024-04-01": "month"}),
    ("We move to Berlin in October.", {"2024-10-01": "month"}),  # the next October, from May
    ("We started in March.", {"2025-03-01": "month"}),  # a past March is before the episode: needs no proof
    # numbers that are no years
    ("version 2019.1, port 12:2019, id v2019, 120199 rows", {}),
])
def test_months_quarters_and_years_are_stated_with_their_precision(text, expected):
    assert {day: stated.precision for day, stated in stated_dates(text, MAY_2024).items()} == expected


def dated(valid_at, precision, invalid_at=None, end_precision=None, span=None, evidence="text") -> dict:
    return {"subject": "Dana", "predicate": "lives_in", "object": "Berlin", "fact": "Dana lives in Berlin",
            "valid_at": valid_at, "valid_at_evidence": evidence if valid_at else None,
            "valid_at_precision": precision, "invalid_at": invalid_at,
            "invalid_at_evidence": "text" if invalid_at else None, "invalid_at_precision": end_precision,
            "date_span": span, "cardinality": "one", "extractor": "llm:test", "extracted_at": EXTRACTED}


@pytest.mark.parametrize(("text", "valid_at", "precision"), [
    ("We move to Berlin in October 2024.", "2024-10-01T00:00:00.000000Z", "month"),
    ("We move to Berlin in Q3 2024.", "2024-07-01T00:00:00.000000Z", "quarter"),
    ("We will have moved to Berlin by 2025.", "2025-01-01T00:00:00.000000Z", "year"),
])
def test_a_future_date_the_text_states_with_less_than_a_day_is_kept(text, valid_at, precision):
    fields, changes = guard_fields(dated(valid_at, precision), text, MAY_2024)
    assert (fields["valid_at"], fields["valid_at_precision"], changes) == (valid_at, precision, [])


def test_a_claim_finer_than_the_text_takes_the_texts_precision():
    october = "2024-10-01T00:00:00.000000Z"
    fields, changes = guard_fields(dated(october, "day"), "We move to Berlin in October 2024.", MAY_2024)
    assert (fields["valid_at"], fields["valid_at_precision"]) == (october, "month")
    assert changes == ["valid_at precision day → month: the text names the month, not the day"]
    again, changes = guard_fields(fields, "We move to Berlin in October 2024.", MAY_2024)
    assert (again, changes) == (fields, [])


@pytest.mark.parametrize(("span", "valid_at", "precision", "evidence"), [
    ("in October 2024", "2024-10-01T00:00:00.000000Z", "month", "text"),
    ("Q3 2024", "2024-07-01T00:00:00.000000Z", "quarter", "text"),
    ("since 2019", "2019-01-01T00:00:00.000000Z", "year", "text"),
    ("last month", "2024-04-01T00:00:00.000000Z", "month", "relative"),
])
def test_a_lie_over_a_stated_period_is_repaired_from_its_span(span, valid_at, precision, evidence):
    text = f"Dana moves to Berlin {span}, she says."
    fields, changes = guard_fields(dated(TODAY_MIDNIGHT, "instant", span=span), text, MAY_2024)
    assert (fields["valid_at"], fields["valid_at_precision"], fields["valid_at_evidence"]) == (
        valid_at, precision, evidence)
    assert len(changes) == 1


def test_both_dates_at_todays_midnight_become_an_open_fact_from_the_episode():
    fields, changes = guard_fields(dated(TODAY_MIDNIGHT, "instant", TODAY_MIDNIGHT, "instant"),
                                   "Dana lives in Berlin.", MAY_2024)
    assert (fields["valid_at"], fields["invalid_at"]) == (MAY_2024, None)
    assert len(changes) == 2
    Assertion(**fields)  # an interval again


def test_an_invented_start_after_a_stated_end_leaves_the_end_as_a_retraction():
    text = "Dana lived in Berlin until March 2023."
    fields, changes = guard_fields(dated(TODAY_MIDNIGHT, "instant", "2023-03-01T00:00:00.000000Z", "month",
                                         span="until March 2023"), text, MAY_2024)
    assert (fields["valid_at"], fields["invalid_at"], fields["invalid_at_precision"]) == (
        None, "2023-03-01T00:00:00.000000Z", "month")
    assert "no start" in changes[0]
    Assertion(**fields)


def test_a_stated_start_after_a_stated_end_is_left_for_the_model_to_correct():
    text = "Dana lived in Berlin from 2021 until 2019."
    fields, changes = guard_fields(dated("2021-01-01T00:00:00.000000Z", "year", "2019-01-01T00:00:00.000000Z", "year"),
                                   text, MAY_2024)
    assert changes == []
    with pytest.raises(ValueError, match="not after"):
        Assertion(**fields)


PERIODS = {  # phrase template → (first day of the period, precision)
    "in {month_name} {year}": (lambda y, m: f"{y}-{m:02d}-01", "month"),
    "Q{quarter} {year}": (lambda y, m: f"{y}-{3 * ((m - 1) // 3) + 1:02d}-01", "quarter"),
    "since {year}": (lambda y, m: f"{y}-01-01", "year"),
    "early {year}": (lambda y, m: f"{y}-01-01", "year"),
}


@given(st.sampled_from(sorted(PERIODS)), st.integers(1995, 2035), st.integers(1, 12), days, st.booleans())
def test_a_stated_period_always_survives_and_the_guard_is_idempotent(template, year, month, reference_day, lie):
    start, precision = PERIODS[template]
    phrase = template.format(month_name=datetime(2000, month, 1).strftime("%B"), year=year,
                             quarter=(month - 1) // 3 + 1)
    text = f"Dana moves to Berlin {phrase}."
    reference = times.to_storage(reference_day + timedelta(hours=9))
    stated = f"{start(year, month)}T00:00:00.000000Z"
    assume(not (lie and reference[:10] == TODAY_MIDNIGHT[:10]))  # today's midnight is no lie on the episode's day
    # an honest model writes the period's first day; a lying one today's midnight, with the words right
    fields, _ = guard_fields(dated(TODAY_MIDNIGHT if lie else stated, "instant" if lie else precision, span=phrase),
                             text, reference)
    assert (fields["valid_at"], fields["valid_at_precision"]) == (stated, precision)
    again, changes = guard_fields(fields, text, reference)
    assert (again, changes) == (fields, [])


Y2019, Y2021 = "2019-01-01T00:00:00.000000Z", "2021-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(("start", "end"), [
    (TODAY_MIDNIGHT, TODAY_MIDNIGHT),  # both invented: the span is the interval
    (TODAY_MIDNIGHT, Y2021),  # the stated end takes its date; the other one is the start
    (Y2019, TODAY_MIDNIGHT),
])
def test_a_span_with_two_dates_gives_each_invented_date_the_one_left(start, end):
    text = "Dana lived in Berlin from 2019 until 2021."
    fields, _ = guard_fields(dated(start, "year", end, "year", span="from 2019 until 2021"), text, MAY_2024)
    assert (fields["valid_at"], fields["valid_at_precision"], fields["invalid_at"], fields["invalid_at_precision"]) == (
        Y2019, "year", Y2021, "year")
    Assertion(**fields)


# Words and pieces the date phrases are made of, and others, for texts that may or may not state a date.
_PIECES = ["in", "March", "march", "may", "May", "2022", "Q3", "last", "week", "3", "days", "ago", "today", "this",
           "morning", "yesterday", "tomorrow", "20th", "of", "June", "2024-06-20", "we", "moved", "billing", "to",
           "Postgres", "early", "mid-", "April", ",", ".", "two", "months", "year", "tonight", "Sept", "sep"]


@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.integers(0, 3000))
def test_the_cheap_filter_in_front_of_stated_dates_loses_nothing(words, reference_day):
    """A text the filter passes over (no digit, relative word or month name) states no date
    that the full reading would find."""
    import re

    from memctl.extract import guard as guard_module

    text = " ".join(words)
    reference = times.to_storage(datetime(2024, 1, 1, 12, tzinfo=UTC) + timedelta(days=reference_day))
    filtered = stated_dates(text, reference)
    saved = guard_module._COULD_STATE
    guard_module._COULD_STATE = re.compile("")  # matches every text
    try:
        assert stated_dates(text, reference) == filtered
    finally:
        guard_module._COULD_STATE = saved


@needs_realdata
def test_the_cheap_filter_loses_no_date_of_the_real_logs(monkeypatch):
    import re

    from memctl.extract import guard as guard_module
    from memctl.model import Episode
    from memctl.sources import IngestOptions, parse

    texts = [(item.content, item.reference_time) for path in sorted(REALDATA.rglob("*.jsonl"))
             for item in parse(path, IngestOptions()) if isinstance(item, Episode)]
    filtered = [stated_dates(*text) for text in texts]
    monkeypatch.setattr(guard_module, "_COULD_STATE", re.compile(""))
    assert [stated_dates(*text) for text in texts] == filtered and any(filtered)
