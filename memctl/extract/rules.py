"""The rules extractor: the offline default when no LLM is configured (architecture §3).

Deterministic, no model, no network, nothing but the stdlib and python-dateutil. It reads
the episode text ("User: …\\n\\nAssistant: …", see ``memctl.sources.render``) sentence by
sentence and keeps only what a few clear English patterns say. A wrong fact is worse than
a missed one, so every doubt ends in *no* assertion.

Patterns (first that fits a sentence wins):

======================================  ==========================================================
sentence                                assertions
======================================  ==========================================================
"X uses Y", "X is using Y", "we use Y"  (X, uses, Y), cardinality many
"X has been using Y", "started using"   the same
"X switched/migrated to Y"              (X, uses, Y)
"X switched/moved/migrated from A to B" (X, uses, B) from the date, and a retraction of (X, uses, A)
"finished migrating X from A to B"      the same
"X moved off A and onto B"              the same
"we switched T from A to B"             the same with T as the subject ("moved the repo from …")
"T was moved from A to B"               the same (passive)
"X replaced A with B"                   the same as a switch from A to B
"X dropped A in favour of B"            the same
"X now uses A instead of B"             the same ("now" makes it a change; without it, only A)
"`file.js` - Now uses Y" (a list item   (file.js, uses, Y): a label that is a link or `code` names
labelled with a file or identifier)     the subject; a bold word ("**Fast**: uses …") does not; a
                                        nested item "Uses Y" under such an item is read with it
"cli.py - Click-based CLI", "tui.py -   (cli.py, uses, Click), (tui.py, uses, Textual): a labelled
TUI built with Textual framework"       item built on a name ("framework", "library" dropped)
"X is built with/on Y"                  (X, uses, Y) (Y must be a name)
"X is now Y"                            (X, is, Y), cardinality one (Y must be a name: capitalised,
                                        a number or `code`)
"X no longer uses Y", "X stopped using  a retraction of (X, uses, Y): no valid_at, invalid_at =
Y", "X dropped Y", "X doesn't use Y     the date
anymore"
"X prefers Y", "I prefer Y"             (X, prefers, Y), cardinality many
"X is backed by Y", "X runs on Y"       (X, uses, Y) (Y must be a name)
"P runs/leads/heads/manages the T team" (T team, led by, P), cardinality one (P a name; T ends in
"P took over the T team (from Q)"       team, group, squad, org, department, division or unit)
"P lives in C", "P is based in C",      (P, lives in, C), cardinality one (P a name or the user, C a
"I live in C", "I've lived in C"        name)
"I moved/relocated (from A) to C"       (user, lives in, C) from the date: only "I", only a
                                        capitalised place ("I moved to the platform team" gives nothing)
"I work at/for O", "P works for O",     (P, works at, O), cardinality one (O capitalised; a team is
"I've worked at O", "I started at O",   no employer). A bare "I joined Slack" may be an app or a
"I joined O as a J"                     channel: only "joined O as a J" is read
"I left A and joined B"                 (user, works at, B) from the date, and (user, works at, A) ends
"I no longer work at O", "I don't work  (P, works at, O) ends
at O anymore"
"I'm a J", "I work as a J", "I became   (P, works as, J), cardinality one; J ends in an occupation
a J", "I've been a J", "P is a J"       ("nurse", "senior backend engineer"); "at O" adds works at
"my R is N", "N is my R", "our R is     (owner, R, N), cardinality one: R a role ("manager", "tech
N", "the R of X is N", "X's R is N",    lead", "main database", "CI", "integration branch"); "my"
"N became my R", "I report to N"        is the user's in their turn, "our" the user's team; a
                                        person's role needs a person's name; "I report to N" is
                                        (user, manager, N)
"we hired N (as our new R)"             (user, hired, N), cardinality many (N a person's name; "A and
                                        B" two); with "as our R", (user, R, N) too
"my name is N"                          (user, name, N), cardinality one
"I'm from C", "I come from C"           (user, from, C), cardinality one (only the user)
"we host on H", "X is hosted/deployed   (X, hosted on, H), cardinality many ("I have … and host on
on H"                                   Vercel": the first clause's "I")
======================================  ==========================================================

Who "I", "we" and "you" are: in the user's turn, "I", "we", "our team" and "my team" are
the user (subject ``user``), "my X"/"our X" is ``user's X``, and "you" (the assistant) is
not a subject. In the assistant's turn, "we" (the user's project, worked on together) and
"you" are the user, "your X" is ``user's X``; the assistant's own "I" and "my" are not
facts about the world and give nothing. Text that is not a rendered chat (a note) is read
as the user's.

Dates, in the same sentence, resolved against the episode's reference time (never the
clock); more than one date in a sentence, an impossible date or a stated date after the
reference time drops the sentence:

=================================================  ==========  =========  ==================
phrase                                             evidence    precision  resolves to
=================================================  ==========  =========  ==================
"on 20 June 2022", "June 20, 2022", "2022-06-20"   text        day        that day, 00:00 UTC
"in March 2023", "since March 2023"                text        month      2023-03-01
"in 2021", "since 2021"                            text        year       2021-01-01
"on 20 June", "on June 20" (no year)               relative    day        latest such day ≤ reference
"in March"                                         relative    month      latest March ≤ reference month
"today" / "yesterday"                              relative    day        reference day / day before
"last week" (= "1 week ago"), "N days/weeks ago"   relative    day        reference day − N
"last month", "N months ago"                       relative    month      first of that month
"last year", "N years ago"                         relative    year       1 January of that year
(none)                                             reference   instant    the reference time
=================================================  ==========  =========  ==================

Days are UTC days. ``date_span`` holds the words that carry the date ("on 20 June 2022",
"in March", "2 years ago"), as written in the sentence.

Never read: code blocks (``` and ~~~ fences, indented code), tables, lines that look like
code, paths, logs, diffs or markup; quoted lines ("> …": someone else's words, a tool's
output); questions; sentences with hedges or modals ("could", "should", "if", "maybe",
"let's", "plan", "want", "I think", …); negated sentences (except the retraction patterns
themselves, and a closing contrast: "We use Neovim, not Vim" is read as "We use Neovim");
sentences over 300 characters. A sentence whose hedge is in a later clause (after ", so",
", but", ", and" or ";") is read up to that clause: "Felix runs the data team, so the
summary should go to him" says who leads the team. A parenthetical aside is left out of
its sentence and, when it has four words or more, read as a sentence of its own.

Most sentences say none of this: each pattern names the words it cannot match without
(``_NEEDS``), and a sentence, or a whole paragraph, without any of them (``_worth_reading``)
is passed over before its dates and names are looked at.

Names are short noun phrases: articles and markdown stripped, inline `code` kept as its
text, at most five words, no pronouns, quantifiers ("everyone"), clauses ("to …", "that
…", "working remotely"), lists ("A, B and C"; "A and B" gives two objects) or generic
words ("the code", "the new structure", "support", "dark mode", "the main branch"). Code
identifiers are not names ("_preprocess_content_node", "self._store", "applyFilters()",
"getUserMedia"; a file name such as "recorder.js" is), nor is a quoted phrase that is not
capitalised ('"Outside diff range comments" uses …'), nor a part of something described
("BeautifulSoup's blockquote content"). A plain noun with plural "use" ("teams use Slack")
is a generalisation and gives nothing. "moved" and "replaced" need names on both sides
(capitalised, a number or `code`: "moved the logo from the header to the footer" is no
tool change), "I moved from Oslo to Bergen" is a home, and an object with a time word
("from Monday to Tuesday") is a reschedule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Required, TypedDict, TypeGuard

from memctl import names, times
from memctl.extract import Request, Result, dates
from memctl.model import Assertion, Cardinality, Evidence, InvalidAssertion, Precision

NAME = "rules"
MAX_SENTENCE = 300
MAX_WORDS = 5
USER = "user"


class RulesExtractor:
    """Extractor protocol over ``extract_text``; the clock gives only ``extracted_at``.

    A large chunk of requests (a log backfill's) is shared with a second process, forked
    once and kept for the run, on a machine with two cores or more
    (``memctl.extract.helper``): the rules are Python work on every sentence, about half
    of a log ingest, and each episode's reading is its own. The results, and their order,
    are the same either way.
    """

    name = NAME
    reads_context = False  # the text alone: no context, no predicates

    def __init__(self, clock: Callable[[], datetime], *, share: bool = True):
        self.clock = clock
        self.share = share  # False: every request read in this process
        self._helper: Any = None

    def extract(self, requests: Iterable[Request]) -> Iterator[tuple[Request, Result]]:
        requests = list(requests)
        given = self._given(requests)
        helper = self._helper_for(given)
        return _results(requests, helper.map(given) if helper else [read_one(item) for item in given])

    def submit(self, requests: list[Request]) -> Callable[[], Iterator[tuple[Request, Result]]]:
        """Start reading ``requests``: with a helper, it reads them all while this process
        goes on (the next chunk's file lines); the callable gives the results. The
        extraction stage takes one chunk's results before it submits the next."""
        given = self._given(requests)
        helper = self._helper_for(given)
        if helper:
            receive = helper.send(given)
            return lambda: _results(requests, receive())
        outcomes = [read_one(item) for item in given]
        return lambda: _results(requests, outcomes)

    def _given(self, requests: list[Request]) -> list[tuple[str, str, str]]:
        return [(request.text, request.reference_time, times.to_storage(self.clock())) for request in requests]

    def _helper_for(self, given: list[tuple[str, str, str]]) -> Any:
        """The helper process, started by the first chunk worth sharing (None before it,
        False where none can be)."""
        if self.share and self._helper is None and given:
            from memctl.extract import helper

            self._helper = helper.Helper.start_if_worth_it(given)
        return self._helper if self._helper and self._helper.alive else None


def _results(requests: list[Request], outcomes: list) -> Iterator[tuple[Request, Result]]:
    for request, outcome in zip(requests, outcomes, strict=True):
        yield request, (Result(error=outcome) if isinstance(outcome, str) else Result(assertions=outcome))


def read_one(given: tuple[str, str, str]) -> list[Assertion] | str:
    """One request's assertions (text, reference time, extraction time), or why it has none."""
    try:
        return extract_text(*given)
    except times.BadInstant as error:
        return str(error)


# ---------------------------------------------------------------------------- text → sentences

_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
# a quoted line is someone else's words or a tool's output, not the speaker's
_QUOTE = re.compile(r"^\s*>")
# a file name: an entity of its own ("recorder.js uses AudioWorklet"), unlike a code identifier
_FILE_NAME = re.compile(
    r"[\w][\w.\-/]*\.(?:js|jsx|ts|tsx|mjs|cjs|py|rb|go|rs|java|kt|swift|c|h|cc|cpp|hpp|cs|php|sh|sql|json|jsonl|"
    r"toml|yaml|yml|ini|cfg|conf|md|mdx|rst|txt|html|htm|css|scss|vue|svelte|lock|xml|gradle|tf|ex|exs|lua|dart)",
    re.I)
# a list item labelled with a file or a code name, the label and what follows: "**[drone.js](…)** - …"
_ITEM_LABEL = re.compile(rf"^\**(?:\[([\w.\-/+#@]+)\]\([^)\n]*\)|`([^`\n]+)`|({_FILE_NAME.pattern}))\**"
                         r"(?=\s*(?:\s[-—–]|:)\s)", re.I)
# a nested item that says only what its parent's label does: "   - Uses AudioWorklet for noise generation"
_LABEL_VERB = re.compile(r"(?:Now\s+)?(?:Uses|Relies\s+on|Runs\s+on|Is\s+built\s+(?:with|on)|Built\s+(?:with|on))\s")
_CODE_LINE = re.compile("|".join(f"(?:{pattern})" for pattern in [  # one search, not eleven
    r"^(?: {4,}|\t)(?![-*+•]\s|\d{1,3}[.)]\s)",  # indented code (nested lists are kept)
    r"^\s*[|<{}\[\]]",  # tables, markup, JSON, "[cut: …]"
    r"^\s*(?:\$|>>>|#!|//|/\*|\*/|%|@@|\+\+\+|---|[+-](?=\S)|[+-]\s{2,}|[=*_]{3,}\s*$)",  # shells, diffs, rules
    r"^\s*(?:~|\.{1,2})?/\S",  # paths
    r"^\s*[A-Za-z]:\\",
    r"^\s*\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}",  # log timestamps
    r"^\s*\[?(?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE|FATAL|CRITICAL)\b",
    r"^\s*(?:Traceback \(most recent|File \".*\", line \d+|at \S+ \(.*:\d+)",
    r"^\s*(?:def|class|import|from\s+\S+\s+import|return|const|let|var|function|"
    r"public|private|protected|package|#include|SELECT|INSERT|UPDATE|CREATE)\b",
    r"[;{}]\s*$|\)\s*:\s*$|=>|==|!=|&&|\|\||::|->",  # code punctuation
    r"^\s*[\w.\[\]\"']+\s*[-+*/]?=\s*\S",  # assignments
]))
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_EMPHASIS = [re.compile(r"\*\*(.+?)\*\*"), re.compile(r"__(.+?)__"),
             re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])")]
_LINK_LABEL = re.compile(r"^\**\[([\w.\-/+#@]+)\]\([^)\n]*\)\**(?=\s*(?:\s[-—–]|:)\s)")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[^\s])")
_ABBREVIATIONS = {"e.g", "i.e", "vs", "etc", "mr", "mrs", "ms", "dr", "prof", "st", "no", "approx", "cf", "inc",
                  "ltd"} | dates.MONTH_ABBREVIATIONS


