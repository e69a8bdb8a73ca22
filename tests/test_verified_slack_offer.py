"""Verified answers offered in Slack, over real HTTP: a question refused a verified answer only for
its wording ("broadband" for "internet bill") gets the wiki's answer with the verified question
and a **Show it** button (`bot.slack.blocks.offer_block`); the click (`bot.slack.listeners.verified_offer`)
gives the verified answer where the answer is, logged with its id; a question taken in a public
channel becomes a suggested question, which a verifier adds or dismisses from the App Home
(`bot.slack.listeners.suggested`).

The pair is one the real model offers rather than gives (tests/test_verified_answers.py checks
it through `kb ask --json`, and the first assertion of each test here again). Each test retires
what it added: the session's index is shared.
"""

from __future__ import annotations

import uuid

from sqlmodel import select

from tests.support.slack_harness import (
    all_text, button, click, mention, message, new_channel, posts_in, query_rows, wait_until)
from tests.test_verified_slack_giving import VERIFIER, as_posted, dms_to, provenance, today, verified

from bot import messages
from bot.slack import blocks
from bot.verified.records import VerifiedSuggestionRow

BROADBAND = "Can I expense my home internet bill?"
BROADBAND_ANSWER = "Yes: up to 30 EUR a month, with the bill attached to the expense claim."
ASKED = "expensing home broadband?"


def offer(sent: list[dict]) -> dict | None:
    return next((b for b in sent if b.get("block_id") == blocks.OFFER_BLOCK), None)


def show_button(sent: list[dict]) -> dict | None:
    """The offer's **Show it** (the section's accessory)."""
    block = offer(sent)
    return block.get("accessory") if block else None


def suggested(index, answer_id: int) -> list[VerifiedSuggestionRow]:
    with index.session() as s:
        return list(s.exec(select(VerifiedSuggestionRow).where(VerifiedSuggestionRow.answer_id == answer_id)))


def offered_in(bot, slack, channel: str, **where) -> tuple[dict, object]:
    """Ask ASKED in `channel` (a mention; `dm=` a user: a direct message); the answer posted, and the offer."""
    dm = where.get("dm")
    event = message(ASKED, channel, channel_type="im", user=dm) if dm else mention(ASKED, channel)
    bot.event(event)
    post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    return event, post


# -- the offer, and the click -------------------------------------------------------------------


def test_a_question_worded_otherwise_is_offered_and_show_it_gives_the_verified_answer_in_the_thread(bot, slack, index):
    with verified(index, BROADBAND, BROADBAND_ANSWER) as answer_id:
        channel = new_channel()
        event, post = offered_in(bot, slack, channel)
        sent = post.params["blocks"]
        block = offer(sent)
        assert provenance(sent) is None, "offered, not given"
        assert block is not None and block["text"]["text"] == messages.verified_offer(BROADBAND)
        order = [b.get("block_id") for b in sent]
        assert order.index("docent_answer_0") < order.index(blocks.OFFER_BLOCK), "after the answer's text"
        if blocks.SOURCES_BLOCK in order:
            assert order.index(blocks.OFFER_BLOCK) < order.index(blocks.SOURCES_BLOCK), "before its sources"
        show = show_button(sent)
        assert show is not None and show["text"]["text"] == "Show it" and show["action_id"] == blocks.ACTION_OFFER_SHOW
        wiki_row = wait_until(lambda: query_rows(index, message_ts=event["ts"]))[0]
        assert show["value"] == f"{answer_id} {wiki_row.answer_id}" and wiki_row.verified_id is None

        url = slack.response_url("show-" + uuid.uuid4().hex[:8])
        bot.interaction(click(blocks.ACTION_OFFER_SHOW, show["value"], user="U1", channel=channel, response_url=url,
                              message=as_posted(post)))
        shown = slack.wait_for(lambda: posts_in(slack, channel)[1:])[0].params
        bot.wait_idle()
        assert shown["thread_ts"] == event["ts"], "in the question's thread"
        assert provenance(shown["blocks"]) == f"✅ Verified answer — by <@{VERIFIER}>, {today()}"
        assert shown["blocks"][1]["text"]["text"] == BROADBAND_ANSWER
        assert offer(shown["blocks"]) is None

        given = button(shown["blocks"], blocks.ACTION_VOTE_DOWN)["value"]
        row = query_rows(index, answer_id=given)[0]
        assert row.verified_id == answer_id and row.question == ASKED and row.user_id == "U1"
        assert row.channel_id == channel and row.thread_ts == event["ts"]
        taken = suggested(index, answer_id)
        assert [(s.question, s.asked_by, s.channel_id, s.status) for s in taken] == [(ASKED, "U1", channel, "open")]

        bot.interaction(click(blocks.ACTION_OFFER_SHOW, show["value"], user="U2",
                              channel=channel, response_url=url, message=as_posted(post)))
        again = slack.wait_for(lambda: slack.calls_to("response:" + url.rsplit("/", 1)[1]))[0].params
        bot.wait_idle()
        assert again["text"] == messages.VERIFIED_OFFER_SHOWN and len(posts_in(slack, channel)) == 2, "shown once"

        vote = slack.response_url("vote-" + given)  # a 👎 on it tells the verifier, as on any verified answer
        bot.interaction(click(blocks.ACTION_VOTE_DOWN, given, user="U5", channel=channel, response_url=vote,
                              message=as_posted(posts_in(slack, channel)[1])))
        dm = all_text(slack.wait_for(lambda: dms_to(slack, VERIFIER))[-1].params["blocks"])
        assert f"verified answer #{answer_id}" in dm and f"“{ASKED}”" in dm


