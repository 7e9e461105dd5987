"""What recall shows of an episode: the lines that matched, not the whole turn.

An episode is a whole turn, often pages of it (a pasted log, a diff, the assistant's
long reply); an agent asking ten questions cannot take ten transcripts each time. A
snippet is the lines holding the words the question matched, those with the most
different words first, then the line after each while there is room (the answer to a
question is often the next line), each under the role that said it ("User: ",
"Assistant: ") and cut around its first hit when long, in their order in the turn: about
``SNIPPET_CHARS`` for the best few episodes of a recall, their best line alone for the
rest. Hits come marked by the text index (``HIT_START``/``HIT_END``, FTS5's
``highlight``: stemmed as the search was) and leave here marked ``**like this**``; the
text's own markdown bold is taken out, so that every mark is a hit.

Pure: a marked text in, a snippet out.
"""

from __future__ import annotations

import re

from memctl.results import REPLY_PREFIX, USER_PREFIX

# The best few episodes of a recall show about three lines each, the rest about one: ten
# results are then a few KB, what an agent can read at every question (issue 28's target:
# a median reply of 4 KB for 10 results; each shown at 300 characters made 6 KB).
SNIPPET_CHARS = 260
DETAILED = 3
BRIEF_CHARS = 80


def room_at(rank: int) -> int:
    """The room for the snippet of the episode at ``rank`` (0: the best) in a recall."""
    return SNIPPET_CHARS if rank < DETAILED else BRIEF_CHARS


# Control characters, which a stored text holds only by accident: the index's marks (one
# that holds them is shown unmarked: ``search.episodes_by_id``).
HIT_START, HIT_END = "\x02", "\x03"
_HIT = re.compile(f"{HIT_START}(.*?){HIT_END}", re.S)
_SPACE = re.compile(r"\s+")
ELLIPSIS = "…"
MARK = "**"  # around each hit in a snippet
# Of a long line, this share of the room goes before its first hit.
_LEAD = 1 / 4


def snippet(marked: str, room: int = SNIPPET_CHARS) -> str:
    """The best lines of ``marked`` (a text with its hits between HIT_START and HIT_END),
    with their roles, in about ``room`` characters; its opening if nothing is marked."""
    # The text's own markdown bold would read as hits: the snippet is plain text.
    lines = _lines(marked.replace(MARK, ""))
    hits = [(index, {word.lower() for word in _HIT.findall(line)}) for index, (_, line) in enumerate(lines)]
    hits = [(index, words) for index, words in hits if words]
    if not hits:  # its opening
        opening: list[tuple[int, str, str]] = []
        used = 0
        while len(opening) < len(lines) and used < room:
            opening.append((len(opening), *lines[len(opening)]))
            used += len(opening[-1][2])
        return _shown(opening, room)
    # Lines that bring words not yet shown first, the most of them first, then the earliest.
    chosen: list[int] = []
    shown_words: set[str] = set()
    used = 0
    brief = room <= BRIEF_CHARS  # one line: the best
    for index, words in sorted(hits, key=lambda item: (-len(item[1]), item[0])):
        if used >= room or (brief and chosen):
            break
        if chosen and words <= shown_words:
            continue
        chosen.append(index)
        shown_words |= words
        used += min(len(_HIT.sub(r"\1", lines[index][1])), room - used)
    # Room left: the line after each, as far as it goes (a question's answer is often the next line).
    for index in sorted(chosen):
        if used >= room * 3 // 4 or brief:
            break
        if index + 1 < len(lines) and index + 1 not in chosen:
            chosen.append(index + 1)
            used += len(_HIT.sub(r"\1", lines[index + 1][1]))
    return _shown([(index, *lines[index]) for index in sorted(chosen)], room)


def _lines(text: str) -> list[tuple[str, str]]:
    """(role, line) of each non-blank line, its spaces collapsed; the role is the part of
    the turn it is in ("User: " or "Assistant: "), or "" in a text with no parts."""
    role = ""
    found: list[tuple[str, str]] = []
    for line in text.splitlines():
        plain = line.replace(HIT_START, "").replace(HIT_END, "")
        for prefix in (USER_PREFIX, REPLY_PREFIX):
            if plain.startswith(prefix):
                role = prefix
                line = _after_visible(line, len(prefix))
                break
        line = _SPACE.sub(" ", line).strip()
        if line:
            found.append((role, line))
    return found


def _after_visible(line: str, count: int) -> str:
    """``line`` less its first ``count`` visible characters, its marks kept."""
    for at, char in enumerate(line):
        if count == 0:
            return line[at:]
        if char not in (HIT_START, HIT_END):
            count -= 1
    return ""


def _shown(chosen: list[tuple[int, str, str]], room: int) -> str:
    """The chosen lines, each under its role when it changes, gaps marked, the room shared
    out in their order (a line that needs less leaves the rest to the next)."""
    pieces: list[str] = []
    last_index, last_role = -1, None
    left = room
    for position, (index, role, line) in enumerate(chosen):
        share = max(left // (len(chosen) - position), 40)
        text, length = _cut(line, share)
        left -= length
        gap = ELLIPSIS if last_index >= 0 and index != last_index + 1 and not text.startswith(ELLIPSIS) else ""
        pieces.append(("\n" if pieces else "") + gap + (role if role != last_role else "") + text)
        last_index, last_role = index, role
    # Hits next to each other are one marked phrase: "**dev server**", not "**dev** **server**".
    joined = re.sub(f"{HIT_END}([\\s-]+){HIT_START}", r"\1", "".join(pieces))
    return joined.replace(HIT_START, MARK).replace(HIT_END, MARK)


def _cut(line: str, room: int) -> tuple[str, int]:
    """``line`` in about ``room`` visible characters around its first hit, and how many it
    shows. A hit is never cut in two."""
    plain = _HIT.sub(r"\1", line)
    if len(plain) <= room:
        return line, len(plain)
    first = line.find(HIT_START)
    start_visible = 0 if first < 0 else max(0, len(_HIT.sub(r"\1", line[:first])) - int(room * _LEAD))
    # Walk the marked line, counting visible characters, from start_visible for room of them.
    out: list[str] = []
    visible = 0
    inside = False
    for char in line:
        if char in (HIT_START, HIT_END):
            inside = char == HIT_START
            if visible >= start_visible:
                out.append(char)
            continue
        if visible >= start_visible + room and not inside:
            break
        if visible >= start_visible:
            out.append(char)
        visible += 1
    text = "".join(out)
    if HIT_START in text and text.count(HIT_START) > text.count(HIT_END):
        text += HIT_END
    head = ELLIPSIS if start_visible else ""
    tail = ELLIPSIS if visible < len(plain) else ""
    return head + text.strip() + tail, min(room, len(plain))