def _speakers(text: str) -> list[tuple[str, str]]:
    """(speaker, text) parts: a rendered chat is split into the user's and the assistant's turn
    (a reply that answers no question in its file is rendered alone, "Assistant: …")."""
    if text.startswith("User: "):
        user, found, assistant = text[len("User: "):].partition("\n\nAssistant: ")
        parts = [("user", user)]
        if found:
            parts.append(("assistant", assistant))
        return parts
    if text.startswith("Assistant: "):
        return [("assistant", text[len("Assistant: "):])]
    return [("user", text)]


_NOT_PROSE = re.compile(r"[^\w\s]|_")


def _looks_like_code(line: str) -> bool:
    if _QUOTE.match(line) or _CODE_LINE.search(line):
        return True
    prose = _clean_markdown(_LIST_MARKER.sub("", _INLINE_CODE.sub("x", line)))
    return len(prose) > 0 and len(_NOT_PROSE.findall(prose)) / len(prose) > 0.2


def _paragraphs(text: str) -> Iterator[str]:
    """Prose paragraphs: fenced, quoted and code-looking lines dropped; a list item starts a
    new one. A nested item that says only what its parent item's label does ("Uses X" under
    "drone.js - …") is read with that label."""
    fenced = False
    current: list[str] = []
    label: tuple[int, str] | None = None  # (indent, label) of the list item above
    for raw in text.splitlines():
        if _FENCE.match(raw):
            fenced = not fenced
            if current:
                yield " ".join(current)
                current = []
            continue
        if fenced or not raw.strip() or _looks_like_code(raw):
            if current:
                yield " ".join(current)
                current = []
            continue
        item = _LIST_MARKER.match(raw)
        line = _HEADING.sub("", _LIST_MARKER.sub("", raw)).strip()
        if item:
            indent = len(raw) - len(raw.lstrip())
            if label is not None and indent > label[0]:
                if _LABEL_VERB.match(line):
                    line = f"`{label[1]}` - {line}"
            else:
                named = _ITEM_LABEL.match(line)
                label = (indent, next(g for g in named.groups() if g)) if named else None
        elif _HEADING.match(raw) or not raw.startswith((" ", "\t")):
            label = None
        starts_block = bool(item or _HEADING.match(raw))
        if starts_block and current:
            yield " ".join(current)
            current = []
        current.append(line)
        if starts_block and _HEADING.match(raw):  # a heading is a paragraph of its own
            yield " ".join(current)
            current = []
    if current:
        yield " ".join(current)


def _clean_markdown(text: str) -> str:
    text = _LINK.sub(r"\1", text)
    for pattern in _EMPHASIS:
        text = pattern.sub(r"\1", text)
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return re.sub(r"\s+", " ", text).strip()


def sentences(text: str, wanted: Callable[[str], bool] | None = None) -> Iterator[tuple[str, str]]:
    """(speaker, sentence) for every prose sentence of an episode's text, in order; with
    ``wanted``, only those of the paragraphs it wants."""
    for speaker, part in _speakers(text):
        for paragraph in _paragraphs(part):
            if wanted is not None and not wanted(paragraph):
                continue
            # a list item labelled with a linked file keeps the label as a name: "[a.js](…) - Uses X"
            paragraph = _clean_markdown(_LINK_LABEL.sub(r"`\1`", paragraph))
            start = 0
            for match in _SENTENCE_END.finditer(paragraph):
                before = paragraph[start:match.start()].rstrip("\"')]")
                last_word = re.findall(r"[\w.]+(?=[.!?]$)", before)
                if before.endswith(".") and last_word and (
                    last_word[-1].lower() in _ABBREVIATIONS or re.fullmatch(r"[A-Za-z]", last_word[-1])
                ):
                    continue
                yield speaker, paragraph[start:match.start()].strip()
                start = match.end()
            if paragraph[start:].strip():
                yield speaker, paragraph[start:].strip()


