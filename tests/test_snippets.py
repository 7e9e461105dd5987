"""What recall shows of an episode: the lines that matched, under their roles (memctl.snippets)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memctl import Memory
from memctl.snippets import HIT_END, HIT_START, SNIPPET_CHARS, snippet


def marked(text: str, *words: str) -> str:
    """``text`` with each of ``words`` marked as the index marks a hit."""
    for word in words:
        text = text.replace(word, f"{HIT_START}{word}{HIT_END}")
    return text


def test_the_line_that_matched_under_its_role_then_the_line_after_it():
    text = "User: hi\n\nUser: which database should billing use?\n\nAssistant: Postgres, for its JSON columns.\n" \
           + "\n".join(f"Padding line {n} about nothing in particular." for n in range(40))
    assert snippet(marked(text, "billing")) == (
        "User: which database should **billing** use?\nAssistant: Postgres, for its JSON columns.")


def test_lines_that_bring_other_words_come_before_lines_that_repeat_them():
    text = "\n".join(["User: redis again", *["filler words here"] * 30, "redis and sentry together", "redis once more"])
    shown = snippet(marked(text, "redis", "sentry"))
    # the first line adds no word the third does not: the room goes to the line after that
    assert shown == "User: **redis** and **sentry** together\n**redis** once more"


def test_lines_apart_are_shown_with_the_gap_marked():
    text = "\n".join(["User: sentry first", *["filler words here"] * 30, "then redis"])
    assert snippet(marked(text, "redis", "sentry")) == "User: **sentry** first\nfiller words here\n…then **redis**"


def test_a_hit_in_code_shows_its_code_line():
    text = ("User: fix the pool size\n\nAssistant: Here:\n```python\n" + "\n".join(f"x{n} = {n}" for n in range(50))
            + "\nengine = create_engine(url, pool_size=20)\n```")
    shown = snippet(marked(text, "pool_size"))
    assert "Assistant: engine = create_engine(url, **pool_size**=20)" in shown


def test_a_long_line_is_cut_around_its_first_hit_and_a_hit_is_never_cut():
    line = "word " * 400 + "needle " + "word " * 400
    shown = snippet(marked("User: " + line, "needle"))
    assert "**needle**" in shown and shown.startswith("User: …") and shown.endswith("…")
    assert len(shown) <= SNIPPET_CHARS + 20


def test_nothing_marked_is_its_opening():
    text = "User: hello there\n\nAssistant: " + "lorem ipsum " * 100
    shown = snippet(text)
    assert shown.startswith("User: hello there\nAssistant: lorem ipsum") and len(shown) <= SNIPPET_CHARS + 20


@given(st.text(max_size=2000), st.lists(st.sampled_from(["alpha", "beta", "gamma"]), max_size=3))
def test_any_text_gives_a_short_snippet_with_balanced_marks(text, words):
    text = text.replace(HIT_START, "").replace(HIT_END, "")
    shown = snippet(marked(text + " alpha beta", *words))
    assert len(shown) <= 2 * SNIPPET_CHARS and shown.count("**") % 2 == 0
    assert HIT_START not in shown and HIT_END not in shown


def test_a_stored_text_that_holds_the_marks_itself_is_shown_unmarked(memory: Memory):
    memory.add_memory(f"User: odd {HIT_START}bytes{HIT_END} around the word tokenizer", reference_time="2025-01-01")
    [hit] = memory.recall("tokenizer").results
    assert HIT_START not in hit.snippet and "tokenizer" in hit.snippet
