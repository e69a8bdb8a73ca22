"""From a question to ranked, gated sections: typo repair and synonyms, the two legs fused,
the gate's three outcomes, and the rerank stage with its backends (the built-in reader, the span
reader, a CrossEncoder folder, a rerank service)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexing.faces import load

if TYPE_CHECKING:  # the face: where each public name lives, loaded on first use (indexing.faces)
    from indexing.search.gate import (
        GateSignals,
        Outcome,
        gate_score,
        is_cjk,
        is_found,
        outcome_for,
        question_terms,
        reader_gate_score,
    )
    from indexing.values.hits import Hit
    from indexing.search.rerank import RerankRun
    from indexing.search.retrieval import retrieve
    from indexing.search.spelling import english_words
    from indexing.keyword.synonyms import Synonyms

__all__ = ["GateSignals", "Hit", "Outcome", "RerankRun", "Synonyms", "english_words", "gate_score", "is_cjk",
           "is_found", "outcome_for", "question_terms", "reader_gate_score", "retrieve"]


def __getattr__(name: str) -> object:
    return load(__name__, name)
