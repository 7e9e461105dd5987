"""Scoring retrieval: questions with their evidence as stored episodes, memctl's ranking,
and the bare FTS5 baseline a peer would use over the same stored text.

A question's evidence is a list of (file path relative to the data's root, position):
the position memctl gives the episode (the line or record number of its user message).
Episode ids hang on more (the absolute path, for some formats the text as redacted), so
labels are kept in this form and turned into ids after each ingest.
"""

from __future__ import annotations

import inspect
import json
import re
import sqlite3
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from memctl.memory import Memory

LIMIT = 10
_WORDS = re.compile(r"\w+")

Ranking = list[list[str]]  # results best first, each as the episode ids it retrieves


@dataclass
class Question:
    text: str
    evidence: list[tuple[str, int]]
    as_of: str | None = None


def questions_from(rows: Iterable[dict]) -> list[Question]:
    return [Question(row["question"], [(path, position) for path, position in row["evidence"]], row.get("as_of"))
            for row in rows]


def load_questions(path: Path) -> list[Question]:
    with open(path, encoding="utf-8") as handle:
        return questions_from(json.loads(line) for line in handle if line.strip())


def hybrid() -> bool:
    """Whether recall returns episodes too (the hybrid recall), or facts only."""
    return "kind" in inspect.signature(Memory.recall).parameters


def ingest(memory: Memory, paths: list[Path]) -> None:
    """Ingest as a user would offline: format detected per file, the rules extractor."""
    from memctl import IngestOptions
    from memctl.extract import build_extractor

    # Aider's naive local times read in UTC, whatever this machine's zone: the same
    # reference times (and so the same as_of answers) on every machine.
    memory.ingest(paths, IngestOptions(tz="UTC"), extractor=build_extractor("rules", clock=memory.clock))


def evidence_ids(memory: Memory, root: Path, questions: list[Question]) -> list[set[str]]:
    """Each question's evidence as episode ids; every label must name a stored episode."""
    by_place = {(Path(e.source).relative_to(root).as_posix(), e.position): e.id
                for e in memory.episodes(status="active")}
    missing = [place for q in questions for place in q.evidence if place not in by_place]
    if missing:
        raise SystemExit(f"{len(missing)} evidence labels name no stored episode, e.g. {missing[:3]}")
    return [{by_place[place] for place in q.evidence} for q in questions]


def stored_texts(memory: Memory) -> list[tuple[str, str]]:
    """(episode id, content) as memctl stored them (redacted, tool output left out)."""
    return memory.db.execute("SELECT id, content FROM episodes WHERE status = 'active'").fetchall()


def match_expression(question: str) -> str:
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(_WORDS.findall(question.lower())))


class Baseline:
    """Bare FTS5 over the raw turns: the default tokenizer (no stemming, no stop words),
    the question's words each quoted and OR'ed, ranked by bm25, and no notion of time."""

    def __init__(self, texts: Iterable[tuple[str, str]], path: str | Path = ":memory:"):
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE VIRTUAL TABLE turns USING fts5(id UNINDEXED, content)")
        self.db.executemany("INSERT INTO turns (id, content) VALUES (?, ?)", texts)
        self.db.commit()

    def search(self, question: Question) -> Ranking:
        rows = self.db.execute("SELECT id FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT ?",
                               [match_expression(question.text), LIMIT])
        return [[episode_id] for episode_id, in rows]

    def close(self) -> None:
        self.db.close()


def memctl_search(memory: Memory, question: Question) -> Ranking:
    """memctl's top results: an episode retrieves itself, a fact the episodes supporting it."""
    return retrieved(memory.recall(question.text, as_of=question.as_of, limit=LIMIT).results)


def retrieved(results: list) -> Ranking:
    """Each result of a recall's list as the episodes it retrieves: an episode itself, a
    fact those supporting it, a conversation's result the turns it holds. It is one
    result, as an agent reads it: one place, and one session. (Counted as a place per
    turn, in the order read, grouping cost 0.03 of the typed benchmark's session recall@5,
    0.47 to 0.44, since the turns of one session then fill the first places; @10 is the
    same either way.) An entity's summary heads the facts about it, beyond the limit: it
    ranks nothing. Facts-only recall (before the hybrid) has no ``kind``: all are facts."""
    places: Ranking = []
    for r in results:
        kind = getattr(r, "kind", "fact")
        if kind == "episode":
            places.append([r.episode_id])
        elif kind == "session":
            places.append([turn.episode_id for turn in r.turns])
        elif kind != "summary":
            places.append(list(r.episodes or []))
    return places


def score(ranking: Ranking, evidence: set[str]) -> tuple[float, float]:
    """(share of the evidence in the top results, reciprocal rank of the first result that holds some)."""
    found: set[str] = set()
    reciprocal = 0.0
    for rank, episodes in enumerate(ranking[:LIMIT], 1):
        hits = evidence.intersection(episodes)
        if hits and not found:
            reciprocal = 1 / rank
        found |= hits
    return len(found) / len(evidence), reciprocal


def evaluate(questions: list[Question], evidence: list[set[str]], search: Callable[[Question], Ranking]) -> dict:
    scores = [score(search(q), e) for q, e in zip(questions, evidence)]
    timed = [recall for q, (recall, _) in zip(questions, scores) if q.as_of is not None]
    return {"recall_at_10": mean(recall for recall, _ in scores),
            "hit_at_10": mean(recall > 0 for recall, _ in scores),
            "mrr": mean(reciprocal for _, reciprocal in scores),
            "as_of_recall_at_10": mean(timed) if timed else None}


def mean(values: Iterable[float]) -> float:
    return round(statistics.fmean(values), 4)
