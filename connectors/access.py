"""Who may see which access scope, and the one rule that turns "asked here, by this person" into
the scopes retrieval may search.

Every document carries an access scope (its source's `access`, or for Confluence its space's).
The sources file says where each scope is visible (`[scopes.NAME]`, parsed in
`connectors.sources`):

- `channels`: Slack channel ids where the scope is visible to everyone in the channel
  (`"*"`: every channel of the workspace);
- `users` / `usergroups`: who sees it in a direct message with Docent (`"*"` in `users`: every
  member of the workspace).

`public` is visible everywhere; any other scope is visible only where configured. Channels
shared with other organisations (Slack Connect) see `public` only, or nothing with
`shared_channels = "none"`, whatever else is configured.

This module is pure: what Slack knows (is the channel shared? which groups is the user in?) is
looked up by the caller (`bot.access`) and passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from connectors.document import PUBLIC

WILDCARD = "*"
SHARED_PUBLIC = "public"  # Slack Connect channels see the public scope only (the default)
SHARED_NONE = "none"  # Slack Connect channels get no answers at all
SHARED_CHOICES = (SHARED_PUBLIC, SHARED_NONE)


@dataclass(frozen=True)
class ScopeRule:
    """Where one scope is visible: channel ids, and for direct messages user ids and user-group ids."""

    channels: frozenset[str] = frozenset()
    users: frozenset[str] = frozenset()
    usergroups: frozenset[str] = frozenset()

    def in_channel(self, channel_id: str | None) -> bool:
        return bool(channel_id) and (channel_id in self.channels or WILDCARD in self.channels)

    def in_dm(self, user_id: str | None, user_groups: Iterable[str]) -> bool:
        if not user_id:
            return False
        return user_id in self.users or WILDCARD in self.users or bool(self.usergroups.intersection(user_groups))


@dataclass(frozen=True)
class AccessConfig:
    """The `[scopes.*]` tables and `shared_channels` of the sources file. The default (no sources
    file, or no `[scopes]`): only `public` is visible in Slack."""

    scopes: Mapping[str, ScopeRule] = field(default_factory=dict)
    shared_channels: str = SHARED_PUBLIC

    @property
    def usergroups(self) -> frozenset[str]:
        """Every user-group id the configuration mentions (the only groups worth looking up)."""
        return frozenset(g for rule in self.scopes.values() for g in rule.usergroups)


def visible_scopes(
    config: AccessConfig,
    channel_id: str | None,
    user_id: str | None,
    user_groups: Iterable[str],
    is_dm: bool,
    is_shared: bool,
) -> list[str]:
    """The access scopes a question may search, sorted; an empty list means "answer nothing here".

    - Shared with another organisation (Slack Connect, channel or DM): `public` only, or nothing
      when `shared_channels = "none"`.
    - In a channel: `public` and the scopes configured for that channel, whoever asks — everyone
      in the channel sees the answer.
    - In a direct message: `public` and the scopes of the user and of their user groups.
    """
    if is_shared:
        return [] if config.shared_channels == SHARED_NONE else [PUBLIC]
    groups = frozenset(user_groups or ())
    visible = {PUBLIC}
    for name, rule in config.scopes.items():
        if rule.in_dm(user_id, groups) if is_dm else rule.in_channel(channel_id):
            visible.add(name)
    return sorted(visible)
