"""The sources file (`KB_SOURCES`, TOML or YAML): which wikis Docent reads, and how.

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

Paths in `location` are relative to the sources file's folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from connectors.document import PUBLIC

KINDS = ("markdown", "confluence-html", "confluence-xml")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


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
    access: str = PUBLIC
    schedule: str | None = None

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


def load_sources(path: Path) -> list[SourceConfig]:
    """Read and validate a sources file (TOML `[[source]]` tables, or YAML `sources:` list)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SourcesError(f"cannot read sources file {path}: {exc.strerror or exc}") from None
    try:
        if path.suffix.lower() in (".yml", ".yaml"):
            import yaml

            data = yaml.safe_load(text) or {}
            entries = data.get("sources") or data.get("source") or []
        else:
            import tomllib

            entries = tomllib.loads(text).get("source", [])
    except Exception as exc:  # tomllib / yaml syntax errors
        raise SourcesError(f"{path}: {exc}") from None
    if not isinstance(entries, list) or not entries:
        raise SourcesError(f"{path}: no sources defined (expected [[source]] tables)")
    sources = [_source(entry, path.parent, f"{path}: source #{n}") for n, entry in enumerate(entries, start=1)]
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise SourcesError(f"{path}: source names must be unique ({', '.join(sorted(names))})")
    return sources


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
    location = Path(entry["location"]).expanduser()
    if not location.is_absolute():
        location = (base / location).resolve()
    schedule = entry.get("schedule")
    if schedule is not None:
        parse_schedule(str(schedule), where=f"{where} ({name})")
    return SourceConfig(
        name=name, location=location, kind=kind,
        include=list(entry.get("include", [])), exclude=list(entry.get("exclude", [])),
        url_template=entry.get("url_template"), base_url=entry.get("base_url"),
        access=str(entry.get("access", PUBLIC)), schedule=schedule,
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
    if kind == "markdown":
        from connectors.markdown import MarkdownFolder

        return MarkdownFolder(source.location, source=source.name, include=source.include, exclude=source.exclude,
                              url_template=source.url_template, access=source.access)
    if kind == "confluence-html":
        from connectors.confluence_html import ConfluenceHtmlExport

        return ConfluenceHtmlExport(source.location, source=source.name, base_url=source.base_url, access=source.access)
    if kind == "confluence-xml":
        from connectors.confluence_xml import ConfluenceXmlExport

        return ConfluenceXmlExport(source.location, source=source.name, base_url=source.base_url, access=source.access)
    raise SourcesError(f"source {source.name}: unknown kind {kind!r}")
