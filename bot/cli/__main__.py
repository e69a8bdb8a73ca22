"""`python -m bot.cli`: the `kb` command line."""

from bot.cli import main

main()
