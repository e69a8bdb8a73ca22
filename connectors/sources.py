"""The sources file (`KB_SOURCES`, TOML or YAML): which wikis Docent reads, how, and who sees what.

    shared_channels = "public"        # Slack Connect channels: "public" (default) or "none" (no answers)

    [[source]]
    name = "handbook"                 # unique; document ids are "handbook:relative/path"
    kind = "markdown"                 # markdown | confluence-html | confluence-xml (default: detected)
    location = "/srv/handbook"        # a folder, or a Confluence export .zip
    include = ["**/*.md"]             # optional globs
    exclude = ["drafts/**", "SOURCE.md"]
    url_template = "https://github.com/acme/handbook/blob/main/{path}"   # markdown
    base_url = "https://acme.atlassian.net/wiki"                          # confluence
    access = "public"                 # access scope of every document of this source
    schedule = "every 30m"            # "every 90s|15m|6h|1d", or a 5-field cron "0 3 * * *"

    [[source]]
    name = "confluence"
    kind = "confluence-xml"
    location = "exports/all-spaces.zip"
    access = { HR = "hr-private", "*" = "public" }   # Confluence: per space key ("*": other spaces)

    [scopes.hr-private]               # where a scope is visible (see connectors.access)
    channels = ["C0HRTEAM1"]          # everyone in these channels ("*": every channel)
    users = ["U0ALICE01"]             # direct messages with Docent: these users ("*": every member)
    usergroups = ["S0HRSTAFF"]        # ... and the members of these user groups

`public` is visible everywhere (in Slack Connect channels too, unless `shared_channels = "none"`);
any other scope only where a `[scopes.NAME]` table says so. Paths in `location` are relative to
the sources file's folder. A YAML file has the same shape: a `sources:` list, a `scopes:`
mapping and `shared_channels`. (In TOML, top-level keys go before the first table.)
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from connectors.access import SHARED_CHOICES, SHARED_PUBLIC, WILDCARD, AccessConfig, ScopeRule
from connectors.document import PUBLIC

KINDS = ("markdown", "confluence-html", "confluence-xml")
CONFLUENCE_KINDS = ("confluence-html", "confluence-xml")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SCOPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
# Slack ids: channels C… (public), G… (private, older), D… (direct message); users U…/W…; groups S…
_SLACK_IDS = {
    "channels": (re.compile(r"^[CGD][A-Z0-9]+$"), "a Slack channel id such as C0123ABCD (not a #name)"),
    "users": (re.compile(r"^[UW][A-Z0-9]+$"), "a Slack user id such as U0123ABCD (not a @name)"),
    "usergroups": (re.compile(r"^S[A-Z0-9]+$"), "a Slack user-group id such as S0123ABCD (not a @handle)"),
}
_TOP_LEVEL = {"source", "sources", "scopes", "shared_channels"}


class SourcesError(ValueError):
    """The sources file is missing, unreadable or wrong; the message says where."""


@dataclass
class SourceConfig:
    name: str
    location: Path
    kind: str | None = None  # None: detected from the location
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    url_template: str | None = None
    base_url: str | None = None
    access: str | dict[str, str] = PUBLIC  # a scope; for Confluence also {space key: scope, "*": the rest}
    schedule: str | None = None

    @property
    def scopes(self) -> set[str]:
        """Every access scope this source's documents can carry."""
        return set(self.access.values()) if isinstance(self.access, dict) else {self.access}

    @property
    def resolved_kind(self) -> str:
        if self.kind:
            return self.kind
        from connectors.detect import detect_kind

        return detect_kind(self.location)

    @property
    def watchable(self) -> bool:
        """Folder sources can be watched; a .zip export changes as a whole."""
        return self.location.is_dir()


@dataclass
class SourcesFile:
    """Everything a sources file says: the sources, and where each access scope is visible."""

    sources: list[SourceConfig]
    access: AccessConfig


def load_sources(path: Path) -> list[SourceConfig]:
    """Read and validate a sources file (TOML `[[source]]` tables, or YAML `sources:` list)."""
    return read_sources_file(path).sources


def load_access(path: Path) -> AccessConfig:
    """Read and validate a sources file; its `[scopes.*]` tables and `shared_channels`."""
    return read_sources_file(path).access


