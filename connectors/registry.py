"""Every kind of source Docent reads, one entry each: its name (as the sources file writes it,
`kind = "markdown"`), the settings its connector is told (its config type), how its connector is
made from them, and how a path of that kind is recognised (`connectors.detect`).

A new kind of source is one entry here and its connector (and, if it is told a setting no kind
was told before, that key in `sources.source`): the sources file's model (`sources`) takes the
names, checks and opens every kind through these entries, and spells none of them
(`tests/test_registry.py`).

Each config type is a dataclass whose fields are named as the source's own settings
(`sources.SourceConfig`: `name`, `location`, `access`, …), so a source hands a kind exactly the
settings it takes (`Kind.settings`), and nothing here reads the sources file. The connectors are
imported only when a source of their kind is opened (their parsers are heavy; `kb --help` and the
sources file need none of them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from connectors.confluence.config import ConfluenceRemote
from connectors.connector import Connector
from connectors.detect import Shallow, is_any_folder, is_html_export, is_never_a_path, is_xml_export, shallow
from connectors.space_access import WILDCARD, SpaceScoped

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Settings = TypeVar("Settings", bound="DataclassInstance")


@dataclass(frozen=True)
class FolderSettings:
    """A Markdown folder's settings (`connectors.markdown.MarkdownFolder`)."""

    name: str
    location: Path
    access: str | dict[str, str]  # one scope (per space is refused before a folder is opened)
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    url_template: str | None = None
    index_drafts: bool = False


@dataclass(frozen=True)
class ExportSettings:
    """A Confluence export's settings, HTML or XML (its folder or .zip, how to cite its pages)."""

    name: str
    location: Path
    access: str | dict[str, str]  # one scope, or one per space key ("*": every other space)
    base_url: str | None = None
    attachments: bool = False


@dataclass(frozen=True)
class RemoteSettings:
    """A Confluence site's settings, read over REST (`connectors.confluence.rest.ConfluenceRest`)."""

    name: str
    remote: ConfluenceRemote | None  # None: a path was given (`kb sync PATH --kind confluence`), no site
    access: str | dict[str, str]


@dataclass(frozen=True)
class Kind(Generic[Settings]):
    """One kind of source: what it is called, what it is told, how it is opened and recognised."""

    name: str
    config: type[Settings]
    open: Callable[[Settings], Connector]
    detect: Callable[[Shallow], bool]  # whether a folder or .zip is of this kind
    per_space: bool = False  # may its access be per Confluence space ({space key: scope, "*": …})
    not_a_path: str | None = None  # why this kind is never synced from a path (None: it is read from one)

    def settings(self, source: object) -> Settings:
        """This kind's settings, each taken from the attribute of the same name of `source`."""
        return self.config(**{each.name: getattr(source, each.name) for each in fields(self.config)})

    def takes(self, setting: str) -> bool:
        """Whether this kind is told that setting (e.g. `include`, `attachments`)."""
        return setting in {each.name for each in fields(self.config)}


def _open_folder(settings: FolderSettings) -> Connector:
    from connectors.markdown import MarkdownFolder

    access = settings.access[WILDCARD] if isinstance(settings.access, dict) else settings.access
    return MarkdownFolder(settings.location, source=settings.name, include=settings.include,
                          exclude=settings.exclude, url_template=settings.url_template, access=access,
                          index_drafts=settings.index_drafts)


def _open_html_export(settings: ExportSettings) -> Connector:
    from connectors.confluence.html_export import ConfluenceHtmlExport

    return _space_scoped(ConfluenceHtmlExport(settings.location, source=settings.name, base_url=settings.base_url,
                                              access=_one_scope(settings.access), attachments=settings.attachments),
                         settings.access)


def _open_xml_export(settings: ExportSettings) -> Connector:
    from connectors.confluence.xml_export import ConfluenceXmlExport

    return _space_scoped(ConfluenceXmlExport(settings.location, source=settings.name, base_url=settings.base_url,
                                             access=_one_scope(settings.access), attachments=settings.attachments),
                         settings.access)


def _open_rest(settings: RemoteSettings) -> Connector:
    """The REST connector decides each page's scope itself: its space's, or its restrictions'."""
    from connectors.confluence.rest import ConfluenceRest

    if settings.remote is None:
        raise ValueError(f"{settings.name} has no site to read")  # refused before, with `not_a_path`
    spaces = settings.access if isinstance(settings.access, dict) else {WILDCARD: settings.access}
    return ConfluenceRest(settings.remote, source=settings.name, space_access=spaces)


def _one_scope(access: str | dict[str, str]) -> str:
    return access[WILDCARD] if isinstance(access, dict) else access


def _space_scoped(connector: Connector, access: str | dict[str, str]) -> Connector:
    """An export whose access is per space: each page takes its space's scope."""
    return SpaceScoped(connector, access) if isinstance(access, dict) else connector


MARKDOWN = Kind("markdown", FolderSettings, _open_folder, is_any_folder)
CONFLUENCE_HTML = Kind("confluence-html", ExportSettings, _open_html_export, is_html_export, per_space=True)
CONFLUENCE_XML = Kind("confluence-xml", ExportSettings, _open_xml_export, is_xml_export, per_space=True)
CONFLUENCE = Kind("confluence", RemoteSettings, _open_rest, is_never_a_path, per_space=True,
                  not_a_path="kind confluence (REST) is configured in the sources file with url, spaces and "
                             "token_env (docs/confluence.md), not synced from a path")

REGISTRY: dict[str, Kind[Any]] = {kind.name: kind for kind in (MARKDOWN, CONFLUENCE_HTML, CONFLUENCE_XML, CONFLUENCE)}
KINDS = tuple(REGISTRY)  # the names, in the order they are listed to people
# The order a path is recognised in: each export by its own files; what none claims is Markdown.
DETECTION: tuple[Kind[Any], ...] = (CONFLUENCE_XML, CONFLUENCE_HTML, CONFLUENCE, MARKDOWN)


def detect_kind(path: Path | str) -> str:
    """The kind of a folder or a .zip ("confluence-xml", "confluence-html" or "markdown")."""
    with shallow(path) as held:
        return next(kind.name for kind in DETECTION if kind.detect(held))
