"""retry (architecture §4): re-extract from stored text and swap assertions atomically."""

from __future__ import annotations

import pytest

from memctl import times
from memctl.extract import Result
from memctl.memory import Memory
from memctl.model import Assertion
from memctl.sources import IngestOptions
from tests.conftest import FakeClock, current_facts, write_jsonl


class Says:
    """A test extractor: every episode says '<subject> uses <word>', or fails."""

    def __init__(self, clock, word, fail=False):
        self.clock, self.word, self.fail, self.name, self.seen = clock, word, fail, f"test:{word}", []

    def extract(self, requests):
        for request in requests:
            self.seen.append(request)
            if self.fail:
                yield request, Result(error="no", calls=1)
                continue
            yield request, Result(calls=1, assertions=[Assertion(
                subject="billing", predicate="primary database", object=self.word, fact=f"billing uses {self.word}",
                valid_at=request.reference_time, valid_at_evidence="reference", extractor=self.name,
                extracted_at=times.to_storage(self.clock()))])


@pytest.fixture
def ingested(tmp_path, db_path):
    clock = FakeClock("2026-11-21T10:00:00Z")
    memory = Memory.open(db_path, clock)
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "which database?", "timestamp": "2024-03-01T10:00:00Z"},
        {"role": "assistant", "content": "MySQL.", "timestamp": "2024-03-01T10:00:01Z"},
    ])
    memory.ingest([chat], IngestOptions(), extractor=Says(clock, "MySQL"))
    clock.advance(hours=1)
    return memory, clock


def objects(memory):
    return [row[2] for row in current_facts(memory)]


def test_retry_swaps_the_assertions_and_keeps_the_old_ones_in_history(ingested):
    memory, clock = ingested
    (episode,) = [e["id"] for e in memory.episodes()]
    before_retry = memory.now()
    clock.advance(hours=1)
    result = memory.retry([episode[:9]], Says(clock, "Postgres"))
    assert (result["episodes"], result["assertions"], result["model_calls"]) == ([episode], 1, 1)
    assert objects(memory) == ["Postgres"]
    assert [r["object"] for r in memory.recall("billing database", known_at=before_retry,
                                                as_of="2025-01-01", kind="fact")["results"]] == ["MySQL"]
    assert [op["kind"] for op in memory.operations()] == ["ingest", "retry"]
    assert memory.rebuild()["facts_created"] == 0


def test_a_crash_in_the_middle_of_the_swap_leaves_the_old_assertions(ingested, monkeypatch):
    memory, clock = ingested
    (episode,) = [e["id"] for e in memory.episodes()]
    before = memory.db.execute("SELECT * FROM assertions ORDER BY id").fetchall()

    def crash(*args, **kwargs):
        raise RuntimeError("power cut")

    # the old assertions are expired first; the crash comes while the new ones are written
    monkeypatch.setattr("memctl.store.episodes.insert_assertions", crash)
    with pytest.raises(RuntimeError):
        memory.retry([episode], Says(clock, "Postgres"))
    assert memory.db.execute("SELECT * FROM assertions ORDER BY id").fetchall() == before
    assert objects(memory) == ["MySQL"] and [op["kind"] for op in memory.operations()] == ["ingest"]


def test_retry_failed_takes_failed_and_pending_episodes_only(tmp_path, db_path):
    clock = FakeClock("2026-11-21T10:00:00Z")
    memory = Memory.open(db_path, clock)
    one = write_jsonl(tmp_path / "one.jsonl", [{"role": "user", "content": "a", "timestamp": "2024-03-01T10:00:00Z"}])
    two = write_jsonl(tmp_path / "two.jsonl", [{"role": "user", "content": "b", "timestamp": "2024-04-01T10:00:00Z"}])
    three = write_jsonl(tmp_path / "three.jsonl", [{"role": "user", "content": "c", "timestamp": "2024-05-01T10:00:00Z"}])
    memory.ingest([one], IngestOptions(), extractor=Says(clock, "MySQL", fail=True))
    memory.ingest([two], IngestOptions())  # no extractor: pending
    memory.ingest([three], IngestOptions(), extractor=Says(clock, "MySQL"))
    again = Says(clock, "Postgres")
    result = memory.retry([], again, failed=True)
    assert len(result["episodes"]) == 2 and [r.text for r in again.seen] == ["User: a", "User: b"]
    states = dict(memory.db.execute("SELECT content, extraction FROM episodes").fetchall())
    assert states == {"User: a": "done", "User: b": "done", "User: c": "done"}


