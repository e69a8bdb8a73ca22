"""Answer types: what kind of fact a question asks for, and whether a sentence holds one.

The oldest cue in question answering: "when is X due?" wants a time, "what % does it pay?" a
share, "how many days?" a number, "is there any money for therapy?" an amount, "what's the vpn
server address and port?" a host, URL, e-mail, port or channel. The lead prefers sentences
holding the asked-for type. A time question is not answered by a sentence whose only number is
an amount ("$5,000 referral bonus" does not say *when* it is paid), so each type has its own
pattern rather than "has a digit"; "due to" asks for no time.
"""

from __future__ import annotations

import re

TIME, SHARE, NUMBER, AMOUNT, ADDRESS = "time", "share", "number", "amount", "address"

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_UNITS = r"(?:seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|quarters?|semesters?)"

# "when" asks for a time only as a question word (at the start, or after a comma or "and"):
# "does it pay for a babysitter when i travel" asks no time.
_ASKS_TIME = re.compile(
    r"(?:^|[,;?]\s*|\band\s+)when\b|\bhow (?:long|soon|quickly|often|fast)\b|\bwhat (?:time|date|day|year|month)\b"
    r"|\b(?:which|what|in what) (?:year|day|date|month|century|decade)\b|\bdeadline\b|\bdue\b(?! to\b)|\bby when\b"
    r"|多久|多长时间|什么时候|何时|哪年|哪天|哪一天|周几|几点|几号|几月", re.IGNORECASE)
_ASKS_SHARE = re.compile(r"\bwhat (?:%|percent(?:age)?|share|portion|fraction)|\bpercent(?:age)?\b|%|百分之|比例", re.IGNORECASE)
_ASKS_NUMBER = re.compile(r"\bhow (?:many|much|old|far|big|large|high|tall)\b|\blimit\b|\bmaximum\b|\bminimum\b|\bmax\b|\bmin\b"
                          r"|\bwhat (?:age|amount|number|size)\b|多少|几|上限|下限|最多|最少", re.IGNORECASE)

_HAS_TIME = re.compile(
    rf"\d+(?:\.\d+)?\s*(?:-|to|or)?\s*(?:\d+\s*)?(?:business |working |calendar |consecutive )?{_UNITS}\b"
    rf"|\b(?:{_MONTHS}|{_DAYS})\b|\b(?:1[0-9]|20)\d{{2}}s?\b|\b\d{{1,2}}(?::\d{{2}})?\s*(?:am|pm|a\.m\.|p\.m\.)"
    r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|thirty|ninety)"
    rf" (?:business |working |consecutive )?{_UNITS}\b"
    rf"|\b(?:daily|weekly|monthly|quarterly|annually|yearly|every (?:day|week|month|quarter|year))\b"
    r"|[0-9一二三四五六七八九十两半]+\s*(?:个)?(?:天|周|月|年|日|号|小时|分钟|点|工作日)|周[一二三四五六日]|星期[一二三四五六日天]",
    re.IGNORECASE)
_HAS_SHARE = re.compile(r"\d\s*%|\bpercent\b|百分之|\d+\s*成", re.IGNORECASE)
_DIGITS = re.compile(r"\d|[一二三四五六七八九十百千万两半]+\s*[个天周月年日次小分%]")
_HAS_NUMBER = re.compile(_DIGITS.pattern + r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen"
                         r"|twenty|thirty|hundred|thousand|million|billion)\b", re.IGNORECASE)
# Money: "is there any money for therapy", "does it pay for a babysitter", "what's the budget".
_ASKS_AMOUNT = re.compile(r"\b(?:money|cost|costs|price|fee|fees|budget|stipend|allowance|reimburse\w*|salary"
                          r"|pay for|paid for|covers?)\b"
                          r"|费用|报销|多少钱|预算", re.IGNORECASE)
_HAS_AMOUNT = re.compile(r"[$€£¥]\s?\d|\d\s?(?:USD|EUR|GBP|dollars?|euros?|元)\b|\d\s?元", re.IGNORECASE)
# Where to reach something: a host, a URL, an address, a port, an e-mail, a channel.
_ASKS_ADDRESS = re.compile(r"\b(?:address|url|link|port|hostname|host|endpoint|ip|e-?mail|channel)\b|地址|链接|网址|邮箱|端口",
                           re.IGNORECASE)
_HAS_ADDRESS = re.compile(r"https?://|\b[\w.+-]+@[\w-]+\.[\w.]+|\b\d{1,3}(?:\.\d{1,3}){3}\b|\b[a-z0-9-]+(?:\.[a-z0-9-]+)+:\d{2,5}\b"
                          r"|\bport \d{2,5}\b|(?<![\w&])#[a-z][\w-]+"
                          r"|\b(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|example|cn|internal)\b",
                          re.IGNORECASE)
_HOLDS = {TIME: _HAS_TIME, SHARE: _HAS_SHARE, NUMBER: _HAS_NUMBER, AMOUNT: _HAS_AMOUNT, ADDRESS: _HAS_ADDRESS}
# Checked in this order: "how many days" is answered by a duration (also a number); "how much
# does it cost" is a number question (an amount is a number), "does it cover X" an amount one.
_ASKS = [(SHARE, _ASKS_SHARE), (TIME, _ASKS_TIME), (NUMBER, _ASKS_NUMBER), (AMOUNT, _ASKS_AMOUNT), (ADDRESS, _ASKS_ADDRESS)]


def asked_type(question: str) -> str | None:
    """SHARE, TIME, NUMBER, AMOUNT or ADDRESS when the question asks for one, else None (the
    first that matches, in that order)."""
    for kind, asks in _ASKS:
        if asks.search(question):
            return kind
    return None


def holds(sentence: str, kind: str | None) -> bool:
    """Whether `sentence` holds a fact of the asked-for kind (False when nothing is asked)."""
    if not kind:
        return False
    return bool(_HOLDS[kind].search(sentence))


def has_digits(text: str) -> bool:
    """Whether a text holds a written number (digits, or Chinese numerals with a unit): a short
    sentence with one ("Limit: $300") is still worth reading."""
    return bool(_DIGITS.search(text))
