"""Per-channel settings of the sources file: `[channels.C…]` tables.

    [channels.C0HELPDSK]
    respond = "questions"        # "mention" (default: only when @mentioned) | "questions": every question posted here
    escalate = ["S0PEOPLE1"]     # user groups (S…) or users (U…/W…) asked when the wiki has no answer
    sources = ["handbook"]       # optional: answer only from these sources
    verifiers = ["S0LEADS01"]    # optional: user groups (S…) or users (U…/W…) who may verify answers here

`verifiers`, with `KB_ADMIN_USERS` (who verify everywhere), may mark a message of a thread here
as the verified answer to its question (`bot.verified.verifiers`, `bot.slack.listeners.verify`).

`sources` only ever narrows what a channel's answers may draw on: the channel's audience keeps
the scopes it sees (`sources.access`) *and* those the named sources carry, never more.
Retrieval filters by access scope, so narrowing to a source is exact only when no other source
shares one of its scopes; a `sources` list that cannot be honoured exactly (another source
carries the same scope) or that names a scope the channel cannot see stops Docent at start,
rather than quietly answering from more (or nothing) — give the source an access scope of its own.

Checked with the rest of the sources file (`sources.file.read_sources_file`): an unknown
key, a channel id that is not one, an unknown source name or a malformed escalation id stops
Docent with the file, the table and the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from sources.access import AccessConfig, Audience, visible_scopes
from sources.errors import SourcesError, checked_table
from sources.source import SourceConfig


MENTION: Final = "mention"
QUESTIONS: Final = "questions"
RESPONSES = (MENTION, QUESTIONS)
_CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{2,}$")  # public (C…) or older private (G…) channels; not DMs
_ESCALATE_ID = re.compile(r"^(?:S|U|W)[A-Z0-9]{2,}$")


@dataclass(frozen=True)
class ChannelSettings:
    """How Docent behaves in one channel. The default (a channel with no table) is today's:
    answer when mentioned, hand over to nobody, every visible source."""

    channel: str
    respond: str = MENTION
    escalate: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # empty: every source
    source_scopes: frozenset[str] | None = None  # the scopes `sources` carry; None: no narrowing
    verifiers: tuple[str, ...] = ()  # user groups (S…) and users (U…/W…) who may verify answers here

    @property
    def answers_questions(self) -> bool:
        return self.respond == QUESTIONS

    def narrow(self, audience: Audience) -> Audience:
        """The audience with only the scopes of this channel's sources (never more than it had)."""
        if self.source_scopes is None or audience.scopes is None:
            return audience
        return replace(audience, scopes=tuple(s for s in audience.scopes if s in self.source_scopes))

    def escalation_mentions(self) -> str:
        """The people to ask, as Slack writes mentions: `<!subteam^S…>` for groups, `<@U…>` for users."""
        return " ".join(f"<!subteam^{who}>" if who.startswith("S") else f"<@{who}>" for who in self.escalate)


@dataclass(frozen=True)
class ChannelsConfig:
    """Every `[channels.*]` table, by channel id."""

    channels: Mapping[str, ChannelSettings] = field(default_factory=dict)

    def get(self, channel: str | None) -> ChannelSettings:
        return self.channels.get(channel or "") or ChannelSettings(channel=channel or "")

    def narrow(self, audience: Audience) -> Audience:
        """`audience` narrowed to its channel's sources, if that channel names any."""
        return self.get(audience.channel).narrow(audience) if audience.channel else audience


class _ChannelTable(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    respond: Literal["mention", "questions"] = MENTION
    escalate: list[str] = Field(default_factory=list)
    sources: list[str] | None = None
    verifiers: list[str] = Field(default_factory=list)


_EXPECTED = {
    "respond": "\"mention\" (answer when @mentioned) or \"questions\" (answer every question posted here)",
    "escalate": "a list of user-group (S…) or user (U…) ids, e.g. escalate = [\"S0123ABCD\"]",
    "sources": "a list of source names, e.g. sources = [\"handbook\"]",
    "verifiers": "a list of user-group (S…) or user (U…) ids, e.g. verifiers = [\"S0123ABCD\"]",
}


def parse_channels(data: dict[str, Any], where: str, sources: Sequence[SourceConfig], access: AccessConfig) -> ChannelsConfig:
    """The `channels` tables of a parsed sources file, checked against its sources and scopes."""
    tables = data.get("channels") or {}
    if not isinstance(tables, dict):
        raise SourcesError(f"{where}: channels must be tables [channels.C0123ABCD] with respond, escalate, sources, "
                           f"verifiers")
    by_name = {s.name: s for s in sources}
    parsed: dict[str, ChannelSettings] = {}
    for channel, table in tables.items():
        here = f"{where}: [channels.{channel}]"
        if not isinstance(channel, str) or not _CHANNEL_ID.match(channel):
            raise SourcesError(f"{here}: {channel!r} is not a Slack channel id such as C0123ABCD (not a #name; "
                               f"direct messages take no channel settings)")
        settings = checked_table(_ChannelTable, table, here, "a table with respond, escalate, sources and/or verifiers",
                                 lambda key, _value: _EXPECTED.get(key, "as documented"))
        for key, people in (("escalate", settings.escalate), ("verifiers", settings.verifiers)):
            for who in people:
                if not _ESCALATE_ID.match(who):
                    raise SourcesError(f"{here}: {key}: {who!r} is not a Slack user-group id (S…) or user id (U…) "
                                       f"(not a @handle or a name)")
        parsed[channel] = ChannelSettings(channel=channel, respond=settings.respond, escalate=tuple(settings.escalate),
                                          verifiers=tuple(settings.verifiers),
                                          **_narrowing(settings.sources, by_name, access, channel, here))
    return ChannelsConfig(parsed)


def _narrowing(names: list[str] | None, by_name: Mapping[str, SourceConfig], access: AccessConfig, channel: str,
               where: str) -> dict[str, Any]:
    """`sources` and the scopes they carry, refused where narrowing by scope could not be exact."""
    if names is None:
        return {}
    if not names:
        raise SourcesError(f"{where}: sources = [] would answer from nothing; leave sources out to use every source")
    for name in names:
        if name not in by_name:
            raise SourcesError(f"{where}: sources: no source is named {name!r} (sources: {', '.join(sorted(by_name))})")
    scopes = frozenset().union(*(by_name[name].scopes for name in names))
    for other in sorted(set(by_name) - set(names)):
        shared = sorted(by_name[other].scopes & scopes)
        if shared:
            raise SourcesError(f"{where}: sources: source {other!r} carries the access scope {shared[0]!r} too, so "
                               f"answers here could not be limited to {', '.join(names)}; give "
                               f"{', '.join(names)} an access scope of its own")
    visible = set(visible_scopes(access, channel, None, (), False, False))
    hidden = sorted(scopes - visible)
    if hidden:
        raise SourcesError(f"{where}: sources: the access scope {hidden[0]!r} is not visible in {channel} "
                           f"(add {channel} to [scopes.{hidden[0]}] channels); sources only narrows a channel's scopes")
    return {"sources": tuple(names), "source_scopes": scopes}
