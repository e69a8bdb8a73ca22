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
   Two words that are one written short or spelt another way ("pw" / "password", "bldg" /
   "building", "portugal" / "portuguese", "center" / "centre") are not a change, nor are
   wordings the sources file's `[synonyms]` joins (`vacation = ["annual leave"]`: either side
   may use either wording), nor a swap of participles or adverbs only ("catered" for "provided").
4. **A rewording is close**: words out here and others in there, or in another order ("portland
   2nd floor printer setup" for "How do I connect to the printer on the 2nd floor in Portland?"),
   need a similarity of `SWAP_SIMILARITY`; anything else `MIN_SIMILARITY`.

Asymmetric cases, decided: a question may *leave out* the variant's ordinary words ("lisbon guest
wifi pw" for "What's the guest wifi password in the Lisbon office?") and may *add* words of its
own ("… in the Lisbon office on weekends") — the verified answer covers the narrower question —
but not a number or a name written as one (capitalised) the variant lacks. Chinese is stricter:
the bundled model reads no Chinese (every "上海办公室…" question is at 0.95–1.00 to every other),
so there the characters alone decide — characters may be added only *around* the variant's words,
every pair of neighbouring characters it writes being in the question too ("上海办公室有停车位吗"
for "上海办公室可以停车吗": 停车 whole), never inside them ("停自行车": a bicycle). Leaving out a
word *and* adding one in its place is rule 3.

Words are compared as the keyword leg analyses them (`indexing.keyword.bm25`: its stop words,
question words and Snowball stemmer: case, plurals and possessives do not matter), after the
phrasing words people wrap a question in ("how do I get", "who do I talk to", `LIGHT_WORDS`) are
set aside. Chinese, Japanese and Korean text is compared by character, without its function
characters (`CJK_FUNCTION`) and question phrases (`CJK_QUESTION_PHRASES`: "什么时候" is "哪天").
Measured on a labelled set in docs/tuning.md ("Verified answers: the matcher");
`python -m benchmarks.verified_matching`.

What it cannot tell: a one-word synonym it is not told ("visitor" for "guest", "enroll" for
"sign up"; in Chinese "午饭" for "午餐") reads as a near miss, so such a paraphrase falls through
to the ordinary answer — add the wording as another variant, or to `[synonyms]`. The bundled
model's similarity of the two words does not tell them apart either ("visitor"/"guest" 0.59,
"breakfast"/"lunch" 0.72: docs/tuning.md). A company's name elsewhere than as the subject
("order Acme Widgets hoodies") is a name the question must repeat; write variants without it. A
place as the subject ("Does Lisbon offer…") is taken for the organisation: write "in Lisbon".

Pure and cheap: no model, no database; ~0.1 ms for ten candidates (docs/tuning.md).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bot import chinese_numerals
from indexing.keyword import bm25

MIN_SIMILARITY = 0.55  # cosine below which a variant is not the same question, whatever its words
SWAP_SIMILARITY = 0.75  # cosine a question rewording the variant (words out, others in) must reach
OFFER_SIMILARITY = 0.55  # cosine from which a candidate refused for its wording only is offered (`decide`)
MAX_CHARS = 1_000  # a longer text (a pasted log) is compared by its start: no verified question is that long

# Words that shape a request but name nothing it is about: "how do I *get*…", "who do I *talk to*…",
# "is it *ok* to…". A question adding or leaving out one of these asks the same thing.
LIGHT_WORDS = frozenset("""
get gets getting got need needs needed want wants like use using find know tell talk ask asking help
go going come put give make please ok okay possible allowed allow someone anyone somebody anybody
something anything thing things stuff way also still really actually exactly currently hey hi thanks
about from after before during over under near via per within without up down off out
""".split())
# Chinese function characters (particles, pronouns, question words): asking 吗 or 呢 changes nothing
CJK_FUNCTION = frozenset("的了吗呢吧啊么什怎多少哪几是有在我你他她们这那个些和与及或就都也还很要会能可以请问")
# Chinese question phrases of several characters, set aside whole: "什么时候" (when) is "哪天" (which
# day) is "几点" (what time); "有没有" is "有…吗". Their other characters (时候, 天) name nothing asked about.
CJK_QUESTION_PHRASES = ("什么时候", "哪一天", "哪天", "几号", "几点", "哪里", "哪儿", "如何", "怎么样",
                        "有没有", "能不能", "可不可以", "是不是", "会不会", "要不要")
