"""Secrets never stored, never sent to a model, and gone for good when purged (issue 13).

The generated corpus (``tests/secret_corpus.py``: 87 pastes of 51 kinds) goes in through
every way text enters memctl: each file format, the structured facts' content, subjects,
objects and sentences, ``add_memory`` with and without facts, ``ingest_episodes``, and
what a retry or an embedder reads back from a store an older memctl wrote. What is
checked is where a secret could end up: the raw bytes of the database file and its WAL,
the terms of both full-text indexes, and every request body the model server received.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from memctl.embeddings import embed_new
from memctl.extract import build_extractor
from memctl.memory import Memory
from memctl.model import Assertion, Episode, content_hash
from memctl.sources import MAX_EPISODE_CHARS, IngestOptions
from memctl.store import connection
from tests.conftest import FakeClock, open_store, write_jsonl
from tests.fake_llm import API_KEY, FakeOpenAIServer
from tests.secret_corpus import FORMATS, plants, write_format

PLANTS = plants()
TEXTS = [plant.text for plant in PLANTS]
KINDS = Counter(plant.kind for plant in PLANTS)
SECRETS = [plant.secret for plant in PLANTS]


def fragments(secret: str) -> list[bytes]:
    """What of a secret would show in the file if it had been stored: itself, and each long
    run of letters and digits lowercased, as the full-text index keeps its terms."""
    runs = [run.lower() for run in re.findall(r"[A-Za-z0-9]{10,}", secret)]
    return [secret.encode(), secret.lower().encode(), *(run.encode() for run in runs)]


def leaks(blob: bytes, secrets: list[str]) -> list[str]:
    folded = blob.lower()
    return [secret for secret in secrets if any(fragment.lower() in folded for fragment in fragments(secret))]


def file_bytes(db: Path) -> bytes:
    """The database file and its write-ahead log, as they are on disk."""
    return b"".join(path.read_bytes() for path in (db, Path(f"{db}-wal")) if path.exists())


def index_terms(db: Path) -> set[str]:
    """Every term the two full-text indexes hold, read through fts5vocab."""
    with open_store(db) as conn:
        terms = set()
        for index in ("episodes_fts", "facts_fts"):
            conn.execute(f"CREATE VIRTUAL TABLE temp.{index}_terms USING fts5vocab(main, {index}, 'row')")
            terms |= {row[0] for row in conn.execute(f"SELECT term FROM temp.{index}_terms")}
    return terms


def terms_of_secrets(terms: set[str], secrets: list[str]) -> list[str]:
    folded = [secret.lower() for secret in secrets]
    return [term for term in terms if len(term) >= 8 and any(term in secret for secret in folded)]


def stored_texts(db: Path) -> str:
    with open_store(db) as conn:
        rows = conn.execute("SELECT content FROM episodes UNION ALL SELECT subject || object || fact FROM assertions")
        return "\n".join(row[0] for row in rows)


def assert_nothing_stored(db: Path, secrets: list[str] = SECRETS) -> None:
    assert leaks(file_bytes(db), secrets) == []
    assert terms_of_secrets(index_terms(db), secrets) == []


@pytest.fixture(scope="module")
def server():
    from datetime import UTC, datetime

    with FakeOpenAIServer(datetime.now(UTC)) as running:
        yield running


@pytest.fixture
def llm(server, monkeypatch):
    """An LLM extractor against the local fake server; its request bodies are ``server.bodies``."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    return lambda memory: build_extractor("llm", clock=memory.clock, model="fake-normal")


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_planted_secret_is_stored_or_sent_in_any_format(fmt, tmp_path, server, llm):
    paths = write_format(fmt, tmp_path / "in", TEXTS)
    sent_before = len(server.bodies)
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    report = memory.ingest(paths, IngestOptions(format=fmt), extractor=llm(memory))
    sent = server.bodies[sent_before:]
    stored = file_bytes(tmp_path / "m.db")  # before closing: the WAL still holds every write
    memory.close()

    assert report.episodes == len(PLANTS) and report.added == len(PLANTS) and not report.partial
    # a facts line holds each secret four times: content, sentence, subject, object
    per_plant = 4 if fmt == "facts" else 1
    assert report.redacted == {kind: count * per_plant for kind, count in KINDS.items()}
    assert report.redactions == len(PLANTS) * per_plant
    assert leaks(stored, SECRETS) == [] and leaks(file_bytes(tmp_path / "m.db"), SECRETS) == []
    assert terms_of_secrets(index_terms(tmp_path / "m.db"), SECRETS) == []
    assert len(sent) == (0 if fmt == "facts" else len(PLANTS)) == report.extraction_calls
    assert [leaks(body, SECRETS) for body in sent if leaks(body, SECRETS)] == []
    # the names stay, beside the marker: the memory still says a password was set
    texts = stored_texts(tmp_path / "m.db")
    assert [plant.name for plant in PLANTS if plant.kept not in texts] == []
    assert all(f"[REDACTED:{kind}]" in texts for kind in KINDS)


