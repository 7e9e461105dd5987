"""Sources: Aider chat history, generic chat JSONL, text/Markdown notes."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memctl import times
from memctl.errors import MemctlError
from memctl.model import Episode
from memctl.sources import MAX_EPISODE_CHARS, NO_TIME, IngestOptions, Skipped, aider, chat_jsonl, detect_format, notes, parse
from tests.conftest import REALDATA, needs_realdata, write_jsonl

AIDER_DIR = REALDATA / "AndrewJacop-doc_processor"
AIDER_CHAT = AIDER_DIR / ".aider.chat.history.md"


def run(path: Path, **options) -> tuple[list[Episode], list[Skipped]]:
    items = list(parse(path, IngestOptions(**options)))
    return [i for i in items if isinstance(i, Episode)], [i for i in items if isinstance(i, Skipped)]


def z(text: str) -> str:
    """Storage form written out by hand: '2024-05-01 12:03:22' -> '2024-05-01T12:03:22.000000Z'."""
    return text.replace(" ", "T") + ".000000Z"


# ---------------------------------------------------------------- aider


def aider_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(text, encoding="utf-8")
    return path


AIDER_SAMPLE = """\
#### a question before any session header  

an answer

# aider chat started at 2024-01-15 09:30:00

> Aider v0.83.1  
> Main model: some-model  

#### /add billing.py  
> Added billing.py to the chat  

#### which database does billing use?  
####   
#### answer briefly  

Billing uses Postgres.
> Tokens: 615 sent, 1.6k received.  

It moved from MySQL in 2023.

#### /ask is it replicated?  

#### is it replicated?  

Yes, with one standby.

# aider chat started at 2024-03-20 18:00:00

#### second session question  

second session answer
"""


def test_aider_turns_text_positions_and_left_out(tmp_path):
    path = aider_file(tmp_path, AIDER_SAMPLE)
    episodes, skipped = run(path, tz="Europe/Oslo", reference_time="2023-06-01T00:00:00.000000Z")
    by_position = {e.position: e for e in episodes}
    assert sorted(by_position) == [1, 13, 24, 30]

    first = by_position[13]
    assert first.content == (
        "User: which database does billing use?\n\nanswer briefly\n\n"
        "Assistant: Billing uses Postgres.\n\nIt moved from MySQL in 2023."
    )
    assert "Tokens" not in first.content and "Aider v0.83.1" not in first.content
    assert first.left_out == {"tool_output": 1}
    assert by_position[24].content == "User: is it replicated?\n\nAssistant: Yes, with one standby."
    # the bare commands (/add, and /ask that Aider repeats as the next turn) are skipped on purpose
    assert [(s.position, s.reason, s.malformed) for s in skipped] == [
        (10, aider.COMMAND_ONLY, False),
        (22, aider.COMMAND_ONLY, False),
    ]
    # the turn before any header has no time of its own: the user's --reference-time applies
    assert (by_position[1].reference_time, by_position[1].reference_time_source) == ("2023-06-01T00:00:00.000000Z", "user")
    # Oslo is UTC+1 in January and in March before the 31st: every turn of a session gets its start
    assert [(e.position, e.reference_time, e.reference_time_source) for e in episodes[1:]] == [
        (13, z("2024-01-15 08:30:00"), "session"),
        (24, z("2024-01-15 08:30:00"), "session"),
        (30, z("2024-03-20 17:00:00"), "session"),
    ]


def test_aider_turn_before_header_without_fallback_is_skipped_for_no_time(tmp_path):
    path = aider_file(tmp_path, AIDER_SAMPLE)
    episodes, skipped = run(path, tz="Europe/Oslo")
    assert 1 not in {e.position for e in episodes}
    assert Skipped(1, NO_TIME) in skipped
    assert len(episodes) == 3


def test_aider_zone_offsets_including_dst(tmp_path):
    """Same file read in Oslo and in New York: the difference is the zones' offset that day."""
    path = aider_file(tmp_path, AIDER_SAMPLE)

    def times_in(tz):
        return {e.position: datetime.strptime(e.reference_time, "%Y-%m-%dT%H:%M:%S.%fZ") for e in run(path, tz=tz)[0]
                if e.reference_time_source == "session"}

    oslo, new_york = times_in("Europe/Oslo"), times_in("America/New_York")
    # January: CET (+1) vs EST (-5) -> 6 hours
    assert new_york[13] - oslo[13] == timedelta(hours=6)
    # 2024-03-20: New York is already on EDT (-4, since March 10), Oslo still on CET (+1) -> 5 hours
    assert new_york[30] - oslo[30] == timedelta(hours=5)
    assert new_york[30] == datetime(2024, 3, 20, 22, 0)


