"""Docent in Slack: the Bolt app, built in one place, with one small function per listener.

- @mention in a channel → 👀 at once, then one reply in the question's thread. In a thread the
  bot has answered, later messages are answered without a mention, with the thread's earlier
  question as retrieval context. Direct messages are answered the same way.
- `/kb ask|help|status|resync` — acknowledged at once (Slack allows 3 s), answered through the
  response URL; `/kb ask` answers privately with a "Share in channel" button; `/kb resync` is for
  KB_ADMIN_USERS only, and every attempt is recorded.
- 👍 / 👎 on every answer: one vote per user per answer, the message shows the tally, 👎 opens
  an optional "what was wrong?" form.
- Access scopes (`bot.access`, `scopes_for`): in a channel, the scopes visible to that channel,
  whoever asks; in a direct message, the asker's and their user groups'; in a Slack Connect
  conversation, public only (or nothing). Retrieval searches only those, so citations and
  "nearest pages" come from them alone; Share re-checks the answer's pages against the channel
  it is posted to.

Never silent: every listener acknowledges first and does the slow work after; any failure past
that point is logged with a short reference id and the user is shown an apology carrying it —
except a lost database, which is not a bug: the user is told the knowledge base is temporarily
unavailable, and the next question after the database returns is answered (the pool reconnects).
Never twice: a question is claimed (`bot.dedupe`, by its channel and message ts) before it is
answered, so a redelivered event (`X-Slack-Retry-Num`) and the second event for one message
are dropped; only messages Docent answers are claimed. The bot's own messages and other bots'
are ignored.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import blocks, conversation, records
from bot.access import NOT_HERE, SlackAccess
from bot.answer import answer_question
from bot.dedupe import Deduper
from bot.mrkdwn import escape, mentions, mentions_someone_else, neutralise, slack_to_plain
from bot.resync import Resyncs, summary
from bot.settings import Settings, secret
from bot.workers import Workers
from indexing.database import is_unreachable
from indexing.index import Index
from indexing.runner import SyncRunner

log = logging.getLogger(__name__)

COMMAND = "/kb"
CONTEXT_CHARS = 500  # how much of the thread's earlier question joins a follow-up's retrieval
HUMAN_SUBTYPES = {None, "thread_broadcast", "file_share"}
_SMALL_TALK = re.compile(
    r"^(thanks?( you| a lot)?|thank you|thx|ty|ok(ay)?|great|cool|nice|got it|perfect|awesome|"
    r"👍|🙏|:\+1:|:pray:|:thumbsup:)[\s!.]*$", re.IGNORECASE,
)

HELP = """*Docent* answers questions from the company wiki, with links to the pages it used.
• Mention me with a question, e.g. `@Docent how many vacation days do I get?` — I reply in the thread, and answer follow-ups in that thread without another mention.
• Send me a direct message.
• `/kb ask <question>` — a private answer, with a button to share it in the channel.
• `/kb status` — what is indexed, and when it was last synced.
• `/kb resync [source] [--allow-deletes]` — re-read the wiki now (admins only; a sync that would delete most of a source deletes nothing unless `--allow-deletes`).
• `/kb help` — this message.
Every answer has 👍 / 👎 buttons: the wiki owners read them, and the questions I could not answer."""

EMPTY_MENTION = "Hi! Ask me a question about the wiki, e.g. `how many vacation days do I get?` — or try `/kb help`."
SHARE_REFUSED = ("I can't share this answer here: it uses pages that are not visible in this conversation. "
                 "It stays visible only to you.")
UNAVAILABLE = ("⚠️ The knowledge base is temporarily unavailable (its database cannot be reached). "
               "Please try again in a minute.")
UNAVAILABLE_VOTE = ("⚠️ The knowledge base is temporarily unavailable (its database cannot be reached), so your "
                    "vote was not recorded. Please try again in a minute.")
RECENT_THREADS = 10_000  # threads remembered in memory, for follow-ups while the database is down


class RecentThreads:
    """The threads this process has answered in, newest last, bounded.

    The durable record of the bot's threads is the query log (`records.thread_question`); this is
    consulted only when the database cannot be reached, so that a follow-up in a thread the bot
    is part of gets "temporarily unavailable" rather than silence — while other people's threads,
    which the bot cannot tell apart without the database, are still left alone."""

    def __init__(self, limit: int = RECENT_THREADS) -> None:
        self.limit = limit
        self._threads: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, channel: str, thread_ts: str) -> None:
        with self._lock:
            self._threads[(channel, thread_ts)] = None
            self._threads.move_to_end((channel, thread_ts))
            if len(self._threads) > self.limit:
                self._threads.popitem(last=False)

    def __contains__(self, key: tuple[str, str]) -> bool:
        with self._lock:
            return key in self._threads


@dataclass
class Docent:
    """What the listeners share: the index, the LLM (or None), access scopes, and the bookkeeping."""

    settings: Settings
    index: Index
    llm: Any | None
    deduper: Deduper
    resyncs: Resyncs
    access: SlackAccess
    threads: RecentThreads = field(default_factory=RecentThreads)


def scopes_for(docent: Docent, channel: str | None, user: str | None, *, is_dm: bool | None = None,
               shared_hint: bool = False) -> list[str]:
    """The access scopes a question asked here may search; an empty list means "answer nothing here".

    The one place every path asks — mentions, thread follow-ups, DMs, /kb ask, /kb status and the
    Share button: in a channel, the scopes visible to that channel whoever asks; in the asker's
    direct message with Docent (`is_dm`; None: looked up), their own and their user groups'; in a
    Slack Connect conversation, public only, or nothing (see `bot.access`).
    """
    return docent.access.scopes(channel, user, is_dm=is_dm, shared_hint=shared_hint)


RATE_LIMIT_RETRIES = 3  # HTTP 429: wait as long as Slack's Retry-After says, then try again
SERVER_ERROR_RETRIES = 2  # HTTP 5xx: try again after a short backoff


def web_client(settings: Settings, token: str | None = None) -> WebClient:
    """The Web API client (the bot token unless `token` is given), pointed at SLACK_API_URL when set
    (a proxy, or a local test server), retrying what Slack asks to be retried (`retry_handlers`)."""
    base_url = settings.slack_api_url or WebClient.BASE_URL
    return WebClient(token=token or secret(settings.slack_bot_token), base_url=base_url.rstrip("/") + "/",
                     retry_handlers=retry_handlers())


def retry_handlers() -> list:
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

        def _can_retry(self, *, state, request, response=None, error=None) -> bool:
            return response is not None and 500 <= response.status_code < 600

    return [ConnectionErrorRetryHandler(), RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
            AnyServerError(max_retry_count=SERVER_ERROR_RETRIES)]


def build_app(
    settings: Settings,
    index: Index,
    client: WebClient,
    llm=None,
    *,
    runner: SyncRunner | None = None,
    socket_mode: bool = False,
    workers: Workers | None = None,
) -> App:
    """The Bolt app with every listener registered. Calls `auth.test` (Bolt checks the token).

    `runner` syncs the configured sources for `/kb resync` (shared with the watcher and the
    scheduler when `kb serve` runs them); by default one over `settings.sources()`. `workers`:
    Bolt's listener pool and the answers pool (`bot.workers`); new ones by default — pass them to
    wait for the answers in flight at shutdown.
    """
    records.create_tables(index)
    runner = runner or SyncRunner(index, settings.sources())
    access = SlackAccess(settings.access_config(), client)
    warn_unconfigured_scopes(access, runner.sources.values())
    docent = Docent(settings, index, llm, Deduper(index), Resyncs(runner), access)
    logging.getLogger("slack_bolt.App").addFilter(_drop_client_token_warning)
    # Messages are answered on a pool of their own (see bot.workers): Bolt acks events before
    # running listeners, but slash commands, buttons and forms are acked *by* their listener.
    workers = workers or Workers()
    answers = workers.answers
    app = App(
        name="docent",
        client=client,
        signing_secret=secret(settings.slack_signing_secret) or "",
        request_verification_enabled=not socket_mode,  # Socket Mode requests are not signed
        listener_executor=workers.listeners,
    )
    from bot import app_home, assistant  # Slack-native surfaces (issue #18)

    conversation.register(app, docent, answers)  # before the `message` listener: Bolt runs the first match
    app_home.register(app, docent)
    assistant.register(app, docent)

    @app.event("app_mention")
    def mention(event, context, client, body):
        answers.submit(on_mention, docent, event, context, client, shared_hint=ext_shared(body))

    @app.event("message")
    def message(event, context, client, body):
        answers.submit(on_message, docent, event, context, client, shared_hint=ext_shared(body))

    @app.event("channel_shared")
    @app.event("channel_unshared")
    def sharing_changed(event):
        docent.access.forget_conversation(event.get("channel") or "")

    @app.event("subteam_members_changed")
    def members_changed(event):
        docent.access.forget_group(event.get("subteam_id") or "")

    @app.event("subteam_updated")
    def group_updated(event):
        docent.access.forget_group((event.get("subteam") or {}).get("id") or "")

    @app.command(COMMAND)
    def kb(ack, command, respond):
        on_kb_command(docent, ack, command, respond)

    @app.action(blocks.ACTION_VOTE_UP)
    def vote_up(ack, body, action, client, respond):
        on_vote(docent, ack, body, action, client, respond, records.UP)

    @app.action(blocks.ACTION_VOTE_DOWN)
    def vote_down(ack, body, action, client, respond):
        on_vote(docent, ack, body, action, client, respond, records.DOWN)

    @app.action(blocks.ACTION_SHARE)
    def share(ack, body, action, client, respond):
        on_share(docent, ack, body, action, client, respond)

    @app.view(blocks.REASON_CALLBACK)
    def reason(ack, body, view):
        on_reason(docent, ack, body, view)

    @app.error
    def unhandled(error, body):
        on_unhandled_error(error, body)

    return app


def ext_shared(body: dict | None) -> bool:
    """Whether an event's envelope says its channel is shared with another organisation."""
    return bool((body or {}).get("is_ext_shared_channel"))


