"""Conversation context over real HTTP (`bot.slack.listeners.conversation`): a bare mention in a thread answers
the thread's question (read with `conversations.replies`), DM follow-ups carry the previous
question, an edited question is answered again in place, a deleted one takes its answer with it,
and `/kb ask` replaces its "Looking that up…" with the answer.
"""

from __future__ import annotations

import time
import uuid

import pytest

from tests.support.slack_api_server import BOT_USER, TEAM
from tests.support.slack_harness import (
    PARENTAL,
    all_text,
    mention,
    message,
    new_channel,
    new_ts,
    posts_in,
    query_rows,
    wait_until,
)

from bot.slack.store import answer_to
from bot.messages import EMPTY_MENTION

VPN = "how do I connect to the VPN?"


def thread_with_question(slack, channel: str, question: str, *, author: dict | None = None) -> str:
    parent = new_ts()
    slack.add_thread(channel, parent, [{"type": "message", "ts": parent, "text": question, "thread_ts": parent,
                                        "reply_count": 1, **(author or {"user": "U5"})}])
    return parent


def answer_of(index, channel: str, question: dict) -> str:
    """The ts of Docent's answer to `question`, once it is posted and remembered."""
    return wait_until(lambda: answer_to(index, channel, question["ts"])).answer_ts


def edited(channel: str, original: dict, text: str) -> dict:
    return {"type": "message", "subtype": "message_changed", "hidden": True, "channel": channel, "ts": new_ts(),
            "event_ts": new_ts(), "channel_type": "channel",
            "message": {**{k: v for k, v in original.items() if k in ("user", "ts", "thread_ts", "team")},
                        "type": "message", "text": text, "edited": {"user": original["user"], "ts": new_ts()}},
            "previous_message": {"type": "message", "user": original["user"], "ts": original["ts"], "text": original["text"]}}


def deleted(channel: str, original: dict) -> dict:
    return {"type": "message", "subtype": "message_deleted", "hidden": True, "channel": channel, "ts": new_ts(),
            "event_ts": new_ts(), "channel_type": "channel", "deleted_ts": original["ts"],
            "previous_message": {"type": "message", "user": original["user"], "ts": original["ts"], "text": original["text"]}}


@pytest.mark.parametrize("request_text", ["", "can you answer this?"])
def test_a_bare_mention_in_a_thread_answers_the_threads_question(bot, slack, index, request_text):
    channel = new_channel()
    parent = thread_with_question(slack, channel, PARENTAL)
    ask = mention(request_text, channel, user="U6", thread_ts=parent)

    bot.event(ask)

    post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    assert slack.calls_to("conversations.replies", channel=channel, ts=parent)
    assert post.params["thread_ts"] == parent and "16 weeks" in all_text(post.params["blocks"])
    assert query_rows(index, message_ts=ask["ts"])[0].question == PARENTAL


def test_a_bare_mention_under_a_bots_message_is_not_taken_as_its_question(bot, slack):
    channel = new_channel()
    parent = thread_with_question(slack, channel, PARENTAL, author={"bot_id": "BOTHER", "subtype": "bot_message"})
    bot.event(mention("", channel, thread_ts=parent))
    post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    assert all_text(post.params["blocks"]) == EMPTY_MENTION


def test_a_dm_follow_up_is_searched_with_the_previous_question(bot, slack, index):
    channel, user = new_channel("D"), "U" + uuid.uuid4().hex[:6].upper()
    slack.add_im(channel, user)
    bot.event(message(PARENTAL, channel, channel_type="im", user=user))
    slack.wait_for(lambda: posts_in(slack, channel))
    follow_up = message("and what about the secondary caregiver?", channel, channel_type="im", user=user)

    bot.event(follow_up)

    second = slack.wait_for(lambda: posts_in(slack, channel)[1:])[0]
    assert "8 weeks" in all_text(second.params["blocks"])
    assert query_rows(index, message_ts=follow_up["ts"])[0].context_question == PARENTAL


def test_a_reply_in_the_thread_of_a_dm_answer_follows_that_question(bot, slack, index):
    channel, user = new_channel("D"), "U" + uuid.uuid4().hex[:6].upper()
    slack.add_im(channel, user)
    question = message(PARENTAL, channel, channel_type="im", user=user)
    bot.event(question)
    answer = slack.wait_for(lambda: [m for (c, _), m in list(slack.messages.items()) if c == channel])[0]
    # The answer is remembered just after it is posted; a reply is a person's, seconds later, not
    # milliseconds (under load the test's reply could otherwise overtake that write).
    assert answer_of(index, channel, question) == answer["ts"]
    reply = message("how long for the secondary caregiver?", channel, channel_type="im", user=user,
                    thread_ts=answer["ts"])

    bot.event(reply)

    wait_until(lambda: query_rows(index, message_ts=reply["ts"]))
    assert query_rows(index, message_ts=reply["ts"])[0].context_question == PARENTAL


