"""Training pairs from SQuAD 2.0's own unanswerable questions (`training.reader_data_squad2`):
each is read against the window around the crowd's plausible answer, and an evaluation article
stops the script."""

from __future__ import annotations

import pytest

from tests.support.corpora import shared_corpus

CONTEXT = ("The depot opened in 1987 in Girona. It stores grain for the region. "
           "Its owner sold it in 2001. The roof was rebuilt after a storm.")


def squad2(title: str) -> list[dict]:
    return [
        {"title": title, "paragraphs": [{"context": CONTEXT, "qas": [
            {"question": "When did the depot open?", "is_impossible": False,
             "answers": [{"text": "1987", "answer_start": CONTEXT.index("1987")}]},
            {"question": "When did the depot close?", "is_impossible": True, "answers": [],
             "plausible_answers": [{"text": "2001", "answer_start": CONTEXT.index("2001")}]},
        ]}]},
        {"title": "Only_answerable", "paragraphs": [{"context": CONTEXT, "qas": [
            {"question": "Where is the depot?", "is_impossible": False,
             "answers": [{"text": "Girona", "answer_start": CONTEXT.index("Girona")}]}]}]},
    ]


def test_an_unanswerable_question_is_read_against_its_plausible_answer():
    shared_corpus("squad2-wiki")  # the overlap check reads the evaluation articles' titles
    from training.reader_data_squad2 import build

    pairs = build(squad2("Grain_depot"), seed=1)
    assert {(p.kind, p.label, p.article) for p in pairs} == {("pos", 1, "Grain depot"), ("squad2", 0, "Grain depot")}
    negative = next(p for p in pairs if p.kind == "squad2")
    assert negative.passage.startswith("Grain depot: ") and "2001" in negative.passage


def test_an_evaluation_article_stops_the_script():
    shared_corpus("squad2-wiki")
    from training.reader_data_squad2 import build

    with pytest.raises(SystemExit, match="overlap the evaluation corpus"):
        build(squad2("Yuan_dynasty"), seed=1)
