"""Living within Slack's limits: rate limits and server errors retried as Slack asks, only the
messages Docent answers remembered, and what Docent records kept only as long as configured.

The local Web API (`FakeSlack`) answers a scripted call as Slack does when a method's rate limit is
hit — HTTP 429 with `Retry-After` — or with a 5xx; the app runs as `kb serve` runs it
(`slack_harness.running_bot`).
"""

from __future__ import annotations

import logging
import re
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError
from sqlalchemy import text
from sqlmodel import select

from tests.support.slack_harness import PARENTAL, bot_settings, mention, message, new_channel, new_ts, posts_in

from bot.records import question_log
from bot.slack.audiences import SlackAccess
from bot.slack.store import DeliveryClaim
from bot.housekeeping import start_housekeeping, tidy
from bot.records.question_log import Feedback, QueryLog
from bot.settings import Settings
from bot.slack.client import RATE_LIMIT_RETRIES, web_client
from sources import AccessConfig, ScopeRule


# -- retries -----------------------------------------------------------------------------------


def test_a_rate_limited_reply_is_sent_again_after_slacks_retry_after(bot, slack):
    channel = new_channel()
    slack.rate_limit("chat.postMessage", times=1, retry_after=1)

    bot.event(mention(PARENTAL, channel))

    answered = slack.wait_for(lambda: [c for c in posts_in(slack, channel) if c.status == 200])
    bot.wait_idle()
    tries = posts_in(slack, channel)
    assert [c.status for c in tries] == [429, 200] and len(answered) == 1
    assert tries[1].at - tries[0].at >= 1.0, "waited as long as Retry-After said"
    assert "16 weeks" in str(tries[1].params["blocks"])


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_server_error_from_slack_is_retried(bot, slack, status):
    channel = new_channel()
    slack.server_error("chat.postMessage", times=1, status=status)

    bot.event(mention(PARENTAL, channel))

    slack.wait_for(lambda: [c for c in posts_in(slack, channel) if c.status == 200])
    bot.wait_idle()
    assert [c.status for c in posts_in(slack, channel)] == [status, 200]


def _group_access(slack, group: str) -> SlackAccess:
    """Access where scope "g" is visible to the members of `group` in their DMs with Docent."""
    settings = bot_settings(slack)
    return SlackAccess(AccessConfig(scopes={"g": ScopeRule(usergroups=frozenset({group}))}), web_client(settings))


def _dm_with(slack, user: str) -> str:
    channel = "D" + uuid.uuid4().hex[:8].upper()
    slack.add_im(channel, user)
    return channel


def test_a_rate_limited_user_group_lookup_is_retried_before_access_is_decided(slack):
    group, user = "S" + uuid.uuid4().hex[:8].upper(), "U" + uuid.uuid4().hex[:8].upper()
    slack.set_usergroup(group, [user])
    slack.rate_limit("usergroups.users.list", times=1, retry_after=1)
    access = _group_access(slack, group)

    scopes = access.scopes(_dm_with(slack, user), user, is_dm=True)

    assert scopes == ["g", "public"], "the member gets the group's scope once the lookup went through"
    lookups = slack.calls_to("usergroups.users.list", usergroup=group)
    assert [c.status for c in lookups] == [429, 200] and lookups[1].at - lookups[0].at >= 1.0


def test_a_lookup_still_rate_limited_after_the_retries_refuses_and_logs_why(slack, caplog):
    caplog.set_level(logging.WARNING, logger="bot.slack.audiences")
    group, user = "S" + uuid.uuid4().hex[:8].upper(), "U" + uuid.uuid4().hex[:8].upper()
    slack.set_usergroup(group, [user])
    slack.rate_limit("usergroups.users.list", times=RATE_LIMIT_RETRIES + 1, retry_after=0)
    access = _group_access(slack, group)

    scopes = access.scopes(_dm_with(slack, user), user, is_dm=True)

    assert scopes == ["public"], "a group that cannot be read grants nothing"
    assert [c.status for c in slack.calls_to("usergroups.users.list", usergroup=group)] == [429] * (RATE_LIMIT_RETRIES + 1)
    refusals = [r.getMessage() for r in caplog.records if group in r.getMessage()]
    assert len(refusals) == 1 and "grants no scopes" in refusals[0]
    assert "ratelimited" in refusals[0] and "HTTP 429" in refusals[0]


# -- what is stored ----------------------------------------------------------------------------


def claims_in(index, channel: str) -> list[str]:
    with index.session() as s:
        return sorted(s.exec(select(DeliveryClaim.key).where(DeliveryClaim.key.contains(channel))))


def test_only_the_messages_docent_answers_are_claimed(bot, slack, index):
    channel = new_channel()
    question = mention(PARENTAL, channel)
    bot.event(question)
    slack.wait_for(lambda: posts_in(slack, channel))
    chatter = [message("lunch anyone?", channel), message("see the doc", channel, thread_ts=new_ts()),
               message("thanks!", channel, thread_ts=question["ts"])]
    for event in chatter:
        bot.event(event)
    bot.event(message(question["text"], channel, ts=question["ts"]))  # the mention again, as a `message` event
    bot.wait_idle()

    assert claims_in(index, channel) == [f"message:{channel}:{question['ts']}"]
    assert len(posts_in(slack, channel)) == 1