# ------------------------------------------------------------------------------------- dates

# (kind, pattern): tried in this order; a later match that overlaps an earlier one is ignored
_DATE_PATTERNS = [
    ("iso", re.compile(rf"\b(?:on\s+)?{dates.ISO_DAY}\b(?![T:]\d|-)", re.I)),
    ("dmy", re.compile(rf"\b(?:on\s+)?{dates.DAY_MONTH}{dates.AND_YEAR}\b", re.I)),
    ("mdy", re.compile(rf"\b(?:on\s+)?{dates.MONTH_DAY}{dates.AND_YEAR}\b", re.I)),
    ("my", re.compile(rf"\b(?:in\s+)?(?P<mon>{dates.MONTH})\.?,?\s+(?P<y>\d{{4}})\b", re.I)),
    ("dm", re.compile(rf"\bon\s+(?:the\s+)?\d{{1,2}}{dates.ORDINAL}\s+(?:of\s+)?{dates.CAPITALISED_MONTH}\b(?!\s*\d)")),
    ("md", re.compile(rf"\bon\s+{dates.CAPITALISED_MONTH}\s+\d{{1,2}}{dates.ORDINAL}\b(?!,?\s*\d)")),
    ("y", re.compile(r"\b(?:in|since)\s+(?P<y>(?:19|20)\d{2})\b(?![-/.]\d)", re.I)),
    ("m", re.compile(rf"\b[Ii]n\s+(?P<mon>{dates.CAPITALISED_MONTH})\b(?!\s*\d)")),
    ("ago", dates.AGO),
    ("last", dates.LAST),
    # of dates.RELATIVE_DAYS only the two in the table above: "tonight", "this morning" or
    # "tomorrow" leave a sentence at the reference time
    ("relative_day", re.compile(r"\b(?:yesterday|today)\b", re.I)),
]


@dataclass(frozen=True)
class Stated:
    """A date a sentence states, resolved: storage form, evidence, precision, the words."""

    at: str
    evidence: Evidence
    precision: Precision
    span: str
    start: int
    end: int


class _NoDate(ValueError):
    """The sentence's date cannot be used: the sentence gives nothing."""


def _resolve(kind: str, match: re.Match[str], reference: datetime) -> tuple[datetime, Evidence, Precision]:
    if kind in ("iso", "dmy", "mdy"):
        return dates.explicit_day(match[0], reference), "text", "day"
    if kind == "my":
        return dates.utc_day(int(match["y"]), dates.MONTH_NUMBER[match["mon"].lower()], 1), "text", "month"
    if kind == "y":
        return dates.utc_day(int(match["y"]), 1, 1), "text", "year"
    if kind in ("dm", "md"):
        _, month, day = dates.day_parts(match[0])
        today = dates.start_of_day(reference)
        when = dates.utc_day(reference.year, month, day) if (month, day) != (2, 29) else None
        year = reference.year
        while when is None or when > today:  # the latest such day not after the reference day
            year -= 1
            try:
                when = dates.utc_day(year, month, day)
            except ValueError:  # 29 February in a common year
                when = None
            if reference.year - year > 8:
                raise _NoDate("no such day")
        return when, "relative", "day"
    if kind == "m":
        month = dates.MONTH_NUMBER[match["mon"].lower()]
        year = reference.year if month <= reference.month else reference.year - 1
        return dates.utc_day(year, month, 1), "relative", "month"
    if kind == "relative_day":
        return dates.relative_day(match[0], reference), "relative", "day"
    when, precision = dates.ago(match, reference)
    return when, "relative", precision


def stated_date(sentence: str, reference: datetime) -> Stated | None:
    """The one date a sentence states, or None; _NoDate when it states several or an unusable one."""
    found: list[tuple[int, int, str, re.Match[str]]] = []
    for kind, pattern in _DATE_PATTERNS:
        for match in pattern.finditer(sentence):
            if any(match.start() < end and start < match.end() for start, end, _, _ in found):
                continue
            found.append((match.start(), match.end(), kind, match))
    if not found:
        return None
    if len(found) > 1:
        raise _NoDate("more than one date")
    start, end, kind, match = found[0]
    try:
        at, evidence, precision = _resolve(kind, match, reference)
    except (ValueError, OverflowError) as error:  # 31 June, year 0
        raise _NoDate(str(error)) from None
    if at > reference:  # a plan, or a date the episode cannot know
        raise _NoDate("after the reference time")
    return Stated(times.to_storage(at), evidence, precision, match.group(0), start, end)


# ------------------------------------------------------------------------------------- names

_PRONOUNS = set(
    "i me my mine we us our ours you your yours he him his she her hers it its they them their theirs this that "
    "these those there here who whom whose what which whatever whichever someone somebody something anyone "
    "anybody anything everyone everybody everything nobody nothing none one ones itself themselves myself "
    "ourselves yourself yourselves".split()
)
_AUX = set("is are am was were be been being has have had do does did can could will would shall should may might "
           "must 's 're 've 'd 'll 'm".split())
_NEGATIONS = set("not no never n't nor neither cannot".split())
_CLAUSE = set("if when whenever while because since although though unless until whether so than as where why how "
              "and or but then also too".split())
_PREPOSITIONS = set("to in on at by with without from into onto over under about after before during through via per "
                    "against between among across towards toward upon within like of for instead rather".split())
_QUANTIFIERS = set("all some any each every many much most few several both either more less other another such "
                   "same".split())
_VERBISH = set("said says say think thinks thought know knows knew believe believes guess feel feels seems seem "
               "mean means let lets make makes want wants need needs like likes please try tried".split())
_NOT_IN_NAME = _PRONOUNS | _AUX | _NEGATIONS | _CLAUSE | _QUANTIFIERS | _VERBISH | (_PREPOSITIONS - {"of", "for"})
_NOT_FIRST_IN_OBJECT = {"only", "just", "also", "still", "now", "currently", "really", "mostly", "mainly", "either",
                        "same", "proper", "properly", "directly", "instead", "actually"}
_GENERIC_OBJECTS = {"support", "stuff", "thing", "things", "lot", "lots", "bit", "way", "ways", "approach",
                    "tool", "tools", "option", "options", "method", "feature", "features", "code", "data", "file",
                    "files", "time", "default", "defaults", "version", "solution", "fix", "case", "example",
                    "pattern", "logic", "syntax", "flag", "parameter", "value", "values", "function", "functions",
                    "variable", "format", "component", "property", "properties", "library", "api",
                    "methods", "path", "paths", "name", "names", "tag", "tags", "it"}
_ARTICLES = {"the", "a", "an"}
_TIME_WORDS = set(dates.MONTH_NUMBER) | {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                                          "today", "tomorrow", "yesterday", "tonight", "morning", "afternoon", "evening",
                                          "night", "noon", "midnight", "week", "weekend", "month", "quarter", "year"}
# an object ending in one of these is a place in an editor, a git state or a capability, not a tool
_NOT_TOOLS = {"support", "compatibility", "branch", "window", "directory", "folder", "dir", "mode",
              "view", "page", "screen", "file", "line", "lines", "commit", "step", "section", "meeting", "call",
              "deadline", "position", "side", "top", "bottom", "left", "right", "end", "start", "beginning"}
# lowercase words that end like a participle or an adverb but are names of things
_NOT_VERBS = {"string", "strings", "thing", "things", "ring", "spring", "king", "ceiling", "bed", "red", "seed", "speed",
              "feed", "need", "shed", "bled", "embed", "sled", "supply", "apply", "family", "assembly", "fly",
              "anomaly", "italy", "july", "reply", "poly", "jelly", "lily", "rally", "tally", "ally", "belly",
              "rolling", "logging", "routing", "hosting", "caching", "testing", "linting", "monitoring",
              "tracing", "billing", "messaging", "pricing", "tooling", "typing", "tracking", "scheduling",
              "queueing", "queuing", "streaming", "indexing", "parsing", "rendering", "mapping", "packaging"}
# subjects that name nothing outside the conversation they were said in
_CONTEXTUAL = {"new", "current", "existing", "old", "above", "following", "previous", "same", "latter", "former",
               "updated", "original", "remaining", "resulting", "first", "second", "last", "next", "final"}
_GENERIC_SUBJECTS = {"code", "implementation", "function", "method", "file", "script", "test", "tests", "project",
                     "app", "application", "tool", "system", "approach", "solution", "fix", "change", "changes",
                     "structure", "component", "module", "class", "template", "library", "version", "page", "repo",
                     "repository", "codebase", "program", "feature", "workflow", "setup", "config",
                     "configuration", "service", "query", "site", "build", "output", "result", "example"}
