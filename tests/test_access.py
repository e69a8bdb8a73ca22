"""Channel-safe access scopes: a restricted page is never retrieved, cited or hinted at where its
scope is not visible — in mentions, thread follow-ups, DMs, `/kb ask`, Share and `kb ask` — and
is found where it is.

The restricted page's text matches the question exactly, so only the access filter keeps it out.
The bot runs as in tests/test_slack.py (real signed HTTP, the local Slack Web API); its sources
file grants scope "hr-private" to one channel, one user and one user group, and the sample wiki
(scope "sample") everywhere.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.corpora import SAMPLE_WIKI
from tests.support.slack_api_server import FakeSlack
from tests.support.slack_harness import (
    all_text, bot_settings, button, click, envelope, mention, message, new_channel, new_ts, posts_in, query_rows,
    running_bot, wait_until)

from bot.slack import blocks
from bot.messages import NOT_HERE, SHARE_REFUSED
from bot.slack.audiences import SlackAccess, shared_with_other_organisations
from bot.records.question_log import document_access
from sources import (
    AccessConfig,
    ScopeRule,
    SourceConfig,
    SourcesError,
    load_access,
    load_sources,
    open_connector,
    read_sources_file,
    visible_scopes,
)
from connectors.space_access import SpaceScoped
from indexing.ingest import indexed_sources
from indexing.ingest.runner import SyncRunner

SCOPE = "hr-private"
SOURCE = "access-test-hr"
DOC_ID = f"{SOURCE}:payroll/kestrel-ledger.md"
PAGE = """# Kestrel ledger

## Zephyrine retention bonus

The Zephyrine retention bonus for the Oslo payroll team is 4,750 kroner per quarter, paid to staff
who joined before the Quillfeather merger.
"""
QUESTION = "What is the Zephyrine retention bonus for the Oslo payroll team?"
# what only the restricted page could reveal (the question's own words are the asker's)
MARKERS = ("Kestrel", "kestrel", "4,750", "kroner", "Quillfeather", DOC_ID)

HR_CHANNEL = "C0HRTEAM" + uuid.uuid4().hex[:6].upper()
HR_USER = "U0HRALICE"
HR_GROUP = "S0HRSTAFF"
GROUP_MEMBER = "U0HRBOB"
OUTSIDER = "U0SALES"
CONNECT_CHANNEL = "C0PARTNER" + uuid.uuid4().hex[:4].upper()  # configured for hr-private, but Slack Connect


def sources_file(folder: Path, restricted: Path, shared_channels: str = "public") -> Path:
    path = folder / f"kb-{shared_channels}.toml"
    path.write_text(f"""
shared_channels = "{shared_channels}"

[[source]]
name = "{SOURCE}"
location = "{restricted}"
access = "{SCOPE}"

[[source]]
name = "sample"
location = "{SAMPLE_WIKI}"
exclude = ["*.jsonl"]
access = "sample"

[scopes.{SCOPE}]
channels = ["{HR_CHANNEL}", "{CONNECT_CHANNEL}"]
users = ["{HR_USER}"]
usergroups = ["{HR_GROUP}"]

[scopes.sample]
channels = ["*"]
users = ["*"]
""")
    return path


@pytest.fixture(scope="module")
def access_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("access")
    restricted = folder / "hr-wiki"
    (restricted / "payroll").mkdir(parents=True)
    (restricted / "payroll" / "kestrel-ledger.md").write_text(PAGE)
    return {"public": sources_file(folder, restricted), "none": sources_file(folder, restricted, "none"),
            "folder": folder}


@pytest.fixture(scope="module")
def restricted_synced(index, sample_synced, access_files):
    """The restricted page, synced under scope hr-private; removed from the shared index afterwards."""
    runner = SyncRunner(index, load_sources(access_files["public"]))
    report = runner.sync(SOURCE)
    assert report.added + report.unchanged == 1 and not report.failed
    assert document_access(index, [DOC_ID]) == {DOC_ID: SCOPE}
    yield
    indexed_sources.forget(index, SOURCE)


@pytest.fixture(scope="module")
def slack():
    server = FakeSlack().start()
    server.set_usergroup(HR_GROUP, [GROUP_MEMBER])
    server.share_channel(CONNECT_CHANNEL)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def bot(slack, index, restricted_synced, access_files):
    with running_bot(bot_settings(slack, kb_sources=access_files["public"]), index) as running:
        yield running


# -- what leaked, if anything ------------------------------------------------------------------


def leaks(*things) -> list[str]:
    """The markers of the restricted page found in these Slack calls, rows or strings."""
    found = []
    for thing in things:
        text = thing if isinstance(thing, str) else json.dumps(getattr(thing, "params", None) or _row(thing), default=str)
        found += [m for m in MARKERS if m in text]
    return found


def _row(row) -> dict:
    return {"answer": row.answer_text, "doc_ids": row.doc_ids, "sources": row.sources, "note": row.note}


def assert_nothing_leaked(index, slack, caplog, channel: str, response: str | None = None) -> list:
    """Nothing the bot sent to `channel` (or through `response`), logged, or recorded for it reveals
    the page; the answers' nearest pages are all from scopes visible there. Returns the rows."""
    calls = [c for c in slack.calls if c.params.get("channel") == channel]
    if response:
        calls += slack.calls_to("response:" + response)
    rows = query_rows(index, channel_id=channel)
    assert calls and rows, "the bot answered"
    assert not leaks(*calls, *rows)
    assert not leaks(*[r.getMessage() for r in caplog.records])
    for row in rows:
        assert DOC_ID not in row.doc_ids
        assert set(document_access(index, row.doc_ids).values()) <= {"public", "sample"}
    return rows


