"""Verified answers captured in Slack (`bot.slack.listeners.verify`) over real HTTP: the **Verify as the answer**
message shortcut and the App Home's **Verify** button, sent signed to the running app as Slack sends
them; the form opened and filled in through the local Slack API (`views.open`, `views.update`);
its submission stored in `verified_answers` of a database of its own (tests/support/gaps_wiki.py:
scope "public", and "hr" visible in channel CHR only).

Who may verify: KB_ADMIN_USERS, and each channel's `verifiers` — here U0LEAD1 and the user group
S0LEADS1 in CHR, the group alone in PUB, U0LEAD1 in the Slack Connect channel SHARED.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from sqlmodel import select

from tests.support.gaps_wiki import isolated_index
from tests.support.slack_api_server import BOT_USER, TEAM
from tests.support.slack_harness import ADMIN, bot_settings, mention, new_channel, new_ts, posts_in, running_bot

from bot import messages
from bot.records import AnsweredGap, question_log
from bot.records.question_log import AdminAction
from bot.slack import verify_form
from bot.slack.home_blocks import HomeData, home_view
from bot.verified import store
from indexing.storage import utcnow

LEAD, GROUPIE, STRANGER = "U0LEAD1", "U0GROUPIE1", "U0STRANGER1"
GROUP = "S0LEADS1"
PUB, SHARED = new_channel(), new_channel()
BADGE = "where do I pick up my new office badge?"
BADGE_ANSWER = "At the front desk on floor 2 — bring ID. See <https://intranet.example/badges|the badge page>."


@pytest.fixture(scope="module")
def verifying(index, slack, tmp_path_factory):
    with isolated_index(index, tmp_path_factory.mktemp("verify")) as (own, sources):
        with sources.open("a", encoding="utf-8") as f:
            f.write(f'\n[channels.CHR]\nverifiers = ["{LEAD}", "{GROUP}"]\n'
                    f'\n[channels.{PUB}]\nverifiers = ["{GROUP}"]\n'
                    f'\n[channels.{SHARED}]\nverifiers = ["{LEAD}"]\n')
        slack.set_usergroup(GROUP, [GROUPIE])
        slack.share_channel(SHARED)
        with running_bot(bot_settings(slack, kb_sources=sources), own) as bot:
            yield bot, own


def thread(slack, channel: str) -> tuple[dict, dict]:
    """A person's question and a colleague's answer in its thread (what `conversations.replies` returns)."""
    parent_ts = new_ts()
    parent = {"type": "message", "user": "U0ASKER1", "text": BADGE, "ts": parent_ts, "thread_ts": parent_ts}
    reply = {"type": "message", "user": "U0BOB1", "text": BADGE_ANSWER, "ts": new_ts(), "thread_ts": parent_ts}
    slack.add_thread(channel, parent_ts, [parent, reply])
    return parent, reply


def shortcut(user: str, channel: str, message: dict) -> dict:
    return {"type": "message_action", "token": "legacy", "action_ts": f"{time.time():.6f}", "callback_id": "verify_answer",
            "team": {"id": TEAM, "domain": "acme"}, "user": {"id": user, "name": user.lower(), "team_id": TEAM},
            "channel": {"id": channel, "name": "help"}, "trigger_id": f"{time.time()}.trigger",
            "response_url": "https://hooks.slack.invalid/x", "message_ts": message["ts"], "message": message,
            "is_enterprise_install": False}


def form_for(bot, slack, payload: dict) -> dict:
    """Send the shortcut (or button); the form as it stands once Docent filled it in."""
    before = len(slack.calls_to("views.update"))
    assert bot.interaction(payload).status_code == 200
    opened = slack.wait_for(lambda: slack.calls_to("views.update")[before:])[0]
    return opened.params["view"] | {"id": opened.params["view_id"]}


def inputs(view: dict) -> dict[str, dict]:
    return {b["block_id"]: b["element"] for b in view["blocks"] if b["type"] == "input"}


def text_of(view: dict) -> str:
    return json.dumps(view, ensure_ascii=False)


def submit(bot, view: dict, user: str, *, question: str, answer: str, scopes: list[str], review_by: str,
           more: str = ""):
    values = {verify_form.QUESTION: {"value": {"type": "plain_text_input", "value": question}},
              verify_form.ANSWER: {"value": {"type": "plain_text_input", "value": answer}},
              verify_form.SCOPES: {"value": {"type": "checkboxes", "selected_options": [
                  {"text": {"type": "plain_text", "text": s}, "value": s} for s in scopes]}},
              verify_form.REVIEW_BY: {"value": {"type": "datepicker", "selected_date": review_by}},
              verify_form.MORE: {"value": {"type": "plain_text_input", "value": more}}}
    payload = {"type": "view_submission", "team": {"id": TEAM, "domain": "acme"},
               "user": {"id": user, "username": user.lower(), "team_id": TEAM}, "api_app_id": "A0DOCENT",
               "token": "legacy", "trigger_id": f"{time.time()}.trigger",
               "view": {**view, "state": {"values": values}}, "response_urls": []}
    return bot.interaction(payload)


def verified(own) -> list:
    with own.session() as s:
        return store.listing(s, retired=True)


def admin_actions(own, user: str) -> list[AdminAction]:
    with own.session() as s:
        return list(s.exec(select(AdminAction).where(AdminAction.user_id == user, AdminAction.action == "answers add")))


def in_days(days: int) -> str:
    return (utcnow().date() + timedelta(days=days)).isoformat()


def test_a_verifiers_shortcut_opens_the_form_prefilled_from_the_thread(verifying, slack):
    bot, _ = verifying
    parent, reply = thread(slack, "CHR")
    view = form_for(bot, slack, shortcut(LEAD, "CHR", reply))
    fields = inputs(view)
    assert fields["question"]["initial_value"] == BADGE
    assert fields["answer"]["initial_value"] == ("At the front desk on floor 2 — bring ID. "
                                                 "See [the badge page](https://intranet.example/badges).")
    offered = [o["value"] for o in fields["scopes"]["options"]]
    assert offered == ["hr", "public"] and fields["scopes"]["initial_options"] == fields["scopes"]["options"]
    assert fields["review_by"]["initial_date"] == in_days(180)
    assert verify_form.Origin.of(view["private_metadata"]) == verify_form.Origin("CHR", reply["ts"], parent["ts"])
    assert view["submit"]["text"] == "Verify"


def test_submitting_the_form_stores_the_answer_with_the_chosen_scopes_and_says_so_in_the_thread(verifying, slack):
    bot, own = verifying
    parent, reply = thread(slack, "CHR")
    view = form_for(bot, slack, shortcut(LEAD, "CHR", reply))
    before = {a.id for a in verified(own)}
    response = submit(bot, view, LEAD, question=BADGE, answer="At the front desk on floor 2.", scopes=["hr"],
                      review_by=in_days(30), more="how do I get a new badge?\n\n")
    assert response.status_code == 200 and response.text == ""  # an empty ack closes the form
    said = slack.wait_for(lambda: [c for c in posts_in(slack, "CHR") if c.params.get("thread_ts") == parent["ts"]])[0]
    assert said.params["text"] == messages.verified_in_thread(LEAD, BADGE)
    new = [a for a in verified(own) if a.id not in before]
    assert [(a.questions, a.answer, a.scopes, a.verified_by, a.channel_id, a.message_ts, a.review_by.isoformat())
            for a in new] == [([BADGE, "how do I get a new badge?"], "At the front desk on floor 2.", ["hr"], LEAD,
                               "CHR", reply["ts"], in_days(30))]
    assert [(a.allowed, a.result) for a in admin_actions(own, LEAD)][-1] == (True, f"{new[0].id} (Slack, CHR/{reply['ts']})")


def test_a_message_verified_again_updates_its_answer_rather_than_adding_another(verifying, slack):
    """The same reply verified twice (a second wording, the text corrected): one live answer, both
    wordings, the text and review date as verified the second time — never two answers to choose from."""
    bot, own = verifying
    _, reply = thread(slack, "CHR")
    before = {a.id for a in verified(own)}
    first = submit(bot, form_for(bot, slack, shortcut(LEAD, "CHR", reply)), LEAD, question=BADGE,
                   answer="At the front desk on floor 2.", scopes=["hr"], review_by=in_days(30))
    assert first.status_code == 200
    slack.wait_for(lambda: [a for a in verified(own) if a.id not in before])
    second = submit(bot, form_for(bot, slack, shortcut(LEAD, "CHR", reply)), LEAD, question="lost my badge, where do I get one?",
                    answer="At the front desk on floor 3 since May.", scopes=["hr"], review_by=in_days(60))
    assert second.status_code == 200
    slack.wait_for(lambda: [a for a in verified(own) if a.id not in before and a.review_by.isoformat() == in_days(60)])
    new = [a for a in verified(own) if a.id not in before]
    assert [(a.questions, a.answer, a.review_by.isoformat(), a.retired) for a in new] == [
        ([BADGE, "lost my badge, where do I get one?"], "At the front desk on floor 3 since May.", in_days(60), False)]


def test_a_member_of_a_verifier_group_may_verify_and_is_offered_only_the_channels_scopes(verifying, slack):
    bot, _ = verifying
    _, reply = thread(slack, PUB)
    fields = inputs(form_for(bot, slack, shortcut(GROUPIE, PUB, reply)))
    assert [o["value"] for o in fields["scopes"]["options"]] == ["public"]


def test_docents_own_answer_is_verified_with_the_question_it_answered(verifying, slack):
    bot, _ = verifying
    channel = new_channel()
    asked = mention("how many days of annual leave do I get?", channel)
    bot.event(asked)
    slack.wait_for(lambda: posts_in(slack, channel))
    bot.wait_idle()  # the answer remembered (answer_messages) and logged
    message = next(m for (c, _), m in list(slack.messages.items()) if c == channel and m.get("thread_ts") == asked["ts"])
    assert message["user"] == BOT_USER
    fields = inputs(form_for(bot, slack, shortcut(ADMIN, channel, message)))
    assert fields["question"]["initial_value"] == "how many days of annual leave do I get?"
    assert "25 days of annual leave" in fields["answer"]["initial_value"]
    assert "[1]" not in fields["answer"]["initial_value"]


def test_a_non_verifier_is_refused_and_nothing_is_stored(verifying, slack):
    bot, own = verifying
    _, reply = thread(slack, "CHR")
    before = len(verified(own))
    view = form_for(bot, slack, shortcut(STRANGER, "CHR", reply))
    assert messages.VERIFY_NOT_A_VERIFIER in text_of(view) and "submit" not in view and not inputs(view)
    # a submission of the verifier's form, replayed by someone else, is refused too
    form = form_for(bot, slack, shortcut(LEAD, "CHR", reply))
    response = submit(bot, form, STRANGER, question=BADGE, answer="x y z", scopes=["public"], review_by=in_days(9))
    assert response.json() == {"response_action": "errors", "errors": {"question": messages.VERIFY_NOT_A_VERIFIER}}
    bot.wait_idle()
    assert len(verified(own)) == before
    assert [(a.allowed, a.result) for a in admin_actions(own, STRANGER)] == [
        (False, "refused: not a verifier in CHR")] * 2


def test_a_scope_the_channel_does_not_see_is_refused_on_submit(verifying, slack):
    bot, own = verifying
    _, reply = thread(slack, PUB)
    view = form_for(bot, slack, shortcut(GROUPIE, PUB, reply))
    before = len(verified(own))
    response = submit(bot, view, GROUPIE, question=BADGE, answer="At the front desk.", scopes=["public", "hr"],
                      review_by=in_days(9))
    assert response.json() == {"response_action": "errors",
                               "errors": {"scopes": messages.verify_wider(["hr"], ["public"])}}
    bot.wait_idle()
    assert len(verified(own)) == before
    assert [(a.allowed, a.result) for a in admin_actions(own, GROUPIE)] == [
        (False, "refused: a scope the channel does not see: hr")]


def test_nothing_is_verified_from_a_slack_connect_channel(verifying, slack):
    bot, own = verifying
    _, reply = thread(slack, SHARED)
    before = len(verified(own))
    for user in (LEAD, ADMIN):  # its own verifier, and an admin, alike
        view = form_for(bot, slack, shortcut(user, SHARED, reply))
        assert messages.VERIFY_NOT_HERE in text_of(view) and not inputs(view)
    forged = verify_form.form_view(verify_form.Origin(SHARED, reply["ts"], reply["thread_ts"]), verify_form.Prefill(
        question=BADGE, answer="x", scopes=["public"], review_by=utcnow().date()))
    response = submit(bot, forged, LEAD, question=BADGE, answer="At the front desk.", scopes=["public"],
                      review_by=in_days(9))
    assert response.json()["errors"] == {"question": messages.VERIFY_NOT_HERE}
    bot.wait_idle()
    assert len(verified(own)) == before


def test_the_app_homes_answered_gap_has_a_verify_button_opening_the_same_form(verifying, slack):
    bot, own = verifying
    thread_ts, answer_ts = new_ts(), new_ts()
    question_log.add_answered_gap(own, AnsweredGap(
        channel_id=PUB, thread_ts=thread_ts, question="is there a bike shed?", answer="Yes, behind building B.",
        answered_by="U0BOB1", asked_by="U0ASKER1", answer_ts=answer_ts, scopes=["public"], channel_kind="public",
        answered_at=utcnow(), added_by="U0ASKER1"))
    slack.homes.pop(ADMIN, None)
    bot.event({"type": "app_home_opened", "user": ADMIN, "channel": "D" + ADMIN, "tab": "home",
               "event_ts": f"{time.time():.6f}"})
    home = slack.wait_for(lambda: slack.homes.get(ADMIN))
    buttons = [b["accessory"] for b in home["blocks"] if b.get("accessory", {}).get("action_id") == "docent_verify_gap"]
    assert [b["value"] for b in buttons] == [f"{PUB} {thread_ts}"]

    click = {"type": "block_actions", "team": {"id": TEAM, "domain": "acme"}, "user": {"id": ADMIN, "team_id": TEAM},
             "api_app_id": "A0DOCENT", "token": "legacy", "container": {"type": "view", "view_id": home["id"]},
             "trigger_id": f"{time.time()}.t", "view": home,
             "actions": [{**buttons[0], "block_id": "b", "action_ts": str(time.time())}]}
    view = form_for(bot, slack, click)
    fields = inputs(view)
    assert (fields["question"]["initial_value"], fields["answer"]["initial_value"]) == ("is there a bike shed?",
                                                                                       "Yes, behind building B.")
    assert [o["value"] for o in fields["scopes"]["options"]] == ["public"]
    assert verify_form.Origin.of(view["private_metadata"]) == verify_form.Origin(PUB, answer_ts, thread_ts, gap=True)


def test_the_verify_button_is_only_on_gaps_the_viewer_may_verify():
    from bot.records.gaps import AnsweredByPeople, GapsReport, Period

    now = utcnow()
    gap = AnsweredByPeople("q?", "a.", "U0BOB1", "U0ASKER1", "U0ASKER1", PUB, "1.2", "", now, now, ["public"], "public")
    report = GapsReport(generated_at=now, days=7, stale_days=180, current=Period(now, now), previous=Period(now, now),
                        answered_by_people=[gap])
    shown = [home_view(HomeData(user=ADMIN, is_admin=True, examples=[], mine=[], gaps=report, verifiable=allowed))
             for allowed in (set(), {(PUB, "1.2")})]
    assert ["docent_verify_gap" in json.dumps(v) for v in shown] == [False, True]


# -- who may verify: the sources file's `verifiers`, and the rule -----------------------------------


def test_a_channels_verifiers_are_read_from_the_sources_file(tmp_path):
    from sources import read_sources_file
    from tests.test_channels import write

    path = write(tmp_path, '[channels.C0HELP1]\nverifiers = ["S0LEADS1", "U0DANA1"]\n')
    assert read_sources_file(path).channels.get("C0HELP1").verifiers == ("S0LEADS1", "U0DANA1")
    assert read_sources_file(path).channels.get("C0OTHER1").verifiers == ()


@pytest.mark.parametrize("value, message", [
    ('["@leads"]', "[channels.C0HELP1]: verifiers: '@leads' is not a Slack user-group id (S…) or user id (U…)"),
    ('"S0LEADS1"', "[channels.C0HELP1]: verifiers must be a list"),
])
def test_a_bad_verifiers_entry_stops_docent_with_the_file_table_and_key(tmp_path, value, message):
    from sources import SourcesError, read_sources_file
    from tests.test_channels import write

    path = write(tmp_path, f"[channels.C0HELP1]\nverifiers = {value}\n")
    with pytest.raises(SourcesError) as caught:
        read_sources_file(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_admins_verify_everywhere_and_a_channels_verifiers_only_there():
    from bot.verified import may_verify
    from sources import ChannelSettings

    here = ChannelSettings(channel="C0HELP1", verifiers=("U0DANA1", "S0LEADS1"))
    elsewhere = ChannelSettings(channel="C0OTHER1")
    admins = {"UADMIN"}
    assert [may_verify(u, g, here, admins) for u, g in [("UADMIN", ()), ("U0DANA1", ()), ("U0EVE1", ["S0LEADS1"]),
                                                         ("U0EVE1", ["S0OTHER1"]), ("U0EVE1", ()), ("", ["S0LEADS1"])]] \
        == [True, True, True, False, False, False]
    assert [may_verify(u, ["S0LEADS1"], elsewhere, admins) for u in ("UADMIN", "U0DANA1")] == [True, False]


def test_kb_channel_shows_who_verifies_answers_there():
    from bot.slack.listeners.channel_command import channel_text
    from sources import ChannelSettings

    assert "Verify answers: `S0LEADS1`, `U0DANA1`" in channel_text(ChannelSettings("C0HELP1", verifiers=("S0LEADS1", "U0DANA1")))
    unset = channel_text(ChannelSettings("C0HELP1"))
    assert "Verify answers: `KB_ADMIN_USERS` only" in unset and "the defaults apply" in unset