def test_aider_ambiguous_local_time_is_first_occurrence(tmp_path):
    # 2024-10-27 02:30 happens twice in Oslo (CEST then CET): the first, 00:30Z, is used
    path = aider_file(tmp_path, "# aider chat started at 2024-10-27 02:30:00\n\n#### hi  \n\nhello\n")
    episodes, _ = run(path, tz="Europe/Oslo")
    assert [e.reference_time for e in episodes] == [z("2024-10-27 00:30:00")]


def test_aider_default_zone_is_this_machines(tmp_path, monkeypatch):
    path = aider_file(tmp_path, "# aider chat started at 2024-07-01 12:00:00\n\n#### hi  \n\nhello\n")
    try:
        monkeypatch.setenv("TZ", "America/New_York")
        time.tzset()
        episodes, _ = run(path)
        assert [e.reference_time for e in episodes] == [z("2024-07-01 16:00:00")]  # EDT, -4
        monkeypatch.setenv("TZ", "Asia/Tokyo")
        time.tzset()
        episodes, _ = run(path)
        assert [e.reference_time for e in episodes] == [z("2024-07-01 03:00:00")]  # JST, +9
    finally:
        monkeypatch.undo()
        time.tzset()


def test_aider_unreadable_header_is_reported_and_its_turns_get_no_session_time(tmp_path):
    path = aider_file(
        tmp_path,
        "# aider chat started at 2024-02-31 10:00:00\n\n#### q  \n\na\n"
        "# aider chat started at 2024-02-01 10:00:00\n\n#### q2  \n\na2\n",
    )
    episodes, skipped = run(path, tz="UTC")
    assert skipped[0].position == 1 and skipped[0].malformed and "2024-02-31" in skipped[0].reason
    assert Skipped(3, NO_TIME) in skipped  # not silently given the next session's time, nor the clock's
    assert [(e.position, e.reference_time) for e in episodes] == [(8, z("2024-02-01 10:00:00"))]


def test_aider_unknown_zone_is_a_usage_error(tmp_path):
    path = aider_file(tmp_path, AIDER_SAMPLE)
    with pytest.raises(MemctlError, match="Mars/Olympus"):
        list(parse(path, IngestOptions(tz="Mars/Olympus")))


def _session_starts_by_turn(path: Path) -> dict[int, datetime]:
    """Line of each turn's first "#### " line -> its session's naive local start, read from the raw lines."""
    expected, session, previous_user = {}, None, False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        header = re.match(r"# aider chat started at (.*)$", line)
        if header:
            session = datetime.strptime(header.group(1).strip(), "%Y-%m-%d %H:%M:%S")
        is_user = line.startswith("#### ")
        if is_user and not previous_user:
            expected[number] = session
        previous_user = is_user
    return expected


@needs_realdata
@pytest.mark.parametrize("tz, offset", [("Europe/Oslo", 2), ("America/New_York", -4), ("Asia/Kolkata", 5.5)])
def test_aider_real_file_every_turn_at_its_session_start(tz, offset):
    # offsets written out for late May 2025 (the session's date), not taken from a zone library
    expected = _session_starts_by_turn(AIDER_CHAT)
    episodes, skipped = run(AIDER_CHAT, tz=tz)
    assert len(episodes) == 17 and len(episodes) + len(skipped) == len(expected) == 33
    assert {s.reason for s in skipped} == {aider.COMMAND_ONLY}
    for episode in episodes:
        local = expected[episode.position]
        assert (local.year, local.month) == (2025, 5)
        utc = (local - timedelta(hours=offset)).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
        assert (episode.reference_time, episode.reference_time_source) == (utc, "session")
        assert episode.format == "aider"
        assert not episode.content.startswith("User: /")
        assert "\n> " not in episode.content  # Aider's own output is left out...
    assert sum(e.left_out.get("tool_output", 0) for e in episodes) == 36  # ...but counted
    assert max(len(e.content) for e in episodes) <= MAX_EPISODE_CHARS + 60


