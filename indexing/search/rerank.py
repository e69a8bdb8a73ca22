"""The rerank stage: a cross-encoder reads each (question, section) pair of the fused top sections
and says how well the section answers; order, lead and — when fitted for it — the gate follow.

Fusion ranks sections by how close their best chunk is to the question and how many of its rare
words they hold; a cross-encoder reads question and section together, so it can tell "25 days of
annual leave" from "working on a holiday" for "how many vacation days do I get?". It is the
costliest step of an answer, so it scores only the top `KB_RERANK_TOP_N` fused sections; those
past N keep their fused order after them.

Backends (`Reranker`: a `name` and `score(query, texts) -> scores`, higher = better), chosen once
by `open_stage` from `RerankConfig` (settings `KB_RERANK*`):

- `KB_RERANK_URL`: a rerank service (`indexing.search.rerank_service`: Hugging Face TEI's `/rerank`, or
  the Cohere / Jina / vLLM / Infinity format);
- `KB_RERANK=<folder>`: a sentence-transformers CrossEncoder folder (a company's bge-reranker or
  ms-marco model), loaded on first use (or at `kb serve`'s start);
- `KB_RERANK=<name>` of `BACKENDS`, the table of named backends (`builtin`: the shipped reader,
  `indexing.search.reader`; `span`: the span reader, `indexing.search.span_reader`): adding one is
  a row there. What a backend is, and the deadline it scores under, is `indexing.search.rerank_base`.

**Fallback.** Any error of the backend, or no answer within `KB_RERANK_TIMEOUT_MS`, and the fused
order and today's gate serve: one warning (the reason, never the question), and the run is
returned as a `RerankRun` for `/metrics` (`bot.metrics.observe_rerank`). The backend runs on a
worker thread of its own and the answer waits for it only until the budget is spent, so a slow
model never holds an answer. A local model cannot be interrupted mid-forward-pass, so it scores in
batches and stops at the first batch boundary past the deadline (`deadline()`); a job still queued
when its budget ran out is cancelled before it starts. A service call carries the deadline as its
HTTP timeout and retries only while the budget allows.

**Gate.** A reranker's scores are on its own scale (a sigmoid, a logit, a service's relevance), so
the gate uses the best one only when thresholds were fitted for that backend
(`KB_RERANK_REFUSE_BELOW` / `KB_RERANK_ANSWER_FROM`, `kb eval --calibrate`); without them the
stage changes the order only. The gate's other signals are always those of the fused order, so a
fallback gives exactly today's outcome.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from indexing.config import RerankConfig
from indexing.search.rerank_base import Reranker, RerankTimeout, deadline, scoring_until
from indexing.search.span_reader import Span

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

    from indexing.search.gate import GateSignals
    from indexing.values.hits import Hit

log = logging.getLogger(__name__)

OK, ERROR, TIMEOUT = "ok", "error", "timeout"  # a run's outcome, as `/metrics` counts it


# -- backends ----------------------------------------------------------------------------------

def _builtin(config: RerankConfig) -> Reranker:
    from indexing.search.reader import BuiltinReader  # numpy only; the model loads on first use

    return BuiltinReader()


def _span(config: RerankConfig) -> Reranker:
    """The shipped span reader, or with `model` (KB_RERANK_MODEL) another export of it
    (`training.span_export`), read with the shipped thresholds unless the gate's are set."""
    from indexing.search.span_reader import MODEL, SpanBackend  # numpy only; the model loads on first use

    path = Path(config.model).expanduser() if config.model else MODEL
    if not path.is_file():  # the shipped one is missing only from a slimmed install
        where = f"KB_RERANK_MODEL={path} is not a file" if config.model else f"{MODEL.name} is not in {MODEL.parent}"
        raise ValueError(f"KB_RERANK=span: the span reader's model is missing ({where}); reinstall Docent or train "
                         "one with training.span_train, or use KB_RERANK=builtin")
    if config.model and config.thresholds is None:
        log.warning("KB_RERANK_MODEL=%s is read with the shipped span reader's thresholds: fit its own with "
                    "`kb eval --calibrate` and set KB_RERANK_REFUSE_BELOW / KB_RERANK_ANSWER_FROM", path)
    return SpanBackend(path)


# The named backends, by `KB_RERANK` value (`span` in any case). Imported when chosen, not before.
BACKENDS: dict[str, Callable[[RerankConfig], Reranker]] = {"builtin": _builtin, "span": _span}