def answered_with_the_page(call) -> bool:
    text = all_text(call.params["blocks"])
    return "4,750 kroner" in text and "Kestrel ledger" in text


def ask_privately(bot, slack, question: str, channel: str, user: str):
    url = slack.response_url("ask-" + uuid.uuid4().hex[:8])
    ack = bot.command(f"ask {question}", user=user, channel=channel, response_url=url)
    assert ack.status_code == 200
    name = "response:" + url.rsplit("/", 1)[1]
    return name.removeprefix("response:"), slack.wait_for(lambda: slack.calls_to(name))[0]


# -- Slack: where the scope is not visible ------------------------------------------------------


def test_mention_in_a_channel_without_access_never_finds_the_page_whoever_asks(bot, slack, index, caplog):
    caplog.set_level(logging.DEBUG)
    channel = new_channel()
    bot.event(mention(QUESTION, channel, user=OUTSIDER))
    bot.event(mention(QUESTION + " ", channel, user=HR_USER))  # the HR user asking there sees no more
    slack.wait_for(lambda: len(posts_in(slack, channel)) == 2)
    bot.wait_idle()
    rows = assert_nothing_leaked(index, slack, caplog, channel)
    assert len(rows) == 2 and all(row.doc_ids for row in rows), "nearest pages come from the visible scopes"


def test_thread_follow_up_without_access_never_finds_the_page(bot, slack, index, caplog):
    caplog.set_level(logging.DEBUG)
    channel = new_channel()
    first = mention("a payroll question", channel, user=HR_USER)
    bot.event(first)
    slack.wait_for(lambda: posts_in(slack, channel))
    bot.event(message(QUESTION, channel, user=HR_USER, thread_ts=first["ts"]))
    slack.wait_for(lambda: posts_in(slack, channel)[1:])
    bot.wait_idle()
    rows = assert_nothing_leaked(index, slack, caplog, channel)
    assert [r.surface for r in rows] == ["mention", "thread"]


def test_dm_from_a_user_without_access_never_finds_the_page(bot, slack, index, caplog):
    caplog.set_level(logging.DEBUG)
    dm = new_channel("D")
    slack.add_im(dm, OUTSIDER)
    bot.event(message(QUESTION, dm, channel_type="im", user=OUTSIDER))
    slack.wait_for(lambda: posts_in(slack, dm))
    bot.wait_idle()
    assert [r.surface for r in assert_nothing_leaked(index, slack, caplog, dm)] == ["dm"]


def test_dm_whose_details_slack_will_not_give_is_treated_as_shared_public_only(bot, slack, index, caplog):
    caplog.set_level(logging.DEBUG)
    dm = new_channel("D")  # not registered: conversations.info says channel_not_found
    bot.event(message(QUESTION, dm, channel_type="im", user=HR_USER))
    slack.wait_for(lambda: posts_in(slack, dm))
    bot.wait_idle()
    rows = assert_nothing_leaked(index, slack, caplog, dm)
    assert set(document_access(index, rows[0].doc_ids).values()) <= {"public"}
    assert any("treating it as shared" in r.getMessage() for r in caplog.records)


def test_kb_ask_in_a_channel_without_access_never_finds_the_page_even_for_the_hr_user(bot, slack, index, caplog):
    caplog.set_level(logging.DEBUG)
    channel = new_channel()
    response, private = ask_privately(bot, slack, QUESTION, channel, HR_USER)
    bot.wait_idle()
    assert private.params["response_type"] == "ephemeral"
    assert [r.surface for r in assert_nothing_leaked(index, slack, caplog, channel, response)] == ["command"]


