"""Slack's text format ("mrkdwn"), both ways.

Outgoing: answers are Markdown (the wiki's format, and what LLMs write), and Slack renders its
own dialect: `*bold*`, `_italic_`, `~strike~`, `<url|label>` links, no headings or tables. Every
piece of text we did not write ourselves is escaped (`&`, `<`, `>`), so a wiki page or a model can
never smuggle in a control sequence such as `<!channel>`, `<!here>` or a user-group ping; only
the links we build are real links. `neutralise` is applied to every outgoing string on top, as a
second fence against broadcast mentions.

Incoming: message text arrives with Slack's escapes and markup (`<@U123>`, `<#C1|general>`,
`<https://x|label>`, `&amp;`); `slack_to_plain` turns it into the plain question we search for.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from connectors.commonmark import parse

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")  # a fence line of mrkdwn we wrote (blocks.py splits messages at them)
_RULE = re.compile(r"^\s{0,3}([-*_])(?:\s*\1){2,}\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(?:\[([ xX])\]\s+)?(.*)$")
_ORDERED = re.compile(r"^(\s*)(\d{1,9})[.)]\s+(.*)$")
_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+(.*)$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")

# Patterns run over text we did not write (wiki pages, model output, 40,000-character messages),
# so none may backtrack badly: a code span's backtick run is maximal on both ends, a link label
# holds no `[`, Slack markup holds no `<`, and table rules are recognised without a regex.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_IMAGE = re.compile(r"!\[([^\[\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'(][^)]*)?\)")
_LINK = re.compile(r"\[([^\[\]]+)\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'(][^)]*)?\)")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_BACKSLASH = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~<>])")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_CITATION = re.compile(r"\[(\d{1,2})\]")
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")
_BOLD_MARK = "\x01"

# Broadcast and group mentions, in Slack markup or as typed text.
SPECIAL_MENTION = re.compile(  # Slack broadcasts and user-group pings (also made inert in verified answers)
    r"<!(channel|here|everyone|subteam\^[^<>|]*)(\|[^<>]*)?>", re.IGNORECASE)
_AT_BROADCAST = re.compile(r"(?<![\w.+-])@(channel|here|everyone)\b(?![-\w]|\.\w)", re.IGNORECASE)
WORD_JOINER = "\u2060"  # invisible; breaks "@here" so no client or bridge treats it as a ping


def escape(text: str) -> str:
    """Slack's three control characters, escaped as its docs require."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def neutralise(text: str) -> str:
    """No broadcast or user-group ping can survive in text we send: `<!here>` is shown, not sent."""
    text = SPECIAL_MENTION.sub(lambda m: escape(m.group(0)), text)
    return _AT_BROADCAST.sub(lambda m: "@" + WORD_JOINER + m.group(1), text)


def link(url: str, label: str) -> str:
    """A Slack link; the URL made safe for `<…|…>` and the label escaped and neutralised (labels
    are text: a page titled "@here" or "<!channel>" pings no one)."""
    safe_url = quote(url, safe=":/?#[]@!$&'()*+,;=%~-._").replace("&", "&amp;")
    label = neutralise(escape(label.replace("|", "/")).strip() or escape(url))
    return f"<{safe_url}|{label}>"


def to_mrkdwn(markdown: str, citation_urls: dict[int, str] | None = None) -> str:
    """Markdown → Slack mrkdwn. Code stays verbatim (escaped); tables, which Slack lacks, become
    one line per row with cells joined by " · "; `[n]` citations become links to source n when
    its URL is given. Fences and headings are where the CommonMark parser finds them (a `#` line
    in a ```` block is code, `Title` over `===` is a heading), as on the wiki page itself."""
    citations = citation_urls or {}
    page = parse(markdown)
    lines = page.lines
    fences = {fence.start: fence for fence in page.fences}
    headings = {h.start: h for h in page.headings if h.top_level}
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if (fence := fences.get(i)) is not None:
            body_end = fence.end - 1 if fence.closed else fence.end
            out.append("```")
            out.extend(escape(code) for code in lines[i + 1 : body_end])
            out.append("```")  # an unterminated fence would swallow everything after it
            i = fence.end
            continue
        if (heading := headings.get(i)) is not None:
            text = " ".join(heading.source.split()).replace("**", "").replace("__", "")
            out.append(f"*{inline(text, citations)}*" if text else "")
            i = heading.end
            continue
        if (first_row := _table_row(line)) is not None:
            prefix = first_row[0]
            rows = []
            while i < len(lines) and (row := _table_row(lines[i])) is not None and row[0] == prefix:
                rows.append(row[1])
                i += 1
            out.extend(prefix + row for row in _table(rows, citations))
            continue
        out.append(_block_line(line, citations))
        i += 1
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")


def _table_row(line: str) -> tuple[str, str] | None:
    """(quote prefix for the output, the row) if the line is a table row, quoted or not."""
    quoted = _QUOTE.match(line)
    body = quoted.group(1) if quoted else line
    if _TABLE_ROW.match(body):
        return ("> " if quoted else ""), body.strip()
    return None


def _table(rows: list[str], citations: dict[int, str]) -> list[str]:
    """Rows as lines of " · "-joined cells; the header (the row above a `|---|` line) in bold."""
    out = []
    for n, row in enumerate(rows):
        if _is_table_rule(row):
            continue
        cells = [inline(cell.strip(), citations) for cell in row.strip("|").split("|")]
        cells = [cell for cell in cells if cell]
        header = n + 1 < len(rows) and _is_table_rule(rows[n + 1])
        out.append(" · ".join(f"*{cell}*" for cell in cells) if header else " · ".join(cells))
    return out


def _is_table_rule(row: str) -> bool:
    """`|---|:--:|`: only pipes, colons, dashes and spaces, with at least one dash."""
    return "-" in row and all(c in "|:-" or c.isspace() for c in row)


