"""The sources file's model (`KB_SOURCES`): which wikis Docent reads, how, and who sees what.

A layer of its own between the connectors and the index: `connectors` ← `sources` ← `indexing` ←
`bot`. It reads the file into `SourceConfig`s, the access rules (`AccessConfig`, and the
`Audience` a question is answered for), the channels' settings, the synonyms and each source's
sync rules, and opens the connector a source names (`open_connector`); a connector is handed its
own settings (the config type of its kind, `connectors.registry`) and never reads this package.
The kinds' names (`KINDS`) are the registry's.

This is its public face: `indexing` and `bot` import these names from `sources`, never from the
modules behind it (`tests/test_layering.py`), which import each other directly. One module a
concept, each opening with the part of the file it reads:

- `file` — reading the whole file (`read_sources_file`, `SourcesFile`); its format is there;
- `source` — one `[[source]]` table: `SourceConfig`; `sync_rules` — its `schedule` and
  `max_delete`; `remote` — the settings of a `kind = "confluence"` (REST) source;
  `overlaps` — two sources reading the same files under different access;
- `scopes` — `[scopes.*]` and `shared_channels`; `access` — the rule they make
  (`visible_scopes`) and `Audience`;
- `channels` — `[channels.C…]`; `synonyms` — `[synonyms]`;
- `opening` — the connector for a source; `errors` — `SourcesError`, raised by every check.

The names are imported when the package is (nothing here is heavy: pydantic, which the settings
load anyway; `kb --help` imports none of it).
"""

from __future__ import annotations

from connectors.registry import KINDS
from sources.access import (
    CHANNEL,
    DIRECT,
    SHARED,
    SHARED_NONE,
    AccessConfig,
    Audience,
    ScopeRule,
    audience_for,
    visible_scopes,
)
from sources.channels import ChannelsConfig, ChannelSettings
from sources.errors import SourcesError
from sources.file import SourcesFile, load_access, load_sources, load_synonyms, read_sources_file
from sources.opening import open_connector
from sources.overlaps import adhoc_name, overlap
from sources.source import SourceConfig, check_source_name
from sources.sync_rules import DELETE_WINDOW_SECONDS, DeletionLimit, parse_schedule

__all__ = [
    "CHANNEL",
    "DELETE_WINDOW_SECONDS",
    "DIRECT",
    "KINDS",
    "SHARED",
    "SHARED_NONE",
    "AccessConfig",
    "Audience",
    "ChannelSettings",
    "ChannelsConfig",
    "DeletionLimit",
    "ScopeRule",
    "SourceConfig",
    "SourcesError",
    "SourcesFile",
    "adhoc_name",
    "audience_for",
    "check_source_name",
    "load_access",
    "load_sources",
    "load_synonyms",
    "open_connector",
    "overlap",
    "parse_schedule",
    "read_sources_file",
    "visible_scopes",
]
