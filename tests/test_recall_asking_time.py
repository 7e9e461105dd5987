"""--as-of is when the question is asked: every time phrase in it is read from there
(recall.when), with the same vocabulary as without it, and nothing later is found."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memctl import Memory
from memctl.recall.when import named_window

SESSIONS = {  # three dated chat sessions, each its own source
    "pottery": ("2023-04-20T18:00:00Z", "I went to my first pottery class today and made a lopsided bowl."),
    "hiking": ("2023-05-13T09:00:00Z", "Back from hiking the ridge trail with Sam, twelve miles."),
    "baking": ("2023-05-26T15:00:00Z", "Baked sourdough for the first time at the baking workshop."),
}


@pytest.fixture
def diary(memory: Memory) -> Memory:
    for name, (at, said) in SESSIONS.items():
        memory.add_memory(f"User: {said}", reference_time=at, source=f"chat://{name}")
    return memory


def sessions(result) -> list[str]:
    return sorted(r.source.removeprefix("chat://") for r in result.results if r.kind == "episode")


@pytest.mark.parametrize(("question", "as_of", "found"), [
    ("what did I do two weeks ago", "2023-05-27", ["hiking"]),
    ("what did I do two weeks ago", "2023-05-10", []),  # the week of 26 April: nothing said then
    ("what did I do in May", "2023-06-01", ["baking", "hiking"]),
    ("what did I do in May", "2023-05-20", ["hiking"]),  # the baking was not yet
    ("what did I do in April", "2023-06-01", ["pottery"]),
    ("what did I do last month", "2023-06-03", ["baking", "hiking"]),
    ("what did I do last month", "2023-05-02", ["pottery"]),
    ("what did I do yesterday", "2023-05-27", ["baking"]),
    ("what did I do yesterday", "2023-05-14", ["hiking"]),
    ("what did I do last spring", "2023-06-15", ["baking", "hiking", "pottery"]),
    ("what did I do last spring", "2024-01-10", ["baking", "hiking", "pottery"]),  # across the year boundary
    ("what did I do last spring", "2023-05-27", []),  # spring 2022: this one has not ended
    ("what did I do this year", "2023-05-15", ["hiking", "pottery"]),
    ("what did I do this year", "2024-01-10", []),  # 2024 has just begun
    ("what did I do last year", "2024-01-10", ["baking", "hiking", "pottery"]),
    ("what did I do since March", "2023-05-15", ["hiking", "pottery"]),
    ("what did I do since March", "2024-02-01", ["baking", "hiking", "pottery"]),  # March 2023, seen from 2024
    ("what did I do in the past two weeks", "2023-05-27", ["baking", "hiking"]),
    ("what did I do in December", "2024-01-10", []),  # December 2023
])
def test_each_time_phrase_is_read_from_the_asking_time(diary, question, as_of, found):
    result = diary.recall(question, as_of=as_of)
    assert sessions(result) == found
    assert result.time_words is not None and result.as_of.startswith(as_of)


def test_without_as_of_the_same_phrases_are_read_from_now(clock):
    clock.now = datetime(2024, 1, 10, 12, tzinfo=UTC)
    memory = Memory.open(":memory:", clock)
    for name, (at, said) in SESSIONS.items():
        memory.add_memory(f"User: {said}", reference_time=at, source=f"chat://{name}")
    assert sessions(memory.recall("what did I do last year")) == ["baking", "hiking", "pottery"]
    assert sessions(memory.recall("what did I do in May")) == ["baking", "hiking"]
    assert sessions(memory.recall("what did I do last spring")) == ["baking", "hiking", "pottery"]
    memory.close()


def test_a_question_about_what_came_first_finds_both_and_nothing_said_after_the_asking_time(diary):
    result = diary.recall("which came first, the pottery class or the hiking trip?", as_of="2023-05-20")
    found = {r.source.removeprefix("chat://"): r.reference_time for r in result.results if r.kind == "episode"}
    assert set(found) == {"pottery", "hiking"} and found["pottery"] < found["hiking"]
    assert "baking" not in sessions(diary.recall("baking workshop sourdough", as_of="2023-05-20"))


def test_how_many_days_ago_names_no_window_but_still_sees_only_what_was_said_by_then(diary):
    result = diary.recall("how many days ago did I go hiking?", as_of="2023-05-20")
    assert result.since is None and result.until is None
    assert sessions(result) == ["hiking"]


@pytest.mark.parametrize(("phrase", "asked", "since", "until"), [
    ("last Friday", "2023-05-27", "2023-05-26", "2023-05-27"),  # a Saturday
    ("on Friday", "2023-05-26", "2023-05-19", "2023-05-20"),  # asked on a Friday: the one before
    ("last weekend", "2023-05-29", "2023-05-27", "2023-05-29"),  # a Monday
    ("last weekend", "2023-05-28", "2023-05-20", "2023-05-22"),  # a Sunday: this weekend is not over
    ("this week", "2023-05-27", "2023-05-22", "2023-05-29"),
    ("this month", "2024-01-10", "2024-01-01", "2024-02-01"),
    ("last month", "2024-01-10", "2023-12-01", "2024-01-01"),
    ("two weeks ago", "2024-01-03", "2023-12-20", "2023-12-27"),
    ("yesterday", "2024-01-01", "2023-12-31", "2024-01-01"),
    ("in the summer", "2023-11-02", "2023-06-01", "2023-09-01"),
    ("in the summer", "2023-04-02", "2022-06-01", "2022-09-01"),
    ("this winter", "2024-01-10", "2023-12-01", "2024-03-01"),
    ("last winter", "2024-01-10", "2022-12-01", "2023-03-01"),
    ("winter 2024", "2025-06-01", "2023-12-01", "2024-03-01"),
    ("autumn of 2022", "2025-06-01", "2022-09-01", "2022-12-01"),
    ("the past month", "2024-03-31", "2024-02-29", None),
    ("the last 3 days", "2024-01-02", "2023-12-30", None),
    ("last night", "2024-01-01", "2023-12-31", "2024-01-01"),
    ("the day before yesterday", "2024-01-01", "2023-12-30", "2023-12-31"),
    ("last February", "2024-02-10", "2023-02-01", "2023-03-01"),  # this February has not ended
    ("last February", "2024-03-10", "2024-02-01", "2024-03-01"),
    ("last December", "2024-01-10", "2023-12-01", "2024-01-01"),
    ("a few weeks ago", "2024-01-10", "2023-12-06", "2023-12-27"),
    ("several days ago", "2024-01-03", "2023-12-29", "2024-01-01"),
])
def test_the_vocabulary_at_several_asking_times(phrase, asked, since, until):
    named = named_window(f"what did we do {phrase}", datetime.fromisoformat(asked).replace(tzinfo=UTC))
    assert named is not None
    assert (named.since[:10], named.until and named.until[:10]) == (since, until)


@pytest.mark.parametrize("question", ["how do I configure Spring Boot", "the fall of the old API", "winter is coming"])
def test_a_season_needs_a_word_that_makes_it_a_time(question):
    assert named_window(question, datetime(2024, 6, 1, tzinfo=UTC)) is None


def test_the_command_line_reads_the_phrase_from_as_of(cli, tmp_path):
    for name, (at, said) in SESSIONS.items():
        assert cli("add", f"User: {said}", "--reference-time", at, "--source", f"chat://{name}").code == 0
    data = cli("recall", "what did I do two weeks ago", "--as-of", "2023-05-27", "--json").json()
    assert (data["since"], data["until"], data["time_words"]) == (
        "2023-05-13T00:00:00.000000Z", "2023-05-20T00:00:00.000000Z", "two weeks ago")
    assert [data["sessions"][r["session"]]["source"] for r in data["results"]] == ["chat://hiking"]


def test_asked_what_held_in_a_stretch_what_was_said_before_it_answers_too(memory):
    """"What did billing store its data in back in February 2024" is answered by what was
    said before February as well (it may still have held then), after what was said in
    it; "what did I do in February" keeps to what was said in it."""
    said = memory.add_memory("User: billing stores its data in Cassandra", reference_time="2024-01-10",
                             source="chat://before")
    during = memory.add_memory("User: billing stores its data in Cassandra, still", reference_time="2024-02-03",
                               source="chat://during")
    found = memory.recall("what did billing store its data in back in February 2024", as_of="2024-02-15")
    assert (found.since, found.time_words) == ("2024-02-01T00:00:00.000000Z", "February 2024")
    assert [r.episode_id for r in found.results] == [during.episode_id, said.episode_id]
    happened = memory.recall("what did I do in February", as_of="2024-02-15")
    assert [r.episode_id for r in happened.results] == [during.episode_id]
