"""The database schema, as named migrations applied in order.

Never edit a migration that has shipped: add the next one. ``tests/test_schema.py``
pins the schema of a blank database, so any change here shows up there.
"""

from __future__ import annotations

import sqlite3

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

migrations = Migrations("memctl")


def _execute_each(db: Database, script: str) -> None:
    # executescript() would COMMIT first and break the migration's transaction.
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""


@migrations(name="0001_core")
def core(db: Database) -> None:
    _execute_each(
        db,
        """
        CREATE TABLE operations (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,            -- ingest | undo | rebuild | ...
            at TEXT NOT NULL,              -- transaction time it started
            finished_at TEXT,              -- NULL while running, or if it was killed
            status TEXT NOT NULL,          -- running | done | interrupted
            command TEXT,                  -- JSON: what was asked
            counts TEXT,                   -- JSON: what it did
            episode_ids TEXT               -- JSON: episodes an undo removed
        );

        CREATE TABLE episodes (
            id TEXT PRIMARY KEY,           -- ep_ + hash of source, position, content
            source TEXT NOT NULL,
            position INTEGER NOT NULL,     -- line or record number in the source
            source_id TEXT,
            format TEXT NOT NULL,
            content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            reference_time TEXT NOT NULL,  -- the episode's true time
            reference_time_source TEXT NOT NULL,
            status TEXT NOT NULL,          -- active | undone
            created_at TEXT NOT NULL,      -- transaction time it was (last) ingested
            operation_id TEXT REFERENCES operations(id)
        );
        CREATE INDEX episodes_source ON episodes(source, position);
        CREATE INDEX episodes_operation ON episodes(operation_id);

        CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,            -- as first written, in valid-time order
            name_rank TEXT,                -- sort key of the mention that gave the name
            name_key TEXT NOT NULL UNIQUE, -- matching form, see memctl/names.py
            created_at TEXT NOT NULL
        );

        CREATE TABLE assertions (
            id INTEGER PRIMARY KEY,
            episode_id TEXT NOT NULL REFERENCES episodes(id),
            ordinal INTEGER NOT NULL,      -- position within the episode
            subject TEXT NOT NULL,
            subject_id INTEGER NOT NULL REFERENCES entities(id),
            predicate TEXT NOT NULL,
            predicate_key TEXT NOT NULL,
            object TEXT NOT NULL,
            object_id INTEGER NOT NULL REFERENCES entities(id),
            fact TEXT NOT NULL,
            valid_at TEXT,                 -- NULL only for a retraction
            valid_at_evidence TEXT,        -- text | relative | reference | explicit | repair
            valid_at_precision TEXT,       -- instant | day | month | year
            invalid_at TEXT,
            invalid_at_evidence TEXT,
            invalid_at_precision TEXT,
            date_span TEXT,                -- the words that carry the date
            cardinality TEXT NOT NULL,     -- one | many
            extractor TEXT NOT NULL,
            extracted_at TEXT NOT NULL,
            created_at TEXT NOT NULL,      -- transaction time
            expired_at TEXT                -- set by undo; NULL while active
        );
        CREATE INDEX assertions_episode ON assertions(episode_id);
        CREATE INDEX assertions_slot ON assertions(subject_id, predicate_key);
        CREATE INDEX assertions_object ON assertions(object_id);

        CREATE TABLE facts (
            id INTEGER PRIMARY KEY,
            subject_id INTEGER NOT NULL REFERENCES entities(id),
            predicate TEXT NOT NULL,
            predicate_key TEXT NOT NULL,
            object_id INTEGER NOT NULL REFERENCES entities(id),
            fact TEXT NOT NULL,
            cardinality TEXT NOT NULL,
            valid_at TEXT NOT NULL,
            invalid_at TEXT,
            end_reason TEXT,               -- stated | superseded | NULL while open
            created_at TEXT NOT NULL,
            expired_at TEXT
        );
        CREATE INDEX facts_slot ON facts(subject_id, predicate_key);
        CREATE INDEX facts_object ON facts(object_id);
        CREATE INDEX facts_created ON facts(created_at);

        CREATE TABLE fact_provenance (
            fact_id INTEGER NOT NULL REFERENCES facts(id),
            assertion_id INTEGER NOT NULL REFERENCES assertions(id),
            episode_id TEXT NOT NULL REFERENCES episodes(id),
            PRIMARY KEY (fact_id, assertion_id)
        ) WITHOUT ROWID;
        CREATE INDEX fact_provenance_assertion ON fact_provenance(assertion_id);

        CREATE VIRTUAL TABLE facts_fts USING fts5(
            fact, subject, predicate, object, tokenize = 'porter unicode61'
        );

        -- The last transaction time handed out, so that time strictly increases
        -- even when the wall clock repeats or steps back.
        CREATE TABLE clock (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            last_at TEXT NOT NULL
        );
        """
    )


