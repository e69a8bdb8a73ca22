"""How the verified-answer matcher (`bot.verified.matching`) reads a question: its words, as it
compares them.

Words are compared as the keyword leg analyses them (`indexing.keyword.bm25`: its stop words,
question words and Snowball stemmer: case, plurals and possessives do not matter), after the
phrasing words people wrap a question in ("how do I get", "who do I talk to", `LIGHT_WORDS`) are
set aside. Each word is a number ("3rd" = "third" = "3"; "W2" is "W 2" as "W-2" is; 九点 is
9点), a name (capitalised mid-sentence, in capitals or mixed case: Lisbon, DUNS, FedEx; an owner
in the possessive, or the organisation as the subject of "Does Acme pay…", marked so it may be
left out), another word, or a Chinese character: Chinese, Japanese and Korean text is compared
by character, without its function characters (`CJK_FUNCTION`) and question phrases
(`CJK_QUESTION_PHRASES`: "什么时候" is "哪天"). The sources file's `[synonyms]` make each of
their wordings one term.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from bot import chinese_numerals, english_numbers
from indexing.keyword import bm25

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
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")  # 10,000
_SCALES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}
# "10k", "$1.5m", "2 million": a bare "m" only after a currency sign ("5m" may be minutes or metres)
_SCALED = re.compile(r"(?<![\w.])([$€£]\s?)?(\d+(?:\.\d+)?)\s?(k|m|thousand|million|bn|billion)\b", re.IGNORECASE)
_PLANS = {"401", "403", "457"}  # "401k" and its kind name plans
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s?([ap])\.?m\b\.?|\b(\d{1,2}):(\d{2})\b", re.IGNORECASE)
_LETTERS_AND_DIGITS = re.compile(r"\d+|\D+")  # "W2" is "W 2", "iso27001" is "iso 27001": as "W-2", "ISO 27001"
# A lone Chinese numeral counts before these too: 九点 (nine o'clock), 三楼 / 三层 (the third floor)
_CJK_MEASURE = chinese_numerals.MEASURE_WORDS | frozenset("点楼层")
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


def key_terms(text: str, synonyms: Mapping[str, Sequence[str]] = {}) -> tuple[Word, ...]:  # noqa: B006
    """The words of `text` that carry its meaning, as the matcher compares them: numbers, names
    and other content words (stemmed, synonyms as one term), CJK characters."""
    return analyse(text[:MAX_CHARS], synonym_table(synonyms))


def synonym_table(synonyms: Mapping[str, Sequence[str]]) -> SynonymTable:
    return tuple((k, tuple(v)) for k, v in synonyms.items())


@lru_cache(maxsize=16_384)
def variant_terms(variant: str, table: SynonymTable) -> tuple[Word, ...]:
    """A verified question's words, analysed once per process (they come back with every lookup)."""
    return analyse(variant[:MAX_CHARS], table)


def analyse(text: str, table: SynonymTable) -> tuple[Word, ...]:
    words = _words(numbers_as_digits(unicodedata.normalize("NFKC", text)))  # "ＬＩＳＢＯＮ" is "LISBON"
    return _apply_synonyms(words, _synonym_groups(table)) if table else words


def numbers_as_digits(text: str) -> str:
    """Every way of writing a number the same way, so numbers are compared as values: "$10,000",
    "10k" and "ten thousand" are 10000; "6pm", "18:00" and "6 p.m." are 18 (and "6:30pm" 1830).
    A lone small number word stays a word here (`_number` reads it: "one of the rooms" is none)."""
    text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    text = _SCALED.sub(_scaled, text)
    text = _CLOCK.sub(_clock, text)
    return english_numbers.NUMBER.sub(_spelt, text)


def _scaled(m: re.Match[str]) -> str:
    currency, number, scale = m.group(1), m.group(2), m.group(3).lower()
    if scale == "k" and number in _PLANS or scale == "m" and not currency:
        return m.group(0)  # "401k": a retirement plan, not 401,000; "5m": minutes or metres
    value = float(number) * _SCALES[scale]
    return f"{value:.0f}" if value.is_integer() else m.group(0)


def _clock(m: re.Match[str]) -> str:
    hour, minutes, half = int(m.group(1) or m.group(4)), int(m.group(2) or m.group(5) or 0), (m.group(3) or "").lower()
    if half and not 1 <= hour <= 12 or hour > 23 or minutes > 59:
        return m.group(0)
    hour = hour % 12 + (12 if half == "p" else 0) if half else hour
    return f"{hour}{minutes:02d}" if minutes else str(hour)


def _spelt(m: re.Match[str]) -> str:
    words = m.group(0)
    several = len(re.split(r"[\s-]+", words.strip())) > 1
    return str(english_numbers.value(words)) if several and set(re.split(r"[\s-]+", words.lower())) - {"and"} - set(
        english_numbers.SCALES) else words


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
        out.append(Word(stem(lower), lower, "name" if is_name else "word", owner=owner and is_name,
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
def stem(word: str) -> str:
    """A word as the keyword leg stems it (Snowball): the matcher's term for it."""
    return str(bm25._stemmer().stemWord(word))


Wordings = dict[str, tuple[tuple[tuple[str, ...], str], ...]]  # first term → (terms, group), longest first


@lru_cache(maxsize=64)
def _synonym_groups(table: SynonymTable) -> Wordings:
    """Every wording of the table (keys and phrases) as its term sequence → the group's name,
    longest first, by its first term; wordings joined by a key are one group (`vacation`, `PTO`,
    `annual leave`)."""
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
    by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for terms, group in sorted(wordings.items(), key=lambda item: -len(item[0])):
        by_first.setdefault(terms[0], []).append((terms, group))
    return {first: tuple(found) for first, found in by_first.items()}


def _apply_synonyms(words: tuple[Word, ...], groups: Wordings) -> tuple[Word, ...]:
    out: list[Word] = []
    i = 0
    while i < len(words):
        for terms, group in groups.get(words[i].term, ()):
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
