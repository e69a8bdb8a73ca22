"""`kb eval`: how well Docent answers a labelled question set, in numbers others can recompute.

Input lines: {"id", "question", "expected_sources": [paths relative to the corpus root],
"answer_keywords", "kind"}; `kind == "not_found"` marks questions the wiki cannot answer.

An answerable question is a hit@k when an expected source is among the first k distinct cited
documents; MRR@10 uses the first 10. The not-found gate is scored as a detector of unanswerable
questions: precision = share of its refusals that were right, recall = share of unanswerable
questions it refused. Outcome shares (answered / uncertain / not found) are given for answerable
and unanswerable questions apart.

Keyword coverage: the share of a question's `answer_keywords` found (case-insensitive substring)
in the whole reply, and in its lead sentences alone; `lead_shows_fact@3` is the share of
answerable questions whose right page is in the top 3 and whose lead holds at least one keyword.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.knowledge import KnowledgeBase
from sources import Audience
from indexing.search import Outcome
from indexing.index import Index

if TYPE_CHECKING:
    from bot.answering import LLMClient
    from indexing.vectors import Embedder

RANK_DEPTH = 10
# `kb eval --json`'s records: one scored question (a row), and the scores of a set of rows; JSON values
# of several kinds, read back from files by `gate_fit` and the training scripts.
Row = dict[str, Any]
Scores = dict[str, Any]


@dataclass
class Question:
    id: str
    question: str
    expected: list[str]
    keywords: list[str]
    kind: str

    @property
    def answerable(self) -> bool:
        return self.kind != "not_found"


def load_questions(path: Path) -> list[Question]:
    questions = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            questions.append(Question(row["id"], row["question"], list(row.get("expected_sources") or []),
                                      list(row.get("answer_keywords") or []), row.get("kind", "fact")))
        except (json.JSONDecodeError, KeyError) as exc:
            raise ValueError(f"{path}:{n}: not an eval line ({exc})") from None
    return questions


def run_eval(kb: KnowledgeBase | Index, questions: list[Question], scopes: list[str] | None = None,
             mode: str = "hybrid", llm: LLMClient | None = None, extractive: bool = False) -> dict[str, Any]:
    """Answer every question through `KnowledgeBase.ask` and score it; returns {"metrics", "questions"}.

    `scopes`: the operator's view limited to these access scopes (None: all). Extractive unless
    the knowledge base has an LLM (or `llm`, a `bot.answering.llm.LLMClient`, is given) and `extractive` is
    off: then the model writes the answers, its "not found" counts as a refusal (`bot.answering.answer`),
    and keyword coverage is of its text.
    """
    if not isinstance(kb, KnowledgeBase):
        kb = KnowledgeBase(kb, llm=llm)
    elif llm is not None:
        kb = KnowledgeBase(kb.index, llm=llm, runner=kb.runner)
    index = kb.index
    audience = Audience.operator() if scopes is None else Audience.limited(scopes)
    saved_top_k = index.config.top_k
    index.config.top_k = RANK_DEPTH
    rows: list[Row] = []
    index.embedder.embed_query("warm-up")  # load the model before the clock starts
    if index.rerank is not None:
        index.rerank.warm()  # and the reranker's: its first load is not a question's budget
    try:
        for q in questions:
            started = time.perf_counter()
            answer = kb.ask(q.question, audience, mode=mode, extractive=extractive)
            latency = (time.perf_counter() - started) * 1000
            paths = [s.path for s in answer.sources]
            hit_rank = next((i + 1 for i, p in enumerate(paths) if p in q.expected), None)
            rows.append({
                "id": q.id, "kind": q.kind, "found": answer.found, "outcome": answer.outcome.value, "sources": paths,
                "hit_rank": hit_rank, "latency_ms": round(latency, 2),
                # the span's bold marks ("**25** days") are not text: a keyword must match across them
                "keywords": [keywords_in(q.keywords, answer.text.replace("**", "")), len(q.keywords)],
                "lead_keywords": [keywords_in(q.keywords, answer.lead.replace("**", "")), len(q.keywords)],
                "lead": answer.lead, "answer_span": answer.answer_span,
                "timings_ms": answer.timings_ms, "signals": answer.signals, "llm_used": answer.llm_used,
                "verified": answer.verified.to_json() if answer.verified else None,
                "verified_offer": answer.verified_offer.to_json() if answer.verified_offer else None,
                **({"rerank": [s.rerank for s in answer.sources]} if index.rerank is not None else {}),
            })
    finally:
        index.config.top_k = saved_top_k
    kinds = sorted({r["kind"] for r in rows})
    metrics = {"overall": score(rows), **{f"kind:{k}": score([r for r in rows if r["kind"] == k]) for k in kinds}}
    return {"metrics": metrics, "questions": rows}


def keywords_in(keywords: list[str], text: str) -> int:
    """How many of the answer keywords occur in `text` (case-insensitive substrings)."""
    text = (text or "").lower()
    return sum(1 for k in keywords if k.lower() in text)


def outcome_of(row: Row) -> Outcome:
    """A row's outcome; rows written before there were three outcomes have only `found`."""
    return Outcome.logged(row.get("outcome"), row["found"])