def make_reranker(config: RerankConfig) -> Reranker | None:
    """The configured backend (None: off). Raises ValueError for a setting that cannot work, so
    `kb` stops at start with one line instead of falling back on every question."""
    if config.url:
        from indexing.search.rerank_service import ServiceReranker

        return ServiceReranker(config.url, config.model, config.api_key, wire_format=config.wire_format,
                               batch=config.batch)
    choice = (config.backend or "off").strip()
    if choice.lower() == "off":
        return None
    if choice.lower() == "span":
        choice = "span"
    if choice in BACKENDS:
        return BACKENDS[choice](config)
    folder = Path(choice).expanduser()
    if not (folder / "config.json").is_file():
        known = ", ".join(["off", *BACKENDS])
        raise ValueError(f"KB_RERANK={choice!r} is neither {known} nor a sentence-transformers CrossEncoder folder "
                         f"(no config.json there); or set KB_RERANK_URL for a rerank service")
    return CrossEncoderReranker(str(folder))


class CrossEncoderReranker:
    """A sentence-transformers `CrossEncoder` folder on the CPU, loaded on first use.

    Torch runs with the threads the embedder uses (its default, one per core, with
    `OMP_WAIT_POLICY=PASSIVE` set by `indexing.vectors.embedding` before torch loads). One call at a time
    (`workers = 1`): two forward passes at once on 2 cores only slow both. Pairs go through in
    batches of `batch` (4): a call past its deadline stops at the next batch, so a timed-out
    question leaves at most one small batch running behind the next one."""

    workers = 1

    def __init__(self, path: str, batch: int = 4, max_length: int | None = 512) -> None:
        self.path = path
        self.batch = batch
        self.max_length = max_length
        self.name = f"cross-encoder:{Path(path).name}"
        self._model: CrossEncoder | None = None
        self._lock = threading.Lock()

    def load(self) -> CrossEncoder:
        with self._lock:
            if self._model is None:
                import indexing.vectors.embedding  # noqa: F401 — sets OMP_WAIT_POLICY before torch loads
                from sentence_transformers import CrossEncoder

                model = CrossEncoder(self.path, device="cpu")
                if self.max_length and (model.max_seq_length or 10**6) > self.max_length:
                    model.max_seq_length = self.max_length  # no more than BERT-sized models read; the header comes first
                self._model = model
            return self._model

    def score(self, query: str, texts: list[str]) -> list[float]:
        model = self.load()
        scores: list[float] = []
        for start in range(0, len(texts), self.batch):
            due = deadline()
            if due is not None and time.monotonic() >= due:
                raise RerankTimeout(f"stopped after {start} of {len(texts)} pairs: past the budget")
            pairs = [(query, text) for text in texts[start : start + self.batch]]
            scores.extend(float(s) for s in model.predict(pairs, batch_size=self.batch, show_progress_bar=False,
                                                          convert_to_numpy=True))
        return scores


# -- the stage -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RerankRun:
    """What one rerank did, for `/metrics` and the logs (the scores themselves are on the hits)."""

    backend: str
    outcome: str  # ok, error or timeout
    ms: float
    pairs: int
    reason: str = ""  # why it fell back (empty when ok)


def section_text(hit: Hit, max_chars: int) -> str:
    """What the model reads of a section: where it is (title › heading path), then its text; a
    long section gives the chunks both legs matched, best first, up to `max_chars` (cut at a word)."""
    where = [hit.title, *(h for h in hit.heading_path if h != hit.title)]
    header = " › ".join(p for p in where if p)
    body = hit.text
    if len(body) > max_chars and hit.matched:
        body = "\n".join(dict.fromkeys(hit.matched))  # unique, best first
    text = f"{header}\n{body}" if header else body
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    return cut[:space] if space > max_chars * 0.8 else cut


