"""Slack's AI-app surface: a new assistant thread gets suggested prompts drawn from the wiki.

Slack opens an assistant thread (the ✨ AI apps button, or Docent's split view) with
`assistant_thread_started`; Docent answers with up to `MAX_PROMPTS` suggested prompts
(`assistant.threads.setSuggestedPrompts`): the questions people ask most in public channels that
were answered and whose pages the user may see (`bot.slack.listeners.home_tab.example_questions`: never a
question from a private channel or a DM), else "what does the wiki say about <page>?" for pages
visible to them. Questions typed in the thread arrive as direct
messages in a thread and are answered by the DM path (`bot.slack.listeners.questions`), through
`bot.slack.streaming` — which shows "Searching the wiki…" (`assistant.threads.setStatus`) and
streams an LLM's answer. The prompts are looked up on the answers pool.
Workspaces without the AI-app feature never send these events; nothing else depends on them.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient

from bot import messages
from bot.slack.listeners.home_tab import example_questions, visible_in_dm
from bot.slack.services import Services

log = logging.getLogger(__name__)

MAX_PROMPTS = 4  # Slack shows at most four
TITLE_CHARS = 75  # a prompt's title as Slack shows it


def register(app: App, services: Services) -> None:
    """A new assistant thread gets its prompts; a changed context needs nothing."""

    @app.event("assistant_thread_started")
    def thread_started(event: dict[str, Any], client: WebClient) -> None:
        services.answers.submit(start_thread, services, client, event.get("assistant_thread") or {})

    @app.event("assistant_thread_context_changed")
    def context_changed(event: dict[str, Any]) -> None:
        pass  # the channel the user is looking at changes nothing: answers depend on the DM's scopes


def start_thread(services: Services, client: WebClient, thread: dict[str, Any]) -> None:
    user, channel, ts = thread.get("user_id"), thread.get("channel_id"), thread.get("thread_ts")
    if not (user and channel and ts):
        return
    try:
        prompts = suggested_prompts(services, user)
        client.assistant_threads_setSuggestedPrompts(channel_id=channel, thread_ts=ts, title=messages.PROMPTS_TITLE,
                                                     prompts=prompts)
    except Exception:
        log.exception("could not suggest prompts in the assistant thread %s/%s", channel, ts)


def suggested_prompts(services: Services, user: str) -> list[dict[str, str]]:
    """Prompts for `user`, from what is visible in their direct message with Docent only."""
    visible = visible_in_dm(services, user)
    prompts = [{"title": _clip(q), "message": q} for q in example_questions(services.db, visible, MAX_PROMPTS)]
    if len(prompts) < MAX_PROMPTS:
        for title in dict.fromkeys(services.kb.page_titles(visible, MAX_PROMPTS * 3)):
            if len(prompts) >= MAX_PROMPTS:
                break
            prompts.append({"title": _clip(f"About {title}"), "message": messages.prompt_about(title)})
    return prompts


def _clip(text: str) -> str:
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1].rstrip() + "…"
