"""Examples for the span reader: a question, a passage, and where in the passage the answer is — or
that it is not there.

The reader must *point at the answer's words or abstain* (issue 34), so each example is a SQuAD 2.0
style triple: (question, context, answer character offset or None). Sources, all with provenance:

- `squad2`: `../shared/reader-data/squad2-dev/train.jsonl` — SQuAD 2.0 dev questions of the 23
  training articles (Rajpurkar, Jia & Liang 2018, CC BY-SA 4.0; see its SOURCE.md). Its 3,556
  unanswerable questions were written by the crowd to look answerable from their paragraph, each
  with the *plausible* span a careless reader would give: paired with that very paragraph and
  labelled "no answer", they are the hard negatives a handbook's near-topic questions need.
- `squad1`: SQuAD 1.1 *train* article pages (`explore/1.0/train/*.html` of
  github:rajpurkar/SQuAD-explorer at `SQUAD_COMMIT`, Rajpurkar et al. 2016, CC BY-SA 4.0),
  answerable questions with their paragraph; the answer's offset is its first occurrence.
- `near`: a SQuAD 1.1 question paired with the *other* paragraph of its article that shares most of
  its words and does not hold the answer — on topic, no answer (what retrieval hands the reader when
  the wiki talks about the subject but never says the thing asked).

A share of questions is rewritten the casual way employees type (`training.question_sets.casual`).
Contexts carry their article title in front, as Docent gives the reader "title › heading path" and
the section text.

Evaluation data is kept out: the SQuAD 2.0 evaluation articles (`eval_articles.txt`, the
`squad2-wiki` corpus) must not appear among the SQuAD 1.1 articles (the script stops if one does),
and two of the 23 training articles are held out as a development split (`dev.jsonl`) for choosing
checkpoints — never the public evaluation questions.

    python -m training.span_data --mirror /work/.mirror/rajpurkar+SQuAD-explorer/repo \
        --out /work/kb/span/data --squad1 14000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

READER_DATA = Path(os.environ.get("KB_READER_DATA", Path(__file__).resolve().parents[2] / "shared" / "reader-data"))
SQUAD2_DEV = READER_DATA / "squad2-dev"
CASUAL_SHARE = 0.3
NEAR_SHARE = 0.35  # of SQuAD 1.1 questions also paired with a near-topic paragraph of their article
DEV_ARTICLES = 2
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("the a an of in on to for and or is are was were be been by with as at from that this which who whom "
                  "what when where why how did does do its it their his her they he she than then into about".split())


@dataclass(frozen=True)
class SpanExample:
    id: str
    question: str
    context: str
    answer_start: int | None  # character offset into `context`; None: the context does not answer
    answer_text: str  # the answer, or for an unanswerable SQuAD 2.0 question its plausible span ("" if none)
    kind: str  # squad2 | squad2-unanswerable | squad1 | near
    article: str


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _titled(title: str, paragraph: str) -> tuple[str, int]:
    """The context as the reader sees it, and how far the paragraph is shifted in it."""
    head = f"{title}\n"
    return head + paragraph, len(head)


def squad2_examples(path: Path, rng: random.Random, repeat: int = 1) -> list[SpanExample]:
    """Every question of `path`, `repeat` times (each copy drawn anew for a casual rewrite, the copies
    after the first with `~N` ids): as SQuAD 1.1's share grows, the hard negatives keep their weight."""
    out = []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for copy in range(repeat):
        out += [_squad2_example(row, rng, copy) for row in rows]
    return out


def _squad2_example(row: dict, rng: random.Random, copy: int) -> SpanExample:
    context, shift = _titled(row["title"].replace("_", " "), row["context"])
    key = row["id"] if copy == 0 else f"{row['id']}~{copy}"
    question = _maybe_casual(row["question"], key, rng)
    if row["is_impossible"]:
        plausible = row["plausible_answers"][0]["text"] if row["plausible_answers"] else ""
        return SpanExample(key, question, context, None, plausible, "squad2-unanswerable", row["title"])
    answer = row["answers"][0]
    return SpanExample(key, question, context, answer["start"] + shift, answer["text"], "squad2", row["title"])