class RerankStage:
    """A backend with its budget, its worker threads and its fallback (one per process, on `Index`)."""

    def __init__(self, reranker: Reranker, config: RerankConfig) -> None:
        from indexing.search.gate import RerankGate

        self.reranker = reranker
        self.config = config
        self.top_n = max(1, getattr(reranker, "top_n", None) or config.top_n)
        weight, fitted = getattr(reranker, "gate", (None, getattr(reranker, "thresholds", None)))
        # How the gate reads this stage's score: the settings' thresholds and floor over the backend's.
        # No weight: the thresholds cut the rerank score alone; the built-in reader's weight and floor: a veto.
        self.gate = RerankGate(thresholds=config.thresholds or fitted, weight=weight,
                               floor=config.floor if config.floor is not None else getattr(reranker, "floor", 0.0))
        self._text_of = getattr(reranker, "text_of", lambda question, hit, max_chars: section_text(hit, max_chars))
        self._reads_cjk = getattr(reranker, "reads_cjk", True)
        workers = max(1, int(getattr(reranker, "workers", 1)))
        self._warm = False
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="docent-rerank")

    @property
    def name(self) -> str:
        return self.reranker.name

    def warm(self) -> None:
        """Load the model now (`kb serve`'s start, `kb eval`), not inside the first question's budget."""
        load = getattr(self.reranker, "load", None)
        if load is not None:
            load()
        self._warm = True

    def rerank(self, question: str, hits: list[Hit], signals: GateSignals) -> tuple[list[Hit], GateSignals, RerankRun | None]:
        """The hits with the top N in the backend's order (each with its `rerank` score) and the
        signals with `rerank_best`; on error or over budget, the hits and signals as they came.
        A mostly-CJK question a backend does not read comes back as it came, with no run."""
        if signals.cjk and not self._reads_cjk:
            return hits, signals, None
        head = hits[: self.top_n]
        texts = [self._text_of(question, h, self.config.max_chars) for h in head]
        started = time.monotonic()
        try:
            if not self._warm:  # the first question loads a local model, as the embedder's does: not in the budget
                self.warm()
                started = time.monotonic()
            due = started + self.config.timeout_ms / 1000
            future = self._pool.submit(_score_until, self.reranker, question, texts, due)
            results = _wait(future, due)
            if len(results) != len(head):
                raise ValueError(f"{len(results)} scores for {len(head)} sections")
            spans = [r for r in results if isinstance(r, Span)]
            scores = [s.confidence for s in spans] or [float(r) for r in results if not isinstance(r, Span)]
            if not all(math.isfinite(s) for s in scores):  # NaN would order nothing and break the log's JSON
                raise ValueError("a score that is not a finite number")
        except Exception as exc:
            ms = round((time.monotonic() - started) * 1000, 2)
            timed_out = isinstance(exc, TimeoutError)
            reason = _reason(exc, question, self.config.timeout_ms if timed_out else None)
            log.warning("rerank (%s) fell back to the fused order and the gate without it: %s", self.name, reason)
            return hits, replace(signals, rerank_outcome=TIMEOUT if timed_out else ERROR), \
                RerankRun(self.name, TIMEOUT if timed_out else ERROR, ms, len(head), reason)
        ms = round((time.monotonic() - started) * 1000, 2)
        for k, (hit, value) in enumerate(zip(head, scores)):
            hit.rerank = round(float(value), 6)
            hit.answer_span = spans[k].text if spans and spans[k].text else None
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))  # ties keep the fused order
        reranked = [head[i] for i in order] + hits[self.top_n :]
        best = round(max(float(s) for s in scores), 6) if scores else None
        return reranked, replace(signals, rerank_best=best, rerank_outcome=OK), RerankRun(self.name, OK, ms, len(head))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        close = getattr(self.reranker, "close", None)
        if close is not None:
            close()


def open_stage(config: RerankConfig) -> RerankStage | None:
    """The configured stage, or None when `KB_RERANK` is off (retrieval exactly as without one)."""
    reranker = make_reranker(config)
    return RerankStage(reranker, config) if reranker is not None else None


def _score_until(reranker: Reranker, question: str, texts: list[str], due: float) -> list[float] | list[Span]:
    if time.monotonic() >= due:
        raise RerankTimeout("waited for a free worker past the budget")
    with scoring_until(due):
        read = getattr(reranker, "read", None)  # a span reader: each section's answer words too
        return list(read(question, texts)) if read is not None else list(reranker.score(question, texts))


def _wait(future: Future[list[float] | list[Span]], due: float) -> list[float] | list[Span]:
    try:
        return future.result(timeout=max(0.0, due - time.monotonic()))
    except FutureTimeout:
        future.cancel()  # still queued behind another question: it never starts; running: it stops at its deadline
        raise RerankTimeout("no scores within the budget") from None


def _reason(exc: Exception, question: str, budget_ms: float | None) -> str:
    """One line for the log: what went wrong, never the question (a service may echo it)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if question and question in text:
        text = text.replace(question, "…")
    text = f"{type(exc).__name__}: {text}"[:300]
    return f"over its {budget_ms:g} ms budget ({text})" if budget_ms is not None else text
