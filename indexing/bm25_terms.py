"""The tokenised corpus behind a BM25 version, kept so the next build tokenises only what changed.

Tokenising (CJK bigrams, stop words, Snowball stemming) was most of a BM25 build: ~3 of ~5.5 s
at 12,000 chunks, so a sync that edited one page still paid for the whole wiki. Each build now
saves every chunk's term ids next to its index, under a fingerprint of the text that was
tokenised; the next build reuses the ids of every fingerprint it has seen and tokenises only the
rest. A chunk's terms depend on nothing but its own text, so reusing them cannot change a score:
BM25's corpus statistics (document frequencies, average length) are recomputed from the term ids
on every build.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Bump when what a text tokenises to changes (analyzer, stop words, stemmer, token pattern): a
# saved corpus from another version is then ignored and everything is tokenised afresh.
TERMS_VERSION = "1"
_IDS, _META = "terms.npz", "terms.json"


def fingerprint(*parts: str) -> str:
    """A key for one chunk's search text, from the parts it is made of (and `TERMS_VERSION`)."""
    return hashlib.blake2b("\x1f".join((TERMS_VERSION, *parts)).encode(), digest_size=16).hexdigest()


@dataclass
class TokenisedCorpus:
    """Every chunk's term ids, end to end: chunk i's are `ids[offsets[i]:offsets[i + 1]]`."""

    fingerprints: list[str]
    vocab: list[str]  # term id → term
    ids: np.ndarray  # int32
    offsets: np.ndarray  # int64, one more than there are chunks

    def terms_of(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def id_lists(self) -> list[list[int]]:
        """The ids per chunk as bm25s wants them for indexing."""
        flat = self.ids.tolist()
        bounds = self.offsets.tolist()
        return [flat[a:b] for a, b in zip(bounds, bounds[1:])]

    def doc_freq(self, groups: list[str]) -> dict[str, dict[str, int]]:
        """For each group (a chunk's access scope), how many of its chunks contain each term."""
        from scipy import sparse

        names = sorted(set(groups))
        position = {name: g for g, name in enumerate(names)}
        chunks, terms = len(groups), len(self.vocab)
        chunk_of = np.repeat(np.arange(chunks), np.diff(self.offsets))
        has = sparse.csr_matrix((np.ones(len(self.ids), dtype=np.int32), (chunk_of, self.ids)), shape=(chunks, terms))
        has.data[:] = 1  # repeated terms were summed: a chunk counts once per term
        member = sparse.csr_matrix(
            (np.ones(chunks, dtype=np.int32), ([position[g] for g in groups], np.arange(chunks))),
            shape=(len(names), chunks),
        )
        counts = (member @ has).toarray()
        return {name: {self.vocab[t]: int(counts[g, t]) for t in np.flatnonzero(counts[g])}
                for g, name in enumerate(names)}

    def save(self, directory: Path) -> None:
        np.savez(directory / _IDS, ids=self.ids, offsets=self.offsets)
        meta = {"version": TERMS_VERSION, "fingerprints": self.fingerprints, "vocab": self.vocab}
        (directory / _META).write_text(json.dumps(meta, ensure_ascii=False))

    @classmethod
    def load(cls, directory: Path) -> TokenisedCorpus | None:
        """The corpus a build saved there, or None if there is none (or it is of another version)."""
        try:
            meta = json.loads((directory / _META).read_text())
            if meta.get("version") != TERMS_VERSION:
                return None
            with np.load(directory / _IDS) as arrays:
                corpus = cls(meta["fingerprints"], meta["vocab"], arrays["ids"], arrays["offsets"])
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            return None  # missing or unreadable: tokenise everything, as on a first build
        consistent = (
            len(corpus.offsets) == len(corpus.fingerprints) + 1
            and (len(corpus.ids) == 0 or (corpus.offsets[-1] == len(corpus.ids) and corpus.ids.max() < len(corpus.vocab)))
        )
        return corpus if consistent else None


def tokenise_corpus(
    fingerprints: list[str],
    texts_of: Callable[[list[int]], list[str]],
    tokenise: Callable[[list[str]], tuple[list[list[int]], dict[str, int]]],
    previous: TokenisedCorpus | None,
) -> tuple[TokenisedCorpus, int]:
    """The term ids of every chunk, and how many chunks had to be tokenised.

    `texts_of(positions)` returns the texts of the chunks at those positions (only those not
    in `previous` are asked for, so a caller can read just them); `tokenise(texts)` returns
    their term ids and its vocabulary, as `bm25s.tokenize` does. The result's vocabulary holds
    exactly the terms in use, so old terms do not pile up across builds.
    """
    known = {fp: i for i, fp in enumerate(previous.fingerprints)} if previous else {}
    missing = [i for i, fp in enumerate(fingerprints) if fp not in known]
    vocab: dict[str, int] = {term: i for i, term in enumerate(previous.vocab)} if previous else {}
    fresh: dict[int, np.ndarray] = {}
    if missing:
        local_ids, local_vocab = tokenise(texts_of(missing))
        to_global = np.zeros(len(local_vocab), dtype=np.int64)
        for term, local in local_vocab.items():
            to_global[local] = vocab.setdefault(term, len(vocab))
        fresh = {pos: to_global[np.asarray(ids, dtype=np.int64)] for pos, ids in zip(missing, local_ids)}
    pieces = [fresh[i] if i in fresh else previous.terms_of(known[fp]) for i, fp in enumerate(fingerprints)]
    lengths = np.array([len(p) for p in pieces], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = np.concatenate(pieces).astype(np.int64) if pieces else np.zeros(0, np.int64)
    # Keep only the terms in use, renumbered 0..n-1 in their old order.
    used = np.unique(ids)
    renumber = np.zeros(len(vocab), dtype=np.int64)
    renumber[used] = np.arange(len(used))
    terms = list(vocab)
    corpus = TokenisedCorpus(
        fingerprints=list(fingerprints),
        vocab=[terms[t] for t in used.tolist()],
        ids=renumber[ids].astype(np.int32),
        offsets=offsets,
    )
    return corpus, len(missing)
