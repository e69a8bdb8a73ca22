"""Confluence XML space export (`entities.xml` + `exportDescriptor.properties`), folder or .zip.

`entities.xml` is a flat list of Hibernate `<object class="…">` rows in no fixed order, linked by
id: a Page names its space, parent and root-first ancestors; its text sits in a BodyContent that
points back at it; an Attachment points at its page. So the file is read once, streaming, into
small tables, and pages are assembled afterwards.

Only the current version of each page is a document: objects with `originalVersionId` set are
historical versions, and a `contentStatus` other than "current" is a draft or a trashed page.
Blog posts, comments and space descriptions are not pages and are skipped. Pages are keyed by
id (`path` = "pages/<id>"). Times carry no zone in the file; they are in the export's
`timezoneId` (from `exportDescriptor.properties`; UTC when it names none, unless `timezone` is
given). Bodies are storage format (bodyType 2), converted by `storage_to_markdown`; a legacy
wiki-markup body is read the same way, so its text survives but its markup is not interpreted.
Attachments (name, media type, size, path in the export) go into metadata, team/global labels
into `tags`.

Page restrictions are in the export too (a `ContentPermissionSet` of type View owned by a page),
but who they admit is not something the sources file maps for exports: a page with a view
restriction, on itself or on an ancestor, is SKIPPED with scope `RESTRICTED` and the reason, never
published under its space's scope (before, restrictions were ignored and such pages published).

A page that cannot be read (no title, unreadable date, body over `max_bytes`, over the tag, depth
or time limits of `connectors.confluence.common`, a conversion error) becomes a document with `error` set;
an export that cannot be read at all (no `entities.xml`, broken XML, unsafe or damaged .zip)
raises `ExportError` before any document. Rows are not trusted to have the shape Confluence
writes: an object without an id is skipped, a field is read as text or as a list of ids whatever
the file says, and numbers are parsed only when they are plain digits.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path, PurePosixPath
from typing import IO

from lxml import etree

from connectors.confluence.common import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_SECONDS,
    MAX_ARCHIVE_BYTES,
    MAX_ARCHIVE_MEMBERS,
    Deadline,
    ExportError,
    ExportFiles,
    decode_utf8,
    page_url,
    zone,
)
from connectors.confluence.storage import storage_to_markdown
from connectors.export_attachments import AttachmentEntry, attachment_documents
from connectors.document import PUBLIC, RESTRICTED, SourceDocument
from connectors.sizes import size_text

STORAGE = "2"  # BodyContent.bodyType of storage XHTML
KEPT_CLASSES = {"Page", "Space", "BodyContent", "ConfluenceUserImpl", "Attachment", "ContentProperty",
                "Label", "Labelling", "ContentPermissionSet"}
PUBLIC_LABEL_NAMESPACES = {"global", "team"}  # "my" labels are personal favourites
LIST_FIELDS = {"ancestors", "contentProperties"}  # the collections we read; every other field is text


class _Row(dict[str, str]):
    """An <object> of entities.xml: its fields as text, by name, and in `lists` its collections
    (`LIST_FIELDS` only) as lists of ids. Whatever the file says, a field is a string and a
    collection a list of strings: `put` files a value of the wrong kind as an empty one."""

    def __init__(self) -> None:
        super().__init__()
        self.lists: dict[str, list[str]] = {}

    def put(self, name: str, value: str | list[str]) -> None:
        if name in LIST_FIELDS:
            self.lists[name] = value if isinstance(value, list) else []
        else:
            self[name] = value if isinstance(value, str) else ""


@dataclass
class _Export:
    """The tables read from entities.xml, plus what the descriptor says."""

    tz: tzinfo
    pages: dict[str, _Row] = field(default_factory=dict)
    spaces: dict[str, _Row] = field(default_factory=dict)
    bodies: dict[str, tuple[str, str]] = field(default_factory=dict)  # page id → (bodyType, text)
    users: dict[str, str] = field(default_factory=dict)  # user key → name
    attachments: dict[str, list[_Row]] = field(default_factory=dict)  # page id → attachment rows
    properties: dict[str, _Row] = field(default_factory=dict)  # ContentProperty rows by id
    labels: dict[str, _Row] = field(default_factory=dict)
    labellings: dict[str, list[str]] = field(default_factory=dict)  # content id → label ids
    restricted: set[str] = field(default_factory=set)  # ids of content with a view restriction

    @property
    def space_ids(self) -> dict[str, str]:
        return {space.get("key", ""): space_id for space_id, space in self.spaces.items()}

    def current_pages(self) -> list[_Row]:
        return sorted((p for p in self.pages.values() if _is_current(p)), key=lambda p: _id_order(p["id"]))


@dataclass
class ConfluenceXmlExport:
    """A Confluence XML space export (folder or .zip) and how to cite its pages."""

    root: Path  # the export folder, or the .zip
    source: str = "confluence"
    base_url: str | None = None  # e.g. "https://acme.atlassian.net/wiki"; None: file:// links
    access: str = PUBLIC
    max_bytes: int = DEFAULT_MAX_BYTES  # per page body
    max_seconds: float | None = DEFAULT_MAX_SECONDS  # per page: converting its body
    timezone: str | None = None  # overrides the descriptor's timezoneId
    max_archive_bytes: int = MAX_ARCHIVE_BYTES
    max_archive_members: int = MAX_ARCHIVE_MEMBERS
    attachments: bool = False  # also index attached PDF/Word/PowerPoint files (connectors.export_attachments)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()

    def documents(self) -> Iterator[SourceDocument]:
        """Every current page of the export, read (or failed) one at a time, in page-id order."""
        export, entities_uri = self._load()
        pages = export.current_pages()
        titles = {(p.get("space"), p["title"]): p["id"] for p in pages if p.get("title")}
        if not self.attachments:
            for page in pages:
                yield self.read_page(export, page, entities_uri, titles)
            return
        with ExportFiles(self.root, max_archive_bytes=self.max_archive_bytes,
                         max_archive_members=self.max_archive_members) as files:
            for page in pages:
                doc = self.read_page(export, page, entities_uri, titles)
                yield doc
                yield from attachment_documents(files, doc, self.base_url)

    def paths(self) -> Iterator[str]:
        """The documents' paths, "pages/<id>" (this reads the whole entities.xml)."""
        export, _ = self._load()
        yield from (f"pages/{page['id']}" for page in export.current_pages())

    def read_page(self, export: _Export, page: _Row, entities_uri: str,
                  titles: dict[tuple[str | None, str], str]) -> SourceDocument:
        """One page row into a document; problems become the document's `error`."""
        page_id = page["id"]
        url = page_url(self.base_url, page_id) if self.base_url else f"{entities_uri}#page-{page_id}"
        # Storage format has no heading ids (Confluence makes them when it renders a page, and
        # Cloud and Server make them differently): its sections cite the page itself.
        doc = SourceDocument(source=self.source, path=f"pages/{page_id}", access=self.access, url=url,
                             heading_ids=[])
        doc.metadata = {"page_id": page_id}
        try:
            space = export.spaces.get(page.get("space", ""), _Row())
            ancestor_ids = [a for a in _ancestor_ids(page, export.pages) if a in export.pages]
            if not space.get("key", "").strip():
                space_id = page.get("space", "")[:64]
                doc.metadata["space_problem"] = (
                    "the page names no space" if not space_id else
                    f"the page's space (id {space_id}) has no key in entities.xml" if space else
                    f"the page's space (id {space_id}) is not in entities.xml")
            doc.metadata.update({
                "space": space.get("key", "").strip(), "space_name": space.get("name", ""),
                "ancestors": [export.pages[a].get("title", "") for a in ancestor_ids], "ancestor_ids": ancestor_ids,
                "author": export.users.get(page.get("creator", ""), ""),
                "last_modified_by": export.users.get(page.get("lastModifier", ""), ""),
                "version": _int(page.get("version", "")),
                "attachments": [_attachment(a, export.properties) for a in export.attachments.get(page_id, [])],
                "tags": _labels(page_id, export),
            })
            doc.title = page.get("title", "").strip()
            restricted = [c for c in [*_ancestor_ids(page, export.pages), page_id] if c in export.restricted]
            if restricted:
                doc.access = RESTRICTED
                doc.skipped = (f"{'the page' if restricted[-1] == page_id else 'its ancestor page ' + restricted[-1]} "
                               f"has view restrictions in the export; who they admit is not mapped to a scope, "
                               f"so the page is not indexed")
                return doc
            if not doc.title:
                raise ValueError("page has no title")
            doc.updated_at = _timestamp(page.get("lastModificationDate") or page.get("creationDate", ""), export.tz)
            _, body = export.bodies.get(page_id, (STORAGE, ""))
            size = len(body.encode("utf-8"))
            if size > self.max_bytes:
                raise ValueError(f"body is {size_text(size)}, over the {size_text(self.max_bytes)} limit")

            def link(title: str, space_key: str | None) -> str | None:  # a page we can cite, by title
                space_id = export.space_ids.get(space_key, "") if space_key else page.get("space")
                target = titles.get((space_id, title))
                return page_url(self.base_url, target) if self.base_url and target else None

            doc.text = storage_to_markdown(body, export.users, link, Deadline(self.max_seconds))
        except Exception as exc:  # a bad page (or a parser bug) fails that page, not the export
            doc.error = str(exc) or type(exc).__name__
        return doc

    def _load(self) -> tuple[_Export, str]:
        """Read descriptor and entities.xml (streaming); export-level problems raise ExportError."""
        with ExportFiles(self.root, max_archive_bytes=self.max_archive_bytes,
                         max_archive_members=self.max_archive_members) as files:
            entities = files.find("entities.xml")
            if entities is None:
                raise ExportError(f"{self.root} holds no entities.xml: not a Confluence XML export")
            descriptor_name = str(PurePosixPath(entities).parent / "exportDescriptor.properties").removeprefix("./")
            descriptor = {}
            if descriptor_name in files.names:
                try:
                    descriptor = _properties(decode_utf8(files.read(descriptor_name, 1024 * 1024)))
                except Exception as exc:  # too big, not UTF-8, a damaged zip member
                    raise ExportError(f"cannot read {descriptor_name}: {exc}") from None
            export = _Export(tz=zone(self.timezone or descriptor.get("timezoneId")))
            try:
                with files.open(entities) as stream:
                    _read_entities(stream, export)
            except etree.XMLSyntaxError as exc:
                raise ExportError(f"{entities} is not well-formed XML: {exc}") from None
            except (zipfile.BadZipFile, zlib.error, OSError) as exc:  # damaged archive or disk
                raise ExportError(f"cannot read {entities}: {exc}") from None
            except Exception as exc:  # e.g. an encrypted or unsupported zip member
                raise ExportError(f"cannot read {entities}: {type(exc).__name__}: {exc}") from None
            if not export.current_pages():  # syncing "nothing" would delete every indexed page
                raise ExportError(f"{entities} holds no current pages")
            return export, files.uri(entities)


