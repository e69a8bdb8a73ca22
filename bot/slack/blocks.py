"""Block Kit messages for answers, within Slack's limits.

Slack rejects a message outright (`invalid_blocks`, `msg_too_long`) rather than shortening it,
and a rejected answer is a silent bot. So every message is built to fit: section texts of at most
3,000 characters, at most 50 blocks, and about 13,000 characters in all. A long answer is cut at
a paragraph, line, sentence or word boundary (never inside a link, an entity or a code block),
and ends with a pointer to its first source, where the full text lives.

Layout of an answer: for an uncertain one, a ":warning: I'm not sure this answers it — check
[1]." line first; for a verified one (`bot.verified`), "✅ Verified answer — by @Dana, 2 Dec
2026" (the verifier a mention; "due for review since …" when it is) first, then its text as
verified; the answer text (its lead sentences, then the passages; one or more sections), for an
answer offered a verified one (`offer_block`: its verified question, "Show it"), an optional
note (e.g. the LLM fell back), a "Sources" context block (up to 5 numbered links:
title › heading path, last updated; a verified answer's cited pages first) — "Nearest pages"
when nothing was found — optionally who shared it and the vote tally,
then the 👍 / 👎 buttons (and "Share in channel" on a private answer).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

from bot import messages
from bot.answering import Answer, Source
from bot.slack.mrkdwn import FENCE, escape, link, neutralise, to_mrkdwn
from bot.verified import VerifiedAnswer, header
from indexing.search import Outcome

SECTION_CHARS = 3000  # Slack: section text
MAX_BLOCKS = 50  # Slack: blocks per message
MESSAGE_CHARS = 13_000  # Slack: practical ceiling for one message's text
CONTEXT_CHARS = 3000  # Slack: a context element's text
MAX_SOURCES = 5
LABEL_CHARS = 150
FALLBACK_CHARS = 300  # the notification text; the blocks carry the answer

ACTION_VOTE_UP = "docent_vote_up"
ACTION_VOTE_DOWN = "docent_vote_down"
ACTION_SHARE = "docent_share"
FEEDBACK_BLOCK = "docent_feedback"
VOTES_BLOCK = "docent_votes"
SOURCES_BLOCK = "docent_sources"
UNCERTAIN_BLOCK = "docent_uncertain"  # the "not sure this answers it" line above an uncertain answer
VERIFIED_BLOCK = "docent_verified"  # "✅ Verified answer — by @Dana, 2 Dec 2026" above a verified answer
OFFER_BLOCK = "docent_verified_offer"  # "A verified answer exists for a question like yours: …" [Show it]
ACTION_OFFER_SHOW = "verified_offer_show"  # value: "<verified answer id> <the answer's id in the query log>"
REASON_CALLBACK = "docent_vote_reason"
REASON_BLOCK = "reason"
REASON_INPUT = "text"

Block = dict[str, Any]


def answer_blocks(
    answer: Answer,
    *,
    share: bool = False,
    shared_by: str | None = None,
    question: str | None = None,
    votes: dict[str, int] | None = None,
) -> list[Block]:
    """The whole answer message. `share` adds the "Share in channel" button (private answers);
    `shared_by` (a user id) credits whoever shared it, with the `question` the channel did not
    see; `votes` shows the tally so far."""
    offer = offered(answer)
    tail: list[Block] = [offer_block(*offer, answer.id)] if offer else []
    if answer.searched:  # a typo was repaired: say what was searched, so a wrong repair is seen
        tail.append(_context([neutralise(f"_Searched for “{escape(_clip(answer.searched, 300))}”_")]))
    if answer.note:
        tail.append(_context([f"_{_clip(escape(answer.note), 500)}_"]))
    if answer.sources:
        tail.append(sources_block(answer.sources[:MAX_SOURCES], found=answer.found))
    if shared_by:
        asked = f" · asked: “{escape(_clip(question, 300))}”" if question else ""
        tail.append(_context([neutralise(f"Shared by <@{shared_by}>{asked}")]))
    if votes:
        tail.append(votes_block(votes))
    tail.append(feedback_actions(answer.id, share=share))

    citations = {s.n: s.url for s in answer.sources if _linkable(s.url)}
    head, body_text = uncertain_head(answer, citations)
    budget = MESSAGE_CHARS - 500 - message_chars(head + tail)  # 500: room for a vote tally added later
    text = fit(to_mrkdwn(body_text, citations) or "…", budget, _more(answer.sources))
    sections = split_sections(text, SECTION_CHARS)
    room = MAX_BLOCKS - len(head) - len(tail) - 1  # 1: the vote tally, if it is added later
    if len(sections) > room:
        sections = sections[: room - 1] + [fit("\n\n".join(sections[room - 1 :]), SECTION_CHARS, _more(answer.sources))]
    body = [
        {"type": "section", "block_id": f"docent_answer_{i}", "text": {"type": "mrkdwn", "text": part}}
        for i, part in enumerate(sections)
    ]
    return head + body + tail


def offered(answer: Answer) -> tuple[int, str] | None:
    """The verified answer offered beside this one — (its id, its verified question) — from the
    answer as given, or, shown again from the query log, from its signals; None when none was."""
    if answer.verified is not None:
        return None
    if answer.verified_offer is not None:
        return answer.verified_offer.answer_id, answer.verified_offer.question
    signals = answer.signals or {}
    offer_id, question = signals.get("verified_offer_id"), signals.get("verified_offer_question")
    if isinstance(offer_id, int) and not isinstance(offer_id, bool) and isinstance(question, str):
        return offer_id, question
    return None


def offer_block(offer_id: int, question: str, answer_id: str) -> Block:
    """The offer under the answer: its verified question (text people wrote: escaped, no pings) and
    the "Show it" button (`bot.slack.listeners.verified_offer`)."""
    text = neutralise(messages.verified_offer(escape(_clip(" ".join(question.split()), 300))))
    return {"type": "section", "block_id": OFFER_BLOCK, "text": {"type": "mrkdwn", "text": text},
            "accessory": _button(messages.VERIFIED_OFFER_BUTTON, ACTION_OFFER_SHOW, f"{offer_id} {answer_id}")}


def uncertain_head(answer: Answer, citations: dict[int, str]) -> tuple[list[Block], str]:
    """An uncertain answer's first line ("I'm not sure this answers it — check [1].") as a
    warning line of its own above the passage, and the rest of the text; a verified answer's
    provenance line likewise (`verified_line`); other answers as they are."""
    if answer.verified is not None:
        return [_context([verified_line(answer.verified)], block_id=VERIFIED_BLOCK)], verified_body(answer)
    if answer.outcome != Outcome.UNCERTAIN:
        return [], answer.text
    first, _, rest = answer.text.partition("\n\n")
    line = _clip(to_mrkdwn(first, citations), CONTEXT_CHARS - 20)
    return [_context([f":warning: {line}"], block_id=UNCERTAIN_BLOCK)], rest or first


def verified_line(verified: VerifiedAnswer) -> str:
    """"✅ Verified answer — by <@U…>, 2 Dec 2026" (and "due for review since …") as mrkdwn: the
    verifier a mention when they are a Slack user, everything else escaped as text (a name given
    to `kb answers add --by`, a page path in the due mark)."""
    slot = f"\x00{uuid.uuid4().hex}\x00"  # where the mention goes; no text we are given holds it
    line = header(verified, mention=lambda _: slot)
    return neutralise(f"<@{verified.verified_by}>".join(escape(part) for part in line.split(slot)))


def verified_body(answer: Answer) -> str:
    """A verified answer's text as given, without its plain provenance line (`verified_text`:
    the line, a blank line, the answer), which `verified_line` renders for Slack. Shown again from
    the query log, the line may differ from today's (it became due since): then up to the first
    blank line."""
    assert answer.verified is not None
    line = header(answer.verified) + "\n\n"
    if answer.text.startswith(line):
        return answer.text[len(line):]
    _, blank, body = answer.text.partition("\n\n")
    return body if blank else answer.text


def fallback_text(answer: Answer) -> str:
    """The plain `text` of the message: what notifications and screen readers show."""
    text = verified_body(answer) if answer.verified is not None else answer.text
    first = neutralise(escape(_clip(" ".join(re.sub(r"[*_>`#|]", " ", _drop_table_rules(text)).split()), FALLBACK_CHARS)))
    return f"{verified_line(answer.verified)} {first}" if answer.verified is not None else first


_RULE_LINE = re.compile(r"[\s:|-]*")  # a line that could be (part of) a table rule


def _drop_table_rules(text: str) -> str:
    r"""The text with table rules (`|---|:-:|`) blanked, in one pass over its lines.

    Each run of consecutive lines made only of whitespace, `|`, `:` and `-`, holding at least one
    `-`, becomes one empty line. That is exactly what the pattern
    `^\s*\|?[\s:|-]*-[\s:|-]*\|?\s*$` (multi-line) did, since its `\s` also matches newlines;
    but the pattern backtracked cubically on long whitespace, and an answer quotes the wiki.
    """
    kept: list[str] = []
    run: list[str] = []
    for line in [*text.split("\n"), None]:  # None: the end, which closes the last run
        if line is not None and _RULE_LINE.fullmatch(line):
            run.append(line)
            continue
        kept += [""] if any("-" in part for part in run) else run
        run = []
        if line is not None:
            kept.append(line)
    return "\n".join(kept)


def sources_block(sources: list[Source], found: bool = True) -> Block:
    """One small-print element, one numbered line per source, under "Sources" or "Nearest pages"."""
    heading = "*Sources*" if found else "*Nearest pages*"
    lines = [source_line(s) for s in sources]
    for i in sorted(range(len(lines)), key=lambda i: -len(lines[i])):  # very long URLs: the longest lose their link
        if len("\n".join([heading, *lines])) <= CONTEXT_CHARS:
            break
        lines[i] = source_line(sources[i], linked=False)
    return _context(["\n".join([heading, *lines])], block_id=SOURCES_BLOCK)


def source_line(source: Source, linked: bool = True) -> str:
    """`[1] Title › Section · updated 2025-03-01`, the title a link when the URL can be opened."""
    label = _clip(" › ".join([source.title or source.path, *source.heading_path]), LABEL_CHARS)
    if linked and _linkable(source.url):
        where = link(source.url, label)
    else:
        where = f"*{neutralise(escape(label))}* (`{escape(_clip(source.path, LABEL_CHARS))}`)"
    updated = f" · updated {source.updated_at:%Y-%m-%d}" if source.updated_at else ""
    return f"[{source.n}] {where}{updated}"


def feedback_actions(answer_id: str, share: bool = False) -> Block:
    buttons = [
        _button("👍 Helpful", ACTION_VOTE_UP, answer_id),
        _button("👎 Not helpful", ACTION_VOTE_DOWN, answer_id),
    ]
    if share:
        buttons.append(_button("Share in channel", ACTION_SHARE, answer_id, style="primary"))
    return {"type": "actions", "block_id": FEEDBACK_BLOCK, "elements": buttons}


def votes_block(votes: dict[str, int]) -> Block:
    return _context([messages.votes_recorded(votes.get("up", 0), votes.get("down", 0))],
                    block_id=VOTES_BLOCK)


def with_votes(blocks: list[Block], votes: dict[str, int]) -> list[Block]:
    """The same message with its vote tally added or refreshed (just before the buttons)."""
    kept = [b for b in blocks if b.get("block_id") != VOTES_BLOCK]
    at = next((i for i, b in enumerate(kept) if b.get("block_id") == FEEDBACK_BLOCK), len(kept))
    return kept[:at] + [votes_block(votes)] + kept[at:]


def reason_modal(answer_id: str) -> dict[str, Any]:
    """The optional "what was wrong?" form a 👎 opens; its text is stored with the vote."""
    return {
        "type": "modal",
        "callback_id": REASON_CALLBACK,
        "private_metadata": answer_id,
        "title": {"type": "plain_text", "text": "What was wrong?"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Skip"},
        "blocks": [
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "optional": True,
                "label": {"type": "plain_text", "text": "Tell the wiki owners what was wrong or missing"},
                "element": {"type": "plain_text_input", "action_id": REASON_INPUT, "multiline": True, "max_length": 2000},
            }
        ],
    }


def text_blocks(mrkdwn: str) -> list[Block]:
    """A plain message (help, status, apologies) as sections within the limits."""
    text = fit(neutralise(mrkdwn), MESSAGE_CHARS - 500, None)
    return [{"type": "section", "text": {"type": "mrkdwn", "text": part}} for part in split_sections(text, SECTION_CHARS)]


def message_chars(blocks: list[Block]) -> int:
    """All the text a message's blocks carry (what Slack's size limit counts)."""
    total = 0
    for value in _walk(blocks):
        total += len(value)
    return total


# -- fitting text ------------------------------------------------------------------------------


def fit(text: str, budget: int, more: str | None) -> str:
    """`text` if it fits in `budget` characters, else cut cleanly and ended with `more`."""
    if len(text) <= budget:
        return text
    ending = "\n\n" + (more or "_…(shortened)_")
    return cut_clean(text, max(budget - len(ending), 0)) + ending


def cut_clean(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, cut at the best boundary: paragraph, line, sentence,
    word — never inside a `<link>` or `&entity;`, and with any open code block closed."""
    if len(text) <= limit:
        return text
    room = max(limit - 4, 0)  # "\n```" may be needed to close a code block
    cut = text[:room]
    for boundary in ("\n\n", "\n", ". ", "。", " "):
        at = cut.rfind(boundary)
        if at >= room * 0.5:
            cut = cut[: at + (1 if boundary in (". ", "。") else 0)]
            break
    cut = _outside_markup(cut).rstrip()
    if sum(1 for line in cut.split("\n") if FENCE.match(line)) % 2:
        cut += "\n```"
    return cut


