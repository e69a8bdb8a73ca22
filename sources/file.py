"""The sources file (`KB_SOURCES`, TOML or YAML): which wikis Docent reads, how, and who sees what.

    shared_channels = "public"        # Slack Connect channels: "public" (default) or "none" (no answers)

    [[source]]
    name = "handbook"                 # unique; document ids are "handbook:relative/path"
    kind = "markdown"                 # markdown | confluence-html | confluence-xml | confluence (REST; default: detected)
    location = "/srv/handbook"        # a folder, or a Confluence export .zip
    include = ["**/*.md"]             # optional globs
    exclude = ["drafts/**", "SOURCE.md"]
    url_template = "https://github.com/acme/handbook/blob/main/{path}"   # markdown
    base_url = "https://acme.atlassian.net/wiki"                          # confluence
    access = "public"                 # access scope of every document of this source
    schedule = "every 30m"            # "every 90s|15m|6h|1d", or a 5-field cron "0 3 * * *"
    max_delete = "50%"                # most its syncs may delete in an hour: a share (default 50%, from 10 pages) or pages
    allow_overlap = false             # true: its location may overlap another source's with other access

    [[source]]
    name = "confluence"
    kind = "confluence-xml"
    location = "exports/all-spaces.zip"
    access = { HR = "hr-private", "*" = "public" }   # Confluence: per space key ("*": other spaces)

    [scopes.hr-private]               # where a scope is visible (see sources.access)
    channels = ["C0HRTEAM1"]          # everyone in these channels ("*": every channel)
    users = ["U0ALICE01"]             # direct messages with Docent: these users ("*": every member)
    usergroups = ["S0HRSTAFF"]        # ... and the members of these user groups

    [synonyms]                        # the asker's word → the wiki's words (indexing.search.synonyms)
    vacation = ["annual leave", "paid time off", "PTO"]
    "年假" = ["annual leave"]          # keys with spaces or CJK characters in quotes

`public` is visible everywhere (in Slack Connect channels too, unless `shared_channels = "none"`);
any other scope only where a `[scopes.NAME]` table says so. Paths in `location` are relative to
the sources file's folder. A YAML file has the same shape: a `sources:` list, a `scopes:`
mapping, `shared_channels` and a `synonyms:` mapping. (In TOML, top-level keys go before the first table.)

Every key is checked when the file is read (pydantic models with unknown keys forbidden and no
type coercion): a typo, a number where text belongs or a bare string where a list belongs
(`exclude = "drafts/**"`, which as a list of characters would exclude every file) stops Docent
at start with the file, the table and the key; so do two sources whose locations overlap (one
inside the other, or the same) with different access, unless one sets `allow_overlap = true`.
A `kind = "confluence"` source is read over REST from a `url` instead of a `location`; its
settings (spaces, cql, credentials' environment variables, restrictions) are checked by
`sources.remote`. Globs follow gitignore rules (`connectors.globs`);
schedules and deletion limits are parsed by `sources.sync_rules`.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from sources.channels import ChannelsConfig, parse_channels
from sources.access import SHARED_CHOICES, SHARED_PUBLIC, WILDCARD, AccessConfig, ScopeRule
from connectors.document import PUBLIC
from connectors.globs import GlobFilter
from sources.remote import ConfluenceRemote, parse_remote
from sources.overlaps import adhoc_name, check_overlaps, overlap
from sources.sync_rules import (
    MAX_DELETE_EXPECTED,
    DeletionLimit,
    Schedule,
    SourcesError,
    parse_max_delete,
    parse_schedule,
)

KINDS = ("markdown", "confluence-html", "confluence-xml", "confluence")
CONFLUENCE_KINDS = ("confluence-html", "confluence-xml", "confluence")  # may set access per space
__all__ = ["adhoc_name", "overlap"]  # re-exported for `kb sync PATH`
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SCOPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
# Slack ids: channels C… (public), G… (private, older), D… (direct message); users U…/W…; groups S…
_SLACK_IDS = {
    "channels": (re.compile(r"^[CGD][A-Z0-9]+$"), "a Slack channel id such as C0123ABCD (not a #name)"),
    "users": (re.compile(r"^[UW][A-Z0-9]+$"), "a Slack user id such as U0123ABCD (not a @name)"),
    "usergroups": (re.compile(r"^S[A-Z0-9]+$"), "a Slack user-group id such as S0123ABCD (not a @handle)"),
}
_TOP_LEVEL = ("source", "sources", "scopes", "shared_channels", "synonyms", "channels")
MAX_SYNONYMS = 20  # phrases per word: a longer list is a thesaurus pasted in, and drowns the question
MAX_PHRASE_CHARS = 100
_SYNONYM_LIST = TypeAdapter(list[str], config=ConfigDict(strict=True))  # a [synonyms] value: text in a list


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
        from connectors.detect import detect_kind

        return detect_kind(self.location)

    @property
    def watchable(self) -> bool:
        """Folder sources can be watched; a .zip export changes as a whole."""
        return self.remote is None and self.location.is_dir()

    @property
    def globs(self) -> GlobFilter:
        return GlobFilter(tuple(self.include), tuple(self.exclude))


@dataclass
class SourcesFile:
    """Everything a sources file says: the sources, and where each access scope is visible."""

    sources: list[SourceConfig]
    access: AccessConfig
    synonyms: dict[str, list[str]] = field(default_factory=dict)  # the asker's word → the wiki's words
    channels: ChannelsConfig = field(default_factory=ChannelsConfig)  # `[channels.C…]` (sources.channels)


# -- the file's shape, checked by pydantic (types, unknown keys); meaning is checked below --------


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _SourceTable(_Table):
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


class _ScopeTable(_Table):
    channels: list[str] = Field(default_factory=list)
    users: list[str] = Field(default_factory=list)
    usergroups: list[str] = Field(default_factory=list)


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


def _shape_error(exc: ValidationError, where: str, ids_hint: bool = False) -> SourcesError:
    """One line for the first thing pydantic found wrong: the table, the key and what it must be."""
    errors = exc.errors()
    extra = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden")
    if extra:
        allowed = ", ".join(_SLACK_IDS) if ids_hint else ", ".join(_SourceTable.model_fields)
        return SourcesError(f"{where}: unknown setting(s) {', '.join(extra)} (expected {allowed})")
    key = str(errors[0]["loc"][0])
    if ids_hint:
        return SourcesError(f"{where}: {key} must be a list of ids, e.g. {key} = [\"{_example(key)}\"]")
    got = type(errors[0]["input"]).__name__.replace("str", "text").replace("dict", "table")
    return SourcesError(f"{where}: {key} must be {_EXPECTED.get(key, 'as documented')}, not {got}")


def load_sources(path: Path) -> list[SourceConfig]:
    """Read and validate a sources file (TOML `[[source]]` tables, or YAML `sources:` list)."""
    return read_sources_file(path).sources


def load_access(path: Path) -> AccessConfig:
    """Read and validate a sources file; its `[scopes.*]` tables and `shared_channels`."""
    return read_sources_file(path).access


def load_synonyms(path: Path) -> dict[str, list[str]]:
    """Read and validate a sources file; its `[synonyms]` table (the asker's word → the wiki's)."""
    return read_sources_file(path).synonyms


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
        raise SourcesError(f"{path}: {exc}{_quoting_hint(text, str(exc))}") from None
    if not isinstance(data, dict):
        raise SourcesError(f"{path}: expected a mapping with a sources list (and optionally scopes)")
    unknown = set(data) - set(_TOP_LEVEL)
    if unknown:
        raise SourcesError(f"{path}: unknown top-level setting(s) {', '.join(sorted(map(str, unknown)))} "
                           f"(expected source, scopes, shared_channels, synonyms, channels)")
    entries = data.get("sources") or data.get("source") or []
    if not isinstance(entries, list) or not entries:
        raise SourcesError(f"{path}: no sources defined (expected [[source]] tables)")
    sources = [_source(entry, path.parent, f"{path}: [[source]] #{n}") for n, entry in enumerate(entries, start=1)]
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise SourcesError(f"{path}: source names must be unique ({', '.join(sorted(names))})")
    check_overlaps(sources, str(path))
    access = parse_access(data, str(path))
    return SourcesFile(sources=sources, access=access,
                       synonyms=parse_synonyms(data.get("synonyms"), f"{path}: [synonyms]"),
                       channels=parse_channels(data, str(path), sources, access))


def _quoting_hint(text: str, error: str) -> str:
    """For a TOML line whose key needs quotes (`年假 = [...]`, `time off = [...]`: bare keys are
    ASCII letters, digits, '-', '_' and '.'), how to write it; else nothing."""
    where = re.search(r"at line (\d+)", error)
    lines = text.splitlines()
    if not where or not 0 < int(where.group(1)) <= len(lines):
        return ""
    line = lines[int(where.group(1)) - 1]
    key = line.partition("=")[0].strip()
    if "=" not in line or not key or key[0] in "\"'[#" or re.fullmatch(r"[A-Za-z0-9_.-]+", key):
        return ""
    return f" — a key with spaces or non-ASCII letters goes in quotes: \"{key}\" = …"


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
        try:
            parsed = _ScopeTable.model_validate(table)
        except ValidationError as exc:
            raise _shape_error(exc, here, ids_hint=True) from None
        scopes[name] = ScopeRule(**{key: frozenset(_slack_ids(getattr(parsed, key), key, here)) for key in _SLACK_IDS})
    return AccessConfig(scopes=scopes, shared_channels=shared)


def parse_synonyms(table, where: str) -> dict[str, list[str]]:
    """The `[synonyms]` table: each word or phrase people ask with → the words the wiki uses
    (`vacation = ["annual leave", "paid time off", "PTO"]`), checked for shape here; what the
    keyword leg makes of them (stems, CJK, entries that are one word twice) is checked by
    `indexing.search.synonyms.Synonyms.from_table`, at start too."""
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise SourcesError(f"{where}: expected a table of word = [\"synonym\", …], e.g. vacation = [\"annual leave\"]")
    entries: dict[str, list[str]] = {}
    for key, phrases in table.items():
        here = f"{where} {key!r}"
        if not isinstance(key, str) or not key.strip():
            raise SourcesError(f"{where}: a word must be non-empty text")
        if isinstance(phrases, str):
            raise SourcesError(f"{here}: must be a list, e.g. {key} = [\"{phrases}\"] (a single synonym too goes in [ ])")
        try:
            phrases = _SYNONYM_LIST.validate_python(phrases)
        except ValidationError as exc:
            loc = exc.errors()[0]["loc"]
            if not loc:
                raise SourcesError(f"{here}: must be a non-empty list of words or phrases in quotes") from None
            raise SourcesError(f"{here}: {phrases[loc[0]]!r} is not a word or phrase in quotes") from None
        if not phrases:
            raise SourcesError(f"{here}: must be a non-empty list of words or phrases in quotes")
        if len(phrases) > MAX_SYNONYMS:
            raise SourcesError(f"{here}: {len(phrases)} synonyms; at most {MAX_SYNONYMS} (each one dilutes the question)")
        for phrase in phrases:
            if not phrase.strip():
                raise SourcesError(f"{here}: {phrase!r} is not a word or phrase in quotes")
            if len(phrase) > MAX_PHRASE_CHARS:
                raise SourcesError(f"{here}: a synonym longer than {MAX_PHRASE_CHARS} characters ({phrase[:40]!r}…)")
        entries[" ".join(key.split())] = [" ".join(p.split()) for p in phrases]
    return entries


def _slack_ids(value: list[str], key: str, where: str) -> list[str]:
    pattern, what = _SLACK_IDS[key]
    for item in value:
        if item == WILDCARD and key in ("channels", "users"):
            continue
        if not pattern.match(item):
            raise SourcesError(f"{where}: {key}: {item!r} is not {what}")
    return value


def _example(key: str) -> str:
    return {"channels": "C0123ABCD", "users": "U0123ABCD", "usergroups": "S0123ABCD"}.get(key, "…")


def check_source_name(name: str, where: str = "source") -> None:
    """Source names become document ids ("name:path"): letters, digits, '.', '_', '-'."""
    if not _NAME.match(name):
        raise SourcesError(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-'")


def _check_scope_name(name, where: str) -> None:
    if not isinstance(name, str) or not _SCOPE.match(name):
        raise SourcesError(f"{where}: access scope {name!r} must be letters, digits, '.', '_', ':' or '-'")


def _access(value: str | dict[str, str], kind: str | None, where: str) -> str | dict[str, str]:
    """A source's `access`: one scope, or for Confluence a mapping of space keys to scopes."""
    if isinstance(value, str):
        _check_scope_name(value, f"{where}: access")
        return value
    if kind is not None and kind not in CONFLUENCE_KINDS:
        raise SourcesError(f"{where}: access per space is only for confluence, confluence-html and confluence-xml sources; "
                           f"a {kind} source has one access scope")
    if WILDCARD not in value:
        raise SourcesError(f"{where}: access per space needs a \"*\" entry: the scope of pages in other spaces")
    seen: dict[str, str] = {}
    for space, scope in value.items():
        if not space.strip():
            raise SourcesError(f"{where}: access: space keys must be non-empty strings")
        if space.casefold() in seen:
            raise SourcesError(f"{where}: access: space {space!r} is listed twice (as {seen[space.casefold()]!r})")
        seen[space.casefold()] = space
        _check_scope_name(scope, f"{where}: access of space {space!r}")
    return dict(value)


