"""Confluence HTML space export ("Export space → HTML"), as a folder or the .zip Confluence wrote.

The export is `index.html` (space details and the page tree) plus one rendered file per page,
`Title-With-Dashes_<id>.html` or bare `<id>.html` when the title has no ASCII form. The page id
exists only in that file name, so pages are keyed by it (`path` = "pages/<id>"): a renamed page
keeps its identity and two pages with the same title stay two documents.

From each page file:
- title from `#title-text` with the "Space name : " prefix removed;
- ancestors (root first, the space itself excluded) from the breadcrumbs;
- author, last editor and last-modified date from the free-text metadata line (a date only, in
  the server's locale and zone, hence the `timezone` setting);
- the ids Confluence rendered on the body's headings (`DeployingtheQuokkaAPI-Steps`), so a
  section is cited as `<page URL>#<id>`, which the page view resolves (no id: the page itself);
- body from `#main-content`, cleaned and converted to Markdown: code panels become fenced code
  with their language, info/tip/note/warning panels a bold label and their text, expand sections
  their title and body, Jira macros the issue key; the children macro, TOC, attachment list and
  links to other files of the export (dead outside it) are dropped or reduced to their text;
- attachments (the page's attachment list and embedded images) into `metadata["attachments"]`.
Space key and name come from `index.html`'s "Space Details" table (the only place the key is
written); when it cannot be read, `metadata["space"]` is empty and `metadata["space_problem"]`
says why.

A page that cannot be read (bad UTF-8, no `#main-content`; over the size, tag, depth or time
limits of `connectors.confluence.common`) becomes a document with `error` set; an export that cannot be
opened at all raises `ExportError` before any document.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bs4 import BeautifulSoup, NavigableString, Tag

from connectors.confluence.common import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_SECONDS,
    MAX_ARCHIVE_BYTES,
    MAX_ARCHIVE_MEMBERS,
    PANEL_LABELS,
    Deadline,
    ExportError,
    ExportFiles,
    attr,
    check_depth,
    check_markup,
    code_block,
    decode_utf8,
    drop_hidden,
    labelled_block,
    page_url,
    parse_naive,
    to_markdown,
    zone,
)
from connectors.confluence.links import SPACE_KEY  # checked only where index.html's table gives no "Key"
from connectors.document import PUBLIC, SourceDocument
from connectors.export_attachments import AttachmentEntry, attachment_documents

PAGE_FILE = re.compile(r"(?:^|_)(\d+)\.html$")
# Day-first numeric dates (European servers) and the English "Jun 28, 2022" forms.
DATE_FORMATS = ["%d.%m.%Y", "%d. %m. %Y", "%Y-%m-%d", "%b %d, %Y", "%B %d, %Y", "%d %b %Y", "%d %B %Y"]
NAVIGATION = [
    "ul.childpages-macro", ".toc-macro", ".plugin_pagetree", ".recently-updated", "#attachments",
    ".greybox", ".pageSection", ".expand-control-icon", ".confluence-anchor-link",
]
EXPAND_DEFAULT_TITLE = "click here to expand..."


@dataclass
class _Space:
    key: str = ""
    name: str = ""
    problem: str = ""  # why the key could not be read (empty when it was)


@dataclass
class ConfluenceHtmlExport:
    """A Confluence HTML space export (folder or .zip) and how to cite its pages."""

    root: Path  # the export folder, or the .zip
    source: str = "confluence"
    base_url: str | None = None  # e.g. "https://acme.atlassian.net/wiki"; None: file:// links
    access: str = PUBLIC
    max_bytes: int = DEFAULT_MAX_BYTES  # per page file
    max_seconds: float | None = DEFAULT_MAX_SECONDS  # per page: cleaning and converting
    timezone: str = "UTC"  # the server's zone; page dates carry none
    max_archive_bytes: int = MAX_ARCHIVE_BYTES
    max_archive_members: int = MAX_ARCHIVE_MEMBERS
    attachments: bool = False  # also index attached PDF/Word/PowerPoint files (connectors.export_attachments)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()

    def documents(self) -> Iterator[SourceDocument]:
        """Every page of the export, read (or failed) one at a time, in page-id order."""
        zone(self.timezone)  # an unknown zone fails the export up front, not every page
        with self._open() as files:
            pages = _page_files(files)
            space = _space_details(files)
            for page_id, name in pages:
                doc = self.read_page(files, name, page_id, space)
                yield doc
                if self.attachments:
                    yield from attachment_documents(files, doc, self.base_url)

    def paths(self) -> Iterator[str]:
        """The documents' paths, "pages/<id>", without reading the pages."""
        with self._open() as files:
            yield from (f"pages/{page_id}" for page_id, _ in _page_files(files))

    def read_page(self, files: ExportFiles, name: str, page_id: str, space: _Space) -> SourceDocument:
        """One page file into a document; problems become the document's `error`."""
        url = page_url(self.base_url, page_id) if self.base_url else files.uri(name)
        doc = SourceDocument(source=self.source, path=f"pages/{page_id}", access=self.access, url=url,
                             heading_ids=[])
        # The space key exists only in index.html; a name (the breadcrumbs' first link) is not a key,
        # so a page whose key is unknown says why, and a per-space `access` fails it (SpaceScoped).
        doc.metadata = {
            "page_id": page_id, "file": PurePosixPath(name).name, "space": space.key,
            "space_name": space.name, "ancestors": [], "ancestor_ids": [], "attachments": [], "tags": [],
        }
        if not space.key:
            doc.metadata["space_problem"] = space.problem
        try:
            deadline = Deadline(self.max_seconds)
            markup = decode_utf8(files.read(name, self.max_bytes))
            check_markup(markup)
            soup = BeautifulSoup(markup, "lxml")
            check_depth(soup)
            self._read_header(soup, doc, space)  # first, so even a failed page says which it is
            main = soup.find(id="main-content")
            if main is None:
                raise ValueError("no #main-content: not a Confluence page, or a truncated file")
            doc.metadata["attachments"] = _attachments(soup, main)
            cleaned = self._clean(soup, main, deadline)
            doc.heading_ids = _heading_ids(cleaned)
            doc.text = to_markdown(cleaned, deadline)
        except Exception as exc:  # a bad page (or a parser bug) fails that page, not the export
            doc.error = str(exc) or type(exc).__name__
        return doc

    def _read_header(self, soup: BeautifulSoup, doc: SourceDocument, space: _Space) -> None:
        """Title, ancestors, author and date: everything above the body."""
        links = [li.find("a") for ol in soup.find_all(id="breadcrumbs") for li in ol.find_all("li", recursive=False)]
        crumbs = [(_text(a), attr(a, "href") or "") for a in links if a is not None]
        space_names = [title for title, href in crumbs if href.endswith("index.html")] + [space.name]
        ancestors = [(title, href) for title, href in crumbs if not href.endswith("index.html")]
        doc.metadata["ancestors"] = [title for title, _ in ancestors]
        doc.metadata["ancestor_ids"] = [m.group(1) for _, href in ancestors if (m := PAGE_FILE.search(href))]

        heading = soup.find(id="title-text") or soup.title
        title = _text(heading) if heading else ""
        for prefix in filter(None, space_names):
            if title.startswith(f"{prefix} : "):
                title = title[len(prefix) + 3:].strip()
                break
        if not title:
            raise ValueError("no page title")
        doc.title = title

        meta = soup.find(class_="page-metadata")
        if meta is not None:
            author, editor = meta.find(class_="author"), meta.find(class_="editor")
            doc.metadata["author"] = _text(author) if author else ""
            doc.metadata["last_modified_by"] = _text(editor) if editor else doc.metadata["author"]
            # The date follows the last " on " (not `.*\bon\s+(.+)$`: quadratic on a long line without one).
            if ons := list(re.finditer(r"\bon\s+", line := _text(meta))):
                doc.updated_at = parse_naive(line[ons[-1].end():], DATE_FORMATS, zone(self.timezone))

    def _clean(self, soup: BeautifulSoup, main: Tag, deadline: Deadline | None = None) -> Tag:
        """Rendered macros back to plain HTML and navigation out: what is left is the page's text.

        Each step walks the tree once with `find_all(True)` and a plain test (soupsieve's
        `select` costs ~10x more per element, and a page has 15 selectors to run), checking the
        deadline as it goes; an element detached by an earlier change is skipped.
        """
        deadline = deadline or Deadline(None)

        def each(test: Callable[[Tag], bool]) -> Iterator[Tag]:
            found = []
            for n, tag in enumerate(main.find_all(True)):
                if n % 1000 == 0:
                    deadline.check()
                if test(tag):
                    found.append(tag)
            for tag in found:
                deadline.check()
                if tag.parent is not None:
                    yield tag

        for script in each(lambda t: t.name == "script" and t.get("type") == "syntaxhighlighter"):  # code in CDATA
            code = re.sub(r"^\s*<!\[CDATA\[|\]\]>\s*$", "", script.get_text())
            script.replace_with(code_block(soup, code, _brush(script)))
        navigation = [_matcher(selector) for selector in NAVIGATION]
        for tag in each(lambda t: any(test(t) for test in navigation)):
            tag.decompose()
        drop_hidden(main)
        code_panels = [_matcher("div.code.panel"), _matcher("div.preformatted.panel")]
        for panel in each(lambda t: any(test(t) for test in code_panels)):
            panel.replace_with(_code_panel(soup, panel))
        for box in each(_matcher("div.expand-container")):
            box.replace_with(_expand(soup, box))
        for box in each(_matcher("div.confluence-information-macro")):
            box.replace_with(_info_panel(soup, box))
        for box in each(_matcher("div.panel")):
            box.replace_with(_panel(soup, box))
        for jira in each(_matcher(".confluence-jim-macro")):
            jira.replace_with(_jira_key(jira))
        for link in each(lambda t: t.name == "a"):
            self._fix_link(link)
        return main

    def _fix_link(self, link: Tag) -> None:
        """Links into the export point at files nobody else has: cite the page, or keep the text."""
        href = attr(link, "href") or ""
        if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I) and not href.lower().startswith("file:"):
            return  # http(s), mailto, ...: fine as it is
        match = PAGE_FILE.search(href.split("#")[0])
        if match and self.base_url:
            link["href"] = page_url(self.base_url, match.group(1))
        else:
            link.unwrap()

    def _open(self) -> ExportFiles:
        return ExportFiles(self.root, max_archive_bytes=self.max_archive_bytes,
                           max_archive_members=self.max_archive_members)


