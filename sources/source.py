"""One `[[source]]` table of the sources file: `SourceConfig`, what Docent knows of a source, made
from the table once every key of it is checked.

    [[source]]
    name = "handbook"
    kind = "markdown"
    location = "/srv/handbook"
    access = "public"

The keys and what they mean are in `sources.file`'s docstring and docs/sources.md. A table's
shape (unknown keys, a number where text belongs) is checked by pydantic; what the values mean
here: the name, the kind, the location (relative to the sources file's folder), the access scope
(or, for Confluence, one per space), the schedule and the deletion limit (`sources.sync_rules`).
A `kind = "confluence"` table is read over REST from a `url` (`sources.remote`).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from connectors.confluence.config import ConfluenceRemote
from connectors.document import PUBLIC
from connectors.globs import GlobFilter
from connectors.registry import CONFLUENCE, KINDS, REGISTRY, detect_kind
from connectors.space_access import WILDCARD
from sources.errors import SourcesError, checked_table
from sources.remote import parse_remote
from sources.scopes import check_scope_name
from sources.sync_rules import EMPTY_SITE, MAX_DELETE_EXPECTED, DeletionLimit, Schedule, parse_max_delete, parse_schedule

PER_SPACE = tuple(sorted(name for name, kind in REGISTRY.items() if kind.per_space))  # may set access per space
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass
class SourceConfig:
    """One source: where its pages are, how they are read, who may see them, when they re-sync."""

    name: str
    location: Path
    kind: str | None = None  # None: detected from the location
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    url_template: str | None = None
    base_url: str | None = None
    access: str | dict[str, str] = PUBLIC  # a scope; for Confluence also {space key: scope, "*": the rest}
    schedule: Schedule | None = None
    max_delete: DeletionLimit = field(default_factory=DeletionLimit)
    allow_overlap: bool = False  # its location may overlap another source's with a different access
    index_drafts: bool = False  # Markdown pages with `draft: true` are indexed too (else SKIPPED with the reason)
    adhoc: bool = False  # synced with `kb sync PATH`, not named in the configuration
    remote: ConfluenceRemote | None = None  # kind "confluence": read over REST; `location` is unused
    attachments: bool = False  # a Confluence export: index its attached PDF/Word/PowerPoint files too

    def __post_init__(self) -> None:
        if isinstance(self.schedule, str):
            self.schedule = parse_schedule(self.schedule)

    @property
    def scopes(self) -> set[str]:
        """Every access scope this source's documents can carry."""
        return set(self.access.values()) if isinstance(self.access, dict) else {self.access}

    @property
    def place(self) -> str:
        """Where its pages come from, as shown and remembered: the folder, export or server URL."""
        return self.remote.url if self.remote is not None else str(self.location)

    def exists(self) -> bool:
        """Whether its location is there (a server's reachability is the sync's to find out)."""
        return self.remote is not None or self.location.exists()

    @property
    def resolved_kind(self) -> str:
        if self.kind:
            return self.kind
        return detect_kind(self.location)

    @property
    def watchable(self) -> bool:
        """Folder sources can be watched; a .zip export changes as a whole."""
        return self.remote is None and self.location.is_dir()

    @property
    def globs(self) -> GlobFilter:
        return GlobFilter(tuple(self.include), tuple(self.exclude))


# -- the table's shape, checked by pydantic (types, unknown keys); meaning is checked below -------


