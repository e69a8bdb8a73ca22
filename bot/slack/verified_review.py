"""Keeping verified answers right, in Slack: their verifier hears of a 👎, admins see which are due.

- **A 👎 tells the verifier.** When someone votes a verified answer down (`bot.slack.listeners.feedback`),
  whoever verified it — when that is a Slack user, and not the voter — gets a direct message from
  Docent: which verified answer (its id and first question, to find it with `kb answers show`),
  what was asked, and a link to the answer. Once per person and answer: the vote is claimed
  (`bot.slack.store.Deduper`, `verified-down:<answer>:<voter>`) before the message is sent, so
  voting 👎, 👍, 👎 again, or a second process handling a redelivered click, tells them once (for
  as long as claims are kept, `bot.slack.store.KEEP`: three days). What
  was asked is shown only when it was asked in a public channel (`ChannelKind.PUBLIC`): a
  question from a DM, a private channel or a Slack Connect conversation is the asker's, and the
  verifier may not be there. What the voter then writes in the 👎 form follows in a second message
  (once, and for a public channel's question only: a note may quote a private conversation).
- **Due for review** (`bot.verified.store.listing(due=True)`: past its review-by date, or a page
  it cites changed or went): the admins' App Home and the weekly digest list them — the id, the
  first question, since when and why — limited to the answers visible where they are shown
  (any of the answer's scopes), as the gaps report's people's answers are; `home_blocks.due_blocks`
  renders them.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import TYPE_CHECKING

from bot import messages
from bot.records import ChannelKind, question_log
from bot.slack.client import permalink, post
from bot.slack.mrkdwn import escape, link
from bot.verified import VerifiedAnswer, slack_user, store

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from bot.records import Database
    from bot.records import QueryLog
    from bot.slack.services import Services

log = logging.getLogger(__name__)


# -- a 👎 on a verified answer ---------------------------------------------------------------------


def tell_verifier(services: Services, client: WebClient, answer_id: str, voter: str, channel: str | None,
                  message_ts: str | None) -> bool:
    """After `voter`'s 👎 on answer `answer_id` was recorded (clicked on the message `message_ts` in
    `channel`, when a posted one): the verifier's DM (see the module docstring); True when sent."""
    row = question_log.find_answer(services.db, answer_id)
    verified = _to_tell(services, row, voter, f"verified-down:{answer_id}:{voter}")
    if row is None or verified is None:
        return False
    public = row.channel_kind == ChannelKind.PUBLIC.value
    where = None
    if public and row.channel_id and message_ts and channel == row.channel_id:
        url = permalink(client, row.channel_id, message_ts)
        where = f"{link(url, 'open it')} in <#{row.channel_id}>" if url.startswith("https://") else None
    first = escape(_clip(verified.questions[0] if verified.questions else "", 200))
    asked = escape(_clip(row.question, 300)) if public else None
    post(client, verified.verified_by, None, messages.verified_voted_down(verified.id, first, asked, where))
    log.info("told %s of a 👎 on verified answer %s (answer %s)", verified.verified_by, verified.id, answer_id)
    return True


def tell_verifier_why(services: Services, client: WebClient, answer_id: str, voter: str, text: str | None) -> bool:
    """After `voter`'s 👎 form `text` was stored: what they wrote, to the verifier — once per person
    and answer, and only for a question asked in a public channel (the note may quote what was
    said in a private one); True when sent."""
    if not text:
        return False
    row = question_log.find_answer(services.db, answer_id)
    if row is None or row.channel_kind != ChannelKind.PUBLIC.value:
        return False
    verified = _to_tell(services, row, voter, f"verified-why:{answer_id}:{voter}")
    if verified is None:
        return False
    quoted = "\n".join(f"> {escape(line)}" for line in _clip_lines(text, 1000))
    post(client, verified.verified_by, None, messages.verified_vote_reason(verified.id, quoted))
    return True


def _to_tell(services: Services, row: QueryLog | None, voter: str, claim: str) -> VerifiedAnswer | None:
    """The verified answer the logged answer `row` gave, when its verifier is to be told of
    `voter`'s vote: a Slack user, not the voter, and `claim` not made before (made here)."""
    if row is None or row.verified_id is None:
        return None
    with services.db.session() as session:
        verified = store.get(session, row.verified_id)
    if verified is None or not slack_user(verified.verified_by) or verified.verified_by == voter:
        return None
    if not services.deduper.claim(claim):
        return None  # told already
    return verified


# -- due for review --------------------------------------------------------------------------------


def due_for_review(db: Database, scopes: Collection[str] | None) -> list[VerifiedAnswer]:
    """The live verified answers due for review that are visible in `scopes` (None: all), oldest due first."""
    with db.session() as session:
        due = store.listing(session, due=True)
    visible = [a for a in due if scopes is None or set(a.scopes) & set(scopes)]
    return sorted(visible, key=lambda a: (a.due_since or a.review_by, a.id))


def _clip_lines(text: str, limit: int) -> list[str]:
    """At most `limit` characters of a note, line by line (a longer one ends with "…")."""
    text = text.strip()
    return (text if len(text) <= limit else text[: limit - 1].rstrip() + "…").splitlines()


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
