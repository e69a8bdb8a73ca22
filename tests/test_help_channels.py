"""Help channels over real HTTP (`bot.slack.listeners.help_channels`, `bot.slack.handover`): in a
`respond = "questions"` channel a top-level question is answered without a mention when the wiki
answers it; chatter, bots, messages to people and Slack Connect channels get nothing; a question
the wiki cannot answer is handed over to the channel's `escalate` people once per thread, within
the channel's hourly cap; `/kb channel` shows an admin the channel's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.slack_api_server import BOT_ID, BOT_USER
from tests.support.slack_harness import (
    ADMIN, PARENTAL, all_text, bot_settings, button, click, mention, message, new_channel, posts_in, query_rows,
    running_bot, sources_heading)

from bot.slack import blocks

SAMPLE_WIKI = Path(__file__).resolve().parent.parent / "sample-wiki"
UNKNOWN = "what is the recipe for grandmother's plum dumplings?"
HELP, CAPPED, QUIET, SHARED_HELP = (new_channel() for _ in range(4))
LOOP, CLICKS, LISTED, HR_HELP, VOTED, BECOMES, SHARED_LOOP = (new_channel() for _ in range(7))
HR_OWNERS = new_channel()  # a channel that sees the hr scope, for the digest
SHARED_VOTED, SHARED_LATER = new_channel(), new_channel()
HR_NARROWED, PRIVATE_HELP = new_channel(), new_channel()  # hr's channel searching only sample's pages; a private one
CAP = 2
ASKER, ANSWERER = "U0ASKER1", "U0BOB1"
ANSWER = "It's in the facilities cookbook, page 12: <https://cookbook.example/plums|the cookbook> has it"


@pytest.fixture(scope="module")
def sources_file(tmp_path_factory):
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

[scopes.hr]
channels = ["{HR_HELP}", "{HR_OWNERS}", "{HR_NARROWED}"]

[channels.{HR_NARROWED}]
respond = "questions"
escalate = ["S0PEOPLE1"]
sources = ["sample"]

[channels.{PRIVATE_HELP}]
respond = "questions"
escalate = ["S0PEOPLE1"]
""" + "".join(f"""
[channels.{channel}]
respond = "questions"
escalate = ["S0PEOPLE1"]
""" for channel in (LOOP, CLICKS, LISTED, HR_HELP, VOTED, BECOMES, SHARED_LOOP, SHARED_VOTED, SHARED_LATER)))
    return path


@pytest.fixture(scope="module")
def helpbot(slack, index, sample_synced, sources_file):
    with running_bot(bot_settings(slack, kb_sources=sources_file, kb_handovers_per_hour=CAP), index) as running:
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
    message("<@U0ALICE1> can you tell me how many weeks of parental leave we get?", QUIET),
    message("<!subteam^S0OTHER1> how many weeks of parental leave do we get?", QUIET),
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


# -- the loop back to the wiki: a person's answer in a handed-over thread --------------------------


def handed_over(helpbot, slack, channel: str, question: str = UNKNOWN, asker: str = ASKER) -> dict:
    """A question the wiki cannot answer, asked in `channel` and handed over there; its event."""
    asked = message(question, channel, user=asker)
    helpbot.event(asked)
    slack.wait_for(lambda: [c for c in posts_in(slack, channel)
                            if c.params.get("thread_ts") == asked["ts"] and "can you help?" in c.params["text"]])
    return asked


def offers(slack, channel: str, thread: str) -> list:
    return slack.calls_to("chat.postEphemeral", channel=channel, thread_ts=thread)


def answered(helpbot, slack, channel: str) -> tuple[dict, dict]:
    """A handed-over question and a person's answer in its thread, offered to both of them."""
    asked = handed_over(helpbot, slack, channel)
    reply = message(ANSWER, channel, user=ANSWERER, thread_ts=asked["ts"])
    helpbot.event(reply)
    slack.wait_for(lambda: len(offers(slack, channel, asked["ts"])) == 2)
    return asked, reply


