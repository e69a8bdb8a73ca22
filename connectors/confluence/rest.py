"""Confluence Cloud and Data Center over REST (v1; v2 for Cloud full reads): pages, kept current by what changed.

A sync starts with a cheap listing of every page the source selects (CQL through
`/rest/api/content/search`, no bodies: id, title, space, version, ancestors and read
restrictions, 200 a request). The listing is the authority on what exists and who may read it:

- a page indexed but not listed is gone (deleted, archived, moved out of the selected spaces,
  or newly hidden from Docent's account) — the sync's deletion guard still decides;
- a listed page is read when it is new, its version is newer than the one indexed, its scope
  changed (a restriction added or lifted, on it or an ancestor; a move to a space of another
  scope), or its last read FAILED.

Bodies come in bulk: pages modified since the last successful sync (CQL `lastmodified`, the
runner moves the time back for clock skew; CQL reads it in the account's time zone, so a page
the listing says changed that this search missed is fetched by id, 50 a request). A full sync
reads every body the same way on Data Center, and on Cloud over the v2 API when the source selects
by spaces (`connectors.confluence.v2`: v2 has no CQL, so incremental reads stay on v1).
Storage format goes through `connectors.confluence.storage`, so a
page reads the same as from an XML export, under the same document path (`pages/<id>`).

Access (fail closed): a page takes its space's scope (`access = { HR = "hr-private", "*" = … }`)
unless it or an ancestor has read restrictions. Then each restricted level must be readable by a
user or group the sources file's `restrictions` maps to one common scope, which the page takes;
otherwise it is SKIPPED with scope `RESTRICTED` and the reason (shown by `kb status`), and any
version indexed before is withdrawn. Restrictions Docent cannot see in full (an ancestor its
account cannot read, an answer without them, a list shorter than its `size`: see
`connectors.confluence.listing`) are treated the same way, as is an ancestor whose id is not a
page id. Links and ids the server gives are checked before use (`connectors.confluence.links`).

Attachments (PDF, .docx, .pptx) of the selected pages are documents of their own
(`pages/<page id>/attachments/<attachment id>`), under their page's scope, converted by
`connectors.attachments` and listed with one CQL search (`type = attachment`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import quote

from connectors.attachments import FileLimits, FileRefused, NoText, convert, wanted
from connectors.confluence.api import ApiSettings, ConfluenceApi, ConfluenceUnavailable, JsonObject, PageError
from connectors.confluence.common import Deadline, page_url
from connectors.confluence.config import ConfluenceRemote
from connectors.confluence.links import Site, attachment_id, page_id, space_key
from connectors.confluence import listing
from connectors.confluence.listing import Listed
from connectors.confluence.storage import storage_to_markdown
from connectors.confluence.v2 import pages_with_bodies
from connectors.changes import Changes, IndexedPage
from connectors.document import RESTRICTED, SourceDocument, Unreadable
from connectors.sizes import size_text
from connectors.space_access import WILDCARD

log = logging.getLogger(__name__)

SEARCH = "rest/api/content/search"
READ_RESTRICTIONS = "restrictions.read.restrictions.user,restrictions.read.restrictions.group"
LIST_EXPAND = f"space,version,ancestors,metadata.labels,{READ_RESTRICTIONS}"  # labels: v2 page lists lack them
PAGE_EXPAND = f"{LIST_EXPAND},body.storage,history"
LIST_LIMIT = 200
BODY_LIMIT = 50  # Cloud caps expanded bodies at 50 a request
ATTACHMENT_EXPAND = "container,version,extensions"
MAX_BODY_SECONDS = 30.0
_MENTION = re.compile(r'<ri:user\b[^>]*?ri:(userkey|account-id)="([^"]{1,128})"')


class ConfluenceRest:
    """A `ChangesConnector` over a Confluence site (see the module docstring)."""

    def __init__(self, remote: ConfluenceRemote, *, source: str, space_access: Mapping[str, str],
                 api: ConfluenceApi | None = None, settings: ApiSettings | None = None,
                 limits: FileLimits | None = None) -> None:
        self.remote = remote
        self.source = source
        self.default_scope = space_access.get(WILDCARD, "public")
        self.space_scopes = {k.casefold(): v for k, v in space_access.items() if k != WILDCARD}
        self._api, self._settings = api, settings
        self.limits = limits or FileLimits()
        self.base = remote.url
        self.site = Site(remote.url.rstrip("/"))
        self._extra: dict[str, Listed | None] = {}  # ancestors outside the selection, read by id
        self._users: dict[str, str] = {}  # mentioned user key / account id → display name (once per connector)

    @property
    def api(self) -> ConfluenceApi:
        """The client, made on first use (so a sources file can be loaded without the secrets)."""
        if self._api is None:
            settings = self._settings or ApiSettings(timeout=self.remote.timeout, retries=self.remote.retries)
            self._api = ConfluenceApi(self.remote, self.remote.credentials(), settings)
        return self._api

    # -- the Connector protocol -----------------------------------------------------------------

    def documents(self) -> Iterator[SourceDocument | Unreadable]:
        """Every selected page and attachment (a full read)."""
        return iter(self.changes(None, {}).documents)

    def paths(self) -> list[str]:
        """Not counted ahead: that would cost a listing of its own (progress is shown without a total)."""
        return []

    def changes(self, since: datetime | None, indexed: dict[str, IndexedPage]) -> Changes:
        """What changed since `since` (None: everything), judged against `indexed`."""
        self.api.begin_sync()
        listed = self._listing()
        scopes = {pid: self._scope(entry, listed) for pid, entry in listed.items()}
        stale = {pid for pid, entry in listed.items() if listing.stale(indexed.get(f"pages/{pid}"), entry, scopes[pid][0])}
        attachments = self._attachments(listed) if self.remote.attachments else {}
        fresh = {aid: att for aid, att in attachments.items()
                 if listing.stale(indexed.get(att.path), att.listed, scopes[att.page][0])}
        present = {f"pages/{pid}" for pid in listed} | {att.path for att in attachments.values()}
        gone = sorted(path for path in indexed if path not in present)
        log.info("%s: %d pages listed, %d to read, %d attachments to read, %d gone", self.source, len(listed),
                 len(stale), len(fresh), len(gone))
        return Changes(documents=self._read(since, listed, scopes, stale, fresh), gone=gone, listed=len(present))

    # -- listing and access ---------------------------------------------------------------------

    def _listing(self) -> dict[str, Listed]:
        listed: dict[str, Listed] = {}
        for raw in self.api.pages(SEARCH, {"cql": self.remote.filter_cql(), "expand": LIST_EXPAND,
                                           "limit": LIST_LIMIT}):
            entry = listing.listed(raw)
            if entry is not None:
                listed[entry.id] = entry
        return listed

    def _scope(self, page: Listed, listed: dict[str, Listed]) -> tuple[str, str | None]:
        """The page's scope, and why it is `RESTRICTED` (None: it is not)."""
        levels = []
        for pid in (*page.ancestors, page.id):
            if page_id(pid) is None:  # a hostile or broken answer: its restrictions cannot be looked up
                return RESTRICTED, (f"an ancestor's id {pid!r} is not a page id, so its read restrictions cannot be "
                                    f"read and the page is not indexed")
            entry = listed.get(pid) or self._outside(pid)
            if entry is None or entry.readers is None:
                whose = "ancestor page " + pid if pid != page.id else "the page"
                why = f" ({entry.unknown})" if entry is not None and entry.unknown else ""
                log.warning("%s: page %s is restricted: the read restrictions of %s are not known in full%s",
                            self.source, page.id, whose, why)
                return RESTRICTED, (f"the read restrictions of {whose} are not visible in full to Docent's account"
                                    f"{why}, so the page is not indexed")
            if entry.readers:
                levels.append(entry.readers)
        if not levels:
            return self.space_scopes.get(page.space.casefold(), self.default_scope), None
        common: set[str] | None = None
        for readers in levels:
            mapped = {self.remote.restrictions[p] for p in readers if p in self.remote.restrictions}
            common = mapped if common is None else common & mapped
        if common:
            return min(common), None
        shown = ", ".join(sorted(levels[-1])[:5]) + (" …" if len(levels[-1]) > 5 else "")
        where = "it" if page.readers else "an ancestor page"
        return RESTRICTED, (f"read restrictions on {where} ({shown}) map to no scope in the source's "
                            f"restrictions setting, so the page is not indexed")

    def _outside(self, pid: str) -> Listed | None:
        """An ancestor the selection does not hold (a cql filter): read by id, once per sync; an id
        that is not a page id is not asked for (None: its restrictions are unknown)."""
        if page_id(pid) is None:
            return None
        if pid not in self._extra:
            try:
                raw = self.api.get(f"rest/api/content/{quote(pid, safe='')}", {"expand": LIST_EXPAND}, page=pid)
                entry = listing.listed(raw)
                self._extra[pid] = entry if entry is not None and entry.id == pid else None
            except PageError:
                self._extra[pid] = None
        return self._extra[pid]

    # -- reading --------------------------------------------------------------------------------

    def _read(self, since: datetime | None, listed: dict[str, Listed], scopes: dict[str, tuple[str, str | None]],
              stale: set[str], fresh: dict[str, _Attachment]) -> Iterator[SourceDocument]:
        titles = {(e.space, e.title): pid for pid, e in listed.items()}
        left = set(stale)
        if left and since is None and self.remote.cloud and self.remote.spaces and not self.remote.cql:
            def title(aid: str) -> str:  # an ancestor's, for the heading path
                entry = listed.get(aid) or self._outside(aid)
                return entry.title if entry is not None else ""

            for raw in pages_with_bodies(self.api, self.remote.spaces, listed, title, self._user):
                pid = str(raw.get("id", ""))
                if pid in left:  # what v2 missed (a page created meanwhile) is read by id below
                    left.discard(pid)
                    yield self._document(raw, scopes[pid], titles)
        elif left:
            cql = self.remote.filter_cql()
            if since is not None:
                cql += f' and lastmodified >= "{since.astimezone(timezone.utc):%Y/%m/%d %H:%M}"'
            for raw in self.api.pages(SEARCH, {"cql": cql, "expand": PAGE_EXPAND, "limit": BODY_LIMIT}):
                pid = str(raw.get("id", ""))
                if pid in left:
                    left.discard(pid)
                    yield self._document(raw, scopes[pid], titles)
        ids = sorted(left, key=lambda p: (len(p), p))
        for n in range(0, len(ids), BODY_LIMIT):  # changed per the listing, missed by lastmodified
            batch = ids[n:n + BODY_LIMIT]
            cql = f"id in ({', '.join(batch)})"
            for raw in self.api.pages(SEARCH, {"cql": cql, "expand": PAGE_EXPAND, "limit": BODY_LIMIT}):
                pid = str(raw.get("id", ""))
                if pid in left:
                    left.discard(pid)
                    yield self._document(raw, scopes[pid], titles)
        for pid in sorted(left):  # listed a moment ago, gone now: fails alone, keeps its version
            yield SourceDocument(source=self.source, path=f"pages/{pid}", title=listed[pid].title,
                                 url=page_url(self.base, pid), access=scopes[pid][0], heading_ids=[],
                                 error="listed, but its body could not be read (deleted or moved meanwhile?)")
        for att in fresh.values():
            yield self._attachment(att, scopes[att.page], listed[att.page])

    def _document(self, raw: JsonObject, scope: tuple[str, str | None], titles: dict[tuple[str, str], str]) -> SourceDocument:
        """One page's JSON into a document; problems become its `error`."""
        pid = str(raw["id"])
        links = raw.get("_links") or {}
        url = self.site.citation(links.get("webui")) or page_url(self.base, pid)
        doc = SourceDocument(source=self.source, path=f"pages/{pid}", url=url, access=scope[0], heading_ids=[])
        try:
            space = raw.get("space") or {}
            version = raw.get("version") or {}
            # An ancestor without a page id is not a page Docent can name: left out of both lists, so titles
            # and ids stay aligned and no "None" is recorded (a malformed one has made the page RESTRICTED).
            ancestors = [a for a in raw.get("ancestors") or [] if isinstance(a, dict) and page_id(a.get("id"))]
            labels = ((raw.get("metadata") or {}).get("labels") or {}).get("results") or []
            doc.title = str(raw.get("title") or "").strip()
            doc.updated_at = listing.when(version.get("when"))
            doc.metadata = {
                "page_id": pid, "space": str(space.get("key") or ""), "space_name": str(space.get("name") or ""),
                "ancestors": [str(a.get("title") or "") for a in ancestors],
                "ancestor_ids": [str(a.get("id")) for a in ancestors],
                "author": str(((raw.get("history") or {}).get("createdBy") or {}).get("displayName") or ""),
                "last_modified_by": str((version.get("by") or {}).get("displayName") or ""),
                "version": version.get("number"), "tags": [str(label.get("name")) for label in labels if label.get("name")],
            }
            if scope[1]:
                doc.skipped = scope[1]
                return doc
            if not doc.title:
                raise ValueError("page has no title")
            storage = ((raw.get("body") or {}).get("storage") or {}).get("value")
            if not isinstance(storage, str):
                raise ValueError("the answer holds no storage-format body")

            def link(title: str, space_key: str | None) -> str | None:
                target = titles.get((space_key or doc.metadata["space"], title))
                return page_url(self.base, target) if target else None

            doc.text = storage_to_markdown(storage, self._names(storage), link, Deadline(MAX_BODY_SECONDS))
            if not doc.text.strip():
                doc.skipped = "the page has no text (only macros or attachments)"
        except Exception as exc:  # a bad page fails that page, not the sync
            doc.error = str(exc) or type(exc).__name__
        return doc

    def _user(self, account_id: str) -> str:
        """A user's display name by account id (v2 names authors only by id), once per connector."""
        if account_id and account_id not in self._users:
            try:
                self._users[account_id] = str(self.api.get("rest/api/user", {"accountId": account_id},
                                                           page=account_id).get("displayName") or "")
            except PageError:
                self._users[account_id] = ""
        return self._users.get(account_id, "")

    def _names(self, storage: str) -> dict[str, str]:
        """Display names of the users a body mentions (an export carries them; REST needs one
        request per user, made once); one that cannot be read stays "@unknown user"."""
        for attribute, key in _MENTION.findall(storage):
            if key in self._users:
                continue
            param = "accountId" if attribute == "account-id" else "key"
            try:
                user = self.api.get("rest/api/user", {param: key}, page=key)
                self._users[key] = str(user.get("displayName") or user.get("username") or "")
            except PageError:
                self._users[key] = ""
        return {key: name for key, name in self._users.items() if name}

    def _attachments(self, listed: dict[str, Listed]) -> dict[str, _Attachment]:
        """The convertible attachments of the listed pages, by attachment id."""
        spaces = sorted({e.space for e in listed.values() if space_key(e.space)})  # quoted into CQL below
        if not spaces:
            return {}
        cql = "type = attachment and space in (" + ", ".join(f'"{s}"' for s in spaces) + ")"
        found: dict[str, _Attachment] = {}
        for raw in self.api.pages(SEARCH, {"cql": cql, "expand": ATTACHMENT_EXPAND, "limit": LIST_LIMIT}):
            page = str((raw.get("container") or {}).get("id") or "")
            name = str(raw.get("title") or "")
            download = (raw.get("_links") or {}).get("download")
            aid = attachment_id(raw.get("id"))
            if aid is None:
                log.warning("%s: an attachment's id %r is not an attachment id: left out", self.source,
                            str(raw.get("id"))[:40])
                continue
            if page in listed and wanted(name) and download:
                size = (raw.get("extensions") or {}).get("fileSize")
                found[aid] = _Attachment(
                    id=aid, page=page, name=name, download=str(download), size=size if isinstance(size, int) else None,
                    listed=Listed(id=aid, title=name, space=listed[page].space,
                                  when=listing.when((raw.get("version") or {}).get("when")), ancestors=(), readers=frozenset()))
        return found

    def _attachment(self, att: _Attachment, scope: tuple[str, str | None], page: Listed) -> SourceDocument:
        url = self.site.citation(att.download) or page_url(self.base, page.id)
        doc = SourceDocument(source=self.source, path=att.path, title=f"{att.name} ({page.title})", url=url,
                             access=scope[0], updated_at=att.listed.when, heading_ids=[],
                             metadata={"space": page.space, "page_id": page.id, "attached_to": page.title,
                                       "attached_to_url": page_url(self.base, page.id), "ancestors": [page.title],
                                       "file": att.name})
        if scope[1]:
            doc.skipped = f"attached to a page that is not indexed: {scope[1]}"
            return doc
        try:
            if att.size is not None and att.size > self.limits.max_bytes:
                raise FileRefused(f"file is {size_text(att.size)}, over the {size_text(self.limits.max_bytes)} limit")
            converted = convert(att.name, self.api.download(att.download, self.limits.max_bytes, page=page.id),
                                self.limits)
            doc.text, doc.heading_ids = converted.text, converted.heading_ids
        except NoText as exc:
            doc.skipped = str(exc)
        except (FileRefused, PageError) as exc:
            doc.error = str(exc)
        return doc


@dataclass(frozen=True)
class _Attachment:
    id: str
    page: str
    name: str
    download: str  # as the server gave it: `ConfluenceApi.download` checks it stays on the site
    size: int | None
    listed: Listed

    @property
    def path(self) -> str:
        return f"pages/{self.page}/attachments/{self.id}"


__all__ = ["RESTRICTED", "ConfluenceRest", "ConfluenceUnavailable"]
