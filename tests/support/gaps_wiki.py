"""A small wiki in a database of its own, for the gaps report, App Home and digest tests.

Those tests count every question in the query log, so they cannot share the session's index
(other modules log questions there): each gets a scratch database on the session's Postgres
(`conftest.own_index`), with the session's loaded model, and this three-page wiki synced
into it — one page last changed in 2019 (stale), one recently, one restricted to scope "hr", and one empty (skipped).
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from tests.support.databases import own_index

PAGES = {
    "leave.md": "---\nupdated: 2019-03-01\n---\n# Leave policy\n\n## Annual leave\n\nEveryone gets 25 days of annual "
                "leave per calendar year. Unused days do not roll over.\n\n## Sick leave\n\nYou get 10 paid sick days "
                "a year; tell your manager on the first morning.\n",
    "vpn.md": f"---\nupdated: {datetime.now(timezone.utc):%Y-%m-%d}\n---\n# VPN\n\n## Connecting\n\nThe VPN server "
              "is vpn.acme.example on port 51820. Install WireGuard and import the profile from the IT portal.\n",
    "salaries.md": "---\nupdated: 2018-01-01\n---\n# Salary bands 2026\n\n## Engineering bands\n\nThe salary bands for "
                   "engineers are reviewed every April by the compensation committee.\n",
}
PAGES["empty.md"] = "---\ntitle: Empty page\n---\n"  # nothing to index: a skipped page, with its reason
SOURCE = "gaps"


def write_wiki(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in PAGES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def sources_file(folder: Path) -> Path:
    """The public pages in scope "public", the salary page in scope "hr" (visible in channel CHR only)."""
    wiki = write_wiki(folder / "wiki")
    path = folder / "gaps-sources.toml"
    path.write_text(f'[[source]]\nname = "{SOURCE}"\nkind = "markdown"\nlocation = "{wiki}"\nexclude = ["salaries.md"]\n'
                    f'access = "public"\n\n[[source]]\nname = "{SOURCE}-hr"\nkind = "markdown"\nlocation = "{wiki}"\n'
                    f'include = ["salaries.md"]\naccess = "hr"\nallow_overlap = true  # the same folder, split by globs\n\n'
                    '[scopes.hr]\nchannels = ["CHR"]\nusers = []\n',
                    encoding="utf-8")
    return path


@contextmanager
def isolated_index(index, folder: Path):
    """An Index on a scratch database with the wiki synced (through the real runner); yields (index, sources file)."""
    from sources import load_sources
    from indexing.ingest.runner import SyncRunner

    path = sources_file(folder)
    with own_index(index, folder / "home", "docent_gaps") as own:
        runner = SyncRunner(own, load_sources(path))
        for name in runner.sources:
            runner.sync(name, trigger="cli")
        yield own, path
