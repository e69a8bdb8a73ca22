"""Help channels over real HTTP (`bot.slack.help_channels`, `bot.slack.handover`): in a
`respond = "questions"` channel a top-level question is answered without a mention when the wiki
answers it; chatter, bots, messages to people and Slack Connect channels get nothing; a question
the wiki cannot answer is handed over to the channel's `escalate` people once per thread, within
the channel's hourly cap; `/kb channel` shows an admin the channel's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from slack_api_server import BOT_ID, BOT_USER
from slack_harness import (
    ADMIN, PARENTAL, bot_settings, button, message, new_channel, posts_in, query_rows, running_bot,
    sources_heading)

from bot.slack import blocks

SAMPLE_WIKI = Path(__file__).resolve().parent.parent / "sample-wiki"
UNKNOWN = "what is the recipe for grandmother's plum dumplings?"
HELP, CAPPED, QUIET, SHARED_HELP = (new_channel() for _ in range(4))
CAP = 2


@pytest.fixture(scope="module")
def helpbot(slack, index, sample_synced, tmp_path_factory):
    path = tmp_path_factory.mktemp("help") / "sources.toml"
    path.write_text(f"""
[[source]]
name = "sample"
kind = "markdown"
location = "{SAMPLE_WIKI}"
exclude = ["*.jsonl"]
access = "sample"

[scopes.sample]
channels = ["*"]
users = ["*"]

[channels.{HELP}]
respond = "questions"
escalate = ["S0PEOPLE1", "U0BOB1"]

[channels.{CAPPED}]
respond = "questions"
escalate = ["S0PEOPLE1"]

[channels.{QUIET}]
respond = "questions"

