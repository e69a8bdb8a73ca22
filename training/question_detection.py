"""Which channel messages are questions: `bot.slack.question_detector.is_question` scored on the
labelled messages of `tests/data/channel_messages.jsonl` — precision, recall and the mistakes,
for the half the rules were tuned on and the held-out half they never were.

    PYTHONPATH=. python training/question_detection.py
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bot.slack.question_detector import is_question

MESSAGES = Path(__file__).resolve().parent.parent / "tests" / "data" / "channel_messages.jsonl"


@dataclass(frozen=True)
class Score:
    split: str
    messages: int
    precision: float
    recall: float
    false_positives: list[str]
    false_negatives: list[str]


def labelled(split: str | None = None) -> list[dict]:
    rows = [json.loads(line) for line in MESSAGES.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if split is None or row["split"] == split]


def score(split: str | None) -> Score:
    rows = labelled(split)
    said = [(row, is_question(row["text"])) for row in rows]
    tp = sum(1 for row, yes in said if yes and row["question"])
    fp = [row["text"] for row, yes in said if yes and not row["question"]]
    fn = [row["text"] for row, yes in said if not yes and row["question"]]
    return Score(split or "all", len(rows), tp / max(tp + len(fp), 1), tp / max(tp + len(fn), 1), fp, fn)


def main() -> int:
    print(f"{'split':10} {'messages':>8} {'precision':>9} {'recall':>7}")
    for split in ("tune", "held_out", None):
        s = score(split)
        print(f"{s.split:10} {s.messages:8d} {s.precision:9.3f} {s.recall:7.3f}")
    started = time.perf_counter()
    rows = labelled()
    for _ in range(100):
        for row in rows:
            is_question(row["text"])
    per = (time.perf_counter() - started) / (100 * len(rows)) * 1e6
    print(f"\n{per:.1f} µs per message")
    for split in ("tune", "held_out"):
        s = score(split)
        for text in s.false_positives:
            print(f"  [{split}] false positive: {text}")
        for text in s.false_negatives:
            print(f"  [{split}] false negative: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
