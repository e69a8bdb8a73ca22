"""Talking to a Confluence server: the few v1/v2 REST GETs the connector makes, over `requests`,
each bounded, and credentials that never leave the configured site.

Not atlassian-python-api: its `request` reads every body whole (no streaming, so no cap while
reading), follows redirects, and retries 429s itself (`retry_with_header`, up to 1,800 s) on top
of any retry of the session's — with `Retry-After: 3600` one request waited 5×120 s, then
1,800 s, then 5×120 s again (issue 45). What it gave us, an auth header, is one line here.

Each request (`ConfluenceApi._fetch`):

- goes only to the configured site: paths Docent builds are under its `url`, server-given links
  (`_links.next`, `_links.download`, a redirect's `Location`) pass `connectors.confluence.links`
  first, and a link elsewhere is refused with the reason — the credentials are attached per
  request, after that check, never to the session;
- has one overall deadline, `timeout` seconds for connecting, waiting and reading the whole
  answer (`connectors.confluence.http_request.Attempt`), and a byte cap read streaming: `max_json_bytes`
  for JSON, the file cap for a download (the listing's `fileSize` is not trusted);
- is retried by this module only (the session has no retries of its own): 429 waits
  `Retry-After`, at most `max_retry_after` seconds; 5xx and dropped connections back off
  exponentially; `retries` retries, so at most `retries + 1` requests. A request that ran out of
  time is not retried (the server is answering, too slowly: waiting again would multiply it);
- counts against the sync's budget (`begin_sync`): requests, bytes and time, so no server can
  hold a sync (and its source's sync lock) for ever; a listing follows at most
  `max_listing_pages` `_links.next` and holds at most `max_results` results, and a `next` that
  points back to a page already read is a loop.

Errors are sorted into the two a sync must tell apart: `ConfluenceUnavailable` (cannot be reached,
still failing after the retries, 401/403, a listing that cannot be trusted — the sync refuses and
deletes nothing) and `PageError` (one page's request failed: that page FAILS alone).
Secrets are never put in a message: errors name the URL path only.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import requests
from requests.auth import AuthBase, HTTPBasicAuth

from connectors.confluence.config import ConfluenceRemote, Credentials
from connectors.confluence.http_request import Attempt, DeadlineExceeded, TooLarge, deadline_session, read_capped
from connectors.confluence.links import OffSite, Site
from connectors.sizes import MiB, size_text

log = logging.getLogger(__name__)

RETRIED_STATUSES = (429, 500, 502, 503, 504)
REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5  # on the site (e.g. a trailing-slash redirect); off the site: refused
MAX_BACKOFF = 60.0

# A JSON object as the server sent it: its shape is not trusted, each field is checked where it is read.
JsonObject = dict[str, Any]
Params = dict[str, str | int]  # a request's query parameters


class ConfluenceUnavailable(ConnectionError):
    """The server cannot be read now (unreachable, refusing our credentials, failing): nothing may
    be concluded about its pages, so nothing is deleted."""


class PageError(RuntimeError):
    """One request about one page failed (404 after it was listed, a 500 the retries did not cure)."""


@dataclass
class ApiSettings:
    """How patient to be with a server, and how much one sync may take of it (tests shorten them)."""

    timeout: float = 30.0  # seconds per request, all of it: connecting, waiting, reading the answer
    retries: int = 5
    backoff: float = 0.5  # seconds before the first retry of a 5xx or dropped connection, doubling
    max_retry_after: float = 120.0  # a longer Retry-After is waited this long, then retried
    max_json_bytes: int = 64 * MiB  # one JSON answer (v2 lists 250 bodies a request)
    max_listing_pages: int = 20_000  # `_links.next` followed per listing (4 M pages at 200 a request)
    max_results: int = 1_000_000  # results per listing (a source's pages, or its attachments): memory stays bounded
    max_requests: int = 200_000  # per sync
    max_bytes: int = 50 * 1024 * MiB  # per sync, JSON and downloads
    max_seconds: float = 12 * 3600.0  # per sync


@dataclass
class _Budget:
    """What a sync has spent (see `ApiSettings`)."""

    settings: ApiSettings
    started: float = field(default_factory=time.monotonic)
    requests: int = 0
    bytes: int = 0

    def request(self) -> None:
        self.requests += 1
        if self.requests > self.settings.max_requests:
            raise ConfluenceUnavailable(f"this sync has made {self.settings.max_requests:,} requests, its cap: "
                                        f"stopped (a server that never stops answering?); nothing was deleted")
        if time.monotonic() - self.started > self.settings.max_seconds:
            raise ConfluenceUnavailable(f"this sync has run {self.settings.max_seconds:g} s, its cap: stopped; "
                                        f"nothing was deleted")

    def spend(self, n: int) -> None:
        self.bytes += n
        if self.bytes > self.settings.max_bytes:
            raise ConfluenceUnavailable(f"this sync has read {size_text(self.settings.max_bytes)}, its cap: "
                                        f"stopped; nothing was deleted")


class _Bearer(AuthBase):
    """Data Center's personal access token. An auth object, not a session header: requests would
    otherwise put `.netrc` credentials in its place."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.token}"
        return request


