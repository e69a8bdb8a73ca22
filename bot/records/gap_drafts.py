"""Draft wiki pages from the questions people answered (`kb gaps --drafts DIR`).

One Markdown file per *answered by people* gap (`bot.records.gaps.AnsweredByPeople`), for a wiki owner
to edit and commit:

    ---
    title: "How do I book the big meeting room?"
    draft: true                      # front matter a wiki owner keeps or drops
    answered_by: U0BOB1
    asked_in: C0HELPDSK
    scopes: ["hr", "public"]         # the channel's: Docent shows the page only where all are visible
    slack_thread: https://acme.slack.com/archives/C0HELPDSK/p1700000000000100
    answered_at: 2026-12-01T10:00:00+00:00
    ---

    # How do I book the big meeting room?

    <the person's answer, as written in that channel>

    ---
    _Answered in Slack by a colleague ([the thread](…)); check it, edit it into the wiki's words, move it
    where it belongs._

Only what was said in that channel: the question, the answer and the link — no wiki pages, no
other channel's words. No `url:` key: Docent's Markdown connector would cite it as the page's link.
`scopes:` are the scopes of the channel it was said in (before any narrowing): synced into a source
whose pages are shown more widely, the page is refused (`connectors.markdown`), and as a draft it is
not indexed at all unless the source sets `index_drafts`. A person's words are text, not markup:
`<`, `>` and `&` are escaped for the HTML the wiki renders (`<script>`, Slack's `<!channel>`), and
`@here` / `@channel` / `@everyone` carry a word joiner, so no renderer or chat bridge acts on them.

File names are safe and stable: the question's ASCII words, lower case, joined by `-` (at most
`SLUG_CHARS`), then 8 hex characters of the thread's hash — `how-do-i-book-the-big-meeting-room-3f9c01ab.md`
(`gap-3f9c01ab.md` when the question has no ASCII word) — the same gap gets the same name on
every run. A file that exists is never overwritten: it is kept as it is (a wiki owner may have
edited it) and reported as kept; delete it to have it written again. Files are created with
exclusive creation, so two runs at once cannot overwrite each other either.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

from bot.records.gaps import AnsweredByPeople

SLUG_CHARS = 60


@dataclass(frozen=True)
class Draft:
    path: Path
    written: bool  # False: the file existed and was kept


def draft_name(gap: AnsweredByPeople) -> str:
    words = re.findall(r"[a-z0-9]+", gap.question.casefold().encode("ascii", "ignore").decode())
    slug = ""
    for word in words:
        if len(slug) + len(word) + 1 > SLUG_CHARS:
            break
        slug = f"{slug}-{word}" if slug else word
    digest = hashlib.sha256(f"{gap.channel}/{gap.thread_ts}".encode()).hexdigest()[:8]
    return f"{slug or 'gap'}-{digest}.md"


_BROADCAST = re.compile(r"@(here|channel|everyone)\b", re.IGNORECASE)


def inert(text: str) -> str:
    """A person's text made inert for HTML renderers and chat bridges (see the module docstring)."""
    return _BROADCAST.sub(lambda m: "@\u2060" + m.group(1), html.escape(text, quote=False))


def draft_text(gap: AnsweredByPeople) -> str:
    title = inert(" ".join(gap.question.split()))
    front = {
        "title": title,
        "draft": True,
        "answered_by": gap.answered_by,
        "asked_in": gap.channel,
        "scopes": sorted(gap.scopes),
        "slack_thread": gap.permalink,
        "answered_at": gap.answered_at.isoformat(),
    }
    lines = ["---"] + [f"{key}: {json.dumps(value, ensure_ascii=False)}" if isinstance(value, (str, list))
                       else f"{key}: {str(value).lower()}" for key, value in front.items()] + ["---", ""]
    thread = f"[the thread]({gap.permalink})" if gap.permalink else "the thread"
    lines += [f"# {title}", "", inert(gap.answer.strip()) or "(no text)", "", "---", "",
              f"_Answered in Slack by a colleague ({thread}); check it, edit it into the wiki's words, and move "
              "it where it belongs._", ""]
    return "\n".join(lines)


def write_drafts(gaps: list[AnsweredByPeople], directory: Path) -> list[Draft]:
    """One draft per gap in `directory` (made if missing); existing files are kept, never overwritten."""
    directory.mkdir(parents=True, exist_ok=True)
    drafts = []
    for gap in gaps:
        path = directory / draft_name(gap)
        try:
            with path.open("x", encoding="utf-8") as out:
                out.write(draft_text(gap))
            drafts.append(Draft(path, written=True))
        except FileExistsError:
            drafts.append(Draft(path, written=False))
    return drafts
