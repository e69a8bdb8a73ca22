"""Slack's AI-app surface over real HTTP: suggested prompts for a new assistant thread, the
"Searching the wiki…" status, an LLM answer streamed with chat.startStream / appendStream /
stopStream, and both fallbacks (chat.update in steps; one post) when a method is unknown.

The LLM is the local OpenAI-compatible server (tests/support/openai_server.py) streaming server-sent
events, cut into 7-character pieces so citations arrive split across chunks; the Slack side is
the local Web API (tests/support/slack_api_server.py), which keeps every message as it stands.
"""

from __future__ import annotations

import uuid

import pytest

from tests.support.openai_server import FakeOpenAI

from tests.support.slack_harness import (
    PARENTAL,
    all_text,
    bot_settings,
    button,
    mention,
    message,
    new_channel,
    new_ts,
    running_bot,
)

from bot.slack import blocks
from bot.answering.llm import LLMClient
from bot.answering.llm import allowed_links
from bot.answering.llm_stream import StreamCheck
from bot.messages import SEARCHING

REPLY = ("The primary caregiver gets 16 weeks of fully paid parental leave [1]. The secondary caregiver gets "
         "8 weeks [1, 7], to be taken within the first year. Let the People team know at least 8 weeks before "
         "you plan to start [1], and tell your manager too [1]. Where local law gives you more, the local "
         "statutory entitlement applies on top [1].")
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


@pytest.fixture(scope="module")
def model():
    server = FakeOpenAI().start()
    server.reply(REPLY)
    server.stream_pieces = [REPLY[i:i + 7] for i in range(0, len(REPLY), 7)]
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sample_alone(index, tmp_path_factory):
    """The sample wiki on an index of its own: the scripted reply's [1] must be the page ranked first
    (Leave policy), and every sentence of it must stand there for the grounding check to let it be
    streamed — pages other modules synced into the session's index can move that ranking."""
    from connectors.markdown import MarkdownFolder
    from indexing.ingest.sync import sync_documents
    from tests.support.corpora import SAMPLE_WIKI
    from tests.support.databases import own_index

    with own_index(index, tmp_path_factory.mktemp("assistant")) as own:
        wiki = MarkdownFolder(SAMPLE_WIKI, source="sample", exclude=["*.jsonl"], access="sample")
        sync_documents(own, wiki.documents(), "sample")
        yield own


@pytest.fixture(scope="module")
def bot(slack, model, sample_alone):
    with running_bot(bot_settings(slack), sample_alone, llm=LLMClient(model.base_url, "local", timeout=30)) as running:
        yield running


@pytest.fixture
def unknown(slack):
    """Make methods unknown to the workspace for one test (`unknown_method`, as Slack answers)."""
    made = []

    def make(*methods: str) -> None:
        for method in methods:
            slack.fail(method, "unknown_method")
            made.append(method)

    yield make
    for method in made:
        slack.failures.pop(method, None)


def ask_in_assistant_thread(bot, slack, question: str = PARENTAL):
    """A question typed in an assistant thread: a DM in a thread. Returns (channel, thread ts)."""
    channel, user, thread = new_channel("D"), "U" + uuid.uuid4().hex[:6].upper(), new_ts()
    slack.add_im(channel, user)
    bot.event(message(question, channel, channel_type="im", user=user, thread_ts=thread))
    return channel, thread


def final_answer(slack, channel: str):
    """The answer as it stands at the end: the one message in `channel` with the vote buttons."""
    def done():
        finished = [m for (c, _), m in list(slack.messages.items()) if c == channel
                    and button(m.get("blocks") or [], blocks.ACTION_VOTE_UP)]
        return finished
    return slack.wait_for(done, timeout=60)[0]


def calls_in(slack, channel: str) -> list:
    return [c for c in slack.calls if c.params.get("channel") == channel or c.params.get("channel_id") == channel]


def streamed_text(calls) -> str:
    return "".join((c.params.get("markdown_text") or "") + "".join(
        k.get("text", "") for k in c.params.get("chunks") or []) for c in calls if c.method in STREAM_METHODS)


def test_a_new_assistant_thread_gets_suggested_prompts_from_the_wiki(bot, slack):
    channel, thread = new_channel("D"), new_ts()
    bot.event({"type": "assistant_thread_started", "event_ts": new_ts(), "assistant_thread": {
        "user_id": "U1", "channel_id": channel, "thread_ts": thread,
        "context": {"channel_id": "C0FOCUS", "team_id": "T0ACME", "enterprise_id": None}}})
    call = slack.wait_for(lambda: slack.calls_to("assistant.threads.setSuggestedPrompts", channel_id=channel))[0]
    prompts = call.params["prompts"]
    assert call.params["thread_ts"] == thread and len(prompts) == 4
    assert all(p["message"] and 0 < len(p["title"]) <= 75 for p in prompts)


