"""Docent's outer layer: the facade for asking (`knowledge`), answering, the Slack app (`slack/`) and the `kb` CLI (`cli/`)."""