def _maybe_casual(question: str, key: str, rng: random.Random) -> str:
    from training.question_sets import casual

    return casual(question, key) if rng.random() < CASUAL_SHARE else question


def squad1_examples(mirror: Path, n_questions: int, rng: random.Random, forbidden: set[str]) -> list[SpanExample]:
    from training.reader_data import articles

    pages = articles(mirror)
    clash = sorted(t for t in pages if t.lower() in forbidden)
    if clash:
        raise SystemExit(f"evaluation articles among the SQuAD 1.1 pages: {clash}")
    pool = [(title, k, q, a) for title, paragraphs in pages.items() for k, p in enumerate(paragraphs) for q, a in p.qas]
    rng.shuffle(pool)
    out: list[SpanExample] = []
    for n, (title, k, question, answer) in enumerate(pool[:n_questions]):
        paragraph = pages[title][k].text
        offset = paragraph.find(answer)
        if offset < 0 or not answer:
            continue
        context, shift = _titled(title, paragraph)
        asked = _maybe_casual(question, f"s1-{n}", rng)
        out.append(SpanExample(f"s1-{n}", asked, context, offset + shift, answer, "squad1", title))
        if rng.random() < NEAR_SHARE:
            near = _nearest_other(question, answer, pages[title], k)
            if near is not None:
                context, _ = _titled(title, near)
                out.append(SpanExample(f"s1-{n}-near", asked, context, None, "", "near", title))
    return out


def _nearest_other(question: str, answer: str, paragraphs, own: int) -> str | None:
    """The article's other paragraph sharing most of the question's words, without the answer."""
    asked = _words(question)
    best, best_overlap = None, 0
    for k, paragraph in enumerate(paragraphs):
        if k == own or answer.lower() in paragraph.text.lower():
            continue
        overlap = len(asked & _words(paragraph.text))
        if overlap > best_overlap:
            best, best_overlap = paragraph.text, overlap
    return best


def build(mirror: Path, n_squad1: int, seed: int, squad2_repeat: int = 1) -> tuple[list[SpanExample], list[SpanExample]]:
    """(train, dev): dev is every SQuAD 2.0 example of `DEV_ARTICLES` seeded training articles (once;
    the training articles' examples `squad2_repeat` times)."""
    rng = random.Random(seed)
    forbidden = {t.strip().replace("_", " ").lower() for t in (SQUAD2_DEV / "eval_articles.txt").read_text().splitlines()
                 if t.strip()}
    squad2 = squad2_examples(SQUAD2_DEV / "train.jsonl", rng, squad2_repeat)
    if forbidden & {e.article.replace("_", " ").lower() for e in squad2}:
        raise SystemExit("train.jsonl holds an evaluation article: the shared data is not what SOURCE.md describes")
    titles = sorted({e.article for e in squad2})
    dev_titles = set(random.Random(seed).sample(titles, DEV_ARTICLES))
    dev = [e for e in squad2 if e.article in dev_titles and "~" not in e.id]
    train = [e for e in squad2 if e.article not in dev_titles]
    train += squad1_examples(mirror, n_squad1, rng, forbidden)
    rng.shuffle(train)
    return train, dev


def write(examples: list[SpanExample], path: Path) -> None:
    """Atomically: a stopped run leaves no half file to be trusted."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(asdict(e), ensure_ascii=False) + "\n" for e in examples))
    tmp.replace(path)


def read(path: Path) -> list[SpanExample]:
    return [SpanExample(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, required=True, help="bare git directory of github:rajpurkar/SQuAD-explorer")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--squad1", type=int, default=14000, help="SQuAD 1.1 train questions to use")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--squad2-repeat", type=int, default=1,
                        help="copies of each SQuAD 2.0 training question (keeps the hard negatives' weight as --squad1 grows)")
    args = parser.parse_args(argv)
    train, dev = build(args.mirror, args.squad1, args.seed, args.squad2_repeat)
    args.out.mkdir(parents=True, exist_ok=True)
    write(train, args.out / "train.jsonl")
    write(dev, args.out / "dev.jsonl")
    kinds: dict[str, int] = {}
    for e in train:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    print(f"train {len(train)} {kinds}; dev {len(dev)} ({sorted({e.article for e in dev})})")


if __name__ == "__main__":
    main()
