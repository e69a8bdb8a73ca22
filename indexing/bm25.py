"""Keyword search over the child chunks: LlamaIndex's BM25Retriever (bm25s), CJK-aware.

bm25s splits text on word boundaries, which leaves a Chinese sentence as one giant "word". So
before tokenising we rewrite runs of CJK characters as overlapping character bigrams
("报销流程" → "报销 销流 流程"), the classic choice for Chinese retrieval without a dictionary;
English goes through the Snowball stemmer and stop-word removal as usual.

The index is static: rebuilt from the chunks in Postgres after every sync that changed
something (tokenising only the chunks whose text it has not seen: `indexing.bm25_terms`),
persisted under `KB_HOME/bm25/<version>/`, and the version recorded in the database.
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
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from indexing.bm25_terms import TokenisedCorpus, fingerprint, tokenise_corpus
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
_NODES = "docent_nodes.json"  # [node_id, doc_id, parent_id, access] per row of the index
_PATH_EXTENSION = re.compile(r"\.(md|markdown|mdx|html?|xml|json|txt)$", re.IGNORECASE)
_PATH_SEPARATORS = re.compile(r"[/\\_.\-]+")

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
    return _bm25s_tokenize([analyzed], return_ids=False)[0]


def _tokenise(analyzed: list[str]) -> tuple[list[list[int]], dict[str, int]]:
    """Term ids of each text and their vocabulary, in one bm25s call: it costs ~0.3 ms per
    call whatever the text (progress bars, a vocabulary)."""
    result = _bm25s_tokenize(analyzed, return_ids=True)
    return result.ids, result.vocab


def _bm25s_tokenize(analyzed: list[str], *, return_ids: bool):
    """The one place the index's tokenizer settings are spelled out (questions and chunks alike)."""
    import bm25s

    return bm25s.tokenize(
        analyzed, token_pattern=TOKEN_PATTERN, stopwords="en", stemmer=_stemmer(),
        return_ids=return_ids, show_progress=False,
    )


def chunk_search_text(text: str, title: str | None, heading_path: str | None, path: str | None) -> str:
    """What BM25 indexes for a child: its page's title, heading path and file path count as
    words of the chunk. The path's folders and file name name a page as a title does, and split
    at separators they match the question's words ("on_call.md" → "on call"); measured in
    docs/tuning.md §7. Changing what goes in here means bumping `bm25_terms.TERMS_VERSION`."""
    return f"{title or ''} {heading_path or ''} {path_words(path or '')}\n{text}"


def path_words(path: str) -> str:
    """A document path as words: "process/incidents/on_call.md" → "process incidents on call"."""
    return _PATH_SEPARATORS.sub(" ", _PATH_EXTENSION.sub("", path)).strip()


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
    access: list[str] = field(default_factory=list)  # each row's access scope, in index order