def _matcher(selector: str) -> Callable[[Tag], bool]:
    """A test for one simple CSS selector: a tag name, `#id` and `.class`es (`ul.childpages-macro`)."""
    match = re.fullmatch(r"([\w-]*)((?:[.#][\w-]+)*)", selector)
    if match is None:
        raise ValueError(f"not a simple selector: {selector!r}")
    name = match.group(1) or None
    ids = re.findall(r"#([\w-]+)", match.group(2))
    classes = set(re.findall(r"\.([\w-]+)", match.group(2)))

    def test(tag: Tag) -> bool:
        if name is not None and tag.name != name:
            return False
        if ids and tag.get("id") != ids[0]:
            return False
        return not classes or classes <= set(tag.get("class") or ())

    return test


def _heading_ids(main: Tag) -> list[tuple[str, str]]:
    """(text, id) of the body's headings that carry an id, in page order: the ids Confluence gave
    them when it rendered the page (`Pagetitle-Headingtext`), which its page view resolves too."""
    return [(_text(h), ident) for h in main.find_all(["h1", "h2", "h3", "h4", "h5", "h6"])
            if isinstance(ident := h.get("id"), str) and ident.strip()]


def _page_files(files: ExportFiles) -> list[tuple[str, str]]:
    """(id, file) of every page: `<…_>id.html` beside `index.html`, in id order."""
    index = files.find("index.html")
    folder = str(PurePosixPath(index).parent) if index else "."
    pages = []
    for name in files.names:
        pure = PurePosixPath(name)
        if str(pure.parent) == folder and (match := PAGE_FILE.search(pure.name)):
            pages.append((match.group(1), name))
    if not pages:
        raise ExportError(f"{files.location} holds no Confluence page files (<Title>_<id>.html)")
    return sorted(pages, key=lambda page: (*_numeric(page[0]), page[1]))