_CJK_QUESTION = re.compile("|".join(CJK_QUESTION_PHRASES))
# A question opening with one of these, then a name and a lowercase word, has that name as the
# subject of a verb ("Does Acme pay for…", "Will Acme Widgets cover…"): the organisation, asked
# about what it does. Not "is"/"has": "Is Lisbon office open…" names a place.
_AUXILIARIES = frozenset("do does did will would can could should shall may might must".split())

_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split()) if w != "one"}  # "one of the rooms": mostly a pronoun
_ORDINAL_WORDS = {w: str(i) for i, w in enumerate(
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split())}
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)")
_LETTERS_AND_DIGITS = re.compile(r"\d+|\D+")  # "W2" is "W 2", "iso27001" is "iso 27001": as "W-2", "ISO 27001"
# A lone Chinese numeral counts before these too: 九点 (nine o'clock), 三楼 / 三层 (the third floor)
_CJK_MEASURE = chinese_numerals.MEASURE_WORDS | frozenset("点楼层")
SYNONYMS_FILE = Path(__file__).with_name("wordnet_synonyms.txt")
_CJK_CHARS = bm25.CJK.pattern[1:-1]  # the character ranges of `bm25.CJK`, without its brackets
_TOKEN = re.compile(rf"{bm25.CJK.pattern}+|[^\W_{_CJK_CHARS}]+(?:['’][^\W_{_CJK_CHARS}]+)*['’]?|[.?!;:]")
_STOP_WORDS = bm25.QUESTION_WORDS
SynonymTable = tuple[tuple[str, tuple[str, ...]], ...]  # the `[synonyms]` table, hashable


@dataclass(frozen=True)
class Word:
    """One word of a text as the matcher compares it."""

    term: str  # lower-cased, stemmed (a number as digits, a synonym as its group's name)
    surface: str  # as written, lower-cased: for words written short ("bldg" for "building")
    kind: str  # "number", "name", "word" or "cjk"
    owner: bool = False  # a name in the possessive ("Acme's"): may be left out
    run: int = -1  # which name of several words it belongs to (names only)


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
    table = _synonym_table(synonyms)
    question_words = _analyse(question[:MAX_CHARS], table)
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
    table = _synonym_table(synonyms)
    return _judge(_analyse(question[:MAX_CHARS], table), candidate, table)


def _judge(question: tuple[Word, ...], candidate: Candidate, table: SynonymTable) -> Verdict:
    def no(reason: str) -> Verdict:
        return Verdict(candidate, False, reason)

    def worded_otherwise(reason: str) -> Verdict:  # names and numbers agree: the asker can tell
        return Verdict(candidate, False, reason, offerable=candidate.similarity >= OFFER_SIMILARITY)

    variant = _variant_terms(candidate.variant, table)
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
    missing, extra = _pair_off(missing, extra, _same_word)
    missing, extra = _acronyms(missing, question, extra, variant)
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


def _pair_off(missing: list[Word], extra: list[Word], same: Callable[[Word, Word], bool]) -> tuple[list[Word], list[Word]]:
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


def _same_word(a: Word, b: Word) -> bool:
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


