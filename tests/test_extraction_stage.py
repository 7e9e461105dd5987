"""Ingest with an extractor: assertions are guarded, counted, and never extracted twice."""

from __future__ import annotations

from datetime import UTC

from memctl import times
from memctl.extract import Request, Result
from memctl.memory import Memory
from memctl.model import Assertion
from memctl.sources import IngestOptions
from tests.conftest import FakeClock, open_store, stored_text, write_jsonl
from tests.fake_llm import chat_file, point_at


class InventingExtractor:
    """Says 'billing uses <word>' for each episode, dated today at midnight: the classic invention."""

    name = "test:inventing"

    def __init__(self, clock):
        self.clock = clock
        self.requests: list[Request] = []

    def extract(self, requests):
        for request in requests:
            self.requests.append(request)
            if "fail" in request.text:
                yield request, Result(error="model said nonsense", calls=2)
                continue
            today = times.to_storage(self.clock())[:10] + "T00:00:00.000000Z"
            word = request.text.split()[-1].strip(".")
            yield request, Result(calls=1, input_tokens=10, output_tokens=5, assertions=[Assertion(
                subject="billing", predicate="uses", object=word, fact=f"billing uses {word}", valid_at=today,
                valid_at_evidence="text", cardinality="many", extractor=self.name,
                extracted_at=times.to_storage(self.clock()))])


def test_invented_dates_are_guarded_and_nothing_is_extracted_twice(tmp_path, db_path):
    clock = FakeClock("2026-11-21T15:00:00Z")
    memory = Memory.open(db_path, clock)
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "which queue?", "timestamp": "2024-03-01T10:00:00Z"},
        {"role": "assistant", "content": "billing uses Kafka.", "timestamp": "2024-03-01T10:00:01Z"},
        {"role": "user", "content": "and cache?", "timestamp": "2024-04-01T10:00:00Z"},
        {"role": "assistant", "content": "billing uses Redis.", "timestamp": "2024-04-01T10:00:01Z"},
        {"role": "user", "content": "this one will fail", "timestamp": "2024-05-01T10:00:00Z"},
    ])
    extractor = InventingExtractor(clock)
    report = memory.ingest([chat], IngestOptions(), extractor=extractor)
    assert (report.extractor, report.extraction_calls, report.extraction_failures) == ("test:inventing", 4, 1)
    assert report.guard_changes == 2 and report.assertions == 2
    # the invented 2026 midnight became each episode's own time
    stored = memory.db.execute("SELECT object, valid_at, valid_at_evidence FROM assertions ORDER BY valid_at").fetchall()
    assert stored == [("Kafka", "2024-03-01T10:00:00.000000Z", "reference"),
                      ("Redis", "2024-04-01T10:00:00.000000Z", "reference")]
    states = dict(memory.db.execute("SELECT extraction, count(*) FROM episodes GROUP BY extraction").fetchall())
    assert states == {"done": 2, "failed": 1}
    # the second episode saw the first as context, and the predicates already in use
    assert extractor.requests[1].context == (extractor.requests[0].text,)
    assert extractor.requests[0].predicates == ()
    facts = write_jsonl(tmp_path / "f.jsonl", [{"reference_time": "2024-01-01", "facts": [
        {"subject": "svc", "predicate": "depends on", "object": "Kafka"}]}])
    memory.ingest([facts], IngestOptions(), extractor=extractor)
    more = write_jsonl(tmp_path / "more.jsonl", [{"role": "user", "content": "and search? billing uses Elastic",
                                                   "timestamp": "2024-06-01T10:00:00Z"}])
    memory.ingest([more], IngestOptions(), extractor=extractor)
    # the predicates of the entities in view: billing's, not svc's (tests/test_predicates_in_view.py)
    assert extractor.requests[-1].predicates == ("uses",)
    again = memory.ingest([chat], IngestOptions(), extractor=extractor)
    assert (again.extraction_calls, again.added, again.already_present) == (0, 0, 3)
    assert len(extractor.requests) == 4


