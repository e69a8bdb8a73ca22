"""The gaps report (`bot.records.gaps`, `kb gaps`) over a real query log: questions answered by the real
answering code and logged by the real recording code (`question_log.log_query`, `record_vote`,
`record_reason`), in a database of its own (tests/support/gaps_wiki.py) so the counts are exact.

"Last week" is made by moving the logged rows' `created_at` back eight days — the one column
the recording code cannot be asked to set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.support.gaps_wiki import isolated_index

from bot.records import question_log
from bot.answering.answer import answer_question
from bot.records.gaps import cluster, gaps_report

REPO = Path(__file__).resolve().parents[1]
ANNUAL = "how many days of annual leave do I get?"
DOGS = ["can I bring my dog to the office?", "can i bring my dog to work", "are dogs allowed in the office",
        "Can I bring my dog to the office?"]
STOCK = "when do my stock options vest?"


def ask(index, question: str, user: str = "U1", channel: str = "C1", scopes=("public",)):
    answer = answer_question(index, question, scopes=list(scopes))
    question_log.log_query(index, surface="mention", user_id=user, question=question, answer=answer, channel_id=channel)
    return answer


def age(index, answer_ids: list[str], days: int) -> None:
    with index.engine.begin() as conn:
        conn.execute(text("UPDATE query_log SET created_at = created_at - make_interval(days => :d) "
                          "WHERE answer_id = ANY(:ids)"), {"d": days, "ids": answer_ids})
        conn.execute(text("UPDATE feedback SET updated_at = updated_at - make_interval(days => :d) "
                          "WHERE answer_id = ANY(:ids)"), {"d": days, "ids": answer_ids})


@pytest.fixture(scope="module")
def seeded(index, tmp_path_factory):
    """This week: 2× annual leave (answered; one 👍, one 👎 with a reason), 4 dog wordings and
    1 stock-options question (not found), 1 failure. Last week: 1 annual leave (answered, 👍)."""
    with isolated_index(index, tmp_path_factory.mktemp("gaps")) as (own, sources):
        old = ask(own, ANNUAL, user="U9")
        question_log.record_vote(own, old.id, "U9", question_log.UP)
        age(own, [old.id], 8)
        first, second = ask(own, ANNUAL, user="U1"), ask(own, ANNUAL, user="U2")
        question_log.record_vote(own, first.id, "U1", question_log.UP)
        question_log.record_vote(own, second.id, "U2", question_log.DOWN)
        question_log.record_reason(own, second.id, "U2", "It does not say whether part-timers get 25 days.")
        question_log.record_vote(own, second.id, "U3", question_log.DOWN)
        dogs = [ask(own, q, user=f"U{i}") for i, q in enumerate(DOGS, 1)]
        stock = ask(own, STOCK, user="U5")
        question_log.log_query(own, surface="dm", user_id="U6", question="what is our wifi password", error_ref="abcd1234")
        yield own, sources, {"annual": [first, second], "dogs": dogs, "stock": stock}


def test_outcomes_are_what_the_seeded_report_counts(seeded):
    _, _, asked = seeded
    assert [a.outcome for a in asked["annual"]] == ["answered", "answered"]
    assert {a.outcome for a in asked["dogs"]} | {asked["stock"].outcome} == {"not_found"}


def test_this_week_is_compared_with_last_week(seeded):
    own, _, _ = seeded
    report = gaps_report(own, days=7)
    c, p = report.current, report.previous
    assert (c.questions, c.answered, c.uncertain, c.not_found, c.failed, c.up, c.down) == (8, 2, 0, 5, 1, 1, 2)
    assert (p.questions, p.answered, p.not_found, p.up, p.down) == (1, 1, 0, 1, 0)


def test_near_duplicate_questions_are_one_group_with_one_example(seeded):
    own, _, _ = seeded
    groups = gaps_report(own, days=7).unanswered
    assert [(g.example, g.count, g.askers) for g in groups] == [
        ("Can I bring my dog to the office?", 4, 4), (STOCK, 1, 1)]
    assert groups[0].wordings == 3  # "Can I…" and "can I…" are one wording; the latest asked is the example


def test_down_voted_answers_carry_their_reasons(seeded):
    own, _, asked = seeded
    down = gaps_report(own, days=7).down_voted
    assert [(d.answer_id, d.down, d.up) for d in down] == [(asked["annual"][1].id, 2, 0)]
    assert down[0].reasons == ["It does not say whether part-timers get 25 days."]
    assert down[0].question == ANNUAL and down[0].cited[0] == "Leave policy"


def test_pages_cited_often_but_unchanged_for_long_are_listed_and_recent_ones_are_not(seeded):
    own, _, _ = seeded
    stale = gaps_report(own, days=7).stale_pages
    assert [p.title for p in stale] == ["Leave policy"]
    assert stale[0].citations == 2 and stale[0].age_days > 365


def test_scopes_keep_restricted_titles_out_of_the_report(seeded):
    own, _, _ = seeded
    ask(own, "when are the engineering salary bands reviewed?", user="UHR", channel="CHR", scopes=("public", "hr"))
    with_hr = gaps_report(own, days=7, scopes=["public", "hr"])
    public = gaps_report(own, days=7, scopes=["public"])
    assert "Salary bands 2026" in [p.title for p in with_hr.stale_pages]
    assert "Salary bands 2026" not in json.dumps(public.to_json())


def test_clustering_keeps_different_questions_apart(index):
    texts = ["how many sick days do we get", "how many vacation days do we get", "how many sick days do i have"]
    groups = cluster(texts, index.embedder.embed_unindexed(texts))
    assert groups == [["how many sick days do we get", "how many sick days do i have"], ["how many vacation days do we get"]]


def test_kb_gaps_prints_json_for_the_days_asked(seeded):
    own, _, _ = seeded
    env = {**os.environ, "DATABASE_URL": own.url.render_as_string(hide_password=False), "KB_HOME": str(own.config.home)}
    done = subprocess.run([sys.executable, "-m", "bot.cli", "gaps", "--days", "30", "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["days"] == 30 and report["current"]["questions"] >= 9  # 30 days: last week's question too
    assert report["unanswered"][0]["example"] == "Can I bring my dog to the office?"


def test_kb_gaps_refuses_zero_days(seeded):
    own, _, _ = seeded
    env = {**os.environ, "DATABASE_URL": own.url.render_as_string(hide_password=False), "KB_HOME": str(own.config.home)}
    done = subprocess.run([sys.executable, "-m", "bot.cli", "gaps", "--days", "0"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "days must be at least 1" in done.stderr
