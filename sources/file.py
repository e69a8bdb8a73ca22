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

    [synonyms]                        # the asker's word → the wiki's words (indexing.keyword.synonyms)
    vacation = ["annual leave", "paid time off", "PTO"]
    "年假" = ["annual leave"]          # keys with spaces or CJK characters in quotes

`public` is visible everywhere (in Slack Connect channels too, unless `shared_channels = "none"`);
any other scope only where a `[scopes.NAME]` table says so. Paths in `location` are relative to
the sources file's folder. A YAML file has the same shape: a `sources:` list, a `scopes:`
mapping, `shared_channels` and a `synonyms:` mapping. (In TOML, top-level keys go before the first table.)

Every key is checked when the file is read (pydantic models with unknown keys forbidden and no
type coercion): a typo, a number where text belongs or a bare string where a list belongs
(`exclude = "drafts/**"`, which as a list of characters would exclude every file) stops Docent
at start with the file, the table and the key (a `SourcesError`); so do two sources whose
locations overlap (one inside the other, or the same) with different access, unless one sets
`allow_overlap = true` (`sources.overlaps`). Each kind of table is checked by a module of its own:
`[[source]]` by `sources.source` (schedules and deletion limits by `sources.sync_rules`; globs
follow gitignore rules, `connectors.globs`; a `kind = "confluence"` source is read over REST from
a `url` instead of a `location`, its spaces, cql, credentials' environment variables and
restrictions checked by `sources.remote`), `[scopes.*]` and `shared_channels` by
`sources.scopes`, `[channels.*]` by `sources.channels`, `[synonyms]` by `sources.synonyms`.
This module reads the file and puts them together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sources.access import AccessConfig
from sources.channels import ChannelsConfig, parse_channels
from sources.errors import SourcesError
from sources.overlaps import check_overlaps
from sources.scopes import parse_access
from sources.source import SourceConfig, parse_source
from sources.synonyms import parse_synonyms

_TOP_LEVEL = ("source", "sources", "scopes", "shared_channels", "synonyms", "channels")


@dataclass
class SourcesFile:
    """Everything a sources file says: the sources, and where each access scope is visible."""

    sources: list[SourceConfig]
    access: AccessConfig
    synonyms: dict[str, list[str]] = field(default_factory=dict)  # the asker's word → the wiki's words
    channels: ChannelsConfig = field(default_factory=ChannelsConfig)  # `[channels.C…]` (sources.channels)


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
    sources = [parse_source(entry, path.parent, f"{path}: [[source]] #{n}") for n, entry in enumerate(entries, start=1)]
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