# discourse markers a clause may start with, and adverbs between a subject and its verb
_LEADING = {"now", "so", "also", "and", "but", "currently", "nowadays", "actually", "ok", "okay", "yes", "well",
            "anyway", "btw", "fyi", "then", "finally", "since then", "these days", "at work", "at the moment",
            "right now", "as of now"}
_ADVERBS = {"now", "currently", "also", "still", "already", "actually", "mostly", "mainly", "primarily", "always",
            "usually", "really", "officially", "finally", "just", "all", "exclusively", "only", "intentionally",
            "generally", "typically", "recently", "eventually", "completely", "fully", "gradually", "even",
            "definitely", "strongly", "much", "personally"}
_ATOM = "\x01"  # inline code is replaced by \x01<n>\x01 while a sentence is analysed
_DATE = "\x02"  # and its date phrase by this mark, which ends a name
_WORD = re.compile(rf"{_ATOM}\d+{_ATOM}|\w+(?:[.'\-/+#]+\w+)*[+#]*(?:\(\))?|[^\w\s]")
_GOOD_ATOM = re.compile(r"[\w.+#@/:\-]+|<\w[\w-]*>")
# a code identifier, not an entity: a call, a private or member name, an attribute path,
# a lowerCamelCase function ("applyFilters()", "_preprocess_content_node",
# "self._store", "navigator.mediaDevices", "getUserMedia"); a file name is an entity
_CODE_NAME = re.compile(r"\(\)$|^_|^(?:self|this|cls)\.|^[a-z_]\w*(?:\.[a-z_]\w*)+$|^[a-z]+(?:[A-Z][a-z0-9]+)+$")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text)


def _is_word(token: str) -> bool:
    return token.startswith(_ATOM) or token[0].isalnum() or token[0] == "_"


def _name(words: list[str], atoms: list[str], *, role: str) -> str | None:
    """A short noun phrase as it will be stored, or None when these words are not one."""
    words = list(words)
    while words and words[0].lower() in _ARTICLES:
        words.pop(0)
    if not words or len(words) > MAX_WORDS:
        return None
    if not all(_is_word(w) for w in words) or any("/" in w and "." in w for w in words):
        return None  # punctuation inside, or a path
    if any(_is_code(atoms[int(w.strip(_ATOM))] if w.startswith(_ATOM) else w) for w in words):
        return None  # "_preprocess_content_node", "applyFilters()": code, not a thing people talk about
    lowered = [w.lower() for w in words]
    if any(w in _NOT_IN_NAME for w in lowered) or lowered[0] in ("of", "for") or lowered[-1] in ("of", "for"):
        return None
    if any(w.endswith(("'re", "'ve", "'ll", "'d", "'m", "n't")) for w in lowered):
        return None
    if role == "object":
        if any(w.endswith("'s") for w in lowered[:-1]):
            return None  # "BeautifulSoup's blockquote content": a part of something, described
        if lowered[0] in _NOT_FIRST_IN_OBJECT or (len(words) == 1 and lowered[0] in _GENERIC_OBJECTS):
            return None
        if any(w in ("of", "for") for w in lowered):
            return None
        if any(w.isalpha() and w == word and w.endswith(("ing", "ly")) and w not in _NOT_VERBS
               for w, word in zip(lowered, words)):
            return None  # "prefers working remotely": a clause, not a thing
        if any(w in _TIME_WORDS or w.removesuffix("s") in _TIME_WORDS for w in lowered):
            return None  # "moved the meeting from Monday to Tuesday": a reschedule, not a tool
        if lowered[-1] in _NOT_TOOLS or (
            lowered[-1].endswith("ed") and lowered[-1] == words[-1] and lowered[-1] not in _NOT_VERBS
        ):
            return None  # "dropped Python 2 support", "switched to dark mode"; "uses Postgres 16 released (on …)"
    shown: list[str] = []
    for word in words:
        if word.startswith(_ATOM):
            code = atoms[int(word.strip(_ATOM))]
            if len(code) > 40 or not _GOOD_ATOM.fullmatch(code):
                return None
            shown.append(code)
        else:
            shown.append(word)
    name = " ".join(shown).replace(" 's", "'s")
    if not names.entity_key(name) or not any(ch.isalpha() for ch in name):
        return None
    return name


def _is_code(word: str) -> bool:
    return not _FILE_NAME.fullmatch(word) and bool(_CODE_NAME.search(word))


def _subject(prefix: str, atoms: list[str], speaker: str) -> str | None:
    """The subject a clause prefix names (text from the clause start to the verb), or None."""
    segments = re.split(rf"([,;:{_DATE}]|\s[-—–](?=\s|$)|[—–])", prefix)
    words = _tokens(segments[-1])
    changed = True
    while changed and words:
        changed = False
        if not _is_word(words[0]) and words[0] != '"':
            words.pop(0)
            changed = True
            continue
        for size in (3, 2, 1):
            if len(words) >= size and " ".join(words[:size]).lower() in _LEADING:
                words = words[size:]
                changed = True
                break
    if len(words) > 2 and words[-1].lower() == "and" and (words[0] == "I" and speaker == "user" or words[0] in ("We", "we")):
        return USER  # "I have redirects in next.config.js and host on Vercel": the clause's subject
    while words and words[-1].lower() in _ADVERBS:
        words.pop()
    if words and words[-1].endswith("ly") and words[-1].islower():
        return None  # "Billing quietly uses …": an adverb this reader does not know
    if len(words) > 2 and words[0] == '"' and words[-1] == '"':  # a quoted name
        words = words[1:-1]
        if len(words) > 1 and not all(w[0].isupper() or w[0].isdigit() for w in words):
            return None  # "Outside diff range comments": a phrase quoted from somewhere, not a name
    if not words and len(segments) >= 3 and segments[-2].strip() in ("-", "—", "–", ":"):
        # a list item labelled with a file or identifier: "`recorder.js` - Now uses AudioWorklet"
        label = _tokens(segments[-3])
        if len(label) == 1 and label[0].startswith(_ATOM):
            words = label
    if not words:
        return None
    lowered = " ".join(words).lower()
    if lowered in ("we", "our team", "my team") or (lowered == "i" and speaker == "user"):
        return USER
    if lowered == "you" and speaker == "assistant":
        return USER
    while len(words) > 1 and words[0].lower() in _ARTICLES:
        words = words[1:]
    owner = words[0].lower()
    if owner in ("our",) or (owner == "my" and speaker == "user") or (owner == "your" and speaker == "assistant"):
        rest = _name(words[1:], atoms, role="subject")
        return f"{USER}'s {rest}" if rest else None
    first = words[0].lower()  # ("this"/"that" + noun refers to something said before: a pronoun, refused)
    if first in _CONTEXTUAL or (len(words) == 1 and first in _GENERIC_SUBJECTS):
        return None  # "the new structure", "the code": which one, outside this conversation?
    return _name(words, atoms, role="subject")


# a comma may end an object only before one of these (else it is a list or a run of adjectives)
_AFTER_COMMA = {"which", "and", "but", "so", "because", "since", "as", "while", "although", "though", "then",
                "where", "when", "who", "now", "too", "also", "we", "i", "it", "they", "he", "she", "you",
                "thanks", "mostly", "mainly", "especially", _DATE}
_OBJECT_STOP = _PREPOSITIONS | _CLAUSE | {"which", "that", "who", "whose", "where", "when", "instead", "rather",
                                           "anymore", "nowadays", "too", "now", "together", "exclusively",
                                           "because", "since", "there", "here", "again", "already", "well",
                                           # "… to Postgres this week", "… last night": a time, not the name
                                           "this", "these", "last", "next", "earlier"}
_CLAUSE_STARTS = _PRONOUNS | {"then", "now", "also", "so", "therefore", "thus", "it's", "that's", "there's"}


def _phrase(tokens: list[str], stops: set[str]) -> tuple[list[str], int]:
    """Words from the start up to the first stop word or punctuation: (words, index of the stop)."""
    for i, token in enumerate(tokens):
        if token == _DATE or not _is_word(token) or token.lower() in stops:
            return tokens[:i], i
    return tokens, len(tokens)


def _objects(rest: str, atoms: list[str], *, stops: set[str] = _OBJECT_STOP, named: bool = False) -> list[str]:
    """The object(s) right after a verb: one noun phrase, or two joined by "and"; [] when unsure."""
    tokens = _tokens(rest)
    words, stop = _phrase(tokens, stops)
    first = _name(words, atoms, role="object")
    if first is None or (named and not _named(words)):
        return []
    found = [first]
    after = tokens[stop:]
    if after and after[0] == ",":
        if len(after) > 1 and after[1].lower() not in _AFTER_COMMA:
            return []  # "modern, non-deprecated Web Audio API", "A, B and C"
    elif after and after[0].lower() == "and":
        more, stop2 = _phrase(after[1:], stops)
        second = _name(more, atoms, role="object")
        if second is not None and not (named and not _named(more)) and not (
            len(after) > stop2 + 1 and after[stop2 + 1] == "," and len(after) > stop2 + 2
            and after[stop2 + 2].lower() not in _AFTER_COMMA
        ):
            found.append(second)
        elif not (len(after) > 1 and after[1].lower() in _CLAUSE_STARTS):
            return []  # "A and love it": not sure where the object ends
    elif after and after[0].lower() in ("of", "or", "nor", "than"):
        return []  # "version 3 of Django", "X or Y", "more X than Y": not a plain object
    elif after and after[0] in ("'", '"', "/", "&", "+", "=", "<", ">"):
        return []
    return found


