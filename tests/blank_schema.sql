CREATE VIEW facts_held AS SELECT * FROM facts_named WHERE expired_at IS NULL;
CREATE VIEW facts_named AS
            SELECT f.id AS fact_id, s.name AS subject, f.predicate, o.name AS object, f.fact, f.cardinality,
                   f.valid_at, f.invalid_at, f.end_reason, f.created_at, f.expired_at
            FROM facts f JOIN entities s ON s.id = f.subject_id JOIN entities o ON o.id = f.object_id;
CREATE TABLE "_sqlite_migrations" (
   "id" INTEGER PRIMARY KEY,
   "migration_set" TEXT,
   "name" TEXT,
   "applied_at" TEXT
);
CREATE TABLE api_batch_requests (
            batch_id TEXT NOT NULL REFERENCES api_batches(id),
            episode_id TEXT NOT NULL,
            cache_key TEXT NOT NULL,
            state TEXT NOT NULL,           -- sent | answered | correcting | corrected | failed | unanswered
            reply TEXT,                    -- a first reply sent back for correction (its cache envelope)
            error TEXT,
            PRIMARY KEY (batch_id, episode_id)
        ) WITHOUT ROWID;
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
        , reference_time TEXT, instant TEXT GENERATED ALWAYS AS (coalesce(valid_at, invalid_at)) VIRTUAL);
CREATE TABLE clock (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            last_at TEXT NOT NULL
        );
CREATE TABLE embeddings (
            text_hash TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (text_hash, model)
        );
CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,            -- as first written, in valid-time order
            name_rank TEXT,                -- sort key of the mention that gave the name
            name_key TEXT NOT NULL UNIQUE, -- matching form, see memctl/names.py
            created_at TEXT NOT NULL
        , group_key TEXT);
CREATE TABLE episode_spans (
            episode_id TEXT NOT NULL REFERENCES episodes(id),
            held_from TEXT NOT NULL,
            held_until TEXT,
            PRIMARY KEY (episode_id, held_from)
        ) WITHOUT ROWID;
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
        , extraction TEXT NOT NULL DEFAULT 'structured', extraction_error TEXT, text_id INTEGER, session TEXT);