def read_sources_file(path: Path) -> SourcesFile:
    """Read and validate the whole sources file; every problem is a `SourcesError` saying where."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SourcesError(f"cannot read sources file {path}: {exc.strerror or exc}") from None
    try:
        if path.suffix.lower() in (".yml", ".yaml"):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            import tomllib

            data = tomllib.loads(text)
    except Exception as exc:  # tomllib / yaml syntax errors
        raise SourcesError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise SourcesError(f"{path}: expected a mapping with a sources list (and optionally scopes)")
    unknown = set(data) - _TOP_LEVEL
    if unknown:
        raise SourcesError(f"{path}: unknown top-level setting(s) {', '.join(sorted(map(str, unknown)))} "
                           f"(expected source, scopes, shared_channels)")
    entries = data.get("sources") or data.get("source") or []
    if not isinstance(entries, list) or not entries:
        raise SourcesError(f"{path}: no sources defined (expected [[source]] tables)")
    sources = [_source(entry, path.parent, f"{path}: source #{n}") for n, entry in enumerate(entries, start=1)]
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise SourcesError(f"{path}: source names must be unique ({', '.join(sorted(names))})")
    return SourcesFile(sources=sources, access=parse_access(data, str(path)))


def parse_access(data: dict, where: str) -> AccessConfig:
    """The `scopes` tables and `shared_channels` of a parsed sources file, validated."""
    shared = data.get("shared_channels", SHARED_PUBLIC)
    if shared not in SHARED_CHOICES:
        raise SourcesError(f"{where}: shared_channels must be \"public\" (Slack Connect channels see public "
                           f"scopes only) or \"none\" (no answers there), not {shared!r}")
    tables = data.get("scopes") or {}
    if not isinstance(tables, dict):
        raise SourcesError(f"{where}: scopes must be tables [scopes.NAME] with channels, users and usergroups")
    scopes = {}
    for name, table in tables.items():
        here = f"{where}: [scopes.{name}]"
        _check_scope_name(name, here)
        if name == PUBLIC:
            raise SourcesError(f"{here}: the public scope is visible everywhere and takes no settings "
                               f"(use another scope name to restrict pages)")
        if not isinstance(table, dict):
            raise SourcesError(f"{here}: expected a table with channels, users and/or usergroups")
        unknown = set(table) - set(_SLACK_IDS)
        if unknown:
            raise SourcesError(f"{here}: unknown setting(s) {', '.join(sorted(map(str, unknown)))} "
                               f"(expected channels, users, usergroups)")
        scopes[name] = ScopeRule(**{key: frozenset(_slack_ids(table.get(key, []), key, here)) for key in _SLACK_IDS})
    return AccessConfig(scopes=scopes, shared_channels=shared)


def _slack_ids(value, key: str, where: str) -> list[str]:
    if not isinstance(value, list):
        raise SourcesError(f"{where}: {key} must be a list of ids, e.g. {key} = [\"{_example(key)}\"]")
    pattern, what = _SLACK_IDS[key]
    for item in value:
        if item == WILDCARD and key in ("channels", "users"):
            continue
        if not isinstance(item, str) or not pattern.match(item):
            raise SourcesError(f"{where}: {key}: {item!r} is not {what}")
    return value


def _example(key: str) -> str:
    return {"channels": "C0123ABCD", "users": "U0123ABCD", "usergroups": "S0123ABCD"}[key]


def _check_scope_name(name, where: str) -> None:
    if not isinstance(name, str) or not _SCOPE.match(name):
        raise SourcesError(f"{where}: access scope {name!r} must be letters, digits, '.', '_', ':' or '-'")


def _access(value, kind: str | None, where: str) -> str | dict[str, str]:
    """A source's `access`: one scope, or for Confluence a mapping of space keys to scopes."""
    if isinstance(value, str):
        _check_scope_name(value, f"{where}: access")
        return value
    if not isinstance(value, dict):
        raise SourcesError(f"{where}: access must be a scope name, or for Confluence "
                           f"{{ SPACEKEY = \"scope\", \"*\" = \"default\" }}")
    if kind is not None and kind not in CONFLUENCE_KINDS:
        raise SourcesError(f"{where}: access per space is only for confluence-html and confluence-xml sources; "
                           f"a {kind} source has one access scope")
    if WILDCARD not in value:
        raise SourcesError(f"{where}: access per space needs a \"*\" entry: the scope of pages in other spaces")
    seen: dict[str, str] = {}
    for space, scope in value.items():
        if not isinstance(space, str) or not space.strip():
            raise SourcesError(f"{where}: access: space keys must be non-empty strings")
        if space.casefold() in seen:
            raise SourcesError(f"{where}: access: space {space!r} is listed twice (as {seen[space.casefold()]!r})")
        seen[space.casefold()] = space
        if not isinstance(scope, str):
            raise SourcesError(f"{where}: access: the scope of space {space!r} must be a scope name")
        _check_scope_name(scope, f"{where}: access of space {space!r}")
    return dict(value)


