"""A question asked without a window that names a time asks about that time (recall.when)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memctl import IngestOptions, Memory
from memctl.recall.when import named_window

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"
NOW = datetime(2026, 3, 18, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(("question", "since", "until", "words"), [
    ("what broke on 2 April 2024?", "2024-04-02", "2024-04-03", "2 April 2024"),
    ("what broke on 2024-04-02", "2024-04-02", "2024-04-03", "2024-04-02"),
    ("which database did billing use in March 2024", "2024-03-01", "2024-04-01", "March 2024"),
    ("deploys in dec 2025", "2025-12-01", "2026-01-01", "dec 2025"),
    ("what shipped in Q3 2024", "2024-07-01", "2024-10-01", "Q3 2024"),
    ("who led billing in mid 2023?", "2023-05-01", "2023-09-01", "mid 2023"),
    ("what did we use in early-2022", "2022-01-01", "2022-05-01", "early-2022"),
    ("plans for late 2025", "2025-09-01", "2026-01-01", "late 2025"),
    ("who was on call during 2024", "2024-01-01", "2025-01-01", "during 2024"),
    ("what did we decide in October", "2025-10-01", "2025-11-01", "in October"),  # the latest October begun
    ("what did we decide in March", "2026-03-01", "2026-04-01", "in March"),
    ("what did we do yesterday", "2026-03-17", "2026-03-18", "yesterday"),
    ("what changed last week", "2026-03-11", "2026-03-18", "last week"),
    ("what changed last month", "2026-02-01", "2026-03-01", "last month"),
    ("what did we use last year", "2025-01-01", "2026-01-01", "last year"),
    ("what broke 3 days ago", "2026-03-15", "2026-03-16", "3 days ago"),
    ("what did we pick two months ago", "2026-01-01", "2026-02-01", "two months ago"),
    # the most precise phrase wins
    ("in 2024, what broke on 2 April 2024", "2024-04-02", "2024-04-03", "2 April 2024"),
])
def test_a_time_the_question_names_is_its_window(question, since, until, words):
    named = named_window(question, NOW)
    assert named is not None
    assert (named.since[:10], named.until[:10], named.words) == (since, until, words)
    assert named.since.endswith("T00:00:00.000000Z") and named.until.endswith("T00:00:00.000000Z")


@pytest.mark.parametrize(("question", "since", "until", "words"), [
    ("what changed since March 2024", "2024-03-01", None, "since March 2024"),
    ("what changed since 2023?", "2023-01-01", None, "since 2023"),
    ("deploys from 2025", "2025-01-01", None, "from 2025"),
    ("what broke after 2 April 2024", "2024-04-03", None, "after 2 April 2024"),
    ("what happened after June 2024", "2024-07-01", None, "after June 2024"),
    ("who led billing before 2024", None, "2024-01-01", "before 2024"),
    ("what did we use until October 2023", None, "2023-10-01", "until October 2023"),
    ("since last year, what broke", "2025-01-01", None, "since last year"),
    ("what changed since October", "2025-10-01", None, "since October"),  # the latest October begun
    ("what did we use before the Q3 2024 audit", None, "2024-07-01", "before the Q3 2024"),
])
def test_since_after_before_and_until_leave_one_end_open(question, since, until, words):
    named = named_window(question, NOW)
    assert named is not None
    assert (named.since and named.since[:10], named.until and named.until[:10], named.words) == (since, until, words)


@pytest.mark.parametrize("question", [
    "which database does billing use",
    "what broke after March",  # asked in March 2026: that March has not ended
    "what broke after 31 June 2024",  # no such day: nor is its month read from it
    "since 2024-02-30",
    "what did we do before lunch",
    "who led billing before Sam",
    "who leads billing now",
    "what is the 2024 roadmap file called",  # a year that is part of a name, not after "in"
    "what is in version 2024.1",
    "what did we say on June 20",  # which year's June is not said
    'what does "May 2024" in the changelog refer to',  # quoted: words to search
    "may we use redis",
    "what do we use for CI today",  # the present, which is the default
])
def test_a_question_that_names_no_time_has_no_window(question):
    assert named_window(question, NOW) is None


def test_every_month_word_of_the_date_vocabulary_passes_the_gate():
    """``recall.when`` looks for these words before it loads ``extract.dates``: a month
    spelling added there and not here would never be read."""
    from memctl.extract.dates import MONTH_NUMBER
    from memctl.recall.when import _HINTS

    assert set(MONTH_NUMBER) <= _HINTS


@pytest.fixture
def team(tmp_path: Path, clock) -> Memory:
    memory = Memory.open(tmp_path / "m.db", clock)
    memory.ingest([FIXTURE], IngestOptions())
    yield memory
    memory.close()


def objects(result) -> list[str]:
    return [r.object for r in result.results if r.kind == "fact"]


def subjects(result) -> list[str]:
    return [r.subject for r in result.results if r.kind == "fact"]


def test_who_led_billing_in_mid_2023_is_dana_not_sam(team):
    result = team.recall("who was leading the billing team in mid 2023?", kind="fact")
    assert "Dana" in subjects(result) and "Sam" not in subjects(result)
    assert (result.since, result.until, result.time_words) == (
        "2023-05-01T00:00:00.000000Z", "2023-09-01T00:00:00.000000Z", "mid 2023")
    # the same question without the time is asked of the present: Sam leads; Dana's ended lead comes after
    now = team.recall("who was leading the billing team?", kind="fact")
    assert subjects(now)[:2] == ["Sam", "Dana"] and [r.status for r in now.results[:2]] == ["current", "ended"]
    assert now.since is None and "since" not in now.to_json()


def test_an_open_window_read_from_the_question(team):
    before = team.recall("who was leading the billing team before 2023-10-15", kind="fact")
    assert (before.since, before.until) == (None, "2023-10-15T00:00:00.000000Z")
    assert {"Dana", "Sam"} <= set(subjects(before))  # both led billing at some time before then
    since = team.recall("what has billing used since June 2024", kind="fact")
    assert (since.since, since.until) == ("2024-06-01T00:00:00.000000Z", None)
    assert "MySQL" not in objects(since) and "Redis" in objects(since)  # Redis held until September


def test_a_window_given_is_the_window_and_the_words_search(team):
    """--since/--until are the window; the question's time words are then left to it."""
    result = team.recall("which database did billing use in March 2024", since="2024-10-01", until="2025-01-01",
                         kind="fact")
    assert result.since == "2024-10-01T00:00:00.000000Z" and result.time_words is None
    assert "Postgres" in objects(result) and "MySQL" not in objects(result)