@migrations(name="0002_extraction")
def extraction(db: Database) -> None:
    _execute_each(
        db,
        """
        -- structured: assertions came with the file (--format facts); done, failed: an
        -- extractor ran; pending: no extractor could run yet (an LLM was unreachable).
        ALTER TABLE episodes ADD COLUMN extraction TEXT NOT NULL DEFAULT 'structured';
        ALTER TABLE episodes ADD COLUMN extraction_error TEXT;
        CREATE INDEX episodes_extraction ON episodes(extraction) WHERE extraction IN ('failed', 'pending');

        -- LLM replies by sha256 of (model, prompt version, request): re-runs cost no call.
        CREATE TABLE llm_cache (
            key TEXT PRIMARY KEY,
            response TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        """
    )


@migrations(name="0003_repairs")
def repairs(db: Database) -> None:
    _execute_each(
        db,
        """
        -- Every date a repair changed, so that undoing the repair restores it byte for byte.
        CREATE TABLE repairs (
            operation_id TEXT NOT NULL REFERENCES operations(id),
            assertion_id INTEGER NOT NULL REFERENCES assertions(id),
            column_name TEXT NOT NULL,     -- valid_at | invalid_at
            old_value TEXT,
            old_evidence TEXT,
            old_precision TEXT,
            new_value TEXT,
            PRIMARY KEY (operation_id, assertion_id, column_name)
        ) WITHOUT ROWID;

        -- The "today @ 00:00" signature (architecture §3), defined by
        -- memctl.extract.dates.is_extraction_day_midnight, as partial indexes: finding
        -- the suspects among a million assertions reads only the suspects.
        CREATE INDEX assertions_midnight_valid ON assertions(episode_id) WHERE expired_at IS NULL
            AND substr(valid_at, 11) = 'T00:00:00.000000Z' AND substr(valid_at, 1, 10) = substr(extracted_at, 1, 10);
        CREATE INDEX assertions_midnight_invalid ON assertions(episode_id) WHERE expired_at IS NULL
            AND substr(invalid_at, 11) = 'T00:00:00.000000Z' AND substr(invalid_at, 1, 10) = substr(extracted_at, 1, 10);
        """
    )


@migrations(name="0004_assertion_reference_time")
def assertion_reference_time(db: Database) -> None:
    _execute_each(
        db,
        """
        -- The episode's reference time, copied onto each of its assertions (it never
        -- changes): slot resolution and entity naming order by it, and re-resolving a
        -- million assertions without a join per row is what keeps a repair fast.
        -- NULL never occurs; SQLite cannot add a NOT NULL column without a default.
        ALTER TABLE assertions ADD COLUMN reference_time TEXT;
        UPDATE assertions SET reference_time = (SELECT e.reference_time FROM episodes e WHERE e.id = assertions.episode_id);
        """
    )


@migrations(name="0005_retries_and_cache_episodes")
def retries_and_cache_episodes(db: Database) -> None:
    _execute_each(
        db,
        """
        -- Which episode each cached LLM reply was for, so that undo --purge erases the
        -- reply too (it holds what the model made of the text). Older rows have NULL.
        ALTER TABLE llm_cache ADD COLUMN episode_id TEXT;
        CREATE INDEX llm_cache_episode ON llm_cache(episode_id);

        -- Each episode a retry re-extracted and its extraction state before, so undoing the
        -- retry puts that back. The replaced assertions need no copy: they stay in
        -- assertions, expired at the retry's transaction time.
        CREATE TABLE retries (
            operation_id TEXT NOT NULL REFERENCES operations(id),
            episode_id TEXT NOT NULL REFERENCES episodes(id),
            old_extraction TEXT NOT NULL,
            old_extraction_error TEXT,
            PRIMARY KEY (operation_id, episode_id)
        ) WITHOUT ROWID;
        """
    )


