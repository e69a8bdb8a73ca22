"""What typo and compound repair cost one very long question (issue 33 item 1).

    python benchmarks/long_questions.py [--home KB_HOME] [--chars 40000] [--rounds 3]

Slack lets a message run to 40,000 characters; a pasted log or a wall of gibberish reaches
`repair_question` whole. The question here is seeded random "words" of 6–14 letters (none a
dictionary or wiki word, so every one is a repair candidate: the worst case), plus one real typo
up front. With no `--home`, a throwaway index of the sample wiki is built first (outside the
timing). Run as a script (not `-m`) so that the same file can time an older checkout's
`indexing` through PYTHONPATH. Printed: ms of repair per question, median of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import support_module

SAMPLE_WIKI = Path(__file__).resolve().parents[1] / "sample-wiki"
gibberish = support_module("hostile_inputs").gibberish


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, help="a synced KB_HOME; default: the sample wiki in a temp dir")
    parser.add_argument("--chars", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    from connectors.markdown import MarkdownFolder
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from indexing.search.spelling import english_words, repair_question
    from indexing.ingest.sync import sync_documents

    home = args.home or Path(tempfile.mkdtemp(prefix="docent-bench-"))
    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    try:
        if args.home is None:
            wiki = MarkdownFolder(SAMPLE_WIKI, source="sample", exclude=["*.jsonl"])
            sync_documents(index, wiki.documents(), "sample")
        english_words()
        repair_question(index, "how do I cnonect to the VPN?", None)  # keyword index loaded outside the timing
        question = gibberish(args.chars)
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            repair = repair_question(index, question, None)
            times.append((time.perf_counter() - started) * 1000)
            print(f"  {times[-1]:.1f} ms, {len(repair.corrections)} words repaired", file=sys.stderr, flush=True)
    finally:
        index.close()
    print(f"| {args.chars:,} characters | {statistics.median(times):.1f} ms of repair (median of {args.rounds}) |")


if __name__ == "__main__":
    main()
