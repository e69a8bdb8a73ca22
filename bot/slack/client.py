"""The Slack Web API client Docent uses: the bot token, SLACK_API_URL, Slack's retry rules, how a
message is posted, and its link."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slack_sdk import WebClient

from bot.settings import Settings, secret

if TYPE_CHECKING:
    from slack_sdk.http_retry import HttpRequest, HttpResponse, RetryHandler, RetryState

    from bot.slack.blocks import Block

log = logging.getLogger(__name__)

RATE_LIMIT_RETRIES = 3  # HTTP 429: wait as long as Slack's Retry-After says, then try again
SERVER_ERROR_RETRIES = 2  # HTTP 5xx: try again after a short backoff


def web_client(settings: Settings, token: str | None = None) -> WebClient:
    """The Web API client (the bot token unless `token` is given), pointed at SLACK_API_URL when set
    (a proxy, or a local test server), retrying what Slack asks to be retried (`retry_handlers`)."""
    base_url = settings.slack_api_url or WebClient.BASE_URL
    return WebClient(token=token or secret(settings.slack_bot_token), base_url=base_url.rstrip("/") + "/",
                     retry_handlers=retry_handlers())


def retry_handlers() -> list[RetryHandler]:
    """slack_sdk's own retry handlers: a dropped connection once (the SDK's default), a rate-limited
    call (HTTP 429) after the `Retry-After` Slack sends, a server error (any 5xx) after a backoff.
    Bolt copies them into the client each listener gets, so every Web API call Docent makes has them."""
    from slack_sdk.http_retry.builtin_handlers import (
        ConnectionErrorRetryHandler,
        RateLimitErrorRetryHandler,
        ServerErrorRetryHandler,
    )

    class AnyServerError(ServerErrorRetryHandler):
        """The SDK's handler retries 500 and 503 only; a proxy in front of Slack also answers 502 and 504."""

        def _can_retry(self, *, state: RetryState, request: HttpRequest, response: HttpResponse | None = None,
                       error: Exception | None = None) -> bool:
            return response is not None and 500 <= response.status_code < 600

    return [ConnectionErrorRetryHandler(), RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
            AnyServerError(max_retry_count=SERVER_ERROR_RETRIES)]


def post(client: WebClient, channel: str, thread_ts: str | None, text: str, message_blocks: list[Block] | None = None) -> str:
    """Post one message as Docent posts every message (mentions neutralised, the text as blocks
    within Slack's limits unless `message_blocks` are given, no unfurls); returns its ts."""
    from bot.slack.blocks import text_blocks
    from bot.slack.mrkdwn import neutralise

    reply = client.chat_postMessage(
        channel=channel, thread_ts=thread_ts, text=neutralise(text),
        blocks=message_blocks or text_blocks(text), unfurl_links=False, unfurl_media=False,
    )
    ts: str = reply["ts"]  # Slack's reply is untyped JSON; a posted message's `ts` is a string
    return ts


def permalink(client: WebClient, channel: str, ts: str) -> str:
    """A message's link, "" when Slack does not give one (an answered gap is kept, a verifier told,
    without it)."""
    try:
        return client.chat_getPermalink(channel=channel, message_ts=ts).get("permalink") or ""
    except Exception as exc:
        log.warning("no permalink for %s/%s: %s", channel, ts, exc)
        return ""