[channels.{SHARED_HELP}]
respond = "questions"
escalate = ["S0PEOPLE1"]
""")
    with running_bot(bot_settings(slack, kb_sources=path, kb_handovers_per_hour=CAP), index) as running:
        yield running


def counted(name: str, **labels) -> float:
    from bot.metrics import REGISTRY

    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_an_answered_question_gets_the_threaded_answer_without_a_mention(helpbot, slack, index):
    asked = message(PARENTAL.rstrip("?"), HELP)  # no "?" and no mention
    before = counted("docent_unprompted_answers_total")
    helpbot.event(asked)
    post = slack.wait_for(lambda: posts_in(slack, HELP))[0]
    assert post.params["thread_ts"] == asked["ts"]
    assert sources_heading(post.params["blocks"]) == "*Sources*" and button(post.params["blocks"], blocks.ACTION_VOTE_UP)
    helpbot.wait_idle()
    assert [r.surface for r in query_rows(index, channel_id=HELP, message_ts=asked["ts"])] == ["channel"]
    assert counted("docent_unprompted_answers_total") == before + 1


@pytest.mark.parametrize("event", [
    message("thanks, that worked", QUIET),
    message("lunch anyone?", QUIET),
    message(f"<@U0ALICE1> can you tell me how many weeks of parental leave we get?", QUIET),
    message(f"<!subteam^S0OTHER1> how many weeks of parental leave do we get?", QUIET),
    message(PARENTAL, QUIET, user=None, bot_id="BOTHER", subtype="bot_message"),
    message(PARENTAL, QUIET, user=BOT_USER, bot_id=BOT_ID),
    message(PARENTAL, QUIET, thread_ts="1700000000.000100"),  # a reply in someone else's thread
    message(PARENTAL, new_channel()),  # a channel without respond = "questions"
], ids=["thanks", "chatter", "to-a-person", "to-a-group", "other-bot", "our-bot", "other-thread", "mention-channel"])
def test_what_is_not_a_question_for_docent_gets_nothing(helpbot, slack, event):
    helpbot.event(event)
    helpbot.wait_idle()
    assert not posts_in(slack, event["channel"]) and not slack.calls_to("reactions.add", timestamp=event["ts"])


def test_an_edit_of_an_old_message_gets_nothing(helpbot, slack):
    original = message("hello all", QUIET)
    helpbot.event({**message("", QUIET, user=None, subtype="message_changed", hidden=True),
                   "message": {"type": "message", "user": "U1", "ts": original["ts"], "text": PARENTAL,
                               "edited": {"user": "U1", "ts": original["ts"]}}})
    helpbot.wait_idle()
    assert not [c for c in posts_in(slack, QUIET) if c.params.get("thread_ts") == original["ts"]]


def test_a_slack_connect_help_channel_gets_nothing(helpbot, slack):
    slack.share_channel(SHARED_HELP)
    helpbot.event(message(PARENTAL, SHARED_HELP))
    helpbot.event(message(UNKNOWN, SHARED_HELP))
    helpbot.wait_idle()
    assert not posts_in(slack, SHARED_HELP)


def test_not_found_is_handed_over_once_per_thread_with_the_nearest_pages(helpbot, slack, index):
    asked = message(UNKNOWN, HELP)
    slack.add_thread(HELP, asked["ts"], [{"type": "message", "ts": asked["ts"], "text": UNKNOWN, "user": "U1",
                                          "thread_ts": asked["ts"], "reply_count": 1}])
    helpbot.event(asked)
    in_thread = lambda: [c for c in posts_in(slack, HELP) if c.params.get("thread_ts") == asked["ts"]]  # noqa: E731
    post = slack.wait_for(in_thread)[0]
    assert post.params["text"] == "I couldn't find this in the wiki — <!subteam^S0PEOPLE1> <@U0BOB1> can you help?"
    assert sources_heading(post.params["blocks"]) == "*Nearest pages*"
    helpbot.event(asked, event_id="EvRETRY" + asked["ts"].replace(".", ""))  # the same message delivered again
    helpbot.event(message("It's in the facilities cookbook, page 12", HELP, user="U0BOB1", thread_ts=asked["ts"]))
    helpbot.wait_idle()
    assert len(in_thread()) == 1, "a person answering in the thread is not taken for a follow-up"
    mention = {"type": "app_mention", "user": "U2", "text": f"<@{BOT_USER}>", "ts": asked["ts"] + "1",
               "channel": HELP, "event_ts": asked["ts"] + "1", "thread_ts": asked["ts"]}
    helpbot.event(mention)  # a bare mention in the thread asks the thread's question again: not found again
    helpbot.wait_idle()
    replies = in_thread()
    assert len(replies) == 2 and sources_heading(replies[1].params["blocks"]) == "*Nearest pages*"
    assert "can you help?" not in replies[1].params["text"], "one hand-over per thread"


def test_a_channel_without_escalate_leaves_not_found_alone(helpbot, slack):
    asked = message(UNKNOWN, QUIET)
    helpbot.event(asked)
    helpbot.wait_idle()
    assert not [c for c in posts_in(slack, QUIET) if c.params.get("thread_ts") == asked["ts"]]


def test_hand_overs_stop_at_the_channels_hourly_cap(helpbot, slack):
    before = counted("docent_handovers_total", result="capped")
    for n in range(CAP + 2):
        helpbot.event(message(f"what is the recipe for grandmother's plum dumplings number {n}?", CAPPED))
    helpbot.wait_idle()
    assert len([c for c in posts_in(slack, CAPPED) if "can you help?" in c.params["text"]]) == CAP
    assert counted("docent_handovers_total", result="capped") == before + 2


def test_kb_channel_shows_an_admin_the_channels_settings_and_refuses_others(helpbot, slack):
    shown = helpbot.command("channel", user=ADMIN, channel=HELP, response_url=slack.response_url("channel"))
    text = shown.json()["text"]
    assert "`questions`" in text and "`S0PEOPLE1`, `U0BOB1`" in text and "every source visible here" in text
    refused = helpbot.command("channel", user="U1", channel=HELP, response_url=slack.response_url("channel2"))
    assert "admins only" in refused.json()["text"]


def test_a_hand_over_is_claimed_in_postgres_once_per_thread_and_per_channel_hour(index):
    """What a restart or a second replica relies on: the claim is the database's, not a process's."""
    from bot.slack.store import claim_handover

    channel = new_channel()
    assert claim_handover(index, channel, "1.000001", "q", per_hour=2) == "claimed"
    assert claim_handover(index, channel, "1.000001", "q", per_hour=2) == "already"
    assert claim_handover(index, channel, "1.000002", "q", per_hour=2) == "claimed"
    assert claim_handover(index, channel, "1.000003", "q", per_hour=2) == "capped"
    assert claim_handover(index, new_channel(), "1.000003", "q", per_hour=2) == "claimed"  # the cap is per channel