def outcome_shares(rows: list[Row]) -> dict[str, float | None]:
    outcomes = [outcome_of(r) for r in rows]
    return {o.value: round(outcomes.count(o) / len(rows), 4) if rows else None for o in Outcome}


def _coverage(rows: list[Row], field: str) -> float | None:
    kw = [r[field] for r in rows if r.get(field) and r[field][1]]
    return round(sum(c / n for c, n in kw) / len(kw), 4) if kw else None


def score(rows: list[Row]) -> Scores:
    """hit@1/3/5, MRR@10, keyword coverage (reply and lead), outcome shares, not-found P/R/F1 and
    latency for a set of rows."""
    answerable = [r for r in rows if r["kind"] != "not_found"]
    unanswerable = [r for r in rows if r["kind"] == "not_found"]
    out: Scores = {"questions": len(rows), "answerable": len(answerable)}
    if answerable:
        ranks = [r["hit_rank"] for r in answerable]
        for k in (1, 3, 5):
            out[f"hit@{k}"] = round(sum(1 for x in ranks if x and x <= k) / len(ranks), 4)
        out["mrr@10"] = round(sum(1 / x for x in ranks if x and x <= RANK_DEPTH) / len(ranks), 4)
        out["keyword_coverage"] = _coverage(answerable, "keywords")
        out["lead_keyword_coverage"] = _coverage(answerable, "lead_keywords")
        top3 = [r for r in answerable if r["hit_rank"] and r["hit_rank"] <= 3 and r["keywords"][1]]
        if top3:
            out["lead_shows_fact@3"] = round(sum(1 for r in top3 if (r.get("lead_keywords") or [0])[0]) / len(top3), 4)
            out["reply_shows_fact@3"] = round(sum(1 for r in top3 if r["keywords"][0]) / len(top3), 4)
        for name, share in outcome_shares(answerable).items():
            out[f"answerable_{name}"] = share
    if unanswerable:
        for name, share in outcome_shares(unanswerable).items():
            out[f"unanswerable_{name}"] = share
    refused = [r for r in rows if not r["found"]]
    right = [r for r in refused if r["kind"] == "not_found"]
    precision = len(right) / len(refused) if refused else (1.0 if not unanswerable else 0.0)
    recall = len(right) / len(unanswerable) if unanswerable else None
    out["not_found_precision"] = round(precision, 4)
    out["not_found_recall"] = round(recall, 4) if recall is not None else None
    if recall is not None:
        out["not_found_f1"] = round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0
    latencies = [r["latency_ms"] for r in rows]
    if latencies:
        out["latency_p50_ms"] = round(percentile(latencies, 50), 2)
        out["latency_p95_ms"] = round(percentile(latencies, 95), 2)
        reranked = any("rerank" in r["timings_ms"] for r in rows)
        for stage in ("embed", "vector", "bm25", "fuse", *(("rerank",) if reranked else ()), "answer"):
            values = [r["timings_ms"].get(stage, 0.0) for r in rows]
            out[f"{stage}_p50_ms"] = round(percentile(values, 50), 2)
            out[f"{stage}_p95_ms"] = round(percentile(values, 95), 2)
    return out


def percentile(values: list[float], pct: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(pct) - 1]


