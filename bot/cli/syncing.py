"""`kb sync`, `kb sources`, `kb forget`, `kb watch`: what is indexed, and keeping it current."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import typer

from bot.cli import common
from bot.cli.common import fail

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from bot.knowledge import KnowledgeBase
    from bot.wiring import Root
    from connectors.document import SourceDocument
    from indexing.ingest import SyncReport, indexed_sources
    from sources import SourceConfig


log = logging.getLogger(__name__)

SYNC_FAILED = "not synced"  # the first error of the report of a source that could not be synced at all


class AdhocOptions(TypedDict):
    """What `kb sync PATH`'s options say of the source; None or an empty list: not given."""

    kind: str | None
    url_template: str | None
    base_url: str | None
    access: str | None
    include: list[str]
    exclude: list[str]


def sync(
    path: Annotated[Path | None, typer.Argument(help="A folder or export .zip (default: the configured sources)")] = None,
    source: Annotated[str | None, typer.Option(help="With PATH: its source name (default: derived from the path); alone: sync only this source")] = None,
    kind: Annotated[str | None, typer.Option(help="With PATH: markdown, confluence-html or confluence-xml (default: detected)")] = None,
    url_template: Annotated[str | None, typer.Option(help="With PATH: citation URL template with {path}")] = None,
    base_url: Annotated[str | None, typer.Option(help="With PATH: Confluence base URL for citations")] = None,
    access: Annotated[str | None, typer.Option(help="With PATH: access scope of these documents")] = None,
    include: Annotated[list[str], typer.Option(help="With PATH: only files matching this glob (repeatable)")] = [],
    exclude: Annotated[list[str], typer.Option(help="With PATH: skip files matching this glob (repeatable)")] = [],
    allow_deletes: Annotated[bool, typer.Option("--allow-deletes", help="Let this sync delete more pages than the source's max_delete allows (or every page)")] = False,
    full: Annotated[bool, typer.Option("--full", help="Read every page of a Confluence REST source, not only what changed since its last sync")] = False,
) -> None:
    """Index sources incrementally: unchanged pages cost nothing, removed pages are dropped.

    A sync only ever changes its own source's pages. One that finds no pages where there were
    some, or would delete more than the source's max_delete, deletes nothing and exits 4.
    """
    root = common.root(common.primary_only(common.settings()))
    configured = root.sources
    if path is not None:
        options: AdhocOptions = {"kind": kind, "url_template": url_template, "base_url": base_url, "access": access,
                                 "include": list(include), "exclude": list(exclude)}
        sources = [_adhoc_source(root, path, source, options)]
    elif source is not None:
        sources = [s for s in configured if s.name == source] or [_recorded_source(root, source)]
    else:
        sources = configured
    reports = run_sync(root, sources, allow_deletes=allow_deletes, full=full)
    if any(not_synced(r) for r in reports):
        raise typer.Exit(1)
    if any(r.refused for r in reports):
        raise typer.Exit(4)
    if any(r.failed for r in reports):
        raise typer.Exit(3)


def _adhoc_source(root: Root, path: Path, name: str | None, options: AdhocOptions) -> SourceConfig:
    """The source `kb sync PATH` syncs: the configured one if PATH is its location, else a source
    of its own — named after the path (or `--source`), never a name that reads another location,
    and with the settings it was last synced with unless options say otherwise."""
    import dataclasses

    from sources import KINDS, SourceConfig, adhoc_name, check_source_name, overlap
    from indexing.ingest import indexed_sources

    configured = root.sources
    if not path.exists():
        fail(f"no such file or folder: {path}")
    location = path.resolve()
    if options["kind"] is not None and options["kind"] not in KINDS:
        fail(f"--kind must be one of {', '.join(KINDS)}")
    for known in configured:
        if known.location.resolve() == location:
            given = [f"--{k.replace('_', '-')}" for k, v in options.items() if v]
            if given or (name is not None and name != known.name):
                fail(f"{path} is the configured source {known.name!r}: its settings come from the configuration, "
                     f"not from {', '.join(given) or '--source'}")
            return known
    for known in configured:  # a folder inside a configured one (or holding one): those are its pages
        how = overlap(location, known.location)
        if how is not None:
            where = "lies inside the location" if how == "inside" else "holds the location"
            fail(f"{path} {where} of the configured source {known.name!r} ({known.location}); syncing it on its own "
                 f"would index that source's pages again under other settings (access {known.access!r} there). "
                 f"Sync the source by name: kb sync --source {known.name}")
    with root.index.session() as s:
        records = indexed_sources.records(s)
    for other in records.values():  # ... or in or around an ad-hoc source synced with another access
        if other.origin != indexed_sources.ADHOC or not other.location:
            continue
        how = overlap(location, Path(other.location))
        theirs, ours = (other.settings or {}).get("access") or "public", options["access"] or "public"
        if how in ("inside", "contains") and theirs != ours:
            fail(f"{path} {'lies inside' if how == 'inside' else 'holds'} {other.location}, synced as source "
                 f"{other.name!r} with access {theirs!r}; syncing it with access {ours!r} would index those pages "
                 f"under both. `kb forget {other.name}` first, or configure both in the sources file")
    taken = {r.name: r.location for r in records.values()} | {c.name: str(c.location.resolve()) for c in configured}
    if name is not None:
        if name in taken and taken[name] != str(location):
            fail(f"source {name!r} reads {taken[name]}; syncing {path} under that name would replace its pages. "
                 f"Choose another --source, or `kb forget {name}` first")
    else:
        name = adhoc_name(location, taken)
    record = records.get(name)
    base = indexed_sources.adhoc_source(record) if record is not None else SourceConfig(name=name, location=location, adhoc=True)
    changes: dict[str, Any] = {k: v for k, v in options.items() if v}  # SourceConfig fields, str or list[str]
    source = dataclasses.replace(base, name=name, location=location, **changes)
    try:
        check_source_name(name)
    except ValueError as exc:
        fail(str(exc))
    last = "" if changes or record is None else " (with the settings of its last sync)"
    typer.echo(f"syncing {path} as source {name!r}{last}" + ("; choose the name with --source NAME" if record is None else ""),
               err=True)
    return source