@needs_realdata
def test_aider_side_files_are_not_chats():
    assert detect_format(AIDER_CHAT) == "aider"
    assert detect_format(AIDER_DIR / ".aider.input.history") is None
    # Aider's raw LLM log is not detected, so ingesting the folder reads only the chat
    assert detect_format(AIDER_DIR / ".aider.llm.history.md") is None
    assert [e.source for e in run(AIDER_DIR / ".aider.llm.history.md", reference_time="2025-01-01")[0]] == []
    # read as an Aider chat by force, neither side file yields a turn
    for name in (".aider.llm.history.md", ".aider.input.history"):
        assert list(aider.turns(AIDER_DIR / name, IngestOptions(tz="UTC"))) == []


# ---------------------------------------------------------------- generic chat JSONL


@pytest.mark.parametrize(
    "value, expected",
    [
        (1714572202, "2024-05-01T14:03:22.000000Z"),  # seconds
        (1714572202.5, "2024-05-01T14:03:22.500000Z"),  # float seconds
        (1714572202.123456, "2024-05-01T14:03:22.123456Z"),
        (1714572202123, "2024-05-01T14:03:22.123000Z"),  # milliseconds, exact (no float rounding)
        (1714572202123.5, "2024-05-01T14:03:22.123500Z"),
        (1714572202123456, "2024-05-01T14:03:22.123456Z"),  # microseconds
        (1714572202123456789, "2024-05-01T14:03:22.123457Z"),  # nanoseconds, to the nearest µs
        ("1714572202", "2024-05-01T14:03:22.000000Z"),  # digits in a string
        ("1714572202123", "2024-05-01T14:03:22.123000Z"),
        (100_000_000, "1973-03-03T09:46:40.000000Z"),  # smallest accepted: seconds
        (99_999_999_999, "5138-11-16T09:46:39.000000Z"),  # largest seconds
        (100_000_000_000, "1973-03-03T09:46:40.000000Z"),  # smallest milliseconds
        (1e14, "1973-03-03T09:46:40.000000Z"),  # smallest microseconds
    ],
)
def test_epoch_units_by_magnitude(value, expected):
    assert times.epoch_number_to_storage(value) == expected


@pytest.mark.parametrize("value", [0, -1714572202, 2024, 99_999_999, True, float("nan"), float("inf"), 1e20, "12ab", None])
def test_epoch_refuses_what_is_not_a_time(value):
    with pytest.raises(times.BadInstant):
        times.epoch_number_to_storage(value)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2024-05-01T14:03:22Z", "2024-05-01T14:03:22.000000Z"),
        ("2024-05-01T16:03:22+02:00", "2024-05-01T14:03:22.000000Z"),
        ("2024-05-01T14:03:22.5", "2024-05-01T14:03:22.500000Z"),  # naive is UTC
        ("2024-05-01", "2024-05-01T00:00:00.000000Z"),
        ("20240501", "2024-05-01T00:00:00.000000Z"),  # 8 digits: ISO basic date, not epoch
        ("2024", "2024-01-01T00:00:00.000000Z"),
        (1714572202, "2024-05-01T14:03:22.000000Z"),
    ],
)
def test_record_time_values(value, expected):
    assert chat_jsonl.time_to_storage(value) == expected


@pytest.mark.parametrize(
    "value", ["2024-02-31T10:00:00Z", "yesterday", "", "0001-01-01T00:30:00+01:00", [2024], {"t": 1}, False]
)
def test_record_time_refused_names_the_value(value):
    with pytest.raises(times.BadInstant, match=re.escape(repr(value))):
        chat_jsonl.time_to_storage(value)


