"""What `GET /metrics` tells Prometheus (prometheus-client's text format). `kb serve` serves it on
a port of its own, `KB_METRICS_PORT`, not on the events port Slack reaches (`bot.serve`).

Two kinds of numbers:

- **This process's events**, counted as they happen: questions by surface and outcome, answer
  latency end to end and per stage, LLM calls by result, rerank runs by backend and outcome, and the time Slack waited for its ack
  (HTTP mode: the request's arrival to its response, which is Bolt's ack). Each replica counts
  its own; Prometheus sums them.
- **The index as Postgres holds it**, read at each scrape: documents by status, chunks per
  source, sync runs by source and result. These are the same from every replica (one database),
  so they are gauges, not counters to sum. A scrape while the database is away reports
  `docent_index_readable 0` instead of failing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

if TYPE_CHECKING:
    from indexing.index import Index
    from indexing.search import RerankRun

log = logging.getLogger(__name__)

REGISTRY = CollectorRegistry(auto_describe=True)  # Docent's own (not the client library's global one)
_SECONDS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

QUESTIONS = Counter("docent_questions", "Questions, by where they were asked and their outcome "
                    "(answered, uncertain, not_found; error when answering failed)", ["surface", "outcome"],
                    registry=REGISTRY)
ANSWER_SECONDS = Histogram("docent_answer_seconds", "Time to answer a question, end to end", ["surface"],
                           buckets=_SECONDS, registry=REGISTRY)
STAGE_SECONDS = Histogram("docent_answer_stage_seconds", "Time of each stage of answering (embed, vector, bm25, "
                          "fuse, answer, ...)", ["stage"], buckets=_SECONDS, registry=REGISTRY)
LLM_CALLS = Counter("docent_llm_calls", "Calls to the LLM endpoint, by result (ok, failed; set_aside: it answered, "
                    "but the grounding check set the answer aside)", ["result"], registry=REGISTRY)
LLM_SET_ASIDE = Counter("docent_llm_set_aside", "LLM answers the grounding check set aside for the extractive one, by "
                        "reason (uncited, number, name, echo, unfinished: bot.answering.grounding)", ["reason"],
                        registry=REGISTRY)
RERANK_CALLS = Counter("docent_rerank_calls", "Rerank stage runs, by backend and outcome (ok; error or timeout: "
                       "the fused order and the gate without it served)", ["backend", "outcome"], registry=REGISTRY)
RERANK_SECONDS = Histogram("docent_rerank_seconds", "Time of the rerank stage, by backend (a fallback's time too)",
                           ["backend"], buckets=(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5),
                           registry=REGISTRY)
SLACK_ACK_SECONDS = Histogram("docent_slack_ack_seconds", "Time from a Slack request's arrival to Docent's HTTP "
                              "response (the acknowledgement Slack waits 3 s for)", buckets=_SECONDS, registry=REGISTRY)


class Answered(Protocol):
    """What `observe_question` reads of an answer: a `bot.answering.Answer`, named here rather than
    imported, as `bot.answering` imports this module to count its LLM calls and rerank runs."""

    @property
    def outcome(self) -> str: ...

    @property
    def timings_ms(self) -> Mapping[str, float]: ...


def observe_question(surface: str, answer: Answered | None, timings_ms: Mapping[str, float] | None = None) -> None:
    """Count one question (`answer` None: answering failed) and its latencies."""
    QUESTIONS.labels(surface=surface, outcome="error" if answer is None else answer.outcome).inc()
    timings = {**(getattr(answer, "timings_ms", None) or {}), **(timings_ms or {})}
    for stage, ms in timings.items():
        if not isinstance(ms, int | float):
            continue
        if stage == "total":
            ANSWER_SECONDS.labels(surface=surface).observe(ms / 1000)
        elif stage != "retrieval_total":
            STAGE_SECONDS.labels(stage=stage).observe(ms / 1000)


def observe_rerank(run: RerankRun) -> None:
    """Count one run of the rerank stage (`indexing.search.rerank.RerankRun`) and its time."""
    RERANK_CALLS.labels(backend=run.backend, outcome=run.outcome).inc()
    RERANK_SECONDS.labels(backend=run.backend).observe(run.ms / 1000)


class IndexCollector:
    """Documents by status, chunks per source and sync runs by result, read from Postgres at scrape."""

    def __init__(self, index: Index) -> None:
        self.index = index

    def collect(self) -> Iterator[GaugeMetricFamily]:
        readable = GaugeMetricFamily("docent_index_readable", "1 if the index's database answered this scrape")
        try:
            documents, chunks, runs = self._read()
        except Exception as exc:  # the database is away: say so, do not fail the scrape
            log.warning("metrics: the index is not readable: %s", str(exc).splitlines()[0] if str(exc) else exc)
            readable.add_metric([], 0)
            yield readable
            return
        readable.add_metric([], 1)
        yield readable
        family = GaugeMetricFamily("docent_documents", "Documents in the index, by status", labels=["status"])
        for status, n in documents:
            family.add_metric([status], n)
        yield family
        family = GaugeMetricFamily("docent_chunks", "Child chunks in the index, by source", labels=["source"])
        for source, n in chunks:
            family.add_metric([source], n)
        yield family
        family = GaugeMetricFamily("docent_sync_runs", "Sync runs recorded, by source and result (ok, refused, "
                                   "aborted, running)", labels=["source", "result"])
        for source, result, n in runs:
            family.add_metric([source, result], n)
        yield family
        yield from self._standby()

    def _standby(self) -> Iterator[GaugeMetricFamily]:
        """With DATABASE_READ_URL: how much WAL the standby questions read from has still to replay."""
        try:
            reads = self.index.reads()
        except Exception as exc:
            log.warning("metrics: the standby is not readable: %s", str(exc).splitlines()[0] if str(exc) else exc)
            reads = None
        if reads is not None and not reads.standby:
            return
        family = GaugeMetricFamily("docent_standby_behind_bytes", "WAL the primary wrote that the hot standby "
                                   "questions read from (DATABASE_READ_URL) has not replayed yet; -1: not readable")
        family.add_metric([], -1 if reads is None or reads.behind_bytes is None else reads.behind_bytes)
        yield family

    def _read(self) -> tuple[list[tuple[str, int]], list[tuple[str, int]], list[tuple[str, str, int]]]:
        """Documents by status, chunks by source, sync runs by source and result: (labels..., count) rows."""
        from indexing.storage import document_queries, sync_run_queries

        with self.index.session() as s:
            documents = document_queries.count_by_status(s)
            chunks = self.index.store.count_by_source(s)
            runs = sync_run_queries.count_by_source_and_result(s)
        return documents, chunks, runs


def exposition(index: Index) -> bytes:
    """The text `GET /metrics` returns: this process's counters, then the index's gauges."""
    per_index = CollectorRegistry(auto_describe=False)
    per_index.register(IndexCollector(index))
    return generate_latest(REGISTRY) + generate_latest(per_index)


# Help channels (bot.slack.listeners.help_channels, bot.slack.handover)
UNPROMPTED = Counter("docent_unprompted_answers", "Questions in help channels (respond = \"questions\") answered "
                     "without a mention", registry=REGISTRY)
HANDOVERS = Counter("docent_handovers", "Hand-overs to a channel's escalate people, by result (claimed: posted; "
                    "already: the thread had one; capped: the channel's hourly cap)", ["result"], registry=REGISTRY)
GAPS_ADDED = Counter("docent_gaps_added", "Questions people answered in a handed-over thread, added to the wiki's "
                     "gaps with the \"Add to the wiki's gaps\" button (bot.slack.listeners.answered_gaps)", registry=REGISTRY)