def warn_unconfigured_scopes(access: SlackAccess, sources) -> None:
    """A source scope no `[scopes.*]` table mentions is visible nowhere in Slack: say so once."""
    for source in sources:
        for scope in sorted(source.scopes - {"public"} - set(access.config.scopes)):
            log.warning("access scope %r (source %s) has no [scopes.%s] table in the sources file: "
                        "Slack will not show its pages anywhere", scope, source.name, scope)


def _drop_client_token_warning(record: logging.LogRecord) -> bool:
    """Bolt warns "`token` will be unused" whenever SLACK_BOT_TOKEN is in the environment and a
    client is passed — which is exactly how Docent is meant to run; the warning would mislead."""
    return "`token` will be unused" not in record.getMessage()


# -- questions from messages -------------------------------------------------------------------


def on_mention(docent: Docent, event: dict, context, client: WebClient, shared_hint: bool = False) -> None:
    """@Docent in a channel: answer in the thread of the question."""
    if not is_human_message(event):
        return
    reply_thread = event.get("thread_ts") or event["ts"]
    answer_message(docent, client, event, context.bot_user_id, surface="mention", reply_thread=reply_thread,
                   context_thread=event.get("thread_ts"), shared_hint=shared_hint)


def on_message(docent: Docent, event: dict, context, client: WebClient, shared_hint: bool = False) -> None:
    """Direct messages, and follow-ups in threads the bot has answered (mentions are on_mention's)."""
    if not is_human_message(event):
        return
    bot_user = context.bot_user_id
    text = event.get("text") or ""
    thread_ts = event.get("thread_ts")
    if event.get("channel_type") == "im":
        answer_message(docent, client, event, bot_user, surface="dm", reply_thread=thread_ts, context_thread=thread_ts,
                       is_dm=True, shared_hint=shared_hint)
        return
    if not thread_ts or thread_ts == event.get("ts") or mentions(text, bot_user):
        return
    if mentions_someone_else(text, bot_user) or _SMALL_TALK.match(slack_to_plain(text, bot_user)):
        return  # talking to a colleague, or thanking us: not a question for the bot
    try:
        earlier = records.thread_question(docent.index, event["channel"], thread_ts)
    except Exception as exc:
        if not is_unreachable(exc):
            log.exception("could not look up thread %s in %s; not treating the message as a follow-up",
                          thread_ts, event.get("channel"))
            return
        if (event["channel"], thread_ts) not in docent.threads:
            log.warning("could not look up thread %s in %s (the database cannot be reached); not treating the "
                        "message as a follow-up", thread_ts, event.get("channel"))
            return
        earlier = ""  # the database is down, but this process answered in the thread: reply, never silence
    if earlier is not None:
        answer_message(docent, client, event, bot_user, surface="thread", reply_thread=thread_ts,
                       context_thread=thread_ts, shared_hint=shared_hint)