def _recorded_source(root: Root, name: str) -> SourceConfig:
    """`kb sync --source NAME` for a source that is not configured: an ad-hoc one, as last synced."""
    from indexing.ingest import indexed_sources

    with root.index.session() as s:
        record = indexed_sources.records(s).get(name)
    if record is None or record.origin != indexed_sources.ADHOC:
        names = ", ".join(s.name for s in root.sources)
        fail(f"no source named {name!r} (configured: {names}; `kb sources` lists every source in the index)")
    return indexed_sources.adhoc_source(record)


def run_sync(root: Root, sources: list[SourceConfig], trigger: str = "cli", allow_deletes: bool = False,
             full: bool = False) -> list[SyncReport]:
    """Sync each of `sources` through `root`'s index, with a progress bar and a one-line summary;
    returns the reports.

    Each source syncs on its own: one that cannot be synced (a folder gone, a Confluence site
    down, an export that cannot be read) gets one `error:` line, a report with `SYNC_FAILED` first
    in its errors, and the next source goes on. A database that is full or gone stops the rest
    (they would fail the same way), each named. A sync the deletion guard refused gets one
    `error:` line (and its report `refused`)."""
    from rich.console import Console
    from rich.markup import escape  # names, paths and reasons are text, never markup

    from bot.knowledge import sync_counts
    from indexing.ingest import SyncReport

    from bot.cli.plain_output import clean, raw

    kb = root.knowledge_base(sources=sources)
    # one line per summary, whatever the terminal width; Rich's own colours pass, every text it is given is cleaned
    console = Console(file=raw(sys.stderr), soft_wrap=True)
    reports = []
    for number, source in enumerate(sources):
        try:
            report = _sync_source(kb, source, console, trigger=trigger, allow_deletes=allow_deletes, full=full)
        except Exception as exc:
            reason, stop = _sync_failure(exc)
            typer.echo(f"error: source {source.name}: {reason}", err=True)
            reports.append(SyncReport(source=source.name, errors=[f"{SYNC_FAILED}: {reason}"]))
            if stop:
                for later in sources[number + 1 :]:
                    typer.echo(f"error: source {later.name}: not synced (the database failed)", err=True)
                    reports.append(SyncReport(source=later.name, errors=[f"{SYNC_FAILED}: the database failed first"]))
                break
            continue
        console.print(
            f"[bold]{escape(clean(source.name))}[/]: {sync_counts(report, zero_skipped=False)} — {report.chunks} chunks, "
            f"{report.sentences} sentences, {report.embedded} embedded, {report.seconds:.1f}s", highlight=False
        )
        for error in report.errors[:20]:
            console.print(f"  [red]FAILED[/] {escape(clean(error))}", highlight=False)
        for skip in report.skips[:20]:
            console.print(f"  [yellow]SKIPPED[/] {escape(clean(skip))}", highlight=False)
        if report.refused:
            typer.echo(f"error: source {source.name}: {report.refused} — run `kb sync"
                       f"{'' if len(sources) == 1 else ' --source ' + source.name} --allow-deletes` "
                       f"if the pages are meant to go", err=True)
        reports.append(report)
    return reports


def not_synced(report: SyncReport) -> bool:
    """Whether `report` is of a source `run_sync` could not sync at all."""
    return bool(report.errors) and report.errors[0].startswith(SYNC_FAILED)


