"""A trained reader run by ONNX Runtime: how `benchmarks.reader_eval` scores an int8 export.

Not shipped: no variant measured better than today's gate leave-one-corpus-out (docs/tuning.md,
"A built-in reader"), so no model file is in the repo and nothing in `indexing/` loads one. This
is the runner a shipped model would use — `score(query, texts)` in [0, 1], the seam of the rerank
stage's `Reranker` — kept with the benchmarks so the next try measures exactly what would ship.

Pairs are tokenised with the bundled MiniLM tokenizer, question first, the section truncated to
`MAX_LENGTH` word-pieces in all, as in training (`benchmarks.reader_train`); the section's
word-pieces are segment 1. The session runs with the embedder's thread rule (no spinning).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

MAX_LENGTH = 128  # question + section window, in word-pieces (the training length)
BATCH = 16


class Reader:
    """Scores (question, text) pairs with an exported cross-encoder; loaded on first use."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        self.path = Path(path)
        self.threads = threads
        self._session = None
        self._tokenizer = None
        self._lock = threading.Lock()
        if not self.path.is_file():
            raise FileNotFoundError(f"the reader model {self.path} is missing")

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """How likely each text answers `query`, in [0, 1], in the order of `texts`."""
        return [float(1.0 / (1.0 + np.exp(-x))) for x in self.logits(query, texts)]

    def logits(self, query: str, texts: Sequence[str]) -> list[float]:
        """The model's raw scores (what a threshold fit or a combination may prefer)."""
        if not texts:
            return []
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch([(query, t) for t in texts])
        out = np.zeros(len(texts), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            out[batch] = session.run(None, _inputs([encodings[i] for i in batch]))[0][:, 0]
        return out.tolist()

    def _load(self):
        with self._lock:
            if self._session is None:
                import onnxruntime
                from tokenizers import Tokenizer

                from indexing.onnx_embedding import bundled_model_path

                options = onnxruntime.SessionOptions()
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                if self.threads:
                    options.intra_op_num_threads = self.threads
                self._session = onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
                tokenizer = Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))
                tokenizer.no_padding()
                tokenizer.enable_truncation(MAX_LENGTH, strategy="only_second")
                self._tokenizer = tokenizer
            return self._session, self._tokenizer


def _inputs(encodings) -> dict[str, np.ndarray]:
    """A batch padded to its longest pair; the section's word-pieces are segment 1, as in training
    (the embedder's `_padded` sends segment 0 only: it never reads pairs)."""
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), length), dtype=np.int64)
    mask, types = np.zeros_like(ids), np.zeros_like(ids)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)] = e.ids
        mask[row, : len(e.ids)] = 1
        types[row, : len(e.ids)] = e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
