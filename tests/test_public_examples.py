"""App Home examples and assistant prompts come only from questions asked in public channels.

Every question is asked through Slack (signed events and `/kb` to the running app, the local
Slack API describing each conversation as `conversations.info` does), twice by different people,
and answered from public pages — so each would be an example by the askers' count and the pages'
visibility alone. Only the one asked by mention in a public channel may become an example; the
query log records where each was asked (`bot.records.question_log.ChannelKind`). Rows logged before that column
existed are of unknown kind and never qualify.
"""

from __future__ import annotations

import time
import uuid

import pytest
from sqlalchemy import text

from tests.support.gaps_wiki import isolated_index

from tests.support.slack_harness import (
    all_text, bot_settings, mention, message, new_channel, new_ts, posts_in, query_rows, running_bot)

from bot.records import question_log
from bot.records.question_log import ChannelKind
from bot.slack.listeners.home_tab import example_questions

PUBLIC_Q = "how many days of annual leave do I get?"
PRIVATE_Q = "how many paid sick days do I get a year?"
GROUP_DM_Q = "do unused annual leave days roll over?"
DM_Q = "what is the address of the VPN server?"
SHARED_Q = "which port does the VPN server use?"
COMMAND_Q = "how do I install the VPN client with WireGuard?"
NOT_EXAMPLES = (PRIVATE_Q, GROUP_DM_Q, DM_Q, SHARED_Q, COMMAND_Q)


@pytest.fixture(scope="module")
def asked(index, slack, tmp_path_factory):
    """The bot on its own database; each question asked twice, by two people, in its kind of place."""
    with isolated_index(index, tmp_path_factory.mktemp("public-examples")) as (own, sources):
        with running_bot(bot_settings(slack, kb_sources=sources), own) as bot:
            public, private, group_dm, shared = new_channel(), new_channel("G"), new_channel("C"), new_channel()
            slack.conversations[group_dm] = {"is_mpim": True, "is_private": True, "is_channel": False,
                                             "is_shared": False, "is_ext_shared": False}
            slack.share_channel(shared)
            for user in ("UPUB1", "UPUB2"):
                for question, channel in ((PUBLIC_Q, public), (PRIVATE_Q, private), (GROUP_DM_Q, group_dm),
                                          (SHARED_Q, shared)):
                    before = len(posts_in(slack, channel))
                    bot.event(mention(question, channel, user=user))
                    slack.wait_for(lambda channel=channel, before=before: len(posts_in(slack, channel)) > before, timeout=60)
                dm = new_channel("D")
                slack.add_im(dm, user)
                bot.event(message(DM_Q, dm, channel_type="im", user=user))
                slack.wait_for(lambda dm=dm: posts_in(slack, dm), timeout=60)
                url = slack.response_url("ask-" + uuid.uuid4().hex[:8])
                bot.command(f"ask {COMMAND_Q}", user=user, channel=public, response_url=url)
                slack.wait_for(lambda url=url: slack.calls_to("response:" + url.rsplit("/", 1)[1]), timeout=60)
            bot.wait_idle()
            yield bot, own


def open_home(bot, slack, user: str) -> str:
    slack.homes.pop(user, None)
    bot.event({"type": "app_home_opened", "user": user, "channel": "D" + user, "tab": "home",
               "event_ts": f"{time.time():.6f}"})
    view = slack.wait_for(lambda: slack.homes.get(user))
    return all_text(view["blocks"]).split("Your last questions", 1)[0]


def test_the_query_log_records_where_each_question_was_asked(asked):
    _, own = asked
    expected = {PUBLIC_Q: ChannelKind.PUBLIC, PRIVATE_Q: ChannelKind.PRIVATE, GROUP_DM_Q: ChannelKind.PRIVATE,
                DM_Q: ChannelKind.DM, SHARED_Q: ChannelKind.SHARED, COMMAND_Q: ChannelKind.PUBLIC}
    for question, kind in expected.items():
        rows = query_rows(own, question=question)
        assert [(r.user_id, r.channel_kind, r.outcome) for r in rows] == [
            ("UPUB1", kind.value, "answered"), ("UPUB2", kind.value, "answered")], question


def test_only_the_question_asked_in_a_public_channel_is_an_app_home_example(asked, slack):
    bot, _ = asked
    examples = open_home(bot, slack, "UREADER")
    assert "Questions people ask" in examples and PUBLIC_Q in examples
    for question in NOT_EXAMPLES:
        assert question not in examples, question


