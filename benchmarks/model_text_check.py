"""What checking a model's text costs: the whole reply once, against every streamed piece.

    .venv/bin/python -m benchmarks.model_text_check [--repeat 20]

`bot.answering.llm.checked_text` is applied to the final reply and, through `bot.answering.llm_stream.StreamCheck`,
to every piece while the model streams (deltas of 4 characters, about a token each). The
baseline is checking the whole reply once, in the same process; the ratio is what streaming adds.
Replies: a plain answer (1,500 characters, a few citations and one source link), the longest a
reply may be (6,000 characters) full of links, domains and Slack markup, and hostile shapes
(one 6,000-character word; 6,000 `[`; 6,000 `<`), which the hold-back must not make quadratic.
"""

from __future__ import annotations

import argparse
import time

from benchmarks._common import table

PAGE = "https://wiki.acme.example/people/leave.md"
PLAIN = ("The primary caregiver gets 16 weeks of fully paid parental leave [1]. The secondary caregiver gets 8 "
         "weeks [1, 2], to be taken within the first year. Tell your manager at least two months before the leave "
         f"starts [2], and book it in the HR portal so payroll knows [1]; the policy is on [the leave page]({PAGE}). ")
HOSTILE = ("Sign in at <https://evil.example/login|acme.okta.com> or www.acme-okta.evil.example/reset, tell <@U0BOSS> "
           f"and <!here>; mail it@evil.example, run `python setup.py`, see {PAGE}#rota [1] and [x](https://evil.example) [9]. ")


def replies() -> dict[str, str]:
    return {
        "plain answer, 1,500 chars": (PLAIN * 5)[:1500],
        "links and markup, 6,000 chars": (HOSTILE * 30)[:6000],
        "one 6,000-char word": "a" * 6000,
        "6,000 '['": "[" * 6000,
        "6,000 '<'": "<" * 6000,
        "6,000 '.' between letters": "a." * 3000,
        "6,000 of 'a]'": "a]" * 3000,
        "6,000 of '[ '": "[ " * 3000,
        "6,000 of '` '": "` " * 3000,
        "6,000 of '<a '": "<a " * 2000,
    }


def best_of(repeat: int, work) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20, help="runs of each; the best is reported")
    parser.add_argument("--delta", type=int, default=4, help="characters per streamed piece")
    args = parser.parse_args()

    from bot.answering.llm import AllowedLinks, checked_text
    from bot.answering.llm_stream import StreamCheck

    allowed = AllowedLinks(frozenset({1, 2}), frozenset({"wiki.acme.example/people/leave.md"}),
                           frozenset({"wiki.acme.example"}))

    def streamed(text: str) -> str:
        check = StreamCheck(allowed)
        pieces = [check.feed(text[i:i + args.delta]) for i in range(0, len(text), args.delta)]
        return "".join(pieces) + check.flush()

    rows = []
    for name, text in replies().items():
        assert streamed(text) == checked_text(text, allowed), name  # the same text either way
        whole = best_of(args.repeat, lambda text=text: checked_text(text, allowed))
        pieces = best_of(args.repeat, lambda text=text: streamed(text))
        rows += [(f"{name}: whole reply once, ms", whole * 1000),
                 (f"{name}: every {args.delta}-char piece, ms", pieces * 1000),
                 (f"{name}: streaming / once", pieces / whole if whole else float("nan"))]
    table(f"checked_text: the whole reply once vs streamed in {args.delta}-character pieces (best of {args.repeat})",
          rows)


if __name__ == "__main__":
    main()