def test_slack_connect_channel_sees_public_only_even_if_configured(bot, slack, index, caplog):
    caplog.set_level(logging.DEBUG)
    bot.event(mention(QUESTION, CONNECT_CHANNEL, user=HR_USER))
    post = slack.wait_for(lambda: posts_in(slack, CONNECT_CHANNEL))[0]
    response, _ = ask_privately(bot, slack, QUESTION, CONNECT_CHANNEL, HR_USER)
    bot.wait_idle()
    rows = assert_nothing_leaked(index, slack, caplog, CONNECT_CHANNEL, response)
    assert all(set(document_access(index, r.doc_ids).values()) <= {"public"} for r in rows)
    assert not leaks(post)


def test_event_envelope_saying_ext_shared_is_enough_to_restrict(bot, slack, index, caplog):
    caplog.set_level(logging.DEBUG)
    body = envelope(mention(QUESTION, HR_CHANNEL, user=HR_USER))
    body["is_ext_shared_channel"] = True  # Slack says so, whatever conversations.info cached
    ts = body["event"]["ts"]
    assert bot.post(json.dumps(body).encode(), "application/json").status_code == 200
    post = slack.wait_for(lambda: [c for c in posts_in(slack, HR_CHANNEL) if c.params.get("thread_ts") == ts])[0]
    bot.wait_idle()
    row = query_rows(index, message_ts=ts)[0]
    assert not leaks(post, row) and DOC_ID not in row.doc_ids


def test_shared_channels_none_answers_nothing_there(slack, index, restricted_synced, access_files, caplog):
    caplog.set_level(logging.DEBUG)
    with running_bot(bot_settings(slack, kb_sources=access_files["none"]), index) as strict:
        event = mention(QUESTION, CONNECT_CHANNEL, user=HR_USER)
        strict.event(event)
        post = slack.wait_for(lambda: [c for c in posts_in(slack, CONNECT_CHANNEL)
                                       if c.params.get("thread_ts") == event["ts"]])[0]
        response, private = ask_privately(strict, slack, QUESTION, CONNECT_CHANNEL, HR_USER)
        strict.wait_idle()
    assert all_text(post.params["blocks"]) == NOT_HERE and private.params["text"] == NOT_HERE
    assert not button(post.params["blocks"], blocks.ACTION_VOTE_UP)
    assert not query_rows(index, message_ts=event["ts"]), "nothing was searched"
    assert not leaks(post, private)


# -- Slack: where it is visible -----------------------------------------------------------------


def test_mention_in_the_hr_channel_finds_the_page_whoever_asks(bot, slack, index):
    event = mention(QUESTION, HR_CHANNEL, user=OUTSIDER)
    bot.event(event)
    post = slack.wait_for(lambda: [c for c in posts_in(slack, HR_CHANNEL) if c.params.get("thread_ts") == event["ts"]])[0]
    assert answered_with_the_page(post)
    row = wait_until(lambda: query_rows(index, message_ts=event["ts"]))[0]
    assert row.found and row.doc_ids[0] == DOC_ID


def test_thread_follow_up_in_the_hr_channel_finds_the_page(bot, slack, index):
    first = mention("a payroll question", HR_CHANNEL, user=OUTSIDER)
    bot.event(first)
    slack.wait_for(lambda: [c for c in posts_in(slack, HR_CHANNEL) if c.params.get("thread_ts") == first["ts"]])
    follow_up = message(QUESTION, HR_CHANNEL, user=OUTSIDER, thread_ts=first["ts"])
    bot.event(follow_up)
    row = wait_until(lambda: query_rows(index, message_ts=follow_up["ts"]))[0]
    assert row.surface == "thread" and row.found and row.doc_ids[0] == DOC_ID


@pytest.mark.parametrize("user", [HR_USER, GROUP_MEMBER], ids=["listed-user", "user-group-member"])
def test_dm_from_a_user_with_access_finds_the_page(bot, slack, index, user):
    dm = new_channel("D")
    slack.add_im(dm, user)
    bot.event(message(QUESTION, dm, channel_type="im", user=user))
    post = slack.wait_for(lambda: posts_in(slack, dm))[0]
    assert answered_with_the_page(post)
    assert query_rows(index, channel_id=dm)[0].doc_ids[0] == DOC_ID


def test_kb_ask_finds_the_page_in_the_hr_channel_and_in_the_hr_users_dm(bot, slack, index):
    _, in_channel = ask_privately(bot, slack, QUESTION, HR_CHANNEL, OUTSIDER)
    dm = new_channel("D")
    slack.add_im(dm, HR_USER)
    _, in_dm = ask_privately(bot, slack, QUESTION, dm, HR_USER)
    assert answered_with_the_page(in_channel) and answered_with_the_page(in_dm)
    _, not_their_dm = ask_privately(bot, slack, QUESTION, dm, OUTSIDER)  # someone else's DM: channel rules
    assert not leaks(not_their_dm)


