"""What Docent says to people: every sentence a person reads from it in Slack or at `kb ask`.

The framing of an answer (not found, not sure, the language model's fallback), refusals, errors,
confirmations, help and prompts — in one place, to read in one voice and change in one place.
Fixed sentences are constants; a sentence with a blank is a function named for what it says, and
takes its blanks already escaped for where they are shown (`bot.slack.mrkdwn`), as the callers do.

Not here: labels and headings that only read beside their layout (Block Kit headers, button texts,
the 👎 form's fields, the gaps report, `/kb status` and `/kb channel` lines, `kb status`), and the
operator's diagnostics (`kb sync`'s checks, `kb serve`'s start-up errors, logs), which stay beside
the check that makes them. Imports nothing: the CLI loads it before `kb --help`.
"""

from __future__ import annotations

# -- answers (Slack and `kb ask`) --------------------------------------------------------------

NOT_FOUND_REPLY = "I could not find this in the knowledge base."  # also what the language model is told to reply
LINK_REMOVED = "(link removed)"  # in place of a link in model text to anything but the answer's sources
EMPTY_QUESTION = "the question is empty"


def not_found(with_nearest_pages: bool) -> str:
    """The reply of a not-found outcome; the nearest pages, if any, are listed under it."""
    return NOT_FOUND_REPLY + (" The nearest pages are listed below." if with_nearest_pages else "")


def uncertain_line(n: int) -> str:
    """The first line of an uncertain answer: the passage may not answer it, and where to look."""
    return f"I'm not sure this answers it — check [{n}]."


def model_failed(reason: str) -> str:
    """The note on an extractive answer given because the language model did not answer."""
    return f"The language model did not answer ({reason}); showing the most relevant passages instead."


def model_set_aside(why: str) -> str:
    """The note on an extractive answer given because the model's answer did not hold to its pages
    (`why`: bot.answering.grounding's detail, "the model's answer said 30 days; the cited page does not")."""
    return f"Showing the most relevant passages instead: {why}."


def answer_shortened(where: str) -> str:
    """The last line of an answer cut to fit Slack: `where` is its first source (a link or a title)."""
    return f"_…answer shortened: read the rest in {where}_"


# -- asking in Slack -----------------------------------------------------------------------------

EMPTY_MENTION = "Hi! Ask me a question about the wiki, e.g. `how many vacation days do I get?` — or try `/kb help`."
SEARCHING = "Searching the wiki…"  # an assistant thread's status while the answer is written
SEARCHING_PLACEHOLDER = "🔎 Searching the wiki…"  # the message an answer replaces, where it cannot be streamed
WITHDRAWN = "_(This answer was withdrawn: see the message below.)_"  # a partial answer that could not be deleted
NOT_HERE = ("I don't answer questions in conversations shared with other organisations (Slack Connect). "
            "Ask me in one of your organisation's own channels, or in a direct message.")
PROMPTS_TITLE = "Ask the wiki — for example:"  # above the suggested prompts of an assistant thread


def prompt_about(title: str) -> str:
    """A suggested prompt of an assistant thread, about a page."""
    return f"What does the wiki say about {title}?"


# -- when something fails --------------------------------------------------------------------------

UNAVAILABLE = ("⚠️ The knowledge base is temporarily unavailable (its database cannot be reached). "
               "Please try again in a minute.")
UNAVAILABLE_VOTE = ("⚠️ The knowledge base is temporarily unavailable (its database cannot be reached), so your "
                    "vote was not recorded. Please try again in a minute.")


def apology(ref: str) -> str:
    """Any other failure: `ref` finds the traceback in the log."""
    return (f"Sorry — something went wrong on my side and I could not answer this. Please try again in a "
            f"minute; if it keeps happening, tell the Docent admins the reference `{ref}`.")


# -- /kb -----------------------------------------------------------------------------------------------

HELP = """*Docent* answers questions from the company wiki, with links to the pages it used.
• Mention me with a question, e.g. `@Docent how many vacation days do I get?` — I reply in the thread, and answer follow-ups in that thread without another mention.
• Send me a direct message.
• `/kb ask <question>` — a private answer, with a button to share it in the channel.
• `/kb status` — what is indexed, and when it was last synced.
• `/kb resync [source] [--allow-deletes]` — re-read the wiki now (admins only; a sync that would delete most of a source deletes nothing unless `--allow-deletes`).
• `/kb channel` — how I behave in this channel: answer mentions or every question, who I hand over to (admins only).
• `/kb help` — this message.
Every answer has 👍 / 👎 buttons: the wiki owners read them, and the questions I could not answer."""
ASK_USAGE = "Usage: `/kb ask <question>`, e.g. `/kb ask how do I expense a taxi?`"
LOOKING_IT_UP = "🔎 Looking that up…"  # `/kb ask`'s acknowledgement, replaced by the answer
CHANNEL_ADMINS_ONLY = "Sorry, `/kb channel` is for Docent admins only."
RESYNC_ADMINS_ONLY = "Sorry, `/kb resync` is for Docent admins only. Ask one of them, or a wiki owner, to run it."