def add_gap(helpbot, slack, channel: str, thread: str, user: str):
    from bot.slack.listeners.answered_gaps import ACTION_ADD_GAP

    name = f"gap-{user}-{thread}"
    helpbot.interaction(click(ACTION_ADD_GAP, f"{channel} {thread}", user=user, channel=channel,
                              response_url=slack.response_url(name), ephemeral=True))
    return slack.wait_for(lambda: slack.calls_to("response:" + name))[0].params


def stored_gap(index, channel: str, thread: str):
    from bot.records import question_log

    return question_log.answered_gap(index, channel, thread)


def test_a_persons_answer_in_a_handed_over_thread_is_offered_once_to_the_asker_and_the_answerer(helpbot, slack):
    from bot.slack.listeners.answered_gaps import ACTION_ADD_GAP, BUTTON

    asked = handed_over(helpbot, slack, LOOP)
    helpbot.event(message("thanks, same question here", LOOP, user="U0CAROL1", thread_ts=asked["ts"]))
    helpbot.event(message("is it in the facilities wiki maybe?", LOOP, user="U0CAROL1", thread_ts=asked["ts"]))
    helpbot.event(message("any news on this one please", LOOP, user=ASKER, thread_ts=asked["ts"]))  # the asker
    helpbot.wait_idle()
    assert not offers(slack, LOOP, asked["ts"]), "thanks, a question back and the asker's own reply are no answer"
    reply = message(ANSWER, LOOP, user=ANSWERER, thread_ts=asked["ts"])
    helpbot.event(reply)
    helpbot.event(reply, event_id="EvRETRY" + reply["ts"].replace(".", ""))  # delivered again
    helpbot.wait_idle()  # the first answer is handled before a later one (events run concurrently)
    helpbot.event(message("also the canteen has the recipe on its board", LOOP, user="U0CAROL1", thread_ts=asked["ts"]))
    helpbot.event(message(ANSWER, LOOP, user=BOT_USER, bot_id=BOT_ID, thread_ts=asked["ts"]))
    helpbot.wait_idle()
    sent = offers(slack, LOOP, asked["ts"])
    assert sorted(c.params["user"] for c in sent) == sorted([ASKER, ANSWERER]), "once per thread, to those two"
    buttons = [button(c.params["blocks"], ACTION_ADD_GAP) for c in sent]
    assert all(b and b["text"]["text"] == BUTTON and b["value"] == f"{LOOP} {asked['ts']}" for b in buttons)
    in_thread = [c for c in posts_in(slack, LOOP) if c.params.get("thread_ts") == asked["ts"]]
    assert len(in_thread) == 1, "no message in the thread beyond the hand-over: people's replies are not follow-ups"


def test_the_button_records_the_gap_once_for_the_asker_or_the_answerer_and_counts_it(helpbot, slack, index):
    asked, reply = answered(helpbot, slack, CLICKS)
    before = counted("docent_gaps_added_total")
    refused = add_gap(helpbot, slack, CLICKS, asked["ts"], "U0CAROL1")
    assert "Only the person who asked and the person who answered" in refused["text"]
    assert stored_gap(index, CLICKS, asked["ts"]) is None
    added = add_gap(helpbot, slack, CLICKS, asked["ts"], ASKER)
    assert added["text"].startswith("✅ Added to the wiki's gaps") and added["replace_original"] is True
    again = add_gap(helpbot, slack, CLICKS, asked["ts"], ANSWERER)
    assert "Already in the wiki's gaps" in again["text"]
    gap = stored_gap(index, CLICKS, asked["ts"])
    assert (gap.question, gap.answered_by, gap.asked_by, gap.added_by, gap.answer_ts) == (
        UNKNOWN, ANSWERER, ASKER, ASKER, reply["ts"])
    assert gap.answer == "It's in the facilities cookbook, page 12: [the cookbook](https://cookbook.example/plums) has it"
    assert gap.permalink == f"https://acme.slack.com/archives/{CLICKS}/p{reply['ts'].replace('.', '')}"
    assert gap.scopes == ["public", "sample"] and abs(gap.answered_at.timestamp() - float(reply["ts"])) < 1
    assert counted("docent_gaps_added_total") == before + 1


