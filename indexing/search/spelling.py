"""Typo repair for questions: a misspelt word is searched as the wiki word one edit away from it.

People type questions in chat: "how much paretnal leave do we get", "whats the wellness stipend
amuont". A misspelt word is a word no page uses, so the keyword leg cannot match it, and it
pulls the question's vector away from the page that answers it — the answer drops from
*answered* to *uncertain*, or its page from first place (docs/tuning.md, "Typos").

The rule is deliberately narrow, so that a correct word is never "repaired" into another:

- only a word of `MIN_LENGTH`–`MAX_LENGTH` letters (among short words many real words are one edit
  apart: "dad" / "day") that the visible wiki never uses and that an English dictionary
  (pyspellchecker's) does not know — "babysitter", "grandma" and "Brazil" stay as they are;
- it becomes the word at Damerau–Levenshtein distance 1 (a letter dropped, added, changed, or
  two neighbours swapped) that the visible wiki uses most often, in at least `MIN_CHUNKS` chunks;
- that word must itself be a dictionary word or a term the stemmer leaves as it is (a name such as
  "graphengine"), so a stem that happens to be common ("availes" → "avail") is not taken for a word.

A word the wiki writes hyphenated is searched as the wiki writes it: "coworking" where the pages
say "co-working", "twofactor" for "two-factor". Such a word is unknown to the wiki and to the
dictionary like a typo, but it is no typo of any one wiki word; it is two, and the question's
vector is as far from the page as a typo's (clef's "can i get money back for a coworking
space?": cosine 0.29 as typed, 0.35 as the page spells it — not found, then uncertain). A split
counts only where a visible chunk holds the hyphenated form, and it is tried before the typos.
The other way round too: "un-elected" is searched as "unelected" where the wiki writes it whole
and never hyphenated (the keyword leg would look for "un" and "elected").

Only what the asker may see counts, so a restricted page's vocabulary never steers a question.
The question is searched (both legs, the gate, the lead) as repaired; the asker's own words are
what is logged and shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from indexing.keyword import bm25 as bm25_module

if TYPE_CHECKING:
    from indexing.search.searched_index import SearchedIndex

MIN_LENGTH = 6
MAX_LENGTH = 30  # longer "words" are not typos of words (a pasted hash, "xxxx…"): 54·n+25 candidates each
MIN_CHUNKS = 2
MIN_JOINED = 4  # "e-mail" → "email": joining two halves is no guess among near words, so short is fine
MIN_PART = 2  # letters on each side of a split: "co-working"
COMPOUND_CHUNKS = 20  # keyword hits of a split's two halves whose text is looked at for the hyphen
COMPOUND_WORDS = 8  # words of one question looked at as compounds: each may cost two keyword searches
# Per question, whatever its length: a pasted wall of gibberish (Slack allows 40,000 characters)
# cost 131.6 s of repair with no cap, holding an answer worker (docs/benchmarks.md, "Long questions").
LOOKED_AT = 64  # distinct words of one question looked at, in the order typed
TYPO_WORDS = 8  # unknown words of one question repaired: each costs ~54·n+25 candidates and a keyword lookup
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# A whole ASCII word, not part of a contraction or a longer token ("couldn't", "v2", "on_call");
# next to Chinese text it is a word too ("提名新mantainer怎么投票").
_WORD = re.compile(r"(?<![A-Za-z0-9_'’])[A-Za-z]+(?![A-Za-z0-9_'’])")
_HYPHENATED = re.compile(r"(?<![A-Za-z0-9_'’-])([A-Za-z]+)-([A-Za-z]+)(?![A-Za-z0-9_'’-])")


@dataclass(frozen=True)
class Repair:
    """A question as searched, and the words that were repaired in it (original, repaired)."""

    text: str
    corrections: list[tuple[str, str]] = field(default_factory=list)


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """pyspellchecker's English word list (~70k words), loaded once per process (~0.3 s)."""
    from spellchecker import SpellChecker

    return frozenset(SpellChecker(language="en").word_frequency.keys())


