"""What a Confluence REST sync costs: a full read of a 2,000-page space, then a scheduled
(incremental) sync after 5 edits, and one after nothing changed — requests made and seconds,
through the real runner and index, against the local fake Confluence (tests/support/confluence_server.py).

    .venv/bin/python -m benchmarks.confluence_incremental [--pages 2000] [--edits 5]

Pages are short (one paragraph, a few sentences), so the full sync's time is mostly embedding;
the request counts are what a real server would see.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from training.corpora import REPO
from benchmarks._common import fresh_index


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from tests.support.confluence_server import EMAIL, TOKEN, FakeConfluence

    from sources import read_sources_file
    from indexing.ingest.runner import SyncRunner

    os.environ["BENCH_CONFLUENCE_EMAIL"], os.environ["BENCH_CONFLUENCE_TOKEN"] = EMAIL, TOKEN
    rows = []
    with FakeConfluence(from_fixture=False) as fake:
        fake.spaces["BIG"] = "Big space"
        for n in range(args.pages):
            fake.add(str(10_000 + n), f"Policy page {n}", "BIG",
                     f"<h1>Policy {n}</h1><p>Rule {n}: requests for item {n} go to desk {n % 37}. "
                     f"Approval takes {n % 9 + 1} days. Exceptions need a manager's note.</p>",
                     parent="10000" if n else None)
        sources = Path(tempfile.mkdtemp(prefix="docent-bench-conf-")) / "sources.toml"
        sources.write_text(f'[[source]]\nname = "big"\nkind = "confluence"\nurl = "{fake.url}"\nspaces = ["BIG"]\n'
                           f'email_env = "BENCH_CONFLUENCE_EMAIL"\ntoken_env = "BENCH_CONFLUENCE_TOKEN"\n')
        index = fresh_index()
        runner = SyncRunner(index, read_sources_file(sources).sources)
        for label, change in (("full (first) sync", None), (f"incremental, {args.edits} edits", "edit"),
                              ("incremental, nothing changed", None)):
            if change == "edit":
                for n in range(args.edits):
                    fake.edit(str(10_000 + n * 97), body=f"<p>Rule {n} changed: desk {n} moved to floor 3.</p>")
            seen = len(fake.requests)
            started = time.perf_counter()
            report = runner.sync("big", trigger="schedule")
            rows.append((label, len(fake.requests) - seen, f"{time.perf_counter() - started:.1f}",
                         f"{report.added}/{report.updated}/{report.unchanged}/{report.deleted}"))
            print(*rows[-1], flush=True)
        index.close()
    print(f"Confluence REST sync, {args.pages}-page space (fake server on loopback)")
    for row in [("sync", "requests", "seconds", "added/updated/unchanged/deleted"), *rows]:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


if __name__ == "__main__":
    main()