def test_jsonl_pairs_users_with_following_replies(tmp_path):
    path = write_jsonl(
        tmp_path / "chat.jsonl",
        [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "which database does billing use?", "timestamp": "2024-05-01T14:03:22Z", "id": "m1"},
            {"role": "assistant", "content": [{"type": "text", "text": "Postgres."}, {"type": "tool_use", "name": "x"}],
             "timestamp": 1714572210},
            {"role": "assistant", "content": "Since 2023.", "timestamp": 1714572211000},
            {"author": "Human", "text": "and search?", "created_at": 1714572300123},
            {"author": {"role": "tool"}, "text": "grep output"},
            {"speaker": "bot", "message": [{"type": "text", "text": "Elasticsearch."}, {"type": "image"}], "ts": "1714572301"},
            {"role": "user", "message": "thanks", "date": "2024-05-01T16:10:00+02:00"},
        ],
    )
    assert detect_format(path) == "jsonl"
    episodes, skipped = run(path)
    assert skipped == []
    assert [(e.position, e.content, e.reference_time, e.reference_time_source, e.left_out, e.source_id) for e in episodes] == [
        (2, "User: which database does billing use?\n\nAssistant: Postgres.\n\nSince 2023.",
         "2024-05-01T14:03:22.000000Z", "record", {"system": 1, "tool_use": 1}, "m1"),
        (5, "User: and search?\n\nAssistant: Elasticsearch.",
         "2024-05-01T14:05:00.123000Z", "record", {"tool": 1, "image": 1}, None),
        (8, "User: thanks", "2024-05-01T14:10:00.000000Z", "record", {}, None),
    ]
    assert {e.format for e in episodes} == {"jsonl"}


def test_jsonl_bad_lines_are_skipped_with_line_numbers_and_the_rest_kept(tmp_path):
    path = tmp_path / "chat.jsonl"
    lines = [
        json.dumps({"role": "user", "content": "one", "timestamp": "2024-05-01T10:00:00Z"}),
        json.dumps({"role": "assistant", "content": "reply one"}),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"content": "no role"}),
        json.dumps({"role": "narrator", "content": "once upon a time"}),
        json.dumps({"role": "user", "content": "two", "timestamp": "next tuesday"}),
        json.dumps({"role": "assistant", "content": "reply to two"}),  # must not join turn one
        json.dumps({"role": "user", "content": 42, "timestamp": "2024-05-01T11:00:00Z"}),
        json.dumps({"role": "user", "content": "three", "time": 1714560000}),
        json.dumps({"role": "assistant", "content": "reply three"}),
        '{"role": "user", "content": "trunc',  # truncated last line, no newline
    ]
    path.write_text("\n".join(lines))
    episodes, skipped = run(path)
    assert [(e.position, e.content, e.reference_time) for e in episodes] == [
        (1, "User: one\n\nAssistant: reply one", "2024-05-01T10:00:00.000000Z"),
        (10, "User: three\n\nAssistant: reply three", "2024-05-01T10:40:00.000000Z"),
    ]
    assert [(s.position, s.malformed) for s in skipped] == [
        (3, True), (4, True), (5, True), (6, True), (7, True), (8, False), (9, True), (12, True),
    ]
    reasons = {s.position: s.reason for s in skipped}
    assert "next tuesday" in reasons[7] and "timestamp" in reasons[7]
    assert "narrator" in reasons[6]
    assert reasons[8] == chat_jsonl.NO_QUESTION  # it answers the skipped line 7, not "one"


