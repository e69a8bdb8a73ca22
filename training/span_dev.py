"""How an exported span reader does on its own development split, the gold paragraph given.

`training.span_data` holds two training articles out as `dev.jsonl` for choosing checkpoints
(never the public evaluation questions). Per example the reader reads the question against its
own paragraph: AUC of "best span − no answer" between the answerable and the unanswerable ones
(can it tell them apart when the right paragraph is in front of it?), and on the answerable ones
how often its span overlaps the gold answer and the mean token F1 (SQuAD's own measure). Every
checkpoint is scored by this one script, so r1, r2, r3 … compare.

    python -m training.span_dev /work/kb/span/r2-int8.onnx /work/kb/span/r3-int8.onnx --data /work/kb/span/data
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class DevScore:
    model: str
    answerable: int
    unanswerable: int
    auc: float | None
    overlap: float  # share of answerable examples whose span shares a character with the gold answer
    f1: float  # mean token F1 of the span against the gold answer, answerable examples


def token_f1(predicted: str, gold: str) -> float:
    p, g = _WORD.findall(predicted.lower()), _WORD.findall(gold.lower())
    common = sum((Counter(p) & Counter(g)).values())
    if not common:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def score(model: Path, data: Path) -> DevScore:
    from indexing.search.span_reader import SpanReader
    from training.reader_eval import auc
    from training.span_data import read

    reader = SpanReader(model)
    examples = read(data / "dev.jsonl")
    positive, negative, overlaps, f1s = [], [], [], []
    for example in examples:
        span = reader.read(example.question, [example.context])[0]
        if example.answer_start is None:
            negative.append(span.score)
            continue
        positive.append(span.score)
        gold_end = example.answer_start + len(example.answer_text)
        overlaps.append(span.start < gold_end and example.answer_start < span.end)
        f1s.append(token_f1(span.text, example.answer_text))
    return DevScore(model.name, len(positive), len(negative), auc(positive, negative),
                    sum(overlaps) / len(overlaps), sum(f1s) / len(f1s))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", type=Path, nargs="+", help="exported span readers (training.span_export)")
    parser.add_argument("--data", type=Path, required=True, help="the folder training.span_data wrote")
    args = parser.parse_args(argv)
    print("| model | answerable / unanswerable | AUC | span overlaps gold | token F1 |")
    print("|---|---|---|---|---|")
    for model in args.models:
        s = score(model, args.data)
        auc = "—" if s.auc is None else f"{s.auc:.3f}"
        print(f"| {s.model} | {s.answerable} / {s.unanswerable} | {auc} | {s.overlap:.2f} | {s.f1:.2f} |", flush=True)


if __name__ == "__main__":
    main()
