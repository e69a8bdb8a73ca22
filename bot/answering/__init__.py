"""Composing the reply to a question: the extractive answer and its lead sentences, or an LLM's
answer with checked citations (whole or streamed), and the answer types a question asks for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexing.faces import load

if TYPE_CHECKING:  # the face: where each public name lives, loaded on first use (indexing.faces)
    from bot.answering.answer import Answer, EmptyQuestion, Source, answer_question, cited_sources
    from bot.answering.llm import LLMClient, LanguageModel
    from bot.answering.llm_stream import StreamingLLM

__all__ = ["Answer", "EmptyQuestion", "LLMClient", "LanguageModel", "Source", "StreamingLLM", "answer_question",
           "cited_sources"]


def __getattr__(name: str) -> object:
    return load(__name__, name)
