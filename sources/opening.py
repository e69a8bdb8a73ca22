"""Opening the connector a source names: its kind decides which (`connectors.markdown`, the two
Confluence exports, Confluence over REST), and the source's settings are handed to it.

An export whose `access` is per space is wrapped in `connectors.space_access.SpaceScoped`, so each
page takes its space's scope; the REST connector decides each page's scope itself (its space's,
or its restrictions'). A source that cannot be opened is a `SourcesError` naming it.
"""

from __future__ import annotations

from connectors.connector import Connector
from connectors.space_access import WILDCARD, SpaceScoped
from sources.errors import SourcesError
from sources.source import CONFLUENCE_KINDS, SourceConfig


def open_connector(source: SourceConfig) -> Connector:
    """The connector for a source, by its kind (with per-space access scopes for a Confluence export)."""
    kind = source.resolved_kind
    per_space = source.access if isinstance(source.access, dict) else None
    if per_space is not None and kind not in CONFLUENCE_KINDS:
        raise SourcesError(f"source {source.name}: access per space is only for Confluence exports, "
                           f"and {source.location} is a {kind} source")
    if kind == "confluence":  # decides each page's scope itself: its space's, or its restrictions'
        from connectors.confluence_rest import ConfluenceRest

        if source.remote is None:  # `kb sync PATH --kind confluence`: a server is no path
            raise SourcesError(f"source {source.name}: kind confluence (REST) is configured in the sources file "
                               f"with url, spaces and token_env (docs/confluence.md), not synced from a path")
        spaces = source.access if isinstance(source.access, dict) else {WILDCARD: source.access}
        return ConfluenceRest(source.remote, source=source.name, space_access=spaces)
    access = source.access[WILDCARD] if isinstance(source.access, dict) else source.access
    if kind == "markdown":
        from connectors.markdown import MarkdownFolder

        return MarkdownFolder(source.location, source=source.name, include=source.include, exclude=source.exclude,
                              url_template=source.url_template, access=access, index_drafts=source.index_drafts)
    connector: Connector
    if kind == "confluence-html":
        from connectors.confluence_html import ConfluenceHtmlExport

        connector = ConfluenceHtmlExport(source.location, source=source.name, base_url=source.base_url, access=access,
                                         attachments=source.attachments)
    elif kind == "confluence-xml":
        from connectors.confluence_xml import ConfluenceXmlExport

        connector = ConfluenceXmlExport(source.location, source=source.name, base_url=source.base_url, access=access,
                                        attachments=source.attachments)
    else:
        raise SourcesError(f"source {source.name}: unknown kind {kind!r}")
    return SpaceScoped(connector, per_space) if per_space is not None else connector