def is_human_message(event: dict) -> bool:
    """A person's new message — not a bot's (ours or another), not an edit, join or deletion."""
    return (
        event.get("subtype") in HUMAN_SUBTYPES
        and not event.get("bot_id")
        and not event.get("bot_profile")
        and bool(event.get("user"))
    )


def answer_message(
    docent: Docent,
    client: WebClient,
    event: dict,
    bot_user: str | None,
    *,
    surface: str,
    reply_thread: str | None,
    context_thread: str | None,
    is_dm: bool | None = None,
    shared_hint: bool = False,
) -> None:
    """👀 at once, then exactly one reply: the answer, or an apology with a reference id.

    Retrieval searches only the scopes visible here (`scopes_for`); where nothing is (a Slack
    Connect conversation with `shared_channels = "none"`) the reply says so."""
    channel, user, ts = event["channel"], event["user"], event["ts"]
    if not docent.deduper.claim(f"message:{channel}:{ts}"):
        # Slack redelivered the event (a slow ack, a restart), or the same message also arrived
        # as another event (app_mention and message): it is being, or has been, answered.
        log.info("not answering %s/%s again: already claimed", channel, ts)
        return
    started = time.perf_counter()
    add_reaction(client, channel, ts)
    details = dict(surface=surface, user_id=user, channel_id=channel, thread_ts=reply_thread, message_ts=ts)
    question = ""

    def apologise(ref: str) -> None:
        _log_failure(docent.index, question or event.get("text") or "", ref, details)
        post(client, channel, reply_thread, apology(ref))

    def unavailable() -> None:  # no query log row: it lives in the database that is gone
        post(client, channel, reply_thread, UNAVAILABLE)

    with apology_on_error(f"answering {surface} {channel}/{ts}", apologise, unavailable):
        question = conversation.question_in_context(client, event, slack_to_plain(event.get("text") or "", bot_user),
                                                    bot_user)
        if not question:
            post(client, channel, reply_thread, EMPTY_MENTION)
            return
        scopes = scopes_for(docent, channel, user, is_dm=is_dm, shared_hint=shared_hint)
        if not scopes:
            log.info("not answering %s %s/%s: no access scope is visible there", surface, channel, ts)
            post(client, channel, reply_thread, NOT_HERE)
            return
        conversation.answer_in_slack(docent, client, event, question, scopes, context_thread=context_thread,
                                     reply_thread=reply_thread, details=details, started=started)