def _numeric(digits: str) -> tuple[int, str]:
    """A sort key in numeric order for a string of digits of any length (`int()` refuses over
    4,300 digits, and an id of that length is only a hostile file name)."""
    digits = digits.lstrip("0")
    return len(digits), digits


def _space_details(files: ExportFiles) -> _Space:
    """Key and name from the "Space Details" table of index.html (by row label, else by position).

    index.html is the only file of the export that holds the space key: a page's breadcrumbs name
    the space but never give its key, and names are not unique. Whatever goes wrong reading it
    (missing, over the caps, not UTF-8, a layout without the table) costs the key, not the export,
    and the `problem` says which, so a source whose access is per space fails these pages with
    that reason instead of giving them the scope of "every other space"."""
    index = files.find("index.html")
    if not index:
        return _Space(problem="the export has no index.html, the only file that names its space key")
    try:
        markup = decode_utf8(files.read(index, DEFAULT_MAX_BYTES))
        check_markup(markup)
        soup = BeautifulSoup(markup, "lxml")
        check_depth(soup)
        main = soup.find(id="main-content")
        table = main.find("table") if main is not None else None
        rows = [(_text(tr.find("th")).lower(), _text(tr.find("td"))) for tr in table.find_all("tr")
                if tr.find("th") and tr.find("td")] if table else []
    except Exception as exc:  # an unreadable index.html (or a damaged zip member) costs the space key, not the export
        return _Space(problem=f"{index} cannot be read ({str(exc) or type(exc).__name__}), and only it names "
                              f"the space key")
    labelled = dict(rows)
    name = labelled.get("name", rows[1][1] if len(rows) > 1 else "")
    if "key" in labelled:
        key = labelled["key"]
    else:  # a localised export ("Schlüssel"): the key is the first row — if it looks like a key at all
        key = rows[0][1] if rows and SPACE_KEY.fullmatch(rows[0][1]) else ""
    return _Space(key=key, name=name,
                  problem="" if key else f"{index} has no Space Details table with the space key")


