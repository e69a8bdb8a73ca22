"""English numbers in words as numbers: "twenty-five" → 25, "one hundred and fifty" → 150,
"ten thousand" → 10000.

Two checks compare numbers across ways of writing them — a model's answer against its cited pages
(`bot.answering.grounding`) and an asker's question against a verified one
(`bot.verified.question_words`: "over ten thousand dollars" is "over $10,000") — and both read
words the same way, here (`bot.chinese_numerals` for Chinese).
"""

from __future__ import annotations

import re

VALUES = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())} | {w: 10 * i for i, w in enumerate(
        "twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)}
SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_WORD = "|".join(sorted([*VALUES, *SCALES], key=len, reverse=True))
NUMBER = re.compile(rf"\b(?:{_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_WORD}))*\b", re.IGNORECASE)


def value(words: str) -> int:
    """The number a run of `NUMBER` words writes."""
    total = current = 0
    for word in re.split(r"[\s-]+", words.lower()):
        if word in VALUES:
            current += VALUES[word]
        elif word == "hundred":
            current = (current or 1) * 100
        elif word in SCALES:
            total += (current or 1) * SCALES[word]
            current = 0
    return total + current
