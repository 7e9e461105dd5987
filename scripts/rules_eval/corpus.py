"""A generated conversation corpus for the rules extractor, with its truth known by construction.

``write_corpus(root, seed, sessions)`` writes sessions (written by ``retrieval.corpus.write_session``) in which a person
says things about themselves and their team, the way people do in a chat: where they
live and moved, where they work and as what, who their manager is, whom the team hired,
what the team's database or CI is, their name, where they are from, and the same about
colleagues; with dates ("last month", "in March 2023", "since 2019", "two years ago") or
none. Around them: the retrieval corpus's chatter, and turns that say such things without
stating them as facts (plans, hedges, questions, negations, quoted and pasted text, code),
whose truth is empty.

The truth of every turn is written as the labels of ``evaluate.py`` are: source (relative
to the corpus root), position (the user line) and facts, each with its date in storage
form: the date its phrase names, computed here from the turn's time, or the turn's time.
Every choice comes from one seeded ``random.Random``: the same seed writes the same files.
"""

from __future__ import annotations

import calendar
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from retrieval import corpus as sessions  # scripts/ is on the path: bench.py's folder, or evaluate.py's parent

ORGS = ["Acme Corp", "Globex", "Initech", "Umbrella Health", "Hooli", "Cyberdyne", "Wayne Enterprises", "Soylent",
        "Vandelay Industries", "Massive Dynamic"]
JOBS = ["nurse", "software engineer", "data scientist", "teacher", "product manager", "designer", "pharmacist",
        "civil engineer", "backend developer", "accountant", "paramedic", "architect"]
TEAM_ROLES = ["designer", "tech lead", "product manager", "data engineer"]
COUNTRIES = ["Portugal", "Canada", "Kenya", "Japan", "Poland", "Ireland", "Brazil", "India"]
FIRST_NAMES = ["Sam", "Alex", "Jordan", "Robin", "Kim", "Noor"]
CI = ["GitHub Actions", "CircleCI", "Jenkins", "Buildkite"]
TRACKERS = ["Jira", "Linear", "YouTrack"]
CLOUDS = ["AWS", "Azure", "Hetzner", "Google Cloud"]
ASKS = ["Can you draft a short bio for the conference page?", "Help me plan the week.",
        "Any tips for keeping meetings short?", "Write a two-line intro I can post in the team channel.",
        "Suggest a title for my talk.", "What should I put in my out-of-office message?",
        "Can you tidy up this paragraph for the newsletter?", "Give me three icebreaker questions."]
REPLIES = ["Sure, here's a draft you can adjust.", "Here are three ideas to start from.", "Done: shorter and clearer.",
           "Here's a version that keeps your tone.", "A few suggestions below; pick what fits."]

Dated = Callable[[datetime], str]  # the turn's time -> the date the phrase names, in storage form


def a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def storage(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond:06d}Z"