def _block_line(line: str, citations: dict[int, str]) -> str:
    if not line.strip():
        return ""
    if quoted := _QUOTE.match(line):
        return "> " + _block_line(quoted.group(1), citations) if quoted.group(1).strip() else ">"
    if _RULE.match(line):
        return "──────────"
    if bullet := _BULLET.match(line):
        indent, task, rest = bullet.groups()
        mark = {" ": "☐ ", "x": "☑ ", "X": "☑ "}.get(task or "", "")
        return "    " * (len(indent) // 2) + "• " + mark + inline(rest, citations)
    if ordered := _ORDERED.match(line):
        indent, number, rest = ordered.groups()
        return "    " * (len(indent) // 2) + f"{number}. " + inline(rest, citations)
    return inline(line, citations)


def inline(text: str, citations: dict[int, str] | None = None) -> str:
    """One line's inline Markdown → mrkdwn, everything that is not markup escaped."""
    kept: list[str] = []

    def keep(value: str) -> str:
        kept.append(value)
        return f"\x00{len(kept) - 1}\x00"

    text = text.replace("\x00", "").replace(_BOLD_MARK, "")
    text = _BACKSLASH.sub(lambda m: keep(escape(m.group(1))), text)
    text = _CODE_SPAN.sub(lambda m: keep("`" + escape(m.group(2).strip().replace("`", "'")) + "`"), text)
    text = _IMAGE.sub(lambda m: keep(_link_or_label(m.group(2), m.group(1) or m.group(2))), text)
    text = _LINK.sub(lambda m: keep(_link_or_label(m.group(2), _strip_marks(m.group(1)))), text)
    text = _AUTOLINK.sub(lambda m: keep(link(m.group(1), m.group(1))), text)
    if citations:
        text = _CITATION.sub(
            lambda m: keep(link(citations[int(m.group(1))], m.group(0))) if int(m.group(1)) in citations else m.group(0),
            text,
        )
    text = _BR.sub(" ", text)
    text = escape(text)
    text = _BOLD.sub(lambda m: _BOLD_MARK + m.group(2) + _BOLD_MARK, text)
    text = _ITALIC.sub(lambda m: "_" + m.group(1) + "_", text)
    text = _STRIKE.sub(lambda m: "~" + m.group(1) + "~", text)
    text = text.replace(_BOLD_MARK, "*")
    while _PLACEHOLDER.search(text):  # a kept piece may hold another (a code span in a link label)
        text = _PLACEHOLDER.sub(lambda m: kept[int(m.group(1))], text)
    return neutralise(text)


def _link_or_label(url: str, label: str) -> str:
    """Only absolute links can work in Slack; a wiki-relative link (`../leave.md`) keeps its label."""
    if re.match(r"^(https?|mailto):", url, re.IGNORECASE):
        return link(url, label)
    return escape(label)


def _strip_marks(label: str) -> str:
    return re.sub(r"[*_`~]", "", label)


# -- incoming --------------------------------------------------------------------------------

_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^<>]*))?>")
_CHANNEL = re.compile(r"<#([CG][A-Z0-9]+)(?:\|([^<>]*))?>")
_SLACK_LINK = re.compile(r"<((?:https?|mailto|tel):[^|<>]+)(?:\|([^<>]*))?>")
_DATE = re.compile(r"<!date\^[^|<>]*\|([^<>]*)>")
_OTHER_SPECIAL = re.compile(r"<!subteam\^[^|<>]*(?:\|([^<>]*))?>")
_BROADCAST = re.compile(r"<!(?:channel|here|everyone)(?:\|[^<>]*)?>", re.IGNORECASE)


def slack_to_plain(text: str, bot_user_id: str | None = None) -> str:
    """A Slack message as plain text: our own mention dropped, others as `@name`, links as their
    label, broadcasts dropped, entities unescaped, whitespace collapsed."""
    text = text or ""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^<>]*)?>", " ", text)
    text = _USER.sub(lambda m: "@" + (m.group(2) or m.group(1)), text)
    text = _CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SLACK_LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = _DATE.sub(lambda m: m.group(1), text)
    text = _OTHER_SPECIAL.sub(lambda m: (m.group(1) or "").lstrip("@"), text)
    text = _BROADCAST.sub(" ", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return " ".join(text.split())


def slack_to_markdown(text: str) -> str:
    """A person's Slack message as Markdown for a wiki page (`bot.slack.listeners.answered_gaps`): links as
    `[label](url)`, mentions as `@U…`/`#C…`, user groups by their handle, broadcasts dropped,
    entities unescaped; lines kept (Slack's `*bold*`/`_italic_` read well enough as they are)."""
    text = text or ""
    text = _USER.sub(lambda m: "@" + (m.group(2) or m.group(1)), text)
    text = _CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SLACK_LINK.sub(lambda m: f"[{m.group(2)}]({m.group(1)})" if m.group(2) else f"<{m.group(1)}>", text)
    text = _DATE.sub(lambda m: m.group(1), text)
    text = _OTHER_SPECIAL.sub(lambda m: "@" + (m.group(1) or "").lstrip("@") if m.group(1) else "", text)
    text = _BROADCAST.sub("", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def mentions(text: str, user_id: str | None) -> bool:
    """Whether a message mentions this user (e.g. the bot) in Slack markup."""
    if not user_id:
        return False
    return re.search(rf"<@{re.escape(user_id)}(?:\|[^<>]*)?>", text or "") is not None


def mentions_someone_else(text: str, user_id: str | None) -> bool:
    """A message addressed to a colleague (mentions a user other than `user_id`)."""
    return any(m.group(1) != user_id for m in _USER.finditer(text or ""))
