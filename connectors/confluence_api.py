"""Talking to a Confluence server: atlassian-python-api on a requests session of our own.

The session carries what a real server needs and the library leaves to its caller:

- a urllib3 `Retry` for 429 (waiting what `Retry-After` says, capped at `MAX_RETRY_AFTER`
  seconds so one header cannot park a sync for an hour) and for 5xx and dropped connections
  (exponential backoff), GETs only;
- a timeout on every request (the library's, set from `timeout`).

Errors are sorted into the two a sync must tell apart: `ConfluenceUnavailable` (cannot be reached,
still failing after the retries, 401/403 — whatever says "the server did not answer", so the sync
refuses and deletes nothing) and `PageError` (one page's request failed: that page FAILS alone).
Secrets are passed to the library and never put in a message: errors name the URL path only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlparse

import requests
from requests.adapters import HTTPAdapter
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from connectors.confluence_config import ConfluenceRemote, Credentials

log = logging.getLogger(__name__)

MAX_RETRY_AFTER = 120.0  # seconds; a longer Retry-After is waited this long, then retried
RETRIED_STATUSES = (429, 500, 502, 503, 504)

# A JSON object as the server sent it: its shape is not trusted, each field is checked where it is read.
JsonObject = dict[str, Any]
Params = dict[str, str | int]  # a request's query parameters


class ConfluenceUnavailable(ConnectionError):
    """The server cannot be read now (unreachable, refusing our credentials, failing): nothing may
    be concluded about its pages, so nothing is deleted."""


class PageError(RuntimeError):
    """One request about one page failed (404 after it was listed, a 500 the retries did not cure)."""


class _CappedRetry(Retry):
    """urllib3's Retry, with `Retry-After` capped (see the module docstring)."""

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        seconds = super().get_retry_after(response)
        return None if seconds is None else min(seconds, MAX_RETRY_AFTER)


@dataclass
class ApiSettings:
    """How patient to be with a server (tests shorten the backoff)."""

    timeout: float = 30.0  # seconds per request
    retries: int = 5
    backoff: float = 0.5  # urllib3 backoff_factor: 0, 1, 2, 4 … seconds between retries


def session(settings: ApiSettings) -> requests.Session:
    """A requests session that retries GETs as described above."""
    retry = _CappedRetry(total=settings.retries, connect=settings.retries, read=settings.retries,
                         status=settings.retries, status_forcelist=RETRIED_STATUSES, allowed_methods=frozenset({"GET"}),
                         backoff_factor=settings.backoff, backoff_max=60, respect_retry_after_header=True,
                         raise_on_status=False)
    s = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    return s


class ConfluenceApi:
    """The few v1 REST calls the connector makes, over `atlassian.Confluence`."""

    def __init__(self, remote: ConfluenceRemote, credentials: Credentials, settings: ApiSettings | None = None) -> None:
        from atlassian import Confluence

        self.settings = settings or ApiSettings()
        self.url = remote.url
        self.requests = 0  # requests made (retries inside urllib3 not counted): the benchmark's measure
        auth = ({"username": credentials.email, "password": credentials.token} if credentials.email is not None
                else {"token": credentials.token})
        self.client = Confluence(  # type: ignore[no-untyped-call]  # atlassian-python-api leaves its __init__ unannotated
            url=remote.url, cloud=remote.cloud, session=session(self.settings), timeout=self.settings.timeout, **auth)

    def get(self, path: str, params: Params | None = None, *, page: str | None = None) -> JsonObject:
        """One GET (path relative to the site, or absolute), as JSON. `page` names the page it is
        about: its failures are `PageError`s; the others' are `ConfluenceUnavailable`."""
        response = self._response(path, params, page=page)
        try:
            data = response.json()
        except ValueError:
            raise self._error(page, f"{self._where(path)} answered with something that is not JSON") from None
        if not isinstance(data, dict):
            raise self._error(page, f"{self._where(path)} answered with JSON that is not an object")
        return data

    def download(self, path: str, max_bytes: int, *, page: str) -> bytes:
        """An attachment's bytes, at most `max_bytes` (more is a `PageError`)."""
        response = self._response(path, None, page=page)
        if len(response.content) > max_bytes:
            raise PageError(f"attachment is over the {max_bytes / 1e6:.0f} MB limit")
        return response.content

    def pages(self, path: str, params: Params) -> Iterator[JsonObject]:
        """Every result of a listing, following `_links.next` (v1 `start/limit` on Data Center,
        cursors on Cloud — the server writes either into `next`, so following it is both)."""
        data = self.get(path, params)
        while True:
            results = data.get("results")
            if not isinstance(results, list):
                raise ConfluenceUnavailable(f"{self._where(path)}: the answer has no results list")
            yield from (r for r in results if isinstance(r, dict))
            following = (data.get("_links") or {}).get("next")
            if not following or not results:
                return
            data = self.get(self._absolute(following, data), None)

    def _absolute(self, link: str, data: JsonObject) -> str:
        """A `_links.next` as an absolute URL: it is relative to the site (`_links.base`), and
        on Cloud starts with the context path (`/wiki`) or not, depending on the endpoint."""
        links = data.get("_links") or {}
        base = str(links.get("base") or self.url).rstrip("/")
        context = str(links.get("context") or "")
        if urlparse(link).scheme:
            return link
        if context and link.startswith(context + "/"):
            link = link[len(context):]
        prefix = urlparse(base).path.rstrip("/")  # v2 gives no context; its next holds /wiki
        if not context and prefix and link.startswith(prefix + "/"):
            link = link[len(prefix):]
        return base + link

    def _response(self, path: str, params: Params | None, *, page: str | None) -> requests.Response:
        self.requests += 1
        absolute = bool(urlparse(path).scheme)
        try:
            response = self.client.get(path.lstrip("/") if not absolute else path, params=params,
                                       absolute=absolute, advanced_mode=True)
        except requests.RequestException as exc:  # unreachable, timed out, retries exhausted on connect
            raise ConfluenceUnavailable(f"cannot reach {self.url}: {type(exc).__name__}") from None
        status = response.status_code
        if status in (401, 403):
            raise ConfluenceUnavailable(
                f"{self.url} refused the credentials (HTTP {status}) at {self._where(path)}: check the token "
                f"and that its account may read these spaces; nothing was changed")
        if status >= 400:
            raise self._error(page, f"{self._where(path)} answered HTTP {status}"
                                    + (" after retries" if status in RETRIED_STATUSES else ""))
        return response

    def _error(self, page: str | None, message: str) -> Exception:
        return PageError(message) if page is not None else ConfluenceUnavailable(message)

    def _where(self, path: str) -> str:
        """A path to show in a message: no query string (CQL can be long; nothing secret is in it either way)."""
        return urlparse(urljoin(self.url + "/", path)).path