def test_in_a_direct_message_show_it_gives_it_there_and_suggests_nothing(bot, slack, index):
    with verified(index, BROADBAND, BROADBAND_ANSWER) as answer_id:
        user, channel = "U7", "D" + uuid.uuid4().hex[:10].upper()
        slack.add_im(channel, user)
        _, post = offered_in(bot, slack, channel, dm=user)
        show = show_button(post.params["blocks"])
        assert show is not None
        bot.interaction(click(blocks.ACTION_OFFER_SHOW, show["value"], user=user, channel=channel,
                              response_url=slack.response_url("dm-" + uuid.uuid4().hex[:8]), message=as_posted(post)))
        shown = slack.wait_for(lambda: posts_in(slack, channel)[1:])[0].params
        bot.wait_idle()
        assert provenance(shown["blocks"]) == f"✅ Verified answer — by <@{VERIFIER}>, {today()}"
        assert not shown.get("thread_ts"), "beside the answer, as DM answers are"
        given = button(shown["blocks"], blocks.ACTION_VOTE_UP)["value"]
        assert query_rows(index, answer_id=given)[0].verified_id == answer_id
        assert suggested(index, answer_id) == [], "a direct message is the asker's own"


def test_a_private_kb_ask_answer_shows_it_privately_and_suggests_nothing(bot, slack, index):
    with verified(index, BROADBAND, BROADBAND_ANSWER) as answer_id:
        channel = new_channel()
        url = slack.response_url("ask-" + uuid.uuid4().hex[:8])
        bot.command(f"ask {ASKED}", user="U8", channel=channel, response_url=url)
        private = slack.wait_for(lambda: slack.calls_to("response:" + url.rsplit("/", 1)[1]))[0].params
        show = show_button(private["blocks"])
        assert show is not None
        wiki = button(private["blocks"], blocks.ACTION_VOTE_UP)["value"]
        tally = slack.response_url("tally-" + wiki)  # shown again from the query log: the offer stays
        bot.interaction(click(blocks.ACTION_VOTE_UP, wiki, user="U8", channel=channel, response_url=tally,
                              ephemeral=True))
        redrawn = slack.wait_for(lambda: slack.calls_to("response:tally-" + wiki))[0].params["blocks"]
        assert "👍 1" in all_text(redrawn) and show_button(redrawn) == show
        back = slack.response_url("private-" + uuid.uuid4().hex[:8])
        bot.interaction(click(blocks.ACTION_OFFER_SHOW, show["value"], user="U8", channel=channel, response_url=back,
                              ephemeral=True))
        shown = slack.wait_for(lambda: slack.calls_to("response:" + back.rsplit("/", 1)[1]))[0].params
        bot.wait_idle()
        assert shown["response_type"] == "ephemeral" and not posts_in(slack, channel)
        assert provenance(shown["blocks"]) == f"✅ Verified answer — by <@{VERIFIER}>, {today()}"
        assert button(shown["blocks"], blocks.ACTION_SHARE) is not None
        given = button(shown["blocks"], blocks.ACTION_VOTE_UP)["value"]
        assert query_rows(index, answer_id=given)[0].verified_id == answer_id
        assert suggested(index, answer_id) == [], "asked privately, even in a public channel"


def test_a_retired_answers_button_is_refused_to_the_clicker_and_posts_nothing(bot, slack, index):
    with verified(index, BROADBAND, BROADBAND_ANSWER) as answer_id:
        channel = new_channel()
        _, post = offered_in(bot, slack, channel)
        show = show_button(post.params["blocks"])
        assert show is not None
    # retired now (the context manager)
    url = slack.response_url("retired-" + uuid.uuid4().hex[:8])
    bot.interaction(click(blocks.ACTION_OFFER_SHOW, show["value"], user="U1", channel=channel, response_url=url,
                          message=as_posted(post)))
    refused = slack.wait_for(lambda: slack.calls_to("response:" + url.rsplit("/", 1)[1]))[0].params
    bot.wait_idle()
    assert refused["text"] == messages.VERIFIED_OFFER_GONE and refused["response_type"] == "ephemeral"
    assert len(posts_in(slack, channel)) == 1 and suggested(index, answer_id) == []
