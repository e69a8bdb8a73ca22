"""A local fake Confluence (Cloud or Data Center) speaking the real REST v1 JSON, on 127.0.0.1.

Its pages start as the real XML export fixture's (tests/fixtures/confluence/xml-export: titles,
spaces, storage bodies, ancestors, versions and dates read by Docent's own export reader), and
tests edit, delete, move, restrict and attach files to them. Answers have the shapes of
Atlassian's documentation and of ../shared/corpora/confluence/rest-api-v1-xsoar: `results`,
`start`/`limit`/`size`, `_links.base`/`context`/`next`, `space`, `version.when`/`number`/`by`,
`history.createdBy`, `ancestors`, `restrictions.read.restrictions.{user,group}.results`,
`body.storage.value`, `metadata.labels`, and attachments with `container`, `extensions` and
`_links.download`. Only what is expanded is included (the rest listed under `_expandable`).

Paging: Cloud mode writes a `cursor` into `_links.next` (and ignores `start` when a cursor is
given); Data Center mode writes `start`. Both cap `limit` (200, bodies 50) like the real thing.

v2 (Cloud mode only; Data Center answers 404): `/api/v2/spaces?keys=` and
`/api/v2/spaces/{id}/pages` with v2 page objects (`spaceId`, `parentId`, `authorId`,
`version.createdAt`, `body.storage` when `body-format=storage`, `_links.webui`), `{results,
_links: {next, base}}` and a `Link: <…>; rel="next"` header; cursors are opaque (a forged one is a
400); `v2_body_cap` pages a request (250, v2's maximum; tests set 2 to cross cursor boundaries).

Faults on demand: `queue(status, retry_after=…)` answers the next requests with those statuses;
`down_after(n)` drops every connection after n more requests (an outage mid-sync); `credentials`
are checked (Basic email:token on Cloud, Bearer token on Data Center) and `forbidden` answers 403.

A hostile server, behind explicit knobs (off by default): `tamper(path?query, payload)` rewrites
every JSON answer before it is sent (ids, `_links.next`/`base`, `webui`, `download`, restriction
lists); `redirect_to(url)` answers the next request with a 302 to `url` ("{path}" in it: the
request's own); `drip` sends JSON answers one byte every `drip` seconds (`drip_headers`: from the
status line on); `gzip` compresses JSON answers; `attach(…, endless=n)` serves a download of n
bytes without a Content-Length (its listing's `fileSize` is the small `data`'s), counting what it
wrote in `bytes_sent`; `authorizations` records each request's Authorization header.

CQL understood: `type = page|attachment`, `space in (…)`/`space = X`, `id in (…)`,
`lastmodified >= "yyyy/MM/dd HH:mm"` (UTC here), joined by `and`, optionally in parentheses.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode, urlparse

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "confluence" / "xml-export"
EMAIL, TOKEN = "docent@acme.example", "s3cret-api-token"


@dataclass
class Page:
    id: str
    title: str
    space: str
    body: str
    when: datetime
    version: int = 1
    parent: str | None = None
    users: list[str] = field(default_factory=list)  # read restriction: account ids
    groups: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    author: str = "jdoe"


@dataclass
class Attachment:
    id: str
    page: str
    title: str
    data: bytes
    media_type: str
    when: datetime
    version: int = 1
    endless: int = 0  # > 0: the download is this many bytes (not `data`), sent without a Content-Length


class FakeConfluence:
    def __init__(self, *, cloud: bool = True, from_fixture: bool = True) -> None:
        self.cloud = cloud
        self.context = "/wiki" if cloud else ""
        self.spaces: dict[str, str] = {}
        self.users: dict[str, str] = {}  # user key (Data Center) / account id (Cloud) → display name
        self.pages: dict[str, Page] = {}
        self.attachments: dict[str, Attachment] = {}
        self.requests: list[str] = []
        self.faults: list[tuple[int, str | None]] = []
        self.drop_after: int | None = None
        self.forbidden = False
        self.v2_body_cap = 250  # v2's documented maximum page size; tests lower it to cross cursors
        self.tamper: Callable[[str, dict], dict] | None = None
        self.redirects: list[str] = []
        self.drip: float | None = None
        self.drip_headers = False
        self.gzip = False
        self.bytes_sent = 0
        self.authorizations: list[str | None] = []
        self.lock = threading.Lock()
        self.clock = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
        if from_fixture:
            self._load_fixture()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- setup and edits, as a wiki's users would make them ---------------------------------------

    def _load_fixture(self) -> None:
        from connectors.confluence.xml_export import ConfluenceXmlExport, _timestamp

        export, _ = ConfluenceXmlExport(FIXTURE)._load()
        self.users = dict(export.users)
        by_id = {sid: space for sid, space in export.spaces.items()}
        for row in export.current_pages():
            space = by_id.get(row.get("space", ""), {})
            if not space.get("key"):
                continue
            self.spaces[space["key"]] = space.get("name", space["key"])
            try:
                when = _timestamp(row.get("lastModificationDate", ""), export.tz) or self.clock
            except ValueError:  # the fixture's page with a broken date: a server always has one
                when = _timestamp(row.get("creationDate", ""), export.tz) or self.clock
            self.pages[row["id"]] = Page(id=row["id"], title=row.get("title", ""), space=space["key"],
                                         body=export.bodies.get(row["id"], ("2", ""))[1],
                                         when=when.astimezone(timezone.utc), version=int(row.get("version") or 1),
                                         parent=row.get("parent"), author=export.users.get(row.get("creator", ""), ""))

    def tick(self) -> datetime:
        self.clock += timedelta(minutes=1)
        return self.clock

    def edit(self, pid: str, body: str | None = None, title: str | None = None) -> None:
        page = self.pages[pid]
        page.body = body if body is not None else page.body
        page.title = title if title is not None else page.title
        page.version += 1
        page.when = self.tick()

    def add(self, pid: str, title: str, space: str, body: str, parent: str | None = None) -> Page:
        self.pages[pid] = Page(id=pid, title=title, space=space, body=body, when=self.tick(), parent=parent)
        return self.pages[pid]

    def move(self, pid: str, space: str, parent: str | None = None) -> None:
        """Moves keep the version (as Cloud does); the page and its descendants change space."""
        for page in self.pages.values():
            if page.id == pid or pid in self.ancestors(page):
                page.space = space
        self.pages[pid].parent = parent

    def attach(self, aid: str, pid: str, title: str, data: bytes, media_type: str, endless: int = 0) -> None:
        old = self.attachments.get(aid)
        self.attachments[aid] = Attachment(id=aid, page=pid, title=title, data=data, media_type=media_type,
                                           when=self.tick(), version=old.version + 1 if old else 1, endless=endless)

    def ancestors(self, page: Page) -> list[str]:
        chain, parent = [], page.parent
        while parent and parent in self.pages and parent not in chain:
            chain.insert(0, parent)
            parent = self.pages[parent].parent
        return chain

    def queue(self, *statuses: int, retry_after: str | None = None) -> None:
        self.faults.extend((status, retry_after) for status in statuses)

    def down_after(self, n: int) -> None:
        self.drop_after = len(self.requests) + n

    def redirect_to(self, url: str) -> None:
        self.redirects.append(url)

    # -- serving --------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.context}"

    def __enter__(self) -> FakeConfluence:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def authorised(self, header: str | None) -> bool:
        if self.cloud:
            return header == "Basic " + base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
        return header == f"Bearer {TOKEN}"

    def search(self, query: dict[str, str]) -> dict:
        kind, matches = _cql(query.get("cql", ""))
        expand = set(filter(None, query.get("expand", "").split(",")))
        cap = 50 if any(e.startswith("body") for e in expand) else 200
        limit = min(int(query.get("limit", 25)), cap)
        start = int(query["cursor"]) if self.cloud and "cursor" in query else int(query.get("start", 0))
        if kind == "attachment":  # matched first, and only the page of results asked for is built
            found = [a for a in sorted(self.attachments.values(), key=lambda a: a.id)
                     if a.page in self.pages and matches(self.pages[a.page], a.when, a.id)]
            chunk = [self._attachment(a) for a in found[start:start + limit]]
        else:
            pages = [p for p in sorted(self.pages.values(), key=lambda p: int(p.id)) if matches(p, p.when, p.id)]
            chunk = [self.content(p, expand) for p in pages[start:start + limit]]
        items = found if kind == "attachment" else pages
        links = {"base": self.url, "context": self.context,
                 "self": f"{self.url}/rest/api/content/search?{urlencode(query)}"}
        if start + limit < len(items):
            rest = {k: v for k, v in query.items() if k not in ("start", "cursor")}
            rest |= {"next": "true", "cursor": str(start + limit)} if self.cloud else {"start": str(start + limit)}
            links["next"] = f"/rest/api/content/search?{urlencode(rest)}"
        return {"results": chunk, "start": start, "limit": limit, "size": len(chunk), "_links": links}

    def content(self, page: Page, expand: set[str]) -> dict:
        webui = f"/spaces/{page.space}/pages/{page.id}/{quote(page.title.replace(' ', '+'))}"
        out: dict = {"id": page.id, "type": "page", "status": "current", "title": page.title,
                     "_links": {"self": f"{self.url}/rest/api/content/{page.id}", "webui": webui,
                                "tinyui": f"/x/{page.id}"},
                     "_expandable": {}}
        person = {"type": "known", "accountId": f"acc-{page.author}", "displayName": page.author.title(),
                  "publicName": page.author}
        if "space" in expand:
            out["space"] = {"id": abs(hash(page.space)) % 10**6, "key": page.space, "name": self.spaces[page.space],
                            "type": "global", "status": "current", "_links": {"webui": f"/spaces/{page.space}"}}
        if "version" in expand:
            out["version"] = {"by": person, "when": page.when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                              "number": page.version, "minorEdit": False, "message": ""}
        if "history" in expand:
            out["history"] = {"latest": True, "createdBy": person, "createdDate": "2022-10-01T10:00:00.000Z"}
        if "ancestors" in expand:
            out["ancestors"] = [{"id": a, "type": "page", "status": "current", "title": self.pages[a].title,
                                 "_links": {"webui": f"/spaces/{page.space}/pages/{a}"}} for a in self.ancestors(page)]
        if any(e.startswith("restrictions.read") for e in expand):
            users = [{"type": "known", "accountId": u, "displayName": u} for u in page.users]
            groups = [{"type": "group", "name": g, "id": f"gid-{g}"} for g in page.groups]
            out["restrictions"] = {"read": {"operation": "read", "restrictions": {
                "user": {"results": users, "start": 0, "limit": 200, "size": len(users)},
                "group": {"results": groups, "start": 0, "limit": 200, "size": len(groups)}}}}
        if "body.storage" in expand:
            out["body"] = {"storage": {"value": page.body, "representation": "storage"}}
        if "metadata.labels" in expand:
            out["metadata"] = {"labels": {"results": [{"prefix": "global", "name": n, "id": n} for n in page.labels],
                                          "start": 0, "limit": 200, "size": len(page.labels)}}
        return out

    # -- v2 (Cloud only): space ids, cursor-paged page lists with storage bodies -------------------

    def space_id(self, key: str) -> str:
        return str(1000 + sorted(self.spaces).index(key))

    def v2(self, path: str, query: dict[str, str]) -> tuple[dict, str | None]:
        """A v2 answer and its next link. Cursors are opaque strings (here base64 of an offset);
        one the server did not write is a 400, as on Cloud."""
        if not self.cloud:
            raise LookupError("Data Center has no v2 API")
        if path == "/api/v2/spaces":
            keys = set(query.get("keys", "").split(","))
            found = [{"id": self.space_id(k), "key": k, "name": n, "type": "global", "status": "current",
                      "_links": {"webui": f"/spaces/{k}"}} for k, n in sorted(self.spaces.items()) if k in keys]
            return {"results": found, "_links": {"base": self.url}}, None
        m = re.fullmatch(r"/api/v2/spaces/(\d+)/pages", path)
        if m is None:
            raise LookupError(path)
        key = next((k for k in self.spaces if self.space_id(k) == m.group(1)), None)
        if key is None:
            raise LookupError(path)
        try:
            start = int(base64.urlsafe_b64decode(query["cursor"]).decode()) if "cursor" in query else 0
        except (ValueError, UnicodeDecodeError):
            raise ValueError("Invalid cursor") from None
        limit = min(int(query.get("limit", 25)), 250 if "body-format" not in query else self.v2_body_cap)
        pages = [p for p in sorted(self.pages.values(), key=lambda p: int(p.id)) if p.space == key]
        out = []
        for page in pages[start:start + limit]:
            item = {"id": page.id, "status": "current", "title": page.title, "spaceId": m.group(1),
                    "parentId": page.parent, "parentType": "page" if page.parent else None,
                    "authorId": f"acc-{page.author}", "createdAt": "2022-10-01T10:00:00.000Z",
                    "version": {"number": page.version, "message": "", "minorEdit": False,
                                "authorId": f"acc-{page.author}",
                                "createdAt": page.when.isoformat(timespec="milliseconds").replace("+00:00", "Z")},
                    "_links": {"webui": f"/spaces/{page.space}/pages/{page.id}/{quote(page.title.replace(' ', '+'))}",
                               "editui": f"/pages/resumedraft.action?draftId={page.id}", "tinyui": f"/x/{page.id}"}}
            if query.get("body-format") == "storage":
                item["body"] = {"storage": {"value": page.body, "representation": "storage"}}
            out.append(item)
        links = {"base": self.url}
        link = None
        if start + limit < len(pages):
            rest = {k: v for k, v in query.items() if k != "cursor"}
            rest["cursor"] = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
            link = f"{self.context}{path}?{urlencode(rest)}"
            links["next"] = link
        return {"results": out, "_links": links}, link

    def _attachment(self, att: Attachment) -> dict:
        page = self.pages[att.page]
        return {"id": att.id, "type": "attachment", "status": "current", "title": att.title,
                "container": {"id": page.id, "type": "page", "title": page.title},
                "version": {"when": att.when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                            "number": att.version},
                "extensions": {"mediaType": att.media_type, "fileSize": len(att.data)},
                "_links": {"download": f"/download/attachments/{page.id}/{quote(att.title)}?version={att.version}&api=v2",
                           "webui": f"/pages/viewpageattachments.action?pageId={page.id}"}}


def _cql(cql: str):
    """(type, predicate(page, when, id)) for the subset of CQL the connector sends."""
    kind, tests = "page", []
    for clause in re.split(r"\s+and\s+", cql.strip()):
        clause = clause.strip()
        while clause.startswith("(") and clause.endswith(")"):
            clause = clause[1:-1].strip()
        if m := re.fullmatch(r"type\s*=\s*(\w+)", clause):
            kind = m.group(1)
        elif m := re.fullmatch(r"space\s+in\s*\((.*)\)", clause):
            keys = {k.strip().strip('"') for k in m.group(1).split(",")}
            tests.append(lambda p, w, i, keys=keys: p.space in keys)
        elif m := re.fullmatch(r'space\s*=\s*"?([\w~-]+)"?', clause):
            key = m.group(1)
            tests.append(lambda p, w, i, key=key: p.space == key)
        elif m := re.fullmatch(r"id\s+in\s*\((.*)\)", clause):
            ids = {k.strip().strip('"') for k in m.group(1).split(",")}
            tests.append(lambda p, w, i, ids=ids: i in ids)
        elif m := re.fullmatch(r'lastmodified\s*>=\s*"(\d{4}/\d\d/\d\d \d\d:\d\d)"', clause):
            since = datetime.strptime(m.group(1), "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)
            tests.append(lambda p, w, i, since=since: w >= since)
        else:
            raise ValueError(f"CQL clause not understood: {clause!r}")
    return kind, lambda p, w, i: all(t(p, w, i) for t in tests)


def _handler(fake: FakeConfluence):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            with fake.lock:
                fake.requests.append(self.path)
                fake.authorizations.append(self.headers.get("Authorization"))
                dropped = fake.drop_after is not None and len(fake.requests) > fake.drop_after
                fault = fake.faults.pop(0) if fake.faults and not dropped else None
                redirect = fake.redirects.pop(0) if fake.redirects and not dropped and fault is None else None
            if dropped:  # an outage: the connection closes without an answer
                self.close_connection = True
                self.connection.close()
                return
            if redirect is not None:
                return self._send(302, {"message": "moved"}, {"Location": redirect.format(path=self.path)})
            if fault is not None:
                status, retry_after = fault
                return self._send(status, {"statusCode": status, "message": "simulated"},
                                  {"Retry-After": retry_after} if retry_after else {})
            if not fake.authorised(self.headers.get("Authorization")):
                return self._send(401, {"statusCode": 401, "message": "Unauthorized"})
            if fake.forbidden:
                return self._send(403, {"statusCode": 403, "message": "Forbidden"})
            url = urlparse(self.path)
            path = url.path[len(fake.context):] if url.path.startswith(fake.context) else url.path
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            try:
                if path == "/rest/api/content/search":
                    return self._send(200, fake.search(query))
                if path.startswith("/api/v2/"):
                    payload, link = fake.v2(path, query)
                    return self._send(200, payload, {"Link": f'<{link}>; rel="next"'} if link else {})
                if path == "/rest/api/user":
                    key = query.get("accountId") or query.get("key", "")  # Cloud: account ids; both: user keys
                    if key.startswith("acc-"):  # the authors' account ids the content answers carry
                        return self._send(200, {"type": "known", "accountId": key, "displayName": key[4:].title()})
                    if key not in fake.users:
                        return self._send(404, {"statusCode": 404, "message": "No user"})
                    return self._send(200, {"type": "known", "accountId" if fake.cloud else "userKey": key,
                                            "displayName": fake.users[key]})
                if m := re.fullmatch(r"/rest/api/content/(\d+)", path):
                    page = fake.pages.get(m.group(1))
                    if page is None:
                        return self._send(404, {"statusCode": 404, "message": "No content found"})
                    return self._send(200, fake.content(page, set(query.get("expand", "").split(","))))
                if m := re.fullmatch(r"/download/attachments/(\d+)/(.+)", path):
                    for att in fake.attachments.values():
                        if att.page == m.group(1) and quote(att.title) == m.group(2):
                            if att.endless:
                                return self._send_endless(att.endless, att.media_type)
                            return self._send_bytes(att.data, att.media_type)
                    return self._send(404, {"statusCode": 404, "message": "No attachment"})
            except LookupError:
                return self._send(404, {"statusCode": 404, "message": "not found"})
            except ValueError as exc:
                return self._send(400, {"statusCode": 400, "message": str(exc)})
            self._send(404, {"statusCode": 404, "message": "not found"})

        def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
            if fake.tamper is not None:
                payload = fake.tamper(self.path, payload)
            data = json.dumps(payload).encode()
            if fake.drip is not None:
                return self._send_drip(data, status)
            if fake.gzip:  # what a proxy in front of the site may do; a small body that inflates
                data, headers = gzip.compress(data), (headers or {}) | {"Content-Encoding": "gzip"}
            self._send_bytes(data, "application/json", status, headers)

        def _send_drip(self, data: bytes, status: int) -> None:
            """A slow server: one byte every `drip` seconds, of the body (the status line and headers
            at once) or, with `drip_headers`, of the whole answer from its status line on."""
            head = (f"HTTP/1.0 {status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n\r\n").encode()
            if fake.drip_headers:
                data = head + data
            else:
                self.wfile.write(head)
            try:
                for n in range(len(data)):
                    self.wfile.write(data[n:n + 1])
                    self.wfile.flush()
                    time.sleep(fake.drip or 0)
            except OSError:  # the client gave up
                self.close_connection = True

        def _send_endless(self, size: int, media_type: str) -> None:
            """`size` bytes, no Content-Length (the end is the connection's close), counted as written."""
            self.send_response(200)
            self.send_header("Content-Type", media_type)
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b"\0" * 65536
            try:
                while fake.bytes_sent < size:
                    self.wfile.write(chunk)
                    fake.bytes_sent += len(chunk)
            except OSError:  # the client stopped reading
                pass
            self.close_connection = True

        def _send_bytes(self, data: bytes, media_type: str, status: int = 200, headers: dict | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", media_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler
