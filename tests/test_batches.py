"""Backfills through the Batch API (issue 34): ingest --batch, batches, batches collect,
retry --batch, and the cost known first; against the fake server's files and batches
endpoints, through the real ``openai`` client.

The promise under test: the facts a batch makes are the live path's, and nothing is lost
in between (a kill, an expired, failed or partly answered batch, a cut output file),
nor sent twice.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.conftest import made_nothing, open_store, stored_text
from tests.fake_llm import FakeOpenAIServer, chat_file, point_at

CHAT = [
    ("2024-03-01T10:00:00Z", "Billing uses Postgres since 3 March 2021."),
    ("2024-03-02T10:00:00Z", "Alice lives in Oslo since 20 June 2022."),
    ("2024-03-03T10:00:00Z", "Bob uses Rust."),
    ("2024-03-04T10:00:00Z", "Carol works as Engineer since March 2023."),
]
MODEL = ("--model", "fake-normal")


@pytest.fixture
def server(monkeypatch):
    with FakeOpenAIServer(datetime.now(UTC)) as fake:
        point_at(monkeypatch, fake)
        yield fake


def _chat(tmp_path, turns=CHAT):
    return chat_file(tmp_path / "chat.jsonl", turns)


def _facts(cli) -> list[tuple]:
    return sorted((f["subject"], f["predicate"], f["object"], f["valid_at"], f["invalid_at"])
                  for f in cli("facts", "--json").json())


def _states(db_path) -> list[tuple]:
    with open_store(db_path) as conn:
        return conn.execute("SELECT extraction, count(*) FROM episodes GROUP BY 1 ORDER BY 1").fetchall()


def _requests(db_path) -> list[tuple]:
    with open_store(db_path) as conn:
        return conn.execute("SELECT state, count(*) FROM api_batch_requests GROUP BY 1 ORDER BY 1").fetchall()


def test_a_batch_makes_the_live_paths_facts_in_a_handful_of_requests(cli, db_path, server, tmp_path, raw_cli):
    chat = _chat(tmp_path)
    sent = cli("ingest", chat, "--batch", *MODEL, "--json")
    assert sent.code == 0, sent.err
    report = sent.json()
    assert report["batch"]["requests"] == report["batch"]["episodes"] == len(CHAT)
    assert report["extraction_calls"] == 0 and server.calls == 0
    assert _states(db_path) == [("pending", len(CHAT))]
    listed = cli("batches", "--json").json()
    assert [(b["state"], b["episodes"]) for b in listed] == [("submitted", {"sent": len(CHAT)})]

    server.batch_api.finish()
    collected = cli("batches", "collect", "--json")
    assert collected.code == 0, collected.err
    assert collected.json()["answered"] == len(CHAT) and collected.json()["finished"] == [listed[0]["id"]]
    assert _states(db_path) == [("done", len(CHAT))]
    # Files and batches, not one request per episode: upload, create, one poll, one download.
    assert server.batch_api.requests == {"POST /v1/files": 1, "POST /v1/batches": 1, "GET /v1/batches/{id}": 1,
                                         "GET /v1/files/{id}/content": 1}

    live_db = tmp_path / "live.db"
    assert raw_cli("--db", live_db, "ingest", chat, "--extractor", "llm", *MODEL).code == 0
    assert _facts(cli) == _facts(lambda *a: raw_cli("--db", live_db, *a)) != []

    # Collected again: nothing more is asked, extracted or journaled.
    operations = cli("operations", "--json").json()
    again = cli("batches", "collect", "--json")
    assert again.code == 0 and again.json()["finished"] == [] and again.json()["extracted"] == []
    assert cli("operations", "--json").json() == operations
    assert sum(server.batch_api.requests.values()) == 4


def test_an_open_batch_is_never_sent_twice_nor_its_episodes_called_live(cli, db_path, server, tmp_path):
    chat = _chat(tmp_path)
    assert cli("ingest", chat, "--batch", *MODEL).code == 0
    running = cli("batches", "collect", "--json")
    assert running.code == 0 and len(running.json()["open"]) == 1 and _states(db_path) == [("pending", len(CHAT))]
    again = cli("ingest", chat, "--batch", *MODEL, "--json").json()
    assert again["batch"]["batches"] == [] and again["batch"]["awaiting"] == len(CHAT)
    live = cli("ingest", chat, "--extractor", "llm", *MODEL, "--json")
    assert live.code == 0 and live.json()["extraction_calls"] == 0 and server.calls == 0
    retried = cli("retry", "--failed", "--extractor", "llm", *MODEL, "--json").json()
    assert retried["awaiting_batch"] == len(CHAT) and retried["model_calls"] == 0
    assert server.batch_api.requests["POST /v1/batches"] == 1

    server.batch_api.finish()
    # Any later ingest with a model collects first.
    later = cli("ingest", chat, "--extractor", "llm", *MODEL, "--json").json()
    assert later["collected"]["answered"] == len(CHAT) and server.calls == len(CHAT)  # the batch's, not live ones
    assert _states(db_path) == [("done", len(CHAT))]


def test_a_partly_failed_batch_extracts_the_rest_and_sends_the_failed_again(cli, db_path, server, tmp_path):
    assert cli("ingest", _chat(tmp_path), "--batch", *MODEL).code == 0
    with open_store(db_path) as conn:
        [key] = conn.execute("SELECT cache_key FROM api_batch_requests r JOIN episodes e ON e.id = r.episode_id "
                             "WHERE e.content LIKE '%Bob uses Rust%'").fetchone()
    server.batch_api.finish(errors={key: 400})
    collected = cli("batches", "collect", "--json")
    assert collected.code == 1 and collected.json()["failed"] == 1 and collected.json()["answered"] == len(CHAT) - 1
    assert _states(db_path) == [("done", len(CHAT) - 1), ("pending", 1)]
    assert "maximum context length" in collected.err and collected.json()["first_failure"].startswith("ep_")

    resent = cli("retry", "--failed", "--batch", *MODEL, "--json").json()
    assert resent["requests"] == 1 and len(resent["batches"]) == 1
    server.batch_api.finish()
    assert cli("batches", "collect").code == 0
    assert _states(db_path) == [("done", len(CHAT))]
    assert ("Bob", "uses", "Rust") in {f[:3] for f in _facts(cli)}


@pytest.mark.parametrize("how", ["expired", "failed", "cut short"])
def test_what_a_batch_did_not_answer_stays_pending_and_can_be_sent_again(cli, db_path, server, tmp_path, how):
    assert cli("ingest", _chat(tmp_path), "--batch", *MODEL).code == 0
    server.batch_api.finish(expire_after=1 if how == "expired" else None, fail=how == "failed",
                            truncate=how == "cut short")
    collected = cli("batches", "collect", "--json")
    assert collected.code == 1
    answered = {"expired": 1, "failed": 0, "cut short": len(CHAT) - 1}[how]
    assert (collected.json()["answered"], collected.json()["unanswered"]) == (answered, len(CHAT) - answered)
    assert dict(_states(db_path)).get("pending") == len(CHAT) - answered
    if how == "failed":
        assert "the input file is not valid" in collected.err
    resent = cli("retry", "--failed", "--batch", *MODEL, "--json").json()
    assert resent["episodes"] == len(CHAT) - answered
    server.batch_api.finish()
    assert cli("batches", "collect").code == 0
    assert _states(db_path) == [("done", len(CHAT))]


def test_a_batch_made_before_a_kill_is_found_not_made_again(cli, db_path, server, tmp_path, monkeypatch):
    from memctl import batch

    made = batch.BatchAPI.create

    def created_then_killed(self, file_id, batch_id):
        made(self, file_id, batch_id)
        raise KeyboardInterrupt  # stopped before it writes the batch's id down

    monkeypatch.setattr(batch.BatchAPI, "create", created_then_killed)
    assert cli("ingest", _chat(tmp_path), "--batch", *MODEL).code == 130
    assert _states(db_path) == [("pending", len(CHAT))]  # the episodes were stored before
    monkeypatch.setattr(batch.BatchAPI, "create", made)
    [recorded] = cli("batches", "--json").json()
    assert recorded["state"] == "preparing" and recorded["remote_id"] is None and recorded["file_id"]
    assert cli("batches", "collect").code == 0
    [found] = cli("batches", "--json").json()
    assert found["state"] == "submitted" and found["remote_id"] == "batch_1"
    server.batch_api.finish()
    assert cli("batches", "collect").code == 0 and _states(db_path) == [("done", len(CHAT))]
    assert server.batch_api.requests["POST /v1/batches"] == 1 and server.batch_api.requests["POST /v1/files"] == 1


def test_an_upload_whose_batch_could_not_be_made_is_sent_by_the_next_collect(cli, db_path, server, tmp_path):
    server.batch_api.fail_next["POST /v1/batches"] = 400
    sent = cli("ingest", _chat(tmp_path), "--batch", *MODEL)
    assert sent.code == 1 and "batches collect' sends it" in sent.err
    assert cli("batches", "collect").code == 0  # finds no batch of its id, so creates it from the uploaded file
    server.batch_api.finish()
    assert cli("batches", "collect").code == 0 and _states(db_path) == [("done", len(CHAT))]
    assert server.batch_api.requests["POST /v1/files"] == 1 and len(server.batch_api.batches) == 1


@pytest.mark.parametrize("live", [False, True])
def test_a_reply_the_guard_finds_wrong_goes_back_once(cli, db_path, server, tmp_path, live):
    dated = [turn for turn in CHAT if "since" in turn[1]]
    assert cli("ingest", _chat(tmp_path), "--batch", "--model", "fake-sloppy").code == 0
    server.batch_api.finish()
    collected = cli("batches", "collect", *(["--live-corrections"] if live else []), "--json").json()
    if live:
        assert collected["corrected_live"] == len(dated) and server.calls == len(CHAT) + len(dated)
    else:
        assert collected["corrections_sent"] == len(dated) and len(collected["submitted"]) == 1
        assert _states(db_path) == [("done", len(CHAT) - len(dated)), ("pending", len(dated))]
        [correction] = [b for b in cli("batches", "--json").json() if b["kind"] == "correction"]
        assert correction["requests"] == len(dated)
        server.batch_api.finish()
        assert cli("batches", "collect").code == 0
    assert _states(db_path) == [("done", len(CHAT))]
    with open_store(db_path) as conn:
        evidence = conn.execute("SELECT valid_at_evidence FROM assertions WHERE fact LIKE '%since%'").fetchall()
    assert evidence and {row[0] for row in evidence} == {"text"}


def test_the_midnight_guard_judges_a_reply_by_its_own_response_time(cli, db_path, monkeypatch, tmp_path):
    """A batch answered on another day than it was sent: "today 00:00" is the reply's day."""
    second_day = datetime(2025, 1, 2, 12, 0, tzinfo=UTC)
    with FakeOpenAIServer(second_day) as server:
        point_at(monkeypatch, server)
        server.batch_api.replied_at = int(second_day.timestamp())
        assert cli("ingest", _chat(tmp_path), "--batch", "--model", "fake-adversarial").code == 0
        server.batch_api.finish()
        collected = cli("batches", "collect", "--json")
    assert collected.code == 0, collected.err
    assert server.dates_answered > 1  # it lied about every other date
    with open_store(db_path) as conn:
        starts = [row[0] for row in conn.execute("SELECT valid_at FROM assertions").fetchall()]
    assert len(starts) == len(CHAT) and not [s for s in starts if s.startswith("2025-01-02")]


