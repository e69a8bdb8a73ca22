"""The outcome in the query log (and its migration) and in the CLI's rendering."""

from __future__ import annotations

import json

from sqlalchemy import inspect, text

from bot.records import question_log
from bot.answering.answer import Answer
from bot.messages import uncertain_line
from bot.migrations import migrate_bot
from indexing.storage.migrations import migrate


def _answer(outcome: str) -> Answer:
    """As `answer_question` makes them: only an uncertain answer's text starts with the "not sure" line."""
    text = (uncertain_line(1) + "\n\n" if outcome == "uncertain" else "") + "Everyone gets 25 days [1]."
    return Answer(question="q?", text=text, sources=[], timings_ms={}, outcome=outcome)


def test_the_query_log_keeps_the_outcome_and_found(index):
    for outcome in ("answered", "uncertain", "not_found"):
        answer = _answer(outcome)
        row = question_log.log_query(index, surface="mention", user_id="UOUT", question="q?", answer=answer)
        again = question_log.answer_from_log(question_log.find_answer(index, answer.id))
        assert (row.outcome, row.found) == (outcome, outcome != "not_found")
        assert (again.outcome, again.found) == (outcome, outcome != "not_found")


def test_found_is_derived_from_the_outcome_and_both_keep_their_json_values():
    from indexing.search.gate import Outcome

    for outcome, found in (("answered", True), ("uncertain", True), ("not_found", False)):
        answer = _answer(outcome)
        assert answer.outcome is Outcome(outcome) and answer.found is found
        assert json.loads(json.dumps(answer.to_json()))["outcome"] == outcome
    answer = _answer("answered")
    answer.outcome = Outcome.NOT_FOUND  # as an LLM's "not found" overrides the gate: found follows
    assert (answer.found, answer.to_json()["found"]) == (False, False)
    assert Outcome.logged("", True) is Outcome.ANSWERED and Outcome.logged(None, False) is Outcome.NOT_FOUND


def test_a_row_logged_before_outcomes_existed_reads_as_answered_or_not_found(index):
    row = question_log.log_query(index, surface="dm", user_id="UOLD", question="q?", answer=_answer("answered"))
    row.outcome, row.found = "", False
    assert question_log.answer_from_log(row).outcome == "not_found"


def test_the_migration_adds_the_outcome_column_to_an_older_query_log(index):
    """A query log from before outcomes, in a database from before named migrations (no
    migrations table): every migration runs again, and adds the column."""
    with index.engine.begin() as conn:
        conn.execute(text("ALTER TABLE query_log DROP COLUMN outcome"))
        conn.execute(text("DROP TABLE _docent_migrations"))
    assert "outcome" not in {c["name"] for c in inspect(index.engine).get_columns("query_log")}
    migrate(index.engine)
    migrate_bot(index.engine)  # query_log is the bot's table (bot.migrations)
    migrate(index.engine)  # idempotent
    migrate_bot(index.engine)
    assert "outcome" in {c["name"] for c in inspect(index.engine).get_columns("query_log")}
    row = question_log.log_query(index, surface="dm", user_id="UMIG", question="q?", answer=_answer("uncertain"))
    assert question_log.find_answer(index, row.answer_id).outcome == "uncertain"


def test_print_answer_shows_the_uncertain_line_first_in_yellow_apart_from_the_answer(capsys, monkeypatch):
    """The line itself is the answer's first paragraph (`answer_question` writes it); what
    `print_answer` adds is showing it on its own, in yellow, before the Markdown of the rest."""
    from bot.cli.asking import print_answer

    monkeypatch.setenv("FORCE_COLOR", "1")  # Rich's colours, as in a terminal
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    print_answer(_answer("uncertain"))
    uncertain = capsys.readouterr().out.splitlines()
    print_answer(_answer("answered"))
    answered = capsys.readouterr().out
    assert uncertain[0] == f"\x1b[33m{uncertain_line(1)}\x1b[0m"
    assert uncertain[1].strip() == "Everyone gets 25 days [1]."
    assert answered.splitlines()[0].strip() == "Everyone gets 25 days [1]." and "\x1b[33m" not in answered