CREATE VIRTUAL TABLE episodes_fts USING fts5(
            content, content = 'episodes', content_rowid = 'text_id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
CREATE TABLE 'episodes_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE 'episodes_fts_data'(id INTEGER PRIMARY KEY, block BLOB);
CREATE TABLE 'episodes_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);
CREATE TABLE 'episodes_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;
CREATE TABLE fact_provenance (
            fact_id INTEGER NOT NULL REFERENCES facts(id),
            assertion_id INTEGER NOT NULL REFERENCES assertions(id),
            episode_id TEXT NOT NULL REFERENCES episodes(id),
            PRIMARY KEY (fact_id, assertion_id)
        ) WITHOUT ROWID;
CREATE TABLE fact_text_hashes (
            fact_id INTEGER PRIMARY KEY REFERENCES facts(id),
            text_hash TEXT NOT NULL
        );
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
CREATE VIRTUAL TABLE facts_fts USING fts5(
            fact, subject, predicate, object, tokenize = 'porter unicode61'
        );
CREATE TABLE llm_cache (
            key TEXT PRIMARY KEY,
            response TEXT NOT NULL,
            created_at TEXT NOT NULL
        , episode_id TEXT);
CREATE TABLE merges (
            operation_id TEXT NOT NULL REFERENCES operations(id),
            from_id INTEGER NOT NULL REFERENCES entities(id),
            into_id INTEGER NOT NULL REFERENCES entities(id),
            created_at TEXT NOT NULL,
            expired_at TEXT,
            PRIMARY KEY (operation_id, from_id)
        ) WITHOUT ROWID;
CREATE TABLE operations (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,            -- ingest | undo | rebuild | ...
            at TEXT NOT NULL,              -- transaction time it started
            finished_at TEXT,              -- NULL while running, or if it was killed
            status TEXT NOT NULL,          -- running | done | interrupted
            command TEXT,                  -- JSON: what was asked
            counts TEXT,                   -- JSON: what it did
            episode_ids TEXT               -- JSON: episodes an undo removed
        , process TEXT);
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
CREATE TABLE resolutions (
            name_key TEXT PRIMARY KEY,
            entity_id INTEGER NOT NULL REFERENCES entities(id),
            rule TEXT NOT NULL,            -- article | possessive | generic_noun | alias, comma-separated
            created_at TEXT NOT NULL
        ) WITHOUT ROWID;
CREATE TABLE retries (
            operation_id TEXT NOT NULL REFERENCES operations(id),
            episode_id TEXT NOT NULL REFERENCES episodes(id),
            old_extraction TEXT NOT NULL,
            old_extraction_error TEXT,
            PRIMARY KEY (operation_id, episode_id)
        ) WITHOUT ROWID;
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
CREATE TABLE session_summaries (
            session TEXT NOT NULL,
            episodes_hash TEXT NOT NULL,
            text TEXT NOT NULL,
            model TEXT NOT NULL,
            episode_ids TEXT NOT NULL,     -- JSON: the turns it was written from
            created_at TEXT NOT NULL,
            PRIMARY KEY (session, episodes_hash)
        ) WITHOUT ROWID;
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
CREATE TABLE underived_slots (
            subject_id INTEGER NOT NULL,
            predicate_key TEXT NOT NULL,
            operation_id TEXT NOT NULL,
            since TEXT NOT NULL,
            PRIMARY KEY (subject_id, predicate_key, operation_id)
        ) WITHOUT ROWID;
CREATE INDEX api_batch_requests_episode ON api_batch_requests(episode_id);
CREATE INDEX api_batch_requests_open ON api_batch_requests(state) WHERE state IN ('sent', 'correcting');
CREATE INDEX assertions_episode ON assertions(episode_id);
CREATE INDEX assertions_invalid_midnight ON assertions(extracted_at, invalid_at)
            WHERE expired_at IS NULL AND substr(invalid_at, 11) = 'T00:00:00.000000Z';
CREATE INDEX assertions_invalid_on_extraction_day ON assertions(invalid_at)
            WHERE expired_at IS NULL AND substr(invalid_at, 1, 10) = substr(extracted_at, 1, 10);
CREATE INDEX assertions_midnight_invalid ON assertions(episode_id) WHERE expired_at IS NULL
            AND substr(invalid_at, 11) = 'T00:00:00.000000Z' AND substr(invalid_at, 1, 10) = substr(extracted_at, 1, 10);
CREATE INDEX assertions_midnight_valid ON assertions(episode_id) WHERE expired_at IS NULL
            AND substr(valid_at, 11) = 'T00:00:00.000000Z' AND substr(valid_at, 1, 10) = substr(extracted_at, 1, 10);
CREATE INDEX assertions_object ON assertions(object_id);
CREATE INDEX assertions_slot ON assertions(subject_id, predicate_key);
CREATE INDEX assertions_slot_timeline ON assertions(subject_id, predicate_key, instant)
            WHERE expired_at IS NULL;
CREATE INDEX assertions_valid_midnight ON assertions(extracted_at, valid_at)
            WHERE expired_at IS NULL AND substr(valid_at, 11) = 'T00:00:00.000000Z';
CREATE INDEX assertions_valid_on_extraction_day ON assertions(valid_at)
            WHERE expired_at IS NULL AND substr(valid_at, 1, 10) = substr(extracted_at, 1, 10);
CREATE INDEX assertions_value_timeline ON assertions(subject_id, predicate_key, object_id, instant)
            WHERE expired_at IS NULL;
CREATE INDEX embeddings_model ON embeddings(model);
CREATE INDEX entities_group ON entities(group_key);
CREATE INDEX episodes_extraction ON episodes(extraction) WHERE extraction IN ('failed', 'pending');
CREATE INDEX episodes_operation ON episodes(operation_id);
CREATE INDEX episodes_reference_time ON episodes(reference_time);
CREATE INDEX episodes_session ON episodes(CASE WHEN session IS NULL THEN source ELSE source || '#' || session END);
CREATE INDEX episodes_source ON episodes(source, position);
CREATE UNIQUE INDEX episodes_text_id ON episodes(text_id);
CREATE INDEX fact_provenance_assertion ON fact_provenance(assertion_id);
CREATE INDEX facts_created ON facts(created_at);
CREATE INDEX facts_object ON facts(object_id);
CREATE INDEX facts_slot ON facts(subject_id, predicate_key);
CREATE INDEX facts_slot_timeline ON facts(subject_id, predicate_key, valid_at) WHERE expired_at IS NULL;
CREATE INDEX facts_value_timeline ON facts(subject_id, predicate_key, object_id, valid_at)
            WHERE expired_at IS NULL;
CREATE UNIQUE INDEX "idx__sqlite_migrations_migration_set_name"
    ON "_sqlite_migrations" ("migration_set", "name");
CREATE INDEX llm_cache_episode ON llm_cache(episode_id);
CREATE INDEX merges_held ON merges(from_id) WHERE expired_at IS NULL;
CREATE INDEX revisions_operation ON revisions(operation_id);
CREATE INDEX summaries_hash ON summaries(subject_id, facts_hash);
CREATE INDEX summaries_subject ON summaries(subject_id, created_at);
CREATE INDEX summary_gates_dirty ON summary_gates(subject_id) WHERE dirty = 1;
CREATE INDEX summary_gates_pending ON summary_gates(subject_id) WHERE passes > 0;
CREATE INDEX underived_slots_operation ON underived_slots(operation_id);
