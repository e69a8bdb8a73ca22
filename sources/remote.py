"""The settings of a source read over the network: Confluence Cloud or Data Center over REST.

    [[source]]
    name = "wiki"
    kind = "confluence"
    url = "https://acme.atlassian.net/wiki"    # Data Center: "https://confluence.acme.com"
    spaces = ["HR", "ENG"]                      # and/or cql = "space = HR and label = policy"
    email_env = "CONFLUENCE_EMAIL"              # Cloud: the account's email (omit for Data Center)
    token_env = "CONFLUENCE_TOKEN"              # Cloud: API token; Data Center: personal access token
    access = { HR = "hr-private", "*" = "public" }
    restrictions = { "group:hr-staff" = "hr-private", "user:5b10ac8d82e05b22cc7d4ef5" = "ceo-office" }
    attachments = true                          # PDF, Word and PowerPoint files attached to pages
    timeout = 30                                # seconds per request
    retries = 5                                 # per request: 429 (after Retry-After), 5xx, dropped connections

The file names the *environment variables* that hold the secrets, never the secrets: a sources
file is checked in and shown in reviews, and `kb sources` prints settings. They are read when a
sync first needs them (`EnvironmentCredentials`); a variable that is unset is a `SourcesError`
naming the variable, not its value.

`restrictions` says which scope a page with read restrictions may be published under: a page
readable only by the group `hr-staff` (or by several, one of them `hr-staff`) goes to
`hr-private`. A restricted page that no entry covers is not indexed at all (SKIPPED with the
reason, `connectors.confluence.rest`): the sources file cannot see who else may read it.

`parse_remote` turns the table into the connector's own settings,
`connectors.confluence.config.ConfluenceRemote`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlparse

from connectors.confluence.config import ConfluenceRemote, Credentials
from connectors.registry import CONFLUENCE, REGISTRY
from sources.errors import SourcesError

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_PRINCIPAL = re.compile(r"^(user|group):\S.{0,254}$")
_SPACE_KEY = re.compile(r"^~?[A-Za-z0-9_-]{1,255}$")


class SourceTable(Protocol):
    """What `parse_remote` reads of a `[[source]]` table, already shape-checked by pydantic
    (`sources.source`, which imports this module)."""

    location: str | None
    include: list[str]
    exclude: list[str]
    url: str | None
    spaces: list[str] | None
    cql: str | None
    email_env: str | None
    token_env: str | None
    restrictions: dict[str, str] | None
    attachments: bool | None
    timeout: int | float | None
    retries: int | None


@dataclass(frozen=True)
class EnvironmentCredentials:
    """A REST source's `credentials` (`connectors.confluence.config.ConfluenceRemote`): read from the
    environment variables the sources file names when the connector first needs them (a sync), so
    the file can be read without them; `repr` shows the variables' names, never their values."""

    url: str
    token_env: str
    email_env: str | None = None  # set: Cloud; unset: Data Center (personal access token)

    def __call__(self, environ: Mapping[str, str] | None = None) -> Credentials:
        """The secrets from the environment; a missing one is an error naming the variable."""
        environ = os.environ if environ is None else environ
        missing = [name for name in (self.email_env, self.token_env) if name and not environ.get(name, "").strip()]
        if missing:
            raise SourcesError(f"Confluence at {self.url}: environment variable(s) {', '.join(missing)} not set "
                               f"({'email and API token' if self.email_env is not None else 'personal access token'})")
        email = environ[self.email_env].strip() if self.email_env else None
        return Credentials(token=environ[self.token_env].strip(), email=email)


def parse_remote(table: SourceTable, kind: str | None, where: str) -> ConfluenceRemote | None:
    """The remote settings of a `[[source]]` table (already shape-checked by pydantic): a
    `ConfluenceRemote` for `kind = "confluence"`, None for the others (which may not use them)."""
    told = REGISTRY.get(kind or "")  # an export may set `attachments` too (connectors.export_attachments)
    given = [key for key in ("url", "spaces", "cql", "email_env", "token_env", "restrictions", "attachments",
                             "timeout", "retries")
             if getattr(table, key) is not None and not (key == "attachments" and told and told.takes(key))]
    if kind != CONFLUENCE.name:
        if given:
            raise SourcesError(f"{where}: {', '.join(given)} apply to kind = \"confluence\" (REST) sources only")
        return None
    if table.location is not None:
        raise SourcesError(f"{where}: a kind = \"confluence\" source is read from its url; remove location")
    if table.include or table.exclude:
        raise SourcesError(f"{where}: include and exclude apply to Markdown folders; choose pages with spaces or cql")
    url = (table.url or "").strip().rstrip("/")
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise SourcesError(f"{where}: url must be the site's address, e.g. \"https://acme.atlassian.net/wiki\"")
    if parsed.username or parsed.password:
        raise SourcesError(f"{where}: url must not hold credentials; name environment variables in "
                           f"email_env and token_env")
    spaces = tuple(table.spaces or ())
    for key in spaces:
        if not _SPACE_KEY.match(key):
            raise SourcesError(f"{where}: spaces: {key!r} is not a space key (letters, digits, '_' or '-')")
    cql = (table.cql or "").strip() or None
    if not spaces and not cql:
        raise SourcesError(f"{where}: say which pages to read: spaces = [\"HR\", …] and/or cql = \"…\"")
    if not table.token_env:
        raise SourcesError(f"{where}: token_env must name the environment variable holding the API token "
                           f"(Cloud, with email_env) or the personal access token (Data Center)")
    for key in ("email_env", "token_env"):
        value = getattr(table, key)
        if value is not None and not _ENV_NAME.match(value):
            raise SourcesError(f"{where}: {key} must be the *name* of an environment variable, such as "
                               f"CONFLUENCE_TOKEN, not the secret itself")
    restrictions = dict(table.restrictions or {})
    for principal in restrictions:
        if not _PRINCIPAL.match(principal):
            raise SourcesError(f"{where}: restrictions: {principal!r} must be \"group:NAME\" or \"user:ACCOUNT-ID\" "
                               f"(Data Center: \"user:USERNAME\")")
    timeout = 30.0 if table.timeout is None else float(table.timeout)
    retries = 5 if table.retries is None else table.retries
    if not 0 < timeout <= 600 or not 0 <= retries <= 20:
        raise SourcesError(f"{where}: timeout must be 1–600 seconds and retries 0–20")
    return ConfluenceRemote(url=url, credentials=EnvironmentCredentials(url, table.token_env, table.email_env),
                            cloud=table.email_env is not None, timeout=timeout, retries=retries, spaces=spaces,
                            cql=cql, restrictions=restrictions,
                            attachments=True if table.attachments is None else table.attachments)
