"""What the CommonMark parser costs: the 821-page handbook read and chunked, and its share.

    .venv/bin/python -m benchmarks.markdown_parsing [--repeat 3]

Reads every page through the Markdown connector and chunks it, the way a sync does before it
embeds; then parses the same texts alone with `connectors.commonmark.parse` (a sync parses each
page twice: the connector for its title and front matter, the chunker for its sections). The
ratio says how much of reading + chunking is the parser; embedding the same pages costs
~400 s on these machines (docs/benchmarks.md), so both are small next to it. Also times the
hostile shapes that once stalled the chunker, one page each.
"""

from __future__ import annotations

import argparse
import time

from benchmarks._common import CORPUS_EXCLUDES, HANDBOOK, require, table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3, help="passes over the corpus; the best is reported")
    args = parser.parse_args()

    from connectors.commonmark import parse
    from connectors.markdown import MarkdownFolder
    from indexing.ingest.chunking import _count_tokens, chunk_document

    folder = MarkdownFolder(require(HANDBOOK), source="handbook", exclude=CORPUS_EXCLUDES)
    paths = list(folder.paths())
    _count_tokens("load the tokenizer before the clock starts")
    chunk_document(folder.read(paths[0]))  # and the sentence splitter
    best = {"read": float("inf"), "chunk": float("inf"), "parse": float("inf")}
    for _ in range(args.repeat):
        started = time.perf_counter()
        docs = [folder.read(rel) for rel in paths]
        best["read"] = min(best["read"], time.perf_counter() - started)
        texts = [d.text for d in docs if not d.error]
        started = time.perf_counter()
        parents = sum(len(chunk_document(d)) for d in docs if not d.error)
        best["chunk"] = min(best["chunk"], time.perf_counter() - started)
        started = time.perf_counter()
        for text in texts:
            parse(text)
        best["parse"] = min(best["parse"], time.perf_counter() - started)
    chars = sum(len(t) for t in texts)
    table(f"{len(paths)} pages, {chars / 1e6:.1f} M characters, {parents:,} parent sections (best of {args.repeat})", [
        ("read (connector: decode, front matter, title, dates)", f"{best['read']:.2f} s"),
        ("chunk (sections, splitting, token counts)", f"{best['chunk']:.2f} s"),
        ("parse alone, once per page", f"{best['parse']:.2f} s ({best['parse'] / len(texts) * 1000:.1f} ms/page)"),
        ("parser share of read + chunk (it runs twice)",
         f"{2 * best['parse'] / (best['read'] + best['chunk']):.0%}"),
    ])

    hostile = {
        "500,000 `[` in one paragraph": "[" * 500_000,
        "1,000 headings of 298 `[` and a `]`": ("# " + "[" * 298 + "]\n") * 1_000,
        "a heading with 200,000 closing `#`s": "## b " + "#" * 200_000 + " y\n",
        "20,000 headings": "# h\n\n" * 20_000,
        "a table 20,000 cells wide": "|" + "a|" * 20_000 + "\n|" + "-|" * 20_000 + "\n" + ("|" + "x|" * 20_000 + "\n") * 5,
    }
    rows = []
    for name, text in hostile.items():
        started = time.perf_counter()
        parse(text)
        rows.append((f"{name} ({len(text):,} chars)", f"{time.perf_counter() - started:.2f} s"))
    table("hostile pages, parsed once", rows)


if __name__ == "__main__":
    main()
