"""The `kb` command line: a thin shell over `bot.knowledge.KnowledgeBase`.

Every command is a plain function in one of the modules below, registered on the Typer app in
`COMMANDS` — a new command is one line there. Commands ask the composition root
(`bot.wiring.Root`, through `common.root`) for the index, the sources and the knowledge base.
Those modules import only Typer at the top and load the heavy parts (the index, the model,
Slack) inside the command, so `kb --help` is instant.

- `syncing`: sync, sources, forget, watch;  `asking`: ask, status;  `evaluating`: eval;
- `serving`: run, serve, feedback, gaps;  `answers`: the `kb answers` group (verified answers);  `common`: settings, the composition root (`bot.wiring`),
  one-line failures.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from bot.cli import answers, asking, evaluating, serving, syncing
from bot.cli.common import one_line_failures, quiet_libraries

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Docent: answers from your wiki, with citations.")

COMMANDS: dict[str, Callable[..., None]] = {  # name → function, in the order `kb --help` lists them
    "sync": syncing.sync,
    "sources": syncing.sources,
    "forget": syncing.forget,
    "watch": syncing.watch,
    "ask": asking.ask,
    "status": asking.status,
    "eval": evaluating.evaluate,
    "run": serving.run,
    "serve": serving.serve,
    "feedback": serving.feedback,
    "gaps": serving.gaps,
}
for _name, _command in COMMANDS.items():
    app.command(_name)(one_line_failures(_command))
for _name, _command in answers.COMMANDS.items():
    answers.app.command(_name)(one_line_failures(_command))
app.add_typer(answers.app, name="answers")


def main() -> None:
    quiet_libraries()
    app()


if __name__ == "__main__":
    main()