def status_in(bot, slack, channel: str, user: str) -> str:
    """The text `/kb status` answers in `channel` when `user` asks."""
    name = "status-" + uuid.uuid4().hex[:8]
    assert bot.command("status", user=user, channel=channel, response_url=slack.response_url(name)).status_code == 200
    return slack.wait_for(lambda: slack.calls_to("response:" + name))[0].params["text"]


def registry_counts(index, scopes: set[str]) -> tuple[dict[str, int], int]:
    """Documents by status and their chunks, in these scopes, as the registry records them."""
    from sqlmodel import select

    from indexing.storage.index_tables import DocumentRecord

    with index.session() as s:
        records = s.exec(select(DocumentRecord).where(DocumentRecord.access.in_(scopes))).all()
    by_status: dict[str, int] = {}
    for record in records:
        by_status[record.status.value.lower()] = by_status.get(record.status.value.lower(), 0) + 1
    return by_status, sum(r.chunk_count for r in records)


def reported_counts(text: str) -> tuple[dict[str, int], int]:
    docs = re.search(r"Documents searchable here: (.*)", text).group(1)
    by_status = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", docs)}
    return by_status, int(re.search(r"Chunks: (\d+)", text).group(1))


def test_kb_status_counts_only_the_scopes_visible_where_it_is_asked(bot, slack, index):
    """The index also holds other test modules' documents under scopes of their own: none of them,
    nor the restricted page, may be counted or named where their scope is not visible."""
    everywhere = {"public", "sample"}
    outside = status_in(bot, slack, new_channel(), HR_USER)  # the HR user sees no more in another channel
    in_hr = status_in(bot, slack, HR_CHANNEL, OUTSIDER)
    assert reported_counts(outside) == registry_counts(index, everywhere)
    assert reported_counts(in_hr) == registry_counts(index, everywhere | {SCOPE})
    assert reported_counts(in_hr)[0]["success"] == reported_counts(outside)[0]["success"] + 1  # the page
    assert "Last sync of `sample`" in outside and f"Last sync of `{SOURCE}`" in in_hr
    assert not leaks(outside) and SCOPE not in outside and SOURCE not in outside


# -- Share -------------------------------------------------------------------------------------


def share(bot, slack, answer_id: str, channel: str, user: str):
    name = f"share-{answer_id}-{channel}"
    bot.interaction(click(blocks.ACTION_SHARE, answer_id, user=user, channel=channel,
                          response_url=slack.response_url(name), ephemeral=True))
    return slack.wait_for(lambda: slack.calls_to("response:" + name))


def test_share_into_a_channel_lacking_the_scope_is_refused_and_into_one_with_it_is_posted(bot, slack, index, caplog):
    caplog.set_level(logging.DEBUG)
    _, private = ask_privately(bot, slack, QUESTION, HR_CHANNEL, HR_USER)
    assert answered_with_the_page(private)
    answer_id = button(private.params["blocks"], blocks.ACTION_SHARE)["value"]
    general = new_channel()
    caplog.clear()  # the granted answer above is in the debug logs; the refusal must add nothing

    refused = share(bot, slack, answer_id, general, HR_USER)
    bot.wait_idle()
    assert [c.params["text"] for c in refused] == [SHARE_REFUSED]
    assert refused[0].params["response_type"] == "ephemeral" and not refused[0].params.get("delete_original")
    assert not [c for c in slack.calls if c.params.get("channel") == general and c.method.startswith("chat.")], \
        "nothing posted there"
    assert not leaks(*[r.getMessage() for r in caplog.records])

    posted = share(bot, slack, answer_id, HR_CHANNEL, HR_USER)
    assert posted[-1].params.get("delete_original") is True
    public = [c for c in posts_in(slack, HR_CHANNEL) if "Shared by" in all_text(c.params["blocks"])]
    assert public and answered_with_the_page(public[-1])


def test_share_of_a_dm_answer_into_a_channel_is_refused(bot, slack):
    dm = new_channel("D")
    slack.add_im(dm, GROUP_MEMBER)
    _, private = ask_privately(bot, slack, QUESTION, dm, GROUP_MEMBER)
    answer_id = button(private.params["blocks"], blocks.ACTION_SHARE)["value"]
    assert [c.params["text"] for c in share(bot, slack, answer_id, new_channel(), GROUP_MEMBER)] == [SHARE_REFUSED]
    assert share(bot, slack, answer_id, dm, GROUP_MEMBER)[-1].params.get("delete_original") is True


