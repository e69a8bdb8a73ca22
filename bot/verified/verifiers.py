"""Who may verify an answer in a channel: `KB_ADMIN_USERS` everywhere, and the channel's own
`verifiers` (`[channels.C…] verifiers = ["U…", "S…"]` in the sources file, `sources.channels`).

Pure: the caller looks up which of the channel's user groups the person is in (Slack's
`usergroups.users.list`, `bot.slack.listeners.verify`), so the rule itself can be read — and tested — here
alone. A group whose members could not be read grants nothing (the caller passes no groups).
"""

from __future__ import annotations

from collections.abc import Collection

from sources import ChannelSettings


def may_verify(user_id: str, user_groups: Collection[str], channel_settings: ChannelSettings,
               admin_users: Collection[str]) -> bool:
    """Whether `user_id` (in `user_groups`) may verify, edit or retire answers in this channel."""
    if not user_id:
        return False
    if user_id in admin_users:
        return True
    named = set(channel_settings.verifiers)
    return user_id in named or bool(named & set(user_groups))

