"""The reader evaluation harness (`training/reader_eval.py`): today's gate scored through it gives
`bot.quality.gate_fit`'s own leave-one-corpus-out thresholds and shares (the candidate's score travels in
the cosine slot, so the shipped rule is what fits every candidate), a scorer's order is what
hit@1 reads, and the AUC is the pairwise one."""

from __future__ import annotations

import random

from training.reader_eval import Candidate, auc, evaluate, hit_rank, today
from bot.quality.gate_fit import loco


def rows() -> list[dict]:
    """Labelled gate rows for three corpora: answerable ones score higher on average, as collected."""
    rng = random.Random(24)
    out = []
    for corpus in ("alpha", "beta", "gamma"):
        for i in range(60):
            kind = "not_found" if i % 4 == 0 else "fact"
            set_name = ("public", "casual", "foreign")[i % 3]
            cosine = rng.uniform(0.2, 0.55) if kind == "not_found" else rng.uniform(0.35, 0.8)
            out.append({"corpus": corpus, "set": set_name, "id": f"{corpus}-{i}", "kind": kind,
                        "signals": {"best_cosine": round(cosine, 4), "legs_agree": i % 5 == 0, "cjk": False},
                        "expected": [] if kind == "not_found" else ["right.md"],
                        "hits": [{"path": "other.md"}, {"path": "right.md"}]})
    return out


def test_todays_gate_through_the_harness_is_gate_fits_loco():
    data = rows()
    ours = evaluate(data, Candidate("today", today), top_n=10)
    theirs = loco(data)
    for corpus in ("alpha", "beta", "gamma"):
        assert ours[corpus]["thresholds"] == theirs[corpus]["thresholds"]["en"]
        public_unanswerable = theirs[corpus]["public"]["unanswerable"]
        assert public_unanswerable["n"] > 0
    # the harness pools public + casual; gate_fit reports them apart: the pooled share is their mean by count
    for corpus in ("alpha", "beta", "gamma"):
        pooled = ours[corpus]["own"]["answerable"]
        pub, cas = theirs[corpus]["public"]["answerable"], theirs[corpus]["casual"]["answerable"]
        expected = (pub["answered"] * pub["n"] + cas["answered"] * cas["n"]) / (pub["n"] + cas["n"])
        assert abs(pooled["answered"] - expected) < 0.002


def test_hit_at_1_reads_the_scorers_order():
    row = {"expected": ["b.md"], "hits": [{"path": "a.md"}, {"path": "b.md"}, {"path": "c.md"}]}
    assert hit_rank(row, None, 10) == 2
    assert hit_rank(row, [0.1, 0.9, 0.2], 10) == 1
    assert hit_rank(row, [0.9, 0.1, 0.2], 10) == 3  # b is last in that order
    assert hit_rank(row, [0.9], 10) is None  # only the sections a scorer scored are ranked


def test_auc_is_pairwise():
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5], [0.5]) == 0.5
    assert auc([], [0.1]) is None


def test_span_dev_scores_a_span_by_squads_token_f1():
    from training.span_dev import token_f1

    assert token_f1("16 weeks", "up to 16 weeks") == 2 * (1.0 * 0.5) / 1.5
    assert token_f1("", "16 weeks") == 0.0 and token_f1("Weeks, 16", "16 weeks") == 1.0


def test_the_oracle_bound_tries_every_score_as_each_threshold():
    """`training.gate_oracle.bound` on 40 answerable and 20 unanswerable scores: refusing below 0.30
    refuses one answerable (2.5% ≤ 3%; below 0.5 would refuse two) and the 8 unanswerable at 0.2;
    answering from 0.5 answers the 3 unanswerable at 0.6 — 15% of 20, counted (1 − 17/20 is a float
    a hair above 0.15) — and 38 of 40 answerable."""
    from training.gate_oracle import bound

    answerable = [0.29, 0.30] + [0.5] * 10 + [0.7] * 28
    unanswerable = [0.2] * 8 + [0.45] * 9 + [0.6] * 3
    got = bound(answerable, unanswerable)
    assert (got.not_found, got.answered) == (0.4, 0.95)
    assert got.auc == auc(answerable, unanswerable)
    assert bound([0.9] * 10, [0.1] * 10) == type(got)(1.0, 1.0, 1.0)


def test_the_blended_order_lets_a_strong_span_lift_a_close_second_only():
    """`training.span_eval.blended`: fused score + λ·squashed span score. A span scoring +8 on the
    second section (fused 0.575 against 0.58) puts it first at λ = 0.05; the same span cannot
    overturn a clear lead (0.45 against 0.58); missing span scores sink a section."""
    from training.span_eval import blended

    row = {"corpus": "c", "id": "q1", "hits": [{"score": 0.58}, {"score": 0.575}, {"score": 0.45}]}
    close = {("c", "q1"): {"scores": [-4.0, 8.0, 8.0]}}
    order = blended(row, close, 0.05)
    assert order is not None and order.index(max(order)) == 1
    assert order[2] < order[0], "a clear fusion lead holds"
    assert blended(row, close, 0.0) == [0.58, 0.575, 0.45]
    short = blended(row, {("c", "q1"): {"scores": [0.0]}}, 0.05)
    assert short is not None and short[1] < 0 and blended(row, {}, 0.05) is None
