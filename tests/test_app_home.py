"""The App Home tab (`bot.slack.listeners.home_tab`, `bot.slack.home_blocks`) over real HTTP: signed `app_home_opened`
events and button clicks to the running app, `views.publish` answered by the local Slack API
(which refuses a Home view of more than 100 blocks, as Slack does).

The questions behind it are asked through Slack too (mentions answered by the bot and logged by
it), in a database of its own (tests/support/gaps_wiki.py): a public wiki, and one page in scope "hr"
that only channel CHR sees.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest
from sqlmodel import select

from tests.support.gaps_wiki import isolated_index

from tests.support.slack_harness import ADMIN, all_text, bot_settings, mention, new_channel, posts_in, running_bot

from bot.records.gaps import GapsReport, Period, QuestionGroup
from bot.slack.home_blocks import ACTION_RESYNC, MAX_BLOCKS, HomeData, SourceHealth, home_view

ANNUAL = "how many days of annual leave do I get?"
SALARY = "when are the engineering salary bands reviewed?"
DOGS = "can I bring my dog to the office?"
RESTRICTED_TITLE = "Salary bands 2026"


@pytest.fixture(scope="module")
def home(index, slack, tmp_path_factory):
    """The bot on its own database, with questions asked in Slack: U1 and U2 ask about annual
    leave in a public channel, U3 and U4 about salary bands in CHR (scope hr), U1 about dogs."""
    with isolated_index(index, tmp_path_factory.mktemp("home")) as (own, sources):
        with running_bot(bot_settings(slack, kb_sources=sources), own) as bot:
            public = new_channel()
            for user, question, channel in [("U1", ANNUAL, public), ("U2", ANNUAL, public), ("U3", SALARY, "CHR"),
                                            ("U4", SALARY, "CHR"), ("U1", DOGS, public)]:
                before = len(posts_in(slack, channel))
                bot.event(mention(question, channel, user=user))
                slack.wait_for(lambda channel=channel, before=before: len(posts_in(slack, channel)) > before)
            yield bot, own


def open_home(bot, slack, user: str) -> dict:
    """Send app_home_opened for `user`; returns the view published for them."""
    slack.homes.pop(user, None)
    bot.event({"type": "app_home_opened", "user": user, "channel": "D" + user, "tab": "home",
               "event_ts": f"{time.time():.6f}"})
    return slack.wait_for(lambda: slack.homes.get(user))


def test_salary_questions_were_answered_from_the_restricted_page(home, slack):
    answers = posts_in(slack, "CHR")
    assert answers and all(RESTRICTED_TITLE in json.dumps(a.params["blocks"]) for a in answers)


def test_member_view_shows_how_to_ask_examples_and_their_own_questions(home, slack):
    bot, _ = home
    view = open_home(bot, slack, "U1")
    text = all_text(view["blocks"])
    assert len(view["blocks"]) <= MAX_BLOCKS and view["type"] == "home"
    assert "Mention me in a channel" in text
    examples = text.split("Questions people ask", 1)[1].split("Your last questions", 1)[0]
    assert ANNUAL in examples
    mine = text.split("Your last questions", 1)[1]
    assert DOGS in mine and "not found" in mine.split(DOGS, 1)[1].split("\n", 1)[0]
    assert ANNUAL in mine and "Leave policy" in mine
    assert "Index health" not in text, "a member sees no admin sections"


def test_member_view_never_shows_restricted_page_titles(home, slack):
    bot, _ = home
    for user in ("U1", "U3"):  # U3 asked in CHR and got the page there; their Home is not CHR
        view = open_home(bot, slack, user)
        assert RESTRICTED_TITLE not in json.dumps(view)
        examples = all_text(view["blocks"]).split("Questions people ask", 1)[-1].split("Your last questions", 1)[0]
        assert SALARY not in examples, "a question answered from pages the member cannot see is no example"


def test_admin_view_shows_index_health_gaps_and_a_resync_button_per_source(home, slack):
    bot, _ = home
    view = open_home(bot, slack, ADMIN)
    text = all_text(view["blocks"])
    assert len(view["blocks"]) <= MAX_BLOCKS
    buttons = [b["accessory"]["value"] for b in view["blocks"] if b.get("accessory", {}).get("action_id") == ACTION_RESYNC]
    assert buttons == ["gaps", "gaps-hr"]
    assert "skipped `gaps:empty.md`" in text and "Last sync" in text
    assert "Top unanswered questions" in text and DOGS in text.split("Top unanswered questions", 1)[1]
    assert "Questions: 5 (+5)" in text
    assert RESTRICTED_TITLE in text.split("unchanged for", 1)[1], "admins see every stale page"


def test_admin_resync_button_runs_a_sync_and_republishes_the_home(home, slack):
    from bot.records.question_log import AdminAction
    from indexing.storage.index_tables import SyncRun

    bot, own = home
    slack.homes.pop(ADMIN, None)
    bot.interaction(click_resync(ADMIN, "gaps"))
    done = slack.wait_for(lambda: [c for c in slack.calls_to("views.publish", user_id=ADMIN)
                                   if "Resync of `gaps`:" in json.dumps(c.params["view"])], timeout=60)[0]
    assert "0 added" in json.dumps(done.params["view"]) and "unchanged" in json.dumps(done.params["view"])
    with own.session() as s:
        runs = s.exec(select(SyncRun).where(SyncRun.source == "gaps", SyncRun.trigger == "admin")).all()
        action = s.exec(select(AdminAction).where(AdminAction.user_id == ADMIN)).one()
    assert len(runs) == 1 and action.allowed and action.finished_at is not None


def test_member_resync_click_is_refused_and_recorded(home, slack):
    from bot.records.question_log import AdminAction
    from indexing.storage.index_tables import SyncRun

    bot, own = home
    bot.interaction(click_resync("U1", "gaps"))
    bot.wait_idle()
    with own.session() as s:
        attempts = s.exec(select(AdminAction).where(AdminAction.user_id == "U1")).all()
        runs = s.exec(select(SyncRun).where(SyncRun.trigger == "admin", SyncRun.source == "gaps")).all()
    assert [(a.allowed, a.result[:8]) for a in attempts] == [(False, "refused:")]
    assert len(runs) <= 1, "no sync started for the member (at most the admin test's)"


def test_a_view_with_far_too_much_to_show_is_cut_to_slacks_limits():
    now = datetime.now(timezone.utc)
    many = GapsReport(generated_at=now, days=7, stale_days=180, current=Period(now, now), previous=Period(now, now),
                      unanswered=[QuestionGroup("q" * 5000, 1, 1, 1, 0, now, 1)] * 10)
    data = HomeData(user=ADMIN, is_admin=True, examples=["e" * 900] * 5, mine=[], gaps=many,
                    sources=[SourceHealth(f"source-{i}", {"SUCCESS": i}, "Never synced.", "refused " * 200,
                                          [("FAILED", f"s:{j}.md", "x" * 900) for j in range(30)]) for i in range(150)])
    view = home_view(data)
    assert len(view["blocks"]) == MAX_BLOCKS and "shortened to fit Slack" in all_text(view["blocks"][-1:])
    assert all(len(b["text"]["text"]) <= 3000 for b in view["blocks"] if b["type"] == "section")
    assert all(len(b["text"]["text"]) <= 150 for b in view["blocks"] if b["type"] == "header")


def click_resync(user: str, source: str) -> dict:
    return {"type": "block_actions", "team": {"id": "T0ACME", "domain": "acme"},
            "user": {"id": user, "username": user.lower(), "team_id": "T0ACME"}, "api_app_id": "A0DOCENT",
            "token": "legacy", "container": {"type": "view", "view_id": "V0HOME"}, "trigger_id": f"{time.time()}.t",
            "view": {"id": "V0HOME", "type": "home", "blocks": []},
            "actions": [{"action_id": ACTION_RESYNC, "block_id": "b", "value": source, "type": "button",
                         "action_ts": str(time.time())}]}
