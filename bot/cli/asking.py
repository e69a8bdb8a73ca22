"""`kb ask` and `kb status`: answers and index status in the terminal, for a chosen audience."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from bot import messages
from bot.cli import common
from bot.cli.common import fail

if TYPE_CHECKING:
    from bot.answering import Answer
    from bot.knowledge import KnowledgeBase
    from bot.settings import Settings
    from indexing.storage import KeywordState
    from sources import Audience


def ask(
    question: Annotated[str | None, typer.Argument(help="The question; without it, questions are read line by line")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as JSON")] = False,
    as_channel: Annotated[str | None, typer.Option(
        "--as-channel", help="Answer as Docent would in this Slack channel (id, e.g. C0123ABCD): only the scopes "
                             "visible there, whoever asks")] = None,
    as_user: Annotated[str | None, typer.Option(
        "--as-user", help="Answer as Docent would in this user's direct message (id, e.g. U0123ABCD): their scopes "
                          "and their user groups' (groups are looked up in Slack when SLACK_BOT_TOKEN is set)")] = None,
    shared: Annotated[bool, typer.Option(
        "--shared", help="Treat the conversation as shared with another organisation (Slack Connect)")] = False,
) -> None:
    """Answer a question from the index, with numbered sources.

    Without --as-channel / --as-user / --shared, every access scope is searched (the operator's view). With them, the sources file's access rules apply as in Slack.
    """
    settings = common.settings()
    audience = cli_audience(settings, as_channel, as_user, shared)
    kb = common.root(settings).knowledge_base(sources=[], llm=True)  # answering needs no list of sources
    if question is not None:
        ask_one(kb, question, audience, as_json, exit_on_error=True)
        return
    interactive(kb, as_json, audience=audience)


def cli_audience(settings: Settings, channel: str | None, user: str | None, shared: bool) -> Audience:
    """Who `kb ask` answers for: the operator (every scope) unless asked to answer as in Slack.

    --as-channel: that channel's audience (a D… channel with --as-user is that user's DM with
    Docent); --as-user alone: the user's DM with Docent. Decided by the Slack app's own
    `SlackAccess`: with SLACK_BOT_TOKEN set, user groups and whether the channel is shared come
    from Slack, as in the bot; without it nothing is looked up — only user ids count, and --shared
    says whether the conversation is a Slack Connect one.
    """
    from sources import Audience, SourcesError

    if channel is None and user is None and not shared:
        return Audience.operator()
    from bot.settings import secret
    from bot.slack.audiences import SlackAccess

    try:
        config = settings.access_config()
    except SourcesError as exc:
        fail(str(exc))
    is_dm = user is not None and (channel is None or channel.startswith("D"))
    client = None
    if secret(settings.slack_bot_token):
        from bot.slack.client import web_client

        client = web_client(settings)
    return SlackAccess(config, client).audience(channel, user, is_dm=is_dm, said_shared=shared)


def interactive(kb: KnowledgeBase, as_json: bool = False, audience: Audience | None = None) -> None:
    """Questions read line by line from stdin, each answered by `kb` (a prompt on a terminal)."""
    from sources import Audience

    audience = audience or Audience.operator()
    tty = sys.stdin.isatty()
    if tty:
        typer.echo(messages.ASK_PROMPT)
    while True:
        if tty:
            typer.echo("? ", nl=False)
        line = sys.stdin.readline()
        if not line:
            break
        if line.strip():
            ask_one(kb, line, audience, as_json, exit_on_error=False)


def ask_one(kb: KnowledgeBase, question: str, audience: Audience, as_json: bool, exit_on_error: bool) -> None:
    """One answer printed; an expected failure is one `error:` line (and the exit, if `exit_on_error`)."""
    from bot.answering import EmptyQuestion
    from indexing.storage import is_unreachable

    def error(message: str, code: int = 1) -> None:
        if exit_on_error:
            fail(message, code)
        typer.echo(f"error: {message}", err=True)

    try:
        if not kb.chunk_count():
            fail(messages.INDEX_EMPTY)
        if audience.sees_nothing:
            return error(messages.CLI_NOTHING_VISIBLE)
        answer = kb.ask(question, audience)
    except EmptyQuestion as exc:
        return error(str(exc), code=2)
    except Exception as exc:  # the database lost after start: one line; a prompt keeps going
        if not is_unreachable(exc):
            raise
        return error(messages.CLI_UNAVAILABLE)
    if as_json:
        typer.echo(json.dumps(answer.to_json(), ensure_ascii=False, allow_nan=False))
        return
    print_answer(answer)


def print_answer(answer: Answer) -> None:
    """The answer as in Slack: for an uncertain one the "not sure" line first (in yellow), the
    lead sentences and passages, what was searched if a typo was repaired, then the sources
    ("Nearest pages" when nothing was found).

    Page and model text is text, never Rich markup (`escape`: a title `Expenses [/]` or
    `[link=…]` prints as written); the answer's Markdown shows each link's URL beside its label
    (`hyperlinks=False`), so no terminal link hides where it goes."""
    from rich.console import Console
    from rich.markup import escape
    from rich.markdown import Markdown

    from dataclasses import replace

    from bot.cli.plain_output import clean, raw
    from indexing.ingest import HeadingPath
    from indexing.search import Outcome

    console = Console(file=raw(sys.stdout))  # Rich's own colours pass; every text it is given is cleaned
    answer = replace(answer, text=clean(answer.text), searched=answer.searched and clean(answer.searched),
                     note=answer.note and clean(answer.note),
                     sources=[replace(s, title=clean(s.title), url=clean(s.url or ""),
                                      heading_path=HeadingPath(clean(h) for h in s.heading_path)) for s in answer.sources])
    text = answer.text
    if answer.outcome == Outcome.UNCERTAIN:
        first, _, text = text.partition("\n\n")
        console.print(f"[yellow]{escape(first)}[/]", highlight=False)
    console.print(Markdown(text, hyperlinks=False))
    if answer.searched:
        console.print(f"[dim]searched for: {escape(answer.searched)}[/]", highlight=False)
    if answer.note:
        console.print(f"[yellow]{escape(answer.note)}[/]")
    if answer.verified_offer is not None:
        offer = answer.verified_offer
        console.print(escape(messages.verified_offer_cli(offer.answer_id, clean(offer.question))), highlight=False,
                      soft_wrap=True)
    if answer.sources:
        console.print("[bold]Sources[/]" if answer.found else "[bold]Nearest pages[/]")
        for s in answer.sources:
            where = " › ".join([s.title, *s.heading_path])
            console.print(escape(f"  [{s.n}] {where}\n      {s.url}"), highlight=False)
    console.print(f"[dim]{answer.timings_ms.get('total', 0):.0f} ms[/]")


def keyword_line(state: KeywordState) -> str:
    """The keyword index's state in one line: what every process serves, and whether a sync's
    last changes are still to be published."""
    if state.published is None:
        return "nothing published yet (the next sync publishes it)"
    behind = state.committed - state.published
    line = f"version {state.published} published" + (f", {behind} newer change(s) not yet" if behind > 0 else "")
    if state.base is None:
        return line + "; no saved base yet (a cold start builds it from the chunks)"
    return line + f"; saved base at {state.base}, {state.changed_since_base} page(s) changed since"


def status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Documents by status, chunks, last sync per source, and where the index lives."""
    from bot.knowledge import sync_counts

    info = common.root(common.settings()).knowledge_base().status()
    if as_json:
        typer.echo(json.dumps(info.to_json(), ensure_ascii=False, default=str, allow_nan=False))
        return
    typer.echo(f"index:     {info.database}")
    if info.reads:
        typer.echo(f"reads:     {info.reads.describe()}")
    typer.echo(f"data dir:  {info.home}")
    typer.echo(f"embedding: {info.embedding}")
    docs = ", ".join(f"{n} {k.lower()}" for k, n in sorted(info.documents.items())) or "none"
    typer.echo(f"documents: {docs}")
    typer.echo(f"chunks:    {info.chunks}")
    if info.keywords:
        typer.echo(f"keywords:  {keyword_line(info.keywords)}")
    for run in info.last_runs:
        when = run.finished_at or run.started_at
        result = "" if run.result == "ok" else f" [{run.result.upper()}: {run.reason or 'no reason recorded'}]"
        typer.echo(f"last sync: {run.source} ({run.trigger}) {when:%Y-%m-%d %H:%M:%S} UTC — {sync_counts(run)}{result}")
    for name in info.unconfigured:
        typer.echo(f"not configured: {name} (no longer in the sources file; still answering until `kb forget {name}`)")
    for doc_id, error in info.failed[:20]:
        typer.echo(f"FAILED     {doc_id}: {error}")
    for doc_id, reason in info.skipped[:20]:
        typer.echo(f"SKIPPED    {doc_id}: {reason}")
