"""Ingest with an extractor: assertions are guarded, counted, and never extracted twice."""

from __future__ import annotations

from memctl import times
from memctl.extract import Request, Result
from memctl.memory import Memory
from memctl.model import Assertion
from memctl.sources import IngestOptions
from tests.conftest import FakeClock, write_jsonl


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


def test_invented_dates_are_guarded_and_nothing_is_extracted_twice(tmp_path):
    clock = FakeClock("2026-11-21T15:00:00Z")
    memory = Memory.open(tmp_path / "m.db", clock)
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
    # the second episode saw the first as context
    assert extractor.requests[1].context == (extractor.requests[0].text,)
    again = memory.ingest([chat], IngestOptions(), extractor=extractor)
    assert (again.extraction_calls, again.added, again.already_present) == (0, 0, 3)
    assert len(extractor.requests) == 3


def test_without_an_extractor_log_episodes_wait_as_pending(tmp_path):
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": "hi", "timestamp": 1714557600}])
    memory.ingest([chat], IngestOptions())
    assert memory.db.execute("SELECT extraction FROM episodes").fetchall() == [("pending",)]
