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

import time
import uuid

from slack_sdk import WebClient
from sqlmodel import select

from tests.support.slack_api_server import BOT_TOKEN, TEAM
from tests.support.slack_harness import (
    ADMIN, SAMPLE_SOURCES, all_text, bot_settings, button, click, mention, message, new_channel, posts_in, query_rows,
    running_bot, wait_until)
from tests.test_verified_slack_giving import (
    SECURITY_PAGE, VERIFIER, as_posted, dms_to, open_home, provenance, today, verified)

from bot import messages
from bot.knowledge import KnowledgeBase
from bot.records.question_log import AdminAction
from bot.slack import blocks
from bot.slack.digest import post_digest
from bot.slack.home_blocks import ACTION_SUGGESTION_ADD, ACTION_SUGGESTION_DISMISS
from bot.verified import store, suggestions
from bot.verified.records import VerifiedSuggestionRow

BROADBAND = "Can I expense my home internet bill?"
BROADBAND_ANSWER = "Yes: up to 30 EUR a month, with the bill attached to the expense claim."
ASKED = "expensing home broadband?"
ASKER = "U0ASKER1"
LEAD = "U0LEAD1"  # a channel's verifier (the last test)


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
    event = message(ASKED, channel, channel_type="im", user=dm) if dm else mention(ASKED, channel,
                                                                                  user=where.get("user", "U1"))
    bot.event(event)
    post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    return event, post


# -- the offer, and the click -------------------------------------------------------------------


def test_a_question_worded_otherwise_is_offered_and_show_it_gives_the_verified_answer_in_the_thread(bot, slack, index):
    with verified(index, BROADBAND, BROADBAND_ANSWER, cites=(SECURITY_PAGE,)) as answer_id:
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
        cited = next(b for b in shown["blocks"] if b.get("block_id") == blocks.SOURCES_BLOCK)["elements"][0]["text"]
        first = cited.split("\n")[1]  # as a given verified answer shows its cited page: title, when updated
        assert first.startswith("[1] *Passwords, 2FA and security incidents*") and " · updated 20" in first, cited
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


# -- suggested questions: the App Home, the digest ------------------------------------------------


def home_click(action_id: str, value: str, user: str) -> dict:
    """A button on the App Home, as Slack sends it (a view, not a message, holds it)."""
    return {"type": "block_actions", "team": {"id": TEAM, "domain": "acme"},
            "user": {"id": user, "username": user.lower(), "team_id": TEAM}, "api_app_id": "A0DOCENT",
            "token": "legacy", "trigger_id": f"{time.time()}.trigger",
            "container": {"type": "view", "view_id": "VHOME" + user},
            "view": {"id": "VHOME" + user, "type": "home", "blocks": []},
            "actions": [{"action_id": action_id, "block_id": "docent_suggestion", "value": value, "type": "button",
                         "action_ts": str(time.time())}]}


def suggestion_buttons(view: dict, suggestion_id: int) -> dict[str, dict]:
    block = next(b for b in view["blocks"] if b.get("block_id") == f"docent_suggestion_{suggestion_id}")
    return {e["action_id"]: e for e in block["elements"]}


def republished(bot, slack, user: str, payload: dict) -> dict:
    """Send a click on `user`'s App Home; their Home as published again after it."""
    slack.homes.pop(user, None)
    bot.interaction(payload)
    view = slack.wait_for(lambda: slack.homes.get(user), timeout=60)
    bot.wait_idle()
    return view


def accepted_by(index, user: str, action: str) -> list[AdminAction]:
    with index.session() as s:
        return list(s.exec(select(AdminAction).where(AdminAction.user_id == user, AdminAction.action == action)))