def _named(words: list[str]) -> bool:
    """A name rather than a description: capitalised, a number, or `code`."""
    words = [w for w in words if w.lower() not in _ARTICLES]
    return bool(words) and (words[0].startswith(_ATOM) or words[0][0].isupper() or words[0][0].isdigit())


# ------------------------------------------------------------------------------------ patterns

_HEDGES = re.compile(
    r"\b(?:could|would|should|might|must|will|shall|can|if|unless|whether|maybe|perhaps|probably|possibly|"
    r"likely|unlikely|consider|considering|suggest\w*|recommend\w*|propos\w*|plan|plans|planning|planned|"
    r"going to|gonna|want|wants|wanted|wish|hope|hoping|try|trying|tried|let's|let|lets|need|needs|imagine|"
    r"suppose|pretend|assume|assuming|option|alternatively|e\.g|for example|for instance|such as|"
    r"usually|sometimes|often|ever|whenever|every time|hypothetically|ideally|instead of using|"
    r"think|thinks|guess|believe|believes|apparently|supposedly|reportedly|allegedly|seemingly|heard|unsure)\b"
    r"|'ll\b|'d\b|\?",
    re.I,
)
_LOWER_MAY = re.compile(r"\bmay\b")  # the modal; "May" is also a month
_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without)\b|n't\b", re.I)

_ADV = r"(?:(?:now|currently|also|still|already|actually|mostly|mainly|primarily|always|really|officially|finally|" \
       r"just|recently|eventually|completely|fully|gradually|exclusively|only|intentionally|personally|" \
       r"generally|definitely|strongly|even)\s+)*"
_HAVE = r"(?:(?:\s+(?:have|has|had)|'ve|'s|'d)\s+)?"
_BE = r"(?:\s+(?:is|are|am)|'re|'m|'s)\s+"
_PERFECT = rf"(?:'ve|\s+have|\s+has)\s+{_ADV}"  # "I've …", "Dana has …"
_DONT = r"(?:do\s+not|does\s+not|don't|doesn't)"
_MOVE = r"(?P<verb>switched|moved|migrated|(?:finished|completed|done)\s+(?:migrating|moving|switching))(?:\s+over)?"

_ANYMORE = r"(?=.*\b(?:any\s?more|any\s+longer)\b)"
_RETRACT = [
    re.compile(rf"(?:{_BE})?\s*no\s+longer\s+{_ADV}(?:uses|use|using)\s+", re.I),
    re.compile(rf"\s+{_DONT}\s+{_ADV}use\s+{_ANYMORE}", re.I),
    re.compile(rf"{_HAVE}\s*{_ADV}(?:stopped|quit)\s+using\s+", re.I),
    re.compile(rf"{_HAVE}\s*{_ADV}(?P<drop>dropped|ditched)\s+", re.I),
]
_RETRACT_NEGATION = re.compile(rf"\bno\s+longer\b|\b{_DONT}\b{_ANYMORE}", re.I)
_SWITCH_FROM = re.compile(rf"(?P<passive>(?:\s+(?:was|were)|\s+(?:has|have)\s+been|'s\s+been)\s+)?{_HAVE}\s*{_ADV}{_MOVE}"
                          rf"(?P<thing>(?:\s+(?!from\b)\S+){{0,6}}?)\s+from\s+", re.I)
_SWITCH_TO = re.compile(rf"{_HAVE}\s*{_ADV}(?P<verb>switched|migrated)(?:\s+over)?\s+to\s+", re.I)
_REPLACE = re.compile(rf"{_HAVE}\s*{_ADV}(?:replaced)\s+", re.I)
_FAVOUR = re.compile(rf"{_HAVE}\s*{_ADV}(?:dropped|ditched|replaced|abandoned)\s+(?=.*\bin\s+favou?r\s+of\b)", re.I)
# "moved off A and onto B": a switch
_MOVE_OFF = re.compile(rf"{_HAVE}\s*{_ADV}(?:moved|migrated|switched)\s+off\s+(?:of\s+)?", re.I)
_ONTO = r"\s+(?:and\s+)?(?:onto|on\s+to|to)\s+"
# "X is backed by Y", "X runs on Y": what X is built on, a name
_BACKED = re.compile(rf"(?:{_BE}{_ADV}(?:(?:backed|powered)\s+by|built\s+(?:with|on|using))|\s+{_ADV}runs\s+on"
                     r"(?:\s+top\s+of)?)\s+", re.I)
# who leads a team: "Priya runs the payments team", "Elena took over the platform team from Felix"
_LEADS = re.compile(rf"\s+{_ADV}(?:runs|leads|heads|manages|took\s+over|has\s+taken\s+over)\s+", re.I)
_TEAM_WORDS = {"team", "group", "squad", "org", "organisation", "organization", "department", "division", "unit"}
# where someone lives: "Priya lives in Berlin", "Dana is based in Toronto"
_LIVES = re.compile(rf"(?P<verb>\s+{_ADV}(?:lives|live)|{_BE}{_ADV}(?:living|based)|{_PERFECT}"
                    r"(?:been\s+)?(?:living|lived|based))\s+in\s+", re.I)
_IS_NOW = re.compile(r"(?:\s+is|'s)\s+now\s+", re.I)
_PREFERS = re.compile(rf"\s+{_ADV}(?:prefers|prefer)\s+", re.I)
_USES = re.compile(rf"(?:\s+{_ADV}(?:uses|use)|{_BE}{_ADV}using|{_HAVE}\s*been\s+{_ADV}using|"
                   rf"{_HAVE}\s*{_ADV}(?:started|began)\s+using)\s+", re.I)


# ----------------------------------------------------------- what people say about themselves

# The last word (or two) of what someone works as: "I'm a nurse", "Dana is a senior backend engineer".
_OCCUPATIONS = frozenset(
    "nurse teacher doctor physician surgeon dentist pharmacist paramedic midwife therapist psychologist "
    "psychiatrist engineer developer programmer designer architect scientist researcher analyst accountant lawyer "
    "solicitor barrister consultant manager director founder cofounder co-founder cto ceo cfo coo vp sre devops "
    "student intern freelancer contractor writer journalist editor translator librarian professor lecturer "
    "tutor chef cook baker barista waiter pilot electrician plumber carpenter mechanic technician firefighter "
    "farmer musician artist photographer illustrator animator actor recruiter administrator admin officer "
    "veterinarian vet nanny caregiver carer cleaner driver salesperson marketer economist statistician "
    "mathematician physicist chemist biologist geologist copywriter strategist coach trainer".split())
# What "my X", "our X", "the team's X" may be, naming someone or something by its role:
# "my manager is Dana", "Postgres is our database", "our CI is GitHub Actions". A person's
# role is held by a person's name.
_PERSON_ROLES = _OCCUPATIONS | frozenset(
    "boss lead supervisor mentor mentee manager landlord partner wife husband girlfriend boyfriend fiance fiancee "
    "son daughter brother sister mother father mom mum dad".split())
_ROLES = _PERSON_ROLES | frozenset(
    "database datastore db cache queue broker ci cd cloud provider host hosting cdn registrar backend frontend "
    "framework language stack orm editor ide os shell terminal bundler linter formatter runner tracker "
    "monitoring vcs branch repo repository email bank employer team".split())
_ROLE_MODIFIERS = {"new", "current"}  # dropped: "my new manager" is my manager, from now on
# "I moved to Lisbon", "I've relocated from Oslo to Bergen": a home
_MOVED_HOME = re.compile(rf"{_HAVE}\s*{_ADV}(?:moved|relocated)\s+(?:back\s+)?(?:from\s+(?P<old>.+?)\s+)?to\s+", re.I)
# where someone works: "I work at Acme", "Dana has worked for Globex", "I started at Hooli", "I joined
# Initech as a designer" (a bare "I joined Slack" may be an app or a channel: not read)
_WORKS_AT = re.compile(rf"(?P<verb>\s+{_ADV}(?:works|work)|{_BE}{_ADV}working|{_PERFECT}"
                       rf"(?:been\s+)?(?:worked|working))\s+(?:at|for)\s+|{_HAVE}\s*{_ADV}(?:(?P<joined>joined)|"
                       r"started\s+at)\s+", re.I)
