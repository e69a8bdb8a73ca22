"""Which of a question's words and a verified question's are one word said two ways.

The matcher (`bot.verified.matching`) sets aside the words a question and a verified question
share; of those left, a pair that is one word said two ways is set aside too, before it decides
whether one thing was swapped for another (a near miss) or the question is worded otherwise:

- one written short or spelt another way ("pw" / "password", "bldg" / "building", "portugal" /
  "portuguese", "licence" / "license");
- two words WordNet says mean the same — they share a synset among each one's first senses
  ("parcel" / "package", "misplace" / "lose", "reserve" / "book"); co-hyponyms do not
  ("breakfast" / "lunch" are both a "meal", a near miss). The table, `wordnet_synonyms.txt`, is
  built from WordNet 3.0 by training/wordnet_synonyms.py. Names and numbers never pair this way:
  "Lisbon" is not "Portland" whatever a dictionary says;
- an acronym and the words it stands for ("DPO" / "data protection officer": `acronyms`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from bot.verified.question_words import Word

SYNONYMS_FILE = Path(__file__).with_name("wordnet_synonyms.txt")


def pair_off(missing: list[Word], extra: list[Word], same: Callable[[Word, Word], bool]) -> tuple[list[Word], list[Word]]:
    """Pairs of a missing and an extra word that `same` says are one, taken out of both lists."""
    kept_extra: list[Word] = []
    left = list(missing)
    for word in extra:
        match = next((m for m in left if same(word, m)), None)
        if match is None:
            kept_extra.append(word)
        else:
            left.remove(match)
    return left, kept_extra


def same_word(a: Word, b: Word) -> bool:
    """One word written short or spelt another way ("pw" for "password", "portugal" / "portuguese"),
    or two words WordNet says mean the same ("parcel" / "package", "misplaced" / "lost"; names and
    numbers never: "Lisbon" is not "Portland" whatever a dictionary says)."""
    if _abbreviates(a.surface, b.surface) or _abbreviates(b.surface, a.surface):
        return True
    return a.kind == b.kind == "word" and _synonyms_in_wordnet(a.term, b.term)


def _synonyms_in_wordnet(a: str, b: str) -> bool:
    groups = _wordnet_groups()
    return not groups.get(a, frozenset()).isdisjoint(groups.get(b, frozenset()))


@lru_cache(maxsize=1)
def _wordnet_groups() -> dict[str, frozenset[int]]:
    """Each word's groups in `SYNONYMS_FILE` (built from WordNet by training/wordnet_synonyms.py)."""
    found: dict[str, set[int]] = {}
    with SYNONYMS_FILE.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if not line.startswith("#"):
                for word in line.split():
                    found.setdefault(word, set()).add(number)
    return {word: frozenset(groups) for word, groups in found.items()}


def acronyms(missing: list[Word], question: tuple[Word, ...], extra: list[Word],
              variant: tuple[Word, ...]) -> tuple[list[Word], list[Word]]:
    """An acronym on one side written out on the other ("DPO" / "data protection officer", "EV" /
    "electric vehicle"): the acronym and the words whose initials spell it, out of both lists."""
    for acronym in [w for w in missing if w.kind == "name" and w.surface.isalpha() and 2 <= len(w.surface) <= 6]:
        spelt = _spelling(acronym.surface, question, extra)
        if spelt:
            missing = [w for w in missing if w is not acronym]
            extra = [w for w in extra if not any(w is s for s in spelt)]
    for acronym in [w for w in extra if w.kind == "name" and w.surface.isalpha() and 2 <= len(w.surface) <= 6]:
        spelt = _spelling(acronym.surface, variant, missing)
        if spelt:
            extra = [w for w in extra if w is not acronym]
            missing = [w for w in missing if not any(w is s for s in spelt)]
    return missing, extra


def _spelling(acronym: str, words: tuple[Word, ...], unmatched: list[Word]) -> tuple[Word, ...]:
    """Consecutive unmatched words of `words` whose initials are `acronym`, or ()."""
    n = len(acronym)
    for start in range(len(words) - n + 1):
        run = words[start:start + n]
        if "".join(w.surface[:1] for w in run) == acronym and all(any(w is u for u in unmatched) for w in run):
            return run
    return ()


def _abbreviates(short: str, long: str) -> bool:
    """"pw" → "password", "bldg" → "building", "acct" → "account", "portugal" → "portuguese",
    "license" → "licence", "center" → "centre": the same first five letters, one edit apart (words
    of six letters or more: spellings and typos; "lunch" is not "launch"), or an abbreviation of at
    most four letters of a word of six or more (the same first letter, its letters in order in the
    long word): two short words are two things, "UPS" is not "USPS"."""
    if len(short) > len(long) or not short or short[0] != long[0] or not short.isascii():
        return False
    if long in (short + "s", short + "es"):  # a plural the stemmer leaves alone: "ndas", "pcs"
        return True
    if len(short) >= 5 and long.startswith(short[:5]) or len(short) >= 6 and _one_edit(short, long):
        return True
    if len(short) > 4 or len(long) < 6:
        return False
    letters = iter(long)
    return all(c in letters for c in short)


def _one_edit(a: str, b: str) -> bool:
    """Whether `a` becomes `b` by one letter changed, added, dropped, or two neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return (a[i + 1:] == b[i + 1:] or a[i:] == b[i + 1:] or a[i + 1:] == b[i:]
            or a[i:i + 2] == b[i:i + 2][::-1] and a[i + 2:] == b[i + 2:])