def test_without_an_extractor_log_episodes_wait_as_pending(tmp_path, db_path):
    memory = Memory.open(db_path, FakeClock())
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": "hi", "timestamp": 1714557600}])
    memory.ingest([chat], IngestOptions())
    assert memory.db.execute("SELECT extraction FROM episodes").fetchall() == [("pending",)]


CHAT = [
    ("2023-02-10T09:15:00Z", "Alice lives in Oslo since 20 June 2022. Alice uses Neovim."),
    ("2023-05-01T18:00:00Z", "Billing uses Postgres since 3 March 2021."),
    ("2023-07-14T08:30:00Z", "Bob works as Engineer. Bob uses Rust."),
    ("2024-01-02T12:00:00Z", "Carol uses Emacs since 1 January 2020. Carol lives in Paris."),
]


def _chat_file(tmp_path):
    return chat_file(tmp_path / "chat.jsonl", CHAT)


def test_an_adversarial_model_leaves_no_invented_date_and_stated_dates_survive(cli, db_path, tmp_path, monkeypatch):
    from datetime import datetime

    from tests.fake_llm import API_KEY, FakeOpenAIServer

    with FakeOpenAIServer(datetime.now(UTC)) as server:
        point_at(monkeypatch, server, API_KEY)
        run = cli("ingest", _chat_file(tmp_path), "--extractor", "llm", "--model", "fake-adversarial", "--json")
        lied = server.dates_answered // 2
    assert run.code == 0, run.err
    report = run.json()
    assert report["extractor"] == "llm:fake-adversarial" and report["extraction_calls"] == len(CHAT)
    assert report["guard_changes"] >= lied > 0
    with open_store(db_path) as conn:
        rows = dict(conn.execute("SELECT fact, valid_at FROM assertions").fetchall())
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert not [v for v in rows.values() if v.startswith(today)]  # zero invented today-midnights
    stated = {"Alice lives in Oslo since 20 June 2022.": "2022-06-20T00:00:00.000000Z",
              "Billing uses Postgres since 3 March 2021.": "2021-03-03T00:00:00.000000Z",
              "Carol uses Emacs since 1 January 2020.": "2020-01-01T00:00:00.000000Z"}
    assert {fact: rows[fact] for fact in stated} == stated  # real dates survive, lied about or not
    assert rows["Bob uses Rust."] == "2023-07-14T08:30:00.000000Z"  # undated: the episode's own time


def test_a_rejected_key_keeps_episodes_pending_for_the_next_run(cli, db_path, tmp_path, monkeypatch):
    from datetime import datetime

    from tests.fake_llm import API_KEY, FakeOpenAIServer

    chat = _chat_file(tmp_path)
    with FakeOpenAIServer(datetime.now(UTC)) as server:
        point_at(monkeypatch, server, "wrong-key")
        refused = cli("ingest", chat, "--extractor", "llm", "--model", "fake-normal")
        assert refused.code == 1 and "pending" in refused.err
        assert len([line for line in refused.err.splitlines() if "pending" in line]) == 1
        with open_store(db_path) as conn:
            assert conn.execute("SELECT extraction, count(*) FROM episodes GROUP BY 1").fetchall() == [
                ("pending", len(CHAT))]
            assert conn.execute("SELECT count(*) FROM assertions").fetchone()[0] == 0
        point_at(monkeypatch, server, API_KEY)
        again = cli("ingest", chat, "--extractor", "llm", "--model", "fake-normal", "--json")
    assert again.code == 0, again.err
    assert again.json()["extracted_pending"] == len(CHAT) and again.json()["added"] == 0
    with open_store(db_path) as conn:
        assert conn.execute("SELECT DISTINCT extraction FROM episodes").fetchall() == [("done",)]
        assert conn.execute("SELECT count(*) FROM assertions").fetchone()[0] == 7


