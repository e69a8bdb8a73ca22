"""KnowledgeBase: the one surface for asking — `sync`, `ask`, `status`, `sources`, `forget`.

The `kb` command line, the Slack app, `kb eval` and the benchmarks call this class, not the
index's parts: the question of *who* reads an answer is an `Audience` (`sources.access`),
decided once by the caller and passed in, and everything below filters on it. What else the
Slack app shows of the wiki comes from here too, already narrowed to what it needs: `pages`
(titles and scopes of cited pages), `page_titles` (the assistant's prompts), `source_pages`
(the admins' App Home), `gaps` (the gaps report).

Reading never writes: `ask`, `status` and those only read the index, from the hot standby when
`DATABASE_READ_URL` names one (`indexing.storage.standby`); the Slack app writes its query log
itself, in `bot.records.question_log`, on the primary. Only `sync` and `forget` change what is indexed, and both go
through the one sync path (`indexing.ingest.runner`, `indexing.ingest.indexed_sources`), which publishes the new
keyword version.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from bot.answering import Answer, Source, answer_question
from sources import Audience, SourceConfig
from indexing.index import Index, index_status
from indexing.ingest import SyncReport, SyncRunner, indexed_sources
from indexing.storage import IndexStatus

if TYPE_CHECKING:
    from datetime import date

    from bot.answering import LanguageModel, LLMClient
    from bot.records import GapsReport, Listing
    from bot.verified import Change, Given, Offered, VerifiedAnswer, suggestions
    from connectors.document import SourceDocument
    from indexing.storage import SyncRun

CONTEXT_CHARS = 500  # how much of an earlier question joins a follow-up's retrieval
OPERATOR = Audience.operator()


@dataclass(frozen=True)
class Page:
    """A page as people see it named: its title (its path when it has none), link and access scope."""

    id: str
    title: str
    url: str
    access: str


@dataclass
class SourcePages:
    """One configured source as the index holds it: pages by status, the failed and skipped pages
    with why, its last sync run and its last refused one (None: never)."""

    name: str
    pages: dict[str, int] = field(default_factory=dict)
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (status, document id, reason)
    last_run: SyncRun | None = None
    last_refused: SyncRun | None = None


class KnowledgeBase:
    """An index, the sources that feed it, and the LLM (None: extractive answers).

    Built by the composition root (`bot.wiring.Root.knowledge_base`) for `kb` and `kb serve`;
    tests and benchmarks build one over an index of their own."""

    def __init__(self, index: Index, sources: Sequence[SourceConfig] = (), llm: LLMClient | None = None, *,
                 runner: SyncRunner | None = None) -> None:
        """`runner`: one shared with the watcher and the scheduler (`kb serve`); by default one of
        its own over `sources`."""
        from bot.migrations import migrate_bot
        from bot.verified import Lookup

        self.index = index
        self.llm = llm
        self.runner = runner or SyncRunner(index, list(sources))
        migrate_bot(index.engine)  # the bot's own tables (verified answers): every process that answers has them
        self.verified = Lookup()

    @property
    def configured(self) -> list[SourceConfig]:
        return list(self.runner.sources.values())

    # -- reading ------------------------------------------------------------------------------

    def ask(self, question: str, audience: Audience = OPERATOR, *, follows: str | None = None,
            mode: str = "hybrid", extractive: bool = False,
            on_text: Callable[[str], None] | None = None) -> Answer:
        """The answer `audience` may read: retrieval searches only the scopes it sees.

        `follows`: the earlier question of a thread, searched together with this follow-up ("and
        for part-timers?"). `mode` ("hybrid", "hybrid-rrf", "vector", "bm25") lets `kb eval
        --compare` score one leg alone; `extractive` answers without the LLM even if one is set.
        `on_text`: the LLM's answer is streamed to it as the model writes it, citation-checked
        (`bot.answering.llm_stream`); the returned `Answer` is still the one to show. Raises `EmptyQuestion`
        for a question with nothing searchable in it."""
        text = f"{follows[:CONTEXT_CHARS]} {question}" if follows else question
        client = None if extractive else self.llm
        llm: LanguageModel | None = client
        if client is not None and on_text is not None:
            from bot.answering import StreamingLLM

            llm = StreamingLLM(client, on_text)
        scopes = audience.search_scopes

        def find_verified(asked: str, vector: list[float] | None) -> Given | Offered | None:
            return self.verified.find(self.index, self.index.embedder, asked, scopes, vector=vector,
                                      synonyms=self.synonym_table())

        # a follow-up ("and in Portland?") leans on its thread: only a question that stands alone gets a verified answer
        return answer_question(self.index, text, scopes=scopes, llm=llm, mode=mode,
                               verified=None if follows else find_verified)

    def synonym_table(self) -> dict[str, list[str]]:
        """The sources file's `[synonyms]` as written (word → the wiki's words), for the verified
        answers' matcher."""
        synonyms = self.index.config.synonyms
        return {e.key: list(e.phrases) for e in synonyms.entries} if synonyms else {}

    def add_verified(self, change: Change, *, questions: Sequence[str], answer: str, scopes: Sequence[str],
                     review_by: date, channel_id: str | None = None, message_ts: str | None = None) -> int:
        """Store a verified answer, verified by `change.actor` now (`bot.verified.store.add`: its
        questions embedded by the index's embedder), committed; its id. For Slack's listeners,
        which never hold a session (`bot.slack.listeners.verify`)."""
        from bot.verified import store

        with self.index.session() as session:
            answer_id = store.add(session, self.index.embedder, change, questions=questions, answer=answer,
                                  scopes=scopes, review_by=review_by, channel_id=channel_id, message_ts=message_ts)
            session.commit()
        return answer_id

    def verified_sources(self, verified: VerifiedAnswer, audience: Audience) -> list[Source]:
        """The pages `verified` cites that `audience` may see, as a given verified answer shows them."""
        from bot.answering import cited_sources

        return cited_sources(self.index, verified, audience.search_scopes)

    def accept_suggestion(self, change: Change, suggestion_id: int) -> suggestions.Suggestion:
        """Add a suggested question to its verified answer's questions (`bot.verified.suggestions.accept`:
        embedded by the index's embedder), committed. For the App Home's button
        (`bot.slack.listeners.suggested`), which holds no embedder."""
        from bot.verified import suggestions

        with self.index.session() as session:
            done = suggestions.accept(session, self.index.embedder, suggestion_id, change)
            session.commit()
        return done

    def status(self, audience: Audience = OPERATOR) -> IndexStatus:
        """What is indexed and how the last syncs went — only what `audience` may learn.

        For anyone but the operator, documents and chunks are counted in the scopes the audience
        sees, and a source's last sync and failed pages are shown only when every scope that
        source can carry is visible (a sync run counts a whole source, and a failed page may not
        know its own scope). Other sources and scopes are neither named nor hinted at."""
        status = index_status(self.index, audience.search_scopes)
        with self.index.read_session() as s:
            unconfigured = indexed_sources.unconfigured(s, self.configured)
            if audience.scopes is None:
                names = [row.name for row in unconfigured]
            else:  # naming a source tells no more than its answers would, if all its pages are visible
                names = [row.name for row in unconfigured if audience.sees_all(indexed_sources.scopes_of(s, row.name))]
        if audience.scopes is not None:
            status = status.limited_to_sources(
                {name for name, source in self.runner.sources.items() if audience.sees_all(source.scopes)})
        return replace(status, unconfigured=names)

    def sources(self) -> list[indexed_sources.SourceSummary]:
        """Every source in the index or the configuration: kind, location, pages, last sync, state."""
        with self.index.read_session() as s:
            return indexed_sources.summaries(s, self.configured)

    def chunk_count(self) -> int:
        return self.index.chunk_count()

    def pages(self, doc_ids: Sequence[str]) -> dict[str, Page]:
        """The pages with these ids that are still indexed, by id."""
        from indexing.storage import document_queries

        if not doc_ids:
            return {}
        with self.index.read_session() as s:
            rows = document_queries.by_id(s, doc_ids)
        return {d.id: Page(id=d.id, title=d.title or d.path, url=d.url, access=d.access) for d in rows.values()}

    def page_titles(self, scopes: Collection[str], limit: int) -> list[str]:
        """Titles of up to `limit` indexed pages in `scopes`, the most recently changed first
        (a title shared by several pages may come more than once)."""
        from indexing.storage import document_queries

        with self.index.read_session() as s:
            return document_queries.recent_titles(s, scopes, limit)

    def source_pages(self, names: Sequence[str]) -> list[SourcePages]:
        """Per source named: its pages by status, failed/skipped pages, the last and the last
        refused sync (the admins' App Home)."""
        from indexing.storage import document_queries, sync_run_queries

        names = list(names)
        with self.index.read_session() as s:
            counts = document_queries.count_by_source_and_status(s, names)
            problems = document_queries.failed_or_skipped(s, names)
            last = sync_run_queries.last_runs(s)
            refused = sync_run_queries.last_refused(s)
        state = {name: SourcePages(name=name) for name in names}
        for source, status, n in counts:
            state[source].pages[status] = n
        for doc in problems:
            state[doc.source].problems.append((doc.status.value, doc.id, doc.error or ""))
        for name in names:
            state[name].last_run, state[name].last_refused = last.get(name), refused.get(name)
        return [state[name] for name in names]

    def gaps(self, days: int = 7, *, scopes: list[str] | None = None, listing: Listing | None = None) -> GapsReport:
        """The gaps report of the last `days` (`bot.records.gaps`): page titles limited to `scopes` (None: all),
        questions and answers by people to what `listing` (`bot.records.gap_listing.Listing`) allows."""
        from bot.records import gaps_report

        return gaps_report(self.index, days, scopes=scopes, listing=listing)

    # -- writing ------------------------------------------------------------------------------

    def sync(self, source: str | SourceConfig, *, trigger: str = "cli",
             progress: Callable[[SourceDocument], None] | None = None, allow_deletes: bool = False, wait: bool = True,
             full: bool = False) -> SyncReport | None:
        """A sync of one source (by name, or an ad-hoc `SourceConfig` such as `kb sync PATH`'s): by
        its changes where the source can say them (Confluence over REST), unless `full`; None when
        `wait` is off and another sync of it is running. The source's deletion guard holds unless
        `allow_deletes`."""
        if isinstance(source, SourceConfig):
            self.runner.sources[source.name] = source
            source = source.name
        return self.runner.sync(source, trigger=trigger, wait=wait, progress=progress, allow_deletes=allow_deletes,
                               full=full)

    def forget(self, name: str) -> int:
        """Remove one source's pages from every store; returns how many pages went."""
        return indexed_sources.forget(self.index, name)

    def close(self) -> None:
        self.index.close()


def sync_counts(counts: SyncReport | SyncRun, *, zero_skipped: bool = True) -> str:
    """"N added, N updated, N unchanged, N deleted, N failed, N skipped": what one sync did, as
    every report of a sync says it (`kb sync`, `kb status`, Slack's `/kb status`, `/kb resync`,
    the App Home). `counts`: a `SyncReport`, or a `sync_runs` row (the same six fields).
    `zero_skipped` off leaves out "0 skipped": a sync's own summary names skips only when there
    were some, a status line lists every count."""
    skipped = f", {counts.skipped} skipped" if counts.skipped or zero_skipped else ""
    return (f"{counts.added} added, {counts.updated} updated, {counts.unchanged} unchanged, "
            f"{counts.deleted} deleted, {counts.failed} failed{skipped}")
