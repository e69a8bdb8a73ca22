"""Confluence storage format → Markdown: the XHTML of the XML export and of REST `body.storage`.

Macros become what they show (code and panels as blocks, a Jira or status macro as its text, a
body macro as its body; macros that list or embed other content are dropped); links become their
text, and stay links where they point at a page we can cite or a URL; a user mention becomes
"@name". The result goes through the shared `to_markdown` (`connectors.confluence.common`),
inside the same page limits (`MAX_TAGS`, `MAX_DEPTH`, a `Deadline`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bs4 import BeautifulSoup, Tag

from connectors.confluence.common import (
    PANEL_LABELS,
    Deadline,
    attr,
    check_depth,
    check_markup,
    code_block,
    drop_hidden,
    labelled_block,
    new_tag,
    to_markdown,
)

# Macros that list or embed other content (or are pure decoration): nothing of the page's own.
NAVIGATION_MACROS = {
    "toc", "children", "pagetree", "pagetreesearch", "recently-updated", "contentbylabel", "attachments",
    "livesearch", "anchor", "include", "excerpt-include", "blog-posts", "listlabels", "popular-labels",
    "related-labels", "navmap", "search", "profile-picture", "gallery", "viewfile", "jiraissues",
    "create-from-template",
}


_MARKED_SECTION = re.compile(r"<!\[(?!CDATA\[)")


def storage_to_markdown(storage: str, users: dict[str, str] | None = None,
                        page_link: Callable[[str, str | None], str | None] | None = None,
                        deadline: Deadline | None = None) -> str:
    """Confluence storage XHTML → Markdown.

    Storage is XHTML with `ac:`/`ri:` elements and HTML named entities (`&auml;`), so it is not
    well-formed XML: Python's HTML parser reads it, keeping the prefixed names and `/>` empty
    elements. Macros become plain HTML innermost first (an info panel inside an expand), then
    links and mentions become text, and any other `ac:`/`ri:` wrapper (layouts, inline comment
    markers) gives way to its content. `users` maps user keys / account ids to names for
    mentions; `page_link(title, space_key)` turns a linked page into a URL when it knows one
    (no space key: the linking page's own space).

    Over `MAX_TAGS` tags or `MAX_DEPTH` levels, or past the `deadline`: `PageLimitExceeded`.
    """
    deadline = deadline or Deadline(None)
    check_markup(storage)
    # Python's HTML parser rejects a "<![" that opens no CDATA section ("<![i](x.png)", a Markdown
    # image written after a "<"); as text it is what the author meant.
    storage = _MARKED_SECTION.sub("&lt;![", storage)
    soup = BeautifulSoup(storage, "html.parser")
    check_depth(soup)
    for macro in reversed(soup.find_all(["ac:structured-macro", "ac:macro"])):
        deadline.check()
        _replace_macro(soup, macro)
    for link in soup.find_all("ac:link"):
        deadline.check()
        if link.parent is not None:  # not inside a link already replaced by its text
            _replace_link(soup, link, users or {}, page_link)
    for task in soup.find_all("ac:task"):
        deadline.check()
        _replace_task(task)
    for task_list in soup.find_all("ac:task-list"):
        task_list.name = "ul"
    for emoticon in soup.find_all("ac:emoticon"):
        deadline.check()
        if emoticon.parent is not None:
            emoticon.replace_with(_attr(emoticon, "ac:emoji-fallback"))
    for tag in soup.find_all(["ac:image", "ac:placeholder"]):  # attachments; hints shown only in the editor
        deadline.check()
        tag.decompose()
    for time_tag in soup.find_all("time"):
        if not time_tag.get_text(strip=True):
            time_tag.string = _attr(time_tag, "datetime")
    for tag in soup.find_all(re.compile(r"^(ac|ri):")):
        deadline.check()
        if tag.parent is not None:
            tag.unwrap()
    drop_hidden(soup)
    return to_markdown(soup, deadline)


def _attr(tag: Tag, name: str) -> str:
    """An attribute as one string (bs4 gives a list for multi-valued ones such as `class`)."""
    value = tag.get(name, "")
    return " ".join(value) if isinstance(value, list) else str(value)


def _replace_macro(soup: BeautifulSoup, macro: Tag) -> None:
    name = (attr(macro, "ac:name") or "").lower()
    params = {attr(p, "ac:name") or "": p.get_text(" ", strip=True)
              for p in macro.find_all("ac:parameter", recursive=False)}
    title = params.get("title", "")
    body = macro.find("ac:rich-text-body", recursive=False)
    plain = macro.find("ac:plain-text-body", recursive=False)
    if name in ("code", "noformat"):
        language = params.get("language", "") if name == "code" else ""
        macro.replace_with(code_block(soup, plain.get_text() if plain else "", language, title))
    elif name in PANEL_LABELS:
        macro.replace_with(labelled_block(soup, PANEL_LABELS[name], body.contents if body else [], title))
    elif name == "jira":
        macro.replace_with(params.get("key", ""))
    elif name == "status":
        macro.replace_with(params.get("title", ""))
    elif name in NAVIGATION_MACROS:
        macro.decompose()
    elif body is not None:  # expand, panel, details, excerpt, section, column, ...: the body is content
        macro.replace_with(labelled_block(soup, "", body.contents, title))
    elif plain is not None and plain.get_text(strip=True):  # an unknown macro's raw text, kept verbatim
        macro.replace_with(code_block(soup, plain.get_text()))
    else:
        macro.decompose()


def _replace_link(soup: BeautifulSoup, link: Tag, users: dict[str, str],
                  page_link: Callable[[str, str | None], str | None] | None) -> None:
    """A link becomes its text (or the target's name); pages we can cite and URLs stay links."""
    body = link.find(["ac:link-body", "ac:plain-text-link-body"])
    text = " ".join(body.get_text(" ").split()) if body else ""
    target = link.find(re.compile(r"^ri:"))
    href = None
    if target is None:
        pass
    elif target.name == "ri:user":
        key = attr(target, "ri:userkey") or attr(target, "ri:account-id") or attr(target, "ri:username") or ""
        text = text or "@" + (users.get(key) or attr(target, "ri:username") or "unknown user")
    elif target.name in ("ri:page", "ri:blog-post"):
        title = attr(target, "ri:content-title") or ""
        text = text or title
        if page_link and title and target.name == "ri:page":
            href = page_link(title, attr(target, "ri:space-key"))
    elif target.name == "ri:url":
        href = attr(target, "ri:value")
        text = text or href or ""
    else:  # attachment, space, ...
        text = text or attr(target, "ri:filename") or attr(target, "ri:space-key") or ""
    link.replace_with(new_tag(soup, "a", text, href=href) if href else text)


def _replace_task(task: Tag) -> None:
    """An `ac:task` as a Markdown checklist item: "[x] done" / "[ ] to do"."""
    status = task.find("ac:task-status")
    done = status is not None and status.get_text(strip=True) == "complete"
    for part in task.find_all(["ac:task-id", "ac:task-status"]):
        part.decompose()
    task.name = "li"
    task.insert(0, "[x] " if done else "[ ] ")
