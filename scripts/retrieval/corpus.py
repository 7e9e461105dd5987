"""A generated corpus: two years of Claude Code sessions, and questions with known evidence.

    python scripts/retrieval/corpus.py OUT_DIR [--seed 0] [--sessions 320]   # the logs and OUT_DIR/questions.jsonl

Facts change over time (the database behind a service, who leads a team, the city
someone lives in, the library an app uses for a job) and are stated in single turns of
otherwise ordinary sessions: first said, later changed ("moved billing from MySQL to
Postgres", which names the old value too), sometimes said again in passing. Everything
else is chatter that shares their vocabulary (databases in general, the same services,
people and cities in other roles) but never states one of those facts, so the evidence
of a question is exactly the turns listed for it.

Evidence, by kind of question:

* now: every turn that states the current value, from the one that established it on;
* then (``as_of``, a month wholly inside one value's time): the turns stating that value
  said by then; the later change, which names it as the old value, is not evidence of
  what held then (it was said afterwards);
* before ("what did billing run on before Postgres?"): the turns stating the earlier
  value, and the change turn, which names it.

Every choice comes from one seeded ``random.Random``: the same seed writes the same files.
"""

from __future__ import annotations

import argparse
import calendar
import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2023, 7, 1, tzinfo=UTC)
END = datetime(2025, 7, 1, tzinfo=UTC)

PROJECTS = ["-Users-sam-work-platform", "-Users-sam-work-billing-api", "-Users-sam-work-dashboard",
            "-Users-sam-work-data-pipeline", "-Users-sam-notes"]
SERVICES = ["billing", "search", "notifications", "ledger", "checkout", "inventory", "auth", "analytics"]
TEAMS = ["platform", "payments", "mobile", "data", "growth", "security"]
PEOPLE = ["Priya", "Marco", "Dana", "Tomasz", "Aisha", "Kenji", "Lucia", "Omar", "Ingrid", "Ravi", "Elena",
          "Jonas", "Yuki", "Felix"]
CITIES = ["Lisbon", "Berlin", "Toronto", "Austin", "Nairobi", "Melbourne", "Warsaw", "Osaka", "Dublin", "Montreal"]
DATABASES = ["MySQL", "Postgres", "MongoDB", "DynamoDB", "CockroachDB", "Cassandra", "MariaDB", "SQL Server"]
TOOLS = {  # purpose: (the app that needs it, libraries that do it)
    "background jobs": ("the reporting app", ["Celery", "RQ", "Dramatiq", "Huey"]),
    "HTTP calls": ("the mobile backend", ["requests", "httpx", "aiohttp", "urllib3"]),
    "bundling": ("the web dashboard", ["webpack", "Vite", "esbuild", "Parcel"]),
    "scheduling": ("the data pipeline", ["Airflow", "Prefect", "Dagster", "Luigi"]),
}
LIBRARIES = [library for _, libraries in TOOLS.values() for library in libraries]


@dataclass(frozen=True)
class Kind:
    """How one kind of fact is said and asked about. Placeholders: {s} the subject, {p}
    the purpose (tools), {v} the value, {old}/{new} around a change, {month} a month."""

    first: tuple[tuple[str, str], ...]  # (user, assistant) stating {v}
    change: tuple[tuple[str, str], ...]  # stating that {new} replaced {old}
    again: tuple[tuple[str, str], ...]  # stating {v} in passing
    now: tuple[str, ...]
    then: tuple[str, ...]
    before: tuple[str, ...]