_LEFT_JOINED = re.compile(rf"{_HAVE}\s*{_ADV}left\s+(?P<old>.+?)\s+(?:and|to)\s+(?:joined|join)\s+", re.I)
_WORK_RETRACT = re.compile(rf"\s+(?:no\s+longer|{_DONT})\s+{_ADV}(?:work|works)\s+(?:at|for)\s+", re.I)
# what someone works as: "I'm a nurse", "I work as a designer", "I became a teacher", "I've been a chef"
_WORKS_AS = re.compile(rf"(?:{_BE}{_ADV}|\s+{_ADV}(?:works|work)\s+as\s+|{_PERFECT}been\s+|"
                       rf"\s+{_ADV}became\s+)an?\s+", re.I)
_REPORTS_TO = re.compile(rf"\s+{_ADV}(?:report|reports)\s+(?:directly\s+)?to\s+", re.I)
_BECAME = re.compile(rf"\s+{_ADV}became\s+", re.I)
_HIRED = re.compile(rf"{_HAVE}\s*{_ADV}hired\s+", re.I)
_MY_NAME = re.compile(r"\bmy\s+name\s+is\s+", re.I)
_FROM = re.compile(rf"(?:{_BE}|\s+{_ADV}(?:come|comes)\s+)(?:originally\s+)?from\s+", re.I)
# where something runs: "we host on Vercel", "the site is hosted on Netlify", "we deploy it to Fly.io"
_HOSTED = re.compile(rf"(?:{_BE}{_ADV}(?:hosted|deployed)|\s+{_ADV}(?P<verb>host|hosts|deploy|deploys)"
                     r"(?:\s+(?:it|everything|them|this|that))?)\s+(?:on|to|at|with)\s+", re.I)
_IS = re.compile(rf"{_BE}{_ADV}", re.I)
_POSSESSIVES = {"my", "our", "your"}
# a list item labelled with a file or code name, and what it says: "cli.py - Click-based CLI interface"
_LABELLED = re.compile(rf"^(?P<label>{_ATOM}\d+{_ATOM}|{_FILE_NAME.pattern})\s*(?:[-—–]|:)\s+", re.I)
_BASED = re.compile(rf"(?:^|\s)(?P<name>{_ATOM}\d+{_ATOM}|[A-Z][\w.+#]*)-based\b")
_BUILT_WITH = re.compile(r"\bbuilt\s+(?:with|on|using)\s+", re.I)
_GENERIC_TAIL = {"framework", "library", "lib", "package", "module", "toolkit", "engine"}


# The words a pattern cannot match without: a sentence lacking them skips the pattern's
# regular expression (the costly part of reading a sentence).
_NEEDS: dict[re.Pattern[str], frozenset[str]] = {pattern: frozenset(words.split()) for pattern, words in [
    (_FAVOUR, "dropped ditched replaced abandoned"), (_REPLACE, "replaced"), (_MOVE_OFF, "moved migrated switched"),
    (_RETRACT[0], "longer"), (_RETRACT[1], "anymore any"), (_RETRACT[2], "stopped quit"),
    (_RETRACT[3], "dropped ditched"), (_WORK_RETRACT, "work works"),
    (_SWITCH_FROM, "switched moved migrated migrating moving switching"), (_SWITCH_TO, "switched migrated"),
    (_BACKED, "backed powered built runs"), (_LEADS, "runs leads heads manages took taken"),
    (_LIVES, "lives live living based lived"), (_IS_NOW, "now"), (_PREFERS, "prefers prefer"),
    (_USES, "uses use using"), (_MOVED_HOME, "moved relocated"), (_LEFT_JOINED, "left"),
    (_WORKS_AT, "work works working worked joined started"), (_WORKS_AS, "a an"), (_HIRED, "hired"),
    (_IS, "is s m re are am"), (_BECAME, "became"), (_REPORTS_TO, "report reports"), (_FROM, "from"),
    (_HOSTED, "host hosts hosted deploy deploys deployed"),
]}
_LOWER_WORDS = re.compile(r"[a-z]+")


def _finder(sentence: str) -> Callable[[re.Pattern[str]], Iterable[re.Match[str]]]:
    """``pattern.finditer(sentence)``, or nothing at once when the sentence lacks a word the pattern needs."""
    words = set(_LOWER_WORDS.findall(sentence.lower()))

    def find(pattern: re.Pattern[str]) -> Iterable[re.Match[str]]:
        return pattern.finditer(sentence) if words & _NEEDS[pattern] else ()

    return find


@dataclass(frozen=True)
class _Said:
    subject: str
    predicate: str
    object: str
    cardinality: Cardinality
    ends: bool = False  # a retraction: the date is when it stopped


def _switch(subject: str, old: str, new: list[str]) -> list[_Said]:
    """From A to B: B is used from the date on, A ends then."""
    return [_Said(subject, "uses", n, "many") for n in new] + [_Said(subject, "uses", old, "many", ends=True)]


def _read(sentence: str, atoms: list[str], speaker: str) -> tuple[str, list[_Said]] | None:
    """(pattern name, what the sentence says), or None. ``sentence`` has code atoms and the date marker."""
    retract_stripped = _RETRACT_NEGATION.sub(" ", sentence)
    if _HEDGES.search(sentence) or _LOWER_MAY.search(sentence):
        return None

    find = _finder(sentence)

    def subject_before(match: re.Match, text: str = sentence) -> str | None:
        return _subject(text[:match.start()], atoms, speaker)

    def each_object(pattern: re.Pattern[str], predicate: str) -> list[_Said]:
        """(subject, predicate, object) per object of the first match with a subject before and objects after."""
        for match in find(pattern):
            subject = subject_before(match)
            if subject is None:
                continue
            objects = _objects(sentence[match.end():], atoms)
            if objects:
                return [_Said(subject, predicate, o, "many") for o in objects]
        return []

    # "X dropped A in favour of B", "X replaced A with B", "X moved off A and onto B": a switch
    for pattern, joiner in ((_FAVOUR, r"\s+in\s+favou?r\s+of\s+"), (_REPLACE, r"\s+with\s+"), (_MOVE_OFF, _ONTO)):
        if _NEGATION.search(sentence):
            break
        for match in find(pattern):
            subject = subject_before(match)
            rest = sentence[match.end():]
            split = re.search(joiner, rest, re.I)
            if subject is None or split is None:
                continue
            old = _objects(rest[:split.start()] + " .", atoms, named=True)
            new = _objects(rest[split.end():], atoms, named=True)
            if len(old) == 1 and new:
                return "switch", _switch(subject, old[0], new)
    # retractions: the only negation allowed is the pattern's own
    if not _NEGATION.search(retract_stripped):
        for pattern in _RETRACT:
            for match in find(pattern):
                subject = subject_before(match)
                if subject is None:
                    continue
                named = bool(match.groupdict().get("drop"))
                objects = _objects(sentence[match.end():], atoms, named=named)
                if objects:
                    return "retract", [_Said(subject, "uses", o, "many", True) for o in objects]
        for match in find(_WORK_RETRACT):
            subject = subject_before(match)
            employer = _objects(sentence[match.end():], atoms, named=True)
            if _person(subject) and len(employer) == 1:
                return "left", [_Said(subject, "works at", employer[0], "one", True)]
    if _NEGATION.search(sentence):
        return None
    if found := _personal(sentence, atoms, speaker, find):
        return found
    for match in find(_SWITCH_FROM):
        before = subject_before(match)
        thing_words = _tokens(match.group("thing"))
        rest = sentence[match.end():]
        to = re.search(r"\s+to\s+", rest, re.I)
        if to is None:
            continue
        if match.group("passive"):
            if thing_words:
                continue
            subject = before
        elif thing_words:
            agent = sentence[:match.start()]
            agent_words = [w.lower() for w in _tokens(re.split(rf"[,:;{_DATE}]", agent)[-1])]
            if before is None and agent_words[-1:] not in (["i"], ["we"], ["you"], ["they"], ["team"]):
                continue
            subject = _name(thing_words, atoms, role="subject") if thing_words[0].lower() not in ("my", "our") \
                else _subject(match.group("thing"), atoms, speaker)
        else:
            if match.group("verb").lower().endswith(("moved", "moving")) and \
                    _tokens(sentence[:match.start()])[-1:] in (["I"], ["i"]):
                continue  # "I moved from Oslo to Bergen" is a home, not a tool
            subject = before
        if subject is None:
            continue
        named = match.group("verb").lower().endswith(("moved", "moving"))  # "moved the logo from the header to …"
        old = _objects(rest[:to.start()] + " .", atoms, named=named)
        new = _objects(rest[to.end():], atoms, named=named)
        if len(old) == 1 and new:
            return "switch", _switch(subject, old[0], new)
    if said := each_object(_SWITCH_TO, "uses"):
        return "switch_to", said
    for match in find(_BACKED):
        subject = subject_before(match)
        objects = _objects(sentence[match.end():], atoms, named=True) if subject is not None else []
        if subject is not None and objects:
            return "backed_by", [_Said(subject, "uses", o, "many") for o in objects]
    for match in find(_LEADS):
        leader = subject_before(match)
        rest = sentence[match.end():]
        team = _objects(rest, atoms)
        if leader is None or leader == USER or not _named(_tokens(leader)) or len(team) != 1 \
                or team[0].split()[-1].lower() not in _TEAM_WORDS:
            continue
        return "leads", [_Said(team[0], "led by", leader, "one")]
    for match in find(_LIVES):
        subject = subject_before(match)
        objects = _objects(sentence[match.end():], atoms, named=True) if subject is not None else []
        if match.group("verb").split()[-1].lower() == "live" and subject != USER:
            continue  # "teams live in Slack": a generalisation
        if subject is not None and len(objects) == 1 and (subject == USER or _named(_tokens(subject))):
            return "lives_in", [_Said(subject, "lives in", objects[0], "one")]
    for match in find(_IS_NOW):
        subject = subject_before(match)
        if subject is None or subject == USER:
            continue
        objects = _objects(sentence[match.end():], atoms, named=True)
        if len(objects) == 1:
            return "is_now", [_Said(subject, "is", objects[0], "one")]
    if said := each_object(_PREFERS, "prefers"):
        return "prefers", said
    for match in find(_USES):
        verb = match.group(0).split()[-1].lower() if match.group(0).split() else ""
        subject = subject_before(match)
        if subject is None:
            continue
        if verb == "use" and not subject.startswith(USER):
            continue  # "teams use X" after a plain noun is a generalisation, not a fact
        rest = sentence[match.end():]
        objects = _objects(rest, atoms)
        if not objects:
            continue
        said = [_Said(subject, "uses", o, "many") for o in objects]
        # "X now uses A instead of B": a change, B is no longer used
        instead = re.match(r"(.*?)\s+instead\s+of\s+(.*)$", rest, re.I)
        if instead and re.search(r"\bnow\b", match.group(0), re.I) and len(objects) == 1:
            old = _objects(instead.group(2), atoms)
            if len(old) == 1 and _objects(instead.group(1) + " .", atoms) == objects:
                return "switch", _switch(subject, old[0], objects)
        return "uses", said
    return None