def _read_entities(stream: IO[bytes], export: _Export) -> None:
    """One streaming pass over the objects we need; each is reduced to a dict and freed."""
    parser = etree.iterparse(stream, events=("end",), tag="object", resolve_entities=False,
                             no_network=True, load_dtd=False, huge_tree=True)
    for _, obj in parser:
        cls = obj.get("class")
        row = _row(obj) if cls in KEPT_CLASSES else _Row()
        if row.get("id"):  # an object without an id cannot be referred to: it is skipped
            if cls == "Page":
                export.pages[row["id"]] = row
            elif cls == "Space":
                export.spaces[row["id"]] = row
            elif cls == "BodyContent":
                content = obj.find("property[@name='content']")
                page_id = row.get("content", "")
                kept = export.bodies.get(page_id)
                if content is not None and content.get("class") == "Page" and (kept is None or kept[0] != STORAGE):
                    export.bodies[page_id] = (row.get("bodyType", ""), row.get("body", ""))
            elif cls == "ConfluenceUserImpl":
                export.users[row["id"]] = row.get("name", "")
            elif cls == "Attachment" and _is_current(row):
                container = row.get("containerContent") or row.get("content", "")
                export.attachments.setdefault(container, []).append(row)
            elif cls == "ContentProperty":
                export.properties[row["id"]] = row
            elif cls == "Label":
                export.labels[row["id"]] = row
            elif cls == "ContentPermissionSet" and row.get("type", "").strip().casefold() == "view":
                export.restricted.add(row.get("owningContent", "").strip())
            elif cls == "Labelling":
                export.labellings.setdefault(row.get("content", ""), []).append(row.get("label", ""))
        obj.clear()
        while obj.getprevious() is not None:
            del obj.getparent()[0]


