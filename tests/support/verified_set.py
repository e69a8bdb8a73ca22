"""The verified-answer matcher's labelled set (`benchmarks/verified/answers.jsonl`), ranked and
scored as `bot.verified.lookup` ranks it: shared by tests/test_verified_matching.py and
`benchmarks/verified_matching.py` (which loads this file by its path: benchmarks do not import
the tests, nor tests the benchmarks)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.verified.lookup import CANDIDATES  # how many nearest verified questions the lookup hands the matcher

REPO = Path(__file__).resolve().parents[2]
LABELLED = REPO / "benchmarks" / "verified" / "answers.jsonl"
BLIND = REPO / "benchmarks" / "verified"  # held-out-4.jsonl, held-out-5.jsonl…: written by helpers who never saw the matcher
SAMPLE_QUESTIONS = REPO / "sample-wiki" / "QUESTIONS.jsonl"


@dataclass(frozen=True)
class Asked:
    """One labelled question: what it is, the answer it must be given (None: no answer)."""

    text: str
    kind: str  # "paraphrase", "near miss" or "sample"
    split: str  # "dev", "held-out", "held-out-2" or "held-out-3" (the sample's questions are in each)
    expected: int | None


@dataclass(frozen=True)
class LabelledSet:
    ids: list[str]  # answer index → its id in the file
    pool: list[tuple[int, str]]  # (answer index, variant)
    asked: list[Asked]


def load_set(blind: bool = False) -> LabelledSet:
    """The labelled set; with `blind`, its blind parts too (their answers join the pool)."""
    files = [LABELLED, *sorted(BLIND.glob("held-out-*.jsonl"))] if blind else [LABELLED]
    rows = [json.loads(line) for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    samples = [json.loads(line)["question"] for line in SAMPLE_QUESTIONS.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    asked: list[Asked] = []
    # A near miss another part verifies word for word is no near miss once that part joins the pool
    # (held-out's "What is Acme Widgets' EIN?", a near miss of the DUNS answer, is held-out-4's answer).
    verified = {" ".join(v.casefold().split()) for row in rows for v in row["variants"]}
    for i, row in enumerate(rows):
        asked += [Asked(q, "paraphrase", row["split"], i) for q in row["paraphrases"]]
        asked += [Asked(q, "near miss", row["split"], None) for q in row["near_misses"]
                  if " ".join(q.casefold().split()) not in verified]
    for split in dict.fromkeys(row["split"] for row in rows):
        asked += [Asked(q, "sample", split, None) for q in samples]
    pool = [(i, v) for i, row in enumerate(rows) for v in row["variants"]]
    return LabelledSet([r["id"] for r in rows], pool, asked)


def candidate_lists(labelled: LabelledSet, embedder=None) -> dict[str, list]:
    """Each question's `CANDIDATES` nearest variants by cosine, as `Candidate`s, nearest first."""
    import numpy as np

    from bot.verified.matching import Candidate

    if embedder is None:
        from indexing.config import IndexConfig
        from indexing.index import make_embedder

        embedder = make_embedder(IndexConfig(home=Path(tempfile.mkdtemp(prefix="docent-verified-"))))
    variants = np.asarray(embedder.embed_unindexed([v for _, v in labelled.pool]), dtype=np.float32)
    variants /= np.linalg.norm(variants, axis=1, keepdims=True)
    texts = list(dict.fromkeys(a.text for a in labelled.asked))
    out: dict[str, list] = {}
    for text in texts:
        query = np.asarray(embedder.embed_query(text), dtype=np.float32)
        sims = variants @ (query / np.linalg.norm(query))
        top = np.argsort(-sims)[:CANDIDATES]
        out[text] = [Candidate(labelled.pool[i][0], labelled.pool[i][1], float(sims[i])) for i in top]
    return out


@dataclass(frozen=True)
class Score:
    paraphrases: float  # share given their own answer
    near_misses: float  # share given any answer
    samples: int  # the sample's questions given any answer
    counts: str  # "41/46 · 1/32 · 0/20"
    others: int = 0  # paraphrases given another answer than theirs: a wrong answer, like a near miss given


def score(asked: Sequence[Asked], given: Callable[[str], int | None]) -> Score:
    para = [a for a in asked if a.kind == "paraphrase"]
    near = [a for a in asked if a.kind == "near miss"]
    samples = [a for a in asked if a.kind == "sample"]
    right = sum(given(a.text) == a.expected for a in para)
    others = sum(given(a.text) not in (None, a.expected) for a in para)
    wrong = sum(given(a.text) is not None for a in near)
    unrelated = sum(given(a.text) is not None for a in samples)
    return Score(right / len(para), wrong / len(near), unrelated,
                 f"{right}/{len(para)} · {wrong}/{len(near)} · {unrelated}/{len(samples)}", others)


def by_cosine(candidates: dict[str, list], threshold: float) -> Callable[[str], int | None]:
    def given(text: str) -> int | None:
        top = candidates[text][0]
        return int(top.answer_id) if top.similarity >= threshold else None
    return given


def by_offer(candidates: dict[str, list], synonyms) -> Callable[[str], int | None]:
    """The answer a question is given or, failing that, offered (`bot.verified.matching.decide`):
    what the asker can reach in one click."""
    from bot.verified.matching import decide

    def reached(text: str) -> int | None:
        decision = decide(text, candidates[text], synonyms)
        match = decision.given or decision.offered
        return None if match is None else match.answer_id
    return reached


def by_rule(candidates: dict[str, list], synonyms) -> Callable[[str], int | None]:
    from bot.verified.matching import best_match

    def given(text: str) -> int | None:
        match = best_match(text, candidates[text], synonyms)
        return None if match is None else match.answer_id
    return given