def _person(subject: str | None) -> TypeGuard[str]:
    """The user, or what may be a person's name: one to three capitalised words."""
    if subject == USER:
        return True
    words = subject.split() if subject else []
    return 0 < len(words) <= 3 and all(w[0].isupper() and w.replace("-", "").replace("'", "").isalpha() for w in words)


def _role(words: list[str]) -> str | None:
    """The role that words name, as a predicate ("new manager" -> "manager", "main database",
    "CI"), or None when they name no role memctl knows."""
    words = [w for w in words if w.lower() not in _ROLE_MODIFIERS]
    if not 1 <= len(words) <= 3 or not all(w.replace("-", "").replace("/", "").isalpha() for w in words):
        return None
    if words[-1].lower() not in _ROLES:
        return None
    return " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in words)


def _owner(word: str, speaker: str) -> str | None:
    """Who "my", "our" or "your" is: the user when the speaker says so of them, else nobody."""
    word = word.lower()
    if word == "our" or (word == "my" and speaker == "user") or (word == "your" and speaker == "assistant"):
        return USER
    return None


def _holder(value: str | None, role: str) -> str | None:
    """``value`` (a name) if it may hold the role: a person's name for a person's role, else any name."""
    if value is None or value == USER or (role.split()[-1] in _PERSON_ROLES and not _person(value)):
        return None
    return value


def _only(rest: str, atoms: list[str]) -> str | None:
    """The one name right after a verb ("Postgres 16"), or None: none, or a list ("Python and Go")."""
    found = _objects(rest, atoms, named=True)
    return found[0] if len(found) == 1 else None


def _job(tokens: list[str]) -> tuple[str, int] | None:
    """(what someone works as, tokens it takes) at the start of ``tokens``: "senior backend engineer"."""
    words, stop = _phrase(tokens, _OBJECT_STOP)
    if not 1 <= len(words) <= 4 or not all(w.replace("-", "").isalpha() for w in words):
        return None
    if words[-1].lower() not in _OCCUPATIONS or any(w.lower() in _NOT_IN_NAME for w in words):
        return None
    return " ".join(w if w[0].isupper() and w.lower() not in _OCCUPATIONS else w.lower() for w in words), stop


def _employer_after(tokens: list[str], subject: str, atoms: list[str]) -> list[_Said]:
    """ "… at Acme" or "… for Acme" right after a job: where the subject works too."""
    if len(tokens) > 1 and tokens[0].lower() in ("at", "for"):
        employer = _objects(" ".join(tokens[1:]), atoms, named=True)
        if len(employer) == 1 and employer[0].split()[-1].lower() not in _TEAM_WORDS:
            return [_Said(subject, "works at", employer[0], "one")]
    return []


def _personal(sentence: str, atoms: list[str], speaker: str,
              find: Callable[[re.Pattern[str]], Iterable[re.Match[str]]]) -> tuple[str, list[_Said]] | None:
    """What a sentence says about people and teams: homes, employers, jobs, roles, hires,
    names, origins, where things are hosted; and what a labelled item is built with."""
    def subject_before(match: re.Match) -> str | None:
        return _subject(sentence[:match.start()], atoms, speaker)

    def one(rest: str) -> str | None:
        """The one place or organisation named next, capitalised ("9am" and a team are neither)."""
        found = _only(rest, atoms)
        return found if found and found[0].isupper() and found.split()[-1].lower() not in _TEAM_WORDS else None

    for match in find(_MOVED_HOME):
        before = _tokens(sentence[:match.start()])
        place = one(sentence[match.end():])
        if before[-1:] == ["I"] and subject_before(match) == USER and place:
            return "moved_home", [_Said(USER, "lives in", place, "one")]
    for match in find(_LEFT_JOINED):
        old, new = one(match.group("old") + " ."), one(sentence[match.end():])
        subject = subject_before(match)
        if _person(subject) and old and new:
            return "changed_job", [_Said(subject, "works at", new, "one"), _Said(subject, "works at", old, "one", True)]
    for match in find(_WORKS_AT):
        subject = subject_before(match)
        verb = (match.group("verb") or "").split()
        if not _person(subject) or (verb[-1:] == ["work"] and subject != USER):
            continue
        rest = sentence[match.end():]
        if employer := one(rest):
            said = [_Said(subject, "works at", employer, "one")]
            after = _tokens(rest)[len(_tokens(employer)):]
            if after[:1] == ["as"] and (job := _job(after[2:] if after[1:2] in (["a"], ["an"]) else after[1:])):
                said.append(_Said(subject, "works as", job[0], "one"))
            elif match.group("joined"):
                continue
            return "works_at", said
    for match in find(_WORKS_AS):
        subject = subject_before(match)
        tokens = _tokens(sentence[match.end():])
        if _person(subject) and (job := _job(tokens)):
            return "works_as", [_Said(subject, "works as", job[0], "one"), *_employer_after(tokens[job[1]:], subject, atoms)]
    for match in find(_HIRED):
        subject = subject_before(match)
        rest = sentence[match.end():]
        hired = [name for name in _objects(rest, atoms, named=True) if _person(name) and name != USER]
        if subject is None or not hired:
            continue
        said = [_Said(subject, "hired", name, "many") for name in hired]
        # "we hired Aisha as our new designer": the team's designer too
        role_after = re.match(r"\s*\S+(?:\s+\S+){0,2}?\s+as\s+(\w+)\s+(.*)$", rest) if len(hired) == 1 else None
        if role_after and (owner := _owner(role_after.group(1), speaker)):
            role_words, _ = _phrase(_tokens(role_after.group(2)), _OBJECT_STOP)
            if role := _role(role_words):
                said.append(_Said(owner, role, hired[0], "one"))
        return "hired", said
    for match in find(_IS):
        # "my manager is Dana", "our main database is Postgres", "the experiment's integration branch is master"
        segment = re.split(rf"[,;:{_DATE}]|\s[-—–]\s", sentence[:match.start()])[-1]
        words = [w for w in _tokens(segment) if w.lower() not in _ARTICLES]
        if "of" in words[1:4]:  # "the main branch of the experiment is master": the experiment's main branch
            of = words.index("of")
            words = [*words[of + 1:-1], words[-1] + "'s", *words[:of]] if of + 1 < len(words) else []
        for at, word in enumerate(words[:3]):
            owner = _owner(word, speaker) if word.lower() in _POSSESSIVES else (
                _subject(" ".join(words[:at] + [word[:-2]]), atoms, speaker) if word.lower().endswith("'s") else None)
            role = _role(words[at + 1:]) if owner else None
            if owner and role:
                if holder := _holder(_only(sentence[match.end():], atoms), role):
                    return "role", [_Said(owner, role, holder, "one")]
                break
    for pattern in (_IS, _BECAME):
        # "Dana is my manager", "Postgres is our database", "Priya became my mentor"
        for match in find(pattern):
            tokens = [w for w in _tokens(sentence[match.end():]) if w.lower() not in _ARTICLES]
            if not tokens or tokens[0].lower() not in _POSSESSIVES or not (owner := _owner(tokens[0], speaker)):
                continue
            role_words, stop = _phrase(tokens[1:], _OBJECT_STOP)
            if (role := _role(role_words)) is None or tokens[stop + 1:stop + 2] in (["and"], ["or"]):
                continue  # no role; "Dana is my manager and mentor"
            prefix = sentence[:match.start()]
            if not _named(_tokens(re.split(rf"[,;:{_DATE}]|\s[-—–]\s", prefix)[-1])):
                continue  # "the team is our priority": a description, not a name
            if holder := _holder(_subject(prefix, atoms, speaker), role):
                return "role", [_Said(owner, role, holder, "one")]
    for match in find(_REPORTS_TO):
        subject = subject_before(match)
        if _person(subject) and (manager := _holder(_only(sentence[match.end():], atoms), "manager")):
            return "role", [_Said(subject, "manager", manager, "one")]
    if speaker == "user" and (said_name := _MY_NAME.search(sentence)):
        if name := _holder(_only(sentence[said_name.end():], atoms), "partner"):
            return "name", [_Said(USER, "name", name, "one")]  # a person's name, as a partner's is
    for match in find(_FROM):
        # only the user's own origin: "Data is from Postgres" starts with a capital too
        if subject_before(match) == USER and (place := one(sentence[match.end():])):
            return "from", [_Said(USER, "from", place, "one")]
    for match in find(_HOSTED):
        subject = subject_before(match)
        if subject is None or (match.group("verb") in ("host", "deploy") and subject != USER):
            continue
        if host := one(sentence[match.end():]):
            return "hosted_on", [_Said(subject, "hosted on", host, "many")]
    if labelled := _LABELLED.match(sentence):
        # "cli.py - Click-based CLI interface", "tui.py - Interactive TUI built with Textual framework"
        label = _name(_tokens(labelled.group("label")), atoms, role="subject")
        rest = sentence[labelled.end():]
        based, built = _BASED.search(rest), _BUILT_WITH.search(rest)
        tool = _name([based.group("name")], atoms, role="object") if based else None
        if built and tool is None:
            words, _ = _phrase(_tokens(rest[built.end():]), _OBJECT_STOP)
            while len(words) > 1 and words[-1].lower() in _GENERIC_TAIL:
                words = words[:-1]
            tool = _name(words, atoms, role="object") if words and _named(words) else None
        if label and tool:
            return "built_with", [_Said(label, "uses", tool, "many")]
    return None