def split_sections(text: str, limit: int = SECTION_CHARS) -> list[str]:
    """Text in pieces of at most `limit` characters: whole paragraphs where possible, then lines,
    then words; a code block split across pieces is closed and reopened."""
    pieces: list[str] = []
    current = ""
    for unit in _units(text, limit):
        joined = f"{current}\n\n{unit}" if current else unit
        if len(joined) <= limit:
            current = joined
        else:
            if current:
                pieces.append(current)
            current = unit
    if current:
        pieces.append(current)
    return pieces or [""]


def _units(text: str, limit: int) -> list[str]:
    """Paragraphs (a code block is one paragraph, blank lines and all), each at most `limit`."""
    paragraphs: list[str] = []
    lines: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_code = not in_code
        if not line.strip() and not in_code:
            if lines:
                paragraphs.append("\n".join(lines))
                lines = []
            continue
        lines.append(line)
    if lines:
        paragraphs.append("\n".join(lines))
    units: list[str] = []
    for paragraph in paragraphs:
        if len(paragraph) <= limit:
            units.append(paragraph)
        elif FENCE.match(paragraph.split("\n", 1)[0]):
            units.extend(_split_code(paragraph, limit))
        else:
            units.extend(_pack(_split_lines(paragraph.split("\n"), limit), limit, "\n"))
    return units