def test_structured_episodes_are_not_retried(cli, tmp_path):
    facts = write_jsonl(tmp_path / "f.jsonl", [{"reference_time": "2024-01-01", "facts": [
        {"subject": "svc", "predicate": "uses", "object": "Kafka"}]}])
    assert cli("ingest", facts).code == 0
    episode = cli("episodes", "--json").json()[0]["id"]
    run = cli("retry", episode, "--extractor", "rules")
    assert run.code == 2 and "--format facts" in run.err
    assert cli("retry").code == 2


def test_an_episode_undone_while_its_retry_was_extracting_stays_undone(ingested):
    memory, clock = ingested
    (episode,) = [e["id"] for e in memory.episodes()]

    class UndoesMeanwhile(Says):
        def extract(self, requests):
            memory.undo([episode], apply=True)  # another process, while the model thinks
            yield from super().extract(requests)

    memory.retry([episode], UndoesMeanwhile(clock, "Postgres"))
    active = memory.db.execute("SELECT count(*) FROM assertions WHERE expired_at IS NULL").fetchone()[0]
    assert active == 0 and objects(memory) == []
    assert memory.episodes()[0]["status"] == "undone"
    assert [op["kind"] for op in memory.operations()] == ["ingest", "undo"]  # no empty retry recorded


def test_retry_failed_with_nothing_to_retry_changes_nothing(cli, tmp_path):
    facts = write_jsonl(tmp_path / "f.jsonl", [{"reference_time": "2024-01-01", "facts": [
        {"subject": "svc", "predicate": "uses", "object": "Kafka"}]}])
    assert cli("ingest", facts).code == 0
    run = cli("retry", "--failed", "--extractor", "rules", "--json")
    assert run.code == 0 and run.json()["episodes"] == [] and run.json()["operation_id"] is None
    assert [op["kind"] for op in cli("operations", "--json").json()] == ["ingest"]


def test_undo_of_a_retry_brings_back_what_it_replaced_and_history_keeps_both(ingested, cli, tmp_path, db_path):
    memory, clock = ingested
    (episode,) = [e["id"] for e in memory.episodes()]
    before = current_facts(memory)
    clock.advance(hours=1)
    retry_id = memory.retry([episode], Says(clock, "Postgres"))["operation_id"]
    retried_at = memory.now()
    clock.advance(hours=1)

    preview = cli("undo", retry_id, "--json", db=db_path).json()
    assert not preview["applied"] and preview["episodes"] == [episode]
    assert [r["object"] for r in preview["removed"]] == ["Postgres"] and [r["object"] for r in preview["added"]] == ["MySQL"]
    assert objects(memory) == ["Postgres"]  # the preview wrote nothing

    shown = cli("undo", retry_id[:9], "--apply", db=db_path)
    assert shown.code == 0 and f"Undid the retry {retry_id}" in shown.out
    assert current_facts(memory) == before
    assert memory.show(episode)["extraction"] == "done"
    # What was believed in between stays in the history.
    assert [r["object"] for r in memory.recall("billing database", known_at=retried_at,
                                                as_of="2025-01-01", kind="fact")["results"]] == ["Postgres"]
    assert [(op["kind"], op["status"]) for op in memory.operations()] == [
        ("ingest", "done"), ("retry", "undone"), ("undo", "done")]
    shown = cli("show", episode, db=db_path).out
    assert shown.count("no, since") == 2 and shown.count("yes") == 1  # MySQL, Postgres replaced; MySQL back
    again = cli("undo", retry_id, "--apply", db=db_path)
    assert again.code == 0 and "already undone" in again.out
    assert memory.rebuild()["facts_created"] == 0


