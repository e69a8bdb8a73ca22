"""Keyword search over the child chunks: LlamaIndex's BM25Retriever (bm25s), CJK-aware.

bm25s splits text on word boundaries, which leaves a Chinese sentence as one giant "word". So
before tokenising we rewrite runs of CJK characters as overlapping character bigrams
("报销流程" → "报销 销流 流程"), the classic choice for Chinese retrieval without a dictionary;
English goes through the Snowball stemmer and stop-word removal as usual.

The index is static: rebuilt from the chunks in Postgres after every sync that changed
something, persisted under `KB_HOME/bm25/<version>/`, and the version recorded in the database.
Readers (every Docent process) compare versions on each query and reload, or rebuild from the
database themselves if the files are not on their disk.
"""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import threading
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from indexing.memory import release_free_memory
from indexing.registry import GENERATION_KEY, IndexState
from indexing.store import ChunkHit, ChunkStore

log = logging.getLogger(__name__)
logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets itself to DEBUG

VERSION_KEY = "bm25_version"
BUILT_FROM_KEY = "bm25_generation"  # the chunk generation the published BM25 was built from
TOKEN_PATTERN = r"(?u)\b\w+\b"  # single characters too: a lone CJK character is a word
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_STATS = "docent_stats.json"

# Words that shape a question but say nothing about its topic: pronouns, auxiliaries and modals,
# question words, articles and conjunctions. bm25s drops only 33 stop words, and only from the
# indexed text, so "am i allowed to have a side job" matched pages on "i", "have" and "am" as
# well as "side" and "job". Prepositions and quantifiers stay ("time *off*", "*after* 5 years",
# "*above* what amount"): NLTK's longer list removes them and measurably hurt (docs/tuning.md).
QUESTION_WORDS = frozenset("""
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself
she her hers herself it its itself they them their theirs themselves
am is are was were be been being have has had having do does did doing done
can could should would will shall may might must
what which who whom whose when where why how
a an the this that these those and but or if as because so than there here just
im ive id ill youre theyre weve whats hows wheres whos dont doesnt didnt cant wont isnt arent
""".split())
_WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w]+")


def analyze(text: str) -> str:
    """Text with every CJK run replaced by its overlapping character bigrams."""

    def bigrams(match: re.Match) -> str:
        run = match.group(0)
        if len(run) == 1:
            return f" {run} "
        return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "

    return _CJK.sub(bigrams, text)


def question_text(question: str) -> str:
    """A question as the keyword leg should see it: without its function words (`QUESTION_WORDS`).

    Only English words are dropped; CJK text and everything else pass through unchanged.
    """
    kept = [w for w in _WORD.findall(question) if w.lower().replace("'", "").replace("’", "") not in QUESTION_WORDS]
    return "".join(kept)


def tokens(text: str) -> list[str]:
    """The terms BM25 sees for a text (analysed, lower-cased, stop words out, stemmed)."""
    return _terms(analyze(text))


def _terms(analyzed: str) -> list[str]:
    return _terms_of_each([analyzed])[0]


def _terms_of_each(analyzed: list[str]) -> list[list[str]]:
    """The terms of each text, in one bm25s call: it costs ~0.3 ms per call whatever the text
    (progress bars, a vocabulary), which made counting document frequencies text by text ~45% of
    a BM25 rebuild."""
    import bm25s

    return bm25s.tokenize(
        analyzed, token_pattern=TOKEN_PATTERN, stopwords="en", stemmer=_stemmer(),
        return_ids=False, show_progress=False,
    )


def chunk_search_text(text: str, metadata: dict) -> str:
    """What BM25 indexes for a child: title and heading path count as words of the chunk."""
    return f"{metadata.get('title', '')} {metadata.get('heading_path', '')}\n{text}"


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


@dataclass
class _Loaded:
    version: str
    bm25: object | None  # bm25s.BM25, None for an empty index
    doc_freq: dict[str, dict[str, int]] = field(default_factory=dict)  # scope → term → chunks
    num_docs: dict[str, int] = field(default_factory=dict)  # scope → chunks
    retrievers: dict = field(default_factory=dict)  # scopes → BM25Retriever with that weight mask