DATABASE = Kind(
    first=(
        ("Quick context before we start: {s} keeps everything in {v} at the moment. Can you sketch a table for "
         "refunds that fits?", "Sure. Here's a refunds table in the style of the existing {s} schema, with a "
         "foreign key to payments and an index on created_at."),
        ("The {s} service talks to a {v} database. Write me a health check that pings it every 30 seconds.",
         "Here's a small health check: it takes one connection from the pool, runs a trivial query and reports "
         "the round trip."),
        ("For the record, {s} is backed by {v}. The lookup by customer id is slow; what index would you add?",
         "A composite index on (customer_id, created_at) should cover that lookup and the sort that follows it."),
    ),
    change=(
        ("We finally finished migrating {s} from {old} to {new} last night. Update the runbook so nobody "
         "connects to the old cluster.", "Runbook updated: the {s} section now describes the {new} setup, and the "
         "{old} connection steps are gone."),
        ("Heads up: {s} moved off {old} and onto {new} this week. Can you adjust the backup script?",
         "Done. The backup job now dumps the {new} database and the {old} dump step is removed."),
        ("{s} switched from {old} to {new}, so the connection pool settings are wrong now. Rewrite them?",
         "Here are pool settings suited to {new}: a smaller pool, a shorter idle timeout, and statement timeouts "
         "set per session."),
    ),
    again=(
        ("{s} on {v} is throwing deadlock errors again under load. What should I look at first?",
         "Start with the lock wait logs, then check whether two code paths update the same rows in a different "
         "order."),
        ("Can you tune the {v} connection limits for {s}? We keep running out during the nightly batch.",
         "Raise the limit a little, but mostly cap the batch's own concurrency so it leaves headroom for live "
         "traffic."),
    ),
    now=("which database does {s} use?", "what is {s} storing its data in these days?",
         "where does the {s} service keep its records?", "what kind of database sits behind {s}?"),
    then=("which database was {s} using in {month}?", "what did {s} store its data in back in {month}?"),
    before=("what did {s} run on before it moved to {new}?", "which database did {s} have before {new}?"),
)

LEAD = Kind(
    first=(
        ("{v} runs the {s} team, so the incident summary should go to them first. Can you draft it?",
         "Here's a draft addressed to {v}: what happened, the impact, the timeline and the follow-ups."),
        ("I need a one-pager for {v}, who leads {s}, on why the deploy pipeline froze on Friday.",
         "Here's a one-pager: the cause, why the freeze was the safe call, and what would let us unfreeze "
         "sooner."),
    ),
    change=(
        ("{new} took over the {s} team from {old} this month. Please update the escalation doc.",
         "Updated: escalations for {s} now go to {new}; {old} stays listed as a secondary contact for the "
         "handover."),
        ("Org change: {old} handed the {s} lead role to {new}. Fix the note in CODEOWNERS about who approves.",
         "The CODEOWNERS comment now names {new} as the approver for {s}."),
    ),
    again=(
        ("Since {v} heads {s}, should I loop them in on the capacity review?",
         "Yes, loop {v} in early: they will need to sign off on any change to the team's on-call load."),
    ),
    now=("who leads the {s} team?", "who's in charge of {s} now?", "who is the head of the {s} team?"),
    then=("who was running the {s} team in {month}?", "who led {s} back in {month}?"),
    before=("who led the {s} team before {new}?",),
)

CITY = Kind(
    first=(
        ("{s} lives in {v}, so the 9am Pacific standup is brutal for them. Suggest a better slot?",
         "Late morning Pacific lands in {s}'s early evening; here are two slots that work for everyone else too."),
        ("Plan a small offsite near {v}. That's where {s} is based and they offered to host.",
         "Here's a two-day plan near {v}: a workshop day, a planning day and a team dinner."),
    ),
    change=(
        ("{s} just moved from {old} to {new}. Update the on-call timezone table.",
         "Updated: {s} is now listed in {new}'s timezone, and their on-call hours shift accordingly."),
        ("{s} has left {old} and lives in {new} now. Recompute the overlap of their working hours with the team.",
         "With {s} in {new}, the overlap with the rest of the team is about three hours a day."),
    ),
    again=(
        ("What's a good gift to ship to {s} in {v} for their work anniversary?",
         "Food travels badly; a book voucher or a nice notebook ships well to {v}."),
    ),
    now=("where does {s} live?", "which city is {s} based in?", "where is {s} living these days?"),
    then=("where was {s} living in {month}?", "which city was {s} based in back in {month}?"),
    before=("where did {s} live before moving to {new}?",),
)

TOOL = Kind(
    first=(
        ("We adopted {v} for {p} in {s}. Can you write the setup section of the README?",
         "Here's a setup section: install {v}, the settings it reads, and how to run it locally."),
        ("{s} relies on {v} for {p}. Add a retry wrapper around it with exponential backoff.",
         "Here's a wrapper with exponential backoff and jitter, giving up after five attempts."),
    ),
    change=(
        ("We dropped {old} from {s} and moved {p} over to {new}. Clean up the leftover config, please.",
         "Removed the {old} settings and requirements; the {p} config for {new} lives in one place now."),
        ("{s} replaced {old} with {new} for {p}. Can you update the architecture notes?",
         "The architecture notes now show {new} handling {p} in {s}."),
    ),
    again=(
        ("The {v} setup in {s} keeps timing out during {p}. What are the usual culprits?",
         "Usually a worker pool that is too small, a missing timeout, or one slow task blocking the rest."),
    ),
    now=("what does {s} use for {p}?", "which library handles {p} in {s}?"),
    then=("what was {s} using for {p} in {month}?",),
    before=("what did {s} use for {p} before {new}?",),
)

