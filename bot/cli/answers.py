"""`kb answers`: verified answers from the command line — add, list, show, edit, retire, export,
import, and the questions people took them for when offered (suggestions, accept, dismiss).

The operator's tool (whoever runs `kb` has the database): every change is recorded as an admin
action under `--by` (default: the login name). In Slack, only verifiers may change them
(`docs/verified-answers.md`). `export`/`import` keep them in a YAML file a team can review in Git.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli import common
from bot.cli.common import fail

if TYPE_CHECKING:
    from sqlmodel import Session

    from bot.knowledge import KnowledgeBase
    from bot.settings import Settings
    from bot.verified import VerifiedAnswer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Verified answers: what people answered, given again to the same question asked another way.")

Questions = Annotated[list[str], typer.Option("--question", "-q", help="A question it answers (repeat for other wordings)")]
Scopes = Annotated[list[str], typer.Option("--scope", help="An access scope it may be shown in (repeatable; default public)")]
Cites = Annotated[list[str], typer.Option("--cites", help="A wiki page it cites: its path, or source:path (repeatable)")]
By = Annotated[str | None, typer.Option("--by", help="Who verified it (default: your login name)")]
ReviewBy = Annotated[str | None, typer.Option("--review-by", help="Review it by this day, YYYY-MM-DD "
                                                                  "(default: KB_VERIFIED_REVIEW_DAYS from today)")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON")]


def add(question: Questions = [], answer: Annotated[str, typer.Option("--answer", help="The answer, as people should read it")] = "",
        scope: Scopes = [], by: By = None, review_by: ReviewBy = None, cites: Cites = []) -> None:
    """Add a verified answer; prints its id as the last word."""
    from bot.verified import Change, store

    settings, kb = _open()
    actor = by or getpass.getuser()
    scopes = _known_scopes(settings, scope or ["public"])
    review = _day(review_by) if review_by else store.default_review_by(settings.kb_verified_review_days)
    with _changing(kb, actor, "answers add", question[0] if question else "") as (session, log):
        answer_id = store.add(session, kb.index.embedder, Change(actor), questions=question, answer=answer, scopes=scopes,
                              review_by=review, cites=cites, verified_by=actor)
        log(str(answer_id))
    typer.echo(f"added verified answer {answer_id}")


def list_answers(as_json: AsJson = False,
                 due: Annotated[bool, typer.Option("--due", help="Only those due for review")] = False,
                 retired: Annotated[bool, typer.Option("--retired", help="Retired ones too")] = False) -> None:
    """List verified answers (id, review date, first question)."""
    from bot.verified import store

    _, kb = _open()
    with kb.index.session() as session:
        answers = store.listing(session, due=due, retired=retired)
    if as_json:
        typer.echo(json.dumps([a.listing_json() for a in answers], ensure_ascii=False))
        return
    if not answers:
        typer.echo("no verified answers due for review" if due else "no verified answers")
    for a in answers:
        state = " retired" if a.retired else (f" due since {a.due_since}" if a.due_since else "")
        typer.echo(f"{a.id}\treview by {a.review_by}{state}\t[{', '.join(a.scopes)}]\t{a.questions[0] if a.questions else ''}")


def show(answer_id: Annotated[int, typer.Argument(help="The verified answer's id")], as_json: AsJson = False) -> None:
    """Show one verified answer: its questions, text, scopes, citations and state."""
    from bot.verified import header, store

    _, kb = _open()
    with kb.index.session() as session:
        found = store.get(session, answer_id)
    if found is None:
        fail(f"no verified answer {answer_id}")
    if as_json:
        typer.echo(json.dumps(found.listing_json(), ensure_ascii=False))
        return
    _print(found, header(found))


def edit(answer_id: Annotated[int, typer.Argument(help="The verified answer's id")],
         question: Annotated[list[str], typer.Option("--question", "-q", help="Replace its questions (repeatable)")] = [],
         answer: Annotated[str | None, typer.Option("--answer", help="Replace its text")] = None,
         scope: Annotated[list[str], typer.Option("--scope", help="Replace its scopes (repeatable)")] = [],
         cites: Annotated[list[str], typer.Option("--cites", help="Replace its cited pages (repeatable)")] = [],
         review_by: Annotated[str | None, typer.Option("--review-by", help="A new review-by day, YYYY-MM-DD")] = None,
         reviewed: Annotated[bool, typer.Option("--reviewed", help="Reviewed now: verified again by --by, today, "
                                                                    "with the cited pages as they are now")] = False,
         by: By = None) -> None:
    """Change a verified answer (only what is given changes)."""
    from bot.verified import store

    settings, kb = _open()
    actor = by or getpass.getuser()
    scopes = _known_scopes(settings, scope) if scope else None
    review = _day(review_by) if review_by else (store.default_review_by(settings.kb_verified_review_days) if reviewed else None)
    with _changing(kb, actor, "answers edit", str(answer_id)) as (session, log):
        store.edit(session, kb.index.embedder, answer_id, questions=question or None, answer=answer, scopes=scopes,
                   review_by=review, cites=cites or None, reverify_by=actor if reviewed else None)
        log("edited")
    typer.echo(f"edited verified answer {answer_id}")


def retire(answer_id: Annotated[int, typer.Argument(help="The verified answer's id")], by: By = None) -> None:
    """Retire a verified answer: it is never given again, in any process, from the next question on."""
    from bot.verified import Change, store

    _, kb = _open()
    actor = by or getpass.getuser()
    with _changing(kb, actor, "answers retire", str(answer_id)) as (session, log):
        done = store.retire(session, answer_id, Change(actor))
        log("retired" if done else "already retired")
    typer.echo(f"retired verified answer {answer_id}" if done else f"verified answer {answer_id} was already retired")


def export(file: Annotated[Path, typer.Argument(help="The YAML file to write")],
           retired: Annotated[bool, typer.Option("--retired", help="Retired ones too")] = False) -> None:
    """Write the verified answers to a YAML file (to keep them in Git)."""
    from bot.verified import exchange, store

    _, kb = _open()
    with kb.index.session() as session:
        answers = store.listing(session, retired=retired)
    exchange.write(file, answers)
    typer.echo(f"exported {len(answers)} verified answers to {file}")


def import_answers(file: Annotated[Path, typer.Argument(help="A YAML file written by `kb answers export`")],
                   by: By = None) -> None:
    """Read verified answers from a YAML file: an entry with the id of one here replaces it, others are added."""
    from bot.verified import exchange

    settings, kb = _open()
    actor = by or getpass.getuser()
    try:
        entries = exchange.read(file)
    except exchange.ExchangeError as exc:
        fail(str(exc))
    for entry in entries:
        _known_scopes(settings, entry.scopes)
    with _changing(kb, actor, "answers import", str(file)) as (session, log):
        added, replaced = exchange.apply(session, kb.index.embedder, entries, actor,
                                         settings.kb_verified_review_days)
        log(f"{added} added, {replaced} replaced")
    typer.echo(f"imported {len(entries)} verified answers: {added} added, {replaced} replaced")


def suggestions(as_json: AsJson = False,
                every: Annotated[bool, typer.Option("--all", help="Added and dismissed ones too")] = False) -> None:
    """List questions that took a verified answer when Docent offered it (id, answer, wording)."""
    from bot.verified import suggestions as suggested

    _, kb = _open()
    with kb.index.session() as session:
        found = suggested.listing(session, status=None if every else "open")
    if as_json:
        typer.echo(json.dumps([s.to_json() for s in found], ensure_ascii=False))
        return
    if not found:
        typer.echo("no suggested questions")
    for s in found:
        state = "" if s.status == "open" else f" ({s.status})"
        typer.echo(f"{s.id}{state}	answer {s.answer_id} “{s.verified_question}”	← “{s.question}”")


def accept(suggestion_id: Annotated[int, typer.Argument(help="The suggested question's id (`kb answers suggestions`)")],
           by: By = None) -> None:
    """Add a suggested question to its verified answer's questions: given the answer from now on."""
    from bot.verified import Change
    from bot.verified import suggestions as suggested

    _, kb = _open()
    actor = by or getpass.getuser()
    with _changing(kb, actor, "answers accept", str(suggestion_id)) as (session, log):
        done = suggested.accept(session, kb.index.embedder, suggestion_id, Change(actor))
        log(f"added to answer {done.answer_id}")
    typer.echo(f"verified answer {done.answer_id} now also answers “{done.question}”")