def retrieval_text(question: str, earlier: str | None) -> str:
    """A follow-up ("and for part-timers?") searched together with the question it follows."""
    return f"{earlier[:CONTEXT_CHARS]} {question}" if earlier else question


def add_reaction(client: WebClient, channel: str, ts: str) -> None:
    """👀: "seen, working on it". A failure here must not stop the answer."""
    try:
        client.reactions_add(channel=channel, name="eyes", timestamp=ts)
    except SlackApiError as exc:
        if exc.response.get("error") != "already_reacted":
            log.warning("could not add 👀 to %s/%s: %s", channel, ts, exc.response.get("error"))
    except Exception as exc:
        log.warning("could not add 👀 to %s/%s: %s", channel, ts, exc)


def post(client: WebClient, channel: str, thread_ts: str | None, text: str, message_blocks: list | None = None) -> None:
    client.chat_postMessage(
        channel=channel, thread_ts=thread_ts, text=neutralise(text),
        blocks=message_blocks or blocks.text_blocks(text), unfurl_links=False, unfurl_media=False,
    )


# -- /kb ---------------------------------------------------------------------------------------


def on_kb_command(docent: Docent, ack, command: dict, respond) -> None:
    """`/kb <subcommand> …`: every branch acks first."""
    sub, _, rest = (command.get("text") or "").strip().partition(" ")
    sub = sub.lower()
    if sub in ("", "help"):
        ack(text=HELP, response_type="ephemeral")
    elif sub == "ask":
        kb_ask(docent, ack, command, respond, rest)
    elif sub == "status":
        ack()
        kb_status(docent, command, respond)
    elif sub == "resync":
        kb_resync(docent, ack, command, respond, rest.strip())
    else:
        ack(text=f"I don't know `/kb {neutralise(escape(sub[:40]))}`.\n\n{HELP}", response_type="ephemeral")


