"""What a gaps report shown in a channel or an App Home may list: whose questions, whose answers.

A question, and a person's answer in a handed-over thread, belong to the conversation they were
said in. `kb gaps` in the operator's terminal lists everything; the weekly digest (a channel) and
the admin's App Home list only what was said where their readers could have read it anyway:

- a public channel's, when every scope that channel sees is visible where the report is shown
  (an HR channel's thread, even one narrowed by `[channels.X] sources` to public pages, sees HR's
  scope, so it is not shown in a public digest channel);
- a private channel's, only when the operator opts in (`KB_GAPS_INCLUDE_PRIVATE_CHANNELS`): what
  people say in a private channel stays there, even when it sees nothing but public pages;
- never a direct message's, a Slack Connect channel's, or one whose kind is unknown (rows kept
  before kinds were, a conversation Slack would not describe): unknown counts as private.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

PUBLIC, PRIVATE = "public", "private"  # `bot.records.question_log.ChannelKind` values


@dataclass(frozen=True)
class Listing:
    """Where a report is shown: the operator's terminal (`everything`), or a place where `scopes`
    are visible (None: every scope, a wiki with no access rules) — with whether private channels'
    questions and answers may be listed, and the scopes a channel sees before any narrowing
    (`channel_scopes`; None: questions are judged by their channel's kind alone)."""

    scopes: frozenset[str] | None = None
    include_private: bool = False
    channel_scopes: Callable[[str], Iterable[str]] | None = None
    terminal: bool = False

    @classmethod
    def everything(cls) -> Listing:
        return cls(terminal=True)

    def kind_listed(self, kind: str) -> bool:
        return self.terminal or kind == PUBLIC or (self.include_private and kind == PRIVATE)

    def _visible(self, scopes: Iterable[str]) -> bool:
        return self.scopes is None or set(scopes) <= self.scopes

    def answer(self, said_in_scopes: Iterable[str], kind: str) -> bool:
        """A person's answer, said in a channel of `kind` seeing `said_in_scopes`."""
        return self.terminal or (self.kind_listed(kind) and self._visible(said_in_scopes))

    def question(self, channel_id: str | None, kind: str) -> bool:
        """A logged question, asked in `channel_id` of `kind`."""
        if self.terminal:
            return True
        if not channel_id or not self.kind_listed(kind):
            return False
        if self.channel_scopes is None or self.scopes is None:
            return True
        try:
            return self._visible(self.channel_scopes(channel_id))
        except Exception:  # a channel whose scopes cannot be told is not listed
            return False