class Bm25Index:
    def __init__(self, home: Path, engine: Engine, store: ChunkStore) -> None:
        self.dir = Path(home) / "bm25"
        self.engine = engine
        self.store = store
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()
        self.last_tokenised = 0  # chunks the last rebuild had to tokenise (the rest were reused)

    # -- building -----------------------------------------------------------------------------

    def rebuild(self) -> str:
        """Build from every chunk in the database, persist, publish the new version.

        Only chunks whose search text the previous version has not tokenised are read and
        tokenised (`indexing.bm25_terms`); the index itself is then built afresh from the term
        ids, so it is exactly what a build from scratch would give.
        """
        import bm25s
        from bm25s.tokenization import Tokenized

        previous = self._previous_terms()
        # One snapshot for the generation, the chunk list and the texts read for tokenising.
        with Session(self.engine.execution_options(isolation_level="REPEATABLE READ")) as session:
            generation = _state(session, GENERATION_KEY, "0")
            rows = self.store.keyword_rows(session)
            fingerprints = [fingerprint(r.text_md5, r.title or "", r.heading_path or "", r.path or "") for r in rows]

            def texts_of(positions: list[int]) -> list[str]:
                texts = self.store.texts(session, [rows[p].node_id for p in positions])
                return [analyze(chunk_search_text(texts[r.node_id], r.title, r.heading_path, r.path))
                        for r in (rows[p] for p in positions)]

            terms, tokenised = tokenise_corpus(fingerprints, texts_of, _tokenise, previous)
        version = uuid.uuid4().hex[:12]
        target = self.dir / version
        if rows:
            target.mkdir(parents=True, exist_ok=True)
            bm25 = bm25s.BM25()  # the parameters BM25Retriever uses
            bm25.index(Tokenized(ids=terms.id_lists(), vocab={t: i for i, t in enumerate(terms.vocab)}),
                       show_progress=False)
            bm25.save(str(target), show_progress=False)
            nodes = [[r.node_id, r.doc_id, r.parent_id, r.access] for r in rows]
            (target / _NODES).write_text(json.dumps(nodes, ensure_ascii=False))
            terms.save(target)
            # Document frequencies per access scope, so the gate's IDF weights come from what the
            # asker can see (and statistics of restricted pages do not leak into other answers).
            stats = {"num_docs": dict(Counter(r.access for r in rows)),
                     "doc_freq": terms.doc_freq([r.access for r in rows])}
            (target / _STATS).write_text(json.dumps(stats, ensure_ascii=False))
            bm25.corpus = _retriever_corpus(nodes)
            built = _Loaded(version=version, bm25=bm25, doc_freq=stats["doc_freq"], num_docs=stats["num_docs"],
                            access=[r.access for r in rows])
        else:
            version = f"empty-{version}"
            built = _Loaded(version=version, bm25=None)
        log.info("BM25 %s: %d chunks, %d tokenised", version, len(rows), tokenised)
        with Session(self.engine) as session:
            session.merge(IndexState(key=VERSION_KEY, value=version))
            session.merge(IndexState(key=BUILT_FROM_KEY, value=generation))
            session.commit()
        # This process searches the new version at once: its next question does not wait to load
        # it (0.2-0.4 s at 12,000 chunks). Other processes load it from disk when they see it.
        with self._lock:
            self._loaded = built
        self._prune(keep={version})
        self.last_tokenised = tokenised
        return version

    def _previous_terms(self) -> TokenisedCorpus | None:
        """The tokenised corpus of the published version, if it is on this disk."""
        version = self._published_version()
        return None if version.startswith("empty-") else TokenisedCorpus.load(self.dir / version)

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
        """A BM25Retriever over the rows the scopes can see (None: all), made once per version.

        The visible rows are given as BM25Retriever's `corpus_weight_mask`, computed here from
        the rows' scopes in one pass: its own `filters` evaluate a metadata filter per row, which
        cost the first question of each scope 30-130 ms after every rebuild at 12,000 chunks.
        """
        from llama_index.retrievers.bm25 import BM25Retriever

        key = (tuple(sorted(scopes)) if scopes is not None else None, k)
        with self._lock:
            if key not in loaded.retrievers:
                mask = None
                if scopes is not None:
                    visible = set(scopes)
                    mask = [1 if scope in visible else 0 for scope in loaded.access]
                if mask is not None and not any(mask):
                    loaded.retrievers[key] = None  # nothing visible to this asker
                else:
                    loaded.retrievers[key] = BM25Retriever(
                        existing_bm25=loaded.bm25, stemmer=_stemmer(), token_pattern=TOKEN_PATTERN,
                        similarity_top_k=min(k, len(loaded.access)), corpus_weight_mask=mask,  # k ≤ rows, or it warns
                    )
            return loaded.retrievers[key]

    def _current(self) -> _Loaded:
        version = self._published_version()
        loaded = self._loaded
        if loaded is not None and loaded.version == version:
            return loaded
        if not version.startswith("empty-") and not all((self.dir / version / f).exists() for f in (_NODES, _STATS)):
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
        bm25 = bm25s.BM25.load(str(path), load_corpus=False)
        nodes = json.loads((path / _NODES).read_text())
        bm25.corpus = _retriever_corpus(nodes)
        return _Loaded(version=version, bm25=bm25, doc_freq=stats["doc_freq"], num_docs=stats["num_docs"],
                       access=[node[3] for node in nodes])


def _retriever_corpus(nodes: list[list[str]]) -> list[dict]:
    """What BM25Retriever reads hits and filters from: one node per chunk ([node_id, doc_id,
    parent_id, access]), its text left out."""
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.utils import node_to_metadata_dict

    return [
        node_to_metadata_dict(
            TextNode(id_=node_id, text="", metadata={"doc_id": doc_id, "parent_id": parent_id, "access": access}),
            flat_metadata=True,
        ) | {"node_id": node_id}
        for node_id, doc_id, parent_id, access in nodes
    ]


def _state(session: Session, key: str, default: str) -> str:
    row = session.exec(select(IndexState).where(IndexState.key == key)).first()
    return row.value if row else default
