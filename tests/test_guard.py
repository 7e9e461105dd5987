"""The date guard (architecture §3): invented dates never reach storage; stated ones survive."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctl import times
from memctl.extract.guard import guard, stated_days
from memctl.model import Assertion

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
    assert stated_days("yesterday we switched", REFERENCE) == {"2024-03-13"}
    assert stated_days("3 days ago", REFERENCE) == {"2024-03-11"}
    assert stated_days("on the 31st of June, in March", REFERENCE) == set()  # no such day; a month is no day


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
