"""Verified answers given and reviewed in Slack, over real HTTP: signed events and clicks to the
running app (`bot.slack`), the local Slack API recording what it posts.

A verified answer is stored as the capture side stores one (`bot.verified.store.add`, committed),
then asked for with the very question it was verified for. Its provenance line names the
verifier as a mention; it is logged with its id; it stays verified when shown again from the log
(a private answer's tally, Share); a 👎 tells the verifier once; with an LLM configured it is
given verbatim, with no streamed draft; and when due for review, the admins' App Home and the
weekly digest list it.

The questions are about things the sample wiki never mentions (an Oslo office), in scope
"sample" (visible in every conversation of these tests), and each test retires what it added,
so no other test's answer can change.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta, timezone

import pytest
from slack_sdk import WebClient

from tests.support.openai_server import FakeOpenAI
from tests.support.slack_api_server import BOT_ID, BOT_TOKEN, BOT_USER, TEAM
from tests.support.slack_harness import (
    ADMIN, all_text, bot_settings, button, click, mention, new_channel, posts_in, query_rows, running_bot, wait_until)

from bot.answering.llm import LLMClient
from bot.knowledge import KnowledgeBase
from bot.slack import blocks
from bot.slack.digest import post_digest
from bot.verified import Change, store

VERIFIER = "UVERIFY1"
DOOR = "what is the door code of the bike room in the Oslo office?"
DOOR_ANSWER = "It is 4711 — ask reception if it changed. Bring <your badge> & a helmet."
PRINTER = "which floor is the colour printer on in the Oslo office?"
PRINTER_ANSWER = "The third floor, next to the kitchen."
SECURITY_PAGE = "sample:it/security.md"  # a page the door answer cites


@contextmanager
def verified(index, question: str, answer: str, *, by: str = VERIFIER, review_by: date | None = None,
             cites: tuple[str, ...] = ()) -> Iterator[int]:
    """A verified answer, live for the block (stored and committed as the capture side does), retired after."""
    with index.session() as session:
        answer_id = store.add(session, index.embedder, Change(by), questions=[question], answer=answer,
                              scopes=["sample"], review_by=review_by or utc_today() + timedelta(days=180),
                              cites=cites)
        session.commit()
    try:
        yield answer_id
    finally:
        with index.session() as session:
            store.retire(session, answer_id, Change("tests"))
            session.commit()


def utc_today() -> date:
    return datetime.now(timezone.utc).date()  # the day the store says answers are due by


def today() -> str:
    now = time.gmtime()
    return f"{now.tm_mday} {time.strftime('%b %Y', now)}"


def provenance(message_blocks: list[dict]) -> str | None:
    block = next((b for b in message_blocks if b.get("block_id") == blocks.VERIFIED_BLOCK), None)
    return block["elements"][0]["text"] if block else None


def as_posted(post) -> dict:
    """A posted answer as Slack sends it back with a click on it."""
    return {"type": "message", "ts": post.params.get("ts") or "1700000999.000100", "text": post.params["text"],
            "blocks": post.params["blocks"], "bot_id": BOT_ID, "user": BOT_USER}


def dms_to(slack, user: str) -> list:
    return slack.calls_to("chat.postMessage", channel=user)


def reason_form(user: str, answer_id: str, text: str) -> dict:
    """The 👎 form sent back with `text` in it, as Slack sends a view submission."""
    view = blocks.reason_modal(answer_id)
    return {"type": "view_submission", "team": {"id": TEAM, "domain": "acme"}, "api_app_id": "A0DOCENT",
            "user": {"id": user, "username": user.lower(), "team_id": TEAM}, "token": "legacy",
            "trigger_id": f"{time.time()}.trigger", "response_urls": [],
            "view": {**view, "id": "V" + uuid.uuid4().hex[:8].upper(), "state": {"values": {
                blocks.REASON_BLOCK: {blocks.REASON_INPUT: {"type": "plain_text_input", "value": text}}}}}}


# -- given, with its provenance ----------------------------------------------------------------


def test_a_mention_gets_the_verified_answer_with_its_verifier_as_a_mention_and_is_logged(bot, slack, index):
    with verified(index, DOOR, DOOR_ANSWER, cites=(SECURITY_PAGE,)) as answer_id:
        channel = new_channel()
        event = mention(DOOR, channel)
        bot.event(event)
        post = slack.wait_for(lambda: posts_in(slack, channel))[0]

    sent = post.params["blocks"]
    assert provenance(sent) == f"✅ Verified answer — by <@{VERIFIER}>, {today()}"
    assert sent[0]["block_id"] == blocks.VERIFIED_BLOCK, "the provenance line comes first"
    body = sent[1]["text"]["text"]
    assert body == "It is 4711 — ask reception if it changed. Bring &lt;your badge&gt; &amp; a helmet."
    assert "&lt;@" not in all_text(sent) and "Verified answer — by @" not in all_text(sent)
    sources = next(b for b in sent if b.get("block_id") == blocks.SOURCES_BLOCK)["elements"][0]["text"]
    assert sources.split("\n")[1].startswith("[1] *Passwords, 2FA and security incidents*"), "its cited page first"
    assert len(sources.split("\n")) == 2, "the wiki has nothing on the Oslo office: no nearest pages as sources"
    assert post.params["text"].startswith(f"✅ Verified answer — by <@{VERIFIER}>, {today()} It is 4711")
    assert button(sent, blocks.ACTION_VOTE_UP) and button(sent, blocks.ACTION_VOTE_DOWN)

    row = wait_until(lambda: query_rows(index, message_ts=event["ts"]))[0]
    assert row.verified_id == answer_id and not row.llm_used and row.outcome == "answered"


def test_a_verifier_who_is_not_a_slack_user_is_shown_as_text_escaped(bot, slack, index):
    with verified(index, DOOR, DOOR_ANSWER, by="Dana <ops> & co") as answer_id:
        channel = new_channel()
        bot.event(mention(DOOR, channel))
        post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    assert provenance(post.params["blocks"]) == f"✅ Verified answer — by @Dana &lt;ops&gt; &amp; co, {today()}"
    assert query_rows(index, channel_id=channel)[0].verified_id == answer_id


def test_an_answer_due_for_review_is_still_given_marked_so(bot, slack, index):
    past = utc_today() - timedelta(days=2)
    with verified(index, DOOR, DOOR_ANSWER, review_by=past):
        channel = new_channel()
        bot.event(mention(DOOR, channel))
        post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    line = provenance(post.params["blocks"])
    assert line == (f"✅ Verified answer — by <@{VERIFIER}>, {today()} · due for review since "
                    f"{past.day} {past:%b %Y} (its review date passed)")
    assert post.params["blocks"][1]["text"]["text"].startswith("It is 4711")


def test_shown_again_from_the_log_it_stays_verified_tally_and_share(bot, slack, index):
    with verified(index, DOOR, DOOR_ANSWER) as answer_id:
        channel = new_channel()
        url = slack.response_url("ask-" + uuid.uuid4().hex[:8])
        bot.command(f"ask {DOOR}", user="U2", channel=channel, response_url=url)
        private = slack.wait_for(lambda: slack.calls_to("response:" + url.rsplit("/", 1)[1]))[0]
        assert provenance(private.params["blocks"]) == f"✅ Verified answer — by <@{VERIFIER}>, {today()}"
        given = button(private.params["blocks"], blocks.ACTION_SHARE)["value"]
        assert query_rows(index, answer_id=given)[0].verified_id == answer_id

        tally = slack.response_url("tally-" + given)  # a private answer's tally: re-rendered from the query log
        bot.interaction(click(blocks.ACTION_VOTE_UP, given, user="U2", channel=channel, response_url=tally,
                              ephemeral=True))
        redrawn = slack.wait_for(lambda: slack.calls_to("response:tally-" + given))[0].params["blocks"]
        assert provenance(redrawn) == f"✅ Verified answer — by <@{VERIFIER}>, {today()}" and "👍 1" in all_text(redrawn)

        shared = slack.response_url("share-" + given)
        bot.interaction(click(blocks.ACTION_SHARE, given, user="U2", channel=channel, response_url=shared,
                              ephemeral=True))
        public = slack.wait_for(lambda: posts_in(slack, channel))[0].params
        assert provenance(public["blocks"]) == f"✅ Verified answer — by <@{VERIFIER}>, {today()}"
        assert "It is 4711" in all_text(public["blocks"]) and "Shared by <@U2>" in all_text(public["blocks"])
        assert public["text"].startswith(f"✅ Verified answer — by <@{VERIFIER}>")


def test_a_retired_verified_answer_is_not_shared(bot, slack, index):
    with verified(index, DOOR, DOOR_ANSWER):
        channel = new_channel()
        url = slack.response_url("ask-" + uuid.uuid4().hex[:8])
        bot.command(f"ask {DOOR}", user="U3", channel=channel, response_url=url)
        private = slack.wait_for(lambda: slack.calls_to("response:" + url.rsplit("/", 1)[1]))[0]
        given = button(private.params["blocks"], blocks.ACTION_SHARE)["value"]
    # retired now (the context manager): sharing it would give it again
    shared = slack.response_url("share-" + given)
    bot.interaction(click(blocks.ACTION_SHARE, given, user="U3", channel=channel, response_url=shared, ephemeral=True))
    refused = slack.wait_for(lambda: slack.calls_to("response:share-" + given))[0].params
    bot.wait_idle()
    assert "verified answer" in refused["text"] and "retired" in refused["text"]
    assert not posts_in(slack, channel)


# -- a 👎 tells the verifier ----------------------------------------------------------------------


def test_a_thumbs_down_tells_the_verifier_once_per_person(bot, slack, index):
    with verified(index, DOOR, DOOR_ANSWER) as answer_id:
        channel = new_channel()
        bot.event(mention(DOOR, channel))
        post = slack.wait_for(lambda: posts_in(slack, channel))[0]
        given = button(post.params["blocks"], blocks.ACTION_VOTE_DOWN)["value"]
        posted = as_posted(post)
        url = slack.response_url("vote-" + given)

        def vote(action: str, user: str) -> None:
            before = len(slack.calls_to("chat.update", channel=channel))
            bot.interaction(click(action, given, user=user, channel=channel, response_url=url, message=posted))
            slack.wait_for(lambda: len(slack.calls_to("chat.update", channel=channel)) > before)
            bot.wait_idle()

        vote(blocks.ACTION_VOTE_DOWN, "U5")
        dm = slack.wait_for(lambda: dms_to(slack, VERIFIER))[0].params
        text = all_text(dm["blocks"])
        assert f"verified answer #{answer_id}" in text and f"“{DOOR}”" in text.split("They asked", 1)[1]
        assert f"https://acme.slack.com/archives/{channel}/p{posted['ts'].replace('.', '')}" in text
        assert f"kb answers show {answer_id}" in text

        bot.interaction(reason_form("U5", given, "The code changed in <November> & nobody said."))
        why = all_text(slack.wait_for(lambda: dms_to(slack, VERIFIER)[1:])[0].params["blocks"])
        assert f"verified answer #{answer_id}" in why and "> The code changed in &lt;November&gt; &amp; nobody said." in why

        vote(blocks.ACTION_VOTE_UP, "U5")  # changing back and forth …
        vote(blocks.ACTION_VOTE_DOWN, "U5")  # … tells them once
        bot.interaction(reason_form("U5", given, "Still wrong."))  # and the note once
        vote(blocks.ACTION_VOTE_DOWN, VERIFIER)  # their own 👎 is not news to them
        assert len(dms_to(slack, VERIFIER)) == 2
        vote(blocks.ACTION_VOTE_DOWN, "U6")  # someone else's is
        assert len(dms_to(slack, VERIFIER)) == 3


def test_a_thumbs_down_from_a_private_channel_does_not_show_the_question(bot, slack, index):
    with verified(index, DOOR, DOOR_ANSWER, by="UVERIFY2") as answer_id:
        channel = new_channel("G")  # the local Slack API describes G… as a private channel
        bot.event(mention(DOOR, channel))
        post = slack.wait_for(lambda: posts_in(slack, channel))[0]
        given = button(post.params["blocks"], blocks.ACTION_VOTE_DOWN)["value"]
        bot.interaction(click(blocks.ACTION_VOTE_DOWN, given, user="U5", channel=channel,
                              response_url=slack.response_url("vote-" + given), message=as_posted(post)))
        dm = all_text(slack.wait_for(lambda: dms_to(slack, "UVERIFY2"))[0].params["blocks"])
        bot.interaction(reason_form("U5", given, "Wrong for the project we discussed here."))
        bot.wait_idle()
        assert len(dms_to(slack, "UVERIFY2")) == 1, "a note on a private conversation's answer stays there"
    assert f"verified answer #{answer_id}" in dm and f"(“{DOOR}”)" in dm, "the verified question is theirs"
    assert "private conversation" in dm and "They asked: " not in dm and "archives" not in dm


# -- with an LLM: verbatim, nothing streamed ------------------------------------------------------


@pytest.fixture(scope="module")
def model():
    server = FakeOpenAI().start()
    server.reply("The printer is in the basement [1].")
    yield server
    server.stop()


def test_with_an_llm_the_verified_text_is_given_verbatim_and_no_draft_is_streamed(slack, index, sample_synced, model):
    with running_bot(bot_settings(slack), index, llm=LLMClient(model.base_url, "local", timeout=30)) as llm_bot:
        with verified(index, PRINTER, PRINTER_ANSWER):
            asked = len(model.requests)
            channel = new_channel()
            llm_bot.event(mention(PRINTER, channel))
            post = slack.wait_for(lambda: posts_in(slack, channel))[0]
            llm_bot.wait_idle()
    methods = [c.method for c in slack.calls if c.params.get("channel") == channel and c.method.startswith("chat.")]
    assert methods == ["chat.postMessage"], "no stream, no placeholder: one post"
    assert post.params["blocks"][1]["text"]["text"] == PRINTER_ANSWER
    assert len(model.requests) == asked, "the model was not asked"


# -- due for review: the admins' App Home and the weekly digest -----------------------------------


def open_home(bot, slack, user: str) -> dict:
    slack.homes.pop(user, None)
    bot.event({"type": "app_home_opened", "user": user, "channel": "D" + user, "tab": "home",
               "event_ts": f"{time.time():.6f}"})
    return slack.wait_for(lambda: slack.homes.get(user), timeout=60)


def test_the_admins_app_home_lists_answers_due_for_review(bot, slack, index):
    past = utc_today() - timedelta(days=3)
    with verified(index, DOOR, DOOR_ANSWER, review_by=past) as due_id, verified(index, PRINTER, PRINTER_ANSWER):
        admin = all_text(open_home(bot, slack, ADMIN)["blocks"])
        member = all_text(open_home(bot, slack, "U1")["blocks"])
    due = admin.split("Verified answers due for review", 1)[1]
    line = next(line for line in due.split("\n") if f"#{due_id}*" in line)
    assert DOOR in line and f"due since {past:%Y-%m-%d}: its review date passed" in line
    assert PRINTER not in due.split("This week against last", 1)[0], "one not yet due is not listed"
    assert "kb answers list --due" in due
    assert "Verified answers due for review" not in member, "admins only"


def test_the_weekly_digest_lists_answers_due_for_review(slack, index, bot):
    past = utc_today() - timedelta(days=10)
    channel = "CDIGEST" + uuid.uuid4().hex[:4].upper()
    settings = bot_settings(slack, kb_digest_channel=channel)
    client = WebClient(token=BOT_TOKEN, base_url=slack.api_url)
    with verified(index, DOOR, DOOR_ANSWER, review_by=past) as due_id:
        post_digest(settings, KnowledgeBase(index, []), client, channel)
    post = posts_in(slack, channel)[-1].params
    text = all_text(post["blocks"])
    due = text.split("Verified answers due for review", 1)[1].split("This week against last", 1)[0]
    assert f"#{due_id}*" in due and DOOR in due and f"due since {past:%Y-%m-%d}" in due
    assert "verified answers due for review" in post["text"]