def _sync_source(kb: KnowledgeBase, source: SourceConfig, console: Console, *, trigger: str, allow_deletes: bool,
                 full: bool) -> SyncReport:
    """One source's sync, with its progress bar (from 20 documents)."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sources import open_connector

    from bot.cli.plain_output import clean

    if not source.exists():
        raise FileNotFoundError(f"{source.location} does not exist")
    total = sum(1 for _ in open_connector(source).paths())
    with Progress(TextColumn("syncing {task.fields[source]}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True, disable=total < 20) as bar:
        task = bar.add_task("sync", total=total, source=escape(clean(source.name)))
        report = kb.sync(source.name, trigger=trigger, progress=_advancing(bar, task),
                         allow_deletes=allow_deletes, full=full)
    assert report is not None  # None only when told not to wait for another sync of the source
    return report


def _sync_failure(exc: Exception) -> tuple[str, bool]:
    """Why a source could not be synced, in one line, and whether the sources after it should stop
    too: a database that is out of disk space or unreachable fails every one of them. A database
    error is said in the server's words, never with the statement and its parameters (page text)
    that SQLAlchemy's own message carries; a bug (no expected kind) is logged with its traceback."""
    from sqlalchemy.exc import SQLAlchemyError

    from indexing.storage import disk_full_error, is_unreachable, short_error
    from sources import SourcesError

    full = disk_full_error(exc)
    if full is not None:
        return (f"the database is out of disk space ({short_error(full)}); nothing more was written. "
                "Free space on the database's disk, then run `kb sync` again"), True
    if is_unreachable(exc):
        return f"the database is unreachable ({short_error(exc)}); run `kb sync` again when it is back", True
    if isinstance(exc, SQLAlchemyError):
        return f"the database refused a write: {short_error(exc)}", False
    if isinstance(exc, (OSError, ValueError, SourcesError)):  # an unreadable export or folder, a site down
        return str(exc), False
    log.error("sync failed", exc_info=exc)
    return f"sync failed: {type(exc).__name__}: {exc}", False


def _advancing(bar: Progress, task: TaskID) -> Callable[[SourceDocument], None]:
    """A sync's progress callback: one step of `task` on `bar` per document dealt with."""
    return lambda _doc: bar.advance(task)


def sources(as_json: Annotated[bool, typer.Option("--json", help="Print the sources as JSON")] = False) -> None:
    """Every source in the index: kind, location, pages, failed/skipped, last sync and its result, schedule."""
    rows = common.root(common.settings()).knowledge_base().sources()
    if as_json:
        typer.echo(json.dumps([_source_json(r) for r in rows], ensure_ascii=False, default=str, allow_nan=False))
        return
    if not rows:
        typer.echo("no sources: run `kb sync`")
    for r in rows:
        run = r.last_run
        last = "never synced" if run is None else (
            f"last sync {(run.finished_at or run.started_at):%Y-%m-%d %H:%M} UTC ({run.trigger}): {run.result}"
            + (f" — {run.reason}" if run.reason else ""))
        typer.echo(f"{r.name}  [{r.state}]  {r.kind or '?'}  {r.location}")
        typer.echo(f"    {r.pages} pages, {r.failed} failed, {r.skipped} skipped; {last}"
                   + (f"; schedule {r.schedule}" if r.schedule else ""))
        if r.state == "not configured":
            typer.echo(f"    no longer in the configuration: still answering; `kb forget {r.name}` removes it")


def _source_json(row: indexed_sources.SourceSummary) -> dict[str, object]:
    run = row.last_run
    return {"name": row.name, "state": row.state, "kind": row.kind, "location": row.location, "pages": row.pages,
            "failed": row.failed, "skipped": row.skipped, "schedule": row.schedule,
            "last_sync": None if run is None else {"started_at": run.started_at, "finished_at": run.finished_at,
                                                   "trigger": run.trigger, "result": run.result, "reason": run.reason}}


def forget(
    name: Annotated[str, typer.Argument(help="The source to remove from the index (see `kb sources`)")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (scripts)")] = False,
) -> None:
    """Remove one source's pages from every store (vectors, keywords, sections, registry)."""
    kb = common.root(common.primary_only(common.settings())).knowledge_base()
    row = next((r for r in kb.sources() if r.name == name), None)
    if row is None or (not row.pages and row.origin == ""):
        fail(f"no source named {name!r} in the index (`kb sources` lists them)")
    if row.configured:
        typer.echo(f"note: {name!r} is still configured; its next sync will index it again", err=True)
    if not yes and not typer.confirm(f"Remove the {row.pages} pages of source {name!r} from the index?", err=True):
        fail("nothing removed", code=1)
    removed = kb.forget(name)
    typer.echo(f"{name}: {removed} pages removed", err=True)


def watch() -> None:
    """Keep the index fresh: watch folder sources and run scheduled re-syncs (no bot)."""
    root = common.root(common.primary_only(common.settings()))
    with root.running():  # Ctrl-C or SIGTERM: the watcher, the scheduler and the index stopped in order
        root.start_indexing()
        typer.echo(f"watching {', '.join(s.name for s in root.sources)}; Ctrl-C to stop", err=True)
        root.wait_until_stopped()
