"""Composing the reply to a question: the extractive answer and its lead sentences, or an LLM's
answer with checked citations (whole or streamed), and the answer types a question asks for."""
