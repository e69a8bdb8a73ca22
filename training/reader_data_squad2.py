"""Training pairs for the built-in reader from SQuAD 2.0's *own* unanswerable questions.

Session 12's second stage taught the reader SQuAD 2.0-like unanswerable questions made by rule
(`training.reader_data --adversarial`: a negation, an antonym, a changed number). The crowd's
own edits are subtler — a plausible answer of the right type sits in the paragraph, but for a
different question — and the official train file is not in any mirror the search tool's `fetch`
reaches. What is: the first ten articles of `train-v2.0.json`, uploaded by a third party
(github:PhongNTDo/guide_train_MRC_transformers at `SOURCE_COMMIT`; SQuAD 2.0, Rajpurkar, Jia &
Liang 2018, CC BY-SA 4.0). Two of them (*The Legend of Zelda: Twilight Princess*, *Spectre (2015
film)*) carry 348 unanswerable questions, each with the crowd's "plausible answer".

Pairs, over the articles that have unanswerable questions:
- `squad2`: an unanswerable question with the window around its plausible answer, label 0 — the
  passage looks like it answers, which is exactly what the gate must not believe;
- `pos`: every answerable question of the same articles with the window around its answer.
A share is rewritten casually, as in `reader_data`. `--replay FILE --replay-n N` mixes in N pairs
of an earlier stage's set (seeded), so a short fine-tune does not forget the handbook-like
negatives. SQuAD 2.0's dev articles (the `squad` evaluation corpus) are checked to be absent.

    python -m training.reader_data_squad2 --mirror /work/.mirror/PhongNTDo+guide_train_MRC_transformers/repo \
        --replay /work/kb/reader/data/pairs-v4.jsonl --replay-n 4000 --out /work/kb/reader/data/pairs-v6.jsonl

With the whole official file at hand (`--file train-v2.0.json`, 130k questions, 43k unanswerable),
`--max-questions N` keeps a seeded N of them: 2 cores train ~1 step of 16 pairs a second.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
from dataclasses import asdict
from pathlib import Path

from training.reader_data import CASUAL_SHARE, _SENTENCE, Pair, evaluation_titles, window

SOURCE_COMMIT = "f626fe886397c8c6b71fdb453707a1522b5c52dd"
SOURCE_PATH = "train-v2.0.json"


def _sentence_at(sentences: list[str], context: str, offset: int) -> int:
    """Index of the sentence of `sentences` (split from `context`) that holds character `offset`."""
    position = 0
    for k, sentence in enumerate(sentences):
        start = context.find(sentence, position)
        if start < 0:
            continue
        if offset < start + len(sentence):
            return k
        position = start + len(sentence)
    return len(sentences) - 1


def read_source(mirror: Path | None, file: Path | None) -> list[dict]:
    """The articles of a SQuAD 2.0 train file: the pinned excerpt in a mirror, or a file given."""
    if file is not None:
        return json.loads(file.read_text())["data"]
    if mirror is None:
        raise SystemExit("give --mirror (the excerpt) or --file (a SQuAD 2.0 train file)")
    raw = subprocess.run(["git", "-C", str(mirror), "show", f"{SOURCE_COMMIT}:{SOURCE_PATH}"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(raw)["data"]


def build(data: list[dict], seed: int, max_questions: int | None = None) -> list[Pair]:
    from training.question_sets import casual

    titles = {a["title"].replace("_", " ") for a in data}
    overlap = {t.lower() for t in titles} & evaluation_titles()
    if overlap:
        raise SystemExit(f"training articles overlap the evaluation corpus: {sorted(overlap)}")
    rng = random.Random(seed)
    items = [(article["title"].replace("_", " "), paragraph, qa) for article in data
             if any(q["is_impossible"] for p in article["paragraphs"] for q in p["qas"])
             for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    if max_questions is not None and max_questions < len(items):
        items = random.Random(seed + 2).sample(items, max_questions)
    pairs: list[Pair] = []
    for title, paragraph, qa in items:
        context = paragraph["context"]
        sentences = _SENTENCE.split(context)
        spans = qa["plausible_answers"] if qa["is_impossible"] else qa["answers"]
        if not spans:
            continue
        centre = _sentence_at(sentences, context, spans[0]["answer_start"])
        question = qa["question"].strip()
        asked = casual(question, f"{title}:{question}") if rng.random() < CASUAL_SHARE else question
        label, kind = (0, "squad2") if qa["is_impossible"] else (1, "pos")
        pairs.append(Pair(asked, f"{title}: " + window(sentences, centre), label, kind, title))
    return pairs


def replay(path: Path, n: int, seed: int) -> list[Pair]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Pair(**row) for row in random.Random(seed).sample(rows, min(n, len(rows)))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, help="a fetch of github:PhongNTDo/guide_train_MRC_transformers")
    parser.add_argument("--file", type=Path, help="a SQuAD 2.0 train file instead (the official train-v2.0.json)")
    parser.add_argument("--max-questions", type=int, help="a seeded sample of this many questions")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--replay", type=Path, help="an earlier stage's pairs to mix in")
    parser.add_argument("--replay-n", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args(argv)
    pairs = build(read_source(args.mirror, args.file), args.seed, args.max_questions)
    if args.replay:
        pairs += replay(args.replay, args.replay_n, args.seed)
    random.Random(args.seed).shuffle(pairs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_text("".join(json.dumps(asdict(p)) + "\n" for p in pairs))
    partial.replace(args.out)
    kinds: dict[str, int] = {}
    for p in pairs:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    print(f"{len(pairs)} pairs: {kinds} → {args.out}")


if __name__ == "__main__":
    main()
