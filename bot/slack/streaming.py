"""Delivering one answer into Slack while the LLM writes it: stream, else update in steps, else post once.

`AnswerDelivery` is made before the answer is written and `finish`ed with the final message:

1. **Streaming** — Slack's `chat.startStream` / `chat.appendStream` / `chat.stopStream` (through
   slack_sdk's `ChatStream`, which buffers text into fewer calls). Streams are replies, so this
   needs a thread (a mention's thread, an assistant thread); a top-level DM answer starts at 2.
2. **`chat.update` in steps** — when a streaming method is unknown to the workspace
   (`unknown_method`, or refused for this conversation), a placeholder is posted and updated at
   most every `UPDATE_SECONDS` with the text so far.
3. **One post** — when `chat.update` is unknown too, the placeholder is deleted (if it can be)
   and the answer is posted once at the end, as without an LLM.

Whatever was streamed, the finished message is the checked answer: `finish` replaces the
streamed text with the same blocks a non-streamed answer has (citations checked against the
sources, unbacked links removed, sources block, 👍/👎) — so a vote, a Share or a re-render sees
one kind of message.

The text arrives already checked — by the same checks as the final answer (`bot.answering.llm_stream`,
through `KnowledgeBase.ask(on_text=...)`: whole sentences only, each holding to the pages it cites
(`bot.answering.grounding`); no link to a page that is not a source, no bare domain, no Slack
markup); here it is rendered as the final answer is (`to_mrkdwn`, `neutralise`), so what is shown
at any moment is as safe as the answer. The draft is held until checked, then replaced: if the
model fails part-way, or its answer is set aside by the grounding check (the draft stopped
growing at the first sentence that failed it), the extractive answer `finish`es in place of the
partial text, so the final message never keeps model text the check rejected; if answering fails altogether, or `finish` cannot
put the answer in place, `abandon` takes back what was shown (deletes it, else overwrites it), so
the apology is the reply and no partial text stays behind.

While answering in an assistant thread, the thread shows "Searching the wiki…"
(`assistant.threads.setStatus`); Slack clears it when the reply is posted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from slack_sdk.errors import SlackApiError

from bot import messages
from bot.slack.client import post
from bot.slack.mrkdwn import escape, neutralise, to_mrkdwn

if TYPE_CHECKING:
    from slack_sdk import WebClient
    from slack_sdk.web.chat_stream import ChatStream

    from bot.slack.blocks import Block

log = logging.getLogger(__name__)

STREAM_BUFFER = 120  # characters buffered before a chat.appendStream (slack_sdk's ChatStream)
UPDATE_SECONDS = 1.0  # chat.update is rate-limited (~50 a minute): at most one a second per answer
# A method this workspace or conversation does not offer: fall back to the next way.
UNAVAILABLE = {"unknown_method", "not_allowed_token_type", "method_not_supported_for_channel_type",
               "feature_not_enabled", "not_implemented", "missing_scope", "invalid_arguments"}
STREAM, UPDATES, ONE_POST = "stream", "updates", "one post"


class AnswerDelivery:
    """One answer's way into Slack (see the module docstring); `mode` says which way it took."""

    def __init__(self, client: WebClient, channel: str, thread_ts: str | None, *, user: str | None = None,
                 team: str | None = None, status_thread: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.user = user
        self.team = team
        self.clock = clock
        self.mode = STREAM if thread_ts else UPDATES
        self.ts: str | None = None  # the answer message, once there is one
        self.shown = ""  # the text shown so far
        self._stream: ChatStream | None = None
        self._last_update = 0.0
        if status_thread:
            set_status(client, channel, status_thread, messages.SEARCHING)

    # -- while the answer is written --------------------------------------------------------

    def append(self, text: str) -> None:
        """More of the answer (already citation-checked): shown by the current way."""
        if not text:
            return
        self.shown += text
        if self.mode == STREAM:
            self._append_stream(text)
        elif self.mode == UPDATES:
            self._update_step()

    def _append_stream(self, text: str) -> None:
        try:
            if self._stream is None:
                assert self.thread_ts is not None  # STREAM is the mode only of an answer in a thread (__init__)
                self._stream = self.client.chat_stream(
                    channel=self.channel, thread_ts=self.thread_ts, buffer_size=STREAM_BUFFER,
                    recipient_user_id=self.user, recipient_team_id=self.team)
            self._stream.append(markdown_text=neutralise(text))
            self.ts = self._stream.ts or self.ts
        except SlackApiError as exc:
            error = exc.response.get("error")
            if self._stream is not None and self._stream.ts:
                # the stream started, then failed: finish it by updating the message it made
                log.warning("streaming into %s stopped (%s); updating the message instead", self.channel, error)
                self.ts = self._stream.ts
            elif error not in UNAVAILABLE:
                raise
            else:
                log.info("chat streaming is not available in %s (%s): updating a message in steps",
                         self.channel, error)
            self._stream = None
            self.mode = UPDATES
            self._update_step()

    def _update_step(self) -> None:
        now = self.clock()
        if self.ts is not None and now - self._last_update < UPDATE_SECONDS:
            return
        self._last_update = now
        try:
            if self.ts is None:
                self.ts = self._post(_plain(self.shown), _text_blocks(self.shown))
            else:
                self.client.chat_update(channel=self.channel, ts=self.ts, text=_plain(self.shown),
                                        blocks=_text_blocks(self.shown))
        except SlackApiError as exc:
            if exc.response.get("error") not in UNAVAILABLE:
                raise
            log.info("chat.update is not available in %s (%s): the answer is posted once", self.channel,
                     exc.response.get("error"))
            self.mode = ONE_POST
            self._drop_placeholder()

    # -- the final message ------------------------------------------------------------------

    def finish(self, text: str, blocks: list[Block]) -> str:
        """The checked answer, in place of whatever was shown; returns the message's ts. When it
        cannot be put there (Slack refuses the update, the connection fails), the partial text is
        taken back (`abandon`) and the error raised, so the caller's apology is the one reply."""
        try:
            return self._finish(text, blocks)
        except Exception:
            self.abandon()
            raise

    def _finish(self, text: str, blocks: list[Block]) -> str:
        if self._stream is not None:
            try:
                self._stream.stop()
                self.ts = self._stream.ts
            except SlackApiError as exc:
                log.warning("could not stop the stream in %s: %s", self.channel, exc.response.get("error"))
                self.ts = self._stream.ts or self.ts
            self._stream = None
        if self.ts is not None and self.mode != ONE_POST:
            try:
                self.client.chat_update(channel=self.channel, ts=self.ts, text=neutralise(text), blocks=blocks)
                return self.ts
            except SlackApiError as exc:
                if exc.response.get("error") not in UNAVAILABLE:
                    raise
                self.mode = ONE_POST
                self._drop_placeholder()
        self.ts = self._post(text, blocks)
        return self.ts

    def abandon(self) -> None:
        """Answering failed: take back whatever was shown, so the apology is the reply — deleted,
        or, when Slack will not delete it, overwritten with a line saying it was withdrawn."""
        try:
            if self._stream is not None:
                self.ts = self._stream.ts or self.ts
                self._stream.stop()
        except Exception as exc:
            log.info("could not stop the stream in %s: %s", self.channel, exc)
        self._stream = None
        ts = self.ts
        if ts is None:
            return
        try:
            self.client.chat_delete(channel=self.channel, ts=ts)
            self.ts = None
            return
        except Exception as exc:
            log.info("could not delete the partial answer in %s: %s", self.channel, exc)
        try:
            self.client.chat_update(channel=self.channel, ts=ts, text=messages.WITHDRAWN,
                                    blocks=_text_blocks(messages.WITHDRAWN))
        except Exception as exc:
            log.warning("could not take back the partial answer %s in %s: %s", ts, self.channel, exc)
        self.ts = None

    def _post(self, text: str, blocks: list[Block] | None = None) -> str:
        return post(self.client, self.channel, self.thread_ts, text, blocks)

    def _drop_placeholder(self) -> None:
        if self.ts is None:
            return
        try:
            self.client.chat_delete(channel=self.channel, ts=self.ts)
        except SlackApiError as exc:
            log.info("could not delete the placeholder in %s: %s", self.channel, exc.response.get("error"))
        self.ts = None


def set_status(client: WebClient, channel: str, thread_ts: str, status: str) -> None:
    """The assistant thread's status line; outside an assistant thread Slack refuses it: ignored."""
    try:
        client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread_ts, status=status)
    except SlackApiError as exc:
        log.debug("no assistant status in %s/%s: %s", channel, thread_ts, exc.response.get("error"))
    except Exception as exc:
        log.debug("no assistant status in %s/%s: %s", channel, thread_ts, exc)


def _text_blocks(markdown: str) -> list[Block]:
    """The answer so far as the final answer renders it (Markdown → mrkdwn, everything else escaped)."""
    from bot.slack.blocks import text_blocks

    return text_blocks(to_mrkdwn(markdown) or messages.SEARCHING_PLACEHOLDER)


def _plain(markdown: str) -> str:
    """The notification text of a message shown in steps: escaped, no pings."""
    return neutralise(escape(" ".join(markdown.split())[:300] or messages.SEARCHING_PLACEHOLDER))