def _source(entry, base: Path, where: str) -> SourceConfig:
    if not isinstance(entry, dict):
        raise SourcesError(f"{where}: expected a table of settings")
    named = f"{where} ({entry['name']})" if isinstance(entry.get("name"), str) else where
    try:
        table = _SourceTable.model_validate(entry)
    except ValidationError as exc:
        raise _shape_error(exc, named) from None
    name = table.name
    check_source_name(name, where)
    remote = parse_remote(table, table.kind, named)
    if remote is not None:
        return SourceConfig(
            name=name, location=Path(f"confluence:{name}"), kind="confluence", base_url=table.base_url or remote.url,
            access=_access(table.access, "confluence", named), remote=remote,
            schedule=parse_schedule(table.schedule, where=f"{named}: schedule") if table.schedule is not None else None,
            max_delete=parse_max_delete(table.max_delete, where=f"{named}: max_delete"))
    if table.location is None:
        raise SourcesError(f"{named}: location is required")
    kind = table.kind
    if kind is not None and kind not in KINDS:
        raise SourcesError(f"{named}: kind must be one of {', '.join(KINDS)}")
    if kind in CONFLUENCE_KINDS and (table.include or table.exclude):
        raise SourcesError(f"{named}: include and exclude apply to Markdown folders; a {kind} export is read whole")
    access = _access(table.access, kind, named)
    location = Path(table.location).expanduser()
    if not location.is_absolute():
        location = (base / location).resolve()
    if isinstance(access, dict) and kind is None and location.exists():
        from connectors.detect import detect_kind

        try:
            detected = detect_kind(location)
        except (OSError, ValueError, zipfile.BadZipFile):
            detected = None  # unreadable now: the sync will say why
        if detected == "markdown":
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