@migrations(name="0006_revisions")
def revisions(db: Database) -> None:
    _execute_each(
        db,
        """
        -- An episode read again with more content (a session still being written when it
        -- was ingested) takes the new reading; the one it replaced is kept here, so that
        -- undoing the ingest that revised it puts it back.
        CREATE TABLE revisions (
            episode_id TEXT NOT NULL REFERENCES episodes(id),
            revised_at TEXT NOT NULL,      -- transaction time; its old assertions expired then
            operation_id TEXT NOT NULL REFERENCES operations(id),
            old_content TEXT NOT NULL,
            old_content_hash TEXT NOT NULL,
            old_extraction TEXT NOT NULL,
            old_extraction_error TEXT,
            old_operation_id TEXT,
            old_created_at TEXT NOT NULL,
            PRIMARY KEY (episode_id, revised_at)
        ) WITHOUT ROWID;
        CREATE INDEX revisions_operation ON revisions(operation_id);
        """
    )


@migrations(name="0007_repair_near_miss_indexes")
def repair_near_miss_indexes(db: Database) -> None:
    _execute_each(
        db,
        """
        -- What repair counts as near misses, held in partial indexes like its suspects
        -- (0003): dates on the day they were extracted, and midnights, each half of the
        -- signature (memctl.extract.dates.is_extraction_day_midnight) without the other.
        -- Counting them then reads these few rows instead of scanning every assertion twice.
        CREATE INDEX assertions_valid_on_extraction_day ON assertions(valid_at)
            WHERE expired_at IS NULL AND substr(valid_at, 1, 10) = substr(extracted_at, 1, 10);
        CREATE INDEX assertions_invalid_on_extraction_day ON assertions(invalid_at)
            WHERE expired_at IS NULL AND substr(invalid_at, 1, 10) = substr(extracted_at, 1, 10);
        CREATE INDEX assertions_valid_midnight ON assertions(extracted_at, valid_at)
            WHERE expired_at IS NULL AND substr(valid_at, 11) = 'T00:00:00.000000Z';
        CREATE INDEX assertions_invalid_midnight ON assertions(extracted_at, invalid_at)
            WHERE expired_at IS NULL AND substr(invalid_at, 11) = 'T00:00:00.000000Z';
        """
    )


@migrations(name="0008_episode_search")
def episode_search(db: Database) -> None:
    _execute_each(
        db,
        """
        -- What was said, searchable: each stored episode's (already redacted) text,
        -- stemmed by porter ("decided" finds "decide") as facts_fts is.
        CREATE VIRTUAL TABLE episodes_fts USING fts5(
            content, tokenize = 'porter unicode61 remove_diacritics 2'
        );
        -- Which row of episodes_fts holds which episode's text. Text rows are numbered in
        -- the order they are written: FTS5 appends ascending rowids cheaply, and its own
        -- rowids survive a VACUUM, which those of episodes (no integer key) may not.
        CREATE TABLE episode_texts (
            text_id INTEGER PRIMARY KEY,
            episode_id TEXT NOT NULL UNIQUE REFERENCES episodes(id)
        );

        -- When memctl held each episode (transaction time): a span from each time it was
        -- stored or brought back to the undo that took it out, so that recall --known-at
        -- finds an undone episode only before its undo.
        CREATE TABLE episode_spans (
            episode_id TEXT NOT NULL REFERENCES episodes(id),
            held_from TEXT NOT NULL,
            held_until TEXT,
            PRIMARY KEY (episode_id, held_from)
        ) WITHOUT ROWID;

        -- Recall's window on what was said: by reference time.
        CREATE INDEX episodes_reference_time ON episodes(reference_time);

        INSERT INTO episode_texts (episode_id) SELECT id FROM episodes ORDER BY reference_time, id;
        INSERT INTO episodes_fts (rowid, content)
        SELECT x.text_id, e.content FROM episode_texts x JOIN episodes e ON e.id = x.episode_id ORDER BY x.text_id;

        INSERT INTO episode_spans (episode_id, held_from, held_until)
        SELECT id, created_at, NULL FROM episodes WHERE status = 'active';
        -- An undone episode was held until the last undo that named it (or, if none can
        -- be found, not at all: an empty span).
        INSERT INTO episode_spans (episode_id, held_from, held_until)
        SELECT e.id, e.created_at, coalesce(
            (SELECT max(o.at) FROM operations o, json_each(o.episode_ids) j
             WHERE o.kind = 'undo' AND j.value = e.id AND o.at >= e.created_at), e.created_at)
        FROM episodes e WHERE e.status = 'undone';
        """
    )


