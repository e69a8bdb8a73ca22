"""Slack events that change who sees what: a conversation's sharing, a user group's members.

Each drops what `SlackAccess` has cached about that conversation or group (here and, through
Postgres, in every other replica), so the next question there is decided on fresh details.
"""

from __future__ import annotations

from typing import Any

from slack_bolt import App

from bot.slack.services import Services


def register(app: App, services: Services) -> None:
    access = services.access

    @app.event("channel_shared")
    @app.event("channel_unshared")
    def sharing_changed(event: dict[str, Any]) -> None:
        access.forget_conversation(event.get("channel") or "")

    @app.event("subteam_members_changed")
    def members_changed(event: dict[str, Any]) -> None:
        access.forget_group(event.get("subteam_id") or "")

    @app.event("subteam_updated")
    def group_updated(event: dict[str, Any]) -> None:
        access.forget_group((event.get("subteam") or {}).get("id") or "")