# Chatter: the facts' vocabulary in other roles, never one of their values said of their
# subject (a database with no service, a person visiting a city, a library in general),
# over a long tail of everyday work so that no two turns are quite alike.
THINGS = ["rate limiter", "feature flag", "webhook handler", "cron job", "login page", "retry queue", "audit log",
          "CSV export", "search box", "pricing page", "onboarding email", "dark mode toggle", "release notes",
          "load test", "cache layer", "API gateway", "payment form", "admin panel", "push notifications", "SSO flow",
          "image resizer", "PDF renderer", "metrics exporter", "health endpoint", "config loader", "backfill script",
          "Dockerfile", "Helm chart", "Terraform module", "integration tests", "design doc", "postmortem",
          "on-call rota", "status page", "invoice template", "currency rounding", "timezone bug", "memory leak",
          "N+1 query", "race condition", "TLS certificate", "DNS record", "CDN config", "bucket policy",
          "secret rotation", "log retention", "A/B test", "funnel report", "alert rule", "session timeout"]
TOPICS = ["event sourcing", "database indexing", "zero-downtime deploys", "observability", "consistent hashing",
          "idempotency keys", "blue-green deployments", "rate limiting", "schema evolution",
          "moving from a monolith to microservices", "on-call health", "technical debt", "caching strategies",
          "distributed tracing", "backpressure"]
