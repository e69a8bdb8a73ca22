"""The Chinese gate's evidence: how much of a CJK question's vocabulary the top sections hold.

The English model's cosine says little for Chinese (unrelated Chinese text scores 0.5–0.9), so
the gate reads keywords for mostly-CJK questions. The keyword leg indexes a CJK run as its
characters and its bigrams (`indexing.keyword.bm25.analyze`); of a colloquial question's bigrams many
are pairs across a word boundary ("PR里能塞…" → 里能, 能塞) that no page uses. Counted as missing
(at the highest IDF) they swamp the measure: an answerable question worded casually looked like
an unanswerable one. So bigrams the visible wiki never uses are left out; their characters
still count, and so do an unknown character or Latin word ("Rust", "bounty"), which are real
gaps. Coverage is over the top sections together, as `term_coverage` is: a Chinese answer often
spans neighbouring short sections (docs/tuning.md, "Chinese: characters with bigrams").
"""

from __future__ import annotations

from indexing.keyword.bm25 import CJK


def is_cjk_bigram(term: str) -> bool:
    return len(term) == 2 and all(CJK.match(c) for c in term)


def cjk_coverage(searched: frozenset[str], idf: dict[str, float], known: frozenset[str], present: set[str]) -> float:
    """IDF share of the keyword leg's terms (`searched`) found in `present` (the top sections'
    terms), bigrams the visible wiki never uses left out."""
    counted = [t for t in searched if t in known or not is_cjk_bigram(t)]
    total = sum(idf[t] for t in counted)
    return sum(idf[t] for t in counted if t in present) / total if total else 0.0
