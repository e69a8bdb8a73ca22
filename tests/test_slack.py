"""Docent in Slack, over real HTTP: signed requests to the app's own endpoint, a local Web API.

The app runs as `kb serve` runs it (the Bolt app in the Starlette app under uvicorn, on
127.0.0.1), its `WebClient` pointed at `FakeSlack` (tests/support/slack_api_server.py), which records
every Web API call and every use of a response URL. Events, slash commands, button clicks and
form submissions are sent the way Slack sends them, signed with the signing secret.

Bolt runs listeners on its pool after the ack, and questions are answered on the answers pool
(`bot.slack.workers`, as in `kb serve`); both count work in flight, so a test can wait until the app is
idle before asserting that something did *not* happen.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from datetime import datetime, timezone

import pytest
from sqlalchemy import text
from sqlmodel import select

from tests.support.slack_api_server import BOT_ID, BOT_TOKEN, BOT_USER, TEAM, FakeSlack
from tests.support.slack_harness import (
    ADMIN, PARENTAL, Bot, all_text, bot_settings, button, click, feedback_rows, mention, message, new_channel, new_ts,
    posts_in, query_rows, running_bot, sources_heading, wait_until)

from bot.slack import blocks
from bot.answering.answer import Answer, Source
from bot.slack.store import DeliveryClaim
from bot.records.question_log import AdminAction, feedback_report
from bot.serve import StartupError, serve


# -- mentions, threads, DMs --------------------------------------------------------------------


def test_mention_gets_eyes_then_a_threaded_answer_with_sources_and_buttons(bot, slack, index):
    assert bot.http.get(f"{bot.url}/healthz").json()["ok"] is True
    channel = new_channel()
    event = mention(PARENTAL, channel, user="U1")

    assert bot.event(event).status_code == 200

    post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    reaction = slack.calls_to("reactions.add", channel=channel, name="eyes", timestamp=event["ts"])
    assert reaction and slack.calls.index(reaction[0]) < slack.calls.index(post), "👀 comes before the answer"
    assert post.params["thread_ts"] == event["ts"] and post.token == BOT_TOKEN
    sent = post.params["blocks"]
    assert "16 weeks" in sent[0]["text"]["text"]
    sources = next(b for b in sent if b.get("block_id") == "docent_sources")
    lines = sources["elements"][0]["text"].split("\n")
    assert sources["type"] == "context" and lines[0] == "*Sources*"
    assert lines[1].startswith("[1] Leave policy › Parental leave") or lines[1].startswith("[1] *Leave policy")
    assert 2 <= len(lines) <= 6 and all(line.startswith(f"[{n}] ") for n, line in enumerate(lines[1:], 1))
    up, down = button(sent, blocks.ACTION_VOTE_UP), button(sent, blocks.ACTION_VOTE_DOWN)
    assert up and down and up["value"] == down["value"]
    assert "16 weeks" in post.params["text"]

    row = wait_until(lambda: query_rows(index, message_ts=event["ts"]))[0]
    assert (row.surface, row.user_id, row.channel_id, row.thread_ts) == ("mention", "U1", channel, event["ts"])
    assert row.question == PARENTAL and row.answer_id == up["value"] and row.found and not row.llm_used
    assert row.doc_ids and len(row.scores) == len(row.doc_ids)
    assert {"embed", "vector", "bm25", "answer", "total", "slack_total"} <= set(row.timings_ms)


def test_follow_up_in_a_thread_is_answered_without_a_mention_using_the_earlier_question(bot, slack, index):
    channel = new_channel()
    first = mention(PARENTAL, channel)
    bot.event(first)
    slack.wait_for(lambda: posts_in(slack, channel))

    follow_up = message("and what about the secondary caregiver?", channel, thread_ts=first["ts"])
    bot.event(follow_up)
    bot.event(message("lunch anyone?", channel))  # top level, no mention: not for the bot
    bot.event(message("thanks!", channel, thread_ts=first["ts"]))  # small talk in the thread
    bot.event(message("how do I book leave?", channel, thread_ts=new_ts()))  # a thread the bot is not in

    second = slack.wait_for(lambda: posts_in(slack, channel)[1:])[0]
    bot.wait_idle()
    assert len(posts_in(slack, channel)) == 2
    assert second.params["thread_ts"] == first["ts"]
    assert "8 weeks" in all_text(second.params["blocks"])
    row = query_rows(index, message_ts=follow_up["ts"])[0]
    assert row.surface == "thread" and row.context_question == PARENTAL
    assert row.question == "and what about the secondary caregiver?"


def test_direct_message_is_answered_and_bots_are_ignored(bot, slack, index):
    channel = new_channel("D")
    dm = message("how do I connect to the VPN?", channel, channel_type="im")
    bot.event(dm)
    post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    assert slack.calls_to("reactions.add", channel=channel, timestamp=dm["ts"])
    assert "thread_ts" not in post.params or post.params["thread_ts"] is None
    assert button(post.params["blocks"], blocks.ACTION_VOTE_UP)

    bot.event(message("how do I connect to the VPN?", channel, channel_type="im", user=None, bot_id="BOTHER",
                      subtype="bot_message"))
    bot.event(message("I am the bot", channel, channel_type="im", user=BOT_USER, bot_id=BOT_ID))
    bot.wait_idle()
    assert len(posts_in(slack, channel)) == 1
    assert [r.surface for r in query_rows(index, channel_id=channel)] == ["dm"]


# -- /kb ---------------------------------------------------------------------------------------


def ask_privately(bot: Bot, slack: FakeSlack, question: str, channel: str, user: str = "U1"):
    url = slack.response_url("ask-" + uuid.uuid4().hex[:8])
    started = time.monotonic()
    ack = bot.command(f"ask {question}", user=user, channel=channel, response_url=url)
    elapsed = time.monotonic() - started
    name = "response:" + url.rsplit("/", 1)[1]
    answer = slack.wait_for(lambda: slack.calls_to(name))[0]
    return ack, elapsed, answer


def test_kb_ask_acks_at_once_and_answers_through_the_response_url(bot, slack):
    channel = new_channel()
    ack, elapsed, answer = ask_privately(bot, slack, "how do I expense a taxi?", channel)

    assert ack.status_code == 200 and elapsed < 3.0
    assert ack.json()["response_type"] == "ephemeral" and "Looking" in ack.json()["text"]
    assert answer.params["response_type"] == "ephemeral"
    assert button(answer.params["blocks"], blocks.ACTION_SHARE)
    assert button(answer.params["blocks"], blocks.ACTION_VOTE_DOWN)
    assert sources_heading(answer.params["blocks"]) == "*Sources*"  # the travel policy answers it: found
    bot.wait_idle()
    assert not posts_in(slack, channel), "a private answer is not posted in the channel"


def test_share_button_posts_the_answer_in_the_channel(bot, slack):
    channel = new_channel()
    _, _, private = ask_privately(bot, slack, PARENTAL, channel, user="U2")
    answer_id = button(private.params["blocks"], blocks.ACTION_SHARE)["value"]
    url = slack.response_url("share-" + answer_id)

    response = bot.interaction(click(blocks.ACTION_SHARE, answer_id, user="U2", channel=channel,
                                     response_url=url, ephemeral=True))

    assert response.status_code == 200
    public = slack.wait_for(lambda: posts_in(slack, channel))[0]
    text_ = all_text(public.params["blocks"])
    assert "16 weeks" in text_ and "Shared by <@U2>" in text_ and PARENTAL in text_
    assert button(public.params["blocks"], blocks.ACTION_VOTE_UP)["value"] == answer_id
    assert not button(public.params["blocks"], blocks.ACTION_SHARE)
    assert slack.wait_for(lambda: slack.calls_to("response:share-" + answer_id))[0].params["delete_original"] is True


def test_admin_resync_runs_a_real_sync_and_reports_a_summary(slack, index, sample_synced, wiki_copy):
    from indexing.storage.index_tables import DocumentRecord, SyncRun
    from indexing.ingest import indexed_sources

    source = "slack-resync-" + uuid.uuid4().hex[:6]
    (wiki_copy / "people" / "pets.md").write_text("# Pets\n\nDogs are welcome in the Lisbon office on Fridays.\n")
    pages = len(list(wiki_copy.rglob("*.md")))
    settings = bot_settings(slack, kb_wiki=wiki_copy, kb_source_name=source)
    url = slack.response_url("resync-" + source)
    try:
        with running_bot(settings, index) as admin_bot:
            ack = admin_bot.command("resync", user=ADMIN, response_url=url)
            assert ack.status_code == 200 and "Starting a resync" in ack.json()["text"]
            done = slack.wait_for(lambda: [c for c in slack.calls_to("response:resync-" + source)
                                           if "finished" in c.params.get("text", "")], timeout=90)[0]
        assert f"`{source}`: {pages} added, 0 updated" in done.params["text"] and "0 failed" in done.params["text"]
        with index.session() as s:
            docs = s.exec(select(DocumentRecord).where(DocumentRecord.source == source)).all()
            run = s.exec(select(SyncRun).where(SyncRun.source == source)).one()
            action = s.exec(select(AdminAction).where(AdminAction.argument == source)).one()
        assert len(docs) == pages and any(d.path == "people/pets.md" for d in docs)
        assert run.trigger == "admin" and run.finished_at is not None and run.added == pages
        assert action.user_id == ADMIN and action.allowed and action.finished_at and f"{pages} added" in action.result
    finally:
        indexed_sources.forget(index, source)  # remove the test's documents from the shared index


def test_non_admin_resync_is_refused_and_the_attempt_is_logged(bot, slack, index):
    user = "U" + uuid.uuid4().hex[:8].upper()
    url = slack.response_url("refused-" + user)

    ack = bot.command("resync", user=user, response_url=url)

    assert ack.status_code == 200 and "admins only" in ack.json()["text"]
    bot.wait_idle()
    with index.session() as s:
        attempts = s.exec(select(AdminAction).where(AdminAction.user_id == user)).all()
    assert [(a.action, a.allowed) for a in attempts] == [("resync", False)] and "refused" in attempts[0].result
    assert not slack.calls_to("response:refused-" + user), "no sync was started, so nothing to report"


def test_kb_help_and_status(bot, slack):
    help_ = bot.command("help", response_url=slack.response_url("help"))
    assert "/kb ask" in help_.json()["text"] and "/kb resync" in help_.json()["text"]
    bot.command("status", response_url=slack.response_url("status"))
    status = slack.wait_for(lambda: slack.calls_to("response:status"))[0]
    assert re.search(r"Chunks: \d+", status.params["text"]) and "Last sync of `sample`" in status.params["text"]


# -- feedback ----------------------------------------------------------------------------------


def test_thumbs_up_then_down_by_the_same_user_keeps_one_vote_the_latest(bot, slack, index):
    channel = new_channel()
    bot.event(mention(PARENTAL, channel))
    post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    answer_id = button(post.params["blocks"], blocks.ACTION_VOTE_UP)["value"]
    posted = {"type": "message", "ts": "1700000999.000100", "text": post.params["text"], "blocks": post.params["blocks"],
              "bot_id": BOT_ID, "user": BOT_USER}
    url = slack.response_url("vote-" + answer_id)

    bot.interaction(click(blocks.ACTION_VOTE_UP, answer_id, user="U7", channel=channel, response_url=url, message=posted))
    first = slack.wait_for(lambda: slack.calls_to("chat.update", channel=channel))[0]
    bot.interaction(click(blocks.ACTION_VOTE_DOWN, answer_id, user="U7", channel=channel, response_url=url, message=posted))
    second = slack.wait_for(lambda: slack.calls_to("chat.update", channel=channel)[1:])[0]

    assert first.params["ts"] == posted["ts"] and "👍 1 · 👎 0" in all_text(first.params["blocks"])
    assert "👍 0 · 👎 1" in all_text(second.params["blocks"])
    assert button(second.params["blocks"], blocks.ACTION_VOTE_UP), "the buttons stay"
    modal = slack.wait_for(lambda: slack.calls_to("views.open"))[-1].params["view"]
    assert modal["callback_id"] == blocks.REASON_CALLBACK and modal["private_metadata"] == answer_id
    votes = feedback_rows(index, answer_id)
    assert [(v.user_id, v.vote) for v in votes] == [("U7", "down")]


def test_thumbs_down_reason_from_the_form_is_stored(bot, slack, index):
    channel = new_channel()
    question = "what is the recipe for grandmother's plum dumplings?"
    _, _, private = ask_privately(bot, slack, question, channel, user="U8")
    assert sources_heading(private.params["blocks"]) == "*Nearest pages*"
    answer_id = button(private.params["blocks"], blocks.ACTION_VOTE_DOWN)["value"]
    url = slack.response_url("down-" + answer_id)
    bot.interaction(click(blocks.ACTION_VOTE_DOWN, answer_id, user="U8", channel=channel, response_url=url, ephemeral=True))
    refreshed = slack.wait_for(lambda: slack.calls_to("response:down-" + answer_id))[0]
    assert refreshed.params["replace_original"] is True and "👎 1" in all_text(refreshed.params["blocks"])
    view = slack.wait_for(lambda: [c for c in slack.calls_to("views.open")
                                   if c.params["view"]["private_metadata"] == answer_id])[0].params["view"]

    submission = {
        "type": "view_submission", "team": {"id": TEAM, "domain": "acme"},
        "user": {"id": "U8", "username": "u8", "team_id": TEAM}, "api_app_id": "A0DOCENT", "token": "legacy",
        "trigger_id": f"{time.time()}.trigger",
        "view": {**view, "id": "V0REASON", "state": {"values": {blocks.REASON_BLOCK: {blocks.REASON_INPUT: {
            "type": "plain_text_input", "value": "The canteen page has this recipe."}}}}},
        "response_urls": [],
    }
    response = bot.interaction(submission)

    assert response.status_code == 200 and response.text == ""  # an empty ack closes the form
    bot.wait_idle()  # stored on the answers pool, after the ack
    votes = feedback_rows(index, answer_id)
    assert [(v.user_id, v.vote, v.reason) for v in votes] == [("U8", "down", "The canteen page has this recipe.")]
    report = [r for r in feedback_report(index, limit=500) if r.answer_id == answer_id]  # what `kb feedback` lists
    assert {(r.kind, r.question, r.vote, r.reason) for r in report} == {
        ("vote", question, "down", "The canteen page has this recipe."), ("not_found", question, None, None)}


# -- never silent, never twice -----------------------------------------------------------------


@pytest.mark.parametrize("problem", ["forged", "stale"])
def test_forged_or_stale_signature_gets_401_and_nothing_is_processed(bot, slack, index, problem):
    channel = new_channel()
    event_id = "Ev" + uuid.uuid4().hex[:12].upper()
    signing = {"forged": {"secret": "not-the-signing-secret"}, "stale": {"timestamp": int(time.time()) - 6 * 60}}[problem]

    event = mention(PARENTAL, channel)
    response = bot.event(event, event_id, **signing)

    assert response.status_code == 401
    bot.wait_idle()
    assert not [c for c in slack.calls if c.params.get("channel") == channel]
    assert not query_rows(index, channel_id=channel)
    with index.session() as s:
        assert s.get(DeliveryClaim, f"message:{channel}:{event['ts']}") is None


def test_the_same_event_delivered_twice_gets_one_answer(bot, slack, index):
    channel = new_channel()
    event = mention(PARENTAL, channel)
    event_id = "Ev" + uuid.uuid4().hex[:12].upper()

    first = bot.event(event, event_id)
    retry = bot.event(event, event_id, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    again = bot.event(event, event_id)
    # the same message as a plain `message` event (Slack sends both for a mention)
    as_message = bot.event(message(event["text"], channel, ts=event["ts"]))

    assert [r.status_code for r in (first, retry, again, as_message)] == [200, 200, 200, 200]
    slack.wait_for(lambda: posts_in(slack, channel))
    bot.wait_idle()
    assert len(posts_in(slack, channel)) == 1
    assert len(slack.calls_to("reactions.add", channel=channel)) == 1
    assert len(query_rows(index, channel_id=channel)) == 1


@pytest.fixture
def broken_index(index, tmp_path):
    """A second index whose database is dropped while the bot runs (the database "goes away")."""
    from indexing.config import IndexConfig
    from indexing.index import Index

    name = "docent_broken_" + uuid.uuid4().hex[:8]
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = index.url.set(database=name).render_as_string(hide_password=False)
    broken = Index(IndexConfig(home=tmp_path / "broken", database_url=url), embedder=index.embedder)

    def drop() -> None:
        with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))

    yield broken, drop
    broken.close()


def test_an_internal_error_gets_an_apology_with_a_reference_not_silence(slack, broken_index, caplog):
    caplog.set_level(logging.WARNING)
    channel = new_channel()
    broken, drop_database = broken_index
    with running_bot(bot_settings(slack), broken) as broken_bot:
        drop_database()
        event = mention(PARENTAL, channel)

        assert broken_bot.event(event).status_code == 200

        post = slack.wait_for(lambda: posts_in(slack, channel))[0]
        assert broken_bot.http.get(f"{broken_bot.url}/healthz").status_code == 503
    apology = all_text(post.params["blocks"])
    assert post.params["thread_ts"] == event["ts"] and "Sorry" in apology
    ref = re.search(r"reference `([0-9a-f]{8})`", apology).group(1)
    logged = [r for r in caplog.records if ref in r.getMessage() and r.exc_info]
    assert logged and logged[0].levelno == logging.ERROR, "the error is logged with the reference the user saw"


# -- Slack's limits ----------------------------------------------------------------------------


def _long_answers() -> dict[str, str]:
    paragraph = ("Expenses over the limit need a second approval from your director, and receipts must be attached "
                 "within thirty days of the purchase or the claim is returned. ")
    code = "```python\n" + "\n".join(f"total_{i} = claim.amount * rate  # line {i}" for i in range(130)) + "\n```"
    table = "\n".join(f"| item {i} | {i * 3} EUR | needs receipt |" for i in range(120))
    mixed = ("# Travel policy\n\n<!channel> read this, @here too.\n\n" + "\n\n".join(
        [paragraph * 3, code, table, "- [a link](https://wiki.acme.test/travel?x=1&y=2) and **bold** [1]"] * 4))
    return {
        "mixed markdown": (mixed * 2)[:20_000],
        "one paragraph": (paragraph * 200)[:20_000],
        "many short lines": "\n\n".join(f"- step {i}" for i in range(2_500))[:20_000],
    }


@pytest.mark.parametrize("shape", list(_long_answers()))
def test_a_20000_character_answer_fits_slack_limits(shape):
    text_ = _long_answers()[shape]
    assert len(text_) == 20_000 or shape == "many short lines"
    sources = [Source(n=n, doc_id=f"wiki:finance/page{n}.md", source="wiki", path=f"finance/page{n}.md",
                      title=f"Page {n}", heading_path=["Expenses", "Limits"], url=f"https://wiki.acme.test/page{n}",
                      score=0.5, updated_at=datetime(2025, 3, 1, tzinfo=timezone.utc)) for n in range(1, 6)]
    answer = Answer(question="q", text=text_, sources=sources, timings_ms={})

    for variant in (blocks.answer_blocks(answer), blocks.answer_blocks(answer, share=True),
                    blocks.with_votes(blocks.answer_blocks(answer), {"up": 12, "down": 3})):
        sections = [b["text"]["text"] for b in variant if b["type"] == "section"]
        assert len(variant) <= blocks.MAX_BLOCKS
        assert blocks.message_chars(variant) <= blocks.MESSAGE_CHARS
        assert all(0 < len(s) <= blocks.SECTION_CHARS for s in sections)
        assert all(s.count("```") % 2 == 0 for s in sections), "code blocks are closed in every section"
        assert all(len(e["text"]) <= 3000 for b in variant if b["type"] == "context" for e in b["elements"])
        assert sections[-1].endswith("answer shortened: read the rest in <https://wiki.acme.test/page1|Page 1>_")
        body = "\n".join(sections)
        assert "<!channel>" not in body and not re.search(r"(?<!\w)@here\b", body)
        assert not re.search(r"<[^>|]*$", sections[-1].rsplit("\n\n", 1)[0]), "not cut inside a link"
    assert len(blocks.fallback_text(answer)) <= blocks.FALLBACK_CHARS + 20


# -- start-up ----------------------------------------------------------------------------------


def test_a_missing_or_wrong_token_is_one_clear_error_at_start(slack):
    with pytest.raises(StartupError, match="SLACK_BOT_TOKEN is not set"):
        serve(bot_settings(slack, slack_bot_token=None))
    with pytest.raises(StartupError, match="^Slack rejected SLACK_BOT_TOKEN: invalid_auth$"):
        serve(bot_settings(slack, slack_bot_token="xoxb-revoked"))
