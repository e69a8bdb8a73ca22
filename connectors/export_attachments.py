"""PDF, Word and PowerPoint files inside a Confluence export, as documents of their own.

Both export kinds carry the files their pages attach (when the export was made with attachments):
the XML export at `attachments/<page id>/<attachment id>/<version>`, the HTML export at
`attachments/<page id>/<attachment id>.<ext>` — the `path` each connector already records in a
page's `metadata["attachments"]`. A file is read when its name is a kind `connectors.attachments`
converts; it becomes `pages/<page id>/attachments/<file name>`, titled "file (page title)",
with its page's scope, space and place in the tree, cited at the server (`base_url`) or in the
export, PDFs to the page (`#page=N`).

Opt-in for exports (`attachments = true` in the source): an export's file list is what a space
admin chose to include, and turning it on changes what a source indexes. Limits and failures are
the converter's: a file over its limits or unreadable FAILS with the reason, a scan is SKIPPED; a
file the page lists but the export lacks FAILS ("not in the export"). A page not indexed
(restricted, failed, skipped) lends its scope and reason to its files, which are not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import NotRequired, TypedDict
from urllib.parse import quote

from connectors.attachments import FileLimits, NoText, convert, wanted
from connectors.confluence.common import ExportFiles
from connectors.document import RESTRICTED, SourceDocument


class AttachmentEntry(TypedDict):
    """One file of a page's `metadata["attachments"]`, as its export lists it."""

    name: str
    path: str  # where its bytes are in the export
    media_type: str
    size: NotRequired[int | None]  # bytes; only the XML export records it


def attachment_documents(files: ExportFiles, page: SourceDocument, base_url: str | None,
                         limits: FileLimits | None = None) -> Iterator[SourceDocument]:
    """The convertible files attached to `page` (a document the export connector just read)."""
    limits = limits or FileLimits()
    page_id = page.metadata.get("page_id") or page.path.rsplit("/", 1)[-1]
    seen: set[str] = set()
    for item in page.metadata.get("attachments") or []:
        name = str(item.get("name") or "")
        where = str(item.get("path") or "").removeprefix("./")
        if not wanted(name) or name in seen:
            continue
        seen.add(name)
        url = (f"{base_url.rstrip('/')}/download/attachments/{page_id}/{quote(name)}" if base_url
               else files.uri(where) if where in files.names else page.url)
        doc = SourceDocument(source=page.source, path=f"{page.path}/attachments/{name}",
                             title=f"{name} ({page.title})" if page.title else name, url=url, access=page.access,
                             updated_at=page.updated_at, heading_ids=[],
                             metadata={"space": page.metadata.get("space", ""), "page_id": page_id,
                                       "attached_to": page.title, "attached_to_url": page.url, "file": name,
                                       "ancestors": [*page.metadata.get("ancestors", []), page.title]})
        for key in ("space_name", "space_problem"):
            if key in page.metadata:
                doc.metadata[key] = page.metadata[key]
        if page.access == RESTRICTED or page.skipped or page.error:
            doc.skipped = f"attached to a page that is not indexed: {page.skipped or page.error}"
            yield doc
            continue
        try:
            if where not in files.names or PurePosixPath(where).is_absolute():
                raise ValueError(f"{where or name} is not in the export (exported without attachments?)")
            converted = convert(name, files.read(where, limits.max_bytes), limits)
            doc.text, doc.heading_ids = converted.text, converted.heading_ids
        except NoText as exc:
            doc.skipped = str(exc)
        except Exception as exc:  # over the size limit, unreadable, damaged zip member: this file fails
            doc.error = str(exc) or type(exc).__name__
        yield doc
