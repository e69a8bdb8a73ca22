"""How a verified answer reads: "✅ Verified answer — by @Dana, 2 Dec 2026", the due mark, the text.

One wording for every surface: `kb ask` prints it, Slack shows it (with the verifier as a
mention when they are a Slack user), `kb ask --json` carries the same text as the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime

from bot.verified.records import VerifiedAnswer

_SLACK_USER = re.compile(r"^[UW][A-Z0-9]{2,}$")


def day(when: date | datetime) -> str:
    """2 Dec 2026: the day, unambiguous in every locale."""
    return f"{when.day} {when.strftime('%b %Y')}"


def slack_user(name: str) -> bool:
    """Whether who verified it is a Slack user id (shown as a mention, told of a 👎 in a DM), not a
    name given to `kb answers add --by`."""
    return bool(_SLACK_USER.match(name))


def verifier(name: str, mention: Callable[[str], str] | None = None) -> str:
    """A Slack user id as `mention` renders it (Slack: `<@U…>`), otherwise "@name"."""
    if mention is not None and slack_user(name):
        return mention(name)
    return name if name.startswith("@") else "@" + name


def header(answer: VerifiedAnswer, mention: Callable[[str], str] | None = None) -> str:
    """The first line: who verified it and when, and the due mark when it is due for review."""
    line = f"✅ Verified answer — by {verifier(answer.verified_by, mention)}, {day(answer.verified_at)}"
    if answer.due_since is not None:
        line += f" · due for review since {day(answer.due_since)} ({answer.due_why})"
    return line


def verified_text(answer: VerifiedAnswer, mention: Callable[[str], str] | None = None) -> str:
    """The header, then the answer as verified."""
    return f"{header(answer, mention)}\n\n{answer.answer}"