class Bm25Index:
    def __init__(self, home: Path, engine: Engine, store: ChunkStore) -> None:
        self.dir = Path(home) / "bm25"
        self.engine = engine
        self.store = store
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    # -- building -----------------------------------------------------------------------------

    def rebuild(self) -> str:
        """Build from every chunk in the database, persist, publish the new version."""
        from llama_index.core.schema import TextNode
        from llama_index.retrievers.bm25 import BM25Retriever

        with Session(self.engine) as session:
            generation = _state(session, GENERATION_KEY, "0")  # read first: a later change means a later rebuild
            rows = self.store.all_chunks(session)
        version = uuid.uuid4().hex[:12]
        target = self.dir / version
        if rows:
            nodes = [
                TextNode(
                    id_=node_id,
                    text=analyze(chunk_search_text(text, meta)),
                    metadata={k: meta.get(k) for k in ("doc_id", "parent_id", "access")},
                )
                for node_id, text, meta in rows
            ]
            retriever = BM25Retriever(
                nodes=nodes, stemmer=_stemmer(), language="en", token_pattern=TOKEN_PATTERN, similarity_top_k=1
            )
            target.mkdir(parents=True, exist_ok=True)
            retriever.persist(str(target), show_progress=False)
            # Document frequencies per access scope, so the gate's IDF weights come from what the
            # asker can see (and statistics of restricted pages do not leak into other answers).
            doc_freq: dict[str, dict[str, int]] = {}
            num_docs: dict[str, int] = {}
            for node, terms in zip(nodes, _terms_of_each([node.text for node in nodes])):
                scope = node.metadata["access"]
                num_docs[scope] = num_docs.get(scope, 0) + 1
                freq = doc_freq.setdefault(scope, {})
                for term in set(terms):
                    freq[term] = freq.get(term, 0) + 1
            (target / _STATS).write_text(json.dumps({"num_docs": num_docs, "doc_freq": doc_freq}))
        with Session(self.engine) as session:
            session.merge(IndexState(key=VERSION_KEY, value=version if rows else f"empty-{version}"))
            session.merge(IndexState(key=BUILT_FROM_KEY, value=generation))
            session.commit()
        self._prune(keep={version})
        return version

    def stale(self) -> bool:
        """Whether chunks changed since the published BM25 was built."""
        with Session(self.engine) as session:
            return _state(session, GENERATION_KEY, "0") != _state(session, BUILT_FROM_KEY, "0")

    def _prune(self, keep: set[str]) -> None:
        """Drop old versions, keeping the newest few so readers mid-load are not pulled from under."""
        if not self.dir.exists():
            return
        old = sorted((p for p in self.dir.iterdir() if p.is_dir() and p.name not in keep), key=lambda p: p.stat().st_mtime)
        for path in old[:-2]:
            shutil.rmtree(path, ignore_errors=True)

    # -- searching ----------------------------------------------------------------------------

    def search(self, question: str, scopes: list[str] | None, k: int) -> list[ChunkHit]:
        """The k best children by BM25 among the visible scopes; zero-score padding dropped."""
        from llama_index.core.schema import QueryBundle

        loaded = self._current()
        if loaded.bm25 is None:
            return []
        retriever = self._retriever(loaded, scopes, k)
        if retriever is None:
            return []
        hits = retriever.retrieve(QueryBundle(query_str=analyze(question_text(question))))
        return [
            ChunkHit(node_id=h.node.node_id, score=float(h.score), metadata=dict(h.node.metadata))
            for h in hits
            if h.score and h.score > 0
        ]

    def idf(self, terms: set[str], scopes: list[str] | None) -> tuple[dict[str, float], set[str]]:
        """IDF of each term among the visible chunks, and the terms that occur there at all.

        Terms the visible wiki never uses get the highest IDF.
        """
        loaded = self._current()
        visible = list(loaded.num_docs) if scopes is None else [s for s in scopes if s in loaded.num_docs]
        n = max(sum(loaded.num_docs[s] for s in visible), 1)
        weights, known = {}, set()
        for term in terms:
            df = sum(loaded.doc_freq[s].get(term, 0) for s in visible)
            weights[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))
            if df:
                known.add(term)
        return weights, known

    def _retriever(self, loaded: _Loaded, scopes: list[str] | None, k: int):
        from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters
        from llama_index.retrievers.bm25 import BM25Retriever

        key = (tuple(sorted(scopes)) if scopes is not None else None, k)
        with self._lock:
            if key not in loaded.retrievers:
                filters = None
                if scopes is not None:
                    filters = MetadataFilters(
                        filters=[MetadataFilter(key="access", value=list(scopes), operator=FilterOperator.IN)]
                    )
                try:
                    loaded.retrievers[key] = BM25Retriever(
                        existing_bm25=loaded.bm25, stemmer=_stemmer(), token_pattern=TOKEN_PATTERN,
                        similarity_top_k=k, filters=filters,
                    )
                except ValueError:  # every chunk filtered out: nothing visible to this asker
                    loaded.retrievers[key] = None
            return loaded.retrievers[key]

    def _current(self) -> _Loaded:
        version = self._published_version()
        loaded = self._loaded
        if loaded is not None and loaded.version == version:
            return loaded
        if not version.startswith("empty-") and not (self.dir / version / _STATS).exists():
            log.info("BM25 version %s is not on this disk; rebuilding from the database", version)
            version = self.rebuild()
        with self._lock:
            replaced = self._loaded is None or self._loaded.version != version
            if replaced:
                self._loaded = self._load(version)
            loaded = self._loaded
        if replaced:
            release_free_memory()  # the previous version's arrays are gone; give their pages back
        return loaded

    def _published_version(self) -> str:
        with Session(self.engine) as session:
            return _state(session, VERSION_KEY, "empty-none")

    def _load(self, version: str) -> _Loaded:
        import bm25s

        if version.startswith("empty-"):
            return _Loaded(version=version, bm25=None)
        path = self.dir / version
        stats = json.loads((path / _STATS).read_text())
        bm25 = bm25s.BM25.load(str(path), load_corpus=True)
        return _Loaded(version=version, bm25=bm25, doc_freq=stats["doc_freq"], num_docs=stats["num_docs"])


def _state(session: Session, key: str, default: str) -> str:
    row = session.exec(select(IndexState).where(IndexState.key == key)).first()
    return row.value if row else default