def test_auto_says_once_that_it_falls_back_to_rules_and_only_when_it_has_work(cli, tmp_path, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    facts = write_jsonl(tmp_path / "f.jsonl", [{"reference_time": "2024-01-01", "facts": [
        {"subject": "svc", "predicate": "uses", "object": "Kafka"}]}])
    assert cli("ingest", facts).err == ""  # structured facts need no extractor
    chat = _chat_file(tmp_path)
    run = cli("ingest", chat, "--json")
    assert run.err.count("offline rules extractor") == 1 and run.json()["extractor"] == "rules"


def test_retry_of_unchanged_input_costs_no_call(cli, db_path, tmp_path, monkeypatch):
    from datetime import datetime

    from tests.fake_llm import API_KEY, FakeOpenAIServer

    with FakeOpenAIServer(datetime.now(UTC)) as server:
        point_at(monkeypatch, server, API_KEY)
        assert cli("ingest", _chat_file(tmp_path), "--extractor", "llm", "--model", "fake-normal").code == 0
        calls = server.calls
        episodes = [e["id"] for e in cli("episodes", "--json").json()]
        retried = cli("retry", *episodes, "--extractor", "llm", "--model", "fake-normal", "--json")
        assert retried.code == 0, retried.err
        assert server.calls == calls  # the cache answered
    result = retried.json()
    assert (result["model_calls"], result["cache_hits"], len(result["episodes"])) == (0, len(CHAT), len(CHAT))


def test_purge_erases_the_cached_model_replies_of_the_episode(cli, db_path, tmp_path, monkeypatch):
    """What a model made of the text is a copy of it: undo --purge takes it too, and only it."""
    from datetime import datetime

    from tests.fake_llm import API_KEY, FakeOpenAIServer

    with FakeOpenAIServer(datetime.now(UTC)) as server:
        point_at(monkeypatch, server, API_KEY)
        assert cli("ingest", _chat_file(tmp_path), "--extractor", "llm", "--model", "fake-normal").code == 0
    episodes = [e["id"] for e in cli("episodes", "--json").json()]
    with open_store(db_path) as conn:
        assert sorted(row[0] for row in conn.execute("SELECT episode_id FROM llm_cache")) == sorted(episodes)
    assert cli("undo", episodes[0], "--purge", "--apply").code == 0
    with open_store(db_path) as conn:
        kept = sorted(row[0] for row in conn.execute("SELECT episode_id FROM llm_cache"))
    dump = stored_text(db_path)
    assert kept == sorted(episodes[1:])
    assert "Alice uses Neovim" not in dump and "Billing uses Postgres" in dump


def test_retry_dry_run_pays_for_the_calls_once(cli, db_path, tmp_path, monkeypatch):
    """A preview extracts for real; the swap after it is answered from the cache."""
    from datetime import datetime

    from tests.fake_llm import API_KEY, FakeOpenAIServer

    with FakeOpenAIServer(datetime.now(UTC)) as server:
        point_at(monkeypatch, server, API_KEY)
        assert cli("ingest", _chat_file(tmp_path), "--extractor", "rules").code == 0
        facts_before = cli("recall", "uses", "--json").json()["results"]
        episodes = [e["id"] for e in cli("episodes", "--json").json()]
        preview = cli("retry", *episodes, "--extractor", "llm", "--model", "fake-normal", "--dry-run", "--json")
        assert preview.code == 0, preview.err
        assert not preview.json()["applied"] and preview.json()["model_calls"] == len(CHAT) == server.calls
        assert cli("recall", "uses", "--json").json()["results"] == facts_before
        assert [op["kind"] for op in cli("operations", "--json").json()] == ["ingest"]
        shown = cli("retry", *episodes, "--extractor", "llm", "--model", "fake-normal", "--dry-run")
        assert shown.code == 0 and "Plan (nothing changed" in shown.out and server.calls == len(CHAT)
        done = cli("retry", *episodes, "--extractor", "llm", "--model", "fake-normal", "--json").json()
    assert done["applied"] and (done["model_calls"], done["cache_hits"]) == (0, len(CHAT))
    assert server.calls == len(CHAT)
    assert preview.json()["added"] and [r["fact"] for r in done["added"]] == [r["fact"] for r in preview.json()["added"]]


def test_what_a_model_gets_wrong_twice_is_dropped_and_said_the_rest_stored(cli, db_path, tmp_path, monkeypatch):
    """A model that repeats its mistake: the episode is done with what stands, and the
    report, --json and show say which assertion was left out and why."""
    import json
    from datetime import datetime

    from tests.fake_llm import FakeOpenAIServer

    class Repeats(FakeOpenAIServer):
        def model_reply(self, model: str, user: str, **how) -> str:
            reply = json.loads(super().model_reply(model, user, **how))
            reply["assertions"].append({**reply["assertions"][0], "subject": "!!!"})
            return json.dumps(reply)

    turns = CHAT[1:2]  # "Billing uses Postgres since 3 March 2021."
    with Repeats(datetime.now(UTC)) as server:
        point_at(monkeypatch, server)
        run = cli("ingest", chat_file(tmp_path / "chat.jsonl", turns), "--extractor", "llm", "--model", "fake-normal",
                  "--json")
        assert server.calls == 2  # the reply, and the one retry for what was wrong
        episode = cli("episodes", "--json").json()[0]["id"]
        again = cli("retry", episode, "--extractor", "llm", "--model", "fake-normal", "--json")
        assert server.calls == 2  # the reply taken is cached: no call, the same assertion left out
    assert run.code == 0, run.err
    report = run.json()
    why = "!!! uses Postgres: subject: '!!!' is not a usable name"
    assert report["dropped"] == [f"{episode}: {why}"] and report["assertions"] == 1
    assert report["extraction_failures"] == 0 and not report["partial"]
    assert "1 assertion(s) left out as wrong also after a retry" in run.err and "memctl show" in run.err
    assert again.json()["dropped"] == [f"{episode}: {why}"] and again.json()["model_calls"] == 0
    shown = cli("show", episode, "--json").json()
    assert (shown["extraction"], shown["extraction_error"]) == ("done", f"1 assertion(s) dropped: {why}")
    assert [a["fact"] for a in shown["assertions"] if a["expired_at"] is None] == [
        "Billing uses Postgres since 3 March 2021."]
    assert f"extraction done: 1 assertion(s) dropped: {why}" in " ".join(cli("show", episode).out.split())
    assert cli("retry", "--failed", "--json").json()["episodes"] == []  # done: nothing to retry


def test_a_model_that_puts_every_date_at_todays_midnight_loses_no_fact(cli, db_path, tmp_path, monkeypatch):
    """Through the whole command: one call an episode, every fact stored at its stated date
    or its episode's time, no end, nothing failed."""
    import json
    from datetime import datetime

    from tests.fake_llm import FakeOpenAIServer

    class Midnight(FakeOpenAIServer):
        def model_reply(self, model: str, user: str, **how) -> str:
            reply = json.loads(super().model_reply(model, user, **how))
            for item in reply["assertions"]:
                item.update(valid_at=self.today_midnight, valid_at_evidence="text", valid_at_precision="instant",
                            invalid_at=self.today_midnight, invalid_at_evidence="text", invalid_at_precision="instant")
            return json.dumps(reply)

    with Midnight(datetime.now(UTC)) as server:
        point_at(monkeypatch, server)
        run = cli("ingest", _chat_file(tmp_path), "--extractor", "llm", "--model", "fake-normal", "--json")
        assert server.calls == len(CHAT)
    assert run.code == 0, run.err
    report = run.json()
    assert (report["assertions"], report["extraction_failures"], report["dropped"]) == (7, 0, [])
    with open_store(db_path) as conn:
        rows = dict(conn.execute("SELECT fact, valid_at FROM assertions WHERE invalid_at IS NULL").fetchall())
    assert len(rows) == 7
    assert rows["Billing uses Postgres since 3 March 2021."] == "2021-03-03T00:00:00.000000Z"  # from its words
    assert rows["Bob uses Rust."] == "2023-07-14T08:30:00.000000Z"  # the episode's time


class Switchable(InventingExtractor):
    """InventingExtractor until ``answer`` is set: then every reply is that Result's copy."""

    answer: Result | None = None

    def extract(self, requests):
        if self.answer is None:
            yield from super().extract(requests)
            return
        for request in requests:
            yield request, Result(calls=1, error=self.answer.error, dropped=list(self.answer.dropped))


def _grown_chat(tmp_path, reply: str):
    """A Claude Code session whose second turn's reply is ``reply``: one that grows is read again."""
    from tests.test_ingest_logs import _claude_line

    (tmp_path / "project").mkdir(exist_ok=True)
    return write_jsonl(tmp_path / "project" / "s1.jsonl", [
        _claude_line("u1", None, "user", "which queue?", 0), _claude_line("a1", "u1", "assistant", "billing uses Kafka.", 1),
        _claude_line("u2", "a1", "user", "and cache?", 2), _claude_line("a2", "u2", "assistant", reply, 3),
    ])


def _current(memory):
    return memory.db.execute("""SELECT e.id, e.content, a.object FROM episodes e JOIN assertions a ON a.episode_id = e.id
                                WHERE a.expired_at IS NULL ORDER BY e.reference_time""").fetchall()


def test_a_longer_reading_whose_extraction_fails_keeps_the_stored_one(tmp_path, db_path):
    """Issue 31, item 1, for ingest: a session read again with a longer reply, whose new
    extraction fails or gives nothing that stands, must not swap the episode's good
    assertions for none. The stored reading stays, the run exits 1 (partial), and a
    later run with a working model takes the longer reading."""
    clock = FakeClock("2026-11-21T15:00:00Z")
    memory = Memory.open(db_path, clock)
    extractor = Switchable(clock)
    memory.ingest([_grown_chat(tmp_path, "billing uses Redis.")], IngestOptions(), extractor=extractor)
    before = _current(memory)
    assert [row[2] for row in before] == ["Kafka", "Redis"]

    grown = _grown_chat(tmp_path, "billing uses Redis. And later Memcached.")
    for answer in (Result(error="model said nonsense"), Result(dropped=["billing uses: no valid_at"]), Result()):
        extractor.answer = answer
        report = memory.ingest([grown], IngestOptions(), extractor=extractor)
        assert (report.revised, report.kept_readings, report.extraction_failures) == (0, 1, 1), answer
        assert report.partial and _current(memory) == before, answer

    extractor.answer = None
    report = memory.ingest([grown], IngestOptions(), extractor=extractor)
    assert (report.revised, report.kept_readings, report.partial) == (1, 0, False)
    assert [row[2] for row in _current(memory)] == ["Kafka", "Memcached"]


def test_a_rerun_names_the_episodes_whose_extraction_still_failed(cli, tmp_path, monkeypatch, db_path):
    """Issue 31, item 12: a re-run after extraction failures exited 0, naming nothing."""
    clock = FakeClock("2026-11-21T15:00:00Z")
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "billing uses Kafka.", "timestamp": "2024-03-01T10:00:00Z"},
        {"role": "user", "content": "this one will fail", "timestamp": "2024-05-01T10:00:00Z"},
    ])
    monkeypatch.setattr("memctl.extract.build_extractor", lambda *args, **kwargs: InventingExtractor(clock))
    first = cli("ingest", chat, "--json", db=db_path)
    assert first.code == 1 and first.json()["extraction_failures"] == 1
    failed = [e["id"] for e in cli("episodes", "--extraction", "failed", "--json", db=db_path).json()]
    again = cli("ingest", chat, "--json", db=db_path)
    assert again.code == 1 and again.json()["still_failed"] == failed and again.json()["added"] == 0
    assert failed[0] in again.err and "retry --failed" in again.err
