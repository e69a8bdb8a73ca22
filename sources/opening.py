"""Opening the connector a source names: its kind (`connectors.registry`) says which connector
reads it and which of the source's settings it is told.

A kind that may not take access per space (a Markdown folder) refuses it here; an export whose
`access` is per space is opened so each page takes its space's scope, and the REST connector
decides each page's scope itself (its space's, or its restrictions'). A source that cannot be
opened is a `SourcesError` naming it.
"""

from __future__ import annotations

from connectors.connector import Connector
from connectors.registry import REGISTRY
from sources.errors import SourcesError
from sources.source import SourceConfig


def open_connector(source: SourceConfig) -> Connector:
    """The connector for a source, by its kind, told the settings that kind takes."""
    name = source.resolved_kind
    kind = REGISTRY.get(name)
    if isinstance(source.access, dict) and (kind is None or not kind.per_space):
        raise SourcesError(f"source {source.name}: access per space is only for Confluence exports, "
                           f"and {source.location} is a {name} source")
    if kind is None:
        raise SourcesError(f"source {source.name}: unknown kind {name!r}")
    if kind.not_a_path is not None and source.remote is None:  # `kb sync PATH --kind confluence`
        raise SourcesError(f"source {source.name}: {kind.not_a_path}")
    return kind.open(kind.settings(source))
