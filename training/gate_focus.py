"""Focus coverage: how closely each of the question's content words is matched, token by token, in the evidence.

A candidate gate signal, measured by `training/gate_features.py` (docs/tuning.md, last section)
and not shipped: it did not reach issue 14's targets out of corpus.

Why: the English gate reads the best chunk's cosine, one vector for the whole question. A
near-topic question ("is pet insurance something we offer?" against the insurance page) scores
as high as an answerable one: most of its words are on the page, only its focus is not. Late
interaction (ColBERT-style) keeps the words apart: every content word of the question gets its
best cosine to any word of the evidence, with the bundled model's contextual token vectors, so a
paraphrase (babysitter ↔ childcare) still matches while a focus word the page never touches
("pet", "sabbatical") stays low.

`word_matches` returns each question word's best match; how those are aggregated into a gate
feature is the caller's choice (`training/gate_features.py` tried several). Only a local
sentence-transformers model has token vectors: in retrieval this would need the torch backend
(the ONNX export pools inside its graph; an embedding service returns one vector per text).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from indexing.keyword import bm25 as bm25_module

MAX_PIECES = 256  # MiniLM's max_seq_length: longer evidence is split into windows of this many pieces


@dataclass(frozen=True)
class WordMatch:
    """One content word of the question and its closest word in the evidence."""

    word: str  # as written in the question (lower-cased by the tokenizer)
    term: str  # its keyword-index term (stemmed): the key to its IDF
    best: float  # best cosine of its vector to any evidence word's vector (pieces averaged)
    best_piece: float  # the same with pieces unmerged: mean over its pieces of each piece's best match


def _word_vectors(st, texts: list[str]) -> list[tuple[list[str], np.ndarray, list[np.ndarray]]]:
    """For each text: its alphanumeric words, their vectors (the mean of their pieces' contextual
    vectors, unit length), and each word's piece vectors (unit length). Texts longer than the
    model's window are split into windows first (a word is never split across two)."""
    tokenizer, model = st.tokenizer, st[0].auto_model
    windows: list[tuple[int, str]] = []
    for i, text in enumerate(texts):
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets, word_ids = enc["offset_mapping"], enc.word_ids()
        start = 0
        while start < len(offsets):
            end = min(start + MAX_PIECES - 2, len(offsets))
            while end < len(offsets) and end > start + 1 and word_ids[end] == word_ids[end - 1]:
                end -= 1  # do not cut a word in two
            windows.append((i, text[offsets[start][0]:offsets[end - 1][1]]))
            start = end
    out: list[tuple[list[str], list[np.ndarray], list[np.ndarray]]] = [([], [], []) for _ in texts]
    if not windows:
        return [([], np.zeros((0, 1)), []) for _ in texts]
    import torch

    with torch.inference_mode():
        batch = tokenizer([w for _, w in windows], padding=True, truncation=True, max_length=MAX_PIECES,
                          return_tensors="pt")
        hidden = model(**batch).last_hidden_state.numpy()
    for b, (i, window) in enumerate(windows):
        words, vectors, pieces = out[i]
        ids = batch.word_ids(b)
        spans = batch[b].offsets
        grouped: dict[int, list[int]] = {}
        for position, word_id in enumerate(ids):
            if word_id is not None:
                grouped.setdefault(word_id, []).append(position)
        for positions in grouped.values():
            word = window[spans[positions[0]][0]:spans[positions[-1]][1]].lower()
            if not word.isalnum():
                continue
            vecs = hidden[b, positions]
            vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
            mean = vecs.mean(axis=0)
            words.append(word)
            vectors.append(mean / np.linalg.norm(mean))
            pieces.append(vecs)
    return [(w, np.array(v) if v else np.zeros((0, hidden.shape[-1])), p) for w, v, p in out]


def content_words(question: str) -> set[str]:
    """The words of a question the gate asks about: what the keyword leg searches (function and
    stop words out), lower-cased."""
    return {w.lower() for w in bm25_module._WORD.findall(bm25_module.question_text(question))
            if w.strip() and bm25_module.tokens(w)}


def word_matches(st, question: str, evidence: list[str]) -> list[WordMatch]:
    """Each content word of the question with its best match among all words of `evidence`
    (texts embedded as they are, one forward pass over the question and the evidence windows)."""
    encoded = encode_words(st, [question, *evidence])
    return match_words(question, encoded[0], encoded[1:])


def encode_words(st, texts: list[str]):
    """The texts' words and vectors (`match_words`' input), in one batch through the model."""
    return _word_vectors(st, texts)


def match_words(question: str, asked, evidence: list) -> list[WordMatch]:
    """Each content word of the question (`asked`: its `encode_words` entry) with its best match
    among the words of the encoded `evidence` texts."""
    wanted = content_words(question)
    q_words, q_vectors, q_pieces = asked
    e_vectors = [v for _, v, _ in evidence if len(v)]
    if not e_vectors:
        return []
    evidence_words = np.vstack(e_vectors)
    evidence_pieces = np.vstack([p for _, _, ps in evidence for p in ps])
    matches = []
    for word, vector, pieces in zip(q_words, q_vectors, q_pieces):
        terms = bm25_module.tokens(word)
        if word not in wanted or not terms:
            continue
        best = float((evidence_words @ vector).max())
        best_piece = float((pieces @ evidence_pieces.T).max(axis=1).mean())
        matches.append(WordMatch(word, terms[0], round(best, 4), round(best_piece, 4)))
    return matches