@migrations(name="0009_embeddings")
def embeddings(db: Database) -> None:
    _execute_each(
        db,
        """
        -- Vectors of stored texts, for recall's vector ranker: by sha256 of the text (an
        -- episode's content_hash) and the model that made them, so a text embedded once
        -- serves every episode and fact version that says it. float32, little-endian. A
        -- rowid table: a vector is kilobytes, too wide for a WITHOUT ROWID b-tree.
        CREATE TABLE embeddings (
            text_hash TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (text_hash, model)
        );
        -- The ranker reads one model's vectors in storage order; another model's (used
        -- before, or again later) are skipped without being read.
        CREATE INDEX embeddings_model ON embeddings(model);

        -- The hash of each fact version's text, which facts keep no column for: filled in
        -- when vectors are made (memctl.embeddings.embed_new), for every version.
        CREATE TABLE fact_text_hashes (
            fact_id INTEGER PRIMARY KEY REFERENCES facts(id),
            text_hash TEXT NOT NULL
        );
        """
    )


@migrations(name="0010_episode_text_once")
def episode_text_once(db: Database) -> None:
    _execute_each(
        db,
        """
        -- The episode text index reads the text from episodes instead of keeping a copy
        -- (every conversation was stored twice), and each episode carries its index row
        -- number: the separate episode_texts table cost a random insert into its index
        -- by episode id for every episode stored. Row numbers still follow write order
        -- (FTS5 appends ascending rowids cheaply) and survive a VACUUM, which the
        -- episodes' own rowids (no integer key) may not. The writers remove a row's
        -- tokens ('delete') before its text changes or goes.
        ALTER TABLE episodes ADD COLUMN text_id INTEGER;
        UPDATE episodes SET text_id = (SELECT x.text_id FROM episode_texts x WHERE x.episode_id = episodes.id);
        CREATE UNIQUE INDEX episodes_text_id ON episodes(text_id);
        DROP TABLE episodes_fts;
        DROP TABLE episode_texts;
        CREATE VIRTUAL TABLE episodes_fts USING fts5(
            content, content = 'episodes', content_rowid = 'text_id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        INSERT INTO episodes_fts (episodes_fts) VALUES ('rebuild');
        """
    )


@migrations(name="0011_operation_process")
def operation_process(db: Database) -> None:
    _execute_each(
        db,
        """
        -- Which process runs an operation ("host:pid"), so that the next writer can tell
        -- an ingest killed with -9 or by a power cut (still 'running', and nobody running
        -- it) from one another process is running now, and mark it 'interrupted'.
        ALTER TABLE operations ADD COLUMN process TEXT;
        """
    )


@migrations(name="0012_timeline_indexes")
def timeline_indexes(db: Database) -> None:
    _execute_each(
        db,
        """
        -- A recomputation reads only the stretch of a slot's timeline that a change
        -- reaches (store/facts.py): the active assertions and current facts of a slot,
        -- or of one value of a many-valued slot, in time order. An assertion's place in
        -- the timeline is a column (computed, not stored) so that a join can range over
        -- it: SQLite ranges over an indexed expression only against constants.
        ALTER TABLE assertions ADD COLUMN instant TEXT GENERATED ALWAYS AS (coalesce(valid_at, invalid_at)) VIRTUAL;
        CREATE INDEX assertions_slot_timeline ON assertions(subject_id, predicate_key, instant)
            WHERE expired_at IS NULL;
        CREATE INDEX assertions_value_timeline ON assertions(subject_id, predicate_key, object_id, instant)
            WHERE expired_at IS NULL;
        CREATE INDEX facts_slot_timeline ON facts(subject_id, predicate_key, valid_at) WHERE expired_at IS NULL;
        CREATE INDEX facts_value_timeline ON facts(subject_id, predicate_key, object_id, valid_at)
            WHERE expired_at IS NULL;
        """
    )