def test_share_of_an_answer_without_restricted_pages_works_anywhere(bot, slack):
    channel = new_channel()
    _, private = ask_privately(bot, slack, QUESTION, channel, OUTSIDER)
    answer_id = button(private.params["blocks"], blocks.ACTION_SHARE)["value"]
    assert share(bot, slack, answer_id, channel, OUTSIDER)[-1].params.get("delete_original") is True
    assert not leaks(*posts_in(slack, channel))


# -- changes Slack tells us about ---------------------------------------------------------------


def _thread_post(slack, bot, channel: str, user: str):
    """Ask QUESTION in `channel` and return the threaded answer."""
    event = mention(QUESTION, channel, user=user)
    bot.event(event)
    return slack.wait_for(lambda: [c for c in posts_in(slack, channel) if c.params.get("thread_ts") == event["ts"]])[0]


def _slack_event(event: dict) -> dict:
    return envelope({**event, "event_ts": new_ts()})


def test_a_channel_turned_slack_connect_is_restricted_as_soon_as_slack_says_so(slack, index, restricted_synced,
                                                                                 access_files):
    """Within the cache's minute the channel's old details would still be trusted; Slack's
    `channel_shared` event drops them, so the very next question is answered public-only."""
    with running_bot(bot_settings(slack, kb_sources=access_files["public"]), index) as fresh:
        assert answered_with_the_page(_thread_post(slack, fresh, HR_CHANNEL, OUTSIDER))  # details now cached
        slack.share_channel(HR_CHANNEL)
        try:
            shared = {"type": "channel_shared", "connected_team_id": "T0PARTNER", "channel": HR_CHANNEL}
            assert fresh.post(json.dumps(_slack_event(shared)).encode(), "application/json").status_code == 200
            fresh.wait_idle()
            post = _thread_post(slack, fresh, HR_CHANNEL, OUTSIDER)
            assert not leaks(post) and not answered_with_the_page(post)
        finally:
            del slack.conversations[HR_CHANNEL]
        unshared = {"type": "channel_unshared", "previously_connected_team_id": "T0PARTNER", "channel": HR_CHANNEL,
                    "is_ext_shared": False}
        assert fresh.post(json.dumps(_slack_event(unshared)).encode(), "application/json").status_code == 200
        fresh.wait_idle()
        assert answered_with_the_page(_thread_post(slack, fresh, HR_CHANNEL, OUTSIDER))


def test_a_user_added_to_a_group_sees_its_scope_as_soon_as_slack_says_so(slack, index, restricted_synced,
                                                                          access_files):
    newcomer, dm = "U0HRCAROL", new_channel("D")
    slack.add_im(dm, newcomer)

    def ask_in_dm(bot):
        before = len(posts_in(slack, dm))
        bot.event(message(QUESTION, dm, channel_type="im", user=newcomer))
        return slack.wait_for(lambda: posts_in(slack, dm)[before:])[0]

    with running_bot(bot_settings(slack, kb_sources=access_files["public"]), index) as fresh:
        post = ask_in_dm(fresh)
        assert not leaks(post)  # not a member yet (and the group's members are now cached)
        slack.set_usergroup(HR_GROUP, [GROUP_MEMBER, newcomer])
        try:
            changed = {"type": "subteam_members_changed", "subteam_id": HR_GROUP, "team_id": "T0ACME",
                       "date_previous_update": 1700000000, "date_update": 1700000100,
                       "added_users": [newcomer], "added_users_count": "1", "removed_users": [], "removed_users_count": "0"}
            assert fresh.post(json.dumps(_slack_event(changed)).encode(), "application/json").status_code == 200
            fresh.wait_idle()
            assert answered_with_the_page(ask_in_dm(fresh))
        finally:
            slack.set_usergroup(HR_GROUP, [GROUP_MEMBER])


# -- kb ask --as-channel / --as-user -------------------------------------------------------------