def dismiss(suggestion_id: Annotated[int, typer.Argument(help="The suggested question's id (`kb answers suggestions`)")],
            by: By = None) -> None:
    """Dismiss a suggested question: its answer is left as it is."""
    from bot.verified import Change
    from bot.verified import suggestions as suggested

    _, kb = _open()
    actor = by or getpass.getuser()
    with _changing(kb, actor, "answers dismiss", str(suggestion_id)) as (session, log):
        done = suggested.dismiss(session, suggestion_id, Change(actor))
        log("dismissed")
    typer.echo(f"dismissed suggested question {done.id}")


COMMANDS: dict[str, Callable[..., None]] = {
    "add": add, "list": list_answers, "show": show, "edit": edit, "retire": retire, "export": export,
    "import": import_answers, "suggestions": suggestions, "accept": accept, "dismiss": dismiss}


# -- shared -------------------------------------------------------------------------------------------


def _open() -> tuple[Settings, KnowledgeBase]:
    settings = common.settings()
    return settings, common.root(settings).knowledge_base(sources=[])


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        fail(f"--review-by {text!r}: expected a day as YYYY-MM-DD")


def _known_scopes(settings: Settings, scopes: list[str]) -> list[str]:
    """Scopes the sources file defines (or `public`): a misspelt one would hide the answer from everyone."""
    from sources import SourcesError

    try:
        known = {"public", *settings.access_config().scopes}
    except SourcesError as exc:
        fail(str(exc))
    unknown = sorted(set(scopes) - known)
    if unknown:
        fail(f"unknown scope {', '.join(unknown)}: the sources file defines {', '.join(sorted(known))}")
    return scopes