class _SourceTable(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = ""
    location: str | None = None
    kind: str | None = None
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    url_template: str | None = None
    base_url: str | None = None
    access: str | dict[str, str] = PUBLIC
    schedule: str | None = None
    max_delete: int | str | None = None
    allow_overlap: bool = False
    # kind = "confluence" (sources.remote)
    url: str | None = None
    spaces: list[str] | None = None
    cql: str | None = None
    email_env: str | None = None
    token_env: str | None = None
    restrictions: dict[str, str] | None = None
    attachments: bool | None = None
    timeout: int | float | None = None
    retries: int | None = None
    index_drafts: bool = False


_EXPECTED = {
    "name": "a name such as \"handbook\"",
    "location": "a folder or .zip path in quotes",
    "kind": f"one of {', '.join(KINDS)}",
    "include": "a list of globs, e.g. include = [\"**/*.md\"] (a single glob too goes in [ ])",
    "exclude": "a list of globs, e.g. exclude = [\"drafts/**\"] (a single glob too goes in [ ])",
    "url_template": "text with {path}, e.g. \"https://github.com/acme/handbook/blob/main/{path}\"",
    "base_url": "a URL in quotes",
    "access": "a scope name, or for Confluence { SPACEKEY = \"scope\", \"*\" = \"default\" }",
    "schedule": "text: \"every 30m\" or a 5-field cron such as \"0 3 * * *\"",
    "max_delete": MAX_DELETE_EXPECTED,
    "allow_overlap": "true or false",
    "url": "the Confluence site's address in quotes",
    "spaces": "a list of space keys, e.g. spaces = [\"HR\"]",
    "cql": "a CQL filter in quotes",
    "email_env": "the name of an environment variable in quotes",
    "token_env": "the name of an environment variable in quotes",
    "restrictions": "a table such as { \"group:hr-staff\" = \"hr-private\" }",
    "attachments": "true or false",
    "timeout": "seconds, e.g. timeout = 30",
    "retries": "a number, e.g. retries = 5",
}


def _must_be(key: str, value: object) -> str:
    got = type(value).__name__.replace("str", "text").replace("dict", "table")
    return f"{_EXPECTED.get(key, 'as documented')}, not {got}"


def check_source_name(name: str, where: str = "source") -> None:
    """Source names become document ids ("name:path"): letters, digits, '.', '_', '-'."""
    if not _NAME.match(name):
        raise SourcesError(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-'")


def _access(value: str | dict[str, str], kind: str | None, where: str) -> str | dict[str, str]:
    """A source's `access`: one scope, or for Confluence a mapping of space keys to scopes."""
    if isinstance(value, str):
        check_scope_name(value, f"{where}: access")
        return value
    if kind is not None and kind not in PER_SPACE:
        raise SourcesError(f"{where}: access per space is only for {', '.join(PER_SPACE[:-1])} and {PER_SPACE[-1]} "
                           f"sources; a {kind} source has one access scope")
    if WILDCARD not in value:
        raise SourcesError(f"{where}: access per space needs a \"*\" entry: the scope of pages in other spaces")
    seen: dict[str, str] = {}
    for space, scope in value.items():
        if not space.strip():
            raise SourcesError(f"{where}: access: space keys must be non-empty strings")
        if space.casefold() in seen:
            raise SourcesError(f"{where}: access: space {space!r} is listed twice (as {seen[space.casefold()]!r})")
        seen[space.casefold()] = space
        check_scope_name(scope, f"{where}: access of space {space!r}")
    return dict(value)


def parse_source(entry: object, base: Path, where: str) -> SourceConfig:
    """A `[[source]]` table (`entry`), checked; relative locations are taken from `base`, the file's folder."""
    if not isinstance(entry, dict):
        raise SourcesError(f"{where}: expected a table of settings")
    named = f"{where} ({entry['name']})" if isinstance(entry.get("name"), str) else where
    table = checked_table(_SourceTable, entry, named, "a table of settings", _must_be)
    name = table.name
    check_source_name(name, where)
    remote = parse_remote(table, table.kind, named)
    if remote is not None:
        return SourceConfig(
            name=name, location=Path(f"confluence:{name}"), kind=CONFLUENCE.name, base_url=table.base_url or remote.url,
            access=_access(table.access, CONFLUENCE.name, named), remote=remote,
            schedule=parse_schedule(table.schedule, where=f"{named}: schedule") if table.schedule is not None else None,
            max_delete=replace(parse_max_delete(table.max_delete, where=f"{named}: max_delete"), empty=EMPTY_SITE))
    if table.location is None:
        raise SourcesError(f"{named}: location is required")
    kind = table.kind
    if kind is not None and kind not in KINDS:
        raise SourcesError(f"{named}: kind must be one of {', '.join(KINDS)}")
    if kind is not None and not REGISTRY[kind].takes("include") and (table.include or table.exclude):
        raise SourcesError(f"{named}: include and exclude apply to Markdown folders; a {kind} export is read whole")
    access = _access(table.access, kind, named)
    location = Path(table.location).expanduser()
    if not location.is_absolute():
        location = (base / location).resolve()
    if isinstance(access, dict) and kind is None and location.exists():
        try:
            detected = detect_kind(location)
        except (OSError, ValueError, zipfile.BadZipFile):
            detected = None  # unreadable now: the sync will say why
        if detected is not None and detected not in PER_SPACE:
            raise SourcesError(f"{named}: access per space is only for Confluence exports, "
                               f"and {location} is not one")
    schedule = parse_schedule(table.schedule, where=f"{named}: schedule") if table.schedule is not None else None
    return SourceConfig(
        name=name, location=location, kind=kind, include=list(table.include), exclude=list(table.exclude),
        url_template=table.url_template, base_url=table.base_url, access=access, schedule=schedule,
        max_delete=parse_max_delete(table.max_delete, where=f"{named}: max_delete"), allow_overlap=table.allow_overlap,
        index_drafts=table.index_drafts,
        attachments=bool(table.attachments),
    )