def _attachments(soup: BeautifulSoup, main: Tag) -> list[AttachmentEntry]:
    """The page's attachment list ("name (mime)" links), plus images embedded in the body."""
    found: dict[str, AttachmentEntry] = {}
    for link in (a for box in soup.find_all(class_="greybox") for a in box.find_all("a", href=True)):
        following = link.next_sibling
        mime = re.match(r"\s*\(([^)]+)\)", following) if isinstance(following, NavigableString) else None
        found.setdefault(_text(link), {"name": _text(link), "path": attr(link, "href") or "",
                                       "media_type": mime.group(1) if mime else ""})
    for img in main.find_all("img", attrs={"data-linked-resource-default-alias": True}):
        name = attr(img, "data-linked-resource-default-alias") or ""  # present: the search asked for it
        found.setdefault(name, {"name": name, "path": attr(img, "src") or "", "media_type": ""})
    return list(found.values())


def _code_panel(soup: BeautifulSoup, panel: Tag) -> Tag:
    pre, header = panel.find("pre"), panel.find(class_=["codeHeader", "preformattedHeader"])
    return code_block(soup, pre.get_text() if pre else "", _brush(pre) if pre else "", _text(header))


def _expand(soup: BeautifulSoup, box: Tag) -> Tag:
    title, body = _text(box.find(class_="expand-control-text")), box.find(class_="expand-content")
    if title.lower() == EXPAND_DEFAULT_TITLE:
        title = ""
    return labelled_block(soup, "", body.contents if body else [], title)


def _info_panel(soup: BeautifulSoup, box: Tag) -> Tag:
    """`confluence-information-macro-{information,tip,note,warning}`: its kind is its label."""
    kinds = [c.removeprefix("confluence-information-macro-") for c in box.get_attribute_list("class")]
    kind = next((k for k in kinds if k in PANEL_LABELS), "info")
    title = box.find(class_="title", recursive=False)
    body = box.find(class_="confluence-information-macro-body", recursive=False)
    return labelled_block(soup, PANEL_LABELS[kind], body.contents if body else [], _text(title))


def _panel(soup: BeautifulSoup, box: Tag) -> Tag:
    header = box.find(class_="panelHeader", recursive=False)
    body = box.find(class_="panelContent", recursive=False)
    return labelled_block(soup, "", body.contents if body else [], _text(header))


def _jira_key(jira: Tag) -> NavigableString:
    """The issue key; the summary is a "Getting issue details..." placeholder in an export."""
    key = attr(jira, "data-jira-key") or _text(jira.find(class_="jira-issue-key") or jira)
    return NavigableString(key.replace("Getting issue details...", "").strip())


def _brush(tag: Tag) -> str:
    """The language of a rendered code macro: "brush: java; gutter: false" → "java"."""
    match = re.search(r"brush:\s*([\w+#-]+)", attr(tag, "data-syntaxhighlighter-params") or "")
    return match.group(1) if match else ""


def _text(tag: Tag | None) -> str:
    return " ".join(tag.get_text(" ").split()) if tag is not None else ""
