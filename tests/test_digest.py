"""The weekly gaps digest (`bot.slack.digest`): what it posts, that only the scheduler's leader posts
it (the lock held by another real process), and that the scheduler of `kb serve` runs it.

Questions are answered and logged by the real code in a database of its own (tests/support/gaps_wiki.py);
the digest goes to the local Slack API.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from slack_sdk import WebClient

from tests.support.gaps_wiki import isolated_index
from tests.support.slack_api_server import BOT_TOKEN
from tests.support.slack_harness import all_text, bot_settings

from bot.records import question_log
from bot.answering.answer import answer_question
from bot.knowledge import KnowledgeBase
from bot.slack.digest import MESSAGE_BLOCKS, run_digest, schedule_digest
from indexing.storage.locks import LeaderLock

REPO = Path(__file__).resolve().parents[1]
ADMINS = "CADMINS"
DOGS = ["can I bring my dog to the office?", "can i bring my dog to work"]
ANNUAL = "how many days of annual leave do I get?"
PRIVATE_Q = "where does the sailing club keep its boat?"  # asked in a private channel
HR_Q = "who signs off the hr offsite budget?"  # asked in the hr channel (public, but it sees hr)


@pytest.fixture(scope="module")
def seeded(index, tmp_path_factory):
    with isolated_index(index, tmp_path_factory.mktemp("digest")) as (own, sources):
        for user, question, scopes, channel, kind in [
                ("U1", DOGS[0], ["public"], "C1", "public"), ("U2", DOGS[1], ["public"], "C1", "public"),
                ("U3", ANNUAL, ["public"], "C1", "public"),
                ("U4", "when are the engineering salary bands reviewed?", ["public", "hr"], "CHR", "public"),
                ("U5", PRIVATE_Q, ["public"], "GPRIVATE", "private"), ("U6", HR_Q, ["public", "hr"], "CHR", "public")]:
            answer = answer_question(own, question, scopes=scopes)
            question_log.log_query(own, surface="mention", user_id=user, question=question, answer=answer,
                                   channel_id=channel, channel_kind=kind)
            if question == ANNUAL:
                question_log.record_vote(own, answer.id, "U3", question_log.DOWN)
                question_log.record_reason(own, answer.id, "U3", "Nothing about part-time staff.")
        yield own, sources


@pytest.fixture
def digest(seeded, slack):
    own, sources = seeded
    settings = bot_settings(slack, kb_sources=sources, kb_digest_channel=ADMINS)
    return settings, own, WebClient(token=BOT_TOKEN, base_url=slack.api_url), KnowledgeBase(own, [])


def digests(slack) -> list:
    return slack.calls_to("chat.postMessage", channel=ADMINS)


def test_the_digest_posts_the_gaps_to_the_admin_channel(digest, slack):
    settings, own, client, kb = digest
    leader = LeaderLock(own.engine, "scheduler")
    try:
        run = run_digest(settings, kb, client, leader)
    finally:
        leader.release()
    post = digests(slack)[-1]
    text = all_text(post.params["blocks"])
    assert run.posted and run.ts == post.params.get("ts", run.ts) and len(post.params["blocks"]) <= MESSAGE_BLOCKS
    assert "Questions: 6 (+6)" in text and "2×" in text and DOGS[0] in text.split("Top unanswered", 1)[1]
    assert "Nothing about part-time staff." in text and "Leave policy" in text.split("unchanged for", 1)[1]


def test_the_digest_shows_only_page_titles_visible_in_its_channel(digest, slack):
    settings, own, client, kb = digest
    leader = LeaderLock(own.engine, "scheduler")
    try:
        run_digest(settings, kb, client, leader)
        in_hr = run_digest(settings.model_copy(update={"kb_digest_channel": "CHR"}), kb, client, leader)
    finally:
        leader.release()
    assert "Salary bands 2026" not in json.dumps(digests(slack)[-1].params["blocks"])
    hr = slack.calls_to("chat.postMessage", channel="CHR")[-1]
    assert in_hr.posted and "Salary bands 2026" in json.dumps(hr.params["blocks"])


def test_the_digests_question_lists_leave_out_private_and_restricted_channels(digest, slack):
    """Top unanswered questions listed every channel's: a private channel's and the hr channel's
    went to the admins' (public-scope) channel. Now only what its readers could have read there;
    private channels' with KB_GAPS_INCLUDE_PRIVATE_CHANNELS; the hr channel's digest lists hr's."""
    settings, own, client, kb = digest
    leader = LeaderLock(own.engine, "scheduler")
    try:
        run_digest(settings, kb, client, leader)
        admins = all_text(digests(slack)[-1].params["blocks"])
        run_digest(settings.model_copy(update={"kb_gaps_include_private_channels": True}), kb, client, leader)
        opted_in = all_text(digests(slack)[-1].params["blocks"])
        run_digest(settings.model_copy(update={"kb_digest_channel": "CHR"}), kb, client, leader)
        in_hr = all_text(slack.calls_to("chat.postMessage", channel="CHR")[-1].params["blocks"])
    finally:
        leader.release()
    assert answer_question(own, HR_Q, scopes=["public", "hr"]).outcome != "answered"  # a question for the list
    assert "Questions: 6 (+6)" in admins and DOGS[0] in admins
    assert PRIVATE_Q not in admins and HR_Q not in admins
    assert PRIVATE_Q in opted_in and HR_Q not in opted_in
    assert HR_Q in in_hr and DOGS[0] in in_hr and PRIVATE_Q not in in_hr


