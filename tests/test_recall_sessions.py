"""The session ranker: BM25 over whole sessions, each found session offering its best turn
(rankers.SessionText, search.sessions_matching), and how fusion weighs it."""

from __future__ import annotations

import pytest

from memctl import Memory
from memctl.recall import recall
from memctl.recall.fusion import Weighted, rrf
from memctl.recall.rankers import EpisodeText, SessionText

# One planning chat says the question's words across its turns; another says two of them
# in one short turn, which a ranking of turns puts first.
PLANNING = ["my sister is getting married in June", "the wedding venue is a farm up north",
            "we still need flowers and a photographer", "the guests fly into Porto on Friday"]
SHOP = ["a flower shop in Porto opened near the office"]
OTHER = ["the office moved to the second floor", "lunch was late again today", "my sister called about the car",
         "a wedding photo came up in the group chat", "my sister lent me her bike"]


@pytest.fixture
def chats(memory: Memory) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {}
    for name, turns in (("planning", PLANNING), ("shop", SHOP), ("other", OTHER)):
        for n, said in enumerate(turns):
            added = memory.add_memory(f"User: {said}", reference_time=f"2025-03-0{n + 1}T10:00:00Z",
                                      source=f"chat://{name}")
            ids.setdefault(name, []).append(added.episode_id)
    return ids


QUESTION = "sister wedding flowers Porto"


def ranked(memory: Memory, ranker, question: str = QUESTION, **window) -> list[str]:
    with memory.connections.reading() as db:
        found = recall(db, question, now=memory.now(), rankers=(ranker,), kind="episode", **window)
    return [r.source.removeprefix("chat://") for r in found.results]


def test_a_session_that_says_the_question_across_its_turns_leads(memory, chats):
    assert ranked(memory, EpisodeText())[0] == "shop"  # a turn holding two of the words
    assert ranked(memory, SessionText())[:2] == ["planning", "shop"]  # a session holding all four
    fused = memory.recall(QUESTION, kind="episode").results
    assert fused[0].source == "chat://planning"


def test_each_session_offers_its_best_turn_by_bm25(memory, chats):
    with memory.connections.reading() as db:
        found = recall(db, "wedding farm Porto", now=memory.now(), rankers=(SessionText(),)).results
    # planning's turn that says two of the words, not the one that says Porto
    assert [r.episode_id for r in found] == [chats["planning"][1], chats["shop"][0], chats["other"][3]]


def test_one_session_tells_nothing_apart(memory):
    for n, said in enumerate(PLANNING):
        memory.add_memory(f"User: {said}", reference_time=f"2025-03-0{n + 1}T10:00:00Z", source="chat://only")
    assert ranked(memory, SessionText()) == []
    assert ranked(memory, EpisodeText())  # the turns are still found by the turn ranker


def offered(memory: Memory, question: str) -> list[str]:
    with memory.connections.reading() as db:
        return [r.episode_id for r in recall(db, question, now=memory.now(), rankers=(SessionText(),)).results]


def test_an_undone_turn_is_not_found_through_its_session_unless_asked_before_the_undo(memory, chats, clock):
    married = chats["planning"][0]
    assert married in offered(memory, "married sister")
    before = memory.now()
    clock.advance(hours=1)
    memory.undo([married], apply=True)
    assert married not in offered(memory, "married sister")
    assert married not in [r.episode_id for r in memory.recall("married sister").results]
    earlier = memory.recall("married sister", known_at=before, kind="episode").results
    assert earlier[0].episode_id == married


def test_a_purged_turn_leaves_nothing_for_its_session_to_be_found_by(memory, chats):
    married = chats["planning"][0]
    memory.undo([married], apply=True, purge=True)
    assert married not in offered(memory, "married sister")
    assert "planning" not in [r.source.removeprefix("chat://") for r in memory.recall("married").results]


def test_turns_said_after_the_asking_time_do_not_count_for_their_session(memory, chats):
    # planning says "flowers" on 3 March and "Porto" on the 4th: asked on the 3rd, its flowers turn is all it has
    with memory.connections.reading() as db:
        found = recall(db, "flowers Porto", now=memory.now(), rankers=(SessionText(),),
                       as_of="2025-03-03T12:00:00Z").results
    assert [r.episode_id for r in found] == [chats["shop"][0], chats["planning"][2]]


def test_fusion_weighs_each_list_and_each_weighted_item():
    strong, weak = ("episode", "a"), ("episode", "b")
    sessions = Weighted(strong, weak)
    sessions.strength[weak] = 0.1
    scores = rrf([sessions, [weak]], weights=[1.0, 0.5])
    assert scores[strong] == pytest.approx(1 / 61)
    assert scores[weak] == pytest.approx(0.1 / 62 + 0.5 / 61)
    assert rrf([[strong, weak]]) == {strong: 1 / 61, weak: 1 / 62}  # plain lists: every item at full credit


def test_a_retried_turn_is_still_found_through_its_session(memory, chats, clock):
    from memctl.extract import build_extractor

    memory.retry([chats["planning"][1]], build_extractor("rules", clock=memory.clock))
    assert offered(memory, "wedding farm Porto")[0] == chats["planning"][1]


def test_each_conversation_of_an_export_is_a_session(memory, tmp_path):
    """An export holds hundreds of conversations in one file: each is ranked as a session
    of its own, and named as one in the JSON."""
    import json

    from memctl import IngestOptions

    def chat(cid: str, *said: str, start: float) -> dict:
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ["m1"]}}
        for n, text in enumerate(said, 1):
            mapping[f"m{n}"] = {"id": f"m{n}", "parent": "root" if n == 1 else f"m{n - 1}",
                                "children": [f"m{n + 1}"] if n < len(said) else [],
                                "message": {"id": f"m{n}", "author": {"role": "user" if n % 2 else "assistant"},
                                            "create_time": start + n, "content": {"content_type": "text",
                                                                                  "parts": [text]},
                                            "recipient": "all", "metadata": {}}}
        return {"id": cid, "title": cid, "create_time": start, "mapping": mapping, "current_node": f"m{len(said)}"}

    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([
        chat("planning", "my sister is getting married", "congratulations", "the wedding is near Porto", "lovely",
             start=1_700_000_000),
        chat("shop", "a flower shop in Porto opened", "nice", start=1_700_100_000),
        chat("other", "my sister lent me her bike", "kind of her", start=1_700_200_000),
    ]))
    memory.ingest([path], IngestOptions())
    with memory.connections.reading() as db:
        found = recall(db, "sister wedding Porto", now=memory.now(), rankers=(SessionText(),)).results
    # planning says all three words over two of its turns; one file, three sessions
    assert [r.conversation for r in found] == ["planning", "other", "shop"]
    data = memory.recall("sister wedding Porto", kind="episode").to_json()
    assert data["sessions"][data["results"][0]["session"]]["conversation"] == "planning"
    assert all(session["source"] == str(path.resolve()) for session in data["sessions"])
