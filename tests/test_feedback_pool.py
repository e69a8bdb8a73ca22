"""Votes, Share and the 👎 form ack first and do their work on the answers pool, not Bolt's listener
pool — so Slack rate-limiting `chat.update` (HTTP 429 with `Retry-After`, which the Web API client
sleeps through before retrying), or a database that stops answering, cannot hold `/kb`'s
acknowledgement past Slack's 3 seconds.

Real Bolt over signed HTTP (`slack_harness.running_bot`), the local Slack API answering
`chat.update` with 429s (tests/support/slack_api_server.py). The ack is timed from the HTTP request to its
response, while every vote of the burst is waiting out its `Retry-After`.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.slack_harness import (
    PARENTAL, Bot, all_text, bot_settings, button, click, feedback_rows, mention, new_channel, posts_in, running_bot)

from bot.slack import blocks
from bot.slack.client import RATE_LIMIT_RETRIES

VOTERS = [f"UBURST{i}" for i in range(10)]
RETRY_AFTER = 3  # seconds; Bolt's listener pool (5 threads) sleeping this long would hold /kb's ack as long
ACK_BOUND = 1.5  # seconds: well under Slack's 3, and well under RETRY_AFTER


@pytest.fixture
def bot(slack, index, sample_synced):
    with running_bot(bot_settings(slack), index) as running:
        yield running


def posted_answer(bot: Bot, slack) -> tuple[str, dict]:
    """A question answered in a new channel: (channel, the answer message as it stands)."""
    channel = new_channel()
    bot.event(mention(PARENTAL, channel))
    slack.wait_for(lambda: posts_in(slack, channel), timeout=60)
    bot.wait_idle()
    [(_, ts)] = [key for key in list(slack.messages) if key[0] == channel]
    return channel, slack.message(channel, ts)


def send(bot: Bot, payload: dict) -> httpx.Response:
    """One click from its own connection, as each of Slack's requests is."""
    with httpx.Client(timeout=30) as http:
        return Bot(url=bot.url, workers=bot.workers, http=http).interaction(payload)


def timed_kb_help(bot: Bot, slack) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    ack = bot.command("help", channel=new_channel(), response_url=slack.response_url("help-" + uuid.uuid4().hex[:6]))
    return ack, time.monotonic() - started


def test_a_burst_of_votes_on_a_rate_limited_chat_update_does_not_delay_a_kb_ack(bot, slack, index):
    channel, message = posted_answer(bot, slack)
    answer_id = button(message["blocks"], blocks.ACTION_VOTE_UP)["value"]
    limited = 2 * 4  # two rounds of 429 for the four answer threads: within the client's retries
    assert limited // 4 < RATE_LIMIT_RETRIES
    slack.rate_limit("chat.update", times=limited, retry_after=RETRY_AFTER)

    with ThreadPoolExecutor(len(VOTERS)) as pool:
        clicks = [pool.submit(send, bot, click(blocks.ACTION_VOTE_UP, answer_id, user=user, channel=channel,
                                               response_url=slack.response_url(f"burst-{user}"), message=message))
                  for user in VOTERS]
        slack.wait_for(lambda: len([c for c in slack.calls_to("chat.update", channel=channel) if c.status == 429]) >= 4)
        ack, elapsed = timed_kb_help(bot, slack)  # while the votes wait out Retry-After
        responses = [c.result() for c in clicks]

    assert ack.status_code == 200 and "*Docent* answers questions" in ack.json()["text"]
    assert elapsed < ACK_BOUND, f"/kb waited {elapsed:.2f} s for its ack behind the votes"
    assert all(r.status_code == 200 for r in responses)

    bot.wait_idle(timeout=90)  # the votes land once Slack lets them
    assert sorted((v.user_id, v.vote) for v in feedback_rows(index, answer_id)) == [(u, "up") for u in VOTERS]
    updates = slack.calls_to("chat.update", channel=channel, ts=message["ts"])
    assert len([u for u in updates if u.status == 429]) == limited and all(u.status in (200, 429) for u in updates)
    shown = all_text(slack.message(channel, message["ts"])["blocks"])
    assert f"👍 {len(VOTERS)} · 👎 0" in shown, "the message ends on the latest tally, whichever update landed last"