def kb_ask(docent: Docent, ack, command: dict, respond, text: str) -> None:
    """A private answer through the response URL, with a "Share in channel" button."""
    question = slack_to_plain(text)
    if not question:
        ack(text="Usage: `/kb ask <question>`, e.g. `/kb ask how do I expense a taxi?`", response_type="ephemeral")
        return
    ack(text="🔎 Looking that up…", response_type="ephemeral")
    started = time.perf_counter()
    channel, user = command.get("channel_id"), command["user_id"]
    details = dict(surface="command", user_id=user, channel_id=channel)

    def apologise(ref: str) -> None:
        _log_failure(docent.index, question, ref, details)
        respond(text=apology(ref), response_type="ephemeral", replace_original=True)

    def unavailable() -> None:
        respond(text=UNAVAILABLE, response_type="ephemeral", replace_original=True)

    with apology_on_error("/kb ask", apologise, unavailable):
        scopes = scopes_for(docent, channel, user)
        if not scopes:
            respond(text=NOT_HERE, response_type="ephemeral", replace_original=True)
            return
        answer = answer_question(docent.index, question, scopes=scopes, llm=docent.llm)
        timings = {"slack_total": round((time.perf_counter() - started) * 1000, 2)}
        _log_answer(docent.index, question, answer, None, timings, details)
        respond(text=blocks.fallback_text(answer), blocks=blocks.answer_blocks(answer, share=True),
                response_type="ephemeral", replace_original=True)


def kb_status(docent: Docent, command: dict, respond) -> None:
    """Documents, chunks, last sync per source, failures — of what could be searched here.

    Anyone may ask, so it tells no more than `/kb ask` could: documents and chunks are counted in
    the scopes visible where it is asked (as `kb_ask` computes them), and a source's last sync and
    failed documents are shown only when every scope that source can carry is visible here — a
    sync run counts a whole source, and a failed page may not know its own scope. Other sources
    and scopes are neither named nor hinted at.
    """
    with apology_on_error("/kb status", lambda ref: respond(text=apology(ref), response_type="ephemeral")):
        visible = set(scopes_for(docent, command.get("channel_id"), command.get("user_id")))
        info = docent.index.status(scopes=sorted(visible))
        shown = {name for name, source in docent.resyncs.runner.sources.items() if source.scopes <= visible}
        info["last_runs"] = [run for run in info["last_runs"] if run.source in shown]
        info["failed"] = [(doc_id, error) for doc_id, error in info["failed"] if doc_id.split(":", 1)[0] in shown]
        info["skipped"] = [(doc_id, why) for doc_id, why in info["skipped"] if doc_id.split(":", 1)[0] in shown]
        info["unconfigured"] = unconfigured_here(docent, visible)
        text = status_text(info, visible_here=True)
        respond(text=neutralise(text), blocks=blocks.text_blocks(text), response_type="ephemeral")


def unconfigured_here(docent: Docent, visible: set[str]) -> list[str]:
    """Sources still answering although the configuration no longer names them — only those whose
    every page is in a scope visible here (naming one tells no more than its answers would)."""
    from indexing import catalog

    with docent.index.session() as s:
        rows = catalog.unconfigured(s, list(docent.resyncs.runner.sources.values()))
        return [row.name for row in rows if catalog.scopes_of(s, row.name) <= visible]