def test_add_memory_redacts_its_text_its_facts_and_its_source(tmp_path, server, llm):
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    sent_before = len(server.bodies)
    extractor = llm(memory)
    results = [memory.add_memory(text, reference_time="2024-05-01T10:00:00Z", extractor=extractor) for text in TEXTS]
    sent = server.bodies[sent_before:]
    facts = [memory.add_memory(f"deploy settings {n}", reference_time="2024-05-01T10:00:00Z", facts=[
        {"subject": "deploy bot", "predicate": "configured_with", "object": text, "fact": f"configured with {text}"},
        {"subject": text, "predicate": "belongs_to", "object": "ops team"}]) for n, text in enumerate(TEXTS)]
    secret_source = next(plant for plant in PLANTS if plant.name == "postgres_url")
    sourced = memory.add_memory("the nightly dump", source=secret_source.text, reference_time="2024-05-01T10:00:00Z")
    stored = file_bytes(tmp_path / "m.db")
    memory.close()

    assert [(r.redacted, r.redactions) for r in results] == [({plant.kind: 1}, 1) for plant in PLANTS]
    assert [r.redacted for r in facts] == [{plant.kind: 3} for plant in PLANTS]
    assert sourced.redacted == {"url_password": 1} and sourced.source.startswith("DATABASE_URL=postgres://app:[REDACTED")
    assert len(sent) == len(PLANTS) and [body for body in sent if leaks(body, SECRETS)] == []
    assert leaks(stored, SECRETS) == []
    assert_nothing_stored(tmp_path / "m.db")


def test_a_facts_line_that_spells_its_secrets_with_escapes_keeps_none_of_them(tmp_path):
    """A JSON writer may escape what needs no escaping: PHP writes every "/" as "\\/", and
    any writer may spell a letter as \\u0067. The line as written then holds no secret's
    shape, though the strings it stands for do; neither its facts nor its text may keep one."""
    token, password = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "Zq81-vV3rT"
    path = tmp_path / "escaped.jsonl"
    path.write_text(
        '{"reference_time": "2025-01-02T03:04:05Z", "facts": ['
        '{"subject": "deploy bot", "predicate": "uses", "object": "\\u0067hp_' + token[4:] + '"}, '
        '{"subject": "ci", "predicate": "pulls from", '
        '"object": "https:\\/\\/deploy:' + password + '@git.example.com\\/repo.git"}]}\n')
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    report = memory.ingest([path], IngestOptions(format="facts"))
    stored = file_bytes(tmp_path / "m.db")
    memory.close()
    assert report.added == 1
    # each in its object (the sentence is made from the object redacted) and in the line's text
    assert report.redacted == {"github_token": 2, "url_password": 2}
    assert leaks(stored, [token, password]) == []


def test_episodes_a_caller_built_are_redacted_with_their_assertions(tmp_path):
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    at = "2024-05-01T10:00:00.000000Z"
    episodes = [Episode(source="script", position=n, format="script", content=text, content_hash=content_hash(text),
                        reference_time=at, reference_time_source="record", assertions=[
                            Assertion(subject="deploy bot", predicate="configured_with", object=text, fact=text,
                                      valid_at=at, extractor="script")])
                for n, text in enumerate(TEXTS, 1)]
    report = memory.ingest_episodes(episodes)
    memory.close()
    assert report.redacted == {kind: 3 * count for kind, count in KINDS.items()}
    assert_nothing_stored(tmp_path / "m.db")


