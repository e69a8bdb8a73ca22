"""`kb gaps`'s synonym candidates (`bot.records.gaps.synonym_candidates`) over a real query log: questions
answered by the real answering code, logged and voted on by the real recording code, in a
database of their own (tests/support/gaps_wiki.py: "annual leave" on a public page, salary bands on a page
of scope "hr")."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.support.gaps_wiki import isolated_index

from bot.records import question_log
from bot.answering.answer import answer_question
from bot.records.gaps_text import as_text
from bot.records.gaps import gaps_report
from bot.slack.home_blocks import gaps_blocks
from indexing.keyword.synonyms import Synonyms

VACATION = ["how many vacation days do I get?", "can I take my vacations in december?"]
DOG = "can I bring my dog to the office?"
TYPO = "is my vacaton approved?"  # not a dictionary word: typo repair's business, not a synonym
SALARY = "when are the salary bands reviewed?"  # a word only the hr page uses
ANSWERED = "how many days of annual leave do I get?"


def ask(index, question: str, user: str, scopes=("public",)):
    answer = answer_question(index, question, scopes=list(scopes))
    question_log.log_query(index, surface="mention", user_id=user, question=question, answer=answer, channel_id="C1",
                           channel_kind=question_log.ChannelKind.PUBLIC)  # a public channel, as the app logs it
    return answer


@pytest.fixture(scope="module")
def logged(index, tmp_path_factory):
    with isolated_index(index, tmp_path_factory.mktemp("candidates")) as (own, _):
        answers = {q: ask(own, q, user=f"U{i}") for i, q in enumerate([*VACATION, DOG, TYPO, SALARY, ANSWERED])}
        for question in VACATION:  # whatever their outcome, the askers said the answer was wrong
            question_log.record_vote(own, answers[question].id, "U9", question_log.DOWN)
        yield own, answers


def test_the_outcomes_the_candidates_are_counted_from(logged):
    _, answers = logged
    assert answers[DOG].outcome == answers[SALARY].outcome == "not_found"
    assert answers[ANSWERED].outcome == "answered"


def test_words_the_wiki_never_uses_in_failed_questions_are_counted_with_their_questions(logged):
    own, answers = logged
    candidates = {c.word: c for c in gaps_report(own, days=7, scopes=["public"]).synonym_candidates}
    vacation = candidates["vacation"]
    assert (vacation.questions, vacation.askers, vacation.down_voted) == (2, 2, 2)
    assert set(vacation.examples) == set(VACATION) and "vacations" not in candidates  # one stem, one word
    assert candidates["dog"].not_found == 1 and candidates["dog"].examples == [DOG]
    assert list(candidates)[0] == "vacation"  # most asked first
    assert "vacaton" not in candidates  # a typo is not a word to add
    assert not {"annual", "leave", "days", "how", "many", "take"} & set(candidates)  # the wiki's, function, common words


def test_only_the_visible_wiki_counts(logged):
    own, _ = logged
    public = {c.word for c in gaps_report(own, days=7, scopes=["public"]).synonym_candidates}
    everything = {c.word for c in gaps_report(own, days=7, scopes=["public", "hr"]).synonym_candidates}
    assert "salary" in public and "salary" not in everything


def test_a_configured_key_is_no_longer_a_candidate(logged, monkeypatch):
    own, _ = logged
    monkeypatch.setattr(own, "config", replace(own.config, synonyms=Synonyms.from_table({"vacation": ["annual leave"]})))
    assert "vacation" not in {c.word for c in gaps_report(own, days=7, scopes=["public"]).synonym_candidates}


def test_kb_gaps_the_app_home_and_the_digest_show_the_candidates(logged):
    own, _ = logged
    report = gaps_report(own, days=7, scopes=["public"])
    text = as_text(report)
    assert "Words the wiki never uses, in questions it failed (synonym candidates for [synonyms]):" in text
    assert "     2× vacation  (1 not found, 2 👎)" in text and f"       – {VACATION[0]}" in text
    blocks = json.dumps(gaps_blocks(report), ensure_ascii=False)
    assert "Words the wiki never uses (synonym candidates)" in blocks and "*2×* `vacation`" in blocks
    assert report.to_json()["synonym_candidates"][0]["word"] == "vacation"
