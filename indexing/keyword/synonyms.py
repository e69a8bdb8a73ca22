"""Synonyms: the words people ask with, searched as the words the wiki uses.

A wiki says "annual leave"; people ask about "vacation" or "PTO". The embedding model bridges
some of that, the keyword leg none of it: a word no page uses matches nothing. The wiki's owners
know their vocabulary, so the sources file's `[synonyms]` table says it
(`vacation = ["annual leave", "paid time off", "PTO"]`, parsed by `sources.synonyms`):

- **One way**: a question holding the key (the asker's word) is also searched for the phrases
  (the wiki's words); a question holding "PTO" is not expanded to "vacation" unless "PTO" is a
  key of its own. A wiki owner can then add a word without changing what the wiki's own words
  find.
- **Through the keyword leg's analyser** (`indexing.keyword.bm25.tokens`): case, plurals and other
  endings do not matter ("Vacations" matches `vacation`); a key of several words matches those
  words in that order ("time off" matches "how much time off…", not "off time"), with stop words
  skipped as the keyword leg skips them. A key holding Chinese/Japanese/Korean characters matches
  where the question holds it as written ("年假" in "今年的年假有几天").
- **Weighed below the asker's words**: each added term counts `EXPANSION_WEIGHT` of a question
  term in BM25, so a page using the asker's own words still wins over one using only a synonym
  (docs/tuning.md, "Synonyms"). Terms the question already has are not added again.
- **Keyword leg only**: the vector leg embeds the question as asked. Embedding the synonyms too
  answered every answerable vocabulary question, and every near-topic unanswerable one as well
  ("is there a vacation bonus?" → the leave page, *answered*): the gate reads that cosine
  (docs/tuning.md, "Synonyms"; `IndexConfig.synonyms_in_vector` exists for that measurement).

Synonyms are configuration, but their phrases are the wiki's words: a phrase only restricted pages
use ("zorbplan" for "bonus", on HR's pages) says what those pages hold. So a phrase is searched and
shown only where a page the audience may see uses every one of its terms (`Expansion.visible`);
elsewhere the question is searched and shown as if the entry did not name it. Synonyms expand the
question *after* typo repair (`indexing.search.spelling`), so "vacaton" is repaired only if the wiki has
a word one edit away, and a key is matched in the repaired question.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from sources import SourcesError
from indexing.keyword import bm25 as bm25_module

EXPANSION_WEIGHT = 0.5  # an added term's BM25 weight against a question term's 1 (docs/tuning.md, "Synonyms")


@dataclass(frozen=True)
class Synonym:
    """One entry of the table: the asker's word (as written) and the wiki's words for it."""

    key: str
    phrases: tuple[str, ...]
    key_terms: tuple[str, ...]  # the key as the keyword leg analyses it (empty for a CJK key)
    phrase_terms: tuple[str, ...]  # the phrases' terms, each once, in order
    cjk: bool = False  # matched as written, not by its analysed terms

    def found_in(self, question: str, terms: list[str]) -> bool:
        """Whether the question (its text and its analysed terms) holds this key."""
        if self.cjk:
            return self.key.casefold() in question.casefold()
        n = len(self.key_terms)
        return any(tuple(terms[i : i + n]) == self.key_terms for i in range(len(terms) - n + 1))


@dataclass(frozen=True)
class Expansion:
    """What synonyms added to one question: the entries found in it and the weighted terms."""

    used: tuple[Synonym, ...] = ()
    terms: dict[str, float] = field(default_factory=dict)  # added keyword term → its BM25 weight

    def __bool__(self) -> bool:
        return bool(self.terms)

    def vector_text(self, question: str) -> str:
        """The question with its synonyms' phrases after it (only for `synonyms_in_vector`)."""
        return f"{question} ({', '.join(p for s in self.used for p in s.phrases)})" if self else question

    def describe(self) -> str:
        """The added words as the reply shows them: "vacation → annual leave, paid time off"."""
        return "; ".join(f"{s.key} → {', '.join(s.phrases)}" for s in self.used)

    def visible(self, used: Callable[[set[str]], Mapping[str, int]]) -> Expansion:
        """Only the phrases whose every term some page the audience may see uses (`used`: the
        keyword leg's document frequencies within the audience's scopes); an entry left with no
        phrase is dropped, as are the terms only its hidden phrases added."""
        if not self:
            return self
        phrases = {p: bm25_module.tokens_of_each([bm25_module.question_text(p)])[0] or bm25_module.tokens(p)
                   for s in self.used for p in s.phrases}
        counts = used({t for terms in phrases.values() for t in terms})
        kept: list[Synonym] = []
        terms: dict[str, float] = {}
        for synonym in self.used:
            shown = tuple(p for p in synonym.phrases if phrases[p] and all(counts.get(t, 0) for t in phrases[p]))
            if not shown:
                continue
            shown_terms = tuple(dict.fromkeys(t for p in shown for t in phrases[p]))
            kept.append(replace(synonym, phrases=shown, phrase_terms=shown_terms))
            terms.update({t: self.terms[t] for t in shown_terms if t in self.terms})
        return Expansion(tuple(kept), terms)


