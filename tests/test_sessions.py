"""`memctl sessions`: each session (a session file, a conversation of an export) with its
first request, its span and its episodes, the latest first."""

from __future__ import annotations

import json

import pytest

from memctl import IngestOptions, Memory
from tests.conftest import needs_realdata


def said(memory: Memory, source: str, at: str, text: str) -> str:
    return memory.add_memory(f"User: {text}\n\nAssistant: ok", reference_time=at, source=source).episode_id


def test_each_session_with_its_first_request_span_and_episodes_latest_first(memory):
    said(memory, "chat://deploy", "2025-03-01T09:00:00Z", "hi")  # a greeting says nothing of the session
    said(memory, "chat://deploy", "2025-03-01T09:01:00Z", "set up the staging cluster for the billing service")
    said(memory, "chat://deploy", "2025-03-02T10:00:00Z", "now add a retry to the consumer")
    said(memory, "chat://notes", "2025-02-01T08:00:00Z", "write the release notes\nwith every change since 1.2")
    listed = memory.sessions()
    assert [(s.source, s.title, s.first_at[:10], s.last_at[:10], s.episodes) for s in listed] == [
        ("chat://deploy", "set up the staging cluster for the billing service", "2025-03-01", "2025-03-02", 3),
        ("chat://notes", "write the release notes", "2025-02-01", "2025-02-01", 1),
    ]
    assert [s.source for s in memory.sessions(until="2025-03-01")] == ["chat://notes"]
    assert [s.episodes for s in memory.sessions(since="2025-03-02")] == [1]  # only what it said then
    assert len(memory.sessions(limit=1)) == 1


def test_an_undone_episode_leaves_its_session(memory):
    only = said(memory, "chat://gone", "2025-03-01T09:00:00Z", "a session of one turn")
    said(memory, "chat://kept", "2025-03-01T10:00:00Z", "this one stays")
    memory.undo([only], apply=True)
    assert [s.source for s in memory.sessions()] == ["chat://kept"]


def test_each_conversation_of_an_export_is_a_session(memory, tmp_path):
    def chat(cid: str, text: str, start: float) -> dict:
        return {"id": cid, "title": "t", "create_time": start, "current_node": "u", "mapping": {
            "root": {"id": "root", "message": None, "parent": None, "children": ["u"]},
            "u": {"id": "u", "parent": "root", "children": [], "message": {
                "id": "u", "author": {"role": "user"}, "create_time": start, "recipient": "all", "metadata": {},
                "content": {"content_type": "text", "parts": [text]}}}}}

    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([chat("c-1", "plan the offsite", 1_700_000_000), chat("c-2", "fix the printer",
                                                                                    1_700_100_000)]))
    memory.ingest([path], IngestOptions())
    listed = memory.sessions()
    assert [(s.conversation, s.title) for s in listed] == [("c-2", "fix the printer"), ("c-1", "plan the offsite")]
    assert {s.session for s in listed} == {f"{path.resolve()}#c-1", f"{path.resolve()}#c-2"}


def test_the_command_lists_them_as_a_table_and_as_json(cli):
    assert cli("add", "User: tidy the backlog", "--reference-time", "2025-01-05", "--source", "chat://tidy").code == 0
    table = cli("sessions")
    assert table.code == 0 and "tidy the backlog" in table.out
    [row] = cli("sessions", "--json").json()
    assert (row["source"], row["title"], row["episodes"]) == ("chat://tidy", "tidy the backlog", 1)
    bad = cli("sessions", "--since", "soon")
    assert bad.code == 2 and "--since" in bad.err and "Traceback" not in bad.err
    empty = cli("sessions", "--until", "2020-01-01")
    assert empty.code == 0 and "no sessions match" in empty.err


def test_every_format_names_its_participants():
    from memctl.sources import FORMATS, MEMORY_FORMAT
    from memctl.store.search import PARTICIPANTS

    assert set(PARTICIPANTS) == {*FORMATS, MEMORY_FORMAT}


@needs_realdata
@pytest.mark.parametrize(("folder", "format_"), [
    ("daaain-claude-code-log", "claude-code"), ("madshn-localpush", "codex"), ("codemie-ai-codemie-code", "gemini"),
    ("realazthat-chatgpt2graph", "chatgpt"), ("yaleman-anthropic-data", "claude-ai")])
def test_sessions_of_every_real_log_format(memory, realdata, folder, format_):
    report = memory.ingest([realdata / folder], IngestOptions(from_mtime=True))
    listed = [s for s in memory.sessions() if s.format == format_]
    assert listed and sum(s.episodes for s in listed) == report.added
    assert all(s.participants == ["user", PARTICIPANT[format_]] and s.first_at <= s.last_at for s in listed)
    assert sum(bool(s.title) for s in listed) >= len(listed) * 0.9  # a session of greetings only has none


PARTICIPANT = {"claude-code": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "chatgpt": "ChatGPT",
               "claude-ai": "Claude"}


def test_with_a_model_each_session_gets_a_sentence_once_for_its_turns(memory, clock, tmp_path):
    from datetime import UTC, datetime

    from memctl.extract.llm import LLMExtractor, make_client
    from tests.fake_llm import API_KEY, FakeOpenAIServer, chat_file

    turns = [("2025-03-01T09:00:00Z", "Set up the staging cluster for billing."),
             ("2025-03-01T09:05:00Z", "Now add a retry to the consumer.")]
    path = chat_file(tmp_path / "deploy.jsonl", turns)
    with FakeOpenAIServer(datetime.now(UTC)) as server:
        def ingest():
            llm = LLMExtractor(make_client(api_key=API_KEY, base_url=server.base_url), "fake-normal", clock,
                               max_retries=0)
            return memory.ingest([path], IngestOptions(), extractor=llm)

        first = ingest()
        assert first.summaries.sessions_written == 1
        [session] = memory.sessions()
        assert session.summary == "The session began with: User: Set up the staging cluster for billing."
        assert session.summary_by == "llm:fake-normal"
        calls = server.summary_calls
        clock.advance(minutes=1)
        assert ingest().summaries.sessions_written == 0 and server.summary_calls == calls  # nothing new in it
        chat_file(path, [*turns, ("2025-03-02T10:00:00Z", "Ship it.")])  # the session grew
        clock.advance(minutes=1)
        grown = ingest()
        assert grown.summaries.sessions_written == 1 and server.summary_calls == calls + 1
        [session] = memory.sessions()
        assert session.episodes == 3 and session.summary is not None
        # A session still being written waits for its end, as a burst does.
        live = chat_file(tmp_path / "live.jsonl", [(memory.now(), "Deploy the hotfix now.")])
        llm = LLMExtractor(make_client(api_key=API_KEY, base_url=server.base_url), "fake-normal", clock, max_retries=0)
        assert memory.ingest([live], IngestOptions(), extractor=llm).summaries.sessions_skipped == {"live": 1}
        assert [s.summary for s in memory.sessions() if s.source == str(live.resolve())] == [None]
        clock.advance(minutes=11)
        assert memory.summarize(llm, sessions=True).sessions_written == 1  # its end: `memctl summarize`
        assert [s.summary for s in memory.sessions() if s.source == str(live.resolve())] != [None]
    # A turn undone: the sentence was written from turns the session no longer holds.
    memory.undo([memory.episodes(source=path)[-1].id], apply=True)
    assert [s.summary for s in memory.sessions() if s.source == str(path.resolve())][0] is not None  # the 2-turn one
