"""Could a wiki's own sections tell where its "not found" threshold lies? A probe, measured and not
built: `python -m training.wiki_probe sample clef sg squad --home '/path/idx/{corpus}'`.

Issue 34 suggests thresholds fitted at sync time on the wiki's own sections: a section's best
score with the section removed is a near-topic "not here" example for that wiki. The probe asks
each set's index a pseudo-question per sampled section — `A`: the page title and the section's
heading, `B`: its first sentence — and keeps the best cosine among sections of *other* pages (the
section's page removed). If the sets' "not here" medians ordered them as their real unanswerable
questions' scores do, a per-wiki shift of the thresholds would follow; they do not
(docs/tuning.md, *Thresholds per wiki*), so nothing of this ships.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
from pathlib import Path

from training.question_sets import CORPORA

SECTIONS = 150  # sampled per set
MIN_WORDS = 30  # a section shorter than this makes no question


def first_sentence(markdown: str, words: int = 20) -> str:
    """The section's first sentence as plain words (headings and Markdown marks dropped), cut at `words`."""
    body = re.sub(r"^#+ .*$", "", markdown, flags=re.M)
    body = " ".join(re.sub(r"[*_`>\[\]|#-]", " ", body).split())
    return " ".join(re.split(r"(?<=[.!?])\s", body)[0].split()[:words])


def not_here(corpus: str, home: Path, sections: int = SECTIONS, seed: int = 7) -> dict[str, list[float]]:
    """Per pseudo-question kind, the best cosine among other pages' sections, one per sampled section."""
    from connectors.markdown import MarkdownFolder
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from indexing.ingest.chunking import chunk_document
    from indexing.search.retrieval import retrieve

    folder = CORPORA[corpus][0]
    docs = MarkdownFolder(folder, source=corpus, exclude=["*.jsonl", "SOURCE.md", "LICENSE*", "docent.toml"]).documents()
    parents = [(d, p) for d in docs for p in chunk_document(d) if len(p.text.split()) >= MIN_WORDS]
    random.Random(seed).shuffle(parents)
    found: dict[str, list[float]] = {"A": [], "B": []}
    index = Index(IndexConfig(home=home, rerank=RerankConfig(backend="off")))
    try:
        for doc, parent in parents[:sections]:
            for kind, question in (("A", f"{doc.title} {parent.heading}".strip()), ("B", first_sentence(parent.text))):
                if len(question.split()) < 2:
                    continue
                others = [h.cosine for h in retrieve(index, question, top_k=20).hits
                          if h.path != doc.path and h.cosine is not None]
                if others:
                    found[kind].append(max(others))
    finally:
        index.close()
    return found


def main() -> None:
    from bot.quality.gate_fit import score_of
    from training.reader_eval import load_rows

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="+", choices=sorted(CORPORA))
    parser.add_argument("--home", required=True, help="each set's KB_HOME, with {corpus} in it")
    args = parser.parse_args()
    print("| set | not here, A: median (q25–q75) | not here, B: median (q25–q75) | real unanswerable: median |")
    print("|---|---|---|---|")
    for corpus in args.corpora:
        probe = not_here(corpus, Path(args.home.format(corpus=corpus)))
        real = [score_of(r) for r in load_rows((corpus,)) if r["kind"] == "not_found" and r["set"] != "foreign"]
        cells = []
        for kind in ("A", "B"):
            q = statistics.quantiles(probe[kind], n=4)
            cells.append(f"{q[1]:.2f} ({q[0]:.2f}–{q[2]:.2f}), n {len(probe[kind])}")
        print(f"| {corpus} | {cells[0]} | {cells[1]} | {statistics.median(real) if real else float('nan'):.2f} |")


if __name__ == "__main__":
    main()
