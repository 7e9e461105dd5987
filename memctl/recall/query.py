"""A question as people type it, made into what the text indexes can match.

Pure: no I/O. Words are what SQLite's unicode61 tokenizer would see (runs of letters and
digits), so nothing the user types can reach FTS5's own syntax (``"``, ``*``, ``NEAR(``,
``-``, ``AND``): every term goes to the index quoted. English stop words do not match on
their own ("which test framework do we use" must not find every text with "we"), and a
question of nothing else is refused unless quoted. ``"Quoted phrases"`` match as phrases.
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

from memctl.errors import BadInput

_WORD = re.compile(r"\w+", re.UNICODE)
_PHRASE = re.compile(r'"([^"]*)"')
# A pasted page is not a question: the first this many distinct terms and phrases count.
MAX_TERMS = 32
MAX_PHRASE_WORDS = 16
# How many words an entity's name may have, to be found in the question.
MAX_NAME_WORDS = 4
# The present, which every question is asked in unless a window says otherwise.
PRESENT_WORDS = frozenset({"now", "currently", "nowadays", "presently", "anymore"})
# The words that make a time one end of a window ("since March"): the window's, not words to
# search, in a question asked with one. ("before", "after" and "from" are stop words.)
TIME_BOUND_WORDS = frozenset({"since", "until", "till"})
# "which database", "what kind of framework": the words after these name what is asked for.
ASKING_WORDS = frozenset({"which", "what", "whichever", "whatever"})
KIND_OF_WORDS = frozenset({"kind", "kinds", "type", "types", "sort", "sorts"})
MAX_KIND_WORDS = 3
# Words that ask about what held before, or whether it still does: "does billing still
# use Redis?", "who led billing before Sam", "did we ever use Kafka". Facts that ended
# then rank by how well they match alone; otherwise what holds comes first among equals.
LOOKING_BACK_WORDS = frozenset({
    "still", "anymore", "before", "previously", "formerly", "originally", "earlier", "ever", "once", "used",
    "did", "was", "were", "had", "stopped", "dropped", "ended", "replaced", "former", "old", "past", "history",
    "happened",
})


# Words that ask for what held next to another value in its timeline: "what did billing
# use before Postgres" asks for what Postgres replaced, "who led billing after Dana" for
# who came next ("until Sam took over", "prior to Postgres", "since Dana left" too). The
# value is named in the few words that follow ("before we moved to Postgres"); a date
# there is the window's (``recall.when``), not a value.
BESIDE_WORDS = {"before": "before", "until": "before", "till": "before", "prior": "before",
                "after": "after", "since": "after"}
BESIDE_REACH = 6


@cache
def stop_words() -> frozenset[str]:
    """The English stop words of the ``stopwords`` package, and the pieces its
    contractions fall into once split into words ("don't" → "don", "t")."""
    from stopwords import get_stopwords

    listed = {word for word in get_stopwords("english") if word}
    return frozenset(listed | {piece for word in listed for piece in _WORD.findall(word)})


# Words that ask what happened rather than about a thing: "what changed last month", "what
# did we work on since March". Asked of a stretch of time, such a question lists it.
ACTIVITY_WORDS = frozenset({
    "happen", "happens", "happened", "happening", "change", "changes", "changed", "changing", "new", "news",
    "work", "works", "worked", "working", "going", "done", "doing", "update", "updates", "updated", "progress",
    "activity", "activities", "event", "events", "anything", "everything", "stuff", "things", "thing",
    "summary", "summarize", "summarise", "overview", "recap", "tell", "show", "list", "give",
})


# Words a question and a memory say one thing with, that porter stemming does not join:
# abbreviations ("what's billing's DB"), and "led" for "leads". A term searches as any
# word of its group. Only unambiguous ones: "run", "head" or "charge" mean other things
# in the same logs.
_SAME_MEANING_GROUPS = (  # one word per stem: FTS5 stems each ("databases" finds "database")
    ("database", "db"),
    ("postgres", "postgresql", "pg"),
    ("kubernetes", "k8s"),
    ("repository", "repo"),
    ("configuration", "config"),
    ("environment", "env"),
    ("authentication", "auth"),
    ("production", "prod"),
    ("lead", "led", "leader"),
)
# Every form a question may hold, to its group ("databases" and "dbs" too).
_FORMS = {"databases": "database", "dbs": "db", "repositories": "repository", "repos": "repo", "configs": "config",
          "environments": "environment", "leads": "lead", "leading": "lead", "leaders": "leader"}
SAME_MEANING = {word: group for group in _SAME_MEANING_GROUPS for word in group}
SAME_MEANING.update({form: SAME_MEANING[word] for form, word in _FORMS.items()})


# Ways of asking that name a relation without its word, and the word facts state it with:
# "who is the head of the platform team", "who's in charge of growth", "who was running
# the mobile team" ask who leads it; "which city is Felix based in" where Felix lives. The
# word is searched beside the question's own. Each needs its context: "head", "run" and
# "charge" alone mean other things in the same logs (git's HEAD, running the tests).
_IMPLIED = (
    # git's HEAD is written in capitals: "reset HEAD of the branch" asks no one
    (re.compile(r"\b(?:[Hh]ead(?:s|ed)? (?:of|up)|(?i:in charge of|(?:runs|ran|running|run) (?:the )?[\w-]+ team))\b"),
     "lead"),
    (re.compile(r"\bwho(?:'s| is| was)? (?:runs|ran|running|heads|headed|manages|managed|managing)\b", re.I), "lead"),
    (re.compile(r"\b(?:based|located|living|residing|resides) in\b", re.I), "lives"),
)


def _searched(term: str) -> str:
    """A term as an FTS5 string: quoted, or with the words of its group as one OR."""
    group = SAME_MEANING.get(term)
    return f'"{term}"' if group is None else "(" + " OR ".join(f'"{word}"' for word in group) + ")"


class Query(NamedTuple):
    text: str
    words: tuple[str, ...]  # every word, in order, lower case (entity names may be stop words: "The Who")
    terms: tuple[str, ...]  # the words that search: never a stop word (quoted, they search as a phrase)
    phrases: tuple[tuple[str, ...], ...]  # quoted phrases, two words or more
    asked_kind: tuple[str, ...] = ()  # what is asked for: "database" of "which database does billing use"

    def asks_what_happened(self) -> bool:
        """Whether, its time words aside, the question asks only what happened
        (``ACTIVITY_WORDS``, stop words): for a question asked of a window."""
        return not self.phrases and all(term in ACTIVITY_WORDS or term in stop_words() or term in TIME_BOUND_WORDS
                                        or _is_time_word(term) for term in self.terms)

    def looks_back(self) -> bool:
        """Whether the question asks about what held before (``LOOKING_BACK_WORDS``)."""
        return not LOOKING_BACK_WORDS.isdisjoint(self.words)

    def parts(self) -> list[str]:
        """Each phrase and term as an FTS5 string: quoted, so FTS5 tokenizes (and stems)
        it and reads no syntax in it; a phrase as one string, so it matches as a phrase;
        a term with others of the same meaning as their OR (``SAME_MEANING``)."""
        return ['"' + " ".join(phrase) + '"' for phrase in self.phrases] + [_searched(term) for term in self.terms]

    def match(self) -> str:
        """The FTS5 expression: any term or phrase may match, BM25 weighs the rarer ones."""
        return " OR ".join(self.parts())

    def kind_match(self) -> str | None:
        """The FTS5 expression for texts of the kind asked for that match the rest of the
        question too: ``"database" AND ("billing" OR "use")``; None when no kind is named."""
        if not self.asked_kind:
            return None
        kind = _searched(self.asked_kind[0]) if len(self.asked_kind) == 1 else '"' + " ".join(self.asked_kind) + '"'
        rest = ['"' + " ".join(phrase) + '"' for phrase in self.phrases] + [
            _searched(term) for term in self.terms if term not in self.asked_kind and term not in KIND_OF_WORDS]
        return f"{kind} AND ({' OR '.join(rest)})" if rest else kind

    def name_keys(self) -> list[str]:
        """Every run of up to MAX_NAME_WORDS words: the entity names the question may hold.
        A lone stop word is no name ("we", "it": extractors do make such entities)."""
        return _name_keys(self.words)

    def beside(self) -> tuple[str, list[str]] | None:
        """("before" or "after", the names the value may have) when the question asks for
        what held next to a value (``BESIDE_WORDS``): every run of words among the few
        that follow the first such word."""
        for start, word in enumerate(self.words):
            if word in BESIDE_WORDS:
                keys = _name_keys(self.words[start + 1:start + 1 + BESIDE_REACH])
                return (BESIDE_WORDS[word], keys) if keys else None
        return None


def _name_keys(words: tuple[str, ...]) -> list[str]:
    from memctl.names import entity_key

    keys: dict[str, None] = {}
    for size in range(1, MAX_NAME_WORDS + 1):
        for start in range(len(words) - size + 1):
            run = words[start:start + size]
            if size == 1 and run[0] in stop_words():
                continue
            keys[entity_key(" ".join(run))] = None
    return [key for key in keys if key]


def parse(text: str, *, timed: bool = False) -> Query:
    """``text`` as a Query; BadInput when it holds no word to search for.

    ``timed``: the question comes with a time window (``--as-of``, ``--since``,
    ``--until``), so its words for that time ("back in May 2024") are the window's, and
    do not search: they would find every text that mentions May. Words for the present
    ("now", "currently") never search: without a window, the present is the window.
    """
    phrases: dict[tuple[str, ...], None] = {}
    for quoted in _PHRASE.findall(text):
        words = tuple(word.lower() for word in _WORD.findall(quoted))[:MAX_PHRASE_WORDS]
        if len(words) > 1:
            phrases[words] = None
    words = tuple(word.lower() for word in _WORD.findall(text))
    if not words:
        raise BadInput(f"query {_shown(text)} has no words to search for")
    # Words inside quotes search only as their phrase; a lone quoted word is a word.
    loose = [word.lower() for word in _WORD.findall(_PHRASE.sub(lambda m: " " if len(_WORD.findall(m.group(1))) > 1
                                                                  else m.group(1), text))]
    # What the question's way of asking implies ("head of" → "lead") searches too.
    distinct = list(dict.fromkeys(loose + [word for pattern, word in _IMPLIED if pattern.search(text)]))
    content = [word for word in distinct if word not in stop_words() and word not in PRESENT_WORDS
               and not (timed and (word in TIME_BOUND_WORDS or _is_time_word(word)))]
    kept_phrases = tuple(phrases)[:MAX_TERMS]
    # With no other word, what the present and time filters left out searches after all
    # ("what's new"); stop words never do (recall refuses a question of nothing else).
    fallback = [] if kept_phrases else [word for word in distinct if word not in stop_words()]
    terms = tuple((content or fallback)[:max(MAX_TERMS - len(kept_phrases), 1)])
    return Query(text=text, words=words[:MAX_TERMS * MAX_NAME_WORDS], terms=terms, phrases=kept_phrases,
                 asked_kind=_asked_kind(loose, terms))


def _asked_kind(words: list[str], terms: tuple[str, ...]) -> tuple[str, ...]:
    """The words right after the first "which" or "what" (and "kind of"), up to a stop
    word, that search: the kind of thing the question asks for. None follow "what did
    we decide" or "what is the plan": those ask no kind."""
    for start, word in enumerate(words):
        if word in ASKING_WORDS:
            rest = words[start + 1:]
            if len(rest) > 1 and rest[0] in KIND_OF_WORDS and rest[1] == "of":
                rest = rest[2:]
            kind: list[str] = []
            for following in rest[:MAX_KIND_WORDS]:
                if following not in terms:
                    break
                kind.append(following)
            return tuple(kind)
    return ()


def _is_time_word(word: str) -> bool:
    # Imported only for a question with a window: the date vocabulary (and the extractors'
    # package it is in) costs a recall 4 ms to load.
    from memctl.extract.dates import is_time_word

    return is_time_word(word)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
