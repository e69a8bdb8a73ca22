"""The App Home's **Add as a question** and **Dismiss** on a suggested question for a verified answer.

A question that took a verified answer when it was offered in a public channel
(`bot.slack.listeners.verified_offer`) is a suggested question (`bot.verified.suggestions`); the
App Home lists them to admins and the channel's verifiers (`bot.slack.listeners.home_tab`). A click:

- is acked at once; the rest runs on the answers pool, and a replay of the same signed click does
  nothing (`services.first_time`);
- is checked again on the server — a view can be replayed or forged: the clicker must verify in the
  channel the question was asked in (`bot.slack.listeners.verify.verifies_in`: `KB_ADMIN_USERS`
  everywhere, and the channel's `verifiers`), else it is refused and the refusal logged as an admin
  action (`allowed=False`), as the Verify form's is;
- adds the wording to the answer's questions (`suggestions.accept`: given the answer from then on,
  in every process) or dismisses it, committed, logged as the admin action `kb answers accept` /
  `dismiss` logs, and the App Home is published again with one line saying what happened — or why
  not (`VerifiedError`: one line).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App, BoltRequest
from slack_sdk import WebClient

from bot import messages
from bot.records import question_log
from bot.slack.errors import apology_on_error, quietly
from bot.slack.home_blocks import ACTION_SUGGESTION_ADD, ACTION_SUGGESTION_DISMISS
from bot.slack.listeners.home_tab import publish_home
from bot.slack.listeners.verify import verifies_in
from bot.slack.services import Services, delivery_key, first_time
from bot.verified import Change, VerifiedError, suggestions

log = logging.getLogger(__name__)

ACCEPT, DISMISS = "answers accept", "answers dismiss"  # the admin log's actions, as `kb answers` logs them


def register(app: App, services: Services) -> None:
    @app.action(ACTION_SUGGESTION_ADD)
    def add(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, request: BoltRequest) -> None:
        ack()
        services.answers.submit(resolve, services, client, body["user"]["id"], str(action.get("value") or ""), ACCEPT,
                                delivery_key(request))

    @app.action(ACTION_SUGGESTION_DISMISS)
    def dismiss(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient,
                request: BoltRequest) -> None:
        ack()
        services.answers.submit(resolve, services, client, body["user"]["id"], str(action.get("value") or ""), DISMISS,
                                delivery_key(request))


def resolve(services: Services, client: WebClient, user: str, value: str, action: str, delivery: str = "") -> None:
    """Accept or dismiss suggested question `value` for `user`, if they may (see the module docstring)."""
    if not first_time(services, delivery):
        return

    def note(text: str) -> None:
        publish_home(services, client, user, note=text)

    with apology_on_error(f"{action} {value[:20]!r} from the App Home", lambda ref: note(messages.apology(ref)),
                          lambda: note(messages.UNAVAILABLE)):
        db = services.db
        with db.session() as session:
            found = suggestions.get(session, int(value)) if value.isdigit() else None
        if found is None:
            note(messages.suggestion_failed(f"no suggested question {value[:20]}"))
            return
        may = verifies_in(services, user, found.channel_id) if found.channel_id else user in services.settings.admin_users
        if not may:
            quietly(question_log.log_admin_action, db, user, action, str(found.id), False,
                    f"refused: not a verifier in {found.channel_id or 'any channel'} (App Home)")
            note(messages.SUGGESTION_NOT_A_VERIFIER)
            return
        try:
            if action == ACCEPT:  # the wording embedded: through the knowledge base, which holds the embedder
                done = services.kb.accept_suggestion(Change(user), found.id)
            else:
                with db.session() as session:
                    done = suggestions.dismiss(session, found.id, Change(user))
                    session.commit()
        except VerifiedError as exc:
            quietly(question_log.log_admin_action, db, user, action, str(found.id), True, f"failed: {exc}")
            note(messages.suggestion_failed(str(exc)))
            return
        quietly(question_log.log_admin_action, db, user, action, str(found.id), True,
                f"{done.status}: “{done.question[:150]}” for verified answer {done.answer_id} (App Home)")
        log.info("%s %s suggested question %s of verified answer %s", user, done.status, done.id, done.answer_id)
        note(messages.suggestion_added(done.id, done.answer_id) if action == ACCEPT
             else messages.suggestion_dismissed(done.id))