def _print(a: VerifiedAnswer, first_line: str) -> None:
    typer.echo(f"{first_line}\n\nid {a.id} · scopes {', '.join(a.scopes)} · review by {a.review_by}"
               + (f" · retired {a.retired_at:%Y-%m-%d} by {a.retired_by}" if a.retired_at else ""))
    typer.echo("questions:\n" + "\n".join(f"  - {q}" for q in a.questions))
    typer.echo("answer:\n" + "\n".join(f"  {line}" for line in a.answer.splitlines()))
    if a.cites:
        typer.echo("cites:\n" + "\n".join(f"  - {c.doc_id}" for c in a.cites))


@contextmanager
def _changing(kb: KnowledgeBase, actor: str, action: str, argument: str) -> Iterator[tuple[Session, Callable[[str], None]]]:
    """A session for one change, committed when the block ends; then the change is an admin action
    in the log, with what it did. A `VerifiedError` (an empty answer, an unknown page, no such id)
    rolls it back, is logged as a failed action and printed as the one `error:` line."""
    from bot.records import question_log
    from bot.verified import VerifiedError

    said: list[str] = []
    with kb.index.session() as session:
        try:
            yield session, said.append
            session.commit()
        except VerifiedError as exc:
            session.rollback()
            question_log.log_admin_action(kb.index, actor, action, argument[:200], True, f"failed: {exc}")
            fail(str(exc))
    question_log.log_admin_action(kb.index, actor, action, argument[:200], True, said[-1] if said else "")