_CLAUSE_BREAK = re.compile(r",\s+(?:so|but|and)\s+|;\s+", re.I)


def _prepare(sentence: str) -> tuple[str, list[str]]:
    """The sentence with inline code replaced by atoms, and the atoms' text."""
    atoms: list[str] = []
    sentence = sentence.replace(_ATOM, " ").replace(_DATE, " ")  # the marks are ours alone

    def atom(match: re.Match) -> str:
        atoms.append(match.group(1).strip())
        return f"{_ATOM}{len(atoms) - 1}{_ATOM}"

    return _INLINE_CODE.sub(atom, sentence), atoms


class _Dated(TypedDict, total=False):
    """An ``Assertion``'s date arguments: its start, or for a retraction (no start) only its end."""

    valid_at: Required[str | None]
    valid_at_evidence: Evidence
    valid_at_precision: Precision
    invalid_at: str
    invalid_at_evidence: Evidence
    invalid_at_precision: Precision


def extract_text(text: str, reference_time: str, extracted_at: str) -> list[Assertion]:
    """Every assertion the rules find in an episode's text, in sentence order, without
    duplicates: one said twice stands where it was said last ("A, then B, then A again"
    at one instant is A: the last said wins there, ``resolve.last_said_at_each_instant``)."""
    reference = times.parse_instant(reference_time, what="reference time").at
    reference_stored = times.to_storage(reference)
    found: dict[tuple, Assertion] = {}
    for _speaker, fact, _kind, said, date in _matches(text, reference):
        when = date.at if date else reference_stored
        evidence: Evidence = date.evidence if date else "reference"
        precision: Precision = date.precision if date else "instant"
        for item in said:
            dated: _Dated = (
                {"valid_at": None, "invalid_at": when, "invalid_at_evidence": evidence, "invalid_at_precision": precision}
                if item.ends else {"valid_at": when, "valid_at_evidence": evidence, "valid_at_precision": precision}
            )
            try:
                assertion = Assertion(subject=item.subject, predicate=item.predicate, object=item.object, fact=fact,
                                      date_span=date.span if date else None, cardinality=item.cardinality,
                                      extractor=NAME, extracted_at=extracted_at, **dated)
            except InvalidAssertion:
                continue
            key = (names.entity_key(assertion.subject), assertion.predicate, names.entity_key(assertion.object),
                   assertion.valid_at, assertion.invalid_at)
            found.pop(key, None)
            found[key] = assertion
    return list(found.values())


# a parenthetical aside: left out of its sentence ("switched from SSH (git@…) to HTTPS"), and
# read as a sentence of its own when it is one ("(main branch of the experiment is `master`)")
_ASIDE = re.compile(r"\s+\(([^()]*)\)")
ASIDE_WORDS = 4
# a contrast at the end says what the fact is not: "We use Neovim, not Vim."
_CONTRAST = re.compile(rf",\s+not\s+(?:{_ATOM}\d+{_ATOM}|[\w.\-]+(?:\s+[\w.\-]+){{0,2}})\s*(?=[.!]?$)", re.I)


# A pattern's own words (``_NEEDS``), and the pairs the roles and jobs are said with ("is" and
# "my"/"our"/"'s"/"of"; "is" and "a"): a sentence, or a whole paragraph, without any is passed
# over before its dates and names are looked at (most of a log's sentences, and most of the time).
_CUES = frozenset().union(*_NEEDS.values(), {"name"}) - {"is", "s", "m", "re", "are", "am", "a", "an"}
_TO_BE = frozenset({"is", "s", "m", "re", "are", "am", "been", "became", "as"})
_OWNED = frozenset({"my", "our", "your", "s", "of", "a", "an"})


def _worth_reading(text: str) -> bool:
    """Whether ``text`` has a word some pattern needs: cheap, and never false when one may match."""
    words = set(_LOWER_WORDS.findall(text.lower()))
    return bool(words & _CUES or (words & _TO_BE and words & _OWNED)) or "-based" in text


def _matches(text: str, reference: datetime) -> Iterator[tuple[str, str, str, list[_Said], Stated | None]]:
    """(speaker, fact sentence, pattern, what it says, its date) for every sentence that says something."""
    for speaker, raw in sentences(text, _worth_reading):
        if len(raw) > MAX_SENTENCE or raw.endswith("?") or not _worth_reading(raw):
            continue
        asides = [aside for aside in _ASIDE.findall(raw) if len(aside.split()) >= ASIDE_WORDS]
        for part in (raw, *asides):
            if (read := _read_sentence(part, speaker, reference)) is not None:
                kind, said, date = read
                yield speaker, _INLINE_CODE.sub(r"\1", part), kind, said, date


def _read_sentence(raw: str, speaker: str, reference: datetime) -> tuple[str, list[_Said], Stated | None] | None:
    """What one sentence says (pattern, assertions, date), or None."""
    coded, atoms = _prepare(raw)
    try:
        date = stated_date(coded, reference)
    except _NoDate:
        return None
    if date is not None:
        coded = f"{coded[:date.start]} {_DATE} {coded[date.end:]}"
    coded = _CONTRAST.sub("", re.sub(r"\s+", " ", _ASIDE.sub("", coded)).strip())
    found = _read(coded, atoms, speaker)
    if found is None and (first := _CLAUSE_BREAK.split(coded, maxsplit=1)[0]) != coded:
        # "Felix runs the platform team, so the summary should go to them": a hedge in
        # a later clause does not reach back into the first, nor does its date
        found = _read(first, atoms, speaker)
        date = date if date is None or _DATE in first else None
    return None if found is None else (*found, date)