def test_jsonl_reply_of_another_conversation_or_after_a_long_gap_is_its_own_episode(tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "assistant", "content": "Welcome back.", "timestamp": "2024-05-01T09:00:00Z", "session_id": "s0"},
        {"role": "user", "content": "which database does billing use?", "timestamp": "2024-05-01T10:00:00Z",
         "session_id": "s1"},
        {"role": "assistant", "content": "Postgres.", "timestamp": "2024-05-01T10:00:05Z", "session_id": "s1"},
        # another conversation interleaved in the same file: not an answer to billing's question
        {"role": "assistant", "content": "Dana leads the data team.", "timestamp": "2024-05-01T10:00:07Z",
         "session_id": "s2"},
        {"role": "assistant", "content": "She took over in March.", "timestamp": "2024-05-01T10:00:09Z",
         "session_id": "s2"},
        {"role": "user", "content": "and search?", "timestamp": "2024-05-01T11:00:00Z", "conversation_id": 7},
        {"role": "assistant", "content": "Elasticsearch.", "timestamp": "2024-05-01T11:59:59Z", "conversation_id": 7},
        # the same conversation, but a day later: another exchange whose question is not here
        {"role": "assistant", "content": "Search moved to OpenSearch.", "timestamp": "2024-05-02T12:00:00Z",
         "conversation_id": 7},
    ])
    episodes, skipped = run(path)
    assert skipped == []
    assert [(e.position, e.content, e.reference_time) for e in episodes] == [
        (1, "Assistant: Welcome back.", z("2024-05-01 09:00:00")),
        (2, "User: which database does billing use?\n\nAssistant: Postgres.", z("2024-05-01 10:00:00")),
        (4, "Assistant: Dana leads the data team.\n\nShe took over in March.", z("2024-05-01 10:00:07")),
        (6, "User: and search?\n\nAssistant: Elasticsearch.", z("2024-05-01 11:00:00")),
        (8, "Assistant: Search moved to OpenSearch.", z("2024-05-02 12:00:00")),
    ]
    assert all(e.reference_time_source == "record" for e in episodes)


@pytest.mark.parametrize("seconds, glued", [(3600, True), (3601, False)])
def test_jsonl_reply_gap_is_one_hour_after_the_last_message(tmp_path, seconds, glued):
    start = datetime(2024, 5, 1, 10, tzinfo=times.UTC)
    at = [start, start + timedelta(minutes=50), start + timedelta(minutes=50, seconds=seconds)]
    path = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "q", "timestamp": at[0].isoformat()},
        {"role": "assistant", "content": "a1", "timestamp": at[1].isoformat()},
        {"role": "assistant", "content": "a2", "timestamp": at[2].isoformat()},
    ])
    episodes, _ = run(path)
    assert chat_jsonl.REPLY_GAP == timedelta(hours=1)
    assert [e.content for e in episodes] == (
        ["User: q\n\nAssistant: a1\n\na2"] if glued else ["User: q\n\nAssistant: a1", "Assistant: a2"])


def test_jsonl_time_from_first_reply_then_fallbacks(tmp_path):
    path = write_jsonl(
        tmp_path / "chat.jsonl",
        [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "assistant", "content": "a1b", "timestamp": "2024-05-01T10:00:05Z"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "a2"},
        ],
    )
    episodes, skipped = run(path)
    assert [(e.position, e.reference_time, e.reference_time_source) for e in episodes] == [
        (1, "2024-05-01T10:00:05.000000Z", "record")
    ]
    assert skipped == [Skipped(4, NO_TIME)]
    episodes, _ = run(path, reference_time="2024-01-01T00:00:00.000000Z")
    assert [(e.position, e.reference_time_source) for e in episodes] == [(1, "record"), (4, "user")]


# ---------------------------------------------------------------- notes


@pytest.mark.parametrize(
    "name, expected",
    [
        ("2024-03-05-standup.md", "2024-03-05"),
        ("notes_20240305.txt", "2024-03-05"),
        ("2024_03_05.md", "2024-03-05"),
        ("meeting 2024.03.05 retro.md", "2024-03-05"),
        ("2024-02-29.md", "2024-02-29"),
        ("2024-02-31-then-2024-03-01.md", "2024-03-01"),  # impossible date skipped, next one taken
        ("2023-02-29.md", None),
        ("2024-13-01.md", None),
        ("2024-0305.md", None),  # mixed separators
        ("ticket-1202403051.md", None),  # inside a longer number
        ("1234-05-06.md", None),  # not a plausible year
        ("standup.md", None),
    ],
)
def test_note_file_name_dates(name, expected):
    assert notes.name_time(name) == (None if expected is None else f"{expected}T00:00:00.000000Z")


def test_note_front_matter_date_is_used_and_stripped(tmp_path):
    path = tmp_path / "2020-01-01-standup.md"
    path.write_text(
        "---\ntitle: Standup\ntags: [a, b]\ndate: \"2024-03-05T09:15:00+01:00\"  # local\n---\n"
        "We moved billing to Postgres.\n---\nA horizontal rule stays.\n"
    )
    assert detect_format(path) == "markdown"
    episodes, skipped = run(path)
    assert skipped == []
    [note] = episodes
    assert (note.position, note.reference_time, note.reference_time_source) == (1, "2024-03-05T08:15:00.000000Z", "record")
    assert note.content == "User: We moved billing to Postgres.\n---\nA horizontal rule stays."
    assert "title" not in note.content


