"""What storing the lead's sentence vectors adds to a sync: texts, model time and rows per page.

    .venv/bin/python -m benchmarks.sentence_vectors [--corpus FOLDER] [--limit 80] [--rounds 3]

A sync now embeds, besides each page's child chunks, every sentence of every section as the lead
scores it (`indexing.vectors.sentence_vectors.of_parents`). This chunks the first `--limit` pages of a
corpus (default: the Sourcegraph handbook) and, in one process with the model loaded, embeds
their children's texts and their sentences' texts alternately, `--rounds` times each
(`TorchEmbedder.embed_texts`, the sync's own call, in the sync's batch size): the ratio of the two
times is the extra model time a from-scratch sync pays, measured under the same load. Reported
too: texts and word-pieces per page of each kind, and the rows the sentence table gets per page
and per chunk. The model is the sync's bottleneck (docs/benchmarks.md, *Indexing throughput*);
the rows' writes are measured by a real sync in the same section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks._common import CORPUS_EXCLUDES, HANDBOOK, pct, require, table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=HANDBOOK)
    parser.add_argument("--limit", type=int, default=80, help="pages (0: all)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from connectors.markdown import MarkdownFolder
    from indexing.ingest.chunking import chunk_document
    from indexing.vectors.embedding import TorchEmbedder
    from indexing.vectors.sentence_vectors import of_parents

    folder = MarkdownFolder(require(args.corpus), source="bench", exclude=CORPUS_EXCLUDES)
    pages, children, sentences = 0, [], []
    for path in list(folder.paths())[: args.limit or None]:
        doc = folder.read(path)
        parents = chunk_document(doc) if not doc.error else []
        if not parents:
            continue
        pages += 1
        children += [c.embed_text for p in parents for c in p.children]
        sentences += [t for section in of_parents(doc.title, parents) for t in section.texts]
    unique = list(dict.fromkeys(sentences))  # the sync embeds a repeated text once (cache by hash)

    embedder = TorchEmbedder()
    embedder.embed_query("load the model before the clock starts")
    st = embedder._load()._model
    pieces = lambda texts: sum(len(p) for p in st.tokenizer(texts, truncation=True, max_length=st.max_seq_length)["input_ids"])  # noqa: E731
    times: dict[str, list[float]] = {"children": [], "sentences": []}
    for _ in range(args.rounds):
        for name, texts in (("children", children), ("sentences", unique)):
            started = time.perf_counter()
            embedder.embed_texts(texts)
            times[name].append(time.perf_counter() - started)
    child_s, sentence_s = pct(times["children"], 50), pct(times["sentences"], 50)
    table(f"The lead's sentence vectors at sync time ({pages} pages of {args.corpus.name}, median of {args.rounds} rounds)", [
        ("child chunks / per page", f"{len(children):,} / {len(children) / pages:.1f}"),
        ("sentence rows (the table) / per page / per chunk",
         f"{len(sentences):,} / {len(sentences) / pages:.1f} / {len(sentences) / len(children):.2f}"),
        ("distinct sentence texts embedded", f"{len(unique):,}"),
        ("word-pieces: children / sentences", f"{pieces(children):,} / {pieces(unique):,}"),
        ("model time: children, s", child_s), ("model time: sentences, s", sentence_s),
        ("sentences / children model time", sentence_s / child_s),
        ("rounds, s (children; sentences)", f"{', '.join(f'{t:.1f}' for t in times['children'])}; "
                                            f"{', '.join(f'{t:.1f}' for t in times['sentences'])}"),
    ])


if __name__ == "__main__":
    main()
