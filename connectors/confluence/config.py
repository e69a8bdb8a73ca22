"""What the Confluence REST connector is told: where the site is, which of its pages to read, how
to log in and how patient to be (`ConfluenceRemote`), and what it logs in with (`Credentials`).

`sources.remote` makes a `ConfluenceRemote` from a `kind = "confluence"` table of the sources
file; the connector (`connectors.confluence.rest`, over `connectors.confluence.api`) reads
nothing else. The secrets are not in it: `credentials` is asked for them when the first request
is made, so a source's settings can be read, shown and checked without them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Credentials:
    """What the client logs in with; `repr` never shows the secret."""

    token: str = field(repr=False)
    email: str | None = None  # Cloud (basic auth with an API token); None: Data Center bearer token


@dataclass(frozen=True)
class ConfluenceRemote:
    """Where a Confluence REST source lives and which of its pages it reads."""

    url: str  # the site's base, e.g. https://acme.atlassian.net/wiki
    credentials: Callable[[], Credentials]  # called on first use; raises, naming what is missing, when it cannot
    cloud: bool = False  # Cloud (an email and an API token); False: Data Center (a personal access token)
    spaces: tuple[str, ...] = ()
    cql: str | None = None
    restrictions: Mapping[str, str] = field(default_factory=dict)  # "group:NAME" / "user:ID" → scope
    attachments: bool = True
    timeout: float = 30.0
    retries: int = 5

    def filter_cql(self) -> str:
        """The CQL that selects this source's pages (no time condition)."""
        parts = ["type = page"]
        if self.spaces:
            parts.append("space in (" + ", ".join(f'"{key}"' for key in self.spaces) + ")")
        if self.cql:
            parts.append(f"({self.cql})")
        return " and ".join(parts)