def _source(entry: dict, base: Path, where: str) -> SourceConfig:
    if not isinstance(entry, dict):
        raise SourcesError(f"{where}: expected a table of settings")
    unknown = set(entry) - {f for f in SourceConfig.__dataclass_fields__}
    if unknown:
        raise SourcesError(f"{where}: unknown setting(s) {', '.join(sorted(unknown))}")
    name = str(entry.get("name", ""))
    if not _NAME.match(name):
        raise SourcesError(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-'")
    if "location" not in entry:
        raise SourcesError(f"{where} ({name}): location is required")
    kind = entry.get("kind")
    if kind is not None and kind not in KINDS:
        raise SourcesError(f"{where} ({name}): kind must be one of {', '.join(KINDS)}")
    access = _access(entry.get("access", PUBLIC), kind, f"{where} ({name})")
    location = Path(entry["location"]).expanduser()
    if not location.is_absolute():
        location = (base / location).resolve()
    if isinstance(access, dict) and kind is None and location.exists():
        from connectors.detect import detect_kind

        try:
            detected = detect_kind(location)
        except (OSError, ValueError, zipfile.BadZipFile):
            detected = None  # unreadable now: the sync will say why
        if detected == "markdown":
            raise SourcesError(f"{where} ({name}): access per space is only for Confluence exports, "
                               f"and {location} is not one")
    schedule = entry.get("schedule")
    if schedule is not None:
        parse_schedule(str(schedule), where=f"{where} ({name})")
    return SourceConfig(
        name=name, location=location, kind=kind,
        include=list(entry.get("include", [])), exclude=list(entry.get("exclude", [])),
        url_template=entry.get("url_template"), base_url=entry.get("base_url"),
        access=access, schedule=schedule,
    )


_INTERVAL = re.compile(r"^every\s+(\d+)\s*(s|m|h|d)$")


def parse_schedule(text: str, where: str = "schedule") -> dict:
    """"every 15m" → {"interval": seconds}; a 5-field cron → {"cron": text}."""
    text = text.strip()
    if match := _INTERVAL.match(text):
        seconds = int(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
        if seconds <= 0:
            raise SourcesError(f"{where}: the interval must be positive")
        return {"interval": seconds}
    if len(text.split()) == 5:
        return {"cron": text}
    raise SourcesError(f"{where}: schedule {text!r} is neither 'every <n>s|m|h|d' nor a 5-field cron")


def open_connector(source: SourceConfig):
    """The connector object for a source; every connector has `documents()` and `read`-style access."""
    kind = source.resolved_kind
    per_space = source.access if isinstance(source.access, dict) else None
    if per_space is not None and kind not in CONFLUENCE_KINDS:
        raise SourcesError(f"source {source.name}: access per space is only for Confluence exports, "
                           f"and {source.location} is a {kind} source")
    access = per_space[WILDCARD] if per_space is not None else source.access
    if kind == "markdown":
        from connectors.markdown import MarkdownFolder

        return MarkdownFolder(source.location, source=source.name, include=source.include, exclude=source.exclude,
                              url_template=source.url_template, access=access)
    if kind == "confluence-html":
        from connectors.confluence_html import ConfluenceHtmlExport

        connector = ConfluenceHtmlExport(source.location, source=source.name, base_url=source.base_url, access=access)
    elif kind == "confluence-xml":
        from connectors.confluence_xml import ConfluenceXmlExport

        connector = ConfluenceXmlExport(source.location, source=source.name, base_url=source.base_url, access=access)
    else:
        raise SourcesError(f"source {source.name}: unknown kind {kind!r}")
    return SpaceScoped(connector, per_space) if per_space is not None else connector


class SpaceScoped:
    """A Confluence export whose pages take their access scope from their space
    (`doc.metadata["space"]`, matched case-insensitively; "*" for every other space).
    Everything else is the wrapped connector's."""

    def __init__(self, connector, access: dict[str, str]) -> None:
        self.connector = connector
        self.default = access[WILDCARD]
        self.by_space = {space.casefold(): scope for space, scope in access.items() if space != WILDCARD}

    def scope_of(self, space: str | None) -> str:
        return self.by_space.get((space or "").casefold(), self.default)

    def documents(self):
        for doc in self.connector.documents():
            doc.access = self.scope_of(doc.metadata.get("space"))
            yield doc

    def __getattr__(self, name: str):
        return getattr(self.connector, name)