def test_only_the_schedulers_leader_posts_the_digest(digest, slack):
    settings, own, client, kb = digest
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from sqlalchemy import create_engine
        from indexing.storage.locks import LeaderLock
        lock = LeaderLock(create_engine({own.url.render_as_string(hide_password=False)!r}), "scheduler")
        print(lock.is_leader(), flush=True)
        sys.stdin.read()
    """)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    leader = LeaderLock(own.engine, "scheduler")
    try:
        assert holder.stdout.readline().strip() == "True", "the other process leads"
        before = len(digests(slack))
        skipped = run_digest(settings, kb, client, leader)
        assert (skipped.posted, skipped.reason, len(digests(slack))) == (False, "not the leader", before)
        holder.stdin.close()  # the leader exits: Postgres frees its lock
        holder.wait(timeout=30)
        taken_over = run_digest(settings, kb, client, leader)
        assert taken_over.posted and len(digests(slack)) == before + 1
    finally:
        leader.release()
        if holder.poll() is None:
            holder.kill()


def test_kb_serves_scheduler_runs_the_digest_on_its_schedule(digest, slack):
    from indexing.ingest.runner import SyncRunner
    from indexing.ingest.scheduler import start_scheduler, stop_scheduler

    settings, own, client, kb = digest
    runner = SyncRunner(own, settings.sources())
    scheduler = start_scheduler(runner, settings.sources())
    try:
        before = len(digests(slack))
        assert schedule_digest(scheduler, settings.model_copy(update={"kb_digest_schedule": "every 1s"}), kb, client)
        slack.wait_for(lambda: len(digests(slack)) > before, timeout=30)
        assert scheduler.get_job("digest") is not None
    finally:
        stop_scheduler(scheduler)


def test_no_digest_channel_means_no_digest_job(digest):
    from apscheduler.schedulers.background import BackgroundScheduler

    settings, own, client, kb = digest
    scheduler = BackgroundScheduler(timezone="UTC")
    assert not schedule_digest(scheduler, settings.model_copy(update={"kb_digest_channel": None}), kb, client)
    assert scheduler.get_jobs() == []


@pytest.mark.parametrize("setting, expected", [
    ({"kb_digest_schedule": "whenever"}, "^KB_DIGEST_SCHEDULE: 'whenever' is neither"),
    ({"kb_digest_channel": "#wiki-owners"}, "^KB_DIGEST_CHANNEL must be a channel id"),
])
def test_kb_serve_refuses_wrong_digest_settings_at_start_in_one_line(slack, setting, expected):
    from bot.serve import StartupError, serve

    with pytest.raises(StartupError, match=expected):
        serve(bot_settings(slack, **{"kb_digest_channel": ADMINS, **setting}))


def _kb_gaps(own, sources, slack, *args, **env):
    import os

    environment = {**os.environ, "DATABASE_URL": own.url.render_as_string(hide_password=False),
                   "KB_HOME": str(own.config.home), "KB_SOURCES": str(sources), "SLACK_BOT_TOKEN": BOT_TOKEN,
                   "SLACK_API_URL": slack.api_url, "KB_DIGEST_CHANNEL": ADMINS, **env}
    return subprocess.run([sys.executable, "-m", "bot.cli", "gaps", *args], cwd=REPO, env=environment,
                          capture_output=True, text=True, timeout=300)


def test_kb_gaps_post_sends_the_digest_now(seeded, slack):
    own, sources = seeded
    before = len(digests(slack))
    run = _kb_gaps(own, sources, slack, "--post", "--days", "3")
    assert run.returncode == 0, run.stderr
    post = digests(slack)[-1]
    assert len(digests(slack)) == before + 1 and run.stdout.strip().startswith(
        f"posted the gaps digest of the last 3 days to {ADMINS} (ts ")
    assert "Questions: 6 (+6)" in all_text(post.params["blocks"]) and "The last 3 days" in all_text(post.params["blocks"])


def test_kb_gaps_post_without_a_digest_channel_is_one_clear_line(seeded, slack):
    own, sources = seeded
    run = _kb_gaps(own, sources, slack, "--post", KB_DIGEST_CHANNEL="")
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == "error: --post needs KB_DIGEST_CHANNEL: the channel id the digest goes to"
