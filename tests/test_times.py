"""Parsing instants and the half-open boundaries of --as-of (architecture §2, invariant 6)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctl import times
from tests.conftest import write_jsonl


@pytest.mark.parametrize(
    ("text", "stored", "precision"),
    [
        ("2025-03-01", "2025-03-01T00:00:00.000000Z", "day"),
        ("2025-03-01T14:30:00Z", "2025-03-01T14:30:00.000000Z", "instant"),
        ("2025-03-01T14:30:00", "2025-03-01T14:30:00.000000Z", "instant"),  # naive = UTC
        ("2025-01-01T00:00:00+02:00", "2024-12-31T22:00:00.000000Z", "instant"),
        ("2025-01-01T00:00:00.5-01:30", "2025-01-01T01:30:00.500000Z", "instant"),
        ("2024-02-29", "2024-02-29T00:00:00.000000Z", "day"),
        ("2024-03", "2024-03-01T00:00:00.000000Z", "month"),
        ("2024", "2024-01-01T00:00:00.000000Z", "year"),
        ("  2025-03-01  ", "2025-03-01T00:00:00.000000Z", "day"),
    ],
)
def test_parse_instant(text, stored, precision):
    parsed = times.parse_instant(text)
    assert times.to_storage(parsed.at) == stored
    assert parsed.precision == precision


@pytest.mark.parametrize(
    "text", ["", "   ", "yesterday", "2025-02-31", "2023-02-29", "2025-13-01", "2025-03-01T25:00:00", "03/01/2025", "now"]
)
def test_rejects_what_is_not_an_instant(text):
    # Each time, and named as the caller names it: what is read is cached, but not a refusal's words.
    for what in ("--as-of", "facts[3].valid_at", "--as-of"):
        with pytest.raises(times.BadInstant, match="2025-03-01") as refused:  # the message shows an example
            times.parse_instant(text, what=what)
        assert str(refused.value).startswith(f"{what} ")
        with pytest.raises(times.BadInstant, match=re.escape(what)):
            times.stored_instant(text, what=what)


@pytest.mark.parametrize("value", [None, 20250301, 1.5, ["2025-03-01"]])
def test_rejects_non_strings(value):
    with pytest.raises(times.BadInstant):
        times.parse_instant(value)


_TWO = st.integers(0, 99).map("{:02d}".format)


@given(date=st.tuples(st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32)),
       clock=st.none() | st.tuples(_TWO, _TWO, _TWO), fraction=st.none() | st.text("0123456789", min_size=1, max_size=6),
       zone=st.sampled_from(["", "Z"]) | st.tuples(st.sampled_from("+-"), _TWO, _TWO).map(lambda z: f"{z[0]}{z[1]}:{z[2]}"))
def test_the_fast_common_forms_read_as_isoparse_reads_them(date, clock, fraction, zone):
    """Dates in the common forms skip dateutil (times._COMMON): each must come out as
    isoparse reads it, and whatever isoparse refuses (minute 60, offset +24:00, a 13th
    month) must still be refused."""
    from dateutil.parser import isoparse

    text = "{:04d}-{:02d}-{:02d}".format(*date)
    if clock is not None:
        text += "T" + ":".join(clock) + (f".{fraction}" if fraction else "") + zone
    try:
        expected = isoparse(text)
        expected = (expected if expected.tzinfo else expected.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        with pytest.raises(times.BadInstant):
            times.parse_instant(text)
        return
    assert times.parse_instant(text) == times.ParsedInstant(expected, "instant" if clock else "day")


def test_storage_rejects_naive_datetimes():
    with pytest.raises(ValueError):
        times.to_storage(datetime(2025, 1, 1))


# ISO-8601 offsets are whole minutes (Python writes historical LMT offsets with seconds).
offsets = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=offsets))
def test_storage_round_trips_and_string_order_is_time_order(moment):
    stored = times.to_storage(moment)
    assert times.from_storage(stored) == moment
    assert times.normalize_instant(moment.isoformat()) == stored
    later = times.to_storage(moment + timedelta(microseconds=1))
    assert later > stored and times.after(stored) == later


# The boundary table, end to end through the CLI: a fact valid [2024-01-10T12:00Z, 2024-06-01T08:30Z).
BOUNDARIES = [
    ("2024-01-10T11:59:59.999999Z", False),  # 1 µs before start: excluded
    ("2024-01-10T12:00:00Z", True),  # start: included
    ("2024-01-10T14:00:00+02:00", True),  # = 12:00Z, an offset compared as an instant
    ("2024-01-10T13:59:59.999999+02:00", False),  # = 11:59:59.999999Z
    ("2024-06-01T08:29:59.999999Z", True),  # 1 µs before the end: included
    ("2024-06-01T08:30:00Z", False),  # exactly at invalid_at: excluded
    ("2024-06-01T10:30:00+02:00", False),  # the end, written with an offset
    ("2024-06-01T03:29:59.999999-05:00", True),  # 08:29:59.999999Z
    ("2024-03-01", True),  # a bare date is midnight UTC
    ("2024-01-10", False),  # midnight before the noon start
    ("2024-06-01", True),  # midnight before the 08:30 end
    ("2024-06-02", False),
]


@pytest.fixture
def bounded_fact(cli, tmp_path):
    source = write_jsonl(tmp_path / "f.jsonl", [{
        "reference_time": "2024-01-10T12:00:00Z",
        "facts": [{"subject": "billing", "predicate": "primary database", "object": "MySQL",
                   "invalid_at": "2024-06-01T08:30:00Z"}],
    }])
    assert cli("ingest", source).code == 0


@pytest.mark.parametrize(("as_of", "included"), BOUNDARIES)
def test_as_of_boundaries(cli, bounded_fact, as_of, included):
    run = cli("recall", "--kind", "fact", "billing database", "--as-of", as_of, "--json")
    assert run.code == 0, run.err
    assert [r["object"] for r in run.json()["results"]] == (["MySQL"] if included else [])


@pytest.mark.parametrize("bad", ["", "2025-02-31", "tomorrow", "2024-13-01", "1e9"])
@pytest.mark.parametrize("option", ["--as-of", "--known-at"])
def test_bad_time_options_exit_2_with_one_line(cli, bounded_fact, option, bad):
    run = cli("recall", "billing", option, bad)
    assert run.code == 2
    assert run.out == ""
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and "example" in lines[0]