RECORDS = ["invoices", "orders", "refunds", "signups", "payouts", "tickets", "subscriptions"]
CHATTER = [
    ("Can you explain the difference between {db} and {db2} when it comes to write amplification?",
     "Broadly, {db} pays for writes at commit time while {db2} defers more of the work to background compaction."),
    ("I'm flying to {city} next week for a conference. Any tips for getting around?",
     "Get a transit card at the airport, and check which lines run late before booking your hotel."),
    ("The {service} dashboard shows p99 latency creeping up since the last deploy. How would you bisect it?",
     "Compare the slowest endpoints before and after the deploy, then bisect the commits that touched them."),
    ("Write a SQL query that finds duplicate {record} by customer and amount.",
     "Group by customer_id and amount, keep the groups with more than one row, and join back for the ids."),
    ("{person} asked for a review of the {service} {thing}; summarize the main risks in three bullets.",
     "No timeouts on the calls it makes, no cap on retries, and nothing alerting when it silently stops."),
    ("The {team} team retro ran long. Turn these notes into action items: the {thing}, slow CI, unclear ownership.",
     "Give the {thing} an owner and a date, cache dependencies in CI, and write down who owns what."),
    ("Is {lib} still maintained? I saw a blog post saying it's deprecated.",
     "It had a release recently; the post is probably about an old major version."),
    ("What's the idiomatic way to paginate results from a {db} table with a cursor?",
     "Use keyset pagination: remember the last key you returned and ask for rows after it."),
    ("Draft a message to {person} thanking them for sorting out the {thing} while I was away.",
     "Thanks so much for picking up the {thing} while I was out, it made a real difference. I owe you one."),
    ("Why does my pytest fixture for the {thing} run twice when I parametrize the test?",
     "A function-scoped fixture runs once per parameter; widen its scope if it should run once."),
    ("Rename the {service} feature flag for the {thing} to something clearer, everywhere it appears.",
     "Renamed in the code, the tests and the flag config; the old name stays as an alias for a week."),
    ("What's the weather usually like in {city} in {monthname}?",
     "Mild on average, but pack a layer for the evenings and check the forecast a few days ahead."),
    ("Generate a changelog entry for the {service} release: fixed the {thing}, faster startup.",
     "Fixed: the {thing} behaves again. Improved: the service starts faster."),
    ("Compare {lib} and {lib2} for a small internal tool. Keep it short.",
     "{lib} has the larger ecosystem; {lib2} is lighter and easier to read. Either is fine at that size."),
    ("The {team} team wants a shared glossary. Start one with a few common terms.",
     "Here's a start: SLO, error budget, runbook, on-call, postmortem, with a one-line definition each."),
    ("A {db} migration on a staging copy failed with a lock timeout. What usually causes that?",
     "A long transaction holding a lock the migration needs; run it when traffic is low or split it up."),
    ("Help me write the agenda for quarterly planning with the {team} and {team2} teams.",
     "Review last quarter, shared dependencies, each team's top three goals, then risks and owners."),
    ("Explain how {lib} handles retries under the hood.",
     "It wraps each attempt, sleeps with a growing delay between them, and re-raises after the last one."),
    ("{person} is visiting {city} for a wedding; recommend three restaurants.",
     "Pick one traditional place, one market hall and one small spot away from the centre."),
    ("Make the {service} error messages friendlier, starting with the ones from the {thing}.",
     "Something went wrong on our side; please try again in a minute. That pattern, with what to do next."),
    ("Roughly how does leader election work in {db}?",
     "Nodes vote; a candidate that gets a majority becomes leader until it stops sending heartbeats."),
    ("Who should lead the review of the {thing} incident if the on-call engineer also wrote the bad change?",
     "Someone uninvolved should facilitate, so the author can explain without also running the meeting."),
    ("Summarize this article about {topic} in four sentences.",
     "It argues for {topic} where the team feels the pain today, warns about the operational cost, and suggests "
     "starting small."),
    ("Convert this timestamp to {city} local time: 2024-03-10T02:30:00Z.",
     "That depends on the daylight saving rules there on that date; here is the conversion."),
    ("Write a bash one-liner that counts lines of Python in the {service} repo.",
     "find . -name '*.py' | xargs wc -l | tail -1"),
    ("The {team} team lunch is in {city} next month; draft the invite.",
     "You're invited to the team lunch next month. Reply by Friday with any dietary needs."),
    ("Add type hints to the {thing} code in {service}.",
     "Added hints for the arguments and return values, and a TypedDict for the settings it reads."),
    ("Any reading recommendations on {topic} for someone new?",
     "Start with one short practical guide, then read how a company you know applied it."),
    ("Is it worth switching a hobby project from {lib} to {lib2}?",
     "Only if something hurts today; otherwise the switch costs more than it gives."),
    ("The {service} staging environment is down again; write a status update for the channel.",
     "Staging is down; we're on it and will post again within the hour. Production is not affected."),
    ("{person} moved the sprint demo to Thursday; update the calendar blurb.",
     "Sprint demo, now on Thursday: each team shows what shipped, five minutes each."),
    ("Explain MVCC in {db} in plain words.",
     "Each writer makes a new version of a row; readers see the versions that existed when they started."),
    ("Draft interview questions for a senior engineer joining the {team} team.",
     "Ask about a system they designed, an outage they handled, and a decision they would now make differently."),
    ("What's a sensible default timeout for HTTP calls between {service} and {service2}?",
     "Start around two seconds, below the caller's own deadline, and measure the real latency before tuning."),
    ("{person} and {person2} disagree about code review turnaround. Suggest a team norm.",
     "Aim for a first response within one working day, and say so when a review will take longer."),
    ("Write a regex that pulls version strings out of the {thing} logs.",
     r"\b\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?\b covers the common cases."),
    ("The {thing} in {service} fails every few days with no clear error. How would you start debugging?",
     "Log enough context on each failure to compare them, then look for what the failing runs share."),
    ("Write a short design doc outline for a new {thing}.",
     "Context, goals and non-goals, the proposal, alternatives considered, rollout, and open questions."),
    ("{person} wants the {thing} done by Friday. Is that realistic if {person2} is out?",
     "Only if the scope is cut to the essential path; list what you would drop and agree on it today."),
    ("Explain the trade-offs of {topic} to a product manager.",
     "It buys flexibility later at the price of more moving parts now; worth it when change is frequent."),
    ("Can you review this plan for the {thing}: ship behind a flag, migrate data, then remove the old path?",
     "Sound. Add a way to compare old and new results while both run, and a date for removing the flag."),
    ("What metrics should the {team} team track for the {thing}?",
     "Error rate, latency at p50 and p99, and how often someone has to touch it by hand."),
    ("Turn these bullet points about the {thing} into a friendly announcement for the {team} team.",
     "Good news, team: the {thing} is live. Here's what changes for you and who to ask."),
    ("How do I write a test for the {thing} without hitting the network?",
     "Inject the client, pass a fake in the test, and keep one slow test that talks to the real thing."),
    ("{person} says the {service} {thing} is slow on Mondays. What could explain a weekly pattern?",
     "Weekly batch jobs, cache entries expiring over the weekend, or simply Monday traffic."),
    ("Suggest a short name for the new {thing} in {service}.",
     "A plain noun that says what it does works best; avoid the team's in-jokes."),
]