def _row(obj: etree._Element) -> _Row:
    """An <object> as a `_Row`: properties by name (a reference gives the id it points at),
    collections as lists of ids; the last of a name wins, as the file is read."""
    row = _Row()
    for child in obj:
        if child.tag == "id":
            row["id"] = (child.text or "").strip()
        elif child.tag == "property":
            ref = child.find("id")
            row.put(child.get("name") or "", (ref.text if ref is not None else child.text) or "")
        elif child.tag == "collection":
            row.put(child.get("name") or "", [(e.findtext("id") or "").strip() for e in child.findall("element")])
    return row


def _int(text: str) -> int | None:
    """A count or a version: plain ASCII digits only (`"²".isdigit()` is true, `int("²")` fails)."""
    return int(text) if re.fullmatch(r"[0-9]{1,18}", text or "") else None


def _id_order(page_id: str) -> tuple[int, int, str]:
    """Numeric ids in numeric order (of any length), then anything else."""
    if re.fullmatch(r"[0-9]+", page_id):
        digits = page_id.lstrip("0")
        return 0, len(digits), digits
    return 1, 0, page_id


def _is_current(row: _Row) -> bool:
    """Not a historical version, not a draft, not in the trash."""
    if row.get("originalVersionId") or row.get("originalVersion"):
        return False
    return row.get("contentStatus", "current") in ("current", "")