def status_text(info: dict, visible_here: bool = False) -> str:
    """`info` from `Index.status`, as a Slack message; `visible_here`: it was limited to a conversation."""
    docs = ", ".join(f"{n} {str(k).lower()}" for k, n in sorted(info["documents"].items())) or "none"
    where = " searchable here" if visible_here else ""
    lines = ["*Knowledge base status*", f"Documents{where}: {docs}", f"Chunks: {info['chunks']}"]
    for run in info["last_runs"]:
        when = run.finished_at or run.started_at
        state = "" if run.finished_at else " (still running)"
        refused = f" — *refused, nothing deleted*: {escape((run.reason or '')[:300])}" if run.result == "refused" else ""
        lines.append(
            f"Last sync of `{escape(run.source)}` ({escape(run.trigger)}) {when:%Y-%m-%d %H:%M} UTC{state}: "
            f"{run.added} added, {run.updated} updated, {run.unchanged} unchanged, {run.deleted} deleted, "
            f"{run.failed} failed, {run.skipped} skipped{refused}"
        )
    for name in info.get("unconfigured", []):
        lines.append(f"Source `{escape(name)}` is no longer configured; its pages still answer until an admin "
                     f"runs `kb forget {escape(name)}`.")
    for title, rows in (("Failed documents", info["failed"]), ("Skipped pages (nothing to index)", info.get("skipped", []))):
        if rows:
            lines.append(f"*{title}* ({len(rows)}):")
            lines += [f"• `{escape(doc_id)}`: {escape((why or '')[:200])}" for doc_id, why in rows[:10]]
    return "\n".join(lines)


def kb_resync(docent: Docent, ack, command: dict, respond, source: str) -> None:
    """Admins only: a real sync in the background; progress and a summary through the response URL.
    `--allow-deletes` after the source name lets a deliberate mass deletion through the guard."""
    user = command["user_id"]
    words = source.split()
    allow_deletes = "--allow-deletes" in words
    source = " ".join(w for w in words if w != "--allow-deletes")
    index = docent.index
    if user not in docent.settings.admin_users:
        ack(text="Sorry, `/kb resync` is for Docent admins only. Ask one of them, or a wiki owner, to run it.",
            response_type="ephemeral")
        _record_admin(index, user, "resync", source, allowed=False, result="refused: not in KB_ADMIN_USERS")
        return
    known = docent.resyncs.names
    names = ", ".join(f"`{escape(n)}`" for n in known)
    name = source or (known[0] if len(known) == 1 else "")
    if not name:
        ack(text=f"Which source? `/kb resync <source>`, with one of: {names}.", response_type="ephemeral")
        return
    if name not in known:
        ack(text=f"There is no source `{neutralise(escape(name[:80]))}`. Known sources: {names}.", response_type="ephemeral")
        _record_admin(index, user, "resync", name, allowed=True, result="refused: unknown source")
        return
    ack(text=f"🔄 Starting a resync of `{escape(name)}`" + (" (deletions allowed)" if allow_deletes else "") + "…",
        response_type="ephemeral")
    action_id = _record_admin(index, user, "resync", name + (" --allow-deletes" if allow_deletes else ""),
                              allowed=True, result="started")

    def progress(done: int, total: int) -> None:
        respond(text=f"🔄 Resync of `{escape(name)}`: {done} of {total} documents so far…", response_type="ephemeral",
                replace_original=False)

    def finished(report, error) -> None:
        if report is None and error is None:
            result = "refused: another sync of this source was running"
            respond(text=f"Another sync of `{escape(name)}` is running right now (the watcher, the schedule or "
                         f"another admin); its changes will be indexed when it ends.",
                    response_type="ephemeral", replace_original=False)
        elif error is None and report.refused:
            result = f"refused: {report.refused}"
            respond(text=f"⚠️ The resync of `{escape(name)}` deleted nothing: {neutralise(escape(report.refused))}. "
                         f"If those pages are meant to go, run `/kb resync {escape(name)} --allow-deletes`.",
                    response_type="ephemeral", replace_original=False)
        elif error is not None:
            ref = reference_id()
            log.error("resync of %s failed [ref %s]: %s", name, ref, error)
            result = f"failed [ref {ref}]: {type(error).__name__}: {error}"
            respond(text=f"❌ The resync of `{escape(name)}` failed. {apology(ref)}", response_type="ephemeral",
                    replace_original=False)
        else:
            result = summary(report)
            respond(text=f"✅ Resync finished — {neutralise(escape(result))}", response_type="ephemeral",
                    replace_original=False)
        if action_id is not None:
            _quietly(records.finish_admin_action, index, action_id, result)

    with apology_on_error("/kb resync", lambda ref: respond(text=apology(ref), response_type="ephemeral")):
        if not docent.resyncs.start(name, progress, finished, allow_deletes=allow_deletes):
            respond(text=f"A resync of `{escape(name)}` is already running; you will see its summary when it ends.",
                    response_type="ephemeral", replace_original=False)
            if action_id is not None:
                _quietly(records.finish_admin_action, index, action_id, "refused: already running")


