"""The library as a program uses it: typed results, typed errors without command-line
wording, any ISO-8601 form for times, and a package that imports lazily."""

from __future__ import annotations

import copy
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memctl
from memctl import BadInput, IngestOptions, Memory, NotFound, NotUndoable, build_extractor
from memctl.entry import message
from memctl.model import Assertion, InvalidAssertion

FIXTURE = Path(__file__).parent.parent / "fixtures" / "team.facts.jsonl"


@pytest.fixture
def filled(memory: Memory) -> Memory:
    memory.ingest([FIXTURE], IngestOptions())
    return memory


def test_times_in_any_iso_form_are_compared_as_instants(filled):
    question = "which database does billing use"
    forms = ["2024-03-01", "2024-03-01T00:00:00Z", "2024-03-01T01:00:00+01:00", "2024-03-01T00:00:00.000000Z"]
    answers = [[f.object for f in filled.recall(question, as_of=form, kind="fact").results] for form in forms]
    assert answers[0][0] == "MySQL" and all(answer == answers[0] for answer in answers)
    assert filled.recall(question, known_at="2000-01-01").results == []  # nothing was known then
    with pytest.raises(BadInput, match="yesterday"):
        filled.recall(question, as_of="yesterday")
    assert IngestOptions(reference_time="2025-03-01").reference_time == "2025-03-01T00:00:00.000000Z"
    with pytest.raises(BadInput, match="2025-02-31"):
        IngestOptions(reference_time="2025-02-31")


def test_errors_are_typed_and_speak_the_librarys_words(filled, clock):
    cases = [
        (lambda: filled.recall("billing", limit=0), BadInput, "limit must be between 1 and 1,000,000"),
        (lambda: filled.recall("?!", limit=3), BadInput, "no words"),
        (lambda: filled.undo([]), BadInput, "name at least one episode"),
        (lambda: filled.undo(["ep_nope"]), NotFound, "no episode or operation matches"),
        (lambda: filled.show("ep_nope"), NotFound, "no episode matches"),
        (lambda: filled.history("nobody"), NotFound, "no entity named 'nobody'"),
        (lambda: build_extractor("gpt", clock=clock), BadInput, "extractor must be auto, llm or rules"),
    ]
    for call, kind, words in cases:
        with pytest.raises(kind) as raised:
            call()
        assert words in str(raised.value) and "--" not in str(raised.value), raised.value
    # The command line names its own flag for an argument at fault.
    with pytest.raises(BadInput) as raised:
        filled.recall("billing", limit=0)
    assert message(raised.value) == "--limit must be between 1 and 1,000,000, got 0"


def test_plans_say_their_kind_and_print_as_the_cli_prints_them(filled, clock):
    episode = filled.episodes()[0].id
    plan = filled.undo([episode], apply=True)
    assert (plan.kind, plan.target, plan.applied) == ("episodes", None, True)
    assert list(plan.to_json()) == ["episodes", "revisions_reverted", "already_undone", "purge", "removed",
                                    "reopened", "changed", "added", "applied", "operation_id"]
    clock.advance(seconds=1)
    back = filled.undo([plan.operation_id], apply=True)
    assert (back.kind, back.target, back.episodes) == ("undo", plan.operation_id, [episode])
    assert back.to_json()["undo"] == plan.operation_id and "revisions_reverted" not in back.to_json()
    assert back["undo"] == plan.operation_id and back["removed"] == back.effects.removed  # read by key, as 0.1 did
    with pytest.raises(NotUndoable):
        filled.undo([back.operation_id])
    # Every record is plain JSON all the way down.
    for record in [filled.recall("billing"), filled.history("billing"), filled.show(episode), filled.stats(),
                   filled.rebuild(), filled.repair_midnight_hallucinations(), plan, *filled.operations(), *filled.episodes()]:
        assert json.loads(json.dumps(record.to_json())) == record.to_json()


def test_what_a_read_returns_is_a_snapshot_read_by_name_or_position(filled):
    fact = filled.recall("which database does billing use", kind="fact").results[0]
    assert fact["valid_at"] == fact.valid_at and fact[0] == fact.fact_id and fact["kind"] == "fact"
    with pytest.raises(KeyError):
        fact["count"]  # a tuple's method, not a field
    with pytest.raises(KeyError):
        fact["_fields"]
    with pytest.raises(AttributeError):
        fact.score = 1.0  # type: ignore[misc]
    rescored = fact._replace(score=None)
    assert rescored.score is None and fact.score is not None  # a changed copy; the answer stays as given
    assert "score" not in rescored.to_json() and list(fact.to_json())[0] == "kind"
    assert list(filled.operations()[0].to_json())[:2] == ["id", "kind"]  # an operation's kind stays second


def test_the_package_exports_the_api_and_imports_nothing_heavy_until_asked():
    assert memctl.Memory is Memory and "Memory" in memctl.__all__
    with pytest.raises(AttributeError):
        memctl.NoSuchThing  # noqa: B018
    probe = ("import sys, memctl; heavy = [m for m in ('sqlite_utils', 'pydantic', 'openai', 'memctl.memory') "
             "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


ASSERTION = {"subject": " Alice ", "predicate": "lives in", "object": "Paris", "fact": "Alice lives in Paris",
             "valid_at": "2024-03-01T00:00:00.000000Z", "extractor": "test"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"subject": "!!"}, "subject: '!!' is not a usable name"),
        ({"object": " "}, "object: ' ' is not a usable name"),
        ({"predicate": "--"}, "predicate: '--' is not a usable predicate"),
        ({"object": 3}, "object: must be a string, got 3"),
        ({"date_span": 5}, "date_span: must be a string or null"),
        ({"valid_at_evidence": "guess"}, "valid_at_evidence: 'guess' is not one of"),
        ({"invalid_at_precision": "week", "invalid_at": "2025-01-01T00:00:00.000000Z"}, "invalid_at_precision"),
        ({"cardinality": "two"}, "cardinality: 'two' is not one of ['many', 'one']"),
        ({"valid_at": None}, "an assertion needs valid_at, or invalid_at for a retraction"),
        ({"invalid_at": "2024-03-01T00:00:00.000000Z"}, "is not after valid_at"),
    ],
)
def test_an_assertion_is_checked_when_built(change, message):
    """What every extractor hands the store: a bad field refuses the assertion, naming the
    field; a good one is kept as built, its names stripped."""
    good = Assertion(**ASSERTION)
    assert (good.subject, good.object) == ("Alice", "Paris")
    assert Assertion(**good._asdict()) == good
    assert pickle.loads(pickle.dumps(good)) == copy.deepcopy(good) == good
    with pytest.raises(InvalidAssertion, match=re.escape(message)):
        Assertion(**{**ASSERTION, **change})