def _acronyms(missing: list[Word], question: tuple[Word, ...], extra: list[Word],
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
    of six letters or more: spellings and typos; "lunch" is not "launch"), or an abbreviation of at most four letters (the
    same first letter, its letters in order in the long word)."""
    if len(short) > len(long) or not short or short[0] != long[0] or not short.isascii():
        return False
    if len(short) >= 5 and long.startswith(short[:5]) or len(short) >= 6 and _one_edit(short, long):
        return True
    if len(short) > 4:
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


def key_terms(text: str, synonyms: Mapping[str, Sequence[str]] = {}) -> tuple[Word, ...]:  # noqa: B006
    """The words of `text` that carry its meaning, as the matcher compares them: numbers, names
    and other content words (stemmed, synonyms as one term), CJK characters."""
    return _analyse(text[:MAX_CHARS], _synonym_table(synonyms))


def _synonym_table(synonyms: Mapping[str, Sequence[str]]) -> SynonymTable:
    return tuple((k, tuple(v)) for k, v in synonyms.items())


@lru_cache(maxsize=4096)
def _variant_terms(variant: str, table: SynonymTable) -> tuple[Word, ...]:
    """A verified question's words, analysed once per process (they come back with every lookup)."""
    return _analyse(variant[:MAX_CHARS], table)


def _analyse(text: str, table: SynonymTable) -> tuple[Word, ...]:
    words = _words(unicodedata.normalize("NFKC", text))  # "ＬＩＳＢＯＮ" is "LISBON"
    return _apply_synonyms(words, _synonym_groups(table)) if table else words


def _words(text: str) -> tuple[Word, ...]:
    out: list[Word] = []
    sentence_start = True
    run = -1
    in_name = False
    tokens = [piece for token in _TOKEN.findall(_CJK_QUESTION.sub("。", text))  # a question phrase ends a stretch of Chinese
              for piece in _identifier_parts(token)]
    subjects = _subject_names(tokens)
    for at, token in enumerate(tokens):
        if token in ".?!;:":
            sentence_start, in_name = True, False
            continue
        if bm25.CJK.match(token):
            numbers = _cjk_numbers(token)
            at_char = 0
            while at_char < len(token):
                if at_char in numbers:  # 九点 is 9点: a number, compared as numbers are
                    numeral = numbers[at_char]
                    out.append(Word(str(chinese_numerals.value(numeral.lstrip("第"))), numeral, "number"))
                    at_char += len(numeral)
                    continue
                c = token[at_char]
                at_char += 1
                if c in CJK_FUNCTION or not out or out[-1].kind != "cjk":  # each stretch between function
                    run += 1                                                # characters is one run (`_cjk_pairs`)
                if c not in CJK_FUNCTION:
                    out.append(Word(c, c, "cjk", run=run))
            sentence_start, in_name = False, False
            continue
        owner = token.endswith(("'s", "’s", "'", "’")) or at in subjects
        bare = re.sub(r"['’]s?$", "", token)
        lower = bare.lower().replace("'", "").replace("’", "")
        starts = sentence_start
        sentence_start = False
        number = _number(lower)
        if number is not None:
            out.append(Word(number, lower, "number"))
            in_name = False
            continue
        acronym = len(bare) > 1 and bare.isupper()  # "IT", "US": not the words "it", "us"
        if not acronym and (lower in _STOP_WORDS or lower in _english_stop_words() or lower in LIGHT_WORDS):
            in_name = False
            continue
        is_name = acronym or any(c.isupper() for c in bare[1:]) or bare[:1].isupper() and not starts
        if is_name:
            if not in_name:
                run += 1
            in_name = True
        else:
            in_name = False
        out.append(Word(_stem(lower), lower, "name" if is_name else "word", owner=owner and is_name,
                        run=run if is_name else -1))
        in_name = in_name and not owner  # "Acme's DUNS": the owner's name ends at its apostrophe
    if any(w.owner for w in out):  # every word of an owner's name is an owner ("Acme Widgets'")
        owners = {w.run for w in out if w.owner}
        out = [Word(w.term, w.surface, w.kind, True, w.run) if w.run in owners and w.kind == "name" else w
               for w in out]
    return tuple(out)


