"""Turning text into vectors: the bundled model under torch or ONNX Runtime, an OpenAI-compatible
embedding service, the sentence vectors the answer's lead is chosen with, and the chunk store on
pgvector (children and their vectors, parent sections)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexing.faces import load

if TYPE_CHECKING:  # the face: where each public name lives, loaded on first use (indexing.faces)
    from indexing.vectors.embedding import Embedder, TorchEmbedder
    from indexing.vectors.embedding_service import EmbeddingDimensionError
    from indexing.vectors.onnx_embedding import OnnxBackendError, OnnxEmbedder
    from indexing.vectors.sentence_vectors import stored_vectors

__all__ = ["Embedder", "EmbeddingDimensionError", "OnnxBackendError", "OnnxEmbedder", "TorchEmbedder", "stored_vectors"]


def __getattr__(name: str) -> object:
    return load(__name__, name)