def test_a_share_and_a_thumbs_down_form_on_a_rate_limited_slack_do_not_delay_a_kb_ack(bot, slack, index):
    """Share posts with `chat.postMessage`; 👎 opens its form with `views.open`: both rate-limited here."""
    channel = new_channel()
    url = slack.response_url("ask-" + uuid.uuid4().hex[:8])
    bot.command(f"ask {PARENTAL}", channel=channel, response_url=url)
    private = slack.wait_for(lambda: slack.calls_to("response:" + url.rsplit("/", 1)[1]), timeout=60)[0]
    answer_id = button(private.params["blocks"], blocks.ACTION_SHARE)["value"]
    bot.wait_idle()
    slack.rate_limit("chat.postMessage", times=RATE_LIMIT_RETRIES - 1, retry_after=RETRY_AFTER)  # the share lands
    slack.rate_limit("views.open", times=5, retry_after=RETRY_AFTER)

    share_url = slack.response_url("share-" + answer_id)
    with ThreadPoolExecutor(6) as pool:
        shared = pool.submit(send, bot, click(blocks.ACTION_SHARE, answer_id, user="U1", channel=channel,
                                              response_url=share_url, ephemeral=True))
        downs = [pool.submit(send, bot, click(blocks.ACTION_VOTE_DOWN, answer_id, user=f"UDOWN{i}", channel=channel,
                                              response_url=slack.response_url(f"down-{i}-{answer_id}"), ephemeral=True))
                 for i in range(5)]
        slack.wait_for(lambda: [c for c in slack.calls if c.status == 429 and c.method in ("chat.postMessage", "views.open")])
        ack, elapsed = timed_kb_help(bot, slack)
        responses = [shared.result()] + [d.result() for d in downs]

    assert ack.status_code == 200 and elapsed < ACK_BOUND, f"/kb waited {elapsed:.2f} s for its ack"
    assert all(r.status_code == 200 for r in responses)
    bot.wait_idle(timeout=90)
    public = [c for c in posts_in(slack, channel) if c.status == 200 and "Shared by" in all_text(c.params["blocks"])]
    assert len(public) == 1, "shared once Slack let it"
    assert slack.calls_to("response:share-" + answer_id)[-1].params.get("delete_original") is True
    assert sorted(v.user_id for v in feedback_rows(index, answer_id) if v.vote == "down") == [f"UDOWN{i}" for i in range(5)]



def test_a_burst_of_votes_while_the_database_hangs_does_not_delay_a_kb_ack(slack, sample_synced, proxied_index,
                                                                           db_proxy):
    """The database stops answering (tests/support/db_proxy.py holds every byte) while ten people vote; `/kb`
    is acked at once all the same, and when the database answers again every vote is stored."""
    with running_bot(bot_settings(slack), proxied_index) as bot:
        channel, message = posted_answer(bot, slack)
        answer_id = button(message["blocks"], blocks.ACTION_VOTE_UP)["value"]
        opened = len(slack.calls_to("views.open"))
        db_proxy.hang()
        try:
            with ThreadPoolExecutor(len(VOTERS)) as pool:
                clicks = [pool.submit(send, bot, click(blocks.ACTION_VOTE_DOWN, answer_id, user=user, channel=channel,
                                                       response_url=slack.response_url(f"hung-{user}"), message=message))
                          for user in VOTERS]
                slack.wait_for(lambda: len(slack.calls_to("views.open")) >= opened + 4)  # the votes' work has begun
                try:
                    ack, elapsed = timed_kb_help(bot, slack)
                except httpx.TimeoutException:
                    ack, elapsed = None, float("inf")
                db_proxy.resume()  # within the 5 s connect timeout: no vote has given up yet
                responses = [c.result() for c in clicks]
        finally:
            db_proxy.resume()
        assert ack is not None and ack.status_code == 200 and elapsed < ACK_BOUND, \
            f"/kb waited {elapsed:.2f} s for its ack behind the votes"
        assert all(r.status_code == 200 for r in responses)
        bot.wait_idle(timeout=60)
    assert sorted((v.user_id, v.vote) for v in feedback_rows(proxied_index, answer_id)) == [(u, "down") for u in VOTERS]
    shown = all_text(slack.message(channel, message["ts"])["blocks"])
    assert f"👍 0 · 👎 {len(VOTERS)}" in shown
