"""The App Home tab: `app_home_opened` → `views.publish`, and the admins' resync buttons on it.

What each person may see is decided here, then `bot.slack.home_blocks` renders it:

- a member's view is built as if they asked in their direct message with Docent (the
  `Audience` of `SlackAccess.audience(is_dm=True)`: their scopes and their user groups'): an example
  question is offered only if it was asked where everyone could read it — a mention or a thread
  reply in a public channel of the workspace (`ChannelKind.PUBLIC`; never a private channel, a DM,
  a Slack Connect channel, a private `/kb ask`, or an older row whose kind is unknown) — by at
  least `EXAMPLE_ASKERS` people (one person's question is theirs, not an example), and every page
  its answer cited is visible to them; a page title next to their own question is shown only if
  that page is visible to them now;
- an admin (`KB_ADMIN_USERS`) also gets the index health of every configured source and the
  gaps report, with all titles: the Home tab is theirs alone — except the questions people
  answered in channels, shown only where the admin's own scopes cover that channel's, and the
  verified answers due for review, only those the admin could be given (`bot.slack.verified_review`);
- the suggested questions for verified answers (`bot.verified.suggestions`): an admin sees those
  of the answers they could be given; a channel's `verifiers` (`bot.slack.listeners.verify.verifies_in`)
  those asked in their channels. Their buttons are `bot.slack.listeners.suggested`'s.

A resync button runs the same background sync as `/kb resync` (`Services.resyncs`, recorded as
an admin action), and the Home tab is published again when it starts and when it ends. Events
are acked by Bolt and buttons by their listener at once; the view is built and published on the
answers pool (the admin's gaps report can take seconds).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App
from slack_sdk import WebClient

from bot import messages
from bot.knowledge import KnowledgeBase, SourcePages, sync_counts
from bot.records import Database, normalised, question_log
from bot.slack.errors import apology_on_error
from bot.slack.home_blocks import ACTION_REFRESH, ACTION_RESYNC, AskedQuestion, HomeData, SourceHealth, home_view
from bot.slack.listeners.verify import verifies_in
from bot.slack.resync_runs import summary
from bot.slack.services import Services
from bot.slack.verified_review import due_for_review
from bot.verified import store, suggestions
from indexing.search import Outcome

if TYPE_CHECKING:
    from indexing.ingest import SyncReport
    from indexing.storage import SyncRun

log = logging.getLogger(__name__)

EXAMPLES = 5
EXAMPLE_ASKERS = 2
MINE = 5
EXAMPLE_ROWS = 5000  # the latest answered questions looked at for examples
EXAMPLE_SURFACES = ("mention", "thread")  # asked in the open; a `/kb ask` is private even in a public channel


def register(app: App, services: Services) -> None:
    """The Home tab, its refresh button and the admins' resync buttons."""

    @app.event("app_home_opened")
    def home_opened(event: dict[str, Any], client: WebClient) -> None:
        if event.get("tab", "home") == "home":
            services.answers.submit(publish_home, services, client, event["user"])

    @app.action(ACTION_REFRESH)
    def refresh(ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        ack()
        services.answers.submit(publish_home, services, client, body["user"]["id"])

    @app.action(ACTION_RESYNC)
    def resync(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        ack()
        services.answers.submit(start_resync, services, client, body["user"]["id"], action.get("value") or "")


def publish_home(services: Services, client: WebClient, user: str, note: str | None = None) -> None:
    """Build and publish `user`'s Home tab; a failure is logged (Slack shows the last view)."""
    try:
        view = home_view(home_data(services, user, note))
    except Exception:
        log.exception("could not build the App Home for %s", user)
        view = home_view(HomeData(user=user, is_admin=False, examples=[], mine=[],
                                  note=messages.HOME_NOT_LOADED))
    try:
        client.views_publish(user_id=user, view=view)
    except Exception:
        log.exception("could not publish the App Home for %s", user)


def home_data(services: Services, user: str, note: str | None = None) -> HomeData:
    is_admin = user in services.settings.admin_users
    visible = visible_in_dm(services, user)
    data = HomeData(user=user, is_admin=is_admin, examples=example_questions(services.db, visible),
                    mine=own_questions(services.db, services.kb, user, visible), note=note,
                    suggested=suggested_for(services, user, is_admin, visible))
    if is_admin:
        data.sources = [source_health(pages) for pages in services.kb.source_pages(services.resyncs.names)]
        # the report's titles are all the admin's; what people said in a channel only where the
        # admin's own scopes cover that channel's (bot.records.gaps)
        data.gaps = services.kb.gaps(7).answers_visible_in(
            visible, include_private=services.settings.kb_gaps_include_private_channels)
        # a Verify button on each answered gap they may verify (bot.slack.listeners.verify: the channel's verifiers)
        data.verifiable = {(a.channel, a.thread_ts) for a in data.gaps.answered_by_people
                           if verifies_in(services, user, a.channel)}
        data.due = due_for_review(services.db, visible)  # likewise: those the admin may read in their DM
    return data


def suggested_for(services: Services, user: str, is_admin: bool, visible: set[str]) -> list[suggestions.Suggestion] | None:
    """The open suggested questions `user` may add: an admin's, of the answers visible to them; a
    channel verifier's, asked in their channels; None for anyone else (no section)."""
    channels = {c for c, settings in services.channels.channels.items()
                if settings.verifiers and verifies_in(services, user, c)} if not is_admin else set()
    if not is_admin and not channels:
        return None
    with services.db.session() as session:
        found = suggestions.listing(session)
        if is_admin:
            ids = sorted({s.answer_id for s in found})
            shown = {a.id for a in store.listing(session, ids=ids) if set(a.scopes) & visible}
            return [s for s in found if s.answer_id in shown]
    return [s for s in found if s.channel_id in channels]


def visible_in_dm(services: Services, user: str) -> set[str]:
    """The scopes `user` may read in their direct message with Docent (the Home tab, the
    assistant's prompts): what they would be answered from there."""
    return set(services.access.audience(None, user, is_dm=True).scopes or ())


def example_questions(db: Database, visible: set[str], limit: int = EXAMPLES) -> list[str]:
    """The most asked answered questions, asked in public channels, whose cited pages are all
    visible (see the docstring). Shown to everyone: the App Home, the assistant's prompts."""
    rows = question_log.answered_in_public(db, EXAMPLE_SURFACES, EXAMPLE_ROWS)
    access = question_log.document_access(db, sorted({d for r in rows for d in r.doc_ids}))
    askers: dict[str, set[str]] = defaultdict(set)
    wording: dict[str, str] = {}
    for row in rows:
        if row.doc_ids and all(access.get(d) in visible for d in row.doc_ids):
            key = normalised(row.question)
            askers[key].add(row.user_id)
            wording.setdefault(key, row.question)  # the latest wording
    popular = sorted((k for k in askers if len(askers[k]) >= EXAMPLE_ASKERS), key=lambda k: (-len(askers[k]), k))
    return [wording[k] for k in popular[:limit]]


def own_questions(db: Database, kb: KnowledgeBase, user: str, visible: set[str],
                  limit: int = MINE) -> list[AskedQuestion]:
    """The user's last questions, newest first, each with the first cited page they may see now."""
    rows = question_log.questions_of(db, user, limit)
    docs = kb.pages([d for r in rows for d in r.doc_ids])
    mine = []
    for row in rows:
        outcome = None if row.answer_id is None else Outcome.logged(row.outcome, row.found)
        asked = AskedQuestion(question=row.question, outcome=outcome.value if outcome else "failed", at=row.created_at)
        if outcome is not None and outcome.found:
            page = next((docs[d] for d in row.doc_ids if d in docs and docs[d].access in visible), None)
            if page is not None:
                asked.page_title, asked.page_url = page.title, page.url
        mine.append(asked)
    return mine


def source_health(pages: SourcePages) -> SourceHealth:
    """A source's state as the admins' Home tab shows it: counts, problems, the last and the last refused sync."""
    refused = pages.last_refused
    return SourceHealth(
        name=pages.name, pages=dict(pages.pages), problems=list(pages.problems),
        last_sync=run_line(pages.last_run) if pages.last_run is not None else "Never synced.",
        refused=None if refused is None else
        f"{refused.started_at:%Y-%m-%d %H:%M} UTC: {refused.reason or 'no reason recorded'}")


def run_line(run: SyncRun) -> str:
    when = run.finished_at or run.started_at
    state = run.result if run.finished_at else "still running"
    return (f"Last sync {when:%Y-%m-%d %H:%M} UTC ({run.trigger}, {state}): {sync_counts(run)}")


def start_resync(services: Services, client: WebClient, user: str, name: str) -> None:
    """`resync_from_home` on the answers pool: a failure is logged with a reference id and shown
    on the Home tab, never lost with the pool's future."""
    note = lambda ref: publish_home(services, client, user, note=messages.apology(ref))  # noqa: E731
    with apology_on_error(f"the App Home resync of {name[:80]!r}", note):
        resync_from_home(services, client, user, name)


def resync_from_home(services: Services, client: WebClient, user: str, name: str) -> None:
    """The Home tab's resync button: admins only (checked again here: a view can be replayed)."""
    db = services.db
    if user not in services.settings.admin_users:
        question_log.log_admin_action(db, user, "resync", name, allowed=False,
                                 result="refused: not in KB_ADMIN_USERS (App Home)")
        return
    if name not in services.resyncs.names:
        publish_home(services, client, user, note=messages.home_source_gone(name[:80]))
        return
    action_id = question_log.log_admin_action(db, user, "resync", name, allowed=True, result="started (App Home)")

    def finished(report: SyncReport | None, error: BaseException | None) -> None:
        if error is not None:
            result = f"failed: {type(error).__name__}: {error}"
        elif report is None:
            result = "refused: another sync of this source was running"
        elif report.refused:
            result = f"refused: {report.refused}"
        else:
            result = summary(report)
        question_log.finish_admin_action(db, action_id, result)
        publish_home(services, client, user, note=messages.home_resync_done(name, result))

    if services.resyncs.start(name, lambda done, total: None, finished):
        publish_home(services, client, user, note=messages.home_resync_started(name))
    else:
        question_log.finish_admin_action(db, action_id, "refused: already running")
        publish_home(services, client, user, note=f"A resync of `{name}` is already running.")
