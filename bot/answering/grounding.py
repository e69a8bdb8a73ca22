"""Whether a model's answer says only what the pages it cites say (issue 48).

A wrong number with a citation beside it is the costliest reply Docent can give, and models of
every size write one: "30 days [1]" where the page says 25, "$500 [1]" where it says $350, a
vesting schedule under "I'm not sure this answers it". So, before any model text is shown,
every sentence of it is held to its pages:

- a sentence that states a fact cites `[n]` — only the "not found" sentence, a sentence about
  what the excerpts do *not* say ("the wiki does not mention parking"), a line introducing a
  list ("Here is what to do:") and a closing courtesy may go uncited, and only while they hold
  no number and no name;
- every number, amount, percentage and date in it appears in the passages it cites, compared
  as values: "$1,500" = "1,500 dollars" = "1500", "10 days" = "ten days", "25" = "twenty-five",
  "$5k" = "$5,000", "二十五天" = "25 天", "2024年3月31日" holds 2024, 3 and 31;
- every proper name in it (a capitalised word that does not open the sentence: "Portland",
  "PeoplePort", "March") appears in them, any case;
- it repeats none of the prompt's scaffolding ("Question: …", "Sources:", "Wiki excerpts:",
  `<excerpt>`, a line of the system prompt);
- the reply does not stop at a line introducing what never came ("The answer is:").

Paraphrase is free; facts are not. The check knows nothing of meaning, so a reply can still
mislead in words ("you can carry days over" where the page says you cannot); what it rules out
is a number, a date or a name the cited page does not hold — and a claim with no page at all.
A reply that fails is set aside by `bot.answering.answer` for the extractive answer, with
`Ungrounded.detail` as the asker's note and `Ungrounded.reason` (one of `REASONS`) for the log
and the metric. `bot.answering.llm_stream` applies the same check sentence by sentence while
the model writes, so a rejected sentence is never shown even for a moment.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from bot import chinese_numerals, english_numbers

if TYPE_CHECKING:
    from bot.answering.lead import LeadSentence
    from indexing.search import Hit

UNCITED, NUMBER, NAME, ECHO, UNFINISHED = "uncited", "number", "name", "echo", "unfinished"
REASONS = (UNCITED, NUMBER, NAME, ECHO, UNFINISHED)  # the metric's label values: bounded


class Ungrounded(ValueError):
    """A model reply the grounding check set aside. `reason`: one of `REASONS` (logs, metrics);
    `detail`: what the asker reads ("the model's answer said 30 days; the cited page does not"),
    made only of the offending number or name, never of the question."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


# -- sentences ---------------------------------------------------------------------------------

CITATION = re.compile(r"[ \t]?\[(\d{1,2}(?:\s*,\s*\d{1,2})*)\]")  # the same shape bot.answering.llm checks
_ABBREVIATIONS = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|approx|incl|no|mr|mrs|ms|dr|st|jr|inc|ltd|co)\.|\b[A-Za-z]\.)\Z",
                            re.IGNORECASE)
# A sentence ends at . ! ? (and closing quotes or emphasis after them) before a space, or at 。！？
_END = re.compile(r"(?<=[.!?])[\"'’”)*_]*[ \t]+(?=\S)|(?<=[。！？])[\"'’”）)*_]*")
_LEADING_CITATIONS = re.compile(r"^(?:\s*\[\d{1,2}(?:\s*,\s*\d{1,2})*\])+[.。]?")