def test_undo_of_a_retry_restores_a_failed_extraction_state(tmp_path, db_path):
    clock = FakeClock("2026-11-21T10:00:00Z")
    memory = Memory.open(db_path, clock)
    chat = write_jsonl(tmp_path / "c.jsonl", [{"role": "user", "content": "a", "timestamp": "2024-03-01T10:00:00Z"}])
    memory.ingest([chat], IngestOptions(), extractor=Says(clock, "MySQL", fail=True))
    (episode,) = [e["id"] for e in memory.episodes()]
    clock.advance(hours=1)
    retry_id = memory.retry([episode], Says(clock, "Postgres"))["operation_id"]
    assert memory.show(episode)["extraction"] == "done" and objects(memory) == ["Postgres"]
    clock.advance(hours=1)
    memory.undo([retry_id], apply=True)
    assert memory.show(episode)["extraction"] == "failed" and objects(memory) == []


def test_a_retry_whose_model_fails_leaves_the_episode_exactly_as_it_was(ingested, cli, tmp_path, monkeypatch, db_path):
    """A model that is down or answers nonsense must not swap good assertions for none:
    the failed episode keeps its assertions and state, the others are swapped, and the
    command says so on one line and exits 1."""
    memory, clock = ingested
    chat = write_jsonl(tmp_path / "more.jsonl", [
        {"role": "user", "content": "and ledger?", "timestamp": "2024-04-01T10:00:00Z"}])
    memory.ingest([chat], IngestOptions(), extractor=Says(clock, "MySQL"))
    first, second = sorted(e["id"] for e in memory.episodes())

    def assertions_of(episode_id):
        return memory.db.execute("SELECT * FROM assertions WHERE episode_id = ? ORDER BY id", [episode_id]).fetchall()

    kept = assertions_of(first)

    class FailsOnFirst(Says):
        def extract(self, requests):
            for request, result in super().extract(requests):
                yield request, (Result(error="the model answered nonsense", calls=1)
                                if request.episode_id == first else result)

    clock.advance(hours=1)
    result = memory.retry([first, second], FailsOnFirst(clock, "Postgres"))
    assert (result.failed, result.episodes, result.failures) == ([first], [second], 1)
    assert "the model answered nonsense" in result.first_failure
    assert assertions_of(first) == kept and memory.show(first)["extraction"] == "done"
    assert memory.db.execute("SELECT object FROM assertions WHERE episode_id = ? AND expired_at IS NULL",
                             [second]).fetchall() == [("Postgres",)]  # the other episode was swapped

    # From the command line, every episode failing: nothing changes, nothing is journaled, exit 1.
    monkeypatch.setattr("memctl.extract.build_extractor", lambda *args, **kwargs: Says(clock, "x", fail=True))
    before = (memory.db.execute("SELECT * FROM assertions ORDER BY id").fetchall(), current_facts(memory),
              len(memory.operations()))
    run = cli("retry", first, second, "--extractor", "rules", db=db_path)
    assert run.code == 1 and run.err.count("\n") == 1 and "extraction failed for 2 episode(s)" in run.err
    assert before == (memory.db.execute("SELECT * FROM assertions ORDER BY id").fetchall(), current_facts(memory),
                      len(memory.operations()))


def test_undo_of_a_retry_leaves_an_episode_changed_since(ingested, cli, tmp_path, db_path):
    memory, clock = ingested
    (episode,) = [e["id"] for e in memory.episodes()]
    first = memory.retry([episode], Says(clock, "Postgres"))["operation_id"]
    clock.advance(hours=1)
    memory.retry([episode], Says(clock, "Oracle"))
    clock.advance(hours=1)
    plan = memory.undo([first], apply=True)
    assert not plan["applied"] and plan["episodes"] == [] and plan["changed_since"] == [episode]
    assert objects(memory) == ["Oracle"]
    shown = cli("undo", first, "--apply", db=db_path)
    assert shown.code == 0 and "changed since" in shown.out
    assert [op["status"] for op in memory.operations()] == ["done", "done", "done"]


