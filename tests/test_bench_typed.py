"""The question-type benchmark (scripts/retrieval/typed.py, ``bench.py --retrieval
--typed-only``): its histories are the same for a seed, every type is asked about, every
label names a session that says the answer before the question is asked, and the
benchmark prints its figures per type. The figures themselves are the benchmark's business."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from scripts.retrieval import typed
from tests.test_bench import run_bench


def sessions(root: Path) -> dict[str, str]:
    """Every session file under ``root`` by its relative path, with its text."""
    return {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8") for path in sorted(root.rglob("*.jsonl"))}


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def said(line: dict) -> str:
    """A line's text: the user's string, or the assistant's text blocks."""
    content = line["message"]["content"]
    return content if isinstance(content, str) else " ".join(block["text"] for block in content)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, list[dict]]:
    root = tmp_path_factory.mktemp("typed")
    return root, typed.write_histories(root, seed=0)


def test_the_same_seed_writes_the_same_histories_and_questions(tmp_path):
    first = typed.write_histories(tmp_path / "a", seed=3, histories=2, sessions=40)
    again = typed.write_histories(tmp_path / "b", seed=3, histories=2, sessions=40)
    assert first == again
    assert sessions(tmp_path / "a") == sessions(tmp_path / "b")
    other = typed.write_histories(tmp_path / "c", seed=4, histories=2, sessions=40)
    assert other != first and sessions(tmp_path / "c") != sessions(tmp_path / "a")


def test_every_type_is_asked_about_at_least_forty_times_over_histories_of_forty_sessions_or_more(written):
    root, questions = written
    assert Counter(q["type"] for q in questions).keys() == set(typed.TYPES)
    assert min(Counter(q["type"] for q in questions).values()) >= 40
    histories = sorted({q["history"] for q in questions})
    assert len(histories) == 4
    for history in histories:
        assert len(sessions(root / history)) >= 40
        assert all(len(lines(text)) >= 8 for text in sessions(root / history).values())  # several turns each
        assert {q["type"] for q in questions if q["history"] == history} == set(typed.TYPES)


def test_every_evidence_session_exists_and_says_the_answer_in_the_users_words(written):
    root, questions = written
    for q in questions:
        files = sessions(root / q["history"])
        assert q["evidence"] and q["answer"] and q["as_of"], q
        assert {path for path, _ in q["evidence_turns"]} == set(q["evidence"]), q
        for path in q["evidence"]:
            text = " ".join(said(line) for line in lines(files[path])).lower()
            assert any(answer.lower() in text for answer in q["answer"]), (q, path)
        for path, position in q["evidence_turns"]:
            turn = lines(files[path])[position - 1]  # the position memctl gives the episode: its user line
            assert turn["type"] == "user", (q, path, position)
            words = said(turn).lower()
            assert any(answer.lower() in words for answer in q["answer"]), (q, words)
            assert q["question"].lower().rstrip("?.") not in words  # asked in other words than said


def test_every_question_is_asked_after_the_last_session_of_its_history(written):
    root, questions = written
    last = {}
    for history in {q["history"] for q in questions}:
        last[history] = max(line["timestamp"] for text in sessions(root / history).values() for line in lines(text))
    for q in questions:
        # Both are UTC ISO strings ("...Z"), so they compare as text to the second.
        assert q["as_of"][:19] > last[q["history"]][:19], q


def test_the_typed_benchmark_prints_its_figures_per_type():
    figures = run_bench("--retrieval", "--typed-only", "--typed-histories", "1", "--typed-sessions", "12")
    assert "realdata" not in figures and "speed" not in figures
    result = figures["typed"]
    rankings = result["rankings"]
    assert rankings[0] == "memctl" and {"bare_session_bm25", "bare_turn_fts"} < set(rankings)
    assert len(rankings) > 3  # memctl's single rankers, however many it fuses
    assert list(result["by_type"]) == list(typed.TYPES)
    for summary in [*result["by_type"].values(), result["overall"]]:
        assert summary["questions"] > 0 and isinstance(summary["fused_ge_every_ranker"], bool)
        for key in ("recall_at_5", "recall_at_10"):
            assert set(summary[key]) == set(rankings) and all(0 <= v <= 1 for v in summary[key].values()), summary
        assert summary["turn_recall_at_10"]["bare_session_bm25"] is None  # a session names no turn
        assert 0 <= summary["turn_recall_at_10"]["memctl"] <= 1
    assert result["questions"] == sum(s["questions"] for s in result["by_type"].values()) == result["overall"][
        "questions"]
    failures = result["fused_ge_every_ranker_failures"]
    assert result["fused_ge_every_ranker"] == (not failures)
    assert all(kind in (*typed.TYPES, "overall") and ranking in rankings and k in (5, 10)
               for kind, ranking, k in failures)