def test_kb_gaps_lists_answers_by_people_and_writes_drafts_without_overwriting(helpbot, slack, index, tmp_path):
    import json
    import os
    import subprocess
    import sys

    asked, _ = answered(helpbot, slack, LISTED)
    add_gap(helpbot, slack, LISTED, asked["ts"], ANSWERER)
    env = {**os.environ, "DATABASE_URL": index.url.render_as_string(hide_password=False),
           "KB_HOME": str(index.config.home)}
    kb = [sys.executable, "-m", "bot.cli", "gaps"]
    listed = subprocess.run([*kb, "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr
    people = [a for a in json.loads(listed.stdout)["answered_by_people"] if a["channel"] == LISTED]
    assert [(a["question"], a["answered_by"], a["thread_ts"]) for a in people] == [(UNKNOWN, ANSWERER, asked["ts"])]
    from bot.records.gaps_text import as_text
    from bot.records.gaps import gaps_report

    text = as_text(gaps_report(index, 7)).split("Answered by people, missing from the wiki", 1)[1]
    assert f"{ANSWERER} in {LISTED}: It's in the facilities cookbook, page 12" in text
    folder = tmp_path / "drafts"
    first = subprocess.run([*kb, "--drafts", str(folder)], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    mine = [p for p in folder.iterdir() if (p.read_text().count(f"asked_in: \"{LISTED}\"") == 1)]
    assert len(mine) == 1 and mine[0].name.startswith("what-is-the-recipe-for-grandmother-s-plum-dumplings-")
    page = mine[0].read_text()
    assert page.startswith("---\ntitle: \"what is the recipe for grandmother's plum dumplings?\"\n")
    assert "\n# what is the recipe for grandmother's plum dumplings?\n\nIt's in the facilities cookbook" in page
    assert f"/archives/{LISTED}/p" in page and "url:" not in page
    mine[0].write_text("edited by a wiki owner")
    second = subprocess.run([*kb, "--drafts", str(folder)], env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and f"kept  {mine[0]} (it exists" in second.stdout
    assert mine[0].read_text() == "edited by a wiki owner"


def test_a_gap_from_a_restricted_channel_is_shown_only_where_its_scopes_are_visible(
        helpbot, slack, index, sources_file):
    from bot.knowledge import KnowledgeBase
    from bot.slack.client import web_client
    from bot.slack.digest import post_digest

    public_asked, _ = answered(helpbot, slack, CLICKS)  # CLICKS sees public and sample
    add_gap(helpbot, slack, CLICKS, public_asked["ts"], ANSWERER)
    hr_asked, _ = answered(helpbot, slack, HR_HELP)  # HR_HELP sees hr too
    add_gap(helpbot, slack, HR_HELP, hr_asked["ts"], ANSWERER)
    assert stored_gap(index, HR_HELP, hr_asked["ts"]).scopes == ["hr", "public", "sample"]
    settings = bot_settings(slack, kb_sources=sources_file)
    client = web_client(settings)
    general = new_channel()
    for channel in (general, HR_OWNERS):
        post_digest(settings, KnowledgeBase(index, []), client, channel)
    shown = {channel: all_text(posts_in(slack, channel)[-1].params["blocks"]).split("Answered by people", 1)[1]
             for channel in (general, HR_OWNERS)}
    assert f"<#{CLICKS}>" in shown[general] and f"<#{HR_HELP}>" not in shown[general]
    assert f"<#{CLICKS}>" in shown[HR_OWNERS] and f"<#{HR_HELP}>" in shown[HR_OWNERS]
    helpbot.event({"type": "app_home_opened", "user": ADMIN, "channel": "D0ADMIN", "tab": "home",
                   "event_ts": "1700000000.000001"})
    home = slack.wait_for(lambda: slack.homes.get(ADMIN))
    in_home = all_text(home["blocks"]).split("Answered by people", 1)[1]
    assert f"<#{CLICKS}>" in in_home and f"<#{HR_HELP}>" not in in_home, "the admin's DM does not see hr"


def test_a_gap_keeps_its_channels_scopes_before_narrowing_and_a_private_channels_stays_out(
        helpbot, slack, index, sources_file):
    """An HR channel searching only sample's pages (`sources = ["sample"]`) recorded `[sample]`, so
    a public digest showed what was said there; a private channel's gap went to every digest and
    admin's App Home. Now a gap keeps the channel's own scopes and kind; private ones are listed
    only with KB_GAPS_INCLUDE_PRIVATE_CHANNELS."""
    from bot.knowledge import KnowledgeBase
    from bot.slack.client import web_client
    from bot.slack.digest import post_digest

    slack.conversations[PRIVATE_HELP] = {"is_channel": True, "is_private": True, "is_shared": False,
                                         "is_ext_shared": False}
    narrowed, _ = answered(helpbot, slack, HR_NARROWED)
    add_gap(helpbot, slack, HR_NARROWED, narrowed["ts"], ANSWERER)
    private, _ = answered(helpbot, slack, PRIVATE_HELP)
    add_gap(helpbot, slack, PRIVATE_HELP, private["ts"], ANSWERER)
    hr_gap, private_gap = stored_gap(index, HR_NARROWED, narrowed["ts"]), stored_gap(index, PRIVATE_HELP, private["ts"])
    assert (hr_gap.scopes, hr_gap.channel_kind) == (["hr", "public", "sample"], "public")
    assert (private_gap.scopes, private_gap.channel_kind) == (["public", "sample"], "private")
    settings = bot_settings(slack, kb_sources=sources_file)
    client = web_client(settings)
    general, opted_in = new_channel(), new_channel()
    post_digest(settings, KnowledgeBase(index, []), client, general)
    post_digest(settings.model_copy(update={"kb_gaps_include_private_channels": True}), KnowledgeBase(index, []),
                client, opted_in)
    shown = {c: all_text(posts_in(slack, c)[-1].params["blocks"]).split("Answered by people", 1)[1]
             for c in (general, opted_in)}
    assert f"<#{HR_NARROWED}>" not in shown[general] and f"<#{PRIVATE_HELP}>" not in shown[general]
    assert f"<#{HR_NARROWED}>" not in shown[opted_in] and f"<#{PRIVATE_HELP}>" in shown[opted_in]
    slack.homes.pop(ADMIN, None)
    helpbot.event({"type": "app_home_opened", "user": ADMIN, "channel": "D0ADMIN", "tab": "home",
                   "event_ts": "1700000000.000004"})
    in_home = all_text(slack.wait_for(lambda: slack.homes.get(ADMIN))["blocks"]).split("Answered by people", 1)[1]
    assert f"<#{PRIVATE_HELP}>" not in in_home and f"<#{HR_NARROWED}>" not in in_home


def test_a_down_vote_in_a_help_channel_hands_over_once_per_thread(helpbot, slack):
    asked = message(PARENTAL, VOTED)
    helpbot.event(asked)
    answer = slack.wait_for(lambda: posts_in(slack, VOTED))[0]
    answer_id = button(answer.params["blocks"], blocks.ACTION_VOTE_DOWN)["value"]
    posted = {"type": "message", "ts": "1700000099.000001", "thread_ts": asked["ts"], "text": answer.params["text"],
              "blocks": answer.params["blocks"]}
    for voter in ("U0VOTER1", "U0VOTER2"):
        helpbot.interaction(click(blocks.ACTION_VOTE_DOWN, answer_id, user=voter, channel=VOTED,
                                  response_url=slack.response_url("down-" + voter), message=posted))
    helpbot.wait_idle()
    handovers = [c for c in posts_in(slack, VOTED) if "can you help?" in c.params["text"]]
    assert [(c.params["text"], c.params["thread_ts"]) for c in handovers] == [
        ("That answer didn't help — <!subteam^S0PEOPLE1> can you help?", asked["ts"])]


def test_a_channel_that_becomes_slack_connect_gets_no_more_unprompted_answers(helpbot, slack):
    first = message(PARENTAL, BECOMES)
    helpbot.event(first)
    slack.wait_for(lambda: posts_in(slack, BECOMES))
    slack.share_channel(BECOMES)
    helpbot.event({"type": "channel_shared", "connected_team_id": "T0PARTNER", "channel": BECOMES,
                   "event_ts": "1700000000.000002"})
    helpbot.wait_idle()
    helpbot.event(message(PARENTAL.replace("primary", "main"), BECOMES))
    helpbot.event(message(UNKNOWN, BECOMES))
    helpbot.wait_idle()
    assert [c.params["thread_ts"] for c in posts_in(slack, BECOMES)] == [first["ts"]]


def test_housekeeping_forgets_hand_overs_and_answered_gaps_with_the_questions(index):
    from datetime import datetime, timedelta, timezone

    from sqlalchemy import text

    from bot.records import question_log
    from bot.housekeeping import tidy
    from bot.slack.store import claim_handover, handover_in

    channel, now = new_channel(), datetime.now(timezone.utc)
    old = now - timedelta(days=40)
    for thread in ("1.000001", "1.000002"):
        claim_handover(index, channel, thread, UNKNOWN, per_hour=5, asker=ASKER)
        question_log.add_answered_gap(index, question_log.AnsweredGap(
            channel_id=channel, thread_ts=thread, question=UNKNOWN, answer=ANSWER, answered_by=ANSWERER,
            asked_by=ASKER, answer_ts=thread, answered_at=now, added_by=ASKER,
            added_at=old if thread == "1.000001" else now))
    with index.engine.begin() as conn:
        conn.execute(text("UPDATE handovers SET created_at = :old WHERE channel = :c AND thread_ts = '1.000001'"),
                     {"old": old, "c": channel})
    tidy(index, query_log_days=30, now=now)
    assert [handover_in(index, channel, t) is None for t in ("1.000001", "1.000002")] == [True, False]
    assert [question_log.answered_gap(index, channel, t) is None for t in ("1.000001", "1.000002")] == [True, False]


def test_draft_names_are_safe_and_stable():
    from datetime import datetime, timezone

    from bot.records.gap_drafts import draft_name
    from bot.records.gaps import AnsweredByPeople

    def gap(question: str, thread: str = "1.000001") -> AnsweredByPeople:
        at = datetime(2026, 12, 1, tzinfo=timezone.utc)
        return AnsweredByPeople(question=question, answer="a", answered_by="U1", asked_by="U2", added_by="U2",
                                channel="C1", thread_ts=thread, permalink="", answered_at=at, added_at=at, scopes=[])

    hostile = draft_name(gap("../../etc/passwd? <script> & C:\\boot.ini"))
    assert hostile.startswith("etc-passwd-script-c-boot-ini-") and "/" not in hostile and ".." not in hostile
    assert draft_name(gap("报销流程是什么?")).startswith("gap-")
    assert len(draft_name(gap("why " * 100))) <= 60 + len("-12345678.md")
    assert draft_name(gap("Same?")) == draft_name(gap("Same?")) != draft_name(gap("Same?", thread="1.000002"))


def test_no_hand_over_or_offer_in_a_slack_connect_channel_however_reached(helpbot, slack):
    """A hand-over pages the company's own people and lists nearest pages; in a conversation
    shared with another organisation neither may happen — not for a not-found mention (this test
    expected one before issue 33), not for a 👎, and no gap is offered for an answer given there."""
    hand_overs = lambda channel: [c for c in posts_in(slack, channel) if "can you help?" in c.params["text"]]  # noqa: E731
    slack.share_channel(SHARED_LOOP)
    asked = mention(UNKNOWN, SHARED_LOOP, user=ASKER)
    helpbot.event(asked)
    reply = slack.wait_for(lambda: [c for c in posts_in(slack, SHARED_LOOP) if c.params.get("thread_ts") == asked["ts"]])
    helpbot.event(message(ANSWER, SHARED_LOOP, user=ANSWERER, thread_ts=asked["ts"]))
    helpbot.wait_idle()
    assert "can you help?" not in reply[0].params["text"] and not hand_overs(SHARED_LOOP)
    assert not offers(slack, SHARED_LOOP, asked["ts"]), "people of another organisation: nothing recorded"

    slack.share_channel(SHARED_VOTED)  # 👎 on an answer given in a shared channel
    voted = mention(PARENTAL, SHARED_VOTED)
    helpbot.event(voted)
    answer = slack.wait_for(lambda: posts_in(slack, SHARED_VOTED))[0]
    answer_id = button(answer.params["blocks"], blocks.ACTION_VOTE_DOWN)["value"]
    posted = {"type": "message", "ts": "1700000098.000001", "thread_ts": voted["ts"], "text": answer.params["text"],
              "blocks": answer.params["blocks"]}
    helpbot.interaction(click(blocks.ACTION_VOTE_DOWN, answer_id, user="U0VOTER1", channel=SHARED_VOTED,
                              response_url=slack.response_url("down-shared"), message=posted))
    helpbot.wait_idle()
    assert len(slack.calls_to("views.open")) >= 1 and not hand_overs(SHARED_VOTED)

    earlier = handed_over(helpbot, slack, SHARED_LATER)  # handed over, then the channel turns Slack Connect
    slack.share_channel(SHARED_LATER)
    helpbot.event({"type": "channel_shared", "connected_team_id": "T0PARTNER", "channel": SHARED_LATER,
                   "event_ts": "1700000000.000003"})
    helpbot.wait_idle()
    helpbot.event(message(ANSWER, SHARED_LATER, user=ANSWERER, thread_ts=earlier["ts"]))
    helpbot.wait_idle()
    assert not offers(slack, SHARED_LATER, earlier["ts"]) and len(hand_overs(SHARED_LATER)) == 1


def test_drafts_carry_their_channels_scopes_are_inert_and_are_not_indexed_as_they_come(
        helpbot, slack, index, tmp_path, sources_file):
    """`kb gaps --drafts` wrote no access label and a person's raw text; a draft written into a
    synced folder was indexed, so a public channel was answered with an HR thread's answer."""
    import uuid

    from sqlmodel import select
    from typer.testing import CliRunner

    from bot.cli import app as kb_cli
    from indexing.storage.index_tables import DocumentRecord, Status

    env = {"KB_HOME": str(index.config.home), "DATABASE_URL": index.url.render_as_string(hide_password=False),
           "KB_SOURCES": str(sources_file), "SLACK_BOT_TOKEN": None, "KB_WIKI": None, "KB_LOG_LEVEL": "WARNING"}
    hostile = "Ask <!channel> or @here: the form is <script>alert(1)</script> & the HR portal has it, page 3"
    asked = handed_over(helpbot, slack, HR_HELP)
    helpbot.event(message(hostile, HR_HELP, user=ANSWERER, thread_ts=asked["ts"]))
    slack.wait_for(lambda: offers(slack, HR_HELP, asked["ts"]))
    add_gap(helpbot, slack, HR_HELP, asked["ts"], ANSWERER)

    refused = [CliRunner().invoke(kb_cli, ["gaps", "--drafts", where], env=env)
               for where in ("", str(SAMPLE_WIKI / "gap-drafts"))]
    assert [r.exit_code for r in refused] == [1, 1] and not (SAMPLE_WIKI / "gap-drafts").exists()
    assert "needs a folder" in refused[0].output and "inside source sample's folder" in refused[1].output

    folder = tmp_path / "drafts"
    written = CliRunner().invoke(kb_cli, ["gaps", "--drafts", str(folder)], env=env)
    assert written.exit_code == 0, written.output
    [draft] = [p for p in folder.iterdir() if "HR portal has it" in p.read_text()]
    text = draft.read_text()
    assert 'scopes: ["hr", "public", "sample"]' in text and "draft: true" in text
    assert "<script>" not in text and "&lt;script&gt;" in text and "<!channel>" not in text
    assert "@here" not in text and "@\u2060here" in text

    source = f"drafts-{uuid.uuid4().hex[:6]}"

    def synced() -> DocumentRecord:
        result = CliRunner().invoke(kb_cli, ["sync", str(folder), "--source", source, "--access", "sample"], env=env)
        assert "Traceback" not in result.output, result.output
        with index.session() as s:
            return s.exec(select(DocumentRecord).where(DocumentRecord.source == source,
                                                       DocumentRecord.path == draft.name)).one()

    as_written = synced()
    assert as_written.status == Status.SKIPPED and "draft: true" in as_written.error
    draft.write_text(text.replace("draft: true\n", ""))  # a wiki owner takes it out of draft, scopes kept
    published = synced()
    assert published.status == Status.FAILED and "only where hr is visible" in published.error
    assert published.chunk_count == 0
