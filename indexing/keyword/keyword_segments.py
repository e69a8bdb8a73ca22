"""The keyword leg in memory: segments of term frequencies, deletions as a mask, scored live.

bm25s bakes each chunk's BM25 weights into its index at build time, and those weights depend on
the whole corpus (row count, average length, each term's document frequency), so one edited page
meant rebuilding everything. Here a segment keeps only raw term frequencies (a column per term),
and scores are computed at question time from the *live* corpus statistics. An edit therefore
costs what it changes: its old rows are masked out, its new rows form a small segment of their
own; once the small segments hold more than a share of the rows they are merged into one.

The arithmetic is bm25s's own (its default Lucene variant, k1=1.5, b=0.75, which LlamaIndex's
BM25Retriever uses), step for step in the same float types: each posting's weight
float32(idf_f32 * tf / (k1 * (1 - b + b * len / avg_len) + tf)) and a chunk's score the float32
sum of its terms' weights in question order. Scores therefore equal a from-scratch build on the
same texts (tests/test_keyword_index.py compares them).

The statistics are those of the rows the asker may see (`scopes`): their count, their average
length and each term's document frequency among them. A scoped search therefore scores exactly
as a from-scratch build of the visible chunks alone would, and a restricted page moves no visible
page's score: were its rows counted, a rare word it holds would lower that word's IDF for
everyone, and a public question using the word would rank and score public pages differently
depending on whether some restricted page holds it — a way to learn a restricted word from
public replies. Counting per audience costs a mask over the rows per question (docs/benchmarks.md,
"Keyword statistics per audience").

Rows are kept as columns, not as one Python object per chunk: node and parent ids as fixed-width
byte arrays, the document and the scope as int32 codes into the index's shared name tables. At a
million chunks a `KeywordRow` per row with its three strings, and a row map per document, cost
~0.5 KB a row — more than the term frequencies themselves (docs/scaling.md); as columns a row
costs its two ids' bytes plus 8. A `KeywordRow` is made only for a hit.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import sparse

K1, B = 1.5, 0.75  # bm25s.BM25() defaults, as BM25Retriever builds it
MAX_SMALL_SEGMENTS = 8  # more, and the small ones are combined into one (cost: their rows)
MERGE_MIN_ROWS, MERGE_SHARE = 2000, 0.05  # small segments over max(these) rows: merge into the base
AUDIENCES = 16  # sets of scopes whose visible rows an index keeps (KeywordIndex._audiences)


@dataclass(frozen=True, slots=True)
class KeywordRow:
    """What a hit carries back: the chunk and where it belongs."""

    node_id: str
    doc_id: str
    parent_id: str
    access: str


@dataclass(frozen=True)
class Segment:
    """Rows added together. Immutable, except that whole copies of `alive` are swapped in."""

    tf: sparse.csc_matrix  # rows × terms, float32 term frequencies
    lengths: np.ndarray  # int64 terms per row (bm25s's document length)
    node_ids: np.ndarray  # bytes (numpy S): each row's node id, UTF-8
    parent_ids: np.ndarray  # bytes (numpy S): each row's parent section
    docs: np.ndarray  # int32 code of each row's document (KeywordIndex.doc_names)
    access: np.ndarray  # int32 code of each row's scope (KeywordIndex.scopes)
    alive: np.ndarray  # bool

    @property
    def size(self) -> int:
        return len(self.lengths)

    def postings(self, term: int, visible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows holding the term among the `visible` ones (a mask of this segment's rows: live, and
        of the asker's scopes), and its frequency in each."""
        if term >= self.tf.shape[1]:
            return np.zeros(0, np.int32), np.zeros(0, np.float32)
        start, end = self.tf.indptr[term], self.tf.indptr[term + 1]
        rows, tf = self.tf.indices[start:end], self.tf.data[start:end]
        keep = visible[rows]
        return rows[keep], tf[keep]