def test_the_app_home_lists_suggested_questions_and_a_verifier_adds_or_dismisses_them(bot, slack, index):
    with verified(index, BROADBAND, BROADBAND_ANSWER) as answer_id:
        channel = new_channel()
        _, post = offered_in(bot, slack, channel, user=ASKER)
        bot.interaction(click(blocks.ACTION_OFFER_SHOW, show_button(post.params["blocks"])["value"], user=ASKER,
                              channel=channel, response_url=slack.response_url("home-" + uuid.uuid4().hex[:8]),
                              message=as_posted(post)))
        taken = slack.wait_for(lambda: suggested(index, answer_id))[0]
        with index.session() as s:
            other = suggestions.suggest(s, answer_id, "is the phone line <!here> covered too?", "U4", channel)
            s.commit()
        assert other is not None

        home = open_home(bot, slack, ADMIN)
        text = all_text(home["blocks"])
        listed = text.split(messages.SUGGESTED_QUESTIONS, 1)[1]
        assert f"*#{answer_id}* “{BROADBAND}”" in listed and f"➕ “{ASKED}” — asked by <@{ASKER}> in <#{channel}>" in listed
        assert "“is the phone line &lt;!here&gt; covered too?”" in listed, "escaped, no ping"
        add = suggestion_buttons(home, taken.id)[ACTION_SUGGESTION_ADD]
        assert add["text"]["text"] == "Add as a question" and add["value"] == str(taken.id)
        assert messages.SUGGESTED_QUESTIONS not in all_text(open_home(bot, slack, ASKER)["blocks"]), "verifiers only"

        refused = republished(bot, slack, "U9", home_click(ACTION_SUGGESTION_ADD, str(taken.id), "U9"))
        assert messages.SUGGESTION_NOT_A_VERIFIER in all_text(refused["blocks"])
        assert [(a.allowed, a.argument) for a in accepted_by(index, "U9", "answers accept")] == [(False, str(taken.id))]
        assert suggested(index, answer_id)[0].status == "open"

        done = republished(bot, slack, ADMIN, home_click(ACTION_SUGGESTION_ADD, str(taken.id), ADMIN))
        assert messages.suggestion_added(taken.id, answer_id) in all_text(done["blocks"])
        assert f"“{ASKED}”" not in all_text(done["blocks"]).split(messages.SUGGESTED_QUESTIONS, 1)[1], "no longer open"
        assert [a.allowed for a in accepted_by(index, ADMIN, "answers accept")][-1] is True
        with index.session() as s:
            assert store.get(s, answer_id).questions == [BROADBAND, ASKED]

        again = new_channel()  # the next identical question is given the verified answer
        bot.event(mention(ASKED, again))
        given = slack.wait_for(lambda: posts_in(slack, again))[0].params["blocks"]
        assert provenance(given) == f"✅ Verified answer — by <@{VERIFIER}>, {today()}" and offer(given) is None

        dismissed = republished(bot, slack, ADMIN, home_click(ACTION_SUGGESTION_DISMISS, str(other), ADMIN))
        assert messages.suggestion_dismissed(other) in all_text(dismissed["blocks"])
        assert {s.id: s.status for s in suggested(index, answer_id)} == {taken.id: "added", other: "dismissed"}
        with index.session() as s:
            assert store.get(s, answer_id).questions == [BROADBAND, ASKED], "dismissed: the answer as it was"


def test_the_weekly_digest_counts_the_suggested_questions_waiting(slack, index, bot):
    channel = "CDIGEST" + uuid.uuid4().hex[:4].upper()
    client = WebClient(token=BOT_TOKEN, base_url=slack.api_url)
    with verified(index, BROADBAND, BROADBAND_ANSWER) as answer_id:
        with index.session() as s:
            assert suggestions.suggest(s, answer_id, ASKED, "U1", "C0HELP001") is not None
            s.commit()
        with index.session() as s:
            waiting = len(suggestions.listing(s))
        post_digest(bot_settings(slack, kb_digest_channel=channel), KnowledgeBase(index, []), client, channel)
    text = all_text(posts_in(slack, channel)[-1].params["blocks"])
    assert messages.suggestions_waiting(waiting) in text


def test_a_channels_verifier_sees_and_settles_the_suggestions_of_their_channel_only(slack, index, sample_synced,
                                                                                    tmp_path):
    theirs, elsewhere = new_channel(), new_channel()
    sources = tmp_path / "kb.toml"
    sample = SAMPLE_SOURCES.read_text().replace('"../../sample-wiki"', f'"{SAMPLE_SOURCES.parents[2] / "sample-wiki"}"')
    sources.write_text(sample + f'\n[channels.{theirs}]\nverifiers = ["{LEAD}"]\n', encoding="utf-8")
    with running_bot(bot_settings(slack, kb_sources=sources), index) as lead_bot, \
            verified(index, BROADBAND, BROADBAND_ANSWER) as answer_id:
        with index.session() as s:
            mine = suggestions.suggest(s, answer_id, ASKED, ASKER, theirs)
            other = suggestions.suggest(s, answer_id, "home broadband costs, can I claim them?", ASKER, elsewhere)
            s.commit()
        assert mine is not None and other is not None
        home = all_text(open_home(lead_bot, slack, LEAD)["blocks"])
        listed = home.split(messages.SUGGESTED_QUESTIONS, 1)[1]
        assert f"“{ASKED}”" in listed and "can I claim them" not in listed, "their channel's only"
        assert "Index health" not in home, "a verifier, not an admin"

        refused = republished(lead_bot, slack, LEAD, home_click(ACTION_SUGGESTION_DISMISS, str(other), LEAD))
        assert messages.SUGGESTION_NOT_A_VERIFIER in all_text(refused["blocks"])
        done = republished(lead_bot, slack, LEAD, home_click(ACTION_SUGGESTION_ADD, str(mine), LEAD))
        assert messages.suggestion_added(mine, answer_id) in all_text(done["blocks"])
        assert {s.id: s.status for s in suggested(index, answer_id)} == {mine: "added", other: "open"}
