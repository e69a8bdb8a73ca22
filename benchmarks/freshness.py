"""Freshness: how long from saving a page to finding it, with the watcher running.

    .venv/bin/python -m benchmarks.freshness [--rounds 10]

A copy of the sample wiki is synced into a fresh index; then, round after round, a page is
written with a new unique phrase and the clock runs until a question with that phrase
retrieves it. The watcher's debounce (0.3 s of quiet) is part of the time, on purpose.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from training.corpora import REPO
from benchmarks._common import fresh_index, pct, table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()

    from sources import SourceConfig
    from indexing.search.retrieval import retrieve
    from indexing.ingest.runner import SyncRunner
    from indexing.ingest.watcher import Watcher

    wiki = Path(tempfile.mkdtemp(prefix="docent-fresh-")) / "wiki"
    shutil.copytree(REPO / "sample-wiki", wiki, ignore=shutil.ignore_patterns("*.jsonl"))
    index = fresh_index()
    source = SourceConfig(name="fresh", location=wiki, kind="markdown", access="fresh")
    runner = SyncRunner(index, [source])
    runner.sync("fresh")
    index.embedder.embed_query("warm-up")
    watcher = Watcher(runner, [source]).start()
    time.sleep(0.5)
    latencies, edits = [], []
    try:
        for n in range(args.rounds):
            phrase = f"quokka{n}zebra"
            target = wiki / "it" / ("vpn.md" if n % 2 else "new-page.md")
            started = time.perf_counter()
            if n % 2:  # edit an existing page
                target.write_text(target.read_text() + f"\n\nThe emergency tunnel code is {phrase}.\n")
            else:  # create a page
                target.write_text(f"# Tunnel codes\n\nThe emergency tunnel code is {phrase}.\n")
            while not any(h.path == target.relative_to(wiki).as_posix()
                          for h in retrieve(index, f"emergency tunnel code {phrase}", scopes=["fresh"], top_k=3).hits
                          if phrase in h.text):
                if time.perf_counter() - started > 30:
                    raise SystemExit(f"round {n}: not searchable after 30 s")
                time.sleep(0.02)
            (edits if n % 2 else latencies).append(time.perf_counter() - started)
    finally:
        watcher.stop()
    both = latencies + edits
    table("Saved page → searchable (watcher, sample wiki)", [
        ("rounds", len(both)), ("new page p50, s", pct(latencies, 50)), ("edited page p50, s", pct(edits, 50)),
        ("all p95, s", pct(both, 95)), ("all max, s", max(both)), ("target, s", 2.0),
    ])


if __name__ == "__main__":
    main()
