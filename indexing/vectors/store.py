"""Child chunks and their vectors in Postgres, through LlamaIndex's PGVectorStore.

Reads go through the store's public `query` (dense search with metadata filters on the access
scope, applied in SQL before ranking). Writes do not use `add`/`delete`, which each commit on
their own: replacing a document must be *one* transaction with its parents and its registry row,
so old chunks keep serving until the new ones are committed. We therefore write rows of the
store's own table class (`_table_class`, built by `_node_to_table_row`) in our session.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, delete, func, select
from sqlalchemy.engine import URL, Engine
from sqlalchemy.orm import Session
from sqlmodel import col

from connectors.document import SourceDocument
from indexing.vectors import sentence_vectors
from indexing.values.sections import Parent
from indexing.storage.database import affected
from indexing.vectors.embedding import EMBED_DIM
from indexing.storage.index_tables import GENERATION_KEY, ParentSection
from indexing.values.hits import ChunkHit

if TYPE_CHECKING:
    from llama_index.vector_stores.postgres import PGVectorStore

TABLE = "docent_chunks"  # PGVectorStore prefixes it: data_docent_chunks
HNSW = {"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 100, "hnsw_dist_method": "vector_cosine_ops"}


@dataclass
class KeywordChunk:
    """One child as the keyword leg reads it: its text and the page fields it is searched by."""

    node_id: str
    text: str
    doc_id: str
    parent_id: str
    access: str
    title: str | None
    heading_path: str | None  # as the metadata stores it: str(HeadingPath)
    path: str | None


def _vector_store(engine: Engine, url: URL, *, setup: bool) -> PGVectorStore:
    """LlamaIndex's PGVectorStore on `engine`: `setup` creates its table and HNSW index (on the
    primary); without it the store only connects (on a standby, which refuses every CREATE)."""
    from sqlalchemy.ext.asyncio import create_async_engine
    from llama_index.vector_stores.postgres import PGVectorStore

    from indexing.storage.database import async_url

    return PGVectorStore(
        engine=engine,
        async_engine=create_async_engine(async_url(url)),  # required by the API; connects lazily
        table_name=TABLE,
        embed_dim=EMBED_DIM,
        use_jsonb=True,
        hnsw_kwargs=dict(HNSW),
        initialization_fail_on_error=True,
        perform_setup=setup,
    )


class ChunkStore:
    """`reads`: the engine (and its URL) the vector leg searches — a hot standby's
    (`indexing.storage.standby`); by default `engine`'s, which creates the table and takes the writes."""

    def __init__(self, engine: Engine, url: URL, reads: tuple[Engine, URL] | None = None) -> None:
        from indexing.storage.database import SETUP_LOCK
        from indexing.storage.locks import advisory_lock

        self.vector_store = _vector_store(engine, url, setup=True)
        # The table and its indexes now, not on first query; under the setup lock, as the
        # extension was: PGVectorStore creates its table if a look finds none, and two processes
        # opening a new database together would both look, then both create it (a duplicate key).
        with advisory_lock(engine, SETUP_LOCK):
            self.vector_store._initialize()
            self.table = self.vector_store._table_class
            self._create_indexes(engine)
        self.searched = self.vector_store  # the store `dense_search` queries
        if reads is not None and reads[0] is not engine:
            self.searched = _vector_store(*reads, setup=False)  # a standby refuses CREATE, even IF NOT EXISTS

    def _create_indexes(self, engine: Engine) -> None:
        """Two indexes PGVectorStore does not create (idempotent; under the setup lock, and a race
        with an older Docent that takes none is harmless):

        - a b-tree on node_id: retrieval reads the matched children's text by node_id, a
          sequential scan of the whole table without it (~80 ms at 100,000 chunks; scale benchmark);
        - a b-tree on the access scope (`metadata_->>'access'`), mostly for its *statistics*:
          without them Postgres guesses that a scope holds 0.5% of the chunks, so every
          scope-filtered search (every Slack question) skipped the HNSW index and computed the
          distance to every chunk — 74 ms p50 instead of 10 ms on the 12,000-chunk handbook, and
          growing with the index. With them it uses HNSW for a large scope (iterative scan, see
          `database.connect`) and this index for a small one. Postgres gathers statistics for
          an expression only when an index names it, and only on ANALYZE: done here once when
          the index is new, after large syncs (`analyze`), and by autovacuum in between.
        """
        from sqlalchemy import text
        from sqlalchemy.exc import IntegrityError

        name = self.table.__tablename__
        try:
            with engine.begin() as conn:
                conn.execute(text(f"CREATE INDEX IF NOT EXISTS {name}_node_id_idx ON {name} (node_id)"))
                created = not conn.execute(
                    text("SELECT 1 FROM pg_indexes WHERE indexname = :i"), {"i": f"{name}_access_idx"}
                ).first()
                conn.execute(text(f"CREATE INDEX IF NOT EXISTS {name}_access_idx ON {name} ((metadata_->>'access'))"))
        except IntegrityError:  # another process created one at the same moment
            return
        if created:
            self.analyze(engine)

    def close(self) -> None:
        """Dispose the engines the vector stores hold (ours, and the asyncpg one each requires).
        Their `close` is a coroutine; from inside a running event loop it runs on a thread of its own."""
        import asyncio
        import threading

        stores = [self.vector_store] if self.searched is self.vector_store else [self.vector_store, self.searched]

        async def close_all() -> None:
            for store in stores:
                await store.close()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(close_all())
            return
        closing = threading.Thread(target=asyncio.run, args=(close_all(),), name="docent-store-close")
        closing.start()
        closing.join()

    def analyze(self, engine: Engine) -> None:
        """Refresh the planner's statistics of the chunk table (~0.1 s at 12,000 chunks)."""
        from sqlalchemy import text

        with engine.begin() as conn:
            conn.execute(text(f"ANALYZE {self.table.__tablename__}"))

    # -- writes (in the caller's transaction) -------------------------------------------------

    def replace_document(
        self, session: Session, doc: SourceDocument, parents: list[Parent], vectors: list[list[float]]
    ) -> int:
        """Swap a document's parents and children for new ones; returns the child count."""
        from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

        self.log_change(session, doc.doc_id)
        self._delete_rows(session, doc.doc_id)
        rows = []
        children = [(parent, child) for parent in parents for child in parent.children]
        assert len(children) == len(vectors), "one vector per child"
        for (parent, child), vector in zip(children, vectors):
            node = TextNode(
                id_=child.id,
                text=child.text,
                embedding=vector,
                metadata={
                    "doc_id": doc.doc_id,
                    "parent_id": parent.id,
                    "source": doc.source,
                    "path": doc.path,
                    "title": doc.title,
                    "heading_path": str(parent.heading_path),
                    "access": doc.access,
                },
                relationships={
                    NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc.doc_id),
                    NodeRelationship.PARENT: RelatedNodeInfo(node_id=parent.id),
                },
            )
            rows.append(self.vector_store._node_to_table_row(node))
        session.add_all(rows)
        session.add_all(
            ParentSection(
                id=p.id, doc_id=doc.doc_id, position=p.position, heading_path=list(p.heading_path), url=p.url, text=p.text
            )
            for p in parents
        )
        return len(rows)

    def set_access(self, session: Session, doc_id: str, access: str) -> int:
        """Give every child of a document another access scope, in the caller's transaction; returns
        how many. Used when a page's scope changes but its new version cannot be indexed: its old
        chunks must not stay visible where the page no longer is.

        A relabel is a keyword change like any other: logged in this transaction, so the next
        published keyword version carries the new scope and every process catching up re-reads
        the page. Otherwise the keyword rows would keep the old scope, and typo repair, document
        frequencies and BM25's statistics would go on counting a restricted page as public."""
        from sqlalchemy import text

        result = session.execute(
            text(f"UPDATE {self.table.__tablename__} SET metadata_ = jsonb_set(metadata_, '{{access}}', "
                 f"to_jsonb(CAST(:access AS text))) WHERE metadata_->>'ref_doc_id' = :doc "
                 f"AND metadata_->>'access' IS DISTINCT FROM :access"),
            {"access": access, "doc": doc_id},
        )
        relabelled = affected(result)
        if relabelled:
            self.log_change(session, doc_id)
        return relabelled

    def delete_document(self, session: Session, doc_id: str) -> None:
        self.log_change(session, doc_id)
        self._delete_rows(session, doc_id)

    def _delete_rows(self, session: Session, doc_id: str) -> None:
        session.execute(delete(self.table).where(self.table.metadata_["ref_doc_id"].astext == doc_id))
        session.execute(delete(ParentSection).where(col(ParentSection.doc_id) == doc_id))
        sentence_vectors.delete_document(session, doc_id)  # the lead's vectors go with their sections

    def log_change(self, session: Session, doc_id: str) -> int:
        """Record that a document's children changed (text, scope or existence), in the caller's
        transaction; returns the generation it is recorded under. Call it from every write that
        changes what the keyword leg must see of a document.

        The generation is bumped here, first thing, so the transaction holds the generation row's
        lock until it commits: generations are then handed out in commit order, and a reader that
        sees generation G has seen every change recorded at G or below (`keyword_versions`).
        """
        from sqlalchemy import text

        generation: int = session.execute(text(
            "INSERT INTO index_state (key, value) VALUES (:k, '1') ON CONFLICT (key) "
            "DO UPDATE SET value = (index_state.value::bigint + 1)::text RETURNING value::bigint"
        ), {"k": GENERATION_KEY}).scalar_one()
        session.execute(text("INSERT INTO keyword_changes (generation, doc_id) VALUES (:g, :d)"),
                        {"g": generation, "d": doc_id})
        return generation

    # -- reads --------------------------------------------------------------------------------

    def dense_search(self, embedding: list[float], scopes: list[str] | None, k: int) -> list[ChunkHit]:
        """The k nearest children by cosine similarity, among the scopes the asker may see."""
        from llama_index.core.vector_stores.types import (
            FilterOperator,
            MetadataFilter,
            MetadataFilters,
            VectorStoreQuery,
        )

        if scopes is not None and not scopes:
            return []  # nothing is visible (an empty IN () is not even valid SQL)
        filters = None
        if scopes is not None:
            filters = MetadataFilters(
                filters=[MetadataFilter(key="access", value=list(scopes), operator=FilterOperator.IN)]
            )
        result = self.searched.query(
            VectorStoreQuery(query_embedding=embedding, similarity_top_k=k, filters=filters)
        )
        # PGVectorStore's query always fills both lists (empty when nothing matched)
        assert result.nodes is not None and result.similarities is not None
        hits = [
            ChunkHit(node_id=node.node_id, score=float(sim), metadata=node.metadata)
            for node, sim in zip(result.nodes, result.similarities)
        ]
        # A filtered HNSW scan in relaxed order (database.connect) can return neighbours slightly
        # out of order; the gate reads the first hit as the vector leg's top page.
        return sorted(hits, key=lambda h: h.score, reverse=True)

    def _keyword_select(self) -> Select[Any]:
        """The children with what the keyword leg indexes, in node-id order (a fresh build's order)."""
        meta = self.table.metadata_
        return select(
            self.table.node_id, self.table.text,
            *(meta[key].astext.label(key) for key in ("doc_id", "parent_id", "access", "title", "heading_path", "path")),
        ).order_by(self.table.node_id)

    def keyword_chunks(self, session: Session, doc_ids: list[str]) -> list[KeywordChunk]:
        """The children of these documents with what the keyword leg indexes."""
        found: list[KeywordChunk] = []
        for start in range(0, len(doc_ids), 1000):
            batch = doc_ids[start : start + 1000]
            found += [KeywordChunk(**row._mapping) for row in session.execute(
                self._keyword_select().where(self.table.metadata_["ref_doc_id"].astext.in_(batch)))]
        return found

    def keyword_chunk_batches(self, session: Session, size: int) -> Iterator[list[KeywordChunk]]:
        """Every child with what the keyword leg indexes, `size` at a time, read through a
        server-side cursor: a million chunks' texts are never in memory together."""
        for rows in session.execute(self._keyword_select().execution_options(yield_per=size)).partitions(size):
            yield [KeywordChunk(**row._mapping) for row in rows]

    def texts(self, session: Session, node_ids: list[str]) -> dict[str, str]:
        """node_id → text of these children."""
        found: dict[str, str] = {}
        for start in range(0, len(node_ids), 5000):  # keep each IN list a sensible size
            batch = node_ids[start : start + 5000]
            found.update(session.execute(
                select(self.table.node_id, self.table.text).where(self.table.node_id.in_(batch))
            ).tuples().all())
        return found

    def count(self, session: Session, scopes: list[str] | None = None) -> int:
        """Children in the store; with `scopes`, only those of documents in these access scopes."""
        query = select(func.count()).select_from(self.table)
        if scopes is not None:
            query = query.where(self.table.metadata_["access"].astext.in_(scopes))
        return session.execute(query).scalar_one()

    def count_by_source(self, session: Session) -> list[tuple[str, int]]:
        """(source, children) for every source with children in the store."""
        source = self.table.metadata_["source"].astext
        return [(name, n) for name, n in session.execute(select(source, func.count()).select_from(self.table)
                                                         .group_by(source))]