def unknown_subcommand(name: str) -> str:
    return f"I don't know `/kb {name}`.\n\n{HELP}"


def which_source(names: str) -> str:
    return f"Which source? `/kb resync <source>`, with one of: {names}."


def no_such_source(name: str, names: str) -> str:
    return f"There is no source `{name}`. Known sources: {names}."


def resync_starting(name: str, deletions_allowed: bool) -> str:
    return f"🔄 Starting a resync of `{name}`" + (" (deletions allowed)" if deletions_allowed else "") + "…"


def resync_progress(name: str, done: int, total: int) -> str:
    return f"🔄 Resync of `{name}`: {done} of {total} documents so far…"


def resync_busy(name: str) -> str:
    return (f"Another sync of `{name}` is running right now (the watcher, the schedule or "
            f"another admin); its changes will be indexed when it ends.")


def resync_refused(name: str, reason: str) -> str:
    return (f"⚠️ The resync of `{name}` deleted nothing: {reason}. "
            f"If those pages are meant to go, run `/kb resync {name} --allow-deletes`.")


def resync_failed(name: str, ref: str) -> str:
    return f"❌ The resync of `{name}` failed. {apology(ref)}"


def resync_finished(summary: str) -> str:
    return f"✅ Resync finished — {summary}"


# -- votes, the 👎 note, Share -------------------------------------------------------------------------

VOTE_RECORDED = "Thanks — your vote was recorded."
SHARE_GONE = "Sorry, I can no longer find this answer to share it — please ask again."
SHARE_REFUSED = ("I can't share this answer here: it uses pages that are not visible in this conversation. "
                 "It stays visible only to you.")
NOTE_UNAVAILABLE = "the knowledge base is temporarily unavailable. Please send it again in a minute"
WHAT_YOU_WROTE = "What you wrote:"  # above the 👎 note quoted back, when it could not be saved


def votes_recorded(up: int, down: int) -> str:
    return f"Feedback recorded: 👍 {up} · 👎 {down} — thank you"


def note_failed(ref: str) -> str:
    return f"something went wrong on my side (reference `{ref}`)"


def note_not_saved(why: str) -> str:
    """To the person whose 👎 note was lost (`why`: `NOTE_UNAVAILABLE` or `note_failed`)."""
    return f"Sorry — your 👎 note could not be saved: {why}."


# -- hand-overs and the wiki's gaps ----------------------------------------------------------------

GAP_OFFER_TO_ANSWERER = ("Thanks for answering! The wiki had no answer to this. Add the question and your answer to the "
                         "wiki's gaps, so a wiki owner can write it up?")
GAP_GONE = "Sorry, I can no longer find this thread's answer."
GAP_NOT_YOURS = "Only the person who asked and the person who answered can add this to the wiki's gaps."
GAP_ALREADY_ADDED = "Already in the wiki's gaps."
GAP_NOT_HERE = "Answers in this channel are not added to the wiki's gaps."
GAP_ADDED = ("✅ Added to the wiki's gaps: the wiki owners see it in `kb gaps` and the weekly digest, with a draft "
             "page to edit.")


def handover(mentions: str, voted_down: bool) -> str:
    """Asking a channel's `escalate` people: the wiki had no answer, or its answer was voted down."""
    if voted_down:
        return f"That answer didn't help — {mentions} can you help?"
    return f"I couldn't find this in the wiki — {mentions} can you help?"


def gap_offer_to_asker(answered_by: str) -> str:
    return (f"<@{answered_by}> answered your question. If that answers it, add it to the wiki's gaps, "
            "so a wiki owner can write it up?")


def gap_added_by(user: str) -> str:
    return f"Already in the wiki's gaps (added by <@{user}>)."


# -- verified answers (bot.slack.listeners.verify) ------------------------------------------------

VERIFY_LOADING = "Reading the thread…"
VERIFY_NOT_A_VERIFIER = ("Only this channel's verifiers (`verifiers` in its `[channels.…]` table of the sources file) "
                         "and Docent's admins (`KB_ADMIN_USERS`) can verify answers here.")
VERIFY_NOT_HERE = ("Answers are not verified from Slack Connect conversations (shared with another organisation), "
                   "nor from one Docent cannot read.")
VERIFY_NO_SCOPE = "Nothing Docent answers from is visible in this conversation, so an answer verified here could be shown nowhere."
VERIFY_GAP_GONE = "Sorry, I can no longer find this answered gap."


def verify_wider(widened: list[str], allowed: list[str]) -> str:
    """A scope the channel does not see, in a submitted form (a forged or stale one)."""
    return (f"Not visible in this channel: {', '.join(widened)}. Choose among: {', '.join(allowed) or 'none'}.")


def verified_in_thread(user: str, question: str) -> str:
    """Said in the thread when a verifier verified one of its messages (`question`: text we did not write,
    escaped and neutralised by the caller)."""
    return (f"✅ <@{user}> verified this as the answer to “{question}”; Docent will give it to the same question "
            "from now on.")


