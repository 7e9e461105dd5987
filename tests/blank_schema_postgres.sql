column api_batch_requests.batch_id text NOT NULL
column api_batch_requests.episode_id text NOT NULL
column api_batch_requests.cache_key text NOT NULL
column api_batch_requests.state text NOT NULL
column api_batch_requests.reply text
column api_batch_requests.error text
column api_batches.id text NOT NULL
column api_batches.kind text NOT NULL
column api_batches.model text NOT NULL
column api_batches.state text NOT NULL
column api_batches.file_id text
column api_batches.remote_id text
column api_batches.remote_status text
column api_batches.requests bigint NOT NULL
column api_batches.input_tokens bigint NOT NULL DEFAULT 0
column api_batches.output_tokens bigint NOT NULL DEFAULT 0
column api_batches.error text
column api_batches.created_at text NOT NULL
column api_batches.updated_at text NOT NULL
column assertions.id bigint NOT NULL
column assertions.episode_id text NOT NULL
column assertions.ordinal bigint NOT NULL
column assertions.subject text NOT NULL
column assertions.subject_id bigint NOT NULL
column assertions.predicate text NOT NULL
column assertions.predicate_key text NOT NULL
column assertions.object text NOT NULL
column assertions.object_id bigint NOT NULL
column assertions.fact text NOT NULL
column assertions.valid_at text
column assertions.valid_at_evidence text
column assertions.valid_at_precision text
column assertions.invalid_at text
column assertions.invalid_at_evidence text
column assertions.invalid_at_precision text
column assertions.date_span text
column assertions.cardinality text NOT NULL
column assertions.extractor text NOT NULL
column assertions.extracted_at text NOT NULL
column assertions.created_at text NOT NULL
column assertions.expired_at text
column assertions.reference_time text
column assertions.instant text AS COALESCE(valid_at, invalid_at)
column clock.id bigint NOT NULL
column clock.last_at text NOT NULL
column embeddings.text_hash text NOT NULL
column embeddings.model text NOT NULL
column embeddings.vector bytea NOT NULL
column entities.id bigint NOT NULL
column entities.name text NOT NULL
column entities.name_rank text
column entities.name_key text NOT NULL
column entities.created_at text NOT NULL
column entities.group_key text
column episode_spans.episode_id text NOT NULL
column episode_spans.held_from text NOT NULL
column episode_spans.held_until text
column episodes.id text NOT NULL
column episodes.source text NOT NULL
column episodes.position bigint NOT NULL
column episodes.source_id text
column episodes.format text NOT NULL
column episodes.content text NOT NULL
column episodes.content_hash text NOT NULL
column episodes.reference_time text NOT NULL
column episodes.reference_time_source text NOT NULL
column episodes.status text NOT NULL
column episodes.created_at text NOT NULL
column episodes.operation_id text
column episodes.extraction text NOT NULL DEFAULT 'structured'::text
column episodes.extraction_error text
column episodes.text_id bigint
column episodes.session text
column episodes.content_tsv tsvector AS to_tsvector('memctl'::regconfig, content)
column fact_provenance.fact_id bigint NOT NULL
column fact_provenance.assertion_id bigint NOT NULL
column fact_provenance.episode_id text NOT NULL
column fact_text_hashes.fact_id bigint NOT NULL
column fact_text_hashes.text_hash text NOT NULL
column fact_texts.fact_id bigint NOT NULL
column fact_texts.fact text NOT NULL
column fact_texts.subject text NOT NULL
column fact_texts.predicate text NOT NULL
column fact_texts.object text NOT NULL
column fact_texts.document tsvector AS to_tsvector('memctl'::regconfig, ((((((fact || ' '::text) || subject) || ' '::text) || predicate) || ' '::text) || object))
column facts.id bigint NOT NULL
column facts.subject_id bigint NOT NULL
column facts.predicate text NOT NULL
column facts.predicate_key text NOT NULL
column facts.object_id bigint NOT NULL
column facts.fact text NOT NULL
column facts.cardinality text NOT NULL
column facts.valid_at text NOT NULL
column facts.invalid_at text
column facts.end_reason text
column facts.created_at text NOT NULL
column facts.expired_at text
column facts_held.fact_id bigint
column facts_held.subject text
column facts_held.predicate text
column facts_held.object text
column facts_held.fact text
column facts_held.cardinality text
column facts_held.valid_at text
column facts_held.invalid_at text
column facts_held.end_reason text
column facts_held.created_at text
column facts_held.expired_at text
column facts_named.fact_id bigint
column facts_named.subject text
column facts_named.predicate text
column facts_named.object text
column facts_named.fact text
column facts_named.cardinality text
column facts_named.valid_at text
column facts_named.invalid_at text
column facts_named.end_reason text
column facts_named.created_at text
column facts_named.expired_at text
column llm_cache.key text NOT NULL
column llm_cache.response text NOT NULL
column llm_cache.created_at text NOT NULL
column llm_cache.episode_id text
column memctl_migrations.name text NOT NULL
column memctl_migrations.applied_at text NOT NULL
column merges.operation_id text NOT NULL
column merges.from_id bigint NOT NULL
column merges.into_id bigint NOT NULL
column merges.created_at text NOT NULL
column merges.expired_at text
column operations.id text NOT NULL
column operations.kind text NOT NULL
column operations.at text NOT NULL
column operations.finished_at text
column operations.status text NOT NULL
column operations.command text
column operations.counts text
column operations.episode_ids text
column operations.process text
column repairs.operation_id text NOT NULL
column repairs.assertion_id bigint NOT NULL
column repairs.column_name text NOT NULL
column repairs.old_value text
column repairs.old_evidence text
column repairs.old_precision text
column repairs.new_value text
column resolutions.name_key text NOT NULL
column resolutions.entity_id bigint NOT NULL
column resolutions.rule text NOT NULL
column resolutions.created_at text NOT NULL
column retries.operation_id text NOT NULL
column retries.episode_id text NOT NULL
column retries.old_extraction text NOT NULL
column retries.old_extraction_error text
column revisions.episode_id text NOT NULL
column revisions.revised_at text NOT NULL
column revisions.operation_id text NOT NULL
column revisions.old_content text NOT NULL
column revisions.old_content_hash text NOT NULL
column revisions.old_extraction text NOT NULL
column revisions.old_extraction_error text
column revisions.old_operation_id text
column revisions.old_created_at text NOT NULL
column session_summaries.session text NOT NULL
column session_summaries.episodes_hash text NOT NULL
column session_summaries.text text NOT NULL
column session_summaries.model text NOT NULL
column session_summaries.episode_ids text NOT NULL
column session_summaries.created_at text NOT NULL
column summaries.id bigint NOT NULL
column summaries.subject_id bigint NOT NULL
column summaries.facts_hash text NOT NULL
column summaries.text text NOT NULL
column summaries.model text NOT NULL
column summaries.reason text NOT NULL
column summaries.created_at text NOT NULL
column summaries.expired_at text
column summary_gates.subject_id bigint NOT NULL
column summary_gates.dirty bigint NOT NULL
column summary_gates.invalidated bigint NOT NULL
column summary_gates.passes bigint NOT NULL
column summary_gates.first_changed_at text
column summary_gates.last_changed_at text
column summary_gates.refreshed_at text
column summary_gates.owed text
column underived_slots.subject_id bigint NOT NULL
column underived_slots.predicate_key text NOT NULL
column underived_slots.operation_id text NOT NULL
column underived_slots.since text NOT NULL
constraint api_batch_requests.api_batch_requests_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES api_batches(id)
constraint api_batch_requests.api_batch_requests_pkey PRIMARY KEY (batch_id, episode_id)
constraint api_batches.api_batches_pkey PRIMARY KEY (id)
constraint assertions.assertions_episode_id_fkey FOREIGN KEY (episode_id) REFERENCES episodes(id)
constraint assertions.assertions_object_id_fkey FOREIGN KEY (object_id) REFERENCES entities(id)
constraint assertions.assertions_pkey PRIMARY KEY (id)
constraint assertions.assertions_subject_id_fkey FOREIGN KEY (subject_id) REFERENCES entities(id)
constraint clock.clock_id_check CHECK ((id = 1))
constraint clock.clock_pkey PRIMARY KEY (id)
constraint embeddings.embeddings_pkey PRIMARY KEY (text_hash, model)
constraint entities.entities_name_key_key UNIQUE (name_key)
constraint entities.entities_pkey PRIMARY KEY (id)
constraint episode_spans.episode_spans_episode_id_fkey FOREIGN KEY (episode_id) REFERENCES episodes(id)
constraint episode_spans.episode_spans_pkey PRIMARY KEY (episode_id, held_from)
constraint episodes.episodes_operation_id_fkey FOREIGN KEY (operation_id) REFERENCES operations(id)
constraint episodes.episodes_pkey PRIMARY KEY (id)
constraint fact_provenance.fact_provenance_assertion_id_fkey FOREIGN KEY (assertion_id) REFERENCES assertions(id)
constraint fact_provenance.fact_provenance_episode_id_fkey FOREIGN KEY (episode_id) REFERENCES episodes(id)
constraint fact_provenance.fact_provenance_fact_id_fkey FOREIGN KEY (fact_id) REFERENCES facts(id)
constraint fact_provenance.fact_provenance_pkey PRIMARY KEY (fact_id, assertion_id)
constraint fact_text_hashes.fact_text_hashes_fact_id_fkey FOREIGN KEY (fact_id) REFERENCES facts(id)
constraint fact_text_hashes.fact_text_hashes_pkey PRIMARY KEY (fact_id)
constraint fact_texts.fact_texts_fact_id_fkey FOREIGN KEY (fact_id) REFERENCES facts(id)
constraint fact_texts.fact_texts_pkey PRIMARY KEY (fact_id)
constraint facts.facts_object_id_fkey FOREIGN KEY (object_id) REFERENCES entities(id)
constraint facts.facts_pkey PRIMARY KEY (id)
constraint facts.facts_subject_id_fkey FOREIGN KEY (subject_id) REFERENCES entities(id)
constraint llm_cache.llm_cache_pkey PRIMARY KEY (key)
constraint memctl_migrations.memctl_migrations_pkey PRIMARY KEY (name)
constraint merges.merges_from_id_fkey FOREIGN KEY (from_id) REFERENCES entities(id)
constraint merges.merges_into_id_fkey FOREIGN KEY (into_id) REFERENCES entities(id)
constraint merges.merges_operation_id_fkey FOREIGN KEY (operation_id) REFERENCES operations(id)
constraint merges.merges_pkey PRIMARY KEY (operation_id, from_id)
constraint operations.operations_pkey PRIMARY KEY (id)
constraint repairs.repairs_assertion_id_fkey FOREIGN KEY (assertion_id) REFERENCES assertions(id)
constraint repairs.repairs_operation_id_fkey FOREIGN KEY (operation_id) REFERENCES operations(id)
constraint repairs.repairs_pkey PRIMARY KEY (operation_id, assertion_id, column_name)
constraint resolutions.resolutions_entity_id_fkey FOREIGN KEY (entity_id) REFERENCES entities(id)
constraint resolutions.resolutions_pkey PRIMARY KEY (name_key)
constraint retries.retries_episode_id_fkey FOREIGN KEY (episode_id) REFERENCES episodes(id)
constraint retries.retries_operation_id_fkey FOREIGN KEY (operation_id) REFERENCES operations(id)
constraint retries.retries_pkey PRIMARY KEY (operation_id, episode_id)
constraint revisions.revisions_episode_id_fkey FOREIGN KEY (episode_id) REFERENCES episodes(id)
constraint revisions.revisions_operation_id_fkey FOREIGN KEY (operation_id) REFERENCES operations(id)
constraint revisions.revisions_pkey PRIMARY KEY (episode_id, revised_at)
constraint session_summaries.session_summaries_pkey PRIMARY KEY (session, episodes_hash)
constraint summaries.summaries_pkey PRIMARY KEY (id)
constraint summary_gates.summary_gates_pkey PRIMARY KEY (subject_id)
constraint underived_slots.underived_slots_pkey PRIMARY KEY (subject_id, predicate_key, operation_id)
index CREATE INDEX api_batch_requests_episode ON public.api_batch_requests USING btree (episode_id NULLS FIRST)
index CREATE INDEX api_batch_requests_open ON public.api_batch_requests USING btree (state NULLS FIRST) WHERE (state = ANY (ARRAY['sent'::text, 'correcting'::text]))
index CREATE UNIQUE INDEX api_batch_requests_pkey ON public.api_batch_requests USING btree (batch_id, episode_id)
index CREATE UNIQUE INDEX api_batches_pkey ON public.api_batches USING btree (id)
index CREATE INDEX assertions_episode ON public.assertions USING btree (episode_id NULLS FIRST)
index CREATE INDEX assertions_invalid_midnight ON public.assertions USING btree (extracted_at NULLS FIRST, invalid_at NULLS FIRST) WHERE ((expired_at IS NULL) AND (substr(invalid_at, 11) = 'T00:00:00.000000Z'::text))
index CREATE INDEX assertions_invalid_on_extraction_day ON public.assertions USING btree (invalid_at NULLS FIRST) WHERE ((expired_at IS NULL) AND (substr(invalid_at, 1, 10) = substr(extracted_at, 1, 10)))
index CREATE INDEX assertions_midnight_invalid ON public.assertions USING btree (episode_id NULLS FIRST) WHERE ((expired_at IS NULL) AND (substr(invalid_at, 11) = 'T00:00:00.000000Z'::text) AND (substr(invalid_at, 1, 10) = substr(extracted_at, 1, 10)))
index CREATE INDEX assertions_midnight_valid ON public.assertions USING btree (episode_id NULLS FIRST) WHERE ((expired_at IS NULL) AND (substr(valid_at, 11) = 'T00:00:00.000000Z'::text) AND (substr(valid_at, 1, 10) = substr(extracted_at, 1, 10)))
index CREATE INDEX assertions_object ON public.assertions USING btree (object_id NULLS FIRST)
index CREATE UNIQUE INDEX assertions_pkey ON public.assertions USING btree (id)
index CREATE INDEX assertions_slot ON public.assertions USING btree (subject_id NULLS FIRST, predicate_key NULLS FIRST)
index CREATE INDEX assertions_slot_timeline ON public.assertions USING btree (subject_id NULLS FIRST, predicate_key NULLS FIRST, instant NULLS FIRST) WHERE (expired_at IS NULL)
index CREATE INDEX assertions_valid_midnight ON public.assertions USING btree (extracted_at NULLS FIRST, valid_at NULLS FIRST) WHERE ((expired_at IS NULL) AND (substr(valid_at, 11) = 'T00:00:00.000000Z'::text))
index CREATE INDEX assertions_valid_on_extraction_day ON public.assertions USING btree (valid_at NULLS FIRST) WHERE ((expired_at IS NULL) AND (substr(valid_at, 1, 10) = substr(extracted_at, 1, 10)))
index CREATE INDEX assertions_value_timeline ON public.assertions USING btree (subject_id NULLS FIRST, predicate_key NULLS FIRST, object_id NULLS FIRST, instant NULLS FIRST) WHERE (expired_at IS NULL)
index CREATE UNIQUE INDEX clock_pkey ON public.clock USING btree (id)
index CREATE INDEX embeddings_model ON public.embeddings USING btree (model NULLS FIRST)
index CREATE UNIQUE INDEX embeddings_pkey ON public.embeddings USING btree (text_hash, model)
index CREATE INDEX entities_group ON public.entities USING btree (group_key NULLS FIRST)
index CREATE UNIQUE INDEX entities_name_key_key ON public.entities USING btree (name_key)
index CREATE UNIQUE INDEX entities_pkey ON public.entities USING btree (id)
index CREATE UNIQUE INDEX episode_spans_pkey ON public.episode_spans USING btree (episode_id, held_from)
index CREATE INDEX episodes_content_tsv ON public.episodes USING gin (content_tsv)
index CREATE INDEX episodes_extraction ON public.episodes USING btree (extraction NULLS FIRST) WHERE (extraction = ANY (ARRAY['failed'::text, 'pending'::text]))
index CREATE INDEX episodes_operation ON public.episodes USING btree (operation_id NULLS FIRST)
index CREATE UNIQUE INDEX episodes_pkey ON public.episodes USING btree (id)
index CREATE INDEX episodes_reference_time ON public.episodes USING btree (reference_time NULLS FIRST)
index CREATE INDEX episodes_session ON public.episodes USING btree ((
CASE
    WHEN (session IS NULL) THEN source
    ELSE ((source || '#'::text) || session)
END))
index CREATE INDEX episodes_source ON public.episodes USING btree (source NULLS FIRST, "position" NULLS FIRST)
index CREATE UNIQUE INDEX episodes_text_id ON public.episodes USING btree (text_id NULLS FIRST)
index CREATE INDEX fact_provenance_assertion ON public.fact_provenance USING btree (assertion_id NULLS FIRST)
index CREATE UNIQUE INDEX fact_provenance_pkey ON public.fact_provenance USING btree (fact_id, assertion_id)
index CREATE UNIQUE INDEX fact_text_hashes_pkey ON public.fact_text_hashes USING btree (fact_id)
index CREATE INDEX fact_texts_document ON public.fact_texts USING gin (document)
index CREATE UNIQUE INDEX fact_texts_pkey ON public.fact_texts USING btree (fact_id)
index CREATE INDEX facts_created ON public.facts USING btree (created_at NULLS FIRST)
index CREATE INDEX facts_object ON public.facts USING btree (object_id NULLS FIRST)
index CREATE UNIQUE INDEX facts_pkey ON public.facts USING btree (id)
index CREATE INDEX facts_slot ON public.facts USING btree (subject_id NULLS FIRST, predicate_key NULLS FIRST)
index CREATE INDEX facts_slot_timeline ON public.facts USING btree (subject_id NULLS FIRST, predicate_key NULLS FIRST, valid_at NULLS FIRST) WHERE (expired_at IS NULL)
index CREATE INDEX facts_value_timeline ON public.facts USING btree (subject_id NULLS FIRST, predicate_key NULLS FIRST, object_id NULLS FIRST, valid_at NULLS FIRST) WHERE (expired_at IS NULL)
index CREATE INDEX llm_cache_episode ON public.llm_cache USING btree (episode_id NULLS FIRST)
index CREATE UNIQUE INDEX llm_cache_pkey ON public.llm_cache USING btree (key)
index CREATE UNIQUE INDEX memctl_migrations_pkey ON public.memctl_migrations USING btree (name)
index CREATE INDEX merges_held ON public.merges USING btree (from_id NULLS FIRST) WHERE (expired_at IS NULL)
index CREATE UNIQUE INDEX merges_pkey ON public.merges USING btree (operation_id, from_id)
index CREATE UNIQUE INDEX operations_pkey ON public.operations USING btree (id)
index CREATE UNIQUE INDEX repairs_pkey ON public.repairs USING btree (operation_id, assertion_id, column_name)
index CREATE UNIQUE INDEX resolutions_pkey ON public.resolutions USING btree (name_key)
index CREATE UNIQUE INDEX retries_pkey ON public.retries USING btree (operation_id, episode_id)
index CREATE INDEX revisions_operation ON public.revisions USING btree (operation_id NULLS FIRST)
index CREATE UNIQUE INDEX revisions_pkey ON public.revisions USING btree (episode_id, revised_at)
index CREATE UNIQUE INDEX session_summaries_pkey ON public.session_summaries USING btree (session, episodes_hash)
index CREATE INDEX summaries_hash ON public.summaries USING btree (subject_id NULLS FIRST, facts_hash NULLS FIRST)
index CREATE UNIQUE INDEX summaries_pkey ON public.summaries USING btree (id)
index CREATE INDEX summaries_subject ON public.summaries USING btree (subject_id NULLS FIRST, created_at NULLS FIRST)
index CREATE INDEX summary_gates_dirty ON public.summary_gates USING btree (subject_id NULLS FIRST) WHERE (dirty = 1)
index CREATE INDEX summary_gates_pending ON public.summary_gates USING btree (subject_id NULLS FIRST) WHERE (passes > 0)
index CREATE UNIQUE INDEX summary_gates_pkey ON public.summary_gates USING btree (subject_id)
index CREATE INDEX underived_slots_operation ON public.underived_slots USING btree (operation_id NULLS FIRST)
index CREATE UNIQUE INDEX underived_slots_pkey ON public.underived_slots USING btree (subject_id, predicate_key, operation_id)
view facts_held SELECT facts_named.fact_id, facts_named.subject, facts_named.predicate, facts_named.object, facts_named.fact, facts_named.cardinality, facts_named.valid_at, facts_named.invalid_at, facts_named.end_reason, facts_named.created_at, facts_named.expired_at FROM facts_named WHERE (facts_named.expired_at IS NULL);
view facts_named SELECT f.id AS fact_id, s.name AS subject, f.predicate, o.name AS object, f.fact, f.cardinality, f.valid_at, f.invalid_at, f.end_reason, f.created_at, f.expired_at FROM ((facts f JOIN entities s ON ((s.id = f.subject_id))) JOIN entities o ON ((o.id = f.object_id)));
