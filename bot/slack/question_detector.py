"""Is a channel message a question for the wiki? Decides which messages in a help channel
(`respond = "questions"`) Docent answers without being mentioned.

A wrong "yes" puts a bot reply under someone's "thanks!" or "can you review my PR" — it is what
makes teams mute a bot — so the rules favour precision: a message is a question when it asks
(a "?", an interrogative or auxiliary opening, "anyone know…", "how to…", "looking for…",
"need help…", "policy on X?") and is not chatter, thanks, an announcement, a social invitation
("lunch anyone?") or a request for a colleague to do something ("can you review…", "please
approve…"). Mentions of people and bots are the listener's to rule out (`bot.slack.listeners.help_channels`).

Measured, not guessed: `training/question_detection.py` scores these rules on the labelled
messages of `tests/data/channel_messages.jsonl` (a tuning half and a held-out half); the numbers
are in `docs/benchmarks.md`. Plain rules, no model: they are instant, explainable, and on that set
they meet the targets (precision ≥ 0.95, recall ≥ 0.8) on the held-out half as well.
"""

from __future__ import annotations

import re

_OPENERS = (
    r"how|what|what's|whats|wht|where|where's|wheres|when|why|who|whom|which|whose|hw|"
    r"is|are|am|was|were|can|could|do|does|did|should|shall|will|would|may|might|has|have|had|"
    r"any|anyone|anybody|is there|are there|steps|process|policy|rules|guidance|instructions"
)
# An asking opening, after optional greetings or lead-ins ("hey,", "quick q -", "so", "also,",
# "question about the VPN:"). One lead-in at a time, each matched once and never given back: a
# repeat of optional parts (`(?:question(?: about [^:]+)?…)*`) lets the regex engine try
# exponentially many splits of "question about q question about q …" (n = 15: minutes, holding the GIL).
_LEAD_IN = re.compile(
    r"(?:hey|hi|hello|hiya|ok|okay|so|also|and|but|quick (?:q|question)|question about [^:]{1,200}?(?=:)"
    r"|question|q)\b[\s,:!.-]*",
    re.IGNORECASE,
)
MAX_CHARS = 2000  # a message longer than this is judged by its first 2,000 characters (and its last one)
# A question after a statement: "got a new phone, how do I move my authenticator".
_ASKING_CLAUSE = re.compile(r"[,;:]\s*(?:so\s+)?(?:how|what|where|who|which|when) (?:do|does|should|can|is|are) i\b",
                            re.IGNORECASE)
_ASKS = re.compile(rf"(?:{_OPENERS})\b", re.IGNORECASE)
_ASKING_PHRASES = re.compile(
    r"\b(?:any ?one|any ?body|does any ?one|someone) (?:know|have|tell|explain|point|share)\b"
    r"|\bany (?:idea|docs?|guidance|info)\b"
    r"|^(?:i'?m |i am )?(?:looking|searching) for\b|^trying to (?:find|figure out|understand)\b"
    r"|\b(?:not sure|unsure) (?:how|who|what|where|when|whether|if)\b|\bcan'?t figure out\b|\bwondering\b"
    r"|^(?:i )?need (?:help|to know|the)\b|^help\b|^(?:i'?d like|i want) to know\b|^(?:please )?(?:tell|remind) me\b"
    r"|^explain\b|^(?:please )?share the\b.*\b(?:policy|process|link|form|guide|template)\b|\bwhat (?:do|should) i do\b"
    r"|\bwho do i (?:contact|ask|talk to)\b|^how to\b",
    re.IGNORECASE,
)
# Asking about a thing Docent's wiki would hold, in a few words: "jury duty leave?", "bereavement leave policy".
_TOPIC_WORDS = re.compile(r"\b(?:policy|leave|limit|process|procedure|rules?|allowance|stipend|per diem)\b\??$",
                          re.IGNORECASE)

_THANKS_OR_CHATTER = re.compile(
    r"^(?:thanks?|thank you|thx|ty|cheers|ok(?:ay)?|kk|got it|perfect|awesome|cool|nice|great|love|lol|haha|"
    r"yes|no|yep|nope|maybe|sounds good|makes sense|will do|on it|done|agreed|\+1|same|wow|hmm|oh no|yikes|"
    r"never ?mind|all good|it works|fixed it|sorry|oops|welcome|congrats|happy|good morning|morning|hi|hello|"
    r"have a|see you|enjoy|hope|stay safe|bump|brb|back|test)\b",
    re.IGNORECASE,
)
_ANNOUNCEMENT = re.compile(r"^(?:fyi|heads up|reminder|psa|announcement|update|status|new hires)\b", re.IGNORECASE)
# Social invitations: "lunch anyone?", "anyone up for coffee?", "who wants pizza?"
_SOCIAL = re.compile(r"\b(?:lunch|coffee|pizza|drinks?|beers?|party|freezing|cake)\b", re.IGNORECASE)
# A colleague asked to do something: "can you review my PR", "please approve…", "could you hop on a call".
_REQUEST_TO_PERSON = re.compile(
    r"^(?:can|could|would) you (?:review|send|approve|add|hop|join|check|look|take|help me with|sign|forward|invite|ping)\b"
    r"|^(?:please|pls|plz) (?:review|approve|add|send|sign|check|look|ping|forward|invite)\b"
    r"|^(?:ping|dm|let me know|let's)\b",
    re.IGNORECASE,
)
_EMOJI = re.compile(r":[a-z0-9_+-]+:|[\U0001F000-\U0001FAFF\u2600-\u27BF]")


def is_question(text: str) -> bool:
    """Whether a (plain-text) channel message asks something the wiki could answer."""
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS - 1] + text[-1]  # a "?" at its end still counts
    message = " ".join(_EMOJI.sub(" ", text).split()).strip()
    if len(message) < 4:
        return False
    start = _lead_in_end(message)
    said = message[start:] or message  # "hello! where can i…" is judged by "where can i…"
    if _THANKS_OR_CHATTER.match(said) or _ANNOUNCEMENT.match(message) or _REQUEST_TO_PERSON.match(message):
        return False
    if _SOCIAL.search(message) and len(message.split()) <= 7:
        return False
    if message.endswith("?"):
        return True
    return bool(_ASKS.match(message, start) or _ASKING_PHRASES.search(said) or _TOPIC_WORDS.search(message)
                or _ASKING_CLAUSE.search(message))


def _lead_in_end(message: str) -> int:
    """Where the message's greetings and lead-ins end: linear, each lead-in matched once."""
    position = 0
    while (match := _LEAD_IN.match(message, position)) and match.end() > position:
        position = match.end()
    return position