def test_retry_dry_run_shows_the_swap_and_writes_nothing(ingested):
    memory, clock = ingested
    (episode,) = [e["id"] for e in memory.episodes()]
    before = current_facts(memory)
    plan = memory.retry([episode], Says(clock, "Postgres"), dry_run=True)
    assert not plan["applied"] and plan["operation_id"] is None and plan["episodes"] == [episode]
    assert [r["object"] for r in plan["removed"]] == ["MySQL"] and [r["object"] for r in plan["added"]] == ["Postgres"]
    assert current_facts(memory) == before
    assert [op["kind"] for op in memory.operations()] == ["ingest"]
    assert memory.db.execute("SELECT count(*) FROM assertions").fetchone()[0] == 1
    done = memory.retry([episode], Says(clock, "Postgres"))
    assert done["applied"] and objects(memory) == ["Postgres"]


@pytest.mark.parametrize("reply", [
    {"entities": [], "assertions": []},  # nothing at all
    {"entities": [], "assertions": [{"subject": "billing"}] * 200},  # junk: no item stands
    {"entities": [], "assertions": [{"subject": "billing", "predicate": "uses", "object": "Oracle", "fact": "x",
                                      "cardinality": "one", "valid_at": "not a date"}]},
])
def test_a_reply_with_nothing_that_stands_keeps_what_the_episode_had(ingested, cli, reply):
    """Issue 31, item 1: a retry whose reply parses but yields no assertion that stands
    left an episode's facts at 0 and exited 0. It keeps the old ones, counts the episode
    failed (for `retry --failed`), and exits 1."""
    import json

    import httpx2

    from memctl.extract.llm import LLMExtractor, make_client
    from tests.fake_llm import API_KEY, completion

    memory, clock = ingested
    [episode] = [e.id for e in memory.episodes()]
    before = current_facts(memory)

    def junk(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=completion(json.dumps(reply)))

    client = make_client(api_key=API_KEY, base_url="http://llm.test/v1",
                         http_client=httpx2.Client(transport=httpx2.MockTransport(junk)))
    result = memory.retry([episode], LLMExtractor(client, "junk", clock, max_retries=0))
    assert (result.failed, result.episodes, result.applied) == ([episode], [], False)
    assert "no assertion that stands" in result.first_failure
    assert current_facts(memory) == before and objects(memory) == ["MySQL"]
    assert memory.show(episode)["extraction"] == "done"  # as it was: left exactly alone


@pytest.mark.parametrize("runaway", ["words", "items"])
def test_a_runaway_reply_fails_its_episode_and_is_kept_nowhere(tmp_path, runaway, db_path):
    """Issue 31, item 11: three 13.6 MB replies made a 49 MB store, exit 0, the episodes
    done and out of `retry --failed`'s reach. Past a reply's size or assertion count the
    episode fails, nothing of the reply is cached, and `retry --failed` takes it."""
    import json

    import httpx2

    from memctl.extract.llm import LLMExtractor, make_client
    from tests.fake_llm import API_KEY, completion

    item = {"subject": "billing", "predicate": "uses", "object": "Kafka", "fact": "billing uses Kafka",
            "cardinality": "many", "valid_at": "2024-03-01T10:00:00Z", "valid_at_evidence": "reference"}
    # A well-formed reply either way: a sentence of a megabyte, or 20,000 items
    body = json.dumps({"entities": [], "assertions": [{**item, "fact": "billing uses Kafka " * 60_000}]}
                      if runaway == "words" else {"entities": [], "assertions": [item] * 20_000})

    def runaway_model(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=completion(body))

    clock = FakeClock("2026-11-21T10:00:00Z")
    memory = Memory.open(db_path, clock)
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": "Billing uses Kafka.",
                                                  "timestamp": "2024-03-01T10:00:00Z"}])
    from memctl.store.cache import ResponseCache

    client = make_client(api_key=API_KEY, base_url="http://llm.test/v1",
                         http_client=httpx2.Client(transport=httpx2.MockTransport(runaway_model)))
    extractor = LLMExtractor(client, "runaway", clock, ResponseCache(memory.db, memory.now), max_retries=0)
    report = memory.ingest([chat], IngestOptions(), extractor=extractor)
    assert report.extraction_failures == 1 and report.partial
    [episode] = [e.id for e in memory.episodes()]
    assert memory.show(episode)["extraction"] == "failed"
    assert memory.db.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 0
    retried = memory.retry([], Says(clock, "Kafka"), failed=True)
    assert retried.episodes == [episode] and objects(memory) == ["Kafka"]
