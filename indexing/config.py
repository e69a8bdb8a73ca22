"""What the indexing layer needs to know, passed down from the edge (bot.settings).

A plain dataclass so tests and benchmarks can build one without environment variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from indexing.keyword.synonyms import Synonyms


@dataclass
class RerankConfig:
    """The rerank stage (`indexing.search.rerank`): which backend scores (question, section) pairs, how
    many sections, within what budget, and — only when fitted for that backend — its gate."""

    # What `kb serve` ships: "builtin" (the reader, indexing.search.reader), "off", "span", or a CrossEncoder
    # folder; `url` wins when set. The one place this default is written (bot.settings reads it).
    backend: str = "builtin"
    url: str | None = None  # a rerank service: TEI's /rerank or the Cohere/Jina/vLLM/Infinity format
    model: str | None = None  # the model name sent to the service
    api_key: str | None = None  # sent as Authorization: Bearer …
    wire_format: str = "auto"  # "auto" (told by the reply), "tei" or "cohere"
    top_n: int = 10  # fused sections scored; those past it keep their fused order after them
    timeout_ms: float = 300.0  # the stage's budget; over it the fused order and today's gate serve
    batch: int = 32  # texts per service request
    max_chars: int = 1500  # of a section sent per pair (title and heading path first), cut at a word
    refuse_below: float | None = None  # the gate on the best rerank score: both set, or the order only
    answer_from: float | None = None
    floor: float | None = None  # the built-in reader's veto floor (fitted for it); unset: the reader's own

    def __post_init__(self) -> None:
        if (self.refuse_below is None) != (self.answer_from is None):
            raise ValueError("KB_RERANK_REFUSE_BELOW and KB_RERANK_ANSWER_FROM go together: set both (fitted for "
                             "this reranker by `kb eval --calibrate`) or neither (the reranker orders, the gate stays)")
        if self.refuse_below is not None and self.answer_from is not None and self.refuse_below > self.answer_from:
            raise ValueError("KB_RERANK_REFUSE_BELOW must not be above KB_RERANK_ANSWER_FROM")

    @property
    def thresholds(self) -> tuple[float, float] | None:
        """(refuse_below, answer_from) when both are set: fitted for this backend (`kb eval --calibrate`)."""
        if self.refuse_below is None or self.answer_from is None:
            return None
        return self.refuse_below, self.answer_from


@dataclass
class IndexConfig:
    home: Path  # Docent's data directory: embedded Postgres, BM25 files
    database_url: str | None = field(default=None, repr=False)  # None: the embedded Postgres in home/pgdata; may hold a password
    # A hot standby of database_url's server that questions read from (indexing.storage.standby); None: the primary
    database_read_url: str | None = field(default=None, repr=False)
    # A sentence-transformers folder (None: bundled all-MiniLM-L6-v2); with embed_url, the service's model name.
    embed_model: str | None = None
    embed_batch_size: int = 32
    embed_backend: str = "onnx"  # how a local model runs: onnx, onnx-int8 or torch (indexing.vectors.onnx_embedding)
    model_cache: Path | None = None  # where the ONNX export is kept; None: per user (onnx_embedding.default_model_cache)
    embed_url: str | None = None  # an OpenAI-compatible /v1/embeddings service instead of a local model
    embed_api_key: str | None = field(default=None, repr=False)
    embed_in_flight: int = 4  # requests to the service at a time
    embed_service_batch: int = 64  # texts per request
    sync_batch_children: int = 256  # children embedded together across documents during a sync
    vector_candidates: int = 100  # children taken from each leg before fusion
    bm25_candidates: int = 100
    rrf_k: int = 60  # only for the hybrid-rrf comparison mode
    vector_weight: float = 0.8  # score fusion: α for the cosine, (1 − α)/2 for normalised BM25
    vector_weight_cjk: float = 0.3  # ... for CJK questions, where the English model is weak
    top_k: int = 5  # parents returned
    typo_repair: bool = True  # search a misspelt word as the wiki word one edit away (indexing.search.spelling; English)
    synonyms: Synonyms | None = field(default=None, repr=False)  # the sources file's [synonyms] (indexing.keyword.synonyms)
    synonyms_in_vector: bool = False  # also embed a question's synonyms (measured, not kept: docs/tuning.md "Synonyms")
    min_cosine: float = 0.47  # the first gate (kept for `kb eval --calibrate`'s sweep): found at this best cosine ...
    agree_min_cosine: float = 0.42  # ... or at this when both legs rank the same page first
    # The gate (indexing.search.gate.gate_outcome): not found below `refuse_below`, answered from
    # `answer_from`, uncertain between; fitted leave-one-corpus-out (docs/history.md, tuning log §8).
    gate_refuse_below: float = 0.285
    gate_answer_from: float = 0.485
    gate_refuse_below_cjk: float = 0.385
    gate_answer_from_cjk: float = 0.445
    rerank: RerankConfig = field(default_factory=RerankConfig)  # the rerank stage (indexing.search.rerank): the built-in reader

    def __post_init__(self) -> None:
        self.home = Path(self.home).expanduser()
        self.model_cache = Path(self.model_cache).expanduser() if self.model_cache else None
        from indexing.vectors.onnx_embedding import check_backend

        check_backend(self.embed_backend)
        if self.database_read_url and not self.database_url:
            raise ValueError("DATABASE_READ_URL needs DATABASE_URL: it names a standby of that server (the embedded "
                             "Postgres listens on a socket in KB_HOME only and has no standby)")
        if self.embed_url and not self.embed_model:
            raise ValueError("KB_EMBED_URL needs KB_EMBED_MODEL: the model name the embedding service expects "
                             "(it also keys the vector cache, so vectors of different models never mix)")