def test_with_as_of_the_time_the_question_names_is_still_its_window(team):
    """--as-of is when the question is asked, not instead of the time it names."""
    result = team.recall("which database did billing use in March 2024", as_of="2025-01-01", kind="fact")
    assert (result.since, result.until, result.time_words) == (
        "2024-03-01T00:00:00.000000Z", "2024-04-01T00:00:00.000000Z", "March 2024")
    assert "MySQL" in objects(result) and "Postgres" not in objects(result)


def test_the_command_line_says_which_words_the_window_was_read_from(cli):
    assert cli("ingest", FIXTURE).code == 0
    shown = cli("recall", "which database did billing use in March 2024", "--kind", "fact", "--limit", "1")
    assert shown.code == 0
    assert "from 2024-03-01 00:00:00Z to 2024-04-01 00:00:00Z (read from 'March 2024')" in shown.err  # a pipe: rows only
    assert "MySQL" in shown.out
    since = cli("recall", "what has billing used since June 2024", "--kind", "fact")
    assert "from 2024-06-01 00:00:00Z to … (read from 'since June 2024')" in since.err
    data = cli("recall", "what has billing used since June 2024", "--json").json()
    assert "until" not in data and (data["since"], data["time_words"]) == ("2024-06-01T00:00:00.000000Z",
                                                                          "since June 2024")
    data = cli("recall", "which database did billing use in March 2024", "--json").json()
    assert (data["since"], data["until"], data["time_words"]) == (
        "2024-03-01T00:00:00.000000Z", "2024-04-01T00:00:00.000000Z", "March 2024")