@dataclass
class Statement:
    """One turn stating a fact's value; ``previous`` is the value a change replaced."""

    value: str
    previous: str | None = None
    at: datetime | None = None  # set when written
    where: tuple[str, int] | None = None  # (path relative to the corpus root, line of the user message)


@dataclass
class Slot:
    kind: Kind
    subject: str
    purpose: str = ""
    statements: list[Statement] = field(default_factory=list)

    def intervals(self) -> list[list[Statement]]:
        """The statements grouped by the value they state, in time order: one group per
        value, opened by the turn that established it."""
        groups: list[list[Statement]] = []
        for statement in self.statements:
            if not groups or statement.value != groups[-1][0].value:
                groups.append([])
            groups[-1].append(statement)
        return groups


@dataclass
class Turn:
    user: str
    assistant: str
    statement: Statement | None = None


def slots(rng: random.Random) -> list[tuple[Slot, list[str]]]:
    """Every fact, with the values it will take in order."""
    chosen = [(Slot(DATABASE, service), rng.sample(DATABASES, 3)) for service in SERVICES]
    chosen += [(Slot(LEAD, team), rng.sample(PEOPLE, 3)) for team in TEAMS]
    chosen += [(Slot(CITY, person), rng.sample(CITIES, 3)) for person in rng.sample(PEOPLE, 8)]
    chosen += [(Slot(TOOL, app, purpose), rng.sample(libraries, 3)) for purpose, (app, libraries) in TOOLS.items()]
    return chosen


def place(slot: Slot, values: list[str], rng: random.Random, plans: list[list[Turn]]) -> None:
    """Say the slot's values in distinct sessions: first, then 0-2 changes and 0-2 restatements."""
    changes = rng.choice([0, 1, 1, 2, 2])
    again = rng.choice([0, 1, 1, 2])
    sessions = sorted(rng.sample(range(len(plans)), 1 + changes + again))
    changing = set(rng.sample(range(1, len(sessions)), changes))
    current = 0
    for order, session in enumerate(sessions):
        names = {"s": slot.subject, "p": slot.purpose}
        if order == 0:
            statement, templates = Statement(values[0]), slot.kind.first
            names["v"] = values[0]
        elif order in changing:
            current += 1
            statement, templates = Statement(values[current], values[current - 1]), slot.kind.change
            names.update(old=values[current - 1], new=values[current])
        else:
            statement, templates = Statement(values[current]), slot.kind.again
            names["v"] = values[current]
        user, assistant = rng.choice(templates)
        slot.statements.append(statement)
        plans[session].append(Turn(capitalised(user.format(**names)), assistant.format(**names), statement))


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def chatter(rng: random.Random) -> tuple[str, str]:
    """One turn of chatter: (user, assistant)."""
    user, assistant = rng.choice(CHATTER)
    service, service2 = rng.sample(SERVICES, 2)
    db, db2 = rng.sample(DATABASES, 2)
    team, team2 = rng.sample(TEAMS, 2)
    person, person2 = rng.sample(PEOPLE, 2)
    lib, lib2 = rng.sample(LIBRARIES, 2)
    names = dict(service=service, service2=service2, db=db, db2=db2, team=team, team2=team2, person=person,
                 person2=person2, lib=lib, lib2=lib2, city=rng.choice(CITIES), thing=rng.choice(THINGS),
                 topic=rng.choice(TOPICS), record=rng.choice(RECORDS),
                 monthname=calendar.month_name[rng.randint(1, 12)])
    return capitalised(user.format(**names)), assistant.format(**names)


