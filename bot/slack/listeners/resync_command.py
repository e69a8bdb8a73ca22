"""`/kb resync`: admins start a real sync of a configured source from Slack (`bot.slack.resync_runs`
runs it in the background); progress and a summary come back through the response URL.

Admins only (KB_ADMIN_USERS), and every attempt is recorded (`question_log.log_admin_action`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, Respond

from bot import messages
from bot.records import Database, question_log
from bot.slack.errors import apology_on_error, quietly, reference_id
from bot.slack.mrkdwn import escape, neutralise
from bot.slack.resync_runs import summary
from bot.slack.services import DELIVERY, Services, first_time

if TYPE_CHECKING:
    from indexing.ingest import SyncReport

log = logging.getLogger(__name__)


def resync(services: Services, ack: Ack, command: dict[str, Any], respond: Respond, text: str) -> None:
    """Admins only: a real sync in the background; progress and a summary through the response URL.
    `--allow-deletes` after the source name lets a deliberate mass deletion through the guard."""
    user = command["user_id"]
    words = text.split()
    allow_deletes = "--allow-deletes" in words
    source = " ".join(w for w in words if w != "--allow-deletes")
    db = services.db
    if user not in services.settings.admin_users:
        ack(text=messages.RESYNC_ADMINS_ONLY, response_type="ephemeral")
        _record_admin(db, user, source, allowed=False, result="refused: not in KB_ADMIN_USERS")
        return
    configured = services.resyncs.names
    names = ", ".join(f"`{escape(n)}`" for n in configured)
    name = source or (configured[0] if len(configured) == 1 else "")
    if not name:
        ack(text=messages.which_source(names), response_type="ephemeral")
        return
    if name not in configured:
        ack(text=messages.no_such_source(neutralise(escape(name[:80])), names), response_type="ephemeral")
        _record_admin(db, user, name, allowed=True, result="refused: unknown source")
        return
    ack(text=messages.resync_starting(escape(name), allow_deletes), response_type="ephemeral")
    if not first_time(services, command.get(DELIVERY)):  # a replay of this request: acknowledged, not run twice
        return
    action_id = _record_admin(db, user, name + (" --allow-deletes" if allow_deletes else ""),
                              allowed=True, result="started")

    def progress(done: int, total: int) -> None:
        respond(text=messages.resync_progress(escape(name), done, total), response_type="ephemeral",
                replace_original=False)

    def finished(report: SyncReport | None, error: BaseException | None) -> None:
        if error is not None:
            ref = reference_id()
            log.error("resync of %s failed [ref %s]: %s", name, ref, error)
            result = f"failed [ref {ref}]: {type(error).__name__}: {error}"
            respond(text=messages.resync_failed(escape(name), ref), response_type="ephemeral",
                    replace_original=False)
        elif report is None:
            result = "refused: another sync of this source was running"
            respond(text=messages.resync_busy(escape(name)), response_type="ephemeral", replace_original=False)
        elif report.refused:
            result = f"refused: {report.refused}"
            respond(text=messages.resync_refused(escape(name), neutralise(escape(report.refused))),
                    response_type="ephemeral", replace_original=False)
        else:
            result = summary(report)
            respond(text=messages.resync_finished(neutralise(escape(result))), response_type="ephemeral",
                    replace_original=False)
        if action_id is not None:
            quietly(question_log.finish_admin_action, db, action_id, result)

    with apology_on_error("/kb resync", lambda ref: respond(text=messages.apology(ref), response_type="ephemeral")):
        if not services.resyncs.start(name, progress, finished, allow_deletes=allow_deletes):
            respond(text=f"A resync of `{escape(name)}` is already running; you will see its summary when it ends.",
                    response_type="ephemeral", replace_original=False)
            if action_id is not None:
                quietly(question_log.finish_admin_action, db, action_id, "refused: already running")


def _record_admin(db: Database, user: str, argument: str, allowed: bool, result: str) -> int | None:
    return quietly(question_log.log_admin_action, db, user, "resync", argument, allowed, result)