def test_a_retry_and_an_embedder_get_no_secret_from_a_store_an_older_memctl_wrote(tmp_path, server, llm,
                                                                                     monkeypatch):
    """A store written before these rules holds what they catch now: the text is redacted
    again on its way out, to the model a retry calls and to the embeddings model."""
    from tests.test_vectors import FakeEndpoint, embedder

    chat = write_format("jsonl", tmp_path / "in", TEXTS)
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    with monkeypatch.context() as older:
        older.setattr("memctl.redact.redact_into", lambda text, found: text)
        memory.ingest(chat, IngestOptions())  # no extractor: stored as it was read, pending
    assert len(leaks(file_bytes(tmp_path / "m.db"), SECRETS)) == len(SECRETS)  # the premise: an old store
    sent_before = len(server.bodies)
    retried = memory.retry([], llm(memory), failed=True)
    endpoint = FakeEndpoint()
    embed_new(memory.db, embedder(endpoint))
    memory.close()
    sent = server.bodies[sent_before:]
    assert len(retried.episodes) == len(PLANTS) and len(sent) == len(PLANTS)
    assert [body for body in sent if leaks(body, SECRETS)] == []
    assert len(endpoint.texts) >= len(PLANTS) and leaks("\n".join(endpoint.texts).encode(), SECRETS) == []


def test_a_secret_across_the_cut_leaves_no_part_of_it(tmp_path):
    """A long turn loses its middle from three quarters of the limit on: a key pasted
    across that point would leave its head, which no rule knows, were it cut first."""
    key = next(plant.secret for plant in PLANTS if plant.name == "anthropic_key")
    before = "ab " * ((MAX_EPISODE_CHARS * 3 // 4 - 10) // 3)  # the key starts 10 characters before the cut
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": before + key + " cd" * 4000,
                                                 "timestamp": "2024-05-01T10:00:00Z"}])
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    report = memory.ingest([chat], IngestOptions())
    (episode,) = memory.episodes()
    content = memory.show(episode.id).content
    memory.close()
    assert report.redacted == {"anthropic_key": 1} and "[cut:" in content
    assert key[:14] not in content  # the cut did not leave the key's head behind


def test_the_command_line_counts_secrets_by_kind_in_the_report_and_the_dry_run(cli, tmp_path):
    chat = write_format("jsonl", tmp_path / "in", TEXTS[:6])
    expected = Counter(plant.kind for plant in PLANTS[:6])
    dry = cli("ingest", *chat, "--dry-run", "--json")
    rows = [__import__("json").loads(line) for line in dry.out.splitlines()]
    assert dry.code == 0 and sum((Counter(row["redacted"]) for row in rows), Counter()) == expected
    table = cli("ingest", *chat, "--dry-run")
    assert "secrets that would be redacted: 6 (" in table.out
    done = cli("ingest", *chat, "--json")
    assert done.code == 0 and done.json()["redacted"] == dict(expected) and done.json()["redactions"] == 6
    assert "secrets redacted" in cli("ingest", *write_format("jsonl", tmp_path / "again", TEXTS[6:8])).out


# --- purge: no byte left ---------------------------------------------------------------------

# Words no other text holds, so that a byte of them found anywhere is a copy of what was purged.
PURGED = ["quokkazumbrella", "zanthoxylumdb", "vorpalwhisker", "glimmerquaff", "snorklewhorf"]


def purged_fragments(word: str) -> list[bytes]:
    # the word, its porter stem, and pieces from its middle: FTS5 stores a term after the
    # prefix it shares with the term before it, so only part of it may be in a block
    return [word.encode(), word[:-2].encode(), word[2:9].encode(), word[-8:-1].encode()]


