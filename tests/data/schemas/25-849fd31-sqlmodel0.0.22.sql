CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

CREATE TYPE public.status AS ENUM (
    'PENDING',
    'PROCESSING',
    'SUCCESS',
    'FAILED',
    'SKIPPED'
);

CREATE TABLE public.admin_actions (
    id integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    user_id character varying NOT NULL,
    action character varying NOT NULL,
    argument character varying NOT NULL,
    allowed boolean NOT NULL,
    result text NOT NULL,
    finished_at timestamp with time zone
);

CREATE SEQUENCE public.admin_actions_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.admin_actions_id_seq OWNED BY public.admin_actions.id;

CREATE TABLE public.answer_messages (
    channel_id character varying NOT NULL,
    question_ts character varying NOT NULL,
    answer_ts character varying NOT NULL,
    thread_ts character varying,
    surface character varying NOT NULL,
    user_id character varying NOT NULL,
    answer_id character varying NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.data_docent_chunks (
    id bigint NOT NULL,
    text character varying NOT NULL,
    metadata_ jsonb,
    node_id character varying,
    embedding public.vector(384)
);

CREATE SEQUENCE public.data_docent_chunks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.data_docent_chunks_id_seq OWNED BY public.data_docent_chunks.id;

CREATE TABLE public.documents (
    id character varying NOT NULL,
    source character varying NOT NULL,
    path character varying NOT NULL,
    title character varying NOT NULL,
    url character varying NOT NULL,
    access character varying NOT NULL,
    content_hash character varying NOT NULL,
    status public.status NOT NULL,
    error text,
    chunk_count integer NOT NULL,
    updated_at timestamp with time zone,
    indexed_at timestamp with time zone
);

CREATE TABLE public.embedding_cache (
    key character varying NOT NULL,
    vector bytea
);

CREATE TABLE public.feedback (
    id integer NOT NULL,
    answer_id character varying NOT NULL,
    user_id character varying NOT NULL,
    vote character varying NOT NULL,
    reason text,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE public.feedback_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.feedback_id_seq OWNED BY public.feedback.id;

CREATE TABLE public.index_state (
    key character varying NOT NULL,
    value character varying NOT NULL
);

CREATE TABLE public.keyword_bases (
    generation bigint NOT NULL,
    terms_version character varying NOT NULL,
    chunks integer NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    payload bytea NOT NULL
);

CREATE TABLE public.keyword_changes (
    generation bigint NOT NULL,
    doc_id character varying NOT NULL
);

CREATE TABLE public.keyword_versions (
    generation bigint NOT NULL,
    published_at timestamp with time zone DEFAULT now() NOT NULL,
    runner character varying DEFAULT ''::character varying NOT NULL
);

CREATE TABLE public.parent_sections (
    id character varying NOT NULL,
    doc_id character varying NOT NULL,
    "position" integer NOT NULL,
    heading_path json,
    url character varying NOT NULL,
    text text
);

CREATE TABLE public.query_log (
    id integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    answer_id character varying,
    surface character varying NOT NULL,
    user_id character varying NOT NULL,
    channel_id character varying,
    thread_ts character varying,
    message_ts character varying,
    question text NOT NULL,
    context_question text,
    found boolean NOT NULL,
    outcome character varying NOT NULL,
    answer_text text NOT NULL,
    note text,
    doc_ids json,
    scores json,
    sources json,
    signals json,
    timings_ms json,
    llm_used boolean NOT NULL,
    error_ref character varying
);

CREATE SEQUENCE public.query_log_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.query_log_id_seq OWNED BY public.query_log.id;

CREATE TABLE public.slack_deliveries (
    key character varying NOT NULL,
    seen_at timestamp with time zone NOT NULL
);

CREATE TABLE public.sources (
    name character varying NOT NULL,
    kind character varying NOT NULL,
    location character varying NOT NULL,
    origin character varying NOT NULL,
    settings json,
    first_synced_at timestamp without time zone NOT NULL,
    last_synced_at timestamp without time zone NOT NULL
);

CREATE TABLE public.sync_runs (
    id integer NOT NULL,
    source character varying NOT NULL,
    trigger character varying NOT NULL,
    runner character varying NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    added integer NOT NULL,
    updated integer NOT NULL,
    unchanged integer NOT NULL,
    deleted integer NOT NULL,
    failed integer NOT NULL,
    skipped integer NOT NULL,
    guarded_deletes integer NOT NULL,
    result character varying NOT NULL,
    reason text,
    errors json
);

CREATE SEQUENCE public.sync_runs_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.sync_runs_id_seq OWNED BY public.sync_runs.id;

ALTER TABLE ONLY public.admin_actions ALTER COLUMN id SET DEFAULT nextval('public.admin_actions_id_seq'::regclass);

ALTER TABLE ONLY public.data_docent_chunks ALTER COLUMN id SET DEFAULT nextval('public.data_docent_chunks_id_seq'::regclass);

ALTER TABLE ONLY public.feedback ALTER COLUMN id SET DEFAULT nextval('public.feedback_id_seq'::regclass);

ALTER TABLE ONLY public.query_log ALTER COLUMN id SET DEFAULT nextval('public.query_log_id_seq'::regclass);

ALTER TABLE ONLY public.sync_runs ALTER COLUMN id SET DEFAULT nextval('public.sync_runs_id_seq'::regclass);

ALTER TABLE ONLY public.admin_actions
    ADD CONSTRAINT admin_actions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.answer_messages
    ADD CONSTRAINT answer_messages_pkey PRIMARY KEY (channel_id, question_ts);

ALTER TABLE ONLY public.data_docent_chunks
    ADD CONSTRAINT data_docent_chunks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.embedding_cache
    ADD CONSTRAINT embedding_cache_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.feedback
    ADD CONSTRAINT feedback_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.index_state
    ADD CONSTRAINT index_state_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.keyword_bases
    ADD CONSTRAINT keyword_bases_pkey PRIMARY KEY (generation);

ALTER TABLE ONLY public.keyword_versions
    ADD CONSTRAINT keyword_versions_pkey PRIMARY KEY (generation);

ALTER TABLE ONLY public.parent_sections
    ADD CONSTRAINT parent_sections_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.query_log
    ADD CONSTRAINT query_log_answer_id_key UNIQUE (answer_id);

ALTER TABLE ONLY public.query_log
    ADD CONSTRAINT query_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.slack_deliveries
    ADD CONSTRAINT slack_deliveries_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.sources
    ADD CONSTRAINT sources_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.sync_runs
    ADD CONSTRAINT sync_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.feedback
    ADD CONSTRAINT uq_feedback_answer_user UNIQUE (answer_id, user_id);

CREATE INDEX data_docent_chunks_access_idx ON public.data_docent_chunks USING btree (((metadata_ ->> 'access'::text)));

CREATE INDEX data_docent_chunks_embedding_idx ON public.data_docent_chunks USING hnsw (embedding public.vector_cosine_ops) WITH (m='16', ef_construction='64');

CREATE INDEX data_docent_chunks_node_id_idx ON public.data_docent_chunks USING btree (node_id);

CREATE INDEX docent_chunks_idx_1 ON public.data_docent_chunks USING btree (((metadata_ ->> 'ref_doc_id'::text)));

CREATE INDEX ix_admin_actions_created_at ON public.admin_actions USING btree (created_at);

CREATE INDEX ix_admin_actions_user_id ON public.admin_actions USING btree (user_id);

CREATE INDEX ix_answer_messages_answer_ts ON public.answer_messages USING btree (answer_ts);

CREATE INDEX ix_documents_source ON public.documents USING btree (source);

CREATE INDEX ix_documents_status ON public.documents USING btree (status);

CREATE INDEX ix_feedback_answer_id ON public.feedback USING btree (answer_id);

CREATE INDEX ix_feedback_updated_at ON public.feedback USING btree (updated_at);

CREATE INDEX ix_parent_sections_doc_id ON public.parent_sections USING btree (doc_id);

CREATE INDEX ix_query_log_channel_message ON public.query_log USING btree (channel_id, message_ts);

CREATE INDEX ix_query_log_channel_thread ON public.query_log USING btree (channel_id, thread_ts);

CREATE INDEX ix_query_log_created_at ON public.query_log USING btree (created_at);

CREATE INDEX ix_query_log_error_ref ON public.query_log USING btree (error_ref);

CREATE INDEX ix_query_log_user_id ON public.query_log USING btree (user_id);

CREATE INDEX ix_slack_deliveries_seen_at ON public.slack_deliveries USING btree (seen_at);

CREATE INDEX ix_sync_runs_source ON public.sync_runs USING btree (source);

CREATE INDEX keyword_changes_generation_idx ON public.keyword_changes USING btree (generation);
