"""Docent in Socket Mode, end to end: the real SocketModeHandler over a real WebSocket.

The app is built and connected as `kb serve` does when SLACK_APP_TOKEN is set
(`build_app(..., socket_mode=True)`, `connect_socket_mode`): it asks the local Web API
(`FakeSlack`) for a WebSocket URL with its app-level token, connects to the local Socket Mode
peer (`tests/support/socket_mode_peer.py`), and from then on every event and slash command arrives as an
envelope on that socket, is acknowledged on it, and is answered through the Web API and
response URLs as in HTTP mode.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.slack_api_server import APP_TOKEN, BOT_TOKEN
from tests.support.socket_mode_peer import SocketModePeer
from tests.support.slack_harness import (
    PARENTAL, bot_settings, envelope, mention, new_channel, posts_in, query_rows, sources_heading, wait_until)

from bot.serve import StartupError, connect_socket_mode
from bot.slack.app import build_app
from bot.slack.client import web_client
from bot.slack.workers import Workers


@pytest.fixture(scope="module")
def peer(slack) -> Iterator[SocketModePeer]:
    server = SocketModePeer().start()
    slack.socket_mode_url = lambda: server.url
    yield server
    server.stop()


@pytest.fixture(scope="module")
def workers() -> Iterator[Workers]:
    """Bolt's listener pool and the answers pool, as `kb serve` builds them (both count work in
    flight, so a test can wait until the app is idle)."""
    pools = Workers()
    yield pools
    pools.shutdown(wait=True)


@pytest.fixture(scope="module")
def connected(slack, peer, workers, index, sample_synced):
    """The app, connected over Socket Mode; closed at the end."""
    settings = bot_settings(slack, slack_app_token=APP_TOKEN)
    app = build_app(settings, index, web_client(settings), socket_mode=True, workers=workers)
    handler = connect_socket_mode(app, settings)
    yield handler
    assert workers.wait_idle(20)
    handler.close()


def test_the_app_connects_with_its_app_token(connected, slack, peer):
    opened = slack.calls_to("apps.connections.open")
    assert opened and all(call.token == APP_TOKEN for call in opened)
    # the peer counts a socket once its handler resumes after the handshake, which can be just after connect() returns
    peer.wait_for(lambda: peer.connections >= 1, timeout=10)


def test_a_mention_is_acknowledged_on_the_socket_and_answered_in_its_thread(connected, slack, peer, index):
    channel = new_channel()
    event = mention(PARENTAL, channel, user="U1")
    envelope_id = peer.send("events_api", envelope(event))

    ack = peer.wait_ack(envelope_id)
    assert ack == {"envelope_id": envelope_id}  # an event's ack carries nothing else
    post = slack.wait_for(lambda: posts_in(slack, channel))[0]
    assert post.params["thread_ts"] == event["ts"] and post.token == BOT_TOKEN
    assert "16 weeks" in post.params["blocks"][0]["text"]["text"]
    assert slack.calls_to("reactions.add", channel=channel, name="eyes", timestamp=event["ts"])
    logged = wait_until(lambda: query_rows(index, message_ts=event["ts"]))
    assert [(row.surface, row.question, row.channel_id) for row in logged] == [("mention", PARENTAL, channel)]


def test_the_same_event_redelivered_gets_one_answer(connected, slack, peer, workers, index):
    channel = new_channel()
    delivery = envelope(mention("how do I expense a taxi?", channel))
    first = peer.send("events_api", delivery)
    retry = peer.send("events_api", delivery, retry_attempt=1, retry_reason="timeout")  # same event_id
    assert peer.wait_ack(first) and peer.wait_ack(retry)
    slack.wait_for(lambda: posts_in(slack, channel))
    assert workers.wait_idle(20)
    assert len(posts_in(slack, channel)) == 1
    assert len(query_rows(index, channel_id=channel)) == 1


def test_kb_ask_is_acknowledged_with_its_reply_and_answered_through_the_response_url(connected, slack, peer):
    channel = new_channel()
    command = {"token": "legacy", "team_id": "T0ACME", "team_domain": "acme", "channel_id": channel,
               "channel_name": "general", "user_id": "U1", "user_name": "u1", "command": "/kb",
               "text": "ask how do I expense a taxi?", "api_app_id": "A0DOCENT", "is_enterprise_install": "false",
               "response_url": slack.response_url("socket-ask"), "trigger_id": "1.trigger"}
    envelope_id = peer.send("slash_commands", command, accepts_response_payload=True)

    ack = peer.wait_ack(envelope_id)
    assert ack["payload"]["response_type"] == "ephemeral" and "Looking" in ack["payload"]["text"]
    answer = slack.wait_for(lambda: slack.calls_to("response:socket-ask"))[0]
    assert answer.params["response_type"] == "ephemeral"
    assert sources_heading(answer.params["blocks"]) == "*Sources*"  # the travel policy answers it: found


def test_after_slack_drops_the_socket_the_app_reconnects_and_answers(connected, slack, peer):
    before = peer.connections
    peer.drop_connections()
    peer.wait_for(lambda: peer.connections > before, timeout=30)
    channel = new_channel()
    envelope_id = peer.send("events_api", envelope(mention(PARENTAL, channel)))
    peer.wait_ack(envelope_id)
    assert "16 weeks" in slack.wait_for(lambda: posts_in(slack, channel))[0].params["blocks"][0]["text"]["text"]


def test_a_wrong_app_token_is_one_clear_error(slack, peer, index):
    settings = bot_settings(slack, slack_app_token="xapp-1-A0DOCENT-1-revoked")
    app = build_app(settings, index, web_client(settings), socket_mode=True)
    with pytest.raises(StartupError, match="SLACK_APP_TOKEN"):
        connect_socket_mode(app, settings)