def _split_code(block: str, limit: int) -> list[str]:
    """A long code block as several code blocks, each closed and within the limit."""
    inner = block.split("\n")[1:]
    if inner and FENCE.match(inner[-1]):
        inner = inner[:-1]
    return ["```\n" + part + "\n```" for part in _pack(_split_lines(inner, limit - 8), limit - 8, "\n")]


def _split_lines(lines: list[str], limit: int) -> list[str]:
    out: list[str] = []
    for line in lines:
        while len(line) > limit:
            head = _outside_markup(line[:limit])
            for boundary in (". ", "。", " "):  # a sentence end, else a word end
                at = head.rfind(boundary)
                if at > limit * 0.5:
                    head = head[: at + (0 if boundary == " " else 1)]
                    break
            head = head or line[:limit]  # one unbroken token longer than a section
            out.append(head.rstrip())
            line = line[len(head):].lstrip()
        out.append(line)
    return out


def _pack(parts: list[str], limit: int, sep: str) -> list[str]:
    packed: list[str] = []
    for part in parts:
        if packed and len(packed[-1]) + len(sep) + len(part) <= limit:
            packed[-1] += sep + part
        else:
            packed.append(part)
    return packed


def _outside_markup(cut: str) -> str:
    """Back off so the cut does not fall inside `<url|label>` or an `&amp;` entity."""
    opened = cut.rfind("<")
    if opened > cut.rfind(">"):
        cut = cut[:opened]
    amp = cut.rfind("&")
    if amp != -1 and ";" not in cut[amp:] and len(cut) - amp < 8:
        cut = cut[:amp]
    return cut


