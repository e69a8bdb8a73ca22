"""`kb run`, `kb serve`, `kb feedback`, `kb gaps`: the bot itself, and what people told it.

`kb gaps` prints the gaps report (`bot.records.gaps`): what people asked that the wiki could not answer
well — the same report the admins' App Home and the weekly digest show; `--drafts DIR` writes
the questions people answered as draft pages (`bot.records.gap_drafts`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli import common
from bot.cli.common import fail

if TYPE_CHECKING:
    from bot.settings import Settings
    from indexing.index import Index
    from sources import SourceConfig


def run() -> None:
    """Index the configured sources (else the sample wiki), then serve Slack if SLACK_BOT_TOKEN is
    set, otherwise answer questions in the terminal."""
    from bot.cli.asking import interactive
    from bot.cli.syncing import run_sync
    from bot.settings import secret

    settings = common.settings()
    root = common.root(settings)
    with root:
        sources = root.sources
        run_sync(root, sources)
        if not secret(settings.slack_bot_token):
            interactive(root.knowledge_base(sources=[], llm=True))
            return
    serve()  # with the index above closed: `kb serve` builds its own root, and closes it when it stops


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on (HTTP mode; /healthz in Socket Mode)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on")] = 3000,
) -> None:
    """Run the Slack bot: Socket Mode when SLACK_APP_TOKEN is set, else HTTP on POST /slack/events."""
    from bot.serve import StartupError, serve as serve_slack

    settings = common.settings()
    try:
        serve_slack(settings, host, port)
    except StartupError as exc:
        fail(str(exc))


def feedback(
    limit: Annotated[int, typer.Option(help="How many votes and how many not-found questions")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON")] = False,
) -> None:
    """Recent 👍/👎 votes (with reasons) and questions the knowledge base could not answer."""
    from dataclasses import asdict

    from bot.records import feedback_report

    settings = common.settings()
    index = common.root(settings).index
    rows = feedback_report(index, limit)
    if as_json:
        typer.echo(json.dumps([asdict(r) for r in rows], ensure_ascii=False, default=str, allow_nan=False))
        return
    if not rows:
        typer.echo("no votes or not-found questions yet")
    for r in rows:
        what = {"up": "👍", "down": "👎"}.get(r.vote or "", "not found")
        reason = f" — {r.reason}" if r.reason else ""
        typer.echo(f"{r.at:%Y-%m-%d %H:%M} {what:<9} {r.user_id:<11} {r.question}{reason}")


def gaps(
    days: Annotated[int, typer.Option(help="The period: the last N days, against the N before")] = 7,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
    post: Annotated[bool, typer.Option("--post", help="Post it to KB_DIGEST_CHANNEL now, as the weekly digest")] = False,
    drafts: Annotated[str | None, typer.Option(
        "--drafts", help="Write one Markdown draft page per question people answered in Slack (answered by people, "
        "missing from the wiki) into this folder; files that exist are kept, never overwritten")] = None,
) -> None:
    """What the wiki is missing: unanswered questions grouped by meaning, down-voted answers, stale pages,
    questions people answered."""
    from bot.records import print_gaps

    if days < 1:
        fail("days must be at least 1")
    if post and drafts is not None:
        fail("--post and --drafts do different things: run them one at a time")
    settings = common.settings()
    if post:
        post_gaps_digest(settings, days)
        return
    root = common.root(settings)
    if drafts is not None:
        write_gap_drafts(root.index, days, drafts_folder(drafts, root.sources), as_json)
        return
    index = root.index
    print_gaps(index, days, as_json, typer.echo)


def drafts_folder(given: str, sources: Sequence[SourceConfig]) -> Path:
    """The folder `--drafts` names; never "" (which reads as the working directory) and never in a
    configured source's folder, where the next sync would index the drafts."""
    from sources import overlap

    if not given.strip():
        fail("--drafts needs a folder: an empty value would write drafts into the working directory")
    folder = Path(given).expanduser()
    for source in sources:
        if source.location.is_dir() and overlap(folder, source.location) in ("same", "inside"):
            fail(f"--drafts {given}: inside source {source.name}'s folder {source.location}, so the next "
                 "sync would index the drafts; write them elsewhere and move each page in once it is checked")
    return folder


def write_gap_drafts(index: Index, days: int, directory: Path, as_json: bool) -> None:
    """`kb gaps --drafts DIR`: a draft page per question people answered in the last `days`."""
    from datetime import timedelta

    from bot.records import answered_by_people, write_drafts
    from indexing.storage import utcnow

    if directory.exists() and not directory.is_dir():
        fail(f"--drafts {directory}: not a folder")
    now = utcnow()
    try:
        written = write_drafts(answered_by_people(index, now - timedelta(days=days), now), directory)
    except OSError as exc:
        fail(f"--drafts {directory}: {exc.strerror or exc}")
    if as_json:
        typer.echo(json.dumps([{"path": str(d.path), "written": d.written} for d in written], allow_nan=False))
        return
    for d in written:
        typer.echo(f"wrote {d.path}" if d.written else f"kept  {d.path} (it exists; delete it to write it again)")
    new = sum(d.written for d in written)
    typer.echo(f"{new} draft(s) written, {len(written) - new} kept, in {directory} "
               f"(questions people answered in the last {days} days)")


def post_gaps_digest(settings: Settings, days: int) -> None:
    """`kb gaps --post`: the weekly digest now, to see it (or send one) without waiting for its schedule."""
    from slack_sdk.errors import SlackApiError

    from bot.slack.client import web_client
    from bot.slack.digest import digest_problem, post_digest

    if not settings.kb_digest_channel:
        fail("--post needs KB_DIGEST_CHANNEL: the channel id the digest goes to")
    if problem := digest_problem(settings):
        fail(problem)
    if not settings.slack_bot_token:
        fail("--post needs SLACK_BOT_TOKEN")
    try:
        kb = common.root(settings).knowledge_base(sources=[])  # reads the query log only
        ts = post_digest(settings, kb, web_client(settings), settings.kb_digest_channel, days)
    except SlackApiError as exc:
        fail(f"Slack refused the digest: {exc.response.get('error', exc)}")
    typer.echo(f"posted the gaps digest of the last {days} days to {settings.kb_digest_channel} (ts {ts})")