def test_note_created_key_and_fall_through_of_impossible_dates(tmp_path):
    created = tmp_path / "a.txt"
    created.write_text("---\nCreated: 2024-06-07\n---\nbody\n")
    assert run(created)[0][0].reference_time == "2024-06-07T00:00:00.000000Z"

    # date is impossible -> created; both impossible -> file name; nothing -> no time
    both = tmp_path / "notes_20240305.txt"
    both.write_text("---\ndate: 2024-02-31\ncreated: 2024-02-30\n---\nbody\n")
    assert run(both)[0][0].reference_time == "2024-03-05T00:00:00.000000Z"
    date_bad = tmp_path / "b.md"
    date_bad.write_text("---\ndate: 2024-02-31\ncreated: 2024-04-01T12:00:00Z\n---\nbody\n")
    assert run(date_bad)[0][0].reference_time == "2024-04-01T12:00:00.000000Z"
    none = tmp_path / "2024-02-31-idea.md"
    none.write_text("---\ndate: sometime in spring\n---\nbody\n")
    assert run(none) == ([], [Skipped(1, NO_TIME)])
    [episode], _ = run(none, reference_time="2024-05-05T00:00:00.000000Z")
    assert (episode.reference_time, episode.reference_time_source, episode.content) == (
        "2024-05-05T00:00:00.000000Z", "user", "User: body")


def test_note_unclosed_front_matter_is_text_and_empty_note_is_skipped(tmp_path):
    unclosed = tmp_path / "n.md"
    unclosed.write_text("---\ndate: 2024-03-05\nno closing line\n")
    [episode], _ = run(unclosed, reference_time="2024-01-01")
    assert episode.content == "User: ---\ndate: 2024-03-05\nno closing line"
    assert episode.reference_time_source == "user"  # not front matter, so not its date

    empty = tmp_path / "2024-03-05.md"
    empty.write_text("---\ndate: 2024-03-05\n---\n\n   \n")
    assert run(empty) == ([], [Skipped(1, notes.EMPTY)])


def test_big_note_is_one_cut_episode(tmp_path):
    path = tmp_path / "2024-03-05.txt"
    path.write_text("".join(f"line {i} of the note\n" for i in range(30_000)))
    [episode], _ = run(path)
    assert episode.position == 1 and episode.format == "text"
    assert len(episode.content) <= MAX_EPISODE_CHARS + 60
    # its start and its end are kept, whole lines, and the middle is said to be cut
    head, marker, tail = episode.content.partition("\n[cut: ")
    assert head.startswith("User: line 0 of the note\n") and head.endswith(" of the note")
    assert marker and tail.endswith("line 29999 of the note")
    assert tail.startswith(f"{episode.cut_chars} characters]\nline ")


def test_an_aider_history_with_a_bom_or_a_bad_byte_keeps_its_sessions(tmp_path):
    """Issue 31, item 8: a byte-order mark before the first header, or a byte that is not
    UTF-8 in it, lost the whole session (every turn "no reference time")."""
    from memctl.sources import Notice

    text = "# aider chat started at 2024-03-01 10:00:00\n\n#### set up the staging cluster  \n\ndone\n"
    path = tmp_path / ".aider.chat.history.md"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    episodes, skipped = run(path, tz="UTC")
    assert [e.reference_time for e in episodes] == [z("2024-03-01 10:00:00")] and skipped == []
    path.write_bytes(text.replace("staging", "stäging").encode("latin-1"))  # a byte an old editor wrote
    items = list(parse(path, IngestOptions(tz="UTC")))
    [notice] = [i for i in items if isinstance(i, Notice)]
    assert "not UTF-8 (byte 63)" in notice.text
    [episode] = [i for i in items if isinstance(i, Episode)]
    assert episode.reference_time == z("2024-03-01 10:00:00") and "stäging" in episode.content
