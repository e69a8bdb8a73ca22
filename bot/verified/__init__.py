"""Verified answers: what people answered once, verified, given again to the same question asked
another way — never to its near miss (`docs/verified-answers.md`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexing.faces import load

if TYPE_CHECKING:  # the face: where each public name lives, loaded on first use (indexing.faces)
    from bot.verified import exchange, store, suggestions
    from bot.verified.lookup import Given, Lookup, Offered
    from bot.verified.records import Citation, VerifiedAnswer
    from bot.verified.store import Change, VerifiedError
    from bot.verified.text import header, slack_user, verified_text
    from bot.verified.verifiers import may_verify

__all__ = ["Change", "Citation", "Given", "Lookup", "Offered", "VerifiedAnswer", "VerifiedError", "exchange", "header",
           "may_verify", "slack_user", "store", "suggestions", "verified_text"]


def __getattr__(name: str) -> object:
    return load(__name__, name)