def sentences(text: str) -> list[str]:
    """The reply's sentences, in order, each with the citations that follow it: lines are
    sentences of their own (list items, table rows), and a line is cut after . ! ? 。！？ —
    not after "e.g." or an initial. A citation written after the full stop ("25 days. [1]")
    belongs to the sentence before it."""
    return [text[start:end] for start, end in sentence_spans(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Where each of `sentences(text)` starts and ends in `text` (what lies between is blank)."""
    spans: list[tuple[int, int]] = []
    line_at = 0
    for line in text.split("\n"):
        at = 0
        cuts = []
        for end in _END.finditer(line):
            if not _ABBREVIATIONS.search(line[max(at, end.start() - 12):end.start()]):  # its last word only
                cuts.append(end.end())
                at = end.end()
        start = 0
        for cut in [*cuts, len(line)]:
            piece = line[start:cut]
            cites = _LEADING_CITATIONS.match(piece)
            if cites and spans:
                spans[-1] = (spans[-1][0], line_at + start + cites.end())
                start += cites.end()
                piece = line[start:cut]
            if piece.strip():
                spans.append((line_at + start + len(piece) - len(piece.lstrip()), line_at + start + len(piece.rstrip())))
            start = cut
        line_at += len(line) + 1
    return spans


# -- numbers -----------------------------------------------------------------------------------

_UNIT_WORDS = (r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|quarters?|times?|business|working|calendar"
               r"|percent|dollars?|euros?|pounds?|people|persons?|employees?|sessions?|shifts?|blocks?|nights?)")
_DIGIT_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.,])(?P<num>\d+(?:[.,]\d+)*)(?:\s?(?P<scale>thousand|million|billion|bn|万|千|亿)(?![A-Za-z]))?"
    r"(?:(?P<money>[kKmM])(?![A-Za-z]))?")
_CURRENCY = re.compile(r"[$€£¥]\s?\Z")
_AFTER_DIGIT = re.compile(r"\d\s?\Z")
_COUNTS = re.compile(rf"[\s-]+{_UNIT_WORDS}\b", re.IGNORECASE)  # "one" counts something: "one-year", "one day"
_SAID_UNIT = re.compile(rf"[\s-]?(?:%|{_UNIT_WORDS}\b|[{''.join(sorted(chinese_numerals.MEASURE_WORDS))}])", re.IGNORECASE)


def _before(text: str, at: int) -> str:
    """The two characters before `at` (a currency sign, a digit and its space): never the whole prefix."""
    return text[max(0, at - 2):at]
_LIST_MARKER = re.compile(r"^\s*\d{1,2}[.)]\s+", re.MULTILINE)
_NOT_NUMBERS = re.compile(r"https?://\S+|\]\([^)]*\)|^\s*(?:\d{1,2}[.)]|[-*+•])\s+"  # links; list markers
                          r"|\b(?:excerpts?|sources?|passages?)\s+\[?\d{1,2}\]?", re.IGNORECASE | re.MULTILINE)


def _key(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def _digit_values(num: str) -> tuple[list[str], list[str]]:
    """(what the number says, every other way a page may write it) for a run of digits with , or .:
    "1,500" says 1500; "2.5" says 2.5; "3.11.2" (a version, an address) says itself."""
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", num):
        return [_key(float(num.replace(",", "")))], []
    if re.fullmatch(r"\d+(?:\.\d+)?", num):
        return [_key(float(num))], []
    if re.fullmatch(r"\d+,\d+", num):  # 1,5: a European decimal, or a list
        return [_key(float(num.replace(",", ".")))], [_key(float(p)) for p in num.split(",")]
    return [num], [_key(float(p)) for p in re.split(r"[.,]", num)]


class Claim:
    """One number a sentence states: the values it may match (`keys`), what it counts when that is
    a unit of time or a share (`unit`: "day", "percent"; None: anything) and how it was written (`said`)."""

    def __init__(self, keys: list[str], said: str, unit: str | None = None) -> None:
        self.keys = keys
        self.said = said
        self.unit = unit

    def held_by(self, held: set[str]) -> bool:
        """Whether a page holding `held` (`held_values`) holds this number — with its unit, if it has one:
        "10 weeks" is not held by a page that says "10 days"."""
        return any((f"{key} {self.unit}" if self.unit else key) in held for key in self.keys)


_UNIT = re.compile(r"[\s-]?(?:(?:business|working|calendar|consecutive|paid|full|unpaid)[\s-]+)?"
                   r"(?P<en>sec(?:ond)?s?|min(?:ute)?s?|h(?:ou)?rs?|days?|weeks?|months?|years?|percent|%)(?![A-Za-z])"
                   r"|\s?个?(?P<zh>秒|分钟|小时|工作日|天|日|号|周|星期|月|年)", re.IGNORECASE)
_UNITS = {"sec": "second", "min": "minute", "h": "hour", "hr": "hour", "hour": "hour", "day": "day", "week": "week",
          "month": "month", "year": "year", "percent": "percent", "%": "percent", "秒": "second", "分钟": "minute",
          "小时": "hour", "工作日": "day", "天": "day", "日": "day", "号": "day", "周": "week", "星期": "week",
          "月": "month", "年": "year"}


def _unit(text: str, end: int, lenient: bool = False) -> str | None:
    """The unit of time or share the number ending at `end` counts ("10 business days": day), or
    None; `lenient` (a page) lets up to two words come between ("5 unused days")."""
    words = re.match(r"(?:[\s-][a-z]{2,15}){1,2}(?=\s)", text[end:]) if lenient else None
    m = _UNIT.match(text, end) or (words and _UNIT.match(text, end + words.end()))
    if not m:
        return None
    word = (m.group("en") or m.group("zh")).lower()
    for form in (word, word.rstrip("s"), re.sub(r"(?:ute|ond|ou)", "", word).rstrip("s")):
        if form in _UNITS:
            return _UNITS[form]
    return None


def claims(text: str) -> list[Claim]:
    """The numbers a model's sentence states (citations, links and list markers are not numbers)."""
    text = _NOT_NUMBERS.sub(" ", CITATION.sub(" ", _normal(text)))
    found: list[Claim] = []
    for m in _DIGIT_NUMBER.finditer(text):
        said, _alternatives = _digit_values(m.group("num"))
        scale = _scale(m.group("scale"), m.group("money"), _CURRENCY.search(_before(text, m.start())) is not None)
        if scale != 1 and re.fullmatch(r"\d+(?:\.\d+)?", said[0]):
            said = [_key(float(said[0]) * scale)]
        found.append(Claim(said, _said(text, m.start(), m.end()), _unit(text, m.end())))
    for m in english_numbers.NUMBER.finditer(text):
        words = m.group(0)
        if words.lower() in ("one", "zero") and not _COUNTS.match(text, m.end()):
            continue  # "no one", "one of": a number only when it counts something ("one-year cliff")
        scale_only = set(re.split(r"[\s-]+", words.lower())) <= {"and", *english_numbers.SCALES}
        if scale_only or _AFTER_DIGIT.search(_before(text, m.start())):
            continue  # "million" alone, or the scale of a number in digits ("1.5 million": one claim)
        found.append(Claim([_key(english_numbers.value(words))], _said(text, m.start(), m.end()), _unit(text, m.end())))
    for m in chinese_numerals.counted(text):
        run = m.group(0)
        if text[max(0, m.start() - 1):m.start()] == "第" and run == "一":
            continue  # 第一: "first", an order, not a count the page must hold
        found.append(Claim([_key(chinese_numerals.value(run))], _said(text, m.start(), m.end()), _unit(text, m.end())))
    return found


def held_values(text: str) -> set[str]:
    """Every value a passage may be read as holding — generously: "1.5 million" holds 1.5 and
    1500000, "1,5" both 1.5 and 1 and 5, any Chinese numeral run its value, "one" 1."""
    text = _LIST_MARKER.sub(" ", _normal(text))  # "4. Once approved, …" holds no 4, as an answer's list marker says none
    values: set[str] = set()

    def add(keys: list[str], end: int) -> None:
        """The values, and each with its unit ("25 day") when one follows."""
        unit = _unit(text, end, lenient=True)
        values.update(keys)
        values.update(f"{key} {unit}" for key in keys if unit)

    for m in _DIGIT_NUMBER.finditer(text):
        said, alternatives = _digit_values(m.group("num"))
        scale = _scale(m.group("scale"), m.group("money"), _CURRENCY.search(_before(text, m.start())) is not None)
        scaled = [_key(float(said[0]) * scale)] if scale != 1 and re.fullmatch(r"\d+(?:\.\d+)?", said[0]) else []
        add(said + alternatives + scaled, m.end())
    for m in re.finditer(r"\d+", text):  # every digit run on its own too: "v2.3", "H1", "2024-03-31"
        values.add(_key(float(m.group(0))))
    for m in _RANGE.finditer(text):  # "3–5 days": 3 days too
        add([_key(float(m.group(1)))], m.end())
    for m in english_numbers.NUMBER.finditer(text):
        add([_key(english_numbers.value(m.group(0)))], m.end())
    for m in chinese_numerals.NUMERAL.finditer(text):
        add([_key(chinese_numerals.value(m.group(0)))], m.end())
    for m in re.finditer(r"(\d+(?:\.\d+)?)\s?([万千亿])", text):
        values.add(_key(float(m.group(1)) * {"万": 10_000, "千": 1000, "亿": 100_000_000}[m.group(2)]))
    return values


_RANGE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:-|–|—|to|or|and|至|到|~)\s*\d+(?:\.\d+)?")


def _scale(scale: str | None, money: str | None, currency: bool) -> float:
    words = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "bn": 1e9, "万": 1e4, "千": 1e3, "亿": 1e8}
    if scale:
        return words[scale.lower()]
    if money and currency:  # "$5k", "$1.5M"; a bare "5m" may be minutes or metres, "401k" is a plan
        return 1e3 if money in "kK" else 1e6
    return 1.0