def one_edit_away(word: str) -> set[str]:
    """Every string at Damerau–Levenshtein distance 1 from `word` (lower-case ASCII letters)."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return ({a + b[1:] for a, b in splits if b}
            | {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
            | {a + c + b[1:] for a, b in splits if b for c in _LETTERS}
            | {a + c + b for a, b in splits for c in _LETTERS}) - {word}


def repair_question(index: SearchedIndex, question: str, scopes: list[str] | None, compounds: bool = True) -> Repair:
    """The question with each misspelt word replaced by the wiki word it most likely means.
    `compounds=False`: typos only (`benchmarks.compound_repair` times the two in one process)."""
    joined = joined_compounds(index, question, scopes) if compounds else Repair(question)
    question = joined.text
    words = _first_words(question)
    if not words:
        return joined
    dictionary = english_words()
    candidates = [w for w in words if w not in dictionary]
    if not candidates:
        return joined
    stems = dict(zip(candidates, bm25_module.tokens_of_each(candidates)))
    used = index.bm25.doc_freq({t for terms in stems.values() for t in terms}, scopes)
    unknown = [w for w in candidates if stems[w] and not any(used[t] for t in stems[w])]
    choices: dict[str, str] = {}
    # A stem in use is no proof: "coworking" stems as "coworkers" does. A pasted wall of text
    # has its first few words looked at, not hundreds (each may cost two keyword searches).
    just_joined = {whole.lower() for _, whole in joined.corrections}  # known not to be written hyphenated
    for word in [w for w in candidates if w not in just_joined][:COMPOUND_WORDS] if compounds else []:
        compound = hyphenated(index, word, scopes, checked=word not in unknown)
        if compound:
            choices[word] = compound
    for word in [w for w in unknown if w not in choices][:TYPO_WORDS]:
        edits = sorted(one_edit_away(word))
        terms = bm25_module.tokens_of_each(edits)
        # A candidate is one analysed term, and a word in its own right.
        usable = {e: t[0] for e, t in zip(edits, terms) if len(t) == 1 and (e in dictionary or t[0] == e)}
        if not usable:
            continue
        counts = index.bm25.doc_freq(set(usable.values()), scopes)
        best = max(usable, key=lambda e: counts[usable[e]])  # the first in sorted order among equals
        if counts[usable[best]] >= MIN_CHUNKS:
            choices[word] = best
    if not choices:
        return joined
    corrections: list[tuple[str, str]] = list(joined.corrections)

    def replace(match: re.Match[str]) -> str:
        original = match.group(0)
        repaired = choices.get(original.lower())
        if repaired is None:
            return original
        repaired = repaired.capitalize() if original[0].isupper() else repaired
        corrections.append((original, repaired))
        return repaired

    return Repair(_WORD.sub(replace, question), corrections)


def _first_words(question: str) -> list[str]:
    """The first `LOOKED_AT` distinct words of repairable length, lower-cased, in the order typed."""
    words: dict[str, None] = {}
    for match in _WORD.finditer(question):
        if MIN_LENGTH <= len(match.group(0)) <= MAX_LENGTH:
            words.setdefault(match.group(0).lower())
            if len(words) >= LOOKED_AT:
                break
    return list(words)


def hyphenated(index: SearchedIndex, word: str, scopes: list[str] | None, checked: bool = True) -> str | None:
    """`word` split by a hyphen the way the visible wiki writes it ("coworking" → "co-working"), or
    None. Splits whose halves the visible wiki both uses (a stop word such as "on" counts as used:
    it is not indexed) are looked for in the text of the chunks the keyword leg finds for the two
    halves — a handful of splits at most, only for a word the dictionary does not know. `checked`:
    the word's stem is in use ("coworking" as "coworkers"), so the word must also not be written
    whole in the chunks the keyword leg finds for it: a wiki that writes both keeps the asker's."""
    splits = [(word[:i], word[i:]) for i in range(MIN_PART, len(word) - MIN_PART + 1)]
    halves = dict(zip([h for split in splits for h in split],
                      bm25_module.tokens_of_each([h for split in splits for h in split])))
    used = index.bm25.doc_freq({t for terms in halves.values() for t in terms}, scopes)
    plausible = [(a, b) for a, b in splits
                 if all(all(used[t] for t in halves[h]) for h in (a, b)) and any(halves[a] + halves[b])]
    for a, b in plausible:
        if _written(index, f"{a} {b}", rf"{a}-{b}", scopes):
            if checked and _written(index, word, word, scopes):
                return None
            return f"{a}-{b}"
    return None


def joined_compounds(index: SearchedIndex, question: str, scopes: list[str] | None) -> Repair:
    """The question with each hyphenated word the visible wiki writes whole, and never hyphenated,
    written whole ("un-elected" → "unelected")."""
    corrections: list[tuple[str, str]] = []
    decided: dict[str, bool] = {}  # lower-cased "a-b" → written whole: each asked once, at most COMPOUND_WORDS

    def join(match: re.Match[str]) -> str:
        a, b = match.group(1), match.group(2)
        whole = a + b
        key = match.group(0).lower()
        if key not in decided and len(decided) < COMPOUND_WORDS and MIN_JOINED <= len(whole) <= MAX_LENGTH:
            terms = bm25_module.tokens_of_each([whole])[0]
            used = index.bm25.doc_freq(set(terms), scopes) if terms else {}
            decided[key] = bool(terms and all(used[t] for t in terms) and _written(index, whole, whole, scopes)
                                and not _written(index, f"{a} {b}", f"{a}-{b}", scopes))
        if decided.get(key):
            corrections.append((match.group(0), whole))
            return whole
        return match.group(0)

    return Repair(_HYPHENATED.sub(join, question), corrections)


def _written(index: SearchedIndex, search: str, pattern: str, scopes: list[str] | None) -> bool:
    """Whether a chunk the keyword leg finds for `search` holds `pattern` as a whole word."""
    hits = index.bm25.search(search, scopes, COMPOUND_CHUNKS)
    if not hits:
        return False
    with index.read_session() as session:
        texts = index.store.texts(session, [h.node_id for h in hits])
    written = re.compile(rf"(?<![A-Za-z]){pattern}(?![A-Za-z])", re.IGNORECASE)
    return any(written.search(text) for text in texts.values())