def _identifier_parts(token: str) -> list[str]:
    """A token of letters and digits in its parts ("W2" → "W", "2"; "iso27001" → "iso", "27001"),
    as they are written apart ("W-2", "ISO 27001"); an ordinal ("4th") and a word stay whole."""
    if token.isalpha() or token.isdigit() or _ORDINAL.fullmatch(token.lower()) or not token.isalnum():
        return [token]
    return _LETTERS_AND_DIGITS.findall(token)


def _cjk_numbers(stretch: str) -> dict[int, str]:
    """The Chinese numerals of a stretch that are numbers, by where they start: a run of two or
    more (二十), one before a measure word (九点, 三楼) or after 第 (第三: the third)."""
    found = {m.start(): m.group(0) for m in chinese_numerals.counted(stretch, _CJK_MEASURE)
             if not (m.group(0) == "一" and stretch[m.end():m.end() + 1] == "点")}  # 一点: "a little"
    found.update({m.start() - 1: "第" + m.group(0) for m in chinese_numerals.NUMERAL.finditer(stretch)
                  if m.start() > 0 and stretch[m.start() - 1] == "第"})  # 第 with its number: "the third"
    return found


def _subject_names(tokens: list[str]) -> frozenset[int]:
    """Which tokens are a name as the subject of a question opening with an auxiliary ("*Does*
    Acme pay for…"): the organisation asked about itself, left out as people leave it out ("are eye
    tests paid for…"), like an owner in the possessive. A name at the end ("Is it Acme?") is not one."""
    out: set[int] = set()
    for start, token in enumerate(tokens):
        if token.lower() not in _AUXILIARIES or start > 0 and tokens[start - 1] not in ".?!;:":
            continue
        end = start + 1
        while end < len(tokens) and tokens[end][:1].isupper() and not bm25.CJK.match(tokens[end]):
            end += 1
        if start + 1 < end < len(tokens) and tokens[end][:1].islower():
            out.update(range(start + 1, end))
    return frozenset(out)


def _number(word: str) -> str | None:
    if word.isdigit():
        return str(int(word))
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    if word in _ORDINAL_WORDS:
        return _ORDINAL_WORDS[word]
    match = _ORDINAL.fullmatch(word)
    return str(int(match.group(1))) if match else None


@lru_cache(maxsize=1)
def _english_stop_words() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(bm25._stemmer().stemWord(word))


@lru_cache(maxsize=64)
def _synonym_groups(table: SynonymTable) -> tuple[tuple[tuple[str, ...], str], ...]:
    """Every wording of the table (keys and phrases) as its term sequence → the group's name,
    longest first; wordings joined by a key are one group (`vacation`, `PTO`, `annual leave`)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for key, phrases in table:
        for phrase in phrases:
            parent[find(phrase.casefold())] = find(key.casefold())
    wordings: dict[tuple[str, ...], str] = {}
    for wording in parent:
        terms = tuple(w.term for w in _words(wording))
        if terms:
            wordings.setdefault(terms, "=" + find(wording))
    return tuple(sorted(wordings.items(), key=lambda item: -len(item[0])))


def _apply_synonyms(words: tuple[Word, ...], groups: tuple[tuple[tuple[str, ...], str], ...]) -> tuple[Word, ...]:
    out: list[Word] = []
    i = 0
    while i < len(words):
        for terms, group in groups:
            n = len(terms)
            if tuple(w.term for w in words[i:i + n]) == terms:
                first = words[i]
                kind = "name" if any(w.kind == "name" for w in words[i:i + n]) else "word"
                out.append(Word(group, " ".join(w.surface for w in words[i:i + n]), kind, first.owner, first.run))
                i += n
                break
        else:
            out.append(words[i])
            i += 1
    return tuple(out)