# -- buttons and the form ----------------------------------------------------------------------


def on_vote(docent: Docent, ack, body: dict, action: dict, client: WebClient, respond, vote: str) -> None:
    """One stored vote per user per answer; the message shows the tally; 👎 opens the form."""
    ack()
    user, answer_id = body["user"]["id"], action["value"]
    if vote == records.DOWN and body.get("trigger_id"):
        try:  # first: the trigger id expires 3 s after the click
            client.views_open(trigger_id=body["trigger_id"], view=blocks.reason_modal(answer_id))
        except Exception:
            log.warning("could not open the 👎 form for %s", answer_id, exc_info=True)
    with apology_on_error("recording a vote", lambda ref: respond(
            text=apology(ref), response_type="ephemeral", replace_original=False), lambda: respond(
            text=UNAVAILABLE_VOTE, response_type="ephemeral", replace_original=False)):
        votes = records.record_vote(docent.index, answer_id, user, vote)
        show_votes(docent, body, answer_id, votes, client, respond)


def show_votes(docent: Docent, body: dict, answer_id: str, votes: dict, client: WebClient, respond) -> None:
    """Refresh the answer with its tally: `chat.update` for a posted message; the response URL for
    a private one (ephemeral messages cannot be updated through the Web API)."""
    container = body.get("container") or {}
    message = body.get("message")
    if message and message.get("blocks") and not container.get("is_ephemeral"):
        client.chat_update(channel=container.get("channel_id") or body["channel"]["id"], ts=message["ts"],
                           text=message.get("text") or "", blocks=blocks.with_votes(message["blocks"], votes))
        return
    row = records.find_answer(docent.index, answer_id)
    if row is None:
        respond(text="Thanks — your vote was recorded.", response_type="ephemeral", replace_original=False)
        return
    answer = records.answer_from_log(row)
    respond(text=blocks.fallback_text(answer), blocks=blocks.answer_blocks(answer, share=True, votes=votes),
            response_type="ephemeral", replace_original=True)


