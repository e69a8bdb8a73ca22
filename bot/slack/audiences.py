"""Audiences in Slack: the pure rule of `sources.access.audience_for`, fed with what only Slack
knows, each looked up with the bot token and cached for a short time (`CACHE_SECONDS`):

- whether a conversation is shared with another organisation (Slack Connect): `conversations.info`
  says `is_ext_shared` or `is_pending_ext_shared`, or `is_shared` without `is_org_shared` (a channel
  shared only between workspaces of one Enterprise Grid organisation is not Slack Connect);
- whether it is the asker's own direct message with Docent — `/kb` commands and buttons do not say
  so, `conversations.info` does (`is_im`, and `user` is the asker);
- which of the configured user groups a person is in: `usergroups.users.list` for each group the
  sources file names.

Slack's own events cut the wait short: `channel_shared` / `channel_unshared` drop what is cached
about that conversation, `subteam_members_changed` / `subteam_updated` what is cached about that
group, so the next question there is decided on fresh details (Slack sends the channel events
only for channels Docent is a member of; elsewhere the cache runs out within `CACHE_SECONDS`).
Slack sends an event to one process only: with several `kb serve` replicas, the one that gets it
tells the others through Postgres (`SlackAccess.announce`, set by `bot.serve.start_listening`,
which also passes their notices to `forget_cached`; `indexing.storage.notify`).

The same `conversations.info` says what kind of conversation a question came from (`kind_of`:
public channel, private channel or group DM, direct message, shared), which the query log keeps so
that only questions asked in public channels become examples for everyone (`bot.slack.listeners.home_tab`).

Lookups fail closed: a conversation whose details cannot be read counts as shared with another
organisation (public scopes only, or nothing with `shared_channels = "none"`), and a group whose
members cannot be read grants nothing. The reason is logged as a warning. A rate-limited or
5xx lookup is first retried by the Web API client itself (`bot.slack.client.retry_handlers`: after the
`Retry-After` Slack sends), so only a limit that outlasts the retries refuses access. With no `[scopes]`
configured and `shared_channels = "public"` every answer is public-only anyway, and nothing is
looked up. Without a client (`kb ask --as-channel/--as-user` with no SLACK_BOT_TOKEN) nothing is
looked up either: a conversation counts as shared only when the caller says so, and user groups
grant nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from bot.records import ChannelKind
from sources import CHANNEL, DIRECT, SHARED, SHARED_NONE, AccessConfig, Audience, ChannelsConfig, audience_for
from connectors.document import PUBLIC

if TYPE_CHECKING:
    from slack_sdk import WebClient

log = logging.getLogger(__name__)

CACHE_SECONDS = 60.0  # how long a channel's shared flag and a group's members are trusted
FAILURE_SECONDS = 10.0  # how long a failed lookup is remembered before it is tried again

T = TypeVar("T")


@dataclass(frozen=True)
class Conversation:
    """What matters about a conversation for access: shared with another organisation, and for a
    direct message with Docent, the person on the other side."""

    shared: bool
    im_user: str | None = None
    kind: ChannelKind = ChannelKind.UNKNOWN


def conversation_kind(info: dict[str, Any]) -> ChannelKind:
    """From a `conversations.info` channel object: what kind of conversation it is. Public only
    when Slack says so in as many words (`is_channel`, `is_private` false); anything it leaves
    unsaid is UNKNOWN, never public."""
    if shared_with_other_organisations(info):
        return ChannelKind.SHARED
    if info.get("is_im"):
        return ChannelKind.DM
    if info.get("is_mpim") or info.get("is_group") or info.get("is_private"):
        return ChannelKind.PRIVATE
    if info.get("is_channel") and info.get("is_private") is False:
        return ChannelKind.PUBLIC
    return ChannelKind.UNKNOWN


# A message event's `channel_type` that settles the kind without a lookup: only the private ones
# (a "channel" may still be shared with another organisation, which `conversations.info` says).
PRIVATE_CHANNEL_TYPES = {"im": ChannelKind.DM, "mpim": ChannelKind.PRIVATE, "group": ChannelKind.PRIVATE}


def shared_with_other_organisations(info: dict[str, Any]) -> bool:
    """From a `conversations.info` channel object: is this a Slack Connect conversation?"""
    if info.get("is_ext_shared") or info.get("is_pending_ext_shared"):
        return True
    return bool(info.get("is_shared")) and not info.get("is_org_shared")


class SlackAccess:
    """The audience of a question asked in Slack: where, by whom, and so which scopes it may search.

    `announce(kind, key)`, when set (`kb serve`: `bot.serve.start_listening`), tells the other
    replicas that a Slack event dropped a cached entry here; they drop theirs (`forget_cached`)."""

    def __init__(self, config: AccessConfig, client: WebClient | None, ttl: float = CACHE_SECONDS,
                 clock: Callable[[], float] = time.monotonic, channels: ChannelsConfig | None = None) -> None:
        self.config = config
        self.channels = channels or ChannelsConfig()  # a channel's `sources` narrow its scopes further
        self.client = client
        self.ttl = ttl
        self.clock = clock
        self._cache: dict[tuple[str, str], tuple[float, Any]] = {}
        self._forgotten: dict[tuple[str, str], int] = {}  # times each entry was dropped by an event
        self._lock = threading.Lock()
        self.announce: Callable[[str, str], None] | None = None

    @property
    def only_public(self) -> bool:
        """Nothing configured that could make a conversation see more, or less, than `public`."""
        return not self.config.scopes and self.config.shared_channels != SHARED_NONE

    def audience(self, channel: str | None, user: str | None, *, is_dm: bool | None = None,
                 said_shared: bool = False, narrow: bool = True) -> Audience:
        """Who reads an answer to `user` asking in `channel` (no scopes: answer nothing here).

        `is_dm`: whether this is the user's direct message with Docent; None lets
        `conversations.info` decide. `said_shared`: the caller already knows the conversation is
        shared with another organisation (an event envelope's `is_ext_shared_channel`, `kb ask --shared`).
        `narrow=False`: the scopes the conversation sees before its `[channels.X] sources` narrow
        what is searched there — what was said in it belongs to those (`bot.slack.listeners.answered_gaps`).
        """
        finish = self.channels.narrow if narrow else (lambda audience: audience)
        if self.only_public:
            kind = SHARED if said_shared else DIRECT if is_dm else CHANNEL
            return finish(Audience(kind=kind, scopes=(PUBLIC,), channel=channel, user=user))
        conversation = self.conversation(channel) if channel else Conversation(shared=False)
        if is_dm is None:
            is_dm = bool(user) and conversation.im_user == user
        groups = self.groups_of(user) if is_dm and user else set()
        return finish(audience_for(self.config, channel, user, groups, is_dm, said_shared or conversation.shared))

    def scopes(self, channel: str | None, user: str | None, *, is_dm: bool | None = None,
               said_shared: bool = False) -> list[str]:
        """The visible scopes of `audience(...)`, sorted (an empty list: answer nothing here)."""
        return list(self.audience(channel, user, is_dm=is_dm, said_shared=said_shared).scopes or ())

    def conversation(self, channel: str) -> Conversation:
        return self._cached("conversation", channel, self._read_conversation)

    def kind_of(self, channel: str | None, *, is_dm: bool | None = None, said_shared: bool = False,
                channel_type: str | None = None) -> ChannelKind:
        """What kind of conversation `channel` is, for the query log: the caller's knowledge first
        (shared, the asker's DM, a private `channel_type`), else `conversations.info` (cached, as
        for `audience`). A conversation that cannot be read is UNKNOWN."""
        if said_shared:
            return ChannelKind.SHARED
        if is_dm:
            return ChannelKind.DM
        if channel_type in PRIVATE_CHANNEL_TYPES:
            return PRIVATE_CHANNEL_TYPES[channel_type]
        if not channel or self.client is None:
            return ChannelKind.UNKNOWN
        return self.conversation(channel).kind

    def groups_of(self, user: str) -> set[str]:
        """The configured user groups `user` belongs to (only those: others grant nothing)."""
        return {group for group in sorted(self.config.usergroups) if user in self.members(group)}

    def members(self, group: str) -> frozenset[str]:
        return self._cached("usergroup", group, self._read_members)

    def forget_conversation(self, channel: str) -> None:
        """Slack said the conversation's sharing changed: look it up afresh next time, here and
        in every other replica."""
        self.forget_cached("conversation", channel)
        self._tell_others("conversation", channel)

    def forget_group(self, group: str) -> None:
        """Slack said the user group's members changed: read them afresh next time, here and in
        every other replica."""
        self.forget_cached("usergroup", group)
        self._tell_others("usergroup", group)

    def forget_cached(self, kind: str, key: str) -> None:
        """Drop one cached entry ("conversation" or "usergroup") here only: another replica got
        the Slack event and announced it."""
        with self._lock:
            self._cache.pop((kind, key), None)
            self._forgotten[(kind, key)] = self._forgotten.get((kind, key), 0) + 1

    def _tell_others(self, kind: str, key: str) -> None:
        if self.announce is None:
            return
        try:
            self.announce(kind, key)
        except Exception as exc:  # the others' entries then run out within CACHE_SECONDS
            log.warning("could not tell the other replicas to drop cached %s %s (%s)", kind, key, _reason(exc))

    # -- Slack lookups --------------------------------------------------------------------------

    def _read_conversation(self, channel: str) -> tuple[Conversation, bool]:
        if self.client is None:  # offline (`kb ask` without a token): not shared unless the caller says so
            return Conversation(shared=False), True
        try:
            info = self.client.conversations_info(channel=channel)["channel"] or {}
        except Exception as exc:
            log.warning("could not read conversation %s (%s): treating it as shared with another "
                        "organisation, so only public scopes apply there", channel, _reason(exc))
            return Conversation(shared=True), False
        im_user = info.get("user") if info.get("is_im") else None
        return Conversation(shared=shared_with_other_organisations(info), im_user=im_user,
                            kind=conversation_kind(info)), True

    def _read_members(self, group: str) -> tuple[frozenset[str], bool]:
        if self.client is None:  # offline: groups cannot be read, so they grant nothing
            return frozenset(), True
        try:
            users = self.client.usergroups_users_list(usergroup=group)["users"] or []
        except Exception as exc:
            log.warning("could not read the members of user group %s (%s): it grants no scopes until it can be read",
                        group, _reason(exc))
            return frozenset(), False
        return frozenset(users), True

    def _cached(self, kind: str, key: str, read: Callable[[str], tuple[T, bool]]) -> T:
        """`read(key)`'s value, cached per (kind, key). One cache holds every kind, so it stores Any;
        a kind is only ever read by one `read`, so what it holds is that `read`'s T."""
        now = self.clock()
        with self._lock:
            hit = self._cache.get((kind, key))
            if hit is not None and hit[0] > now:
                cached: T = hit[1]
                return cached
            forgotten = self._forgotten.get((kind, key), 0)
        value, ok = read(key)
        with self._lock:
            # A lookup that was under way when an event dropped the entry may have read the old
            # state: use it for this question, but do not keep it.
            if self._forgotten.get((kind, key), 0) == forgotten:
                self._cache[(kind, key)] = (now + (self.ttl if ok else min(self.ttl, FAILURE_SECONDS)), value)
        return value


def _reason(exc: Exception) -> str:
    """Why a lookup failed, for the log: Slack's error code, and for a rate limit that the client's
    retries (`bot.slack.client.retry_handlers`, honouring Retry-After) did not outlast, that too."""
    response = getattr(exc, "response", None)
    if response is not None:
        try:
            error = str(response.get("error") or type(exc).__name__)
            status = getattr(response, "status_code", None)
            if status == 429:
                return f"{error}: Slack's rate limit (HTTP 429), still after retrying as its Retry-After asked"
            if isinstance(status, int) and status >= 500:
                return f"{error}: HTTP {status} from Slack, still after retrying"
            return error
        except Exception:
            pass
    return type(exc).__name__