def any_question(rng: random.Random) -> str:
    """A question of the kind the corpus answers, about one of its subjects: a query to time."""
    slot, _ = rng.choice(slots(rng))
    return capitalised(rng.choice(slot.kind.now).format(s=slot.subject, p=slot.purpose))


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def write_session(root: Path, rng: random.Random, started: datetime, turns: list[Turn]) -> datetime:
    """One Claude Code session file, a user line and an assistant line per turn; returns
    the time of its last turn."""
    project = rng.choice(PROJECTS)
    session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    relpath = f"{project}/{session}.jsonl"
    common = {"isSidechain": False, "userType": "external", "cwd": "/" + project.strip("-").replace("-", "/"),
              "sessionId": session, "version": "1.0.43"}
    lines: list[dict] = []
    parent, at = None, started
    for turn in turns:
        at += timedelta(minutes=rng.randint(2, 15), seconds=rng.randint(0, 59))
        asked, answered = (str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(2))
        if turn.statement is not None:
            turn.statement.at, turn.statement.where = at, (relpath, len(lines) + 1)
        lines.append({**common, "parentUuid": parent, "type": "user", "uuid": asked, "timestamp": stamp(at),
                      "message": {"role": "user", "content": turn.user}})
        lines.append({**common, "parentUuid": asked, "type": "assistant", "uuid": answered,
                      "timestamp": stamp(at + timedelta(seconds=rng.randint(3, 40))),
                      "message": {"id": f"msg_{rng.getrandbits(64):016x}", "type": "message", "role": "assistant",
                                  "model": "claude-sonnet-4", "content": [{"type": "text", "text": turn.assistant}],
                                  "stop_reason": "end_turn"}})
        parent = answered
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return at


def months_within(start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """Calendar months lying wholly in [start, end), as (first instant, first of the next)."""
    found = []
    month = start.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    while month < end:
        following = (month + timedelta(days=32)).replace(day=1)
        if month >= start and following <= end:
            found.append((month, following))
        month = following
    return found


def question(text: str, answer: str, evidence: list[Statement], as_of: str | None = None) -> dict:
    row = {"question": text, "answer": answer, "evidence": [list(s.where) for s in evidence]}
    if as_of is not None:
        row["as_of"] = as_of
    return row


def ask(slot: Slot, rng: random.Random) -> list[dict]:
    """Questions about one slot: its value now, at a month of each past value (and of the
    current one, sometimes), and before each change."""
    kind, names = slot.kind, {"s": slot.subject, "p": slot.purpose}
    groups = slot.intervals()
    asked = [question(capitalised(rng.choice(kind.now).format(**names)), groups[-1][0].value, groups[-1])]
    for index, group in enumerate(groups):
        end = groups[index + 1][0].at if index + 1 < len(groups) else END
        months = months_within(group[0].at, end)
        if not months or (index + 1 == len(groups) and rng.random() < 0.7):
            continue
        first, _ = rng.choice(months)
        as_of = first.replace(day=15, hour=12)
        said = [s for s in group if s.at <= as_of]
        text = rng.choice(kind.then).format(month=f"{calendar.month_name[first.month]} {first.year}", **names)
        asked.append(question(capitalised(text), group[0].value, said, as_of.strftime("%Y-%m-%dT%H:%M:%SZ")))
    for earlier, later in zip(groups, groups[1:]):
        text = rng.choice(kind.before).format(new=later[0].value, **names)
        asked.append(question(capitalised(text), earlier[0].value, [*earlier, later[0]]))
    return asked


def write_corpus(root: Path, seed: int = 0, sessions: int = 320) -> list[dict]:
    """Write the sessions under ``root``; return the questions, evidence as (relative path, line)."""
    rng = random.Random(seed)
    span = int((END - START).total_seconds())
    starts = sorted(START + timedelta(seconds=rng.randrange(span)) for _ in range(sessions))
    plans: list[list[Turn]] = [[] for _ in starts]
    facts = slots(rng)
    for slot, values in facts:
        place(slot, values, rng, plans)
    ended = START
    for started, plan in zip(starts, plans):
        turns = plan + [Turn(*chatter(rng)) for _ in range(rng.randint(3, 7))]
        rng.shuffle(turns)
        # Sessions never overlap, so a fact's turns come in the order they were planned in.
        ended = write_session(root, rng, max(started, ended), turns)
    return [asked for slot, _ in facts for asked in ask(slot, rng)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sessions", type=int, default=320)
    args = parser.parse_args()
    questions = write_corpus(args.out, args.seed, args.sessions)
    with open(args.out / "questions.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in questions)
    print(f"{args.sessions} sessions and {len(questions)} questions in {args.out}")


if __name__ == "__main__":
    main()