def test_undo_of_the_ingest_cancels_its_open_batch(cli, db_path, server, tmp_path):
    operation = cli("ingest", _chat(tmp_path), "--batch", *MODEL, "--json").json()["operation_id"]
    undone = cli("undo", operation, "--apply", "--json")
    assert undone.code == 0, undone.err
    [batch] = cli("batches", "--json").json()
    assert undone.json()["batches_cancelled"] == [batch["id"]] and batch["state"] == "cancelled"
    assert server.batch_api.batches["batch_1"]["status"] == "cancelled"
    assert _requests(db_path) == [("unanswered", len(CHAT))]


def test_a_purge_erases_the_replies_kept_for_correction(cli, db_path, server, tmp_path):
    operation = cli("ingest", _chat(tmp_path), "--batch", "--model", "fake-sloppy", "--json").json()["operation_id"]
    server.batch_api.finish()
    assert cli("batches", "collect").code == 0
    with open_store(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM api_batch_requests WHERE reply LIKE '%Oslo%'").fetchone()[0] == 1
    assert cli("undo", operation, "--purge", "--apply").code == 0
    assert _requests(db_path) == []


def test_an_endpoint_without_a_batch_api_keeps_the_episodes_for_a_live_run(cli, db_path, server, tmp_path):
    server.batch_api.enabled = False
    sent = cli("ingest", _chat(tmp_path), "--batch", *MODEL)
    assert sent.code == 1 and "no Batch API" in sent.err and "Traceback" not in sent.err
    assert _states(db_path) == [("pending", len(CHAT))]
    assert cli("retry", "--failed", "--extractor", "llm", *MODEL).code == 0
    assert _states(db_path) == [("done", len(CHAT))]


def test_batch_without_a_model_endpoint_is_bad_usage_and_makes_no_store(raw_cli, tmp_path, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    db = tmp_path / "m.db"
    refused = raw_cli("--db", db, "ingest", _chat(tmp_path), "--batch")
    assert refused.code == 2 and "OPENAI_API_KEY" in refused.err and not db.exists()
    priced = raw_cli("--db", db, "ingest", _chat(tmp_path), "--dry-run", "--price-in", "-1")
    assert priced.code == 2 and "--price-in" in priced.err


def test_the_dry_run_estimates_what_the_batch_sends_and_what_it_costs(cli, db_path, server, tmp_path):
    chat = _chat(tmp_path, CHAT + [("2024-03-05T10:00:00Z", CHAT[0][1])])  # one text twice, at another time
    dry = cli("ingest", chat, "--batch", *MODEL, "--dry-run", "--price-in", "2", "--price-out", "8", "--json")
    assert dry.code == 0, dry.err
    *rows, last = [__import__("json").loads(line) for line in dry.out.splitlines()]
    estimate = last["estimate"]
    assert [row["needs_call"] for row in rows] == [True] * len(rows)
    assert estimate["calls"] == len(rows) and estimate["batch"]
    assert estimate["cost_usd"] == pytest.approx(
        (estimate["input_tokens"] * 2 + estimate["output_tokens"] * 8) / 1e6 / 2)
    assert made_nothing(db_path)

    assert cli("ingest", chat, "--batch", *MODEL).code == 0
    server.batch_api.finish()
    assert cli("batches", "collect").code == 0
    counted = sum(server.count_tokens(__import__("json").loads(line)["body"])
                  for f in server.batch_api.files.values() if f["purpose"] == "batch"
                  for line in f["content"].splitlines())
    assert abs(estimate["input_tokens"] - counted) / counted < 0.10
    # Stored and extracted now: a second dry run asks for no call, and reads the store without writing to it.
    before = stored_text(db_path)
    again = [__import__("json").loads(line) for line in cli("ingest", chat, "--dry-run", *MODEL, "--extractor", "llm",
                                                             "--json").out.splitlines()]
    assert stored_text(db_path) == before
    assert [row["needs_call"] for row in again[:-1]] == [False] * len(rows) and again[-1]["estimate"]["calls"] == 0


def test_the_dry_run_table_names_the_cost_or_what_is_missing_for_it(cli, server, tmp_path):
    shown = cli("ingest", _chat(tmp_path), "--dry-run", "--extractor", "llm", "--model", "gpt-4o-mini")
    assert shown.code == 0 and "US$" in shown.out and "0.15 / 0.6" in shown.out
    unknown = cli("ingest", _chat(tmp_path), "--dry-run", "--extractor", "llm", *MODEL)
    assert "pass --price-in and --price-out" in unknown.out


def test_the_library_lists_and_collects(memory, server, tmp_path):
    from memctl.extract import build_extractor
    from memctl.sources import IngestOptions
    from memctl.store.cache import ResponseCache

    def llm():
        return build_extractor("llm", clock=memory.clock, cache=ResponseCache(memory.db, memory.now),
                               model="fake-normal")

    report = memory.ingest([_chat(tmp_path)], IngestOptions(), extractor=llm(), batch=True)
    [batch] = memory.batches()
    assert report.batch.batches == [batch.id] and batch.open and batch.episodes == {"sent": len(CHAT)}
    server.batch_api.finish()
    collected = memory.collect_batches(llm())
    assert collected.answered == len(CHAT) and sum(len(r.episodes) for r in collected.extracted) == len(CHAT)
    assert not memory.batches()[0].open and memory.stats().episodes_awaiting_extraction == 0


def test_collect_wait_polls_until_no_batch_is_open(cli, db_path, server, tmp_path):
    assert cli("ingest", _chat(tmp_path), "--batch", *MODEL).code == 0
    server.batch_api.finish_on_poll = 3
    assert len(cli("batches", "collect", "--json").json()["open"]) == 1  # without --wait: asked once, still open
    waited = cli("batches", "collect", "--wait", "--every", "0.01", "--json")
    assert waited.code == 0 and waited.json()["open"] == [] and "still running" in waited.err
    assert server.batch_api.requests["GET /v1/batches/{id}"] == 3 and _states(db_path) == [("done", len(CHAT))]
    assert cli("batches", "collect", "--every", "0").code == 2


def test_two_submissions_at_once_send_each_request_once(memory, server, tmp_path, monkeypatch):
    """Another process sends the same episodes while this one builds its file: what it sent
    is taken out of this one's before anything is uploaded."""
    from memctl import batch
    from memctl.extract import build_extractor, stage
    from memctl.sources import IngestOptions
    from memctl.store.cache import ResponseCache

    def llm():
        return build_extractor("llm", clock=memory.clock, cache=ResponseCache(memory.db, memory.now),
                               model="fake-normal")

    memory.ingest([_chat(tmp_path)], IngestOptions())  # stored pending: no extractor
    ids = [episode.id for episode in memory.episodes()]
    built = stage.RequestBuilder.request
    other: list = []

    def racing(self, *args, **kwargs):
        if not other:
            other.append("sending")
            other.append(batch.submit(memory.db, memory.clock, llm(), ids[:2]))
        return built(self, *args, **kwargs)

    monkeypatch.setattr(stage.RequestBuilder, "request", racing)
    mine = batch.submit(memory.db, memory.clock, llm(), ids)
    assert other[1].episodes == 2 and (mine.episodes, mine.awaiting) == (len(CHAT) - 2, 2)
    sent = [line for f in server.batch_api.files.values() for line in f["content"].splitlines()]
    assert len(sent) == len(CHAT) == len({__import__("json").loads(line)["custom_id"] for line in sent})


def test_cancel_frees_the_episodes_of_a_batch_for_a_live_run(cli, db_path, server, tmp_path, monkeypatch):
    assert cli("ingest", _chat(tmp_path), "--batch", *MODEL).code == 0
    [batch] = cli("batches", "--json").json()
    point_at(monkeypatch, server, "wrong-key")  # the API cannot be told now
    freed = cli("batches", "cancel", batch["id"][:6], "--json")
    assert freed.code == 1 and "wrong-key" not in freed.err and freed.json()["cancelled"] == []
    assert _requests(db_path) == [("unanswered", len(CHAT))]  # free at once
    point_at(monkeypatch, server)
    assert cli("retry", "--failed", "--extractor", "llm", *MODEL).code == 0 and server.calls == len(CHAT)
    assert _states(db_path) == [("done", len(CHAT))]
    assert cli("batches", "collect").code == 0  # tells the API now, and takes none of its replies
    assert server.batch_api.batches["batch_1"]["status"] == "cancelled"
    assert cli("batches", "--json").json()[0]["state"] == "cancelled"
    assert cli("batches", "cancel", "mb_nope").code == 2


def test_undo_after_the_batch_finished_leaves_nothing_open(cli, db_path, server, tmp_path):
    operation = cli("ingest", _chat(tmp_path), "--batch", *MODEL, "--json").json()["operation_id"]
    server.batch_api.finish()  # done at the API, not yet collected
    undone = cli("undo", operation, "--apply", "--json")
    assert undone.code == 0, undone.err  # the API refuses to cancel a finished batch: nothing more to spend
    [batch] = cli("batches", "--json").json()
    assert undone.json()["batches_cancelled"] == [batch["id"]] and not batch["open"]
    assert cli("batches", "collect", "--json").json()["finished"] == []


def test_the_real_runs_report_what_their_tokens_cost_at_the_prices_given(cli, server, tmp_path):
    prices = ("--price-in", "2", "--price-out", "8")
    live = cli("ingest", _chat(tmp_path), "--extractor", "llm", *MODEL, *prices, "--json").json()
    assert live["input_tokens"] > 0
    assert live["cost_usd"] == pytest.approx((live["input_tokens"] * 2 + live["output_tokens"] * 8) / 1e6)
    episodes = [e["id"] for e in cli("episodes", "--json").json()]
    retried = cli("retry", episodes[0], "--extractor", "llm", "--model", "fake-sloppy", *prices, "--json").json()
    assert retried["cost_usd"] == pytest.approx((retried["input_tokens"] * 2 + retried["output_tokens"] * 8) / 1e6)
    assert cli("ingest", _chat(tmp_path), "--extractor", "llm", *MODEL, "--json").json()["cost_usd"] is None

    other = tmp_path / "other"
    other.mkdir()
    later = [(when.replace("2024", "2025"), text) for when, text in CHAT]  # no reply of these is cached
    assert cli("ingest", _chat(other, later), "--batch", *MODEL, *prices).code == 0
    server.batch_api.finish()
    collected = cli("batches", "collect", *prices, "--json").json()
    assert collected["cost_usd"] == pytest.approx(
        (collected["input_tokens"] * 2 + collected["output_tokens"] * 8) / 1e6 / 2)  # the batch rate
    listed = cli("batches", *prices)
    assert f"{collected['cost_usd']:,.2f}" in listed.out


def test_an_episode_whose_reply_is_cached_is_extracted_at_once_not_sent(cli, db_path, server, tmp_path):
    assert cli("ingest", _chat(tmp_path), "--extractor", "llm", *MODEL).code == 0  # the replies are cached
    other = tmp_path / "copy"
    other.mkdir()
    sent = cli("ingest", _chat(other), "--batch", *MODEL, "--json").json()  # the same turns, another file
    assert sent["batch"]["cached"] == len(CHAT) and sent["batch"]["batches"] == []
    assert sent["batch"]["extracted"]["applied"] and server.calls == len(CHAT)
    assert _states(db_path) == [("done", 2 * len(CHAT))] and server.batch_api.requests == {}


def test_a_model_that_repeats_its_mistake_in_the_correction_batch_has_it_dropped_and_said(cli, db_path, monkeypatch,
                                                                                          tmp_path):
    """As live: after its one correction, what is still wrong is left out, named in the
    episode, and the rest is stored; the episode is done, not sent a third time."""
    class Repeats(FakeOpenAIServer):
        def model_reply(self, model: str, user: str, **how) -> str:
            return super().model_reply(model, user)  # told what is wrong, it answers the same

    dated = [turn for turn in CHAT if "since" in turn[1]]
    with Repeats(datetime.now(UTC)) as server:
        point_at(monkeypatch, server)
        assert cli("ingest", _chat(tmp_path), "--batch", "--model", "fake-sloppy").code == 0
        server.batch_api.finish()
        assert cli("batches", "collect", "--json").json()["corrections_sent"] == len(dated)
        server.batch_api.finish()
        done = cli("batches", "collect", "--json")
        assert done.code == 0, done.err
        assert len(server.batch_api.batches) == 2  # the extraction's and the correction's, no third
    assert _states(db_path) == [("done", len(CHAT))]
    with open_store(db_path) as conn:
        errors = [row[0] for row in conn.execute("SELECT extraction_error FROM episodes").fetchall()]
        assert conn.execute("SELECT count(*) FROM assertions").fetchone()[0] == len(CHAT) - len(dated)
    assert sum("dropped" in (error or "") and "valid_at_evidence" in error for error in errors) == len(dated)


def test_an_empty_file_sent_as_a_batch_sends_nothing(cli, server, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    sent = cli("ingest", empty, "--batch", *MODEL, "--json")
    assert sent.code == 0, sent.err
    assert sent.json()["batch"]["batches"] == [] and server.batch_api.requests == {}


def test_requests_past_the_apis_limits_go_in_several_batches(memory, server, tmp_path):
    from memctl import batch
    from memctl.extract import build_extractor
    from memctl.sources import IngestOptions
    from memctl.store.cache import ResponseCache

    def llm():
        return build_extractor("llm", clock=memory.clock, cache=ResponseCache(memory.db, memory.now),
                               model="fake-normal")

    memory.ingest([_chat(tmp_path)], IngestOptions())  # stored pending
    ids = [episode.id for episode in memory.episodes()]
    by_count = batch.submit(memory.db, memory.clock, llm(), ids[:3], limits=batch.Limits(requests=2))
    assert by_count.requests == 3 and len(by_count.batches) == 2
    # A file as big as one line: each request in a batch of its own; the three out are not sent again.
    by_size = batch.submit(memory.db, memory.clock, llm(), ids, limits=batch.Limits(file_bytes=1))
    assert (by_size.requests, len(by_size.batches), by_size.awaiting) == (1, 1, 3)
    more = tmp_path / "more"
    more.mkdir()
    memory.ingest([_chat(more, [(when.replace("2024", "2025"), text) for when, text in CHAT])], IngestOptions())
    others = [episode.id for episode in memory.episodes() if episode.id not in ids]
    assert len(batch.submit(memory.db, memory.clock, llm(), others, limits=batch.Limits(file_bytes=1)).batches) == 4
    for batch_id in list(server.batch_api.batches):
        server.batch_api.finish(batch_id)
    assert memory.collect_batches(llm()).answered == 2 * len(CHAT)
    assert memory.stats().episodes_awaiting_extraction == 0