def _ancestor_ids(page: _Row, pages: dict[str, _Row]) -> list[str]:
    """Root first: the `ancestors` list when the export has one, else the parent chain."""
    if page.lists.get("ancestors"):
        return list(page.lists["ancestors"])
    chain, seen, parent = [], {page["id"]}, page.get("parent")
    while parent and parent not in seen and parent in pages:
        chain.append(parent)
        seen.add(parent)
        parent = pages[parent].get("parent")
    return chain[::-1]


def _timestamp(text: str, tz: tzinfo) -> datetime | None:
    if not text.strip():
        return None
    try:
        return datetime.fromisoformat(text.strip()).replace(tzinfo=tz)
    except ValueError:
        raise ValueError(f"unreadable modification date {text.strip()!r}") from None


def _attachment(row: _Row, properties: dict[str, _Row]) -> AttachmentEntry:
    props = {p.get("name"): p for p in (properties.get(i, _Row()) for i in row.lists.get("contentProperties", []))}
    size = props.get("FILESIZE", _Row()).get("longValue") or row.get("fileSize", "")
    page = row.get("containerContent") or row.get("content", "")
    return {
        "name": row.get("title", ""),
        "media_type": props.get("MEDIA_TYPE", _Row()).get("stringValue") or row.get("contentType", ""),
        "size": _int(size),
        "path": f"attachments/{page}/{row['id']}/{row.get('version', '1')}",  # where the bytes are
    }


def _labels(page_id: str, export: _Export) -> list[str]:
    labels = [export.labels.get(label_id, _Row()) for label_id in export.labellings.get(page_id, [])]
    return sorted({label.get("name", "") for label in labels
                   if label.get("name") and label.get("namespace", "global") in PUBLIC_LABEL_NAMESPACES})


def _properties(text: str) -> dict[str, str]:
    """A Java .properties file, as far as export descriptors use it (key=value, # comments)."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and (match := re.match(r"([^=:\s]+)\s*[=:]\s*(.*)", line)):
            values[match.group(1)] = re.sub(r"\\(.)", r"\1", match.group(2))
    return values
