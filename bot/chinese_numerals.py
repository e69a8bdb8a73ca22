"""Chinese numerals as numbers: 二十五 → 25, 一千五百 → 1500, 两 → 2, 二〇二四 → 2024.

Two checks compare numbers across ways of writing them — a model's answer against its cited pages
(`bot.answering.grounding`) and an asker's question against a verified one
(`bot.verified.matching`: "加班到九点" is "加班到9点") — and both must read 九 as 9 the same way.
A lone numeral is a number only before a measure word: 一些 (some) and 一起 (together) hold none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
UNITS = {"十": 10, "百": 100, "千": 1000}
BIG = {"万": 10_000, "亿": 100_000_000}
NUMERAL = re.compile("[零〇一二两三四五六七八九十百千万亿]+")
# The measure words after which a lone numeral counts something: 三天 (three days), 五个 (five of).
MEASURE_WORDS = frozenset("个天周月年日号次元块人小时秒岁倍项条名位家季期级页张台件门轮份")
IDIOMS = frozenset({"万一", "千万", "一一", "十分", "百分"})  # "in case", "by all means", "one by one", "very"


def value(run: str) -> int:
    """The number a run of `NUMERAL` characters writes."""
    if len(run) > 1 and all(ch in DIGITS for ch in run):
        return int("".join(str(DIGITS[ch]) for ch in run[:18]))  # a longer run is no number anyone writes
    total = section = digit = 0
    for ch in run:
        if ch in DIGITS:
            digit = DIGITS[ch]
        elif ch in UNITS:
            section += (digit or 1) * UNITS[ch]
            digit = 0
        else:
            total = (total + section + digit or 1) * BIG[ch]
            section = digit = 0
    return total + section + digit


def counted(text: str, measure_words: frozenset[str] = MEASURE_WORDS) -> Iterator[re.Match[str]]:
    """The numeral runs of `text` that are numbers: two characters or more (not an idiom), or one
    before a measure word."""
    for m in NUMERAL.finditer(text):
        run = m.group(0)
        if run in IDIOMS or len(run) == 1 and text[m.end():m.end() + 1] not in measure_words:
            continue
        yield m