@dataclass
class KeywordIndex:
    """Every live chunk's terms, at one published version (`generation`)."""

    generation: int
    vocab: dict[str, int] = field(default_factory=dict)
    scopes: dict[str, int] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    scope_names: list[str] = field(default_factory=list)  # each scope code's name
    doc_codes: dict[str, int] = field(default_factory=dict)  # document id → its code in Segment.docs
    doc_names: list[str] = field(default_factory=list)  # each document code's id
    live_rows: int = 0
    live_length: int = 0
    # Per set of scopes asked with: the visible rows and their count and length, O(rows) to make
    # (a scope test over every row: ~7 ms a question at a million rows). Made once per version:
    # an index is never changed once it answers (`replaced` makes a new one, and a new one starts
    # empty). A handful of audiences ask at most; past AUDIENCES, it starts over.
    _audiences: dict[frozenset[str], tuple[list[np.ndarray], int, int]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    # -- changing (each returns a new index; the old one keeps answering meanwhile) ------------

    def replaced(self, doc_ids: list[str], rows: list[KeywordRow], terms: list[list[str]], generation: int) -> KeywordIndex:
        """This index with the rows of `doc_ids` replaced by `rows` (their terms in `terms`).

        Costs what changed: the small segments are combined among themselves once there are
        more than `MAX_SMALL_SEGMENTS`, never with the base here (`needs_merge` says when that
        is due; the caller does it off the question path).
        """
        # The vocabulary and the scope and document codes are shared and only grow here, under
        # the caller's lock: an older index ignores term ids beyond its segments' width, and no
        # code changes meaning. Only `alive` arrays are copied.
        new = replace(self, generation=generation, segments=list(self.segments))
        new._remove(doc_ids)
        if rows:
            new.append(rows, terms)
        if len(new.segments) > MAX_SMALL_SEGMENTS + 1:
            new._combine_small()
        return new

    def needs_merge(self) -> bool:
        """Whether the small segments hold enough rows to be merged into the base."""
        small = sum(s.size for s in self.segments[1:])
        return small > max(MERGE_MIN_ROWS, MERGE_SHARE * self.segments[0].size)

    def _combine_small(self) -> None:
        self.segments = [self.segments[0], _combine(self.segments[1:], len(self.vocab))]

    def _remove(self, doc_ids: list[str]) -> None:
        """Mask out the live rows of these documents: one pass over each segment's codes."""
        codes = np.array([self.doc_codes[d] for d in doc_ids if d in self.doc_codes], dtype=np.int32)
        if not len(codes):
            return
        for seg, segment in enumerate(self.segments):
            gone = segment.alive & np.isin(segment.docs, codes)
            if gone.any():
                self.live_rows -= int(gone.sum())
                self.live_length -= int(segment.lengths[gone].sum())
                self.segments[seg] = replace(segment, alive=segment.alive & ~gone)

    def row(self, segment: Segment, i: int) -> KeywordRow:
        """Row `i` of `segment` as a hit carries it. (The name lists only grow, and a code is
        appended before any segment holds it: safe while another thread appends.)"""
        return KeywordRow(segment.node_ids[i].decode(), self.doc_names[segment.docs[i]],
                          segment.parent_ids[i].decode(), self.scope_names[segment.access[i]])

    def append(self, rows: list[KeywordRow], terms: list[list[str]]) -> None:
        """These rows as a new segment of this index (one not yet answering: `replaced` and
        `build` call it on a new index)."""
        ids = [np.fromiter((self.vocab.setdefault(t, len(self.vocab)) for t in row_terms), np.int64, len(row_terms))
               for row_terms in terms]
        lengths = np.array([len(i) for i in ids], dtype=np.int64)
        flat = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        row_of = np.repeat(np.arange(len(rows)), lengths)
        tf = sparse.csc_matrix((np.ones(len(flat), np.float32), (row_of, flat)), shape=(len(rows), len(self.vocab)))
        tf.sum_duplicates()
        access = np.array([_code(self.scopes, self.scope_names, r.access) for r in rows], dtype=np.int32)
        docs = np.array([_code(self.doc_codes, self.doc_names, r.doc_id) for r in rows], dtype=np.int32)
        self.segments.append(Segment(tf, lengths, _bytes([r.node_id for r in rows]),
                                     _bytes([r.parent_id for r in rows]), docs, access, np.ones(len(rows), dtype=bool)))
        self.live_rows += len(rows)
        self.live_length += int(lengths.sum())

    def merged(self) -> KeywordIndex:
        """One segment of the live rows, with the vocabulary cut down to the terms still in use.
        O(index): the caller runs it off the question path (`Bm25Index`)."""
        combined = _combine(self.segments, len(self.vocab))
        used = np.flatnonzero(np.diff(combined.tf.indptr))
        terms = list(self.vocab)
        # documents renumbered to those still holding a row, as terms are
        docs, codes = np.unique(combined.docs, return_inverse=True)
        names = [self.doc_names[d] for d in docs.tolist()]
        merged = KeywordIndex(generation=self.generation, vocab={terms[t]: i for i, t in enumerate(used.tolist())},
                              scopes=dict(self.scopes), scope_names=list(self.scope_names),
                              doc_codes={name: i for i, name in enumerate(names)}, doc_names=names)
        merged._set_base(replace(combined, tf=sparse.csc_matrix(combined.tf[:, used]),
                                 docs=codes.astype(np.int32).reshape(-1)))
        return merged

    def _set_base(self, segment: Segment) -> None:
        self.segments = [segment]
        self.live_rows = segment.size
        self.live_length = int(segment.lengths.sum())

    # -- searching ----------------------------------------------------------------------------

    def search(self, query_terms: list[str], scopes: list[str] | None, k: int,
               weights: list[float] | None = None) -> list[tuple[KeywordRow, float]]:
        """The k best live rows the scopes can see, with the scores bm25s gives them in an index of
        the visible rows alone (statistics per audience: see the module docstring); zero scores
        left out.

        `query_terms` as bm25s tokenises a question (repeats count, as they do in bm25s).
        `weights`, one per term: a term's share of the score (synonyms added to a question count
        less than its own words, `indexing.keyword.synonyms`); None: every term counts fully, as in bm25s.
        """
        visible, n, length = self._audience(scopes)
        if not n:
            return []
        weights = weights or [1.0] * len(query_terms)
        weight_of = [w for t, w in zip(query_terms, weights) if t in self.vocab]
        ids = [self.vocab[t] for t in query_terms if t in self.vocab]
        avg_len = np.float64(length) / np.float64(n)  # as np.mean gives it
        scores = [np.zeros(s.size, dtype=np.float32) for s in self.segments]
        for term, weight in zip(ids, weight_of):
            postings = [s.postings(term, v) for s, v in zip(self.segments, visible)]
            df = sum(len(rows) for rows, _ in postings)
            if not df:
                continue
            idf = np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5)))
            if weight != 1.0:
                idf = np.float32(idf * weight)
            for s, (rows, tf), into in zip(self.segments, postings, scores):
                tfc = tf / (K1 * ((1 - B) + B * s.lengths[rows] / avg_len) + tf)
                into[rows] += (idf * tfc).astype(np.float32)
        # Only rows that scored can be hits (a score is positive exactly where a visible row holds
        # a term), so the choice is made among those: segment by segment, in row order.
        hit_rows = [np.flatnonzero(sc) for sc in scores]
        segment_of = np.concatenate([np.full(len(r), i, dtype=np.int32) for i, r in enumerate(hit_rows)])
        rows = np.concatenate(hit_rows)
        values = np.concatenate([sc[r] for sc, r in zip(scores, hit_rows)])
        return [(self.row(self.segments[segment_of[i]], int(rows[i])), float(values[i])) for i in _top_k(values, k).tolist()]

    def _audience(self, scopes: list[str] | None) -> tuple[list[np.ndarray], int, int]:
        """Per segment, which rows the scopes can see (live, and of one of the scopes); how many
        they are and their terms in all (BM25's N and total length)."""
        if scopes is None:
            return [s.alive for s in self.segments], self.live_rows, self.live_length
        key = frozenset(scopes)
        known = self._audiences.get(key)
        if known is None:
            codes = np.array([self.scopes[s] for s in scopes if s in self.scopes], dtype=np.int32)
            visible = [s.alive & np.isin(s.access, codes) for s in self.segments]
            known = (visible, sum(int(v.sum()) for v in visible),
                     sum(int(s.lengths[v].sum()) for s, v in zip(self.segments, visible)))
            if len(self._audiences) >= AUDIENCES:
                self._audiences.clear()
            self._audiences[key] = known
        return known

    def doc_freq(self, terms: set[str], scopes: list[str] | None) -> tuple[dict[str, int], int]:
        """How many visible chunks hold each term, and how many chunks are visible."""
        visible, visible_rows, _ = self._audience(scopes)
        counts = {}
        for term in terms:
            t = self.vocab.get(term)
            if t is None:
                counts[term] = 0
                continue
            total = 0
            for s, v in zip(self.segments, visible):
                if t < s.tf.shape[1]:
                    total += int(v[s.tf.indices[s.tf.indptr[t] : s.tf.indptr[t + 1]]].sum())
            counts[term] = total
        return counts, visible_rows

    # -- saving -------------------------------------------------------------------------------

    def to_bytes(self) -> bytearray:
        """The index as one blob (merged first): what a replica loads instead of tokenising.

        An 8-byte header length, a JSON header (names, and where each array lies), then each
        array's raw bytes at a 16-byte boundary: `from_bytes` makes the arrays views into the
        blob, so loading holds the blob once instead of the blob and a copy of every array."""
        base = self.merged() if len(self.segments) != 1 else self
        s = base.segments[0]
        arrays = {"indptr": s.tf.indptr, "indices": s.tf.indices, "data": s.tf.data, "lengths": s.lengths,
                  "node_ids": s.node_ids, "parent_ids": s.parent_ids, "docs": s.docs, "access": s.access}
        layout, offset = {}, 0
        for name, array in arrays.items():
            layout[name] = [array.dtype.str, list(array.shape), offset]
            offset += _aligned(array.nbytes)
        header = json.dumps({"generation": base.generation, "terms": list(base.vocab), "scopes": list(base.scopes),
                             "docs": base.doc_names, "arrays": layout}, ensure_ascii=False).encode()
        start = _aligned(8 + len(header))
        out = bytearray(start + offset)
        out[:8] = len(header).to_bytes(8, "little")
        out[8 : 8 + len(header)] = header
        for name, array in arrays.items():  # each array copied once, straight into the blob
            at = start + layout[name][2]
            np.frombuffer(out, np.uint8, array.nbytes, at)[:] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        return out

    @classmethod
    def from_bytes(cls, blob: bytes | bytearray) -> KeywordIndex:
        """The index `to_bytes` saved, its arrays views into `blob` (kept alive by them)."""
        size = int.from_bytes(blob[:8], "little")
        meta = json.loads(bytes(blob[8 : 8 + size]).decode())
        start = _aligned(8 + size)
        arrays = {}
        for name, (dtype, shape, offset) in meta["arrays"].items():
            count = int(np.prod(shape)) if shape else 1
            arrays[name] = np.frombuffer(blob, dtype=np.dtype(dtype), count=count, offset=start + offset).reshape(shape)
        lengths = arrays["lengths"]
        tf = sparse.csc_matrix((arrays["data"], arrays["indices"], arrays["indptr"]),
                               shape=(len(lengths), len(meta["terms"])))
        segment = Segment(tf, lengths, arrays["node_ids"], arrays["parent_ids"], arrays["docs"], arrays["access"],
                          np.ones(len(lengths), dtype=bool))
        index = cls(generation=meta["generation"], vocab={t: i for i, t in enumerate(meta["terms"])},
                    scopes={s: i for i, s in enumerate(meta["scopes"])}, scope_names=meta["scopes"],
                    doc_codes={d: i for i, d in enumerate(meta["docs"])}, doc_names=meta["docs"])
        index._set_base(segment)
        return index

    @classmethod
    def build(cls, rows: list[KeywordRow], terms: list[list[str]], generation: int) -> KeywordIndex:
        index = cls(generation=generation)
        index.append(rows, terms)
        return index


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k best scores, best first; equal scores in position order (row order: a
    fresh build's node-id order), the last places' ties included.

    bm25s selects with one argpartition over every row's score, zeros included; at a million rows
    most scores are zero, and selecting among that many equal values made argpartition take 31 of
    a question's 52 ms (docs/scaling.md). The caller passes only the rows that scored, and ties are
    ordered by position rather than by wherever argpartition happens to leave them."""
    if k <= 0 or not len(scores):
        return np.zeros(0, dtype=np.int64)
    chosen = np.arange(len(scores))
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        above, at = np.flatnonzero(scores > kth), np.flatnonzero(scores == kth)
        chosen = np.sort(np.concatenate([above, at[: k - len(above)]]))
    return chosen[np.lexsort((chosen, -scores[chosen]))]


def _combine(segments: list[Segment], width: int) -> Segment:
    """The live rows of these segments as one, in node-id order — the order a build from
    scratch reads them in, so equal scores come out as bm25s orders them (`_top_k`)."""
    parts = []
    for s in segments:
        keep = np.flatnonzero(s.alive)
        tf = s.tf.tocsr()
        if len(keep) < s.size:
            tf = tf[keep]
        tf.resize((tf.shape[0], width))
        parts.append((tf, s, keep))
    if not parts:
        return Segment(sparse.csc_matrix((0, width), dtype=np.float32), np.zeros(0, np.int64), _bytes([]), _bytes([]),
                       np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, dtype=bool))
    node_ids = np.concatenate([s.node_ids[keep] for _, s, keep in parts])
    # byte order of UTF-8 is code point order: the order of the ids as Python strings
    order = np.argsort(node_ids, kind="stable")
    tf = sparse.vstack([tf for tf, _, _ in parts], format="csr", dtype=np.float32)

    def column(name: str) -> np.ndarray:
        return np.concatenate([getattr(s, name)[keep] for _, s, keep in parts])[order]

    return Segment(sparse.csc_matrix(tf[order]), column("lengths"), node_ids[order], column("parent_ids"),
                   column("docs"), column("access"), np.ones(len(order), dtype=bool))


def _aligned(n: int) -> int:
    return -(-n // 16) * 16


def _code(codes: dict[str, int], names: list[str], name: str) -> int:
    """`name`'s code, given the next one if it is new (the name list first: see `KeywordIndex.row`)."""
    code = codes.get(name)
    if code is None:
        code = len(names)
        names.append(name)
        codes[name] = code
    return code


def _bytes(ids: list[str]) -> np.ndarray:
    """Ids as a fixed-width byte array (UTF-8; numpy's S, as wide as the longest id)."""
    return np.array([i.encode() for i in ids], dtype=np.bytes_) if ids else np.zeros(0, dtype="S1")
