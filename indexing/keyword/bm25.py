"""Keyword search over the child chunks, CJK-aware: BM25 as bm25s scores it, in an index of our own.

Neither LlamaIndex's BM25Retriever nor a bm25s index is used: bm25s bakes corpus-wide weights into
its index when it builds it, so one edited page would mean a rebuild, and a restricted page's
words would move every asker's scores. bm25s only tokenises here (`bm25s.tokenize`: its English
stop words, PyStemmer's Snowball stemmer, `TOKEN_PATTERN`); the terms go into
`indexing.keyword.keyword_segments`, which scores with bm25s's own arithmetic (Lucene variant, k1=1.5,
b=0.75) from the statistics of the rows the asker may see, equal to a BM25Retriever built from
scratch on those rows (tests/test_keyword_index.py).

bm25s splits text on word boundaries, which leaves a Chinese sentence as one giant "word". So
before tokenising we rewrite runs of CJK characters as their single characters *and* overlapping
character bigrams ("报销流程" → "报 销 流 程 报销 销流 流程"), a usual dictionary-free choice for
Chinese retrieval (Kwok 1997 and Nie et al. 2000 report characters with bigrams doing at least as
well as either alone). Bigrams alone lose a question worded differently from its page (a typo
"遗流" for "遗留", colloquial words): characters give it partial credit, and IDF keeps common
ones (的, 是) cheap. Measured in docs/tuning.md, "Chinese: characters with bigrams". English goes
through the Snowball stemmer and stop-word removal as usual, unchanged.

Everything the leg needs lives in Postgres (`indexing.keyword.keyword_versions`): each process holds the
published version in memory (`indexing.keyword.keyword_segments`) and catches up on a new one by
re-reading only the documents changed since, so a one-page edit costs that page — a change of
its access scope included (`ChunkStore.set_access` logs it), so every row carries its page's
current scope. Syncs publish; questions only read. No process reads another's disk: one that
starts cold loads the newest saved base from Postgres and applies the changes after it. With a
hot standby to read from (`indexing.storage.standby`), versions are published on the primary and
read from the standby, never ahead of what it has replayed (`Bm25Index.announced`).
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from indexing.keyword import keyword_versions as versions
from indexing.keyword.bm25_terms import TERMS_VERSION
from indexing.keyword.follower import Follower
from indexing.keyword.keyword_segments import KeywordIndex, KeywordRow
from indexing.storage.memory import release_free_memory
from indexing.values.hits import ChunkHit
from indexing.vectors.store import ChunkStore, KeywordChunk

if TYPE_CHECKING:
    import Stemmer

log = logging.getLogger(__name__)
logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets itself to DEBUG

# A new base is saved once this many documents changed since the newest one: a replica starting
# cold then tokenises at most about this many pages (docs/benchmarks.md, "keyword leg").
BASE_EVERY_DOCS = 200
LOAD_BATCH = 20_000  # chunks tokenised together when an index is built from the chunks' text
TOKEN_PATTERN = r"(?u)\b\w+\b"  # single characters too: a lone CJK character is a word
# One Chinese/Japanese/Korean character (kana, CJK ideographs and compatibility ideographs, Hangul)
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_CJK_RUN = re.compile(CJK.pattern + "+")
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
    """Text with every CJK run replaced by its characters and its overlapping character bigrams."""

    def characters_and_bigrams(match: re.Match[str]) -> str:
        run = match.group(0)
        bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
        return " " + " ".join([*run, *bigrams]) + " "

    return _CJK_RUN.sub(characters_and_bigrams, text)


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
    return _bm25s_tokenize([analyzed])[0]


def tokens_of_each(texts: list[str]) -> list[list[str]]:
    """`tokens` of each text, in one bm25s call: it costs ~0.3 ms per call whatever the text, so
    many short texts (a page's chunks, an answer's candidate sentences) go through together."""
    return _bm25s_tokenize([analyze(t) for t in texts]) if texts else []


def _bm25s_tokenize(analyzed: list[str]) -> list[list[str]]:
    """The one place the index's tokenizer settings are spelled out (questions and chunks alike)."""
    import bm25s

    terms: list[list[str]] = bm25s.tokenize(
        analyzed, token_pattern=TOKEN_PATTERN, stopwords="en", stemmer=_stemmer(),
        return_ids=False, show_progress=False,
    )
    return terms


def chunk_search_text(text: str, title: str | None, heading_path: str | None, path: str | None) -> str:
    """What BM25 indexes for a child: its page's title, heading path and file path count as
    words of the chunk. The path's folders and file name name a page as a title does, and split
    at separators they match the question's words ("on_call.md" → "on call"); measured in
    docs/history.md, tuning log §7. Changing what goes in here means bumping `bm25_terms.TERMS_VERSION`."""
    return f"{title or ''} {heading_path or ''} {path_words(path or '')}\n{text}"