def test_a_purge_leaves_no_byte_of_the_text_in_the_file_or_its_log(tmp_path, server, llm):
    memory = Memory.open(tmp_path / "m.db", FakeClock())
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "Quokkazumbrella uses Zanthoxylumdb. Billing uses Postgres.",
         "timestamp": "2024-05-01T10:00:00Z"},
        {"role": "user", "content": "Billing uses Postgres since 3 March 2021. Alice lives in Oslo.",
         "timestamp": "2024-05-02T10:00:00Z"}])
    memory.ingest([chat], IngestOptions(), extractor=llm(memory))  # facts, entities and cached replies too
    facts = write_jsonl(tmp_path / "facts.jsonl", [
        {"reference_time": "2024-05-03", "content": "the vorpalwhisker rollout",
         "facts": [{"subject": "vorpalwhisker", "predicate": "runs_on", "object": "glimmerquaff cluster"}]},
        {"reference_time": "2024-05-04", "content": "billing runs on kubernetes",
         "facts": [{"subject": "billing", "predicate": "runs_on", "object": "kubernetes"}]}])
    memory.ingest([facts], IngestOptions())
    added = memory.add_memory("snorklewhorf is the staging codename", reference_time="2024-05-05T10:00:00Z")
    doomed = [e.id for e in memory.episodes() if any(w in memory.show(e.id).content.lower() for w in PURGED)]
    assert len(doomed) == 3 and added.episode_id in doomed
    assert all(any(f in file_bytes(tmp_path / "m.db").lower() for f in purged_fragments(w)) for w in PURGED)

    plan = memory.undo(doomed, apply=True, purge=True)
    assert plan.applied and plan.unerased is None
    raw = file_bytes(tmp_path / "m.db")
    assert not Path(f"{tmp_path / 'm.db'}-wal").exists() or Path(f"{tmp_path / 'm.db'}-wal").stat().st_size == 0
    assert [w for w in PURGED if any(f in raw.lower() for f in purged_fragments(w))] == []
    assert [t for t in index_terms(tmp_path / "m.db") if any(t in w or w[:-2] in t for w in PURGED)] == []
    # what else was said is all there, and recall finds it; what was purged, it does not
    assert all(word in raw for word in (b"Postgres", b"Oslo", b"kubernetes"))
    assert memory.recall("where does Alice live").results and memory.recall("billing kubernetes").results
    assert memory.recall("quokkazumbrella vorpalwhisker snorklewhorf").results == []
    memory.close()
    with sqlite3.connect(tmp_path / "m.db") as conn:
        for index in ("episodes_fts", "facts_fts"):
            conn.execute(f"INSERT INTO {index} ({index}) VALUES ('integrity-check')")


