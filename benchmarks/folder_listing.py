"""What listing a Markdown folder costs now that unreadable folders are reported, not dropped.

    .venv/bin/python -m benchmarks.folder_listing [--repeat 20]

`MarkdownFolder.listing()` walks the folder with `os.scandir` and keeps every folder or entry
it cannot list or examine (so the sync fails the pages under it instead of deleting them). The
baseline is the walk it replaced — `os.walk` without `onerror`, the same filters — run in the
same process over the same folder (the Sourcegraph handbook, 821 pages in 210 folders). Every
sync lists its folder once for the progress bar and once to read it; the watcher lists a folder
when one moves.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from benchmarks._common import CORPUS_EXCLUDES, HANDBOOK, require, table


def os_walk_paths(folder) -> list[str]:
    """The listing as it was: `os.walk`, hidden folders pruned, an unreadable folder skipped silently."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder.root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(folder.root).as_posix()
            if folder.wants(rel) and folder._inside_root(full):
                found.append(rel)
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20, help="passes per method; the best is reported")
    args = parser.parse_args()

    from connectors.markdown import MarkdownFolder

    folder = MarkdownFolder(require(HANDBOOK), source="handbook", exclude=CORPUS_EXCLUDES)
    baseline, listing = os_walk_paths(folder), folder.listing()
    assert listing.paths == baseline and not listing.unreadable, "the two walks disagree"
    best = {"os.walk": float("inf"), "listing": float("inf")}
    for _ in range(args.repeat):
        started = time.perf_counter()
        os_walk_paths(folder)
        best["os.walk"] = min(best["os.walk"], time.perf_counter() - started)
        started = time.perf_counter()
        folder.listing()
        best["listing"] = min(best["listing"], time.perf_counter() - started)
    folders = sum(1 for _ in os.walk(folder.root))
    table(f"{len(baseline)} pages in {folders} folders, best of {args.repeat}", [
        ("os.walk, no onerror (before)", f"{best['os.walk'] * 1000:.1f} ms"),
        ("MarkdownFolder.listing (scandir, failures kept)", f"{best['listing'] * 1000:.1f} ms"),
        ("ratio listing / os.walk", f"{best['listing'] / best['os.walk']:.2f}"),
    ])


if __name__ == "__main__":
    main()