@pytest.fixture
def cli(index, restricted_synced, access_files, monkeypatch):
    """`kb ask` in process, on the test index (the same code path; no second model load)."""
    import bot.cli
    import bot.wiring

    monkeypatch.setattr(bot.wiring, "open_index", lambda settings: index)
    for name in ("SLACK_BOT_TOKEN", "SLACK_API_URL", "KB_WIKI", "KB_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)

    def run(*args, sources: Path | None = None, env: dict | None = None):
        environment = {"KB_SOURCES": str(sources or access_files["public"]), **(env or {})}
        result = CliRunner().invoke(bot.cli.app, ["ask", "--json", *args, QUESTION], env=environment)
        return result

    return run


def _cited(result) -> list[str]:
    assert result.exit_code == 0, result.output
    return [s["doc_id"] for s in json.loads(result.stdout)["sources"]]


def test_cli_without_options_sees_every_scope(cli):
    assert _cited(cli())[0] == DOC_ID


def test_cli_as_channel_and_as_user_apply_the_slack_rules(cli, slack):
    assert _cited(cli("--as-channel", HR_CHANNEL))[0] == DOC_ID
    assert _cited(cli("--as-channel", HR_CHANNEL, "--as-user", OUTSIDER))[0] == DOC_ID  # whoever asks
    assert _cited(cli("--as-user", HR_USER))[0] == DOC_ID
    for args in (["--as-channel", new_channel()], ["--as-channel", new_channel(), "--as-user", HR_USER],
                 ["--as-user", OUTSIDER], ["--as-user", GROUP_MEMBER], ["--as-channel", HR_CHANNEL, "--shared"]):
        result = cli(*args)
        assert DOC_ID not in _cited(result) and not leaks(result.stdout), args
    # with a bot token, user groups (and shared channels) come from Slack, as in the bot
    env = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.api_url}
    assert _cited(cli("--as-user", GROUP_MEMBER, env=env))[0] == DOC_ID
    assert DOC_ID not in _cited(cli("--as-channel", CONNECT_CHANNEL, env=env))