def path_words(path: str) -> str:
    """A document path as words: "process/incidents/on_call.md" → "process incidents on call"."""
    return _PATH_SEPARATORS.sub(" ", _PATH_EXTENSION.sub("", path)).strip()


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    import Stemmer

    return Stemmer.Stemmer("english")


class Bm25Index:
    """The keyword leg of one process: the published version in memory, kept current from Postgres."""

    def __init__(self, home: Path, engine: Engine, store: ChunkStore, read_engine: Engine | None = None) -> None:
        """`engine`: the primary, where versions are published; `read_engine`: where this process
        reads the version it searches — a hot standby's (`indexing.storage.standby`), by default the same."""
        self.engine = engine
        self.read_engine = read_engine or engine
        self.store = store
        self._index: KeywordIndex | None = None
        self._catch_up_lock = threading.Lock()
        self._merging = threading.Event()
        self._follower = Follower(self._follow)
        self.last_tokenised = 0  # chunks the last catch-up had to tokenise
        self.last_load = ""  # how the index was last loaded whole: "base" or "scratch"

    # -- publishing (syncs only) --------------------------------------------------------------

    def rebuild(self) -> str:
        """Publish what the syncs have committed (the sync's entry point, called once at its end).

        O(change): publishing moves the version forward under an advisory lock; this process, if
        it searches, catches up by re-reading only the changed documents. Once enough documents
        changed since the newest saved base, a new base is saved for replicas starting cold.
        """
        version, _ = versions.publish(self.engine)
        if self._index is not None:
            self.announced(version)
        self._save_base_if_due()
        return str(version)

    def stale(self) -> bool:
        """Whether documents changed since the published version (e.g. a sync killed before
        publishing)."""
        with Session(self.engine) as session:
            return versions.generation(session) != (versions.published(session) or 0)

    def _save_base_if_due(self) -> None:
        with Session(self.engine) as session:
            newest = versions.latest_base_generation(session, TERMS_VERSION)
            due = newest is None or versions.changes_since(session, newest) >= BASE_EVERY_DOCS
        if not due:
            return
        with self._catch_up_lock:
            index = self._index
        index = self._catch_up() if index is None else index
        merged = index.merged() if len(index.segments) > 1 else index
        with self._catch_up_lock:
            if self._index is index:
                self._index = merged  # compacted in passing
        versions.save_base(self.engine, merged.generation, TERMS_VERSION, merged.live_rows, merged.to_bytes())

    # -- keeping up ---------------------------------------------------------------------------

    def refresh(self) -> None:
        """Catch up with what the primary has published (e.g. after missing notices)."""
        with Session(self.engine) as session:
            version = versions.published(session) or 0
        self.announced(version)

    def announced(self, version: int) -> None:
        """Version `version` was published on the primary (a notice said so, or this process
        published it): catch up now. Reading from a standby that has not replayed it yet, this
        process keeps serving what the standby has — every read of a catch-up comes from the
        standby in one snapshot, so a version it does not hold is never served — and a follower
        thread catches up the moment the standby has it, so it is not missed until the next
        question either (which compares the standby's published version anyway)."""
        if self._catch_up().generation < version:
            self._follower.follow(version)

    def _follow(self) -> int:
        """The follower's step: catch up with the reads' published version, and say which it is."""
        return self._catch_up().generation

    @property
    def version(self) -> int | None:
        """The keyword version this process holds in memory (None: nothing loaded yet)."""
        index = self._index
        return None if index is None else index.generation

    @property
    def behind(self) -> bool:
        """Whether a version was announced that the server this process reads from has not
        replayed yet (it is being followed). Against the version held in memory, whoever caught
        up — the follower or a question — not the follower's own record of it, which lags its step."""
        return (self.version or 0) < self._follower.wanted

    def close(self) -> None:
        """Stop following (the process is stopping)."""
        self._follower.stop()

    def _current(self) -> KeywordIndex:
        with Session(self.read_engine) as session:
            target = versions.published(session) or 0
        index = self._index
        if index is not None and index.generation >= target:
            return index
        return self._catch_up()

    def _catch_up(self) -> KeywordIndex:
        """Bring the in-memory index to the published version: the changed documents only, or a
        whole load (the newest base plus changes after it) when there is nothing to start from."""
        with self._catch_up_lock, Session(self.read_engine.execution_options(isolation_level="REPEATABLE READ")) as s:
            target = versions.published(s) or 0
            index = self._index
            if index is not None and index.generation >= target:
                return index
            loaded_whole = index is None or index.generation < versions.log_floor(s)
            if loaded_whole or index is None:  # (the same test: spelled out for the type checker)
                index = self._load(s, target)
            else:
                index = self._apply(s, index, target)
            self._index = index
        if loaded_whole:
            release_free_memory()  # a previous index's arrays are gone; give their pages back
        elif index.needs_merge():
            self._merge_in_background(index)
        return index

    def _merge_in_background(self, index: KeywordIndex) -> None:
        """Merge the small segments into the base on a thread of its own (O(index): ~0.6 s at
        100,000 chunks), swapped in only if no newer version arrived meanwhile; questions go on
        searching the unmerged index until then."""
        if self._merging.is_set():
            return
        self._merging.set()

        def run() -> None:
            try:
                merged = index.merged()
                with self._catch_up_lock:
                    if self._index is index:
                        self._index = merged
                release_free_memory()
            except Exception:
                log.exception("merging the keyword index failed; it keeps serving unmerged")
            finally:
                self._merging.clear()

        threading.Thread(target=run, name="docent-keyword-merge", daemon=True).start()

    def _load(self, session: Session, target: int) -> KeywordIndex:
        started = time.perf_counter()
        base = versions.latest_base(session, target, TERMS_VERSION)
        if base is None:
            index = self._load_from_chunks(session, target)
        else:
            try:
                saved = KeywordIndex.from_bytes(base.payload)
            except Exception as exc:  # a damaged blob: build from the text instead, never fail the question
                log.warning("the saved keyword base at version %d is unreadable (%s); building from the chunks",
                            base.generation, exc)
                return self._load_from_chunks(session, target)
            base = None  # the blob's memory back before catching up (its arrays are copied out)
            self.last_load = "base"
            index = self._apply(session, saved, target)
        log.info("keyword index at version %d: %d chunks (%s, %.2f s)", target, index.live_rows,
                 self.last_load, time.perf_counter() - started)
        return index

    def _load_from_chunks(self, session: Session, target: int) -> KeywordIndex:
        """Every chunk tokenised, LOAD_BATCH at a time, each batch a segment, merged at the end:
        at a million chunks, reading them all at once held 6.4 GB (docs/scaling.md)."""
        self.last_tokenised = 0
        self.last_load = "scratch"
        index = KeywordIndex(generation=target)
        for chunks in self.store.keyword_chunk_batches(session, LOAD_BATCH):
            index.append([_row(c) for c in chunks], _chunk_terms(chunks))
            self.last_tokenised += len(chunks)
        return index.merged() if len(index.segments) > 1 else index

    def _apply(self, session: Session, index: KeywordIndex, target: int) -> KeywordIndex:
        docs = versions.changed_documents(session, index.generation, target)
        chunks = self.store.keyword_chunks(session, docs) if docs else []
        self.last_tokenised = len(chunks)
        return index.replaced(docs, [_row(c) for c in chunks], _chunk_terms(chunks), target)

    # -- searching ----------------------------------------------------------------------------

    def search(self, question: str, scopes: list[str] | None, k: int,
               added: dict[str, float] | None = None) -> list[ChunkHit]:
        """The k best children by BM25 among the visible scopes, zero scores dropped: filtered
        before ranking, and scored with the statistics of the visible chunks alone (their count,
        average length, document frequencies), so that no restricted page moves a visible page's
        score (`indexing.keyword.keyword_segments`). `added`: terms searched besides the question's, each
        with its weight (synonyms)."""
        if scopes is not None and not scopes:
            return []
        index = self._current()
        terms = _terms(analyze(question_text(question)))
        weights = None
        if added:
            weights = [1.0] * len(terms) + list(added.values())
            terms = terms + list(added)
        return [
            ChunkHit(node_id=row.node_id, score=score,
                     metadata={"doc_id": row.doc_id, "parent_id": row.parent_id, "access": row.access})
            for row, score in index.search(terms, scopes, k, weights)
        ]

    def doc_freq(self, terms: set[str], scopes: list[str] | None) -> dict[str, int]:
        """How many visible chunks hold each term (`indexing.search.spelling` picks the commonest word)."""
        return self._current().doc_freq(terms, scopes)[0]

    def idf(self, terms: set[str], scopes: list[str] | None) -> tuple[dict[str, float], set[str]]:
        """IDF of each term among the visible chunks, and the terms that occur there at all.

        Document frequencies come from what the asker can see, as in `search`, so statistics of
        restricted pages do not leak into other answers. Terms the visible wiki never uses get the
        highest IDF.
        """
        counts, visible = self._current().doc_freq(terms, scopes)
        n = max(visible, 1)
        weights = {term: math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in counts.items()}
        return weights, {term for term, df in counts.items() if df}


def _row(chunk: KeywordChunk) -> KeywordRow:
    return KeywordRow(chunk.node_id, chunk.doc_id, chunk.parent_id, chunk.access)


def _chunk_terms(chunks: list[KeywordChunk]) -> list[list[str]]:
    return tokens_of_each([chunk_search_text(c.text, c.title, c.heading_path, c.path) for c in chunks])
