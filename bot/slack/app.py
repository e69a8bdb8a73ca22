"""The Bolt app: built in one place, its last-resort error handler, and every listener module registered on it.

Each listener module (`bot.slack.listeners`: `conversation`, `questions`, `access_changes`,
`commands`, `feedback`, `home_tab`, `assistant`, ...) exposes `register(app, services)`; a new Slack
feature adds its module to `LISTENERS`. Order matters where two listeners match one event: Bolt runs
only the first, so `conversation`'s edit and deletion listeners come before `questions`' `message`.
Listeners are small functions taking Bolt's injected arguments by name (`ack`, `body`,
`client`, `respond`, ...), ack first, and hand slow work — retrieval, the LLM, the reply — to one named
place: the answers pool (`Services.answers`, see `bot.slack.workers`).

What the listeners use is `bot.slack.services.Services`, built here: the listener modules import
that module, this one imports them, and none of them imports this one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from slack_bolt import App
from slack_sdk import WebClient

from bot.knowledge import KnowledgeBase
from bot.settings import Settings, secret
from bot.slack.audiences import SlackAccess
from bot.slack.errors import unhandled
from bot.slack.listeners import (
    access_changes,
    answered_gaps,
    assistant,
    commands,
    conversation,
    feedback,
    help_channels,
    home_tab,
    questions,
    suggested,
    verified_offer,
    verify,
)
from bot.slack.resync_runs import Resyncs
from bot.slack.services import Services
from bot.slack.store import Deduper
from bot.slack.workers import Workers
from indexing.index import Index
from indexing.ingest import SyncRunner
from sources import SourceConfig

if TYPE_CHECKING:
    from bot.answering import LLMClient

log = logging.getLogger(__name__)

# Every listener module, each with `register(app, services)`: a new Slack feature is one more entry.
LISTENERS = (conversation, help_channels, answered_gaps, questions, access_changes, commands, feedback, verified_offer,
             verify, home_tab, suggested, assistant)


def slack_access(settings: Settings, client: WebClient | None) -> SlackAccess:
    """Who sees what in Slack, as the sources file's `[scopes.*]` and `[channels.*]` say."""
    return SlackAccess(settings.access_config(), client, channels=settings.channel_settings())


def build_app(
    settings: Settings,
    index: Index,
    client: WebClient,
    llm: LLMClient | None = None,
    *,
    kb: KnowledgeBase | None = None,
    socket_mode: bool = False,
    workers: Workers | None = None,
    access: SlackAccess | None = None,
) -> App:
    """The Bolt app with every listener registered. Calls `auth.test` (Bolt checks the token).

    `kb`: the knowledge base the listeners ask — `kb serve` passes the composition root's
    (`bot.wiring`), whose runner the watcher and the scheduler share (`/kb resync` syncs through
    it); by default one over `index`, `llm` and `settings.sources()`. `workers`:
    Bolt's listener pool and the answers pool (`bot.slack.workers`); new ones by default — pass
    them to wait for the answers in flight at shutdown. `access`: who sees what (`slack_access`);
    pass it to have the other replicas told of access events (`bot.serve.start_listening`).
    """
    kb = kb or KnowledgeBase(index, llm=llm, runner=SyncRunner(index, settings.sources()))
    access = access or slack_access(settings, client)
    warn_unconfigured_scopes(access, kb.configured)
    # Messages are answered on a pool of their own (see bot.slack.workers): Bolt acks events before
    # running listeners, but slash commands, buttons and forms are acked *by* their listener.
    workers = workers or Workers()
    services = Services(settings, kb, index, access, Deduper(index), Resyncs(kb), workers.answers,
                        channels=access.channels)
    logging.getLogger("slack_bolt.App").addFilter(_drop_client_token_warning)
    app = App(
        name="docent",
        client=client,
        signing_secret=secret(settings.slack_signing_secret) or "",
        request_verification_enabled=not socket_mode,  # Socket Mode requests are not signed
        listener_executor=workers.listeners,
    )
    for module in LISTENERS:
        module.register(app, services)
    app.error(unhandled)  # the last resort: an error outside the listeners' own handling (e.g. in middleware)
    return app


def warn_unconfigured_scopes(access: SlackAccess, sources: Iterable[SourceConfig]) -> None:
    """A source scope no `[scopes.*]` table mentions is visible nowhere in Slack: say so once."""
    for source in sources:
        for scope in sorted(source.scopes - {"public"} - set(access.config.scopes)):
            log.warning("access scope %r (source %s) has no [scopes.%s] table in the sources file: "
                        "Slack will not show its pages anywhere", scope, source.name, scope)


def _drop_client_token_warning(record: logging.LogRecord) -> bool:
    """Bolt warns "`token` will be unused" whenever SLACK_BOT_TOKEN is in the environment and a
    client is passed — which is exactly how Docent is meant to run; the warning would mislead."""
    return "`token` will be unused" not in record.getMessage()