@migrations(name="0013_underived_slots")
def underived_slots(db: Database) -> None:
    _execute_each(
        db,
        """
        -- The slots whose facts do not yet include what an operation has committed: an
        -- ingest or undo of many batches derives facts for several batches at once
        -- (store/underived.py), and says here, in each batch's transaction, what it still
        -- owes and since when. Any other change to such a slot resolves it whole; the
        -- next writer to open the file resolves those of an operation that is no longer
        -- running (killed).
        CREATE TABLE underived_slots (
            subject_id INTEGER NOT NULL,
            predicate_key TEXT NOT NULL,
            operation_id TEXT NOT NULL,
            since TEXT NOT NULL,
            PRIMARY KEY (subject_id, predicate_key, operation_id)
        ) WITHOUT ROWID;
        CREATE INDEX underived_slots_operation ON underived_slots(operation_id);
        """
    )


@migrations(name="0014_episode_sessions")
def episode_sessions(db: Database) -> None:
    _execute_each(
        db,
        """
        -- The conversation an episode is part of, in a source that holds many (a ChatGPT
        -- or Claude.ai export, a chat log of several threads); NULL where the source is one
        -- session. Recall ranks whole sessions (store/search.py: SESSION), by this key.
        ALTER TABLE episodes ADD COLUMN session TEXT;
        CREATE INDEX episodes_session ON episodes(CASE WHEN session IS NULL THEN source ELSE source || '#' || session END);
        """
    )


@migrations(name="0015_summaries")
def summaries(db: Database) -> None:
    _execute_each(
        db,
        """
        -- Entity summaries a model wrote (memctl/summarize.py), each version held over
        -- [created_at, expired_at) in transaction time, as facts are. A version is current
        -- only while the entity's facts are the set it was written from (facts_hash): any
        -- change to them expires it at once (store/summaries.py), and an undo that brings
        -- the set back brings the summary back as a new version, with no model call.
        CREATE TABLE summaries (
            id INTEGER PRIMARY KEY,
            subject_id INTEGER NOT NULL,
            facts_hash TEXT NOT NULL,      -- memctl.summary.facts_hash of the facts it was written from
            text TEXT NOT NULL,
            model TEXT NOT NULL,
            reason TEXT NOT NULL,          -- why the gate asked for it: new | invalidated | burst | stale
            created_at TEXT NOT NULL,
            expired_at TEXT
        );
        CREATE INDEX summaries_subject ON summaries(subject_id, created_at);
        CREATE INDEX summaries_hash ON summaries(subject_id, facts_hash);

        -- The novelty gate's state, one row per entity whose facts changed since its
        -- summary was last decided on (memctl/summarize.py says what each column decides).
        CREATE TABLE summary_gates (
            subject_id INTEGER PRIMARY KEY,
            dirty INTEGER NOT NULL,        -- 1: facts changed since the last gate pass
            invalidated INTEGER NOT NULL,  -- 1: a fact ended, was superseded or went, since the last summary
            passes INTEGER NOT NULL,       -- gate passes (operations) that found it changed since its last summary
            first_changed_at TEXT,         -- the first of those, and the last (transaction time)
            last_changed_at TEXT,
            refreshed_at TEXT,             -- when a model last wrote its summary
            owed TEXT                      -- why a refresh is owed and not done: no_model | unavailable | failed
        ) WITHOUT ROWID;
        CREATE INDEX summary_gates_dirty ON summary_gates(subject_id) WHERE dirty = 1;
        CREATE INDEX summary_gates_pending ON summary_gates(subject_id) WHERE passes > 0;

        -- One sentence a model wrote about a session (store/search.py: SESSION), for the
        -- set of its turns it read (episodes_hash): served while the session holds just
        -- those turns, found again if it holds them again, erased with any of them by a purge.
        CREATE TABLE session_summaries (
            session TEXT NOT NULL,
            episodes_hash TEXT NOT NULL,
            text TEXT NOT NULL,
            model TEXT NOT NULL,
            episode_ids TEXT NOT NULL,     -- JSON: the turns it was written from
            created_at TEXT NOT NULL,
            PRIMARY KEY (session, episodes_hash)
        ) WITHOUT ROWID;
        """
    )