def _old_rows(index, channel: str, now: datetime) -> None:
    """Two delivery claims, two logged questions with a vote each: one of each past its retention."""
    with index.session() as s:
        for age, tag in ((timedelta(days=4), "old"), (timedelta(hours=1), "new")):
            s.add(DeliveryClaim(key=f"message:{channel}:{tag}", seen_at=now - age))
        for age, tag in ((timedelta(days=31), "old"), (timedelta(days=29), "new")):
            answer_id = f"{channel}-{tag}"
            s.add(QueryLog(created_at=now - age, answer_id=answer_id, surface="mention", user_id="U1",
                           channel_id=channel, question=f"{tag} question"))
            s.add(Feedback(answer_id=answer_id, user_id="U1", vote=question_log.DOWN, reason="personal words",
                           created_at=now - age, updated_at=now - age))
        s.commit()


def _left(index, channel: str) -> tuple[list[str], list[str], list[str]]:
    with index.session() as s:
        questions = sorted(s.exec(select(QueryLog.question).where(QueryLog.channel_id == channel)))
        votes = sorted(s.exec(select(Feedback.answer_id).where(Feedback.answer_id.startswith(channel))))
    return claims_in(index, channel), questions, votes


def test_housekeeping_deletes_claims_and_questions_past_their_retention(index):
    channel, now = new_channel(), datetime.now(timezone.utc)
    _old_rows(index, channel, now)

    done = tidy(index, query_log_days=30, now=now)

    assert done.deliveries >= 1 and done.questions >= 1 and done.votes >= 1
    assert _left(index, channel) == ([f"message:{channel}:new"], ["new question"], [f"{channel}-new"])


def test_query_log_days_zero_keeps_every_question(index):
    channel, now = new_channel(), datetime.now(timezone.utc)
    _old_rows(index, channel, now)

    tidy(index, query_log_days=0, now=now)

    assert _left(index, channel) == ([f"message:{channel}:new"], ["new question", "old question"],
                                     [f"{channel}-new", f"{channel}-old"])


def test_housekeeping_runs_at_start_and_then_on_its_schedule(index):
    """`kb serve` starts it: the first run is at once, the next one `every` later — not only at start."""
    import time

    channel = new_channel()
    _old_rows(index, channel, datetime.now(timezone.utc))
    stop = start_housekeeping(index, query_log_days=30, every=timedelta(seconds=1))
    try:
        deadline = time.monotonic() + 20
        while _left(index, channel)[1] != ["new question"]:
            assert time.monotonic() < deadline, "the first run did not happen"
            time.sleep(0.05)
        with index.session() as s:  # a claim that goes stale later: the scheduled run removes it
            s.add(DeliveryClaim(key=f"message:{channel}:later", seen_at=datetime.now(timezone.utc) - timedelta(days=5)))
            s.commit()
        while f"message:{channel}:later" in claims_in(index, channel):
            assert time.monotonic() < deadline, "no scheduled run after the first"
            time.sleep(0.05)
    finally:
        stop()


def test_query_log_retention_is_a_setting_and_cannot_be_negative():
    assert Settings(_env_file=None).kb_query_log_days == 90
    assert Settings(_env_file=None, kb_query_log_days=7).kb_query_log_days == 7
    with pytest.raises(ValidationError):
        Settings(_env_file=None, kb_query_log_days=-1)


# -- the thread lookup -------------------------------------------------------------------------


def _thread_lookup_plan(index, channel: str, thread_ts: str) -> str:
    """EXPLAIN of the very statement `question_log.thread_question` sends, with sequential scans off (so
    the plan shows which index the lookup *can* use, whatever the size of the test's table)."""
    from sqlalchemy import event

    sent: list[tuple[str, dict]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if "query_log" in statement:
            sent.append((statement, parameters))

    event.listen(index.engine, "before_cursor_execute", capture)
    try:
        question_log.thread_question(index, channel, thread_ts)
    finally:
        event.remove(index.engine, "before_cursor_execute", capture)
    statement, parameters = sent[0]
    with index.engine.connect() as conn:
        conn.exec_driver_sql("SET enable_seqscan = off")
        plan = conn.exec_driver_sql("EXPLAIN " + statement, parameters).scalars().all()
        conn.rollback()
    return "\n".join(plan)


def test_the_thread_lookup_behind_follow_ups_uses_an_index(index):
    plan = _thread_lookup_plan(index, new_channel(), new_ts())
    assert "Seq Scan" not in plan and re.search(r"Index Scan (using|on) ix_query_log_channel_(thread|message)", plan), plan


def test_the_thread_indexes_are_added_to_an_existing_query_log(index):
    """A query log from before the thread indexes, in a database from before named migrations
    (no migrations table): the migrations add them when the index opens."""
    from bot.migrations import migrate_bot
    from indexing.storage.migrations import migrate

    with index.engine.begin() as conn:
        conn.execute(text("DROP INDEX IF EXISTS ix_query_log_channel_thread"))
        conn.execute(text("DROP INDEX IF EXISTS ix_query_log_channel_message"))
        conn.execute(text("DROP TABLE _docent_migrations"))

    migrate(index.engine)  # as every Docent process does when it opens the index, then the bot's set
    migrate_bot(index.engine)

    with index.engine.connect() as conn:
        names = set(conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'query_log'")).scalars())
    assert {"ix_query_log_channel_thread", "ix_query_log_channel_message"} <= names