def test_a_dm_question_that_does_not_follow_up_stands_alone(bot, slack, index):
    channel, user = new_channel("D"), "U" + uuid.uuid4().hex[:6].upper()
    slack.add_im(channel, user)
    bot.event(message(PARENTAL, channel, channel_type="im", user=user))
    slack.wait_for(lambda: posts_in(slack, channel))
    second = message(VPN, channel, channel_type="im", user=user)
    bot.event(second)
    wait_until(lambda: query_rows(index, message_ts=second["ts"]))
    assert query_rows(index, message_ts=second["ts"])[0].context_question is None


def test_an_edited_question_is_answered_again_in_place(bot, slack, index):
    channel = new_channel()
    original = mention(VPN, channel)
    bot.event(original)
    answer = slack.wait_for(lambda: posts_in(slack, channel))[0]
    answer_ts = answer_of(index, channel, original)

    bot.event(edited(channel, original, f"<@{BOT_USER}> {PARENTAL}"))

    update = slack.wait_for(lambda: slack.calls_to("chat.update", channel=channel))[0]
    bot.wait_idle()
    assert update.params["ts"] == answer_ts and "16 weeks" in all_text(update.params["blocks"])
    assert len(posts_in(slack, channel)) == 1 and "16 weeks" not in all_text(answer.params["blocks"])
    assert [r.question for r in query_rows(index, message_ts=original["ts"])] == [VPN, PARENTAL]


def test_an_edit_more_than_ten_minutes_after_asking_is_not_answered_again(bot, slack, index):
    channel = new_channel()
    original = mention(VPN, channel, ts=f"{time.time() - 11 * 60:.6f}")
    bot.event(original)
    slack.wait_for(lambda: posts_in(slack, channel))

    bot.event(edited(channel, original, f"<@{BOT_USER}> {PARENTAL}"))

    bot.wait_idle()
    assert not slack.calls_to("chat.update", channel=channel)
    assert len(query_rows(index, message_ts=original["ts"])) == 1


def test_a_change_that_is_not_an_edit_of_the_text_is_not_answered_again(bot, slack, index):
    channel = new_channel()
    original = mention(VPN, channel)
    bot.event(original)
    answer_of(index, channel, original)
    replied = edited(channel, original, original["text"])  # Slack's "changed" for a new reply in the thread
    del replied["message"]["edited"]
    replied["message"].update(reply_count=2, latest_reply=new_ts(), thread_ts=original["ts"])

    bot.event(replied)

    bot.wait_idle()
    assert not slack.calls_to("chat.update", channel=channel)
    assert len(query_rows(index, message_ts=original["ts"])) == 1


def test_a_deleted_question_deletes_the_answer(bot, slack, index):
    channel = new_channel()
    original = mention(VPN, channel)
    bot.event(original)
    answer_ts = answer_of(index, channel, original)

    bot.event(deleted(channel, original))

    call = slack.wait_for(lambda: slack.calls_to("chat.delete", channel=channel))[0]
    assert call.params["ts"] == answer_ts and (channel, answer_ts) not in slack.messages


def test_kb_ask_replaces_its_looking_that_up_message_with_the_answer(bot, slack):
    url = slack.response_url("replace-" + uuid.uuid4().hex[:8])
    ack = bot.command("ask how do I expense a taxi?", channel=new_channel(), response_url=url)
    answer = slack.wait_for(lambda: slack.calls_to("response:" + url.rsplit("/", 1)[1]))[0]
    bot.wait_idle()
    assert "Looking that up" in ack.json()["text"]
    assert answer.params["replace_original"] is True and answer.params["blocks"]
    assert len(slack.calls_to("response:" + url.rsplit("/", 1)[1])) == 1, "one message: the answer in its place"


def test_housekeeping_forgets_answer_messages_with_the_questions(bot, slack, index):
    from sqlalchemy import text

    from bot.housekeeping import tidy

    channel = new_channel()
    original, kept = mention(VPN, channel), mention(PARENTAL, channel)
    bot.event(original)
    bot.event(kept)
    answer_of(index, channel, original), answer_of(index, channel, kept)
    with index.engine.begin() as conn:  # asked 31 days ago (the one column the bot cannot be asked to set)
        conn.execute(text("UPDATE answer_messages SET created_at = now() - interval '31 days' "
                          "WHERE channel_id = :c AND question_ts = :t"), {"c": channel, "t": original["ts"]})
    tidy(index, query_log_days=30)
    assert answer_to(index, channel, original["ts"]) is None and answer_to(index, channel, kept["ts"]) is not None


assert TEAM  # imported for readers: events carry the workspace's id


def test_a_thread_follow_up_in_a_private_channel_is_answered(bot, slack, index):
    """Private channels deliver thread replies as `message.groups` events (`channel_type`
    "group"), which the manifest subscribes to: a follow-up there is answered like one in a
    public channel."""
    channel = new_channel("G")
    first = mention(PARENTAL, channel)
    bot.event(first)
    slack.wait_for(lambda: posts_in(slack, channel))

    follow_up = message("and what about the secondary caregiver?", channel, channel_type="group", thread_ts=first["ts"])
    bot.event(follow_up)

    second = slack.wait_for(lambda: posts_in(slack, channel)[1:])[0]
    assert second.params["thread_ts"] == first["ts"] and "8 weeks" in all_text(second.params["blocks"])
    row = query_rows(index, message_ts=follow_up["ts"])[0]
    assert row.surface == "thread" and row.context_question == PARENTAL