def on_share(docent: Docent, ack, body: dict, action: dict, client: WebClient, respond) -> None:
    """Post a private answer publicly in the channel, then remove the private copy — only if every
    page it cites (or lists as nearest) is visible in that channel now; otherwise refuse."""
    ack()
    user, answer_id = body["user"]["id"], action["value"]
    with apology_on_error("sharing an answer", lambda ref: respond(
            text=apology(ref), response_type="ephemeral", replace_original=False), lambda: respond(
            text=UNAVAILABLE, response_type="ephemeral", replace_original=False)):
        row = records.find_answer(docent.index, answer_id)
        if row is None:
            respond(text="Sorry, I can no longer find this answer to share it — please ask again.",
                    response_type="ephemeral", replace_original=False)
            return
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        scopes = scopes_for(docent, channel, user)
        if not scopes or not shareable(docent.index, row.doc_ids, scopes):
            log.info("refused to share answer %s in %s: it uses pages not visible there", answer_id, channel)
            respond(text=NOT_HERE if not scopes else SHARE_REFUSED, response_type="ephemeral", replace_original=False)
            return
        answer = records.answer_from_log(row)
        public = blocks.answer_blocks(answer, shared_by=user, question=row.question)
        try:
            client.chat_postMessage(channel=channel, text=blocks.fallback_text(answer), blocks=public,
                                    unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            if exc.response.get("error") not in ("not_in_channel", "channel_not_found"):
                raise
            # the bot is not in this channel; the command's response URL may still post there
            respond(text=blocks.fallback_text(answer), blocks=public, response_type="in_channel", replace_original=False)
        respond(delete_original=True)


def shareable(index: Index, doc_ids: list[str], scopes: list[str]) -> bool:
    """Whether every document an answer used is, now, in one of `scopes` (a document that is no
    longer indexed cannot be checked, so it is not shareable)."""
    access = records.document_access(index, doc_ids)
    return all(access.get(doc_id) in scopes for doc_id in doc_ids)


def on_reason(docent: Docent, ack, body: dict, view: dict) -> None:
    """The 👎 form's text, stored with the vote. Stored before the ack — one small write — because
    a modal offers no other way to tell the user that saving failed."""
    user, answer_id = body["user"]["id"], view.get("private_metadata") or ""
    value = (((view.get("state") or {}).get("values") or {}).get(blocks.REASON_BLOCK) or {}).get(blocks.REASON_INPUT) or {}
    reason = (value.get("value") or "").strip() or None
    try:
        records.record_reason(docent.index, answer_id, user, reason)
    except Exception as exc:
        ref = reference_id()
        if is_unreachable(exc):
            log.warning("could not store a 👎 reason for %s: the database cannot be reached: %s", answer_id, _first_line(exc))
            message = "Sorry, this could not be saved: the knowledge base is temporarily unavailable. Please try again in a minute."
        else:
            log.exception("could not store a 👎 reason for %s [ref %s]", answer_id, ref)
            message = f"Sorry, this could not be saved (reference {ref})."
        ack(response_action="errors", errors={blocks.REASON_BLOCK: message})
        return
    ack()


def on_unhandled_error(error: Exception, body: dict) -> None:
    """The last resort for errors outside the listeners' own handling (e.g. in middleware)."""
    ref = reference_id()
    log.error("unhandled error [ref %s] for a %s request", ref, (body or {}).get("type"), exc_info=error)


# -- never silent ------------------------------------------------------------------------------


def reference_id() -> str:
    return uuid.uuid4().hex[:8]


def apology(ref: str) -> str:
    return (f"Sorry — something went wrong on my side and I could not answer this. Please try again in a "
            f"minute; if it keeps happening, tell the Docent admins the reference `{ref}`.")


@contextmanager
def apology_on_error(what: str, apologise: Callable[[str], None],
                     unavailable: Callable[[], None] | None = None) -> Iterator[None]:
    """Any exception in the block is logged with a fresh reference id, and `apologise(ref)` tells
    the user — so a failure is never silence, and the user's reference finds the traceback.

    A lost database (`is_unreachable`) is not a bug to hunt down by reference: it is one warning
    line, and `unavailable()` (when given) tells the user to try again shortly. Nothing has to be
    restarted — the connection pool reconnects once the database is back."""
    try:
        yield
    except Exception as exc:
        ref = reference_id()
        tell = lambda: apologise(ref)  # noqa: E731
        if is_unreachable(exc):
            log.warning("%s failed: the database cannot be reached [ref %s]: %s", what, ref, _first_line(exc))
            tell = unavailable or tell
        else:
            log.exception("%s failed [ref %s]", what, ref)
        try:
            tell()
        except Exception:
            log.exception("could not deliver the apology [ref %s]", ref)


def _first_line(exc: BaseException) -> str:
    """An exception as one log line (SQLAlchemy's messages run to several)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _log_answer(index: Index, question: str, answer, earlier: str | None, timings: dict, details: dict) -> None:
    """The query log; a failure to write it is logged, and the user still gets the answer."""
    _quietly(records.log_query, index, question=question, answer=answer, context_question=earlier,
             timings_ms=timings, **details)


def _log_failure(index: Index, question: str, ref: str, details: dict) -> None:
    _quietly(records.log_query, index, question=question or "(empty)", error_ref=ref, **details)


def _record_admin(index: Index, user: str, action: str, argument: str, allowed: bool, result: str) -> int | None:
    return _quietly(records.log_admin_action, index, user, action, argument, allowed, result)


def _quietly(function: Callable, *args, **kwargs):
    """Bookkeeping that must not turn a delivered answer into an error."""
    try:
        return function(*args, **kwargs)
    except Exception:
        log.exception("could not write %s", getattr(function, "__name__", "a record"))
        return None