@migrations(name="0016_views")
def views(db: Database) -> None:
    _execute_each(
        db,
        """
        -- The facts as a person browsing the file (Datasette, sqlite-utils) reads them:
        -- entity names instead of ids, both time axes beside each other. Every version, and
        -- the versions memctl holds now.
        CREATE VIEW facts_named AS
            SELECT f.id AS fact_id, s.name AS subject, f.predicate, o.name AS object, f.fact, f.cardinality,
                   f.valid_at, f.invalid_at, f.end_reason, f.created_at, f.expired_at
            FROM facts f JOIN entities s ON s.id = f.subject_id JOIN entities o ON o.id = f.object_id;
        CREATE VIEW facts_held AS SELECT * FROM facts_named WHERE expired_at IS NULL;
        """
    )


@migrations(name="0017_entity_resolution")
def entity_resolution(db: Database) -> None:
    from memctl import aliases

    _execute_each(
        db,
        """
        -- The key a name resolves by when no entity has its own key (memctl/aliases.py:
        -- Reading.group): "the billing service" and "billing" are both "billing".
        ALTER TABLE entities ADD COLUMN group_key TEXT;
        CREATE INDEX entities_group ON entities(group_key);

        -- A name (its key) that resolved to an entity other than its own, and by which rule
        -- (memctl/aliases.py): it resolves alike from then on, whatever comes after.
        CREATE TABLE resolutions (
            name_key TEXT PRIMARY KEY,
            entity_id INTEGER NOT NULL REFERENCES entities(id),
            rule TEXT NOT NULL,            -- article | possessive | generic_noun | alias, comma-separated
            created_at TEXT NOT NULL
        ) WITHOUT ROWID;

        -- memctl merge: the entity from_id is the entity into_id, from created_at until the
        -- merge is undone (expired_at). A name of from_id resolves to into_id meanwhile.
        CREATE TABLE merges (
            operation_id TEXT NOT NULL REFERENCES operations(id),
            from_id INTEGER NOT NULL REFERENCES entities(id),
            into_id INTEGER NOT NULL REFERENCES entities(id),
            created_at TEXT NOT NULL,
            expired_at TEXT,
            PRIMARY KEY (operation_id, from_id)
        ) WITHOUT ROWID;
        CREATE INDEX merges_held ON merges(from_id) WHERE expired_at IS NULL;
        """
    )
    known = aliases.known_aliases()
    db.conn.executemany("UPDATE entities SET group_key = ? WHERE id = ?",
                        [(aliases.reading(name, known).group, entity_id)
                         for entity_id, name in db.execute("SELECT id, name FROM entities").fetchall()])


@migrations(name="0018_api_batches")
def api_batches(db: Database) -> None:
    _execute_each(
        db,
        """
        -- Extraction through the Batch API (memctl/batch.py): a row per batch the API was,
        -- or is about to be, given. Written before the upload, so that a process killed
        -- between upload and creation leaves what to resume, never a second batch.
        CREATE TABLE api_batches (
            id TEXT PRIMARY KEY,           -- memctl's; also the batch's metadata, by which one made before a crash is found
            kind TEXT NOT NULL,            -- extraction | correction
            model TEXT NOT NULL,
            state TEXT NOT NULL,           -- preparing | submitted | cancelling | completed | expired | failed | cancelled
            file_id TEXT,                  -- the uploaded requests
            remote_id TEXT,                -- the API's batch id
            remote_status TEXT,            -- what the API last said of it
            requests INTEGER NOT NULL,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

        -- An episode's request in a batch. custom_id is cache_key: one request serves every
        -- episode of the same text and time, and its reply is cached under that key.
        CREATE TABLE api_batch_requests (
            batch_id TEXT NOT NULL REFERENCES api_batches(id),
            episode_id TEXT NOT NULL,
            cache_key TEXT NOT NULL,
            state TEXT NOT NULL,           -- sent | answered | correcting | corrected | failed | unanswered
            reply TEXT,                    -- a first reply sent back for correction (its cache envelope)
            error TEXT,
            PRIMARY KEY (batch_id, episode_id)
        ) WITHOUT ROWID;
        CREATE INDEX api_batch_requests_episode ON api_batch_requests(episode_id);
        CREATE INDEX api_batch_requests_open ON api_batch_requests(state) WHERE state IN ('sent', 'correcting');
        """
    )
