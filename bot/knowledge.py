"""KnowledgeBase: the one surface for asking — `sync`, `ask`, `status`, `sources`, `forget`.

The `kb` command line, the Slack app, `kb eval` and the benchmarks call this class, not the
index's parts: the question of *who* reads an answer is an `Audience` (`connectors.access`),
decided once by the caller and passed in, and everything below filters on it.

Reading never writes: `ask` and `status` only read the index (the Slack app writes its query
log itself, in `bot.records`). Only `sync` and `forget` change what is indexed, and both go
through the one sync path (`indexing.runner`, `indexing.catalog`), which publishes the new
keyword version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from bot.answer import Answer, answer_question
from connectors.access import Audience
from connectors.sources import SourceConfig
from indexing import catalog
from indexing.index import Index
from indexing.runner import SyncRunner
from indexing.status import IndexStatus, index_status
from indexing.sync import SyncReport

CONTEXT_CHARS = 500  # how much of an earlier question joins a follow-up's retrieval
OPERATOR = Audience.operator()


class KnowledgeBase:
    """An index, the sources that feed it, and the LLM (None: extractive answers).

    Built by the composition root (`bot.wiring.Root.knowledge_base`) for `kb` and `kb serve`;
    tests and benchmarks build one over an index of their own."""

    def __init__(self, index: Index, sources: Sequence[SourceConfig] = (), llm=None, *,
                 runner: SyncRunner | None = None) -> None:
        """`runner`: one shared with the watcher and the scheduler (`kb serve`); by default one of
        its own over `sources`."""
        self.index = index
        self.llm = llm
        self.runner = runner or SyncRunner(index, list(sources))

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
        (`bot.llm_stream`); the returned `Answer` is still the one to show. Raises `EmptyQuestion`
        for a question with nothing searchable in it."""
        text = f"{follows[:CONTEXT_CHARS]} {question}" if follows else question
        llm = None if extractive else self.llm
        if llm is not None and on_text is not None:
            from bot.llm_stream import StreamingLLM

            llm = StreamingLLM(llm, on_text)
        return answer_question(self.index, text, scopes=audience.search_scopes, llm=llm, mode=mode)

    def status(self, audience: Audience = OPERATOR) -> IndexStatus:
        """What is indexed and how the last syncs went — only what `audience` may learn.

        For anyone but the operator, documents and chunks are counted in the scopes the audience
        sees, and a source's last sync and failed pages are shown only when every scope that
        source can carry is visible (a sync run counts a whole source, and a failed page may not
        know its own scope). Other sources and scopes are neither named nor hinted at."""
        status = index_status(self.index, audience.search_scopes)
        with self.index.session() as s:
            unconfigured = catalog.unconfigured(s, self.configured)
            if audience.scopes is None:
                names = [row.name for row in unconfigured]
            else:  # naming a source tells no more than its answers would, if all its pages are visible
                names = [row.name for row in unconfigured if audience.sees_all(catalog.scopes_of(s, row.name))]
        if audience.scopes is not None:
            status = status.limited_to_sources(
                {name for name, source in self.runner.sources.items() if audience.sees_all(source.scopes)})
        return replace(status, unconfigured=names)

    def sources(self) -> list[catalog.SourceSummary]:
        """Every source in the index or the configuration: kind, location, pages, last sync, state."""
        with self.index.session() as s:
            return catalog.summaries(s, self.configured)

    def chunk_count(self) -> int:
        return self.index.chunk_count()

    # -- writing ------------------------------------------------------------------------------

    def sync(self, source: str | SourceConfig, *, trigger: str = "cli", progress: Callable | None = None,
             allow_deletes: bool = False, wait: bool = True) -> SyncReport | None:
        """A full sync of one source (by name, or an ad-hoc `SourceConfig` such as `kb sync PATH`'s);
        None when `wait` is off and another sync of it is running. The source's deletion guard
        holds unless `allow_deletes`."""
        if isinstance(source, SourceConfig):
            self.runner.sources[source.name] = source
            source = source.name
        return self.runner.sync(source, trigger=trigger, wait=wait, progress=progress, allow_deletes=allow_deletes)

    def forget(self, name: str) -> int:
        """Remove one source's pages from every store; returns how many pages went."""
        return catalog.forget(self.index, name)

    def close(self) -> None:
        self.index.close()


def sync_counts(counts, *, zero_skipped: bool = True) -> str:
    """"N added, N updated, N unchanged, N deleted, N failed, N skipped": what one sync did, as
    every report of a sync says it (`kb sync`, `kb status`, Slack's `/kb status`, `/kb resync`,
    the App Home). `counts`: a `SyncReport`, or a `sync_runs` row (the same six fields).
    `zero_skipped` off leaves out "0 skipped": a sync's own summary names skips only when there
    were some, a status line lists every count."""
    skipped = f", {counts.skipped} skipped" if counts.skipped or zero_skipped else ""
    return (f"{counts.added} added, {counts.updated} updated, {counts.unchanged} unchanged, "
            f"{counts.deleted} deleted, {counts.failed} failed{skipped}")