def day(at: datetime) -> datetime:
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def first_of_month(at: datetime, back: int = 0) -> datetime:
    month = at.year * 12 + at.month - 1 - back
    return at.replace(year=month // 12, month=month % 12 + 1, day=1, hour=0, minute=0, second=0, microsecond=0)


def event_date(rng: random.Random, session_start: datetime) -> tuple[str, Dated]:
    """A date phrase for something that happened once (" last month"), and what it names."""
    earlier = session_start - timedelta(days=rng.randint(60, 900))
    choices: list[tuple[str, Dated]] = [
        ("", storage),
        (" last month", lambda at: storage(first_of_month(at, 1))),
        (" last week", lambda at: storage(day(at) - timedelta(days=7))),
        (" yesterday", lambda at: storage(day(at) - timedelta(days=1))),
        (" last year", lambda at: storage(day(at).replace(month=1, day=1, year=at.year - 1))),
        (" two years ago", lambda at: storage(day(at).replace(month=1, day=1, year=at.year - 2))),
        (f" in {calendar.month_name[earlier.month]} {earlier.year}", lambda at: storage(first_of_month(earlier))),
        (f" on {earlier.day} {calendar.month_name[earlier.month]} {earlier.year}", lambda at: storage(day(earlier))),
    ]
    return rng.choice(choices)


def since_date(rng: random.Random, session_start: datetime) -> tuple[str, Dated]:
    """" since 2019" or " since March 2021", for a state that still holds."""
    earlier = session_start - timedelta(days=rng.randint(200, 3000))
    if rng.random() < 0.5:
        return f" since {earlier.year}", lambda at: storage(day(earlier).replace(month=1, day=1))
    return f" since {calendar.month_name[earlier.month]} {earlier.year}", lambda at: storage(first_of_month(earlier))


@dataclass
class Fact:
    subject: str | list[str]
    predicate: str | list[str]
    object: str | list[str]
    ended: bool = False
    when: Dated = storage  # the turn's time unless a phrase names a date

    def row(self, at: datetime) -> dict:
        row = {"subject": self.subject, "predicate": self.predicate, "object": self.object, "at": self.when(at)}
        if self.ended:
            row["ended"] = True
        return row


@dataclass
class Said:
    user: str
    assistant: str
    facts: list[Fact] = field(default_factory=list)


def statement(rng: random.Random, start: datetime) -> Said:
    """One turn stating facts about the user, their team or a colleague."""
    city, old_city = rng.sample(sessions.CITIES, 2)
    db, old_db = rng.sample(sessions.DATABASES, 2)
    org, old_org = rng.sample(ORGS, 2)
    person, other = rng.sample(sessions.PEOPLE, 2)
    job, role, team = rng.choice(JOBS), rng.choice(TEAM_ROLES), rng.choice(sessions.TEAMS)
    name, country = rng.choice(FIRST_NAMES), rng.choice(COUNTRIES)
    ci, tracker, cloud = (rng.choice(pool) for pool in (CI, TRACKERS, CLOUDS))
    (when, dated), (since, since_dated) = event_date(rng, start), since_date(rng, start)
    ask, reply = rng.choice(ASKS), rng.choice(REPLIES)
    user = "user"
    kinds: list[tuple[str, list[Fact]]] = [
        # where the user lives
        (f"I live in {city}. {ask}", [Fact(user, "lives in", city)]),
        (f"I'm based in {city} these days. {ask}", [Fact(user, "lives in", city)]),
        (f"I moved to {city}{when}. {ask}", [Fact(user, "lives in", city, when=dated)]),
        (f"I relocated to {city}{when}, so my hours changed. {ask}", [Fact(user, "lives in", city, when=dated)]),
        (f"I moved from {old_city} to {city}{when}. {ask}", [Fact(user, "lives in", city, when=dated)]),
        (f"I've lived in {city}{since}. {ask}", [Fact(user, "lives in", city, when=since_dated)]),
        # where the user works, and as what
        (f"I work at {org}. {ask}", [Fact(user, "works at", org)]),
        (f"I joined {org}{when}. {ask}", [Fact(user, "works at", org, when=dated)]),
        (f"I started at {org}{when}. {ask}", [Fact(user, "works at", org, when=dated)]),
        (f"I've worked at {org}{since}. {ask}", [Fact(user, "works at", org, when=since_dated)]),
        (f"I left {old_org} and joined {org}{when}. {ask}",
         [Fact(user, "works at", org, when=dated), Fact(user, "works at", old_org, ended=True, when=dated)]),
        (f"I no longer work at {old_org}. {ask}", [Fact(user, "works at", old_org, ended=True)]),
        (f"I'm {a(job)}. {ask}", [Fact(user, "works as", job)]),
        (f"I work as {a(job)} at {org}. {ask}", [Fact(user, "works as", job), Fact(user, "works at", org)]),
        (f"I became {a(job)}{when}. {ask}", [Fact(user, "works as", job, when=dated)]),
        (f"I've been {a(job)}{since}. {ask}", [Fact(user, "works as", job, when=since_dated)]),
        # the user's manager
        (f"My manager is {person}. {ask}", [Fact(user, "manager", person)]),
        (f"{person} is my manager. {ask}", [Fact(user, "manager", person)]),
        (f"I report to {person}. {ask}", [Fact(user, "manager", person)]),
        (f"My new manager is {person}. {ask}", [Fact(user, "manager", person)]),
        (f"{person} became my manager{when}. {ask}", [Fact(user, "manager", person, when=dated)]),
        # the team: whom it hired, what it runs on
        (f"We hired {person}{when}. {ask}", [Fact(user, "hired", person, when=dated)]),
        (f"We just hired {person} as our new {role}. {ask}", [Fact(user, "hired", person), Fact(user, role, person)]),
        (f"{person} is our {role}. {ask}", [Fact(user, role, person)]),
        (f"{db} is our database. {ask}", [Fact(user, ["database", "main database"], db)]),
        (f"Our main database is {db}. {ask}", [Fact(user, ["main database", "database"], db)]),
        (f"Our CI is {ci}. {ask}", [Fact(user, "CI", ci)]),
        (f"{tracker} is our issue tracker. {ask}", [Fact(user, ["issue tracker", "tracker"], tracker)]),
        (f"Our cloud provider is {cloud}. {ask}", [Fact(user, ["cloud provider", "cloud"], cloud)]),
        (f"Our database is {db}, not {old_db}. {ask}", [Fact(user, "database", db)]),
        (f"The manager of the {team} team is {person}. {ask}", [Fact(f"{team} team", "manager", person)]),
        (f"Our team hired {person}{when}, and she starts on Monday. {ask}", [Fact(user, "hired", person, when=dated)]),
        # two facts in one sentence, an aside, a fact restated by the assistant
        (f"I'm {a(job)} at {org} and I live in {city}. {ask}",
         [Fact(user, "works as", job), Fact(user, "works at", org), Fact(user, "lives in", city)]),
        (f"Quick context (I moved to {city}{when}): {ask}", [Fact(user, "lives in", city, when=dated)]),
        # who the user is
        (f"My name is {name}. {ask}", [Fact(user, ["name", "is named"], name)]),
        (f"I'm from {country}. {ask}", [Fact(user, ["from", "is from", "comes from"], country)]),
        # colleagues
        (f"{person} works at {org}. {ask}", [Fact(person, "works at", org)]),
        (f"{person} is {a(job)}. {ask}", [Fact(person, "works as", job)]),
        (f"{person} joined {org}{when}. {ask}", [Fact(person, "works at", org, when=dated)]),
        (f"{person} lives in {city}. {ask}", [Fact(person, "lives in", city)]),
        (f"{person} leads the {team} team. {ask}", [Fact(f"{team} team", "led by", person)]),
        (f"{person} moved to {city}{when}, and {other} took over her desk. {ask}",
         [Fact(person, "lives in", city, when=dated)]),
    ]
    if rng.random() < 0.1:  # the assistant says it of the user: "You live in Lisbon, so …"
        return Said(ask, f"You live in {city}, so I kept the times in your zone. {reply}", [Fact(user, "lives in", city)])
    text, facts = rng.choice(kinds)
    return Said(text, reply, facts)


def not_stated(rng: random.Random) -> Said:
    """A turn that mentions such things without stating them as facts: its truth is empty."""
    city, org, person, job = (rng.choice(pool) for pool in (sessions.CITIES, ORGS, sessions.PEOPLE, JOBS))
    db = rng.choice(sessions.DATABASES)
    user, assistant = rng.choice([
        (f"I might move to {city} next year. What should I know?", "Rents vary a lot by district; visit first."),
        (f"I'm thinking about joining {org}. Is it a good place?", "Ask to talk to someone on the team first."),
        (f"If I were {a(job)}, would I need a licence?", "In most places, yes."),
        (f"Should we hire {person}? The interview went well.", "Check references, then decide together."),
        (f"Is {person} my manager now, or still acting?", "Your HR page should say."),
        (f"I never lived in {city}, but I visit often.", "Then you know the good cafés already."),
        (f"I'm moving to {city} next month.", "Exciting! Book the movers early."),
        (f"My friend wants to become {a(job)}.", "Shadowing someone for a day helps decide."),
        (f"Is {db} our database or only the cache?", "Your config would tell; look at the connection string."),
        (f"{person} said she may join {org}.", "Good for her."),
        (f"I work from home on Fridays. {rng.choice(ASKS)}", rng.choice(REPLIES)),
        (f"We moved the standup to Thursday. {rng.choice(ASKS)}", rng.choice(REPLIES)),
        (f"Here's the bot's output:\n\n> I'm {a(job)} and I live in {city}.\n\nIs that right?",
         "The bot made that up; it has no profile data."),
        (f"The log says:\n2024-05-01 10:00:00 INFO hired {person}\nWhat does it mean?", "An audit entry."),
        (f"Pretend you're {a(job)} in {city} and answer as them.", f"As {a(job)}, I would start with the basics."),
        (f"Fix this test fixture:\n```\n# I work at {org}\nmanager = \"{person}\"\n```", "Renamed the variable."),
        ("Write a short bio.", f"Sure:\n\n```\nI'm {a(job)} at {org}. I live in {city}.\n```"),
        (f"What does {a(job)} in {city} earn?", "It depends on experience; look at recent surveys."),
        (f"My old manager was {person}.", "Noted."),
        (f"We're hiring {a(job)}; can you draft the ad?", "Here's a first draft."),
        (f"Who is our {rng.choice(TEAM_ROLES)} now?", "Check the team page."),
        (f"I used to work at {org}.", "That must have been interesting."),
    ])
    return Said(user, assistant)


def chatter(rng: random.Random) -> Said:
    return Said(*sessions.chatter(rng))


def write_corpus(root: Path, seed: int = 0, sessions_count: int = 240) -> list[dict]:
    """Write the sessions under ``root``; return the truth of every turn (as ``evaluate`` reads labels)."""
    rng = random.Random(seed)
    span = int((sessions.END - sessions.START).total_seconds())
    starts = sorted(sessions.START + timedelta(seconds=rng.randrange(span)) for _ in range(sessions_count))
    truth: list[dict] = []
    ended = sessions.START
    for started in starts:
        start = max(started, ended)
        said = [statement(rng, start) for _ in range(rng.randint(1, 2))]
        said += [not_stated(rng) for _ in range(rng.randint(0, 1))]
        said += [chatter(rng) for _ in range(rng.randint(2, 4))]
        rng.shuffle(said)
        marks = [sessions.Statement("") for _ in said]
        turns = [sessions.Turn(s.user, s.assistant, mark) for s, mark in zip(said, marks)]
        ended = sessions.write_session(root, rng, start, turns)
        for s, mark in zip(said, marks):
            assert mark.where is not None and mark.at is not None
            truth.append({"source": mark.where[0], "position": mark.where[1],
                          "facts": [fact.row(mark.at) for fact in s.facts]})
    return truth

