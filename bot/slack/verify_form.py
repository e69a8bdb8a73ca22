"""The "Verify as the answer" form as Block Kit, and what a submission of it says (`bot.slack.listeners.verify`).

Pure: views are built from plain values (`Prefill`), and a submission is read back into a
`Submitted` and checked (`problems`) against what the server decides — the scopes the channel
sees, today — never against what the view offered: a submission can be replayed or forged, so
a scope the channel does not see is refused however it arrived. Each problem is keyed by the
input's block id, as Slack's `response_action: errors` shows it under that input.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from bot import messages
from bot.slack.mrkdwn import escape, neutralise
from bot.verified import VerifiedError, store

CALLBACK = "docent_verify_form"  # the modal's callback id (its submission)
SHORTCUT = "verify_answer"  # the message shortcut's callback id (deploy/slack-app-manifest.yml)
ACTION_VERIFY_GAP = "docent_verify_gap"  # the App Home's Verify button on an answered gap
QUESTION, ANSWER, SCOPES, REVIEW_BY, MORE = "question", "answer", "scopes", "review_by", "more"  # block ids
VALUE = "value"  # every input's action id
INPUT_CHARS = 3000  # Slack: a plain_text_input's max_length
CHECKBOXES = 10  # Slack: options of a checkboxes element (beyond: a multi-select, up to 100)
OPTION_CHARS = 75  # Slack: an option's text


@dataclass(frozen=True)
class Origin:
    """Where the answer is verified from: the channel, the message that is the answer, the thread
    Docent says so in; `gap`: opened from the App Home's answered gap (not a message shortcut)."""

    channel: str
    message_ts: str
    thread_ts: str
    gap: bool = False

    def metadata(self) -> str:
        return json.dumps({"c": self.channel, "m": self.message_ts, "t": self.thread_ts, "g": self.gap})

    @classmethod
    def of(cls, metadata: str | None) -> Origin | None:
        try:
            data = json.loads(metadata or "")
            return cls(str(data["c"]), str(data["m"]), str(data["t"]), bool(data.get("g")))
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class Prefill:
    question: str
    answer: str
    scopes: list[str]  # those the channel sees: every one offered, every one ticked
    review_by: date


@dataclass(frozen=True)
class Submitted:
    questions: list[str]  # the question, then other ways of asking
    answer: str
    scopes: list[str]
    review_by: str  # YYYY-MM-DD as the date picker sends it ("" when none)


@dataclass
class Checked:
    """A submission's problems by block id (none: store it), and whether a scope was widened."""

    problems: dict[str, str] = field(default_factory=dict)
    widened: list[str] = field(default_factory=list)
    review_by: date | None = None


def loading_view(origin: Origin) -> dict[str, Any]:
    """Opened at once (the trigger id lives 3 s), filled in by `views.update` when the thread is read."""
    return _modal(origin, [_text(messages.VERIFY_LOADING)], submit=False)


def refusal_view(origin: Origin, why: str) -> dict[str, Any]:
    return _modal(origin, [_text(f"🚫 {why}")], submit=False)


def form_view(origin: Origin, prefill: Prefill) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        _input(QUESTION, "Question", {"type": "plain_text_input", "max_length": store.MAX_QUESTION_CHARS,
                                      **_initial(prefill.question, store.MAX_QUESTION_CHARS)}),
        _input(ANSWER, "Answer", {"type": "plain_text_input", "multiline": True, "max_length": INPUT_CHARS,
                                  **_initial(prefill.answer, INPUT_CHARS)},
               hint="Given word for word to everyone who asks the same question where these scopes are visible."),
        _input(SCOPES, "Shown where these are visible", _scopes_element(prefill.scopes),
               hint="Only scopes this channel sees; untick to narrow."),
        _input(REVIEW_BY, "Review by", {"type": "datepicker", "initial_date": prefill.review_by.isoformat()}),
        _input(MORE, "Other ways of asking (one a line)", {"type": "plain_text_input", "multiline": True,
                                                           "max_length": INPUT_CHARS}, optional=True),
    ]
    where = f"<#{origin.channel}>" if origin.channel[:1] in ("C", "G") else "this conversation"
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": neutralise(
        f"From {where}. Docent will give this answer to the same question asked another way — never to a near miss.")}]})
    return _modal(origin, blocks, submit=True)


def submitted(view: dict[str, Any]) -> Submitted:
    """The form's values as sent (nothing checked yet)."""
    values = (view.get("state") or {}).get("values") or {}

    def element(block: str) -> dict[str, Any]:
        found = (values.get(block) or {}).get(VALUE)
        return found if isinstance(found, dict) else {}

    more = (element(MORE).get("value") or "").splitlines()
    return Submitted(questions=[element(QUESTION).get("value") or "", *more],
                     answer=element(ANSWER).get("value") or "",
                     scopes=[str(o.get("value")) for o in element(SCOPES).get("selected_options") or []
                             if isinstance(o, dict)],
                     review_by=element(REVIEW_BY).get("selected_date") or "")


def problems(form: Submitted, allowed: Collection[str], today: date) -> Checked:
    """What stops the submission: a scope beyond `allowed` (the channel's, decided server side), no
    scope, a review date not after today, an empty or over-long question or answer."""
    checked = Checked(widened=sorted(set(form.scopes) - set(allowed)))
    if checked.widened:
        checked.problems[SCOPES] = messages.verify_wider(checked.widened, sorted(allowed))
    elif not form.scopes:
        checked.problems[SCOPES] = "Tick at least one."
    try:
        checked.review_by = date.fromisoformat(form.review_by)
        if checked.review_by <= today:
            checked.problems[REVIEW_BY] = "Pick a day after today."
    except ValueError:
        checked.problems[REVIEW_BY] = "Pick a day."
    for block, check in ((QUESTION, lambda: store.clean_questions(form.questions[:1])),
                         (MORE, lambda: store.clean_questions(form.questions)),
                         (ANSWER, lambda: store.clean_answer(form.answer))):
        if block == MORE and QUESTION in checked.problems:
            continue  # the question's own problem, said once
        try:
            check()
        except VerifiedError as exc:
            checked.problems[block] = str(exc).capitalize() + "."
    return checked


# -- building blocks -------------------------------------------------------------------------------


def _modal(origin: Origin, blocks: list[dict[str, Any]], *, submit: bool) -> dict[str, Any]:
    view: dict[str, Any] = {"type": "modal", "callback_id": CALLBACK, "private_metadata": origin.metadata(),
                            "title": _plain("Verify as the answer"), "close": _plain("Cancel" if submit else "Close"),
                            "blocks": blocks}
    if submit:
        view["submit"] = _plain("Verify")
    return view


def _input(block: str, label: str, element: dict[str, Any], *, hint: str | None = None,
           optional: bool = False) -> dict[str, Any]:
    out = {"type": "input", "block_id": block, "label": _plain(label), "element": {**element, "action_id": VALUE},
           "optional": optional}
    if hint:
        out["hint"] = _plain(hint)
    return out


def _scopes_element(scopes: list[str]) -> dict[str, Any]:
    options = [{"text": _plain(s[:OPTION_CHARS]), "value": s} for s in scopes]
    kind = "checkboxes" if len(options) <= CHECKBOXES else "multi_static_select"
    element: dict[str, Any] = {"type": kind, "options": options}
    if options:
        element["initial_options"] = options
    return element


def _initial(text: str, limit: int) -> dict[str, str]:
    text = (text or "").strip()[:limit]
    return {"initial_value": text} if text else {}


def _text(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": neutralise(escape(text))}}


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}