def test_an_llm_answer_is_streamed_then_replaced_by_the_checked_answer(bot, slack, model):
    channel, thread = ask_in_assistant_thread(bot, slack)
    answer = final_answer(slack, channel)
    calls = calls_in(slack, channel)
    methods = [c.method for c in calls]
    status = methods.index("assistant.threads.setStatus")
    assert calls[status].params["status"] == SEARCHING and calls[status].params["thread_ts"] == thread
    assert status < methods.index("chat.startStream") < methods.index("chat.appendStream") < methods.index("chat.stopStream")
    assert methods[-1] == "chat.update" and "chat.postMessage" not in methods
    shown = streamed_text(calls)
    assert "16 weeks" in shown and "[7" not in shown and "[1, 7]" not in shown, "no unbacked citation is ever shown"
    final = all_text(answer["blocks"])
    assert "16 weeks" in final and "[7]" not in final and "[1]" in final and answer["thread_ts"] == thread


def test_unknown_streaming_methods_fall_back_to_chat_update_in_steps(bot, slack, model, unknown):
    unknown("chat.startStream")
    model.stream_pause = 0.08  # ~3 s of writing: time for more than one step
    try:
        channel, _ = ask_in_assistant_thread(bot, slack)
        answer = final_answer(slack, channel)
    finally:
        model.stream_pause = 0.0
    calls = calls_in(slack, channel)
    posts = [c for c in calls if c.method == "chat.postMessage"]
    updates = [c for c in calls if c.method == "chat.update"]
    steps = [u for u in updates if not button(u.params["blocks"], blocks.ACTION_VOTE_UP)]
    assert len(posts) == 1 and len(steps) >= 1 and all(u.params["ts"] == posts[0].params.get("ts", answer["ts"])
                                                       or u.params["ts"] == answer["ts"] for u in updates)
    assert not [c for c in calls if c.method in ("chat.appendStream", "chat.stopStream")]
    assert button(updates[-1].params["blocks"], blocks.ACTION_VOTE_UP) and "[7]" not in all_text(answer["blocks"])
    assert all("[7" not in all_text(s.params["blocks"]) for s in steps)


def test_when_chat_update_is_unknown_too_the_answer_is_posted_once(bot, slack, unknown):
    unknown("chat.startStream", "chat.update")
    channel, _ = ask_in_assistant_thread(bot, slack)
    answer = final_answer(slack, channel)
    calls = calls_in(slack, channel)
    left = [m for (c, _), m in list(slack.messages.items()) if c == channel]
    assert left == [answer], "one message remains: the answer (the placeholder was deleted)"
    assert [c.method for c in calls if c.method in ("chat.postMessage", "chat.delete")][-1] == "chat.postMessage"
    assert "16 weeks" in all_text(answer["blocks"])


def test_the_stream_check_holds_back_only_an_unfinished_citation_or_word():
    shown = StreamCheck(allowed_links([], {"a": 1, "b": 2}))
    pieces = ["Sixteen weeks [", "1", "] and more [", "9] then [2", ", 9] done", " @her", "e now"]
    out = [shown.feed(p) for p in pieces] + [shown.flush()]
    assert out[1] == "" and out[5] == " done", "'[1' and '@her' wait for the rest"
    assert "".join(out) == "Sixteen weeks [1] and more then [2] done @here now"


def test_a_model_failing_part_way_leaves_the_extractive_answer_in_place_of_the_partial_text(bot, slack, model):
    model.stream_fail_after = 6  # six pieces (42 characters), then the connection drops
    try:
        channel, _ = ask_in_assistant_thread(bot, slack)
        answer = final_answer(slack, channel)
    finally:
        model.stream_fail_after = None
    final = all_text(answer["blocks"])
    assert "The language model did not answer" in final and "16 weeks" in final
    assert "The primary caregiver gets 16 weeks of fully" not in final, "the model's partial text is gone"
    assert len([m for (c, _), m in list(slack.messages.items()) if c == channel]) == 1


def test_a_mention_in_a_channel_is_streamed_into_its_thread_for_the_asker(bot, slack):
    channel = new_channel()
    ask = mention(PARENTAL, channel, user="U7")
    bot.event(ask)
    answer = final_answer(slack, channel)
    start = slack.calls_to("chat.startStream", channel=channel)[0]
    assert (start.params["thread_ts"], start.params["recipient_user_id"], start.params["recipient_team_id"]) == (
        ask["ts"], "U7", "T0ACME")
    assert answer["thread_ts"] == ask["ts"] and "[7]" not in all_text(answer["blocks"])
    assert not slack.calls_to("assistant.threads.setStatus", channel_id=channel), "no assistant status in a channel"