@dataclass(frozen=True)
class Synonyms:
    """The sources file's synonyms, analysed once at start."""

    entries: tuple[Synonym, ...] = ()

    @classmethod
    def from_table(cls, table: dict[str, list[str]], where: str = "[synonyms]") -> Synonyms:
        """Analyse `sources.synonyms.parse_synonyms`'s table; an entry the keyword leg cannot
        use (a key of stop words only, two keys that are one word to it) is a `SourcesError`
        naming it, so Docent stops at start instead of silently ignoring it."""
        if not table:
            return cls()
        keys = list(table)
        key_terms = bm25_module.tokens_of_each(keys)
        entries: list[Synonym] = []
        seen: dict[tuple[str, ...] | str, str] = {}
        for key, analysed in zip(keys, key_terms):
            here = f"{where} {key!r}"
            cjk = bool(bm25_module.CJK.search(key))
            if not cjk and not analysed:
                raise SourcesError(f"{here}: has no word the keyword index searches (only stop words such as "
                                   f"\"the\", \"it\"); use the word people actually type")
            same = key.casefold() if cjk else tuple(analysed)
            if same in seen:
                raise SourcesError(f"{here}: is the same word as {seen[same]!r} to the keyword index "
                                   f"(case and endings are ignored); put both lists under one of them")
            seen[same] = key
            phrases = table[key]
            analysed_phrases = bm25_module.tokens_of_each([bm25_module.question_text(p) for p in phrases])
            terms: list[str] = []
            for phrase, words in zip(phrases, analysed_phrases):
                words = words or bm25_module.tokens(phrase)
                if not words:
                    raise SourcesError(f"{here}: synonym {phrase!r} has no word the keyword index searches")
                terms += [t for t in words if t not in terms]
            entries.append(Synonym(key=key, phrases=tuple(phrases), key_terms=() if cjk else tuple(analysed),
                                   phrase_terms=tuple(terms), cjk=cjk))
        return cls(tuple(entries))

    def __bool__(self) -> bool:
        return bool(self.entries)

    def keys(self) -> set[str]:
        """Every key's analysed terms, one-word keys only (`bot.records.gaps` leaves those out of its candidates)."""
        return {s.key_terms[0] for s in self.entries if len(s.key_terms) == 1}

    def expand(self, question: str, weight: float = EXPANSION_WEIGHT) -> Expansion:
        """The synonyms of every key the question holds, as keyword terms weighed `weight`
        (terms the question's keyword search already has are left out: they count fully);
        `benchmarks/synonyms.py` measures other weights."""
        if not self.entries:
            return Expansion()
        terms = bm25_module.tokens(question)
        used = [s for s in self.entries if s.found_in(question, terms)]
        if not used:
            return Expansion()
        own = set(bm25_module.tokens(bm25_module.question_text(question)))
        added: dict[str, float] = {}
        for synonym in used:
            for term in synonym.phrase_terms:
                if term not in own:
                    added.setdefault(term, weight)
        return Expansion(tuple(used), added)