class ConfluenceApi:
    """The site's GETs (see the module docstring)."""

    def __init__(self, remote: ConfluenceRemote, credentials: Credentials, settings: ApiSettings | None = None) -> None:
        self.settings = settings or ApiSettings()
        self.url = remote.url.rstrip("/")
        self.site = Site(self.url)
        self.requests = 0  # requests made, retries included: the benchmark's measure
        self._auth: AuthBase = (HTTPBasicAuth(credentials.email, credentials.token) if credentials.email is not None
                                else _Bearer(credentials.token))
        self._http = deadline_session()
        self._budget = _Budget(self.settings)

    def begin_sync(self) -> None:
        """Start a new sync's budget."""
        self._budget = _Budget(self.settings)

    def get(self, path: str, params: Params | None = None, *, page: str | None = None) -> JsonObject:
        """One GET (a path Docent built, relative to the site, or a server-given absolute URL
        already resolved by `link`), as JSON. `page` names the page it is about: its failures are
        `PageError`s; the others' are `ConfluenceUnavailable`."""
        body = self._fetch(path, params, page=page, max_bytes=self.settings.max_json_bytes, what="answer")
        try:
            data = json.loads(body)
        except ValueError:
            raise self._error(page, f"{self._where(path)} answered with something that is not JSON") from None
        if not isinstance(data, dict):
            raise self._error(page, f"{self._where(path)} answered with JSON that is not an object")
        return data

    def download(self, link: str, max_bytes: int, *, page: str) -> bytes:
        """An attachment's bytes from its server-given `_links.download`, at most `max_bytes` (more,
        or a link off the site, is a `PageError`)."""
        try:
            url = self.site.resolve(link)
        except OffSite as exc:
            raise PageError(f"attachment download link refused: {exc}") from None
        return self._fetch(url, None, page=page, max_bytes=max_bytes, what="file")

    def link(self, link: object) -> str:
        """A server-given link of a listing, on the site, or `ConfluenceUnavailable` saying why not."""
        try:
            return self.site.resolve(link)
        except OffSite as exc:
            raise ConfluenceUnavailable(f"refused to follow a link the server gave ({exc}); the credentials "
                                        f"only go to the configured url; nothing was deleted") from None

    def pages(self, path: str, params: Params) -> Iterator[JsonObject]:
        """Every result of a listing, following `_links.next` (v1 `start/limit` on Data Center,
        cursors on Cloud — the server writes either into `next`, so following it is both), at
        most `max_listing_pages` of them with at most `max_results` results, never the same page twice."""
        seen = {_page_key(f"{self.url}/{path}", params)}
        data = self.get(path, params)
        count = 0
        while True:
            results = data.get("results")
            if not isinstance(results, list):
                raise ConfluenceUnavailable(f"{self._where(path)}: the answer has no results list")
            count += len(results)
            if count > self.settings.max_results:
                raise ConfluenceUnavailable(f"{self._where(path)}: more than {self.settings.max_results:,} results; "
                                            f"stopped, nothing was deleted")
            yield from (r for r in results if isinstance(r, dict))
            links = data.get("_links")
            following = links.get("next") if isinstance(links, dict) else None
            if not following or not results:
                return
            url = self.link(following)
            key = _page_key(url, None)
            if key in seen:
                raise ConfluenceUnavailable(f"{self._where(path)}: _links.next points back to a page of this listing "
                                            f"already read, after {len(seen)} (a loop); stopped, nothing was deleted")
            if len(seen) >= self.settings.max_listing_pages:
                raise ConfluenceUnavailable(f"{self._where(path)}: more than {self.settings.max_listing_pages:,} "
                                            f"pages of results; stopped, nothing was deleted")
            seen.add(key)
            data = self.get(url, None)

    # -- one request ----------------------------------------------------------------------------

    def _fetch(self, path: str, params: Params | None, *, page: str | None, max_bytes: int, what: str) -> bytes:
        """One GET's body, with the retries, deadline, caps and redirect rule of the module docstring."""
        url = path if urlsplit(path).scheme else f"{self.url}/{path.lstrip('/')}"
        if not self.site.owns(url):  # every caller resolves first; this keeps the rule in one place regardless
            raise self._error(page, f"refused to send the credentials to {self._where(url)}: not the configured site")
        retried = hops = 0
        while True:
            self._budget.request()
            self.requests += 1
            attempt, wait, body = Attempt(self.settings.timeout), None, None
            try:
                with attempt, self._http.get(url, params=params, auth=self._auth, stream=True, allow_redirects=False,
                                             timeout=(self.settings.timeout, self.settings.timeout)) as response:
                    status = response.status_code
                    if status in REDIRECTS:
                        hops += 1
                        url, params = self._redirect(url, response, hops, page), None
                    elif status in RETRIED_STATUSES and retried < self.settings.retries:
                        wait = self._wait(response, retried)
                    else:
                        self._check(status, url, page)
                        body = read_capped(response, max_bytes, attempt)
            except DeadlineExceeded:
                raise self._late(page, url) from None
            except TooLarge as exc:
                said = f" (it says {size_text(exc.declared)})" if exc.declared is not None else ""
                raise self._error(page, f"{self._where(url)}: the {what} is over the {size_text(max_bytes)} "
                                        f"limit{said}; not read") from None
            except requests.RequestException as exc:  # unreachable, reset, cut
                if attempt.expired:
                    raise self._late(page, url) from None
                if retried >= self.settings.retries:
                    raise ConfluenceUnavailable(f"cannot reach {self.url}: {type(exc).__name__}") from None
                wait = min(MAX_BACKOFF, self.settings.backoff * 2 ** retried)
            if body is not None:
                self._budget.spend(len(body))
                return body
            if wait is not None:
                retried += 1
                time.sleep(wait)

    def _redirect(self, url: str, response: requests.Response, hops: int, page: str | None) -> str:
        """Where a redirect may be followed: on the site only (with the credentials); elsewhere it
        is refused — neither the credentials nor an answer from another site are used."""
        location = response.headers.get("Location", "")
        try:
            target = self.site.resolve(urljoin(url, location) if location else "")
        except OffSite as exc:
            raise self._error(page, f"{self._where(url)} redirected elsewhere, refused: {exc}") from None
        if hops > MAX_REDIRECTS:
            raise self._error(page, f"{self._where(url)}: more than {MAX_REDIRECTS} redirects")
        return target

    def _wait(self, response: requests.Response, retried: int) -> float:
        """Seconds before retrying a 429/5xx: its Retry-After (seconds or a date), at most
        `max_retry_after`; without one, exponential backoff."""
        header = response.headers.get("Retry-After", "").strip()
        seconds: float | None = None
        if header:
            try:
                seconds = float(header)
            except ValueError:
                try:
                    seconds = parsedate_to_datetime(header).timestamp() - time.time()
                except (TypeError, ValueError, IndexError):
                    seconds = None
        if seconds is None or seconds != seconds:  # absent, unreadable or NaN
            seconds = min(MAX_BACKOFF, self.settings.backoff * 2 ** retried)
        return max(0.0, min(seconds, self.settings.max_retry_after))

    def _check(self, status: int, url: str, page: str | None) -> None:
        if status in (401, 403):
            raise ConfluenceUnavailable(
                f"{self.url} refused the credentials (HTTP {status}) at {self._where(url)}: check the token "
                f"and that its account may read these spaces; nothing was changed")
        if status >= 300:
            raise self._error(page, f"{self._where(url)} answered HTTP {status}"
                                    + (" after retries" if status in RETRIED_STATUSES else ""))

    def _late(self, page: str | None, url: str) -> Exception:
        return self._error(page, f"{self._where(url)} did not answer in full within {self.settings.timeout:g} s "
                                 f"(timeout, seconds per request)")

    def _error(self, page: str | None, message: str) -> Exception:
        return PageError(message) if page is not None else ConfluenceUnavailable(message)

    def _where(self, path: str) -> str:
        """A path to show in a message: no query string (CQL can be long; nothing secret is in it either way)."""
        return urlsplit(path).path if urlsplit(path).scheme else "/" + path.lstrip("/").split("?")[0]


def _page_key(url: str, params: Params | None) -> tuple[str, str]:
    """A listing page's identity, for loop detection: its path and its sorted query."""
    parts = urlsplit(url)
    query = sorted(parse_qsl(parts.query, keep_blank_values=True)) + sorted((k, str(v)) for k, v in (params or {}).items())
    return parts.path, urlencode(sorted(query))