def _said(text: str, start: int, end: int) -> str:
    """How the sentence wrote a number, for the note: with its currency sign and the word after it."""
    before = _CURRENCY.search(_before(text, start))
    after = _SAID_UNIT.match(text, end)
    return _safe((before.group(0) if before else "") + text[start:end] + (after.group(0) if after else ""))


def _normal(text: str) -> str:
    """Full-width digits and signs as ASCII (NFKC), 百分之二十五 as 二十五%, no emphasis marks."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r"百分之([零〇一二两三四五六七八九十百千万\d.]+)", r"\1%", text)
    return text.replace("*", "").replace("_", " ").replace("`", "")


def _safe(text: str) -> str:
    """A piece of model text fit for the note: letters, digits, a few signs, at most 40 characters."""
    return re.sub(r"[^\w$€£¥%.,:\- ]", "", text).strip()[:40]


# -- names -------------------------------------------------------------------------------------

_NAME = re.compile(r"(?<![A-Za-z0-9'’-])(?:[A-Z][A-Za-z0-9’'&-]*[A-Za-z0-9]|[a-z]+[A-Z][A-Za-z0-9-]*)")
_NOT_NAMES = {"I", "I'm", "I've", "I'd", "I'll", "OK", "Ok", "Yes", "No", "Note", "Please", "Also", "However", "If",
              "The", "This", "That", "These", "Those", "You", "Your", "We", "Our", "It", "They", "For", "To", "In",
              "On", "At", "And", "Or", "But", "So", "A", "An", "As", "Each", "Every", "All", "Any", "When", "Where",
              "What", "Which", "Who", "How", "Why", "Once", "After", "Before", "Then", "There", "Here"}
# Markup, code, mentions, e-mail addresses, host names: their capitals name no fact (`<@U0BOSS>`, `@Ann`)
_NOT_NAMES_TEXT = re.compile(r"<[^<>\n]*>|`[^`\n]*`|(?<![^\s<(\[])[^\s@]++@\S+|[@#][\w.-]+"
                             r"|(?<![\w.-])(?:[\w-]+\.)++[A-Za-z]{2,}\S*")


def names(text: str) -> list[str]:
    """The proper names a model's sentence uses: capitalised words (or camel-cased ones,
    "iPhone") that do not open the sentence or a clause, and are not a common opener."""
    text = _NOT_NAMES_TEXT.sub(" ", _NOT_NUMBERS.sub(" ", CITATION.sub(" ", text)))
    found = []
    for m in _NAME.finditer(text):
        word = re.sub(r"['’]s$", "", m.group(0))
        if word in _NOT_NAMES or not word[:1].isalpha() or _opens_clause(text, m.start()):
            continue
        found.append(word)
    return found


def _opens_clause(text: str, at: int) -> bool:
    """Whether the word at `at` opens the sentence or a clause (after ":", ";", "(", a dash, a
    list marker), emphasis and quotes aside: a capital there names nothing by itself."""
    before = text[:at].rstrip(" \t*_\"'“‘”’")
    return not before or before[-1] in ":;(—–\n" or before.endswith((" -", "- ")) or before in ("-", "+", "•")


def _holds_name(name: str, text: str) -> bool:
    """Whether `text` (case-folded) holds `name` as a word ("使用MindSpore进行" holds MindSpore), or its
    singular ("Fridays")."""
    for form in {name.casefold(), name.casefold().rstrip("s")} - {""}:
        if re.search(rf"(?<![a-z0-9]){re.escape(form)}(?:s|es|'s|’s)?(?![a-z0-9])", text):  # CJK around it is fine
            return True
    return False


# -- what may stand uncited ----------------------------------------------------------------------

_ABOUT_SOURCES = re.compile(
    r"\b(?:excerpts?|passages?|pages?|wiki|knowledge base|documents?|documentation|sources?|information|context"
    r"|handbook)\b|文档|资料|页面|知识库|摘录|信息|内容", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|don't|doesn't|didn't|isn't|aren't|cannot|can't|nothing|neither|nor|unclear"
                       r"|only)\b|没有|未|不|无", re.IGNORECASE)
_COURTESY = re.compile(r"^\W*(?:hope (?:this|that) helps|let me know|feel free|thanks?|thank you|you're welcome"
                       r"|希望(?:这|以上)|如有(?:其他|任何)?问题)", re.IGNORECASE)
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+\S.*|\*\*[^*\n]+\*\*:?)\s*$")  # a Markdown heading, a bold line
_ECHO = re.compile(r"^\W*(?:question|questions|wiki excerpts|excerpts?|sources?)\s*[:：]"
                   r"|</?\s*excerpt\b|sentences from the excerpts that seem", re.IGNORECASE)


def uncited_is_fine(sentence: str, not_found: str) -> bool:
    """Whether a sentence with no number and no name may go without a citation: the "not found"
    sentence, one about what the excerpts do not say, one introducing a list, a courtesy."""
    words = _words(sentence)
    if not re.search(r"\w", sentence) or words[: len(_words(not_found))] == _words(not_found):
        return True
    if _NEGATION.search(sentence) and _ABOUT_SOURCES.search(sentence):
        return True
    if _HEADING.match(sentence):
        return True
    return sentence.rstrip().endswith((":", "：")) or bool(_COURTESY.search(sentence))


def _words(text: str) -> list[str]:
    return re.sub(r"[^\w\s]", "", text.casefold()).split()


# -- the check ---------------------------------------------------------------------------------

def source_texts(hits: Sequence[Hit], numbers: Mapping[str, int], lead: Iterable[LeadSentence] = (),
                 max_chars: int | None = None) -> dict[int, str]:
    """What each source number holds, as the model was given it: its sections' titles, heading
    paths and text (each cut at `max_chars`, as in the prompt), and the lead sentences citing it."""
    parts: dict[int, list[str]] = {n: [] for n in numbers.values()}
    for hit in hits:
        n = numbers.get(hit.doc_id)
        if n is not None:
            parts[n] += [hit.title, *hit.heading_path, hit.text[:max_chars]]
    for sentence in lead:
        parts.setdefault(sentence.n, []).append(sentence.text)
    return {n: "\n".join(texts) for n, texts in parts.items()}


def sentence_problem(sentence: str, sources: Mapping[int, str], not_found: str,
                     prompt_lines: Sequence[str] = ()) -> Ungrounded | None:
    """Why one sentence of a model's reply may not be shown, or None when it may."""
    said = " ".join(_words(CITATION.sub("", sentence)))
    part = len(said.split()) >= 5 and said != " ".join(_words(not_found))  # a part of a prompt line, said again
    if _ECHO.search(sentence) or any(line in said or part and said in line for line in prompt_lines):
        return Ungrounded(ECHO, "the model's answer repeated the prompt's own text")
    cited = {int(n) for m in CITATION.finditer(sentence) for n in m.group(1).split(",")} & set(sources)
    stated, named = claims(sentence), names(sentence)
    if not cited:
        if stated or named or not uncited_is_fine(CITATION.sub("", sentence), not_found):
            return Ungrounded(UNCITED, "the model's answer stated something without citing a page")
        return None
    pages = "the cited page does" if len(cited) == 1 else "the cited pages do"
    text = "\n".join(sources[n] for n in sorted(cited))
    held = held_values(text)
    for claim in stated:
        if not claim.held_by(held):
            return Ungrounded(NUMBER, f"the model's answer said {claim.said}; {pages} not")
    folded = _normal(text).casefold()
    for name in named:
        if not _holds_name(_normal(name), folded):
            return Ungrounded(NAME, f"the model's answer named {_safe(name)}; {pages} not")
    return None


def prompt_sentences(*prompts: str, keep: str = "") -> list[str]:
    """The prompt's own sentences of five words or more (`keep` aside: the "not found" sentence
    the model is asked to write), as `sentence_problem` looks for them in a reply."""
    out = []
    for prompt in prompts:
        for sentence in sentences(" ".join(prompt.split())):
            words = " ".join(_words(sentence))
            if len(words.split()) >= 5 and words != " ".join(_words(keep)):
                out.append(words)
    return out


def check_grounded(text: str, sources: Mapping[int, str], not_found: str, prompt_lines: Sequence[str] = ()) -> None:
    """Raise `Ungrounded` for the first sentence of a model's reply that may not be shown, or for
    a reply that stops at a line introducing what never came ("The answer is:")."""
    said = sentences(text)
    for sentence in said:
        problem = sentence_problem(sentence, sources, not_found, prompt_lines)
        if problem is not None:
            raise problem
    if said and unfinished(said[-1]):
        raise Ungrounded(UNFINISHED, "the model's answer stopped before it said anything")


def unfinished(last: str) -> bool:
    """Whether a reply's last sentence introduces something that never came ("The answer is:")."""
    return last.rstrip(" *_").endswith((":", "："))
