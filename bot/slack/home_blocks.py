"""The App Home tab as Block Kit: built from plain data (`HomeData`), within Slack's limits.

Everyone sees how to ask, example questions (the most asked that were answered) and their own
last questions with their outcomes. Admins (`KB_ADMIN_USERS`) also see the index's health — per
source its pages, failed and skipped pages with reasons, last sync and last refused sync, with a
button to resync it — the verified answers due for review (`due_blocks`), and the gaps report
(`bot.records.gaps`). Admins and channels' verifiers see the suggested questions for verified
answers (`suggested_blocks`), each with **Add as a question** and **Dismiss**
(`bot.slack.listeners.suggested`).

What a member sees is decided by whoever gathers the data (`bot.slack.listeners.home_tab`): this module renders
what it is given. Slack rejects a Home view over `MAX_BLOCKS` blocks or with a section text over
3,000 characters, so every text is clipped and the block list is cut (with a last line saying so)
rather than the view being refused.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bot import messages
from bot.records import GapsReport, candidate_outcomes, summary_lines
from bot.slack.blocks import Block
from bot.slack.mrkdwn import escape, link, neutralise
from bot.slack.verify_form import ACTION_VERIFY_GAP
from bot.verified import VerifiedAnswer, slack_user

if TYPE_CHECKING:
    from bot.verified import suggestions

MAX_BLOCKS = 100  # Slack: blocks in a Home tab view
SECTION_CHARS = 3000  # Slack: a section's text
HEADER_CHARS = 150  # Slack: a header's plain text
BUTTON_CHARS = 75  # Slack: a button's text
CONTEXT_ELEMENTS = 10  # Slack: elements of a context block
ANSWERS_SHOWN = 10  # answered-by-people gaps shown (each a block)
DUE_SHOWN = 10  # verified answers due for review listed (a line each; `kb answers list --due` has all)
ACTION_RESYNC = "docent_home_resync"
ACTION_REFRESH = "docent_home_refresh"
ACTION_SUGGESTION_ADD = "docent_suggestion_add"  # value: the suggested question's id
ACTION_SUGGESTION_DISMISS = "docent_suggestion_dismiss"
SUGGESTED_SHOWN = 10  # suggested questions listed (two blocks each; `kb answers suggestions` has all)
OUTCOME = {"answered": "✅ answered", "uncertain": "🤔 not sure", "not_found": "❓ not found", "failed": "⚠️ failed"}




@dataclass
class AskedQuestion:
    """One of the member's own questions: what they asked, what happened, the page it cited first
    (only if that page is visible to them now)."""

    question: str
    outcome: str
    at: datetime
    page_title: str | None = None
    page_url: str | None = None


@dataclass
class SourceHealth:
    name: str
    pages: dict[str, int]  # documents by status
    last_sync: str  # one line: when, trigger, counts, result
    refused: str | None  # the last refused sync, if any: when and why
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (status, document id, reason)


@dataclass
class HomeData:
    user: str
    is_admin: bool
    examples: list[str]
    mine: list[AskedQuestion]
    sources: list[SourceHealth] = field(default_factory=list)
    gaps: GapsReport | None = None
    note: str | None = None  # e.g. "Resync of wiki started"
    verifiable: set[tuple[str, str]] = field(default_factory=set)  # answered gaps (channel, thread) they may verify
    due: list[VerifiedAnswer] | None = None  # verified answers due for review (admins: `verified_review.due_for_review`)
    suggested: list[suggestions.Suggestion] | None = None  # suggested questions they may add (None: no verifier, no section)


def home_view(data: HomeData) -> dict[str, Any]:
    """The `views.publish` view for this user."""
    blocks: list[Block] = [_header("Docent — answers from the wiki"), _section(messages.HOW_TO_ASK)]
    if data.note:
        blocks.append(_context(data.note))
    if data.examples:
        blocks += [_header("Questions people ask"),
                   _section("\n".join(f"• {_plain(q, 200)}" for q in data.examples))]
    blocks.append(_header("Your last questions"))
    if data.mine:
        blocks.append(_section("\n".join(_asked_line(q) for q in data.mine)))
    else:
        blocks.append(_context("You have not asked anything yet."))
    if data.suggested is not None:
        blocks += suggested_blocks(data.suggested)
    if data.is_admin:
        blocks += admin_blocks(data)
    return {"type": "home", "blocks": fit(blocks)}


def admin_blocks(data: HomeData) -> list[Block]:
    blocks: list[Block] = [{"type": "divider"}, _header("Index health (admins)"),
                           _button_row(ACTION_REFRESH, "Refresh", "refresh")]
    for source in data.sources:
        pages = ", ".join(f"{n} {status.lower()}" for status, n in sorted(source.pages.items())) or "no pages"
        lines = [f"*{escape(source.name)}* — {pages}", escape(source.last_sync)]
        if source.refused:
            lines.append(f"⚠️ Refused sync: {_plain(source.refused, 400)}")
        lines += [f"• {status.lower()} `{escape(doc_id[:150])}`: {_plain(reason, 200)}"
                  for status, doc_id, reason in source.problems[:10]]
        if len(source.problems) > 10:
            lines.append(f"…and {len(source.problems) - 10} more (`kb status`)")
        blocks.append({"type": "section", "text": _mrkdwn("\n".join(lines)),
                       "accessory": _button(f"Resync {source.name}", ACTION_RESYNC, source.name)})
    if data.due is not None:
        blocks += due_blocks(data.due)
    if data.gaps is not None:
        blocks += gaps_blocks(data.gaps, data.verifiable)
    return blocks


def due_blocks(due: list[VerifiedAnswer]) -> list[Block]:
    """Verified answers due for review (App Home and weekly digest): id, first question, since when and why."""
    blocks: list[Block] = [_header(messages.VERIFIED_DUE)]
    if not due:
        return blocks + [_context("None.")]
    lines = [f"• *#{a.id}* {_plain(a.questions[0] if a.questions else '', 200)} — due since "
             f"{a.due_since or a.review_by:%Y-%m-%d}: {_plain(a.due_why, 200)}" for a in due[:DUE_SHOWN]]
    if len(due) > DUE_SHOWN:
        lines.append(f"…and {len(due) - DUE_SHOWN} more (`kb answers list --due`).")
    return blocks + [_section("\n".join(lines)), _context(messages.VERIFIED_DUE_HINT)]


def suggested_blocks(suggested: list[suggestions.Suggestion]) -> list[Block]:
    """Questions people took a verified answer for (`bot.verified.suggestions`): the answer's id and
    verified question, the wording to add, who asked where; Add as a question / Dismiss."""
    blocks: list[Block] = [{"type": "divider"}, _header(messages.SUGGESTED_QUESTIONS)]
    if not suggested:
        return blocks + [_context("None.")]
    for s in suggested[:SUGGESTED_SHOWN]:
        who = f"<@{s.asked_by}>" if slack_user(s.asked_by) else _plain(s.asked_by, 40)
        where = f" in <#{s.channel_id}>" if s.channel_id and s.channel_id.isalnum() else ""
        blocks.append(_section(f"*#{s.answer_id}* “{_plain(s.verified_question, 200)}”\n"
                               f"➕ “{_plain(s.question, 300)}” — asked by {who}{where}, {s.asked_at:%b %d}"))
        blocks.append({"type": "actions", "block_id": f"docent_suggestion_{s.id}", "elements": [
            {**_button("Add as a question", ACTION_SUGGESTION_ADD, str(s.id)), "style": "primary"},
            _button("Dismiss", ACTION_SUGGESTION_DISMISS, str(s.id))]})
    if len(suggested) > SUGGESTED_SHOWN:
        blocks.append(_context(f"…and {len(suggested) - SUGGESTED_SHOWN} more (`kb answers suggestions`)."))
    return blocks + [_context(messages.SUGGESTED_HINT)]


def gaps_blocks(report: GapsReport, verifiable: Collection[tuple[str, str]] = ()) -> list[Block]:
    """The gaps report as blocks (App Home; the weekly digest posts the same). `verifiable`: the
    answered gaps (channel, thread) that get a Verify button (`bot.slack.listeners.verify`; the App Home's
    verifiers only — the digest has none)."""
    blocks: list[Block] = [_header(f"This week against last ({report.days} days)"),
                           _section("\n".join(summary_lines(report)))]
    blocks.append(_header("Top unanswered questions"))
    if report.unanswered:
        blocks.append(_section("\n".join(
            f"• *{g.count}×* {_plain(g.example, 200)}" + (f" _(+{g.wordings - 1} similar)_" if g.wordings > 1 else "")
            for g in report.unanswered)))
    else:
        blocks.append(_context("None this period."))
    blocks.append(_header("Most down-voted answers"))
    if report.down_voted:
        for d in report.down_voted:
            lines = [f"👎 {d.down} · 👍 {d.up} — {_plain(d.question, 300)}"]
            if d.cited:
                lines.append("Cited: " + ", ".join(_plain(t, 100) for t in d.cited[:3]))
            lines += [f"> {_plain(r, 300)}" for r in d.reasons[:3]]
            blocks.append(_section("\n".join(lines)))
    else:
        blocks.append(_context("No 👎 this period."))
    blocks.append(_header(f"Cited often, unchanged for {report.stale_days}+ days"))
    if report.stale_pages:
        blocks.append(_section("\n".join(
            f"• {link(p.url, p.title) if p.url.startswith('http') else _plain(p.title, 150)} — cited {p.citations}×, "
            f"last changed {p.age_days} days ago" for p in report.stale_pages)))
    else:
        blocks.append(_context("None."))
    blocks.append(_header("Words the wiki never uses (synonym candidates)"))
    if report.synonym_candidates:
        blocks.append(_section("\n".join(
            f"• *{c.questions}×* `{c.word}` ({candidate_outcomes(c)}) — e.g. {_plain(c.examples[0], 200)}"
            for c in report.synonym_candidates)))
    else:
        blocks.append(_context("None: every word of the failed questions is on some page."))
    blocks.append(_header("Answered by people, missing from the wiki"))
    if report.answered_by_people:
        for a in report.answered_by_people[:ANSWERS_SHOWN]:
            # the answerer's id, not a mention: the digest would notify them every week
            where = link(a.permalink, "thread") if a.permalink.startswith("http") else "thread"
            gap = _section(f"*{_plain(a.question, 300)}*\nanswered by `{escape(a.answered_by)}` "
                           f"in <#{a.channel}> ({where}): {_plain(a.answer, 500)}")
            if (a.channel, a.thread_ts) in verifiable:
                gap["accessory"] = _button("Verify", ACTION_VERIFY_GAP, f"{a.channel} {a.thread_ts}")
            blocks.append(gap)
        if len(report.answered_by_people) > ANSWERS_SHOWN:
            blocks.append(_context(f"…and {len(report.answered_by_people) - ANSWERS_SHOWN} more (`kb gaps`)."))
        blocks.append(_context("`kb gaps --drafts DIR` writes each as a draft page to edit and commit."))
    else:
        blocks.append(_context("None this period."))
    return blocks


def fit(blocks: list[Block], limit: int = MAX_BLOCKS) -> list[Block]:
    """At most `limit` blocks: the rest replaced by one line pointing to `kb gaps` / `kb status`."""
    if len(blocks) <= limit:
        return blocks
    return blocks[: limit - 1] + [_context("…shortened to fit Slack: see `kb gaps` and `kb status` for the rest.")]


def _asked_line(q: AskedQuestion) -> str:
    line = f"• {q.at:%b %d} — {_plain(q.question, 200)} — {OUTCOME.get(q.outcome, q.outcome)}"
    if q.page_title:
        title = _plain(q.page_title, 100)
        url = q.page_url or ""
        line += f" ({link(url, q.page_title[:100]) if url.startswith('http') else title})"
    return line


def _plain(text: str, limit: int) -> str:
    """User or wiki text, shown and never interpreted: escaped, no pings, clipped."""
    text = " ".join((text or "").split())
    text = text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    return neutralise(escape(text))


def _mrkdwn(text: str) -> dict[str, str]:
    """Every section and context of the Home tab and the digest, neutralised as the last fence:
    source names, sync reasons and page titles are text we did not write."""
    text = neutralise(text)
    return {"type": "mrkdwn", "text": text if len(text) <= SECTION_CHARS else text[: SECTION_CHARS - 1] + "…"}


def _section(text: str) -> Block:
    return {"type": "section", "text": _mrkdwn(text)}


def _header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": text[:HEADER_CHARS], "emoji": True}}


def _context(text: str) -> Block:
    return {"type": "context", "elements": [_mrkdwn(text)]}


def _button(text: str, action_id: str, value: str) -> Block:
    label = text if len(text) <= BUTTON_CHARS else text[: BUTTON_CHARS - 1] + "…"
    return {"type": "button", "text": {"type": "plain_text", "text": label, "emoji": True}, "action_id": action_id,
            "value": value[:2000]}


def _button_row(action_id: str, text: str, value: str) -> Block:
    return {"type": "actions", "elements": [_button(text, action_id, value)]}