def calibrate(rows: list[Row], thresholds: list[float] | None = None) -> dict[str, Any]:
    """Sweep the gate's cosine threshold over answered eval rows (their raw signals).

    The threshold is chosen on one half of the questions (even positions) and reported on the
    other half too, so the figure is not fitted to the whole file. The gate does not change
    which pages are cited, so hit@k is the same at every threshold.
    """
    from indexing.search import GateSignals, is_found

    thresholds = thresholds or [round(0.30 + 0.01 * i, 2) for i in range(51)]
    halves = {"fit": rows[0::2], "held_out": rows[1::2], "all": rows}

    def prf(subset: list[Row], t: float) -> dict[str, float | int]:
        refused = [r for r in subset if not is_found(GateSignals.from_json(r["signals"]), t)]
        right = sum(1 for r in refused if r["kind"] == "not_found")
        unanswerable = sum(1 for r in subset if r["kind"] == "not_found")
        p = right / len(refused) if refused else 0.0
        rec = right / unanswerable if unanswerable else 0.0
        f1 = 2 * p * rec / (p + rec) if p + rec else 0.0
        return {"precision": round(p, 4), "recall": round(rec, 4), "f1": round(f1, 4),
                "wrongly_refused": len(refused) - right}

    curve: list[dict[str, Any]] = [{"threshold": t, **{name: prf(subset, t) for name, subset in halves.items()}}
                                   for t in thresholds]
    best = max(curve, key=lambda c: (c["fit"]["f1"], -c["fit"]["wrongly_refused"]))
    return {"curve": curve, "best": best}


def naive_baseline(embedder: Embedder, corpus: Path, questions: list[Question], cache_dir: Path,
                   top_k: int = 2) -> dict[str, Any]:
    """The yardstick: LlamaIndex with its defaults over the same corpus and the same model.

    SimpleDirectoryReader, `SentenceSplitter(1024, 20)` chunks, an in-memory `VectorStoreIndex`,
    top-2 retrieval (LlamaIndex's default; `top_k=5` scores it at the depth Docent cites, so
    hit@5 is comparable), no not-found gate. The index is persisted under `cache_dir` (keyed by the
    corpus's files and mtimes) so repeated comparisons do not re-embed. Returns the same
    {"metrics", "questions"} shape as `run_eval`.
    """
    import hashlib
    import logging
    import os

    # without llama-index-readers-file it warns once per file that only plain readers are available
    logging.getLogger("llama_index.core.readers.file.base").setLevel(logging.ERROR)
    from llama_index.core import SimpleDirectoryReader, StorageContext, VectorStoreIndex, load_index_from_storage
    from llama_index.core.node_parser import SentenceSplitter

    corpus = Path(corpus).resolve()
    files = sorted(p for p in corpus.rglob("*") if p.suffix in (".md", ".markdown", ".mdx", ".txt")
                   and p.name != "SOURCE.md" and not any(part.startswith(".") for part in p.relative_to(corpus).parts))
    key = hashlib.sha256("".join(f"{f}:{f.stat().st_mtime_ns}" for f in files).encode()).hexdigest()[:16]
    target = Path(cache_dir) / key
    from indexing.vectors import OnnxEmbedder, TorchEmbedder

    if isinstance(embedder, OnnxEmbedder) and not embedder.quantized:
        embedder = TorchEmbedder(embedder.model_path)  # the same vectors, as the object llama-index takes
    if not isinstance(embedder, TorchEmbedder):
        raise ValueError("the naive baseline runs the model as sentence-transformers does: set KB_EMBED_BACKEND=onnx or torch")
    model = embedder._load()
    if (target / "docstore.json").exists():
        vindex = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(target)), embed_model=model)
    else:
        documents = SimpleDirectoryReader(input_files=[str(f) for f in files]).load_data(show_progress=False)
        vindex = VectorStoreIndex.from_documents(
            documents, transformations=[SentenceSplitter(chunk_size=1024, chunk_overlap=20)], embed_model=model
        )
        vindex.storage_context.persist(persist_dir=str(target))
    retriever = vindex.as_retriever(similarity_top_k=top_k)
    rows = []
    for q in questions:
        started = time.perf_counter()
        nodes = retriever.retrieve(q.question)
        latency = (time.perf_counter() - started) * 1000
        paths: list[str] = []
        for n in nodes:
            rel = os.path.relpath(n.node.metadata.get("file_path", ""), corpus)
            if rel not in paths:
                paths.append(rel)
        hit_rank = next((i + 1 for i, p in enumerate(paths) if p in q.expected), None)
        text = " ".join(n.node.get_content() for n in nodes).lower()
        rows.append({"id": q.id, "kind": q.kind, "found": True, "sources": paths, "hit_rank": hit_rank,
                     "latency_ms": round(latency, 2),
                     "keywords": [sum(1 for k in q.keywords if k.lower() in text), len(q.keywords)],
                     "timings_ms": {}, "signals": {}})
    return {"metrics": {"overall": score(rows)}, "questions": rows}