def verify_failed(why: str) -> str:
    """To the verifier whose submitted form could not be stored (a DM: the form is already closed)."""
    return f"Sorry — the answer you verified could not be stored: {why}."


# -- the App Home ------------------------------------------------------------------------------------

HOW_TO_ASK = ("*Ask me anything the wiki covers.*\n"
              "• Mention me in a channel: `@Docent how many vacation days do I get?` — I answer in the thread.\n"
              "• Send me a direct message, or open me from the ✨ AI apps button.\n"
              "• `/kb ask <question>` answers privately, with a button to share it.\n"
              "Every answer cites its pages; 👍 / 👎 tell the wiki owners what worked.")
HOME_NOT_LOADED = "⚠️ Some of this page could not be loaded right now; try again in a minute."


def home_source_gone(name: str) -> str:
    return f"There is no source `{name}` any more."


def home_resync_started(name: str) -> str:
    return f"🔄 Resync of `{name}` started…"


def home_resync_done(name: str, result: str) -> str:
    return f"Resync of `{name}`: {result}"


# -- verified answers given, and reviewed (bot.slack.verified_review) ----------------------------------

def verified_voted_down(answer_id: int, verified_question: str, asked: str | None, where: str | None) -> str:
    """The DM to whoever verified an answer, when someone votes it 👎. `verified_question`, `asked`
    and `where` come escaped; `asked` is None when it was asked in a private conversation."""
    lines = [f"👎 Someone found your verified answer #{answer_id} (“{verified_question}”) not helpful."]
    lines.append(f"They asked: “{asked}”" if asked is not None else
                 "They asked in a private conversation, so their question is not shown here.")
    if where:
        lines.append(f"The answer: {where}")
    lines.append(f"If it needs changing: `kb answers show {answer_id}`, then `kb answers edit {answer_id} …` "
                 f"or `kb answers retire {answer_id}`.")
    return "\n".join(lines)


def verified_vote_reason(answer_id: int, quoted: str) -> str:
    """The second DM to the verifier: what the 👎 voter wrote in the form (`quoted`: escaped, "> " lines)."""
    return f"📝 About your verified answer #{answer_id}, the person who voted 👎 wrote:\n{quoted}"


def verified_offer_cli(answer_id: int, question: str) -> str:
    """`kb ask`'s line under an answer when a verified answer may be the one asked for (offered)."""
    return f"✅ A verified answer may answer this: “{question}” — `kb answers show {answer_id}`"


def verified_offer(question: str) -> str:
    """Slack's line under an answer when a verified answer may be the one asked for (`question`: escaped)."""
    return f"✅ A verified answer exists for a question like yours: “{question}”"


VERIFIED_OFFER_BUTTON = "Show it"
VERIFIED_OFFER_GONE = ("That verified answer can't be shown here: it has been retired, or it is not for this "
                       "conversation.")
VERIFIED_OFFER_SHOWN = "That verified answer has been shown here already."
SUGGESTED_QUESTIONS = "Suggested questions for verified answers"
SUGGESTED_HINT = ("People took these verified answers when Docent offered them. *Add as a question* makes the wording "
                  "one of the answer's questions (given it from then on); `kb answers suggestions` lists them all.")
SUGGESTION_NOT_A_VERIFIER = "Only the verifiers of the channel it was asked in (or admins) can do that."


def suggestion_added(suggestion_id: int, answer_id: int) -> str:
    return f"✅ Suggested question {suggestion_id} is now one of verified answer #{answer_id}'s questions."


def suggestion_dismissed(suggestion_id: int) -> str:
    return f"Suggested question {suggestion_id} dismissed."


def suggestion_failed(why: str) -> str:
    return f"⚠️ {why}"


def suggestions_waiting(count: int) -> str:
    """The weekly digest's line when suggested questions wait for a verifier."""
    return (f"📝 {count} suggested question{'s' if count != 1 else ''} for verified answers "
            f"wait{'s' if count == 1 else ''} for a verifier (App Home, or `kb answers suggestions`).")


SHARE_VERIFIED_REFUSED = ("I can't share this answer here: it is a verified answer that is not for this conversation, "
                          "or it has been retired since. It stays visible only to you.")
VERIFIED_DUE = "Verified answers due for review"
VERIFIED_DUE_HINT = ("Still given, marked “due for review”. `kb answers show ID`, then `kb answers edit ID --reviewed` "
                     "(or with the changes) or `kb answers retire ID`; `kb answers list --due` lists them all.")


# -- `kb ask` (each an `error: …` line, but the prompt) -----------------------------------------------

ASK_PROMPT = "Ask a question (Ctrl-D to quit)."
INDEX_EMPTY = "the index is empty: run `kb sync` first"
CLI_NOTHING_VISIBLE = 'no access scope is visible there (a Slack Connect conversation, and shared_channels = "none")'
CLI_UNAVAILABLE = "the knowledge base is temporarily unavailable: its database cannot be reached (try again shortly)"