def test_kb_ask_as_channel_from_the_command_line(kb_home, restricted_synced, access_files):
    """The installed `kb` itself, in its own process, on the test index: neither the question nor
    the page's whole text (piped as a second question) finds the page from a channel without its
    scope (the in-process tests above show it found where it is visible)."""
    kb = str(Path(sys.executable).parent / "kb")
    env = {**os.environ, "KB_HOME": str(kb_home), "KB_SOURCES": str(access_files["public"])}
    env.pop("SLACK_BOT_TOKEN", None)
    result = subprocess.run([kb, "ask", "--json", "--as-channel", new_channel()], input=f"{QUESTION}\n{' '.join(PAGE.split())}\n",
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == 2 and all(a["sources"] for a in answers), "nearest pages from the visible scopes"
    assert all(DOC_ID not in [s["doc_id"] for s in a["sources"]] for a in answers)
    assert not leaks(json.dumps([a["answer"] for a in answers] + [a["sources"] for a in answers]), result.stderr)


def test_cli_in_a_connect_channel_with_shared_channels_none_is_one_error_line(cli, access_files):
    result = cli("--as-channel", HR_CHANNEL, "--shared", sources=access_files["none"])
    assert result.exit_code == 1 and "error: no access scope is visible there" in result.output
    assert not leaks(result.output)


def test_cli_help_says_what_no_options_mean():
    result = CliRunner().invoke(__import__("bot.cli", fromlist=["app"]).app, ["ask", "--help"], env={"COLUMNS": "200"})
    assert "--as-channel" in result.output and "--as-user" in result.output
    assert "every access scope is searched" in result.output


# -- visible_scopes ------------------------------------------------------------------------------

CONFIG = AccessConfig(scopes={
    "hr": ScopeRule(channels=frozenset({"C1"}), users=frozenset({"U1"}), usergroups=frozenset({"S1"})),
    "eng": ScopeRule(channels=frozenset({"C2", "C1"}), usergroups=frozenset({"S2"})),
    "staff": ScopeRule(channels=frozenset({"*"}), users=frozenset({"*"})),
})


@pytest.mark.parametrize("channel, user, groups, is_dm, shared, expected", [
    ("C1", "U9", [], False, False, ["eng", "hr", "public", "staff"]),  # the channel decides, not the asker
    ("C1", "U1", ["S1"], False, False, ["eng", "hr", "public", "staff"]),
    ("C3", "U1", ["S1", "S2"], False, False, ["public", "staff"]),  # granted users see no more in channels
    ("D1", "U1", [], True, False, ["hr", "public", "staff"]),
    ("D1", "U9", ["S2"], True, False, ["eng", "public", "staff"]),
    ("D1", "U9", [], True, False, ["public", "staff"]),
    ("C1", None, [], True, False, ["public"]),  # a DM without a user sees nothing extra
    (None, "U1", [], False, False, ["public"]),
    ("C1", "U1", ["S1"], False, True, ["public"]),  # Slack Connect: public only, whatever is configured
    ("D1", "U1", ["S1"], True, True, ["public"]),
])
def test_visible_scopes(channel, user, groups, is_dm, shared, expected):
    assert visible_scopes(CONFIG, channel, user, groups, is_dm, shared) == expected


def test_visible_scopes_default_and_shared_none():
    assert visible_scopes(AccessConfig(), "C1", "U1", ["S1"], False, False) == ["public"]
    assert visible_scopes(AccessConfig(), "D1", "U1", ["S1"], True, False) == ["public"]
    none = AccessConfig(scopes=CONFIG.scopes, shared_channels="none")
    assert visible_scopes(none, "C1", "U1", ["S1"], False, True) == []
    assert visible_scopes(none, "C1", "U1", ["S1"], False, False) == ["eng", "hr", "public", "staff"]


def test_shared_with_other_organisations_reads_conversations_info():
    assert shared_with_other_organisations({"is_ext_shared": True})
    assert shared_with_other_organisations({"is_pending_ext_shared": True})
    assert shared_with_other_organisations({"is_shared": True})
    assert not shared_with_other_organisations({"is_shared": True, "is_org_shared": True})  # one Grid org
    assert not shared_with_other_organisations({"is_channel": True})


def test_slack_lookups_are_cached_and_fail_closed(slack):
    from slack_sdk import WebClient

    clock = [0.0]
    client = WebClient(token="xoxb-test", base_url=slack.api_url)
    access = SlackAccess(CONFIG, client, ttl=60, clock=lambda: clock[0])
    group = "S" + uuid.uuid4().hex[:8].upper()
    config = AccessConfig(scopes={"g": ScopeRule(usergroups=frozenset({group}))})
    grouped = SlackAccess(config, client, ttl=60, clock=lambda: clock[0])
    channel = new_channel()

    def lookups(method: str, **match) -> int:
        return len(slack.calls_to(method, **match))

    assert access.scopes(channel, "U9") == ["public", "staff"]
    access.scopes(channel, "U1")
    assert lookups("conversations.info", channel=channel) == 1, "cached"
    clock[0] += 61
    access.scopes(channel, "U1")
    assert lookups("conversations.info", channel=channel) == 2, "looked up again after the TTL"

    dm = new_channel("D")
    assert access.scopes(dm, "U1") == ["public"], "an unknown conversation counts as shared"
    slack.add_im(dm, "U1")
    clock[0] += 11  # failures are retried sooner
    assert access.scopes(dm, "U1") == ["hr", "public", "staff"], "the user's own DM with Docent"
    assert access.scopes(dm, "U2") == ["public", "staff"], "not U2's DM: the channel rules"

    dm2 = new_channel("D")
    slack.add_im(dm2, "U5")
    assert grouped.scopes(dm2, "U5") == ["public"], "a group whose members cannot be read grants nothing"
    slack.set_usergroup(group, ["U5"])
    assert grouped.scopes(dm2, "U5") == ["public"], "the failure is remembered briefly"
    clock[0] += 11
    assert grouped.scopes(dm2, "U5") == ["g", "public"]
    calls = lookups("usergroups.users.list", usergroup=group)
    grouped.scopes(dm2, "U5")
    assert lookups("usergroups.users.list", usergroup=group) == calls, "cached"

    idle = SlackAccess(AccessConfig(), client)
    before = len(slack.calls)
    assert idle.scopes(new_channel(), "U1") == ["public"] and len(slack.calls) == before, "nothing to look up"



def test_an_event_during_a_lookup_keeps_that_lookup_out_of_the_cache(slack):
    """`channel_shared` arriving while `conversations.info` is in flight: the answer read before
    the change serves the question that asked, but is not kept for the next one."""
    from slack_sdk import WebClient

    client = WebClient(token="xoxb-test", base_url=slack.api_url)
    access = SlackAccess(CONFIG, client, ttl=60)
    channel = new_channel()

    class EventMidLookup:
        reads = 0

        def conversations_info(self, channel):
            reply = client.conversations_info(channel=channel)
            EventMidLookup.reads += 1
            if EventMidLookup.reads == 1:
                slack.share_channel(channel)
                access.forget_conversation(channel)
            return reply

    access.client = EventMidLookup()
    assert access.conversation(channel).shared is False  # read before the change
    assert access.conversation(channel).shared is True and EventMidLookup.reads == 2
    assert access.conversation(channel).shared is True and EventMidLookup.reads == 2, "this one is cached"

# -- the sources file ----------------------------------------------------------------------------


def test_scopes_in_toml_and_yaml(tmp_path):
    (tmp_path / "kb.toml").write_text("""
shared_channels = "none"
[[source]]
name = "hr"
location = "."
access = "hr-private"
[scopes.hr-private]
channels = ["C0123ABCD", "G0PRIVATE"]
users = ["U1", "W0ENTERPRISE"]
usergroups = ["S1"]
[scopes.staff]
channels = ["*"]
users = ["*"]
""")
    parsed = read_sources_file(tmp_path / "kb.toml")
    assert parsed.sources[0].access == "hr-private" and parsed.access.shared_channels == "none"
    assert parsed.access.scopes["hr-private"] == ScopeRule(
        channels=frozenset({"C0123ABCD", "G0PRIVATE"}), users=frozenset({"U1", "W0ENTERPRISE"}),
        usergroups=frozenset({"S1"}))
    assert parsed.access.usergroups == {"S1"}
    (tmp_path / "kb.yaml").write_text("""
sources:
  - name: conf
    kind: confluence-xml
    location: export.zip
    access: {HR: hr-private, "*": public}
scopes:
  hr-private:
    channels: [C0123ABCD]
shared_channels: public
""")
    access = load_access(tmp_path / "kb.yaml")
    assert access.scopes["hr-private"].channels == {"C0123ABCD"} and access.shared_channels == "public"
    assert load_sources(tmp_path / "kb.yaml")[0].access == {"HR": "hr-private", "*": "public"}
    (tmp_path / "plain.toml").write_text('[[source]]\nname = "a"\nlocation = "."\n')
    assert load_access(tmp_path / "plain.toml") == AccessConfig()


SOURCE_LINES = '[[source]]\nname = "a"\nlocation = "."\n'


@pytest.mark.parametrize("body, message", [
    ('shared_channels = "external"\n' + SOURCE_LINES, 'shared_channels must be "public"'),
    (SOURCE_LINES + '[scopes.public]\nchannels = ["C1"]\n', "public scope is visible everywhere"),
    (SOURCE_LINES + '[scopes.hr]\nchannel = ["C1"]\n', "[scopes.hr]: unknown setting(s) channel"),
    (SOURCE_LINES + '[scopes.hr]\nchannels = ["#hr-team"]\n', "'#hr-team' is not a Slack channel id"),
    (SOURCE_LINES + '[scopes.hr]\nchannels = "C1"\n', "channels must be a list of ids"),
    (SOURCE_LINES + '[scopes.hr]\nusers = ["alice"]\n', "'alice' is not a Slack user id"),
    (SOURCE_LINES + '[scopes.hr]\nusergroups = ["*"]\n', "'*' is not a Slack user-group id"),
    (SOURCE_LINES + '[scopes."hr team"]\nchannels = ["C1"]\n', "access scope 'hr team' must be"),
    ("scopes = 3\n" + SOURCE_LINES, "scopes must be tables"),
    (SOURCE_LINES + '[scope.hr]\nchannels = ["C1"]\n', "unknown top-level setting(s) scope"),
    (SOURCE_LINES + 'access = "hr team"\n', "access scope 'hr team' must be"),
    (SOURCE_LINES + 'kind = "markdown"\naccess = { HR = "hr", "*" = "public" }\n', "only for confluence"),
    (SOURCE_LINES + 'kind = "confluence-xml"\naccess = { HR = "hr" }\n', 'needs a "*" entry'),
    (SOURCE_LINES + 'kind = "confluence-xml"\naccess = { HR = "hr", hr = "x", "*" = "p" }\n', "listed twice"),
    (SOURCE_LINES + 'access = { HR = "hr", "*" = "public" }\n', "only for Confluence exports"),  # "." is Markdown
    (SOURCE_LINES + "access = 3\n", "access must be a scope name"),
])
def test_scope_settings_errors_say_what_is_wrong(tmp_path, body, message):
    (tmp_path / "kb.toml").write_text(body)
    with pytest.raises(SourcesError, match=re.escape(message)):
        read_sources_file(tmp_path / "kb.toml")


# -- per-space scopes for Confluence ----------------------------------------------------------------

XML_EXPORT = Path(__file__).resolve().parent / "fixtures" / "confluence" / "xml-export"


def test_confluence_pages_take_their_space_scope(index):
    name = "access-conf-" + uuid.uuid4().hex[:6]
    people, ops = f"{name}-people", f"{name}-ops"
    source = SourceConfig(name=name, location=XML_EXPORT, kind="confluence-xml",
                          access={"people": people, "*": ops})  # space keys match case-insensitively
    connector = open_connector(source)
    assert isinstance(connector, SpaceScoped) and not hasattr(connector, "wants")
    assert list(connector.paths()) == list(open_connector(SourceConfig(name=name, location=XML_EXPORT)).paths())
    by_space = {(d.metadata["space"], d.access) for d in connector.documents()}
    assert by_space == {("PEOPLE", people), ("OPS", ops)}
    try:
        SyncRunner(index, [source]).sync(name)
        with index.session() as s:
            from sqlmodel import select

            from indexing.storage.index_tables import DocumentRecord, Status

            records = s.exec(select(DocumentRecord).where(DocumentRecord.source == name,
                                                          DocumentRecord.status == Status.SUCCESS)).all()
        assert {r.access for r in records} == {people, ops}
        people_docs = {r.id for r in records if r.access == people}
        from indexing.search.retrieval import retrieve

        for record in records:
            hits = retrieve(index, record.title, scopes=[ops]).hits
            assert not people_docs & {h.doc_id for h in hits}
    finally:
        indexed_sources.forget(index, name)