@pytest.mark.sqlite_only
def test_a_purge_a_reader_keeps_from_erasing_says_so_and_the_last_close_erases_it(cli, db_path, tmp_path,
                                                                                monkeypatch):
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 200)  # how long the purge waits for the reader
    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "the quokkazumbrella plan", "timestamp": "2024-05-01T10:00:00Z"},
        {"role": "user", "content": "billing uses postgres", "timestamp": "2024-05-02T10:00:00Z"}])
    memory = Memory.open(db_path, FakeClock())
    memory.ingest([chat], IngestOptions())
    doomed = [e.id for e in memory.episodes() if "quokka" in memory.show(e.id).content]
    reader = sqlite3.connect(db_path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM episodes").fetchone()  # another process, mid-read, from before the purge

    plan = memory.undo(doomed, apply=True, purge=True)
    assert plan.applied and "write-ahead log still holds the purged pages" in plan.unerased
    assert b"quokkazumbrella" in file_bytes(db_path)  # the reader's snapshot: why the purge said so
    reader.execute("COMMIT")
    reader.close()
    memory.close()
    assert b"quokkazumbrella" not in file_bytes(db_path) and not Path(f"{db_path}-wal").exists()

    # On the command line it is a partial failure: exit 1, one line saying why
    again = Memory.open(db_path, FakeClock())
    again.ingest([write_jsonl(tmp_path / "more.jsonl", [
        {"role": "user", "content": "the glimmerquaff plan", "timestamp": "2024-05-03T10:00:00Z"}])], IngestOptions())
    (other,) = [e.id for e in again.episodes() if "glimmerquaff" in again.show(e.id).content]
    again.close()
    reader = sqlite3.connect(db_path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM episodes").fetchone()
    run = cli("undo", other, "--purge", "--apply")
    reader.execute("COMMIT")
    reader.close()
    assert run.code == 1 and run.err.count("\n") == 1 and "purged, but not yet erased from the file" in run.err


def test_a_secret_in_a_model_reply_is_never_stored_or_cached(tmp_path):
    """Issue 31, item 4: a model repeats secrets it was shown (or makes up their likes) in
    subjects, objects and sentences; 55 of 55 planted were stored, in assertions, facts,
    the facts index and the reply cache. Each reply is redacted before any of it is kept."""
    import json

    import httpx2

    from memctl.extract.llm import LLMExtractor, make_client
    from memctl.store.cache import ResponseCache
    from tests.fake_llm import completion

    def reply(request: httpx2.Request) -> httpx2.Response:
        # As a model writes them: what it quotes, with what says what it is (a bare random
        # string is no secret to anyone who reads it, and is left alone)
        assertions = [{"subject": "deploy bot", "predicate": "uses", "object": plant.text[:200],
                       "fact": f"The deploy bot was given this: {plant.text}", "cardinality": "many",
                       "valid_at": "2024-05-01T10:00:00Z", "valid_at_evidence": "reference"} for plant in PLANTS]
        assertions.append({"subject": plant_subject, "predicate": "owns", "object": "staging", "fact": "x",
                           "cardinality": "one", "valid_at": "2024-05-01T10:00:00Z", "valid_at_evidence": "reference"})
        return httpx2.Response(200, json=completion(json.dumps({"entities": [], "assertions": assertions})))

    # a secret as an entity's name: a private key, which its shape says is one
    plant_subject = next(plant.text for plant in PLANTS if plant.kind == "private_key")
    db = tmp_path / "m.db"
    memory = Memory.open(db, FakeClock())
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": "Set up the deploy bot.",
                                                  "timestamp": "2024-05-01T10:00:00Z"}])
    client = make_client(api_key=API_KEY, base_url="http://llm.test/v1",
                         http_client=httpx2.Client(transport=httpx2.MockTransport(reply)))
    extractor = LLMExtractor(client, "leaky", memory.clock, ResponseCache(memory.db, memory.now), max_retries=0)
    report = memory.ingest([chat], IngestOptions(), extractor=extractor)
    assert report.assertions > len(PLANTS) // 2, (report.first_failure, report.dropped[:3])  # kept, its secrets not
    memory.close()
    assert_nothing_stored(db)
    with open_store(db) as conn:
        cached = "".join(row[0] for row in conn.execute("SELECT response FROM llm_cache"))
        assert cached and "[REDACTED:" in cached and leaks(cached.encode(), SECRETS) == []


@pytest.mark.sqlite_only
def test_a_purge_beside_an_open_read_never_makes_another_writer_fail(db_path, tmp_path, monkeypatch):
    """Issue 31, item 3: with another process holding a read transaction, the purge's
    checkpoint waited out the whole busy timeout holding the write lock, and a writer
    beside it failed. It now waits a moment, says the pages are not yet erased, and lets
    the writer in."""
    import threading
    import time

    chat = write_jsonl(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "the quokkazumbrella plan", "timestamp": "2024-05-01T10:00:00Z"}])
    purger = Memory.open(db_path, FakeClock())
    purger.ingest([chat], IngestOptions())
    doomed = [e.id for e in purger.episodes()]
    reader = sqlite3.connect(db_path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM episodes").fetchone()
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 5_000)  # the other writer's patience, short of the old wait
    writer = Memory.open(db_path, FakeClock())
    writer.stats()
    plans = []
    purge = threading.Thread(target=lambda: plans.append(purger.undo(doomed, apply=True, purge=True)))
    purge.start()
    time.sleep(0.5)  # the purge is done and checkpointing, beside the reader
    added = writer.add_memory("billing uses postgres", reference_time="2024-05-02T10:00:00Z")
    purge.join()
    assert added.episode_id and plans[0].applied and plans[0].unerased is not None
    reader.execute("COMMIT")
    reader.close()
    writer.close()
    purger.close()
    assert b"quokkazumbrella" not in file_bytes(db_path)