# -- small pieces ------------------------------------------------------------------------------


def _more(sources: list[Source]) -> str | None:
    """The line that ends a shortened answer, pointing to where the rest is."""
    if not sources:
        return None
    first = sources[0]
    title = _clip(first.title or first.path, LABEL_CHARS)
    where = link(first.url, title) if _linkable(first.url) else f"*{neutralise(escape(title))}*"
    return messages.answer_shortened(where)


def _linkable(url: str) -> bool:
    return bool(re.match(r"^https?://", url or "", re.IGNORECASE))


def _context(texts: list[str], block_id: str | None = None) -> Block:
    """Small print; neutralised again as the last fence (titles, notes, the searched words are page text)."""
    block: Block = {"type": "context", "elements": [{"type": "mrkdwn", "text": neutralise(t)} for t in texts[:10]]}
    if block_id:
        block["block_id"] = block_id
    return block


def _button(text: str, action_id: str, value: str, style: str | None = None) -> Block:
    button: Block = {"type": "button", "text": {"type": "plain_text", "text": text, "emoji": True},
                     "action_id": action_id, "value": value}
    if style:
        button["style"] = style
    return button


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _walk(node: Any) -> Iterator[str]:
    """Every "text" string inside blocks (nested text objects included)."""
    if isinstance(node, list):
        for item in node:
            yield from _walk(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "text" and isinstance(value, str):
                yield value
            else:
                yield from _walk(value)
