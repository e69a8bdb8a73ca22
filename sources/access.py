"""Audience: who will read an answer, and the one rule that turns "asked here, by this person"
into the access scopes retrieval may search.

Every document carries an access scope (its source's `access`, or for Confluence its space's).
The sources file says where each scope is visible (`[scopes.NAME]`, parsed by
`sources.scopes`):

- `channels`: Slack channel ids where the scope is visible to everyone in the channel
  (`"*"`: every channel of the workspace);
- `users` / `usergroups`: who sees it in a direct message with Docent (`"*"` in `users`: every
  member of the workspace).

`public` is visible everywhere; any other scope is visible only where configured. Channels
shared with other organisations (Slack Connect) see `public` only, or nothing with
`shared_channels = "none"`, whatever else is configured.

An `Audience` is that decision made once — a channel, a person's direct message with their user
groups, a conversation shared with another organisation, or the operator at a terminal (every
scope) — and passed down to retrieval, which searches only `Audience.scopes`.

This module is pure: what Slack knows (is the channel shared? which groups is the user in?) is
looked up by the caller (`bot.slack.audiences`) and passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from connectors.document import PUBLIC
from connectors.space_access import WILDCARD

SHARED_PUBLIC = "public"  # Slack Connect channels see the public scope only (the default)
SHARED_NONE = "none"  # Slack Connect channels get no answers at all
SHARED_CHOICES = (SHARED_PUBLIC, SHARED_NONE)

# The kinds of audience
OPERATOR = "operator"  # `kb ask` without --as-*: every scope
CHANNEL = "channel"  # everyone in a channel reads the answer, whoever asked
DIRECT = "direct message"  # one person (and their user groups), in their DM with Docent
SHARED = "shared"  # a conversation shared with another organisation (Slack Connect)


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


@dataclass(frozen=True)
class Audience:
    """Who will read an answer, and so the access scopes it may draw on.

    `scopes` None is the operator's view (every scope, no filter); an empty tuple means nothing
    may be shown here at all (a Slack Connect conversation with `shared_channels = "none"`).
    """

    kind: str
    scopes: tuple[str, ...] | None = None
    channel: str | None = None
    user: str | None = None
    groups: frozenset[str] = frozenset()

    @classmethod
    def operator(cls) -> Audience:
        return cls(kind=OPERATOR)

    @classmethod
    def limited(cls, scopes: Iterable[str]) -> Audience:
        """The operator's view of these scopes only (`kb eval --scope`, benchmarks)."""
        return cls(kind=OPERATOR, scopes=tuple(scopes))

    @property
    def search_scopes(self) -> list[str] | None:
        """The scopes as retrieval takes them: None searches everything."""
        return None if self.scopes is None else list(self.scopes)

    @property
    def sees_nothing(self) -> bool:
        return self.scopes is not None and not self.scopes

    def sees_all(self, scopes: Iterable[str]) -> bool:
        """Whether every one of `scopes` may be shown to this audience (e.g. all of a source's)."""
        return self.scopes is None or set(scopes) <= set(self.scopes)


def audience_for(
    config: AccessConfig,
    channel_id: str | None,
    user_id: str | None,
    user_groups: Iterable[str],
    is_dm: bool,
    is_shared: bool,
) -> Audience:
    """The audience of a question asked here, by this person (`visible_scopes` decides its scopes)."""
    groups = frozenset(user_groups or ())
    kind = SHARED if is_shared else DIRECT if is_dm else CHANNEL
    scopes = visible_scopes(config, channel_id, user_id, groups, is_dm, is_shared)
    return Audience(kind=kind, scopes=tuple(scopes), channel=channel_id, user=user_id, groups=groups)