def test_assistant_prompts_never_offer_a_question_from_a_private_place(asked, slack):
    bot, _ = asked
    channel, thread = new_channel("D"), new_ts()
    bot.event({"type": "assistant_thread_started", "event_ts": new_ts(), "assistant_thread": {
        "user_id": "UREADER", "channel_id": channel, "thread_ts": thread,
        "context": {"channel_id": "C0FOCUS", "team_id": "T0ACME", "enterprise_id": None}}})
    call = slack.wait_for(lambda: slack.calls_to("assistant.threads.setSuggestedPrompts", channel_id=channel))[0]
    messages = [p["message"] for p in call.params["prompts"]]
    assert messages[0] == PUBLIC_Q
    assert not set(messages) & set(NOT_EXAMPLES)


def test_rows_logged_before_kinds_were_kept_never_become_examples(index, tmp_path):
    """An older query log (no `channel_kind` column) migrated: its rows are of unknown kind, so
    two people's question there is no example; the same question asked twice in a public channel is."""
    from bot.migrations import migrate_bot
    from indexing.storage.migrations import migrate

    with isolated_index(index, tmp_path) as (own, _):
        public = sorted(d for d, a in question_log.document_access(own, _doc_ids(own)).items() if a == "public")
        answer = _answer("how many days of annual leave do I get?", public[0])
        with own.engine.begin() as conn:
            conn.execute(text("ALTER TABLE query_log DROP COLUMN channel_kind"))
            conn.execute(text("DROP TABLE _docent_migrations"))  # as before named migrations
            for user in ("UOLD1", "UOLD2"):
                conn.execute(text(
                    "INSERT INTO query_log (created_at, answer_id, surface, user_id, channel_id, question, found, outcome, "
                    "answer_text, doc_ids, scores, sources, signals, timings_ms, llm_used) VALUES (now(), :id, 'mention', "
                    ":user, 'C0OLD', :q, true, 'answered', 'x', :docs, '[]', '[]', '{}', '{}', false)"),
                    {"id": f"old-{user}", "user": user, "q": "an old question from before kinds?",
                     "docs": f'["{public[0]}"]'})
        migrate(own.engine)
        migrate_bot(own.engine)
        rows = query_rows(own, question="an old question from before kinds?")
        assert [r.channel_kind for r in rows] == ["", ""]
        assert example_questions(own, {"public"}) == []

        for user in ("UNEW1", "UNEW2"):
            question_log.log_query(own, surface="mention", user_id=user, question=answer.question, answer=answer,
                              channel_id="C0NEW", channel_kind=ChannelKind.PUBLIC)
            answer = _answer(answer.question, public[0])  # a new answer id for the second asker
        assert example_questions(own, {"public"}) == [answer.question]


def _doc_ids(index) -> list[str]:
    from sqlmodel import select

    from indexing.storage.index_tables import DocumentRecord

    with index.session() as s:
        return list(s.exec(select(DocumentRecord.id)))


def _answer(question: str, doc_id: str):
    from bot.answering.answer import Answer, Source

    sources = [Source(n=1, doc_id=doc_id, source="gaps", path="leave.md", title="Leave policy", heading_path=[],
                      url="", score=0.9, updated_at=None)]
    return Answer(question=question, text="25 days.", sources=sources, timings_ms={}, outcome="answered")


@pytest.mark.parametrize("info, kind", [
    ({"is_channel": True, "is_private": False}, ChannelKind.PUBLIC),
    ({"is_channel": True, "is_private": False, "is_shared": True, "is_org_shared": True}, ChannelKind.PUBLIC),
    ({"is_channel": True, "is_private": True}, ChannelKind.PRIVATE),
    ({"is_group": True}, ChannelKind.PRIVATE),
    ({"is_mpim": True, "is_private": True}, ChannelKind.PRIVATE),
    ({"is_im": True, "user": "U1"}, ChannelKind.DM),
    ({"is_channel": True, "is_private": False, "is_ext_shared": True}, ChannelKind.SHARED),
    ({"is_channel": True}, ChannelKind.UNKNOWN),  # Slack did not say it is public: it is not
    ({}, ChannelKind.UNKNOWN),
])
def test_a_conversation_is_public_only_when_slack_says_so(info, kind):
    from bot.slack.audiences import conversation_kind

    assert conversation_kind(info) == kind
