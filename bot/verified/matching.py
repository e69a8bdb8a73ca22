"""Which verified answer a question asks for: close in meaning *and* agreeing on its key terms.

The lookup (`bot.verified.lookup`) hands over the nearest verified questions ("variants") by
cosine; a cosine threshold alone cannot tell a paraphrase from a near miss — "guest wifi password
in the Portland office" is nearer the verified "… in the Lisbon office" (0.85) than most ways of
asking the Lisbon question are. So a variant is given only when, besides being close enough, the
question agrees with it word by word where it matters:

1. **Numbers agree** ("3rd" = "third" = "3"; "floor four" = "4th floor"): the question and the
   variant name the same numbers, none more, none fewer.
2. **The variant's names are in the question**: words it writes capitalised mid-sentence, in
   capitals or in mixed case (Lisbon, DUNS, FedEx, Project Falcon) — a question without "Lisbon"
   is not asking about Lisbon. An owner in the possessive ("Acme Widgets' DUNS number") may be
   left out ("our DUNS number"), and so may the subject of a question opening with "does", "will",
   "can"… ("*Does Acme pay* for eye tests in Lisbon?": the organisation, which people leave out —
   "are eye tests covered in lisbon"); one word of a name of several is enough ("falcon" for
   "Project Falcon") unless the question puts another word in its place.
3. **Not one thing swapped for another in place**: when the words the variant has and the
   question lacks are one run of consecutive words, the words the question has and the variant
   lacks are one run too, and both runs sit between the same shared words, the question is the
   variant with one thing changed — a near miss ("the staff wifi" for "the guest wifi",
   "breakfast" for "lunch", "bus stop" for "metro station"), refused whatever its similarity.
   Two words that are one said two ways are not a change (`bot.verified.word_pairs`: written
   short or spelt otherwise, "pw" / "password"; synonyms in WordNet, "parcel" / "package"; an
   acronym written out, "DPO" / "data protection officer"), nor are wordings the sources file's
   `[synonyms]` joins (`vacation = ["annual leave"]`: either side may use either wording), nor a
   swap of participles or adverbs only ("catered" for "provided").
4. **A rewording is close**: words out here and others in there, or in another order ("portland
   2nd floor printer setup" for "How do I connect to the printer on the 2nd floor in Portland?"),
   need a similarity of `SWAP_SIMILARITY`; anything else `MIN_SIMILARITY` — but a question with
   the variant's words, every one (after the pairs above), is the same question at any similarity
   (the model reads "DPO" as nothing like "data protection officer").

**Offered, not given** (`decide`): the nearest candidate refused only for its wording — by rule 3
or 4, or below `MIN_SIMILARITY` — whose numbers and names agree and whose similarity reaches
`OFFER_SIMILARITY`. The asker is shown its verified question beside the wiki's answer and takes
it or not: "visitor" for "guest" (theirs) and "staff" for "guest" (not theirs) look the same to
every rule here, and not to them. One taken in a channel becomes a suggested question a verifier
may add (`bot.verified.suggestions`), and then it is given.

Asymmetric cases, decided: a question may *leave out* the variant's ordinary words ("lisbon guest
wifi pw" for "What's the guest wifi password in the Lisbon office?") and may *add* words of its
own ("… in the Lisbon office on weekends") — the verified answer covers the narrower question —
but not a number or a name written as one (capitalised) the variant lacks. Chinese is stricter:
the bundled model reads no Chinese (every "上海办公室…" question is at 0.95–1.00 to every other),
so there the characters alone decide — characters may be added only *around* the variant's words,
every pair of neighbouring characters it writes being in the question too ("上海办公室有停车位吗"
for "上海办公室可以停车吗": 停车 whole), never inside them ("停自行车": a bicycle). Leaving out a
word *and* adding one in its place is rule 3.

How words are read and compared: `bot.verified.question_words`. Measured on a labelled set in
docs/tuning.md ("Verified answers: the matcher"); `python -m benchmarks.verified_matching`.

What it cannot tell: a one-word synonym neither WordNet nor the sources file knows ("screen" for
"monitor", "enroll" for "sign up", "plant based" for "vegan"; every Chinese one: "午饭" for "午餐")
reads as a near miss, so such a paraphrase is offered, not given — a verifier adds the wording
(a suggested question, or `[synonyms]`). The bundled model's similarity of the two words does not
tell them apart either ("screen"/"monitor" 0.68, "breakfast"/"lunch" 0.72: docs/tuning.md). A
company's name elsewhere than as the subject ("order Acme Widgets hoodies") is a name the question
must repeat; write variants without it. A place as the subject ("Does Lisbon offer…") is taken for
the organisation: write "in Lisbon".

Pure and cheap: no model, no database; ~0.1 ms for ten candidates (docs/tuning.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.verified.question_words import (
    MAX_CHARS, SynonymTable, Word, analyse, key_terms, stem, synonym_table, variant_terms)
from bot.verified.word_pairs import acronyms, pair_off, same_word

__all__ = ["Candidate", "Decision", "Match", "Verdict", "best_match", "decide", "judge", "key_terms"]

MIN_SIMILARITY = 0.55  # cosine below which a variant is not the same question, whatever its words
SWAP_SIMILARITY = 0.75  # cosine a question rewording the variant (words out, others in) must reach
# Actions that undo or end what a request obtains: a question adding or leaving one out asks the
# opposite ("give back my licence" for "get a licence"; "get", "give" are request words, set aside).
UNDOING = frozenset(stem(w) for w in """
cancel cancellation return revoke remove removal delete deactivate disable terminate termination
unsubscribe withdraw sell refund offboard offboarding uninstall downgrade back""".split())
OFFER_SIMILARITY = 0.55  # cosine from which a candidate refused for its wording only is offered (`decide`)

@dataclass(frozen=True)
class Candidate:
    answer_id: int
    variant: str  # one verified question variant of that answer
    similarity: float  # cosine between the asker's question and `variant`, by the index's embedder


@dataclass(frozen=True)
class Match:
    answer_id: int
    variant: str
    similarity: float


@dataclass(frozen=True)
class Verdict:
    """Whether a candidate is given, and if not why (for the logs)."""

    candidate: Candidate
    given: bool
    reason: str
    offerable: bool = False  # refused for its wording only, close enough to be offered (`decide`)


@dataclass(frozen=True)
class Decision:
    """What a question gets: the verified answer it asks for, or else one it may be asking for."""

    given: Match | None
    offered: Match | None  # None when one is given


def best_match(question: str, candidates: Sequence[Candidate],
               synonyms: Mapping[str, Sequence[str]] = {}) -> Match | None:  # noqa: B006 — read only
    """The verified answer this question asks for, or None (the ordinary answer path then runs):
    the most similar candidate that `judge` gives."""
    return decide(question, candidates, synonyms).given


def decide(question: str, candidates: Sequence[Candidate],
           synonyms: Mapping[str, Sequence[str]] = {}) -> Decision:  # noqa: B006 — read only
    """The most similar candidate `judge` gives; else the most similar one refused only for its
    wording — a word swapped in place, a rewording not close enough — whose names and numbers
    agree and whose similarity reaches `OFFER_SIMILARITY`. That one is *offered*: the asker sees
    its verified question beside the wiki's answer and takes it or not, telling "visitor" for
    "guest" (theirs) from "staff" for "guest" (not theirs) as no rule here can."""
    table = synonym_table(synonyms)
    question_words = analyse(question[:MAX_CHARS], table)
    verdicts = [_judge(question_words, c, table) for c in candidates]
    given = [v.candidate for v in verdicts if v.given]
    offerable = [v.candidate for v in verdicts if v.offerable]
    if given:
        return Decision(_match(max(given, key=lambda c: c.similarity)), None)
    return Decision(None, _match(max(offerable, key=lambda c: c.similarity)) if offerable else None)


def _match(candidate: Candidate) -> Match:
    return Match(candidate.answer_id, candidate.variant, candidate.similarity)


def judge(question: str, candidate: Candidate, synonyms: Mapping[str, Sequence[str]] = {}) -> Verdict:  # noqa: B006
    """Whether `candidate` answers `question`, with the reason when it does not."""
    table = synonym_table(synonyms)
    return _judge(analyse(question[:MAX_CHARS], table), candidate, table)


def _judge(question: tuple[Word, ...], candidate: Candidate, table: SynonymTable) -> Verdict:
    def no(reason: str) -> Verdict:
        return Verdict(candidate, False, reason)

    def worded_otherwise(reason: str) -> Verdict:  # names and numbers agree: the asker can tell
        return Verdict(candidate, False, reason, offerable=candidate.similarity >= OFFER_SIMILARITY)

    variant = variant_terms(candidate.variant, table)
    if not variant:
        return no("the variant has no word to agree on")
    q_terms = {w.term for w in question}
    v_terms = {w.term for w in variant}
    q_numbers = {w.term for w in question if w.kind == "number"}
    v_numbers = {w.term for w in variant if w.kind == "number"}
    if q_numbers != v_numbers:
        return no(f"numbers differ: {sorted(q_numbers) or 'none'} asked, {sorted(v_numbers) or 'none'} verified")
    missing = [w for w in variant if w.term not in q_terms]
    extra = [w for w in question if w.term not in v_terms]
    missing, extra = pair_off(missing, extra, same_word)
    missing, extra = acronyms(missing, question, extra, variant)
    if not missing and not extra:
        return Verdict(candidate, True, "the same words")  # "who's the data protection officer" for "Who is the DPO?"
    extra_names = [w for w in extra if w.kind == "name"]
    if extra_names:
        return no(f"the question names {extra_names[0].surface!r}, the variant does not")
    present_runs = {w.run for w in variant if w.kind == "name" and w.term in q_terms}
    for word in missing:
        if word.kind != "name" or word.owner:
            continue
        if word.run in present_runs and not extra:
            continue
        return no(f"the question lacks {word.surface!r}")
    missing = [w for w in missing if not w.owner]  # "our DUNS number" for "Acme Widgets' DUNS number"
    undoing = [w for w in (*extra, *missing) if w.term in UNDOING]
    if undoing:  # "how do I deactivate X's account" is no "how do I get an account", whatever else agrees
        return no(f"{undoing[0].surface!r} undoes what the other asks for")
    if candidate.similarity < MIN_SIMILARITY:
        return worded_otherwise(f"similarity {candidate.similarity:.2f} below {MIN_SIMILARITY}")
    chinese = any(w.kind == "cjk" for w in (*missing, *extra))  # its similarity says nothing (the model reads no Chinese)
    if chinese and extra and (missing or not _holds_cjk(question, variant)):
        return worded_otherwise(f"{''.join(w.surface for w in extra)!r} added" + (
            f" in place of {''.join(w.surface for w in missing)!r}" if missing else " inside the variant's words"))
    if missing and extra:
        out, put = " ".join(w.surface for w in missing), " ".join(w.surface for w in extra)
        if _in_place(variant, missing, question, extra) and not all(map(_says_how, (*missing, *extra))):
            return worded_otherwise(f"{put!r} in place of {out!r}")
        if candidate.similarity < SWAP_SIMILARITY:
            return worded_otherwise(f"reworded ({put} for {out}) at similarity {candidate.similarity:.2f}, "
                                    f"below {SWAP_SIMILARITY}")
    return Verdict(candidate, True, "same question")


def _in_place(variant: tuple[Word, ...], missing: list[Word], question: tuple[Word, ...], extra: list[Word]) -> bool:
    """Whether the question is the variant with one thing changed in place: the variant's words it
    lacks are one run of consecutive words, the words it adds are one run, and both runs sit
    between the same shared words ("the *staff* wifi" for "the *guest* wifi"; "bus stop" for
    "metro station"). A paraphrase rewords here and there, or says it in another order
    ("portland 2nd floor printer setup" for "How do I connect to the printer on the 2nd floor…")."""
    return _span(variant, missing) == _span(question, extra) != ("", "-")


def _span(words: tuple[Word, ...], chosen: list[Word]) -> tuple[str, str]:
    """The shared words either side of `chosen` if they are one run of `words` ("" at an end)."""
    at = [i for i, w in enumerate(words) if any(w is c for c in chosen)]
    if at[-1] - at[0] + 1 != len(at):
        return ("", "-")  # not one run
    before = words[at[0] - 1].term if at[0] > 0 else ""
    after = words[at[-1] + 1].term if at[-1] + 1 < len(words) else ""
    return (before, after)


def _says_how(word: Word) -> bool:
    """A participle or adverb ("provided", "catered", "friendly"): it says how something is asked
    about, not which thing — a swap of one is a rewording, weighed by similarity, not a near miss."""
    return word.kind == "word" and word.surface.endswith(("ed", "ly")) and len(word.surface) > 4


def _holds_cjk(question: tuple[Word, ...], variant: tuple[Word, ...]) -> bool:
    """Whether the question holds every pair of neighbouring Chinese characters of the variant (and
    each character standing alone there): it says all the variant says and adds around it
    ("上海办公室有停车位吗" holds 停车), while one that writes something inside a word breaks a pair
    ("上海办公室可以停自行车吗": a bicycle, not a car)."""
    pairs = _cjk_pairs(question)
    chars = {w.term for w in question if w.kind == "cjk"}
    return all(gram in (pairs if len(gram) > 1 else chars) for gram in _cjk_pairs(variant))


def _cjk_pairs(words: tuple[Word, ...]) -> frozenset[str]:
    """The pairs of neighbouring characters of each stretch of Chinese between function characters,
    and a character alone when its stretch has no other."""
    pairs: set[str] = set()
    for i, word in enumerate(words):
        if word.kind != "cjk":
            continue
        before = words[i - 1] if i > 0 else None
        after = words[i + 1] if i + 1 < len(words) else None
        if after is not None and after.kind == "cjk" and after.run == word.run:
            pairs.add(word.term + after.term)
        elif before is None or before.kind != "cjk" or before.run != word.run:
            pairs.add(word.term)
    return frozenset(pairs)
