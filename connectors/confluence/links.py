"""Where a link a Confluence server hands back may take Docent: only to the configured site.

Every URL Docent requests with the site's credentials, and every citation it shows, is either
built by Docent from the configured `url` or is a server-given link (`_links.next`, an
attachment's `_links.download`, a page's `_links.webui`, a redirect's `Location`) checked here.
The rule (`Site.resolve`): a relative link is a path on the configured site — resolved against
the configured `url`, never against the reply's `_links.base` (Data Center writes its own
configured base there, which may be `http://` or an internal name); an absolute link is taken
only if its scheme, host and port are the site's. Anything else is `OffSite`, refused with the
reason, so the `Authorization` header never leaves the site (issue 45).

Ids are checked too (`page_id`, `attachment_id`): a page id is digits, so a document path
(`pages/<id>`), a URL path part and a CQL `id in (…)` built from it cannot hold `..`, a slash,
a quote or a CQL clause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

# What a space key looks like (letters and digits; a personal space: "~" and a user name): no quote,
# backslash or space, so one is safe inside CQL's "…".
SPACE_KEY = re.compile(r"~?[A-Za-z0-9][A-Za-z0-9_.@-]{0,254}")
_PAGE_ID = re.compile(r"[0-9]{1,19}")
_ATTACHMENT_ID = re.compile(r"(att)?[0-9]{1,19}")  # v1 writes attachment ids as "att123"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class OffSite(ValueError):
    """A link that would leave the configured site (or is not a link at all)."""


def page_id(value: object) -> str | None:
    """A server-given page (or space, ancestor) id as text when it is one (digits); None otherwise."""
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    return text if _PAGE_ID.fullmatch(text) else None


def space_key(value: object) -> str | None:
    """A server-given space key when it is one (safe to quote into CQL); None otherwise."""
    return value if isinstance(value, str) and SPACE_KEY.fullmatch(value) else None


def attachment_id(value: object) -> str | None:
    """A server-given attachment id ("att123" or "123") when it is one; None otherwise."""
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    return text if _ATTACHMENT_ID.fullmatch(text) else None


def _origin(scheme: str, host: str, port: int | None) -> tuple[str, str, int]:
    return scheme.lower(), host.lower(), port if port is not None else _DEFAULT_PORTS.get(scheme.lower(), -1)


@dataclass(frozen=True)
class Site:
    """The configured site: its base `url` (no trailing slash) and its origin."""

    url: str

    @property
    def origin(self) -> tuple[str, str, int]:
        parts = urlsplit(self.url)
        return _origin(parts.scheme, parts.hostname or "", parts.port)

    @property
    def shown(self) -> str:
        """The origin for a message: scheme://host:port."""
        scheme, host, port = self.origin
        return f"{scheme}://{host}:{port}"

    def owns(self, url: str) -> bool:
        """Whether an absolute URL is on this site: same scheme, host and port, and no user info."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return False
        if parts.username is not None or parts.password is not None or not parts.hostname:
            return False
        return _origin(parts.scheme, parts.hostname, port) == self.origin

    def resolve(self, link: object) -> str:
        """A server-given link as an absolute URL on this site, or `OffSite` saying why not."""
        if not isinstance(link, str) or not link.strip():
            raise OffSite("the link is empty or not text")
        if "\\" in link or any(ord(c) < 0x21 or ord(c) == 0x7F for c in link):
            raise OffSite("the link holds spaces, control characters or backslashes")
        parts = urlsplit(link)
        if parts.scheme or parts.netloc or link.startswith("//"):
            if not self.owns(link):
                raise OffSite(f"it points to {_shown(link)}, not to the configured site {self.shown}")
            return link
        if not link.startswith("/"):
            raise OffSite("a relative link must be a path starting with /")
        prefix = urlsplit(self.url).path.rstrip("/")  # Cloud's /wiki: v2 links start with it, v1 links do not
        if prefix and (link == prefix or link.startswith(prefix + "/")):
            link = link[len(prefix):]
        url = self.url + link
        if not self.owns(url):  # cannot happen for a path; checked so the rule holds whatever changes above
            raise OffSite(f"it resolves to {_shown(url)}, not to the configured site {self.shown}")
        return url

    def citation(self, link: object) -> str | None:
        """A page's `_links.webui` as a citation URL on this site; None when it would leave it."""
        try:
            return self.resolve(link)
        except OffSite:
            return None


def _shown(url: str) -> str:
    try:
        parts = urlsplit(url)
        return f"{parts.scheme or '?'}://{parts.hostname or '?'}:{parts.port or _DEFAULT_PORTS.get(parts.scheme, '?')}"
    except ValueError:
        return "a malformed address"
