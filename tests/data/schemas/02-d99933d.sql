CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

CREATE TYPE public.status AS ENUM (
    'PENDING',
    'PROCESSING',
    'SUCCESS',
    'FAILED'
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

CREATE TABLE public.index_state (
    key character varying NOT NULL,
    value character varying NOT NULL
);

CREATE TABLE public.parent_sections (
    id character varying NOT NULL,
    doc_id character varying NOT NULL,
    "position" integer NOT NULL,
    heading_path json,
    url character varying NOT NULL,
    text text
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

ALTER TABLE ONLY public.data_docent_chunks ALTER COLUMN id SET DEFAULT nextval('public.data_docent_chunks_id_seq'::regclass);

ALTER TABLE ONLY public.sync_runs ALTER COLUMN id SET DEFAULT nextval('public.sync_runs_id_seq'::regclass);

ALTER TABLE ONLY public.data_docent_chunks
    ADD CONSTRAINT data_docent_chunks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.embedding_cache
    ADD CONSTRAINT embedding_cache_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.index_state
    ADD CONSTRAINT index_state_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.parent_sections
    ADD CONSTRAINT parent_sections_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.sync_runs
    ADD CONSTRAINT sync_runs_pkey PRIMARY KEY (id);

CREATE INDEX data_docent_chunks_embedding_idx ON public.data_docent_chunks USING hnsw (embedding public.vector_cosine_ops) WITH (m='16', ef_construction='64');

CREATE INDEX docent_chunks_idx_1 ON public.data_docent_chunks USING btree (((metadata_ ->> 'ref_doc_id'::text)));

CREATE INDEX ix_documents_source ON public.documents USING btree (source);

CREATE INDEX ix_documents_status ON public.documents USING btree (status);

CREATE INDEX ix_parent_sections_doc_id ON public.parent_sections USING btree (doc_id);

CREATE INDEX ix_sync_runs_source ON public.sync_runs USING btree (source);
