"""Model answers held to their pages (issue 48): how many replies kept as model answers cite
nothing or state a number their sources lack — before the grounding check and after it.

    # each corpus synced once into its own home (sample: `KB_HOME=/tmp/i48/kb-sample kb sync`;
    # the shared ones: `KB_HOME=/tmp/i48/kb-clef kb sync ../shared/corpora/clef-handbook --exclude ...`)
    .venv/bin/python -m benchmarks.llm_grounding --homes '/tmp/i48/kb-{corpus}' \
        [--corpora sample clef sg mszh] [--llama http://127.0.0.1:8088/v1]

Each public question goes through the answer path (`bot.answering.answer.answer_question`, what
`kb ask --json` runs) with a language model that is:

- **faithful**: a scripted endpoint answering with the prompt's own lead sentences, each with
  the `[n]` the prompt gives it (tests/support/openai_server.py `faithful`) — what a careful model
  writes; it should be kept (goal: >= 0.95 of the replies that were kept before);
- **paraphrased**: the faithful reply reworded — small numbers in words, "$1,500" as "1,500
  dollars", each citation after its full stop — also to be kept;
- **unfaithful**: the same endpoint going wrong the ways models do, in turn: a number of the
  lead changed (citation kept), the citations dropped, the prompt's "Question: …" echoed, an
  invented "$500 stipend [1]" added;
- **llama** (with `--llama`): SmolLM2-135M behind llama.cpp's OpenAI-compatible server
  (docs/tuning.md says how to start it) — a real, tiny, often wrong model.

"Before" is what Docent kept until now: every non-empty reply that is not the "not found"
sentence (citations to missing sources and unsafe links removed). "After" is `llm_used` of the
answer. A kept reply is *bad* when it cites no source, or when a number written in digits in it
is not among the numbers of the pages it cites — judged here by a deliberately simple rule of
its own (digits only, commas dropped), not by the check under test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
from collections import Counter
from pathlib import Path

from benchmarks._common import support_module, table

CORPORA = ("sample", "clef", "sg", "mszh")


def unfaithful(body: dict, turn: Counter) -> str:
    """The faithful reply gone wrong, one way after another."""
    server = support_module("openai_server")
    lines = server.lead_lines(body)
    if not lines:
        return "Employees get a $500 stipend for this [1]."
    kind = turn["n"] % 4
    turn["n"] += 1
    reply = " ".join(lines)
    if kind == 0 and re.search(r"\d", reply):
        return re.sub(r"\d+", lambda m: str(int(m.group(0)) + 5), reply, count=1)  # a wrong number, still cited
    if kind == 1:
        return re.sub(r"\s*\[\d+(?:,\s*\d+)*\]", "", reply)  # cites nothing
    if kind == 2:
        question = body["messages"][-1]["content"].rsplit("Question:", 1)[-1].strip()
        return f"{reply}\n\nQuestion: {question}"
    return f"{reply} Everyone also gets a $500 stipend for it [1]."


_SMALL = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen " \
         "seventeen eighteen nineteen twenty".split()


def paraphrased(body: dict) -> str:
    """The faithful reply reworded as models reword: small numbers in words ("25" stays, "7" → "seven"),
    "$1,500" as "1,500 dollars", the citation after the full stop, an opening of its own."""
    server = support_module("openai_server")
    lines = server.lead_lines(body)
    if not lines:
        return "I could not find this in the knowledge base."
    out = []
    for line in lines:
        cites = re.findall(r"\s*\[\d+(?:,\s*\d+)*\]\s*$", line)
        text = line[: len(line) - len(cites[0])] if cites else line
        text = re.sub(r"(?<![\d.,$])\b(\d{1,2})\b(?![\d.,:%])", lambda m: _SMALL[int(m.group(1))]
                      if int(m.group(1)) <= 20 else m.group(1), text)
        text = re.sub(r"\$(\d[\d,]*(?:\.\d+)?)", r"\1 dollars", text)
        text = text.rstrip() if text.rstrip().endswith(tuple(".。！？!?")) else text.rstrip() + "."
        out.append(text + (cites[0] if cites else ""))
    return "According to the wiki: " + " ".join(out)


_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")


def bad(text: str, sources: dict[int, str]) -> str | None:
    """The judge: "uncited" when a reply cites no source, "number" when a number in digits in it
    is not among its cited pages' numbers; None when neither."""
    cited = {int(n) for group in re.findall(r"\[(\d{1,2}(?:\s*,\s*\d{1,2})*)\]", text) for n in group.split(",")}
    cited &= set(sources)
    if not cited:
        return "uncited"
    held = {d.replace(",", "") for n in cited for d in _DIGITS.findall(sources[n])}
    said = {d.replace(",", "") for d in _DIGITS.findall(re.sub(r"\[[\d,\s]+\]|https?://\S+", " ", text))}
    return "number" if said - held else None


class Recorder:
    """A `LanguageModel` that answers as `LLMClient` does, and notes what the reply would have been
    before the grounding check (kept? bad?) and what became of it."""

    def __init__(self, client, cache: dict[str, str] | None = None, save: Path | None = None) -> None:
        self.client = client
        self.cache = cache if cache is not None else {}  # the model's replies by prompt: a slow model is asked once
        self.save = save
        self.offline = False  # True: only the cached replies are scored, the model is not asked
        self.last: dict = {}

    def answer(self, question, hits, numbers, lead=(), outcome="answered") -> str:
        from bot.answering.grounding import source_texts
        from bot.answering.llm import (
            MAX_SECTION_CHARS, allowed_links, check_citations, checked_reply, checked_text, cited_numbers,
            prompt_messages, says_not_found, tidy_reply,
        )

        self.last = {"called": True, "kept_before": False, "bad_before": None, "sources": {}}  # if the call fails
        messages = prompt_messages(question, hits, numbers, lead, outcome)
        key = hashlib.sha256(json.dumps([m.content for m in messages]).encode()).hexdigest()
        if key not in self.cache and self.offline:
            self.last["skipped"] = True
            raise LookupError("not in the cache")
        if key not in self.cache:
            self.cache[key] = self.client.llm.chat(messages).message.content or ""
            if self.save is not None:
                self.save.write_text(json.dumps(self.cache))  # each reply kept at once: a slow model's work is not lost
        reply = self.cache[key]
        text = tidy_reply(reply)
        if text:  # what the answer was before the grounding check
            cited = cited_numbers(check_citations(text, set(numbers.values())))
            text = checked_text(text, allowed_links(hits, numbers, cited)).strip()
        sources = source_texts(hits, numbers, lead, MAX_SECTION_CHARS)
        self.last.update(kept_before=bool(text) and not says_not_found(text),
                         bad_before=bad(text, sources) if text else None, sources=sources)
        return checked_reply(reply, hits, numbers, lead)


def run(corpus: str, home: Path, base_url: str, timeout: float, cache: dict[str, str] | None = None,
        save: Path | None = None, limit: int | None = None, offline: bool = False) -> Counter:
    from bot.answering.answer import answer_question
    from bot.answering.llm import LLMClient
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from training.question_sets import CORPORA as FILES
    from training.question_sets import load

    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    recorder = Recorder(LLMClient(base_url, "local", timeout=timeout), cache, save)
    recorder.offline = offline
    counts: Counter = Counter()
    try:
        for q in load(FILES[corpus][1])[:limit]:
            recorder.last = {}
            answer = answer_question(index, q["question"], llm=recorder)
            seen = recorder.last
            counts["questions"] += 1
            if seen.get("skipped"):
                counts["not in the cache (skipped)"] += 1
                continue
            if not seen.get("called"):
                continue
            counts["model called"] += 1
            counts["kept before"] += seen["kept_before"]
            counts["kept before, bad"] += seen["kept_before"] and seen["bad_before"] is not None
            counts["kept after"] += answer.llm_used
            verdict = bad(answer.text, seen["sources"]) if answer.llm_used else None
            counts["kept after, bad"] += verdict is not None
            counts["model failed (timeout, error)"] += bool(answer.note) and not answer.signals.get("llm_set_aside")
            if answer.signals.get("llm_set_aside"):
                counts[f"set aside: {answer.signals['llm_set_aside']}"] += 1
            if seen["kept_before"] and seen["bad_before"] is None:
                counts["good before"] += 1
                counts["good before, kept after"] += answer.llm_used
    finally:
        index.close()
    return counts


def main() -> None:
    logging.getLogger("bot.answering.answer").setLevel(logging.ERROR)  # one line per set-aside reply: counted instead
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--homes", required=True, help="each corpus's KB home, with {corpus} in it")
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    parser.add_argument("--llama", help="base URL of llama.cpp's server (…/v1), to run the real tiny model too")
    parser.add_argument("--models", nargs="+", default=["faithful", "paraphrased", "unfaithful", "llama"])
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--limit", type=int, help="the first N questions of each set (a slow model)")
    parser.add_argument("--cached-only", action="store_true", help="score only the replies in --cache (the model "
                        "is not asked; the other questions are counted as skipped)")
    parser.add_argument("--cache", type=Path, help="JSON file of the real model's replies by prompt (read, then "
                        "written): scoring again does not ask the model again")
    args = parser.parse_args()
    cache = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}

    server_module = support_module("openai_server")
    server = server_module.FakeOpenAI().start()
    turn: Counter = Counter()
    endpoints = {"faithful": (server.base_url, server_module.faithful), "paraphrased": (server.base_url, paraphrased),
                 "unfaithful": (server.base_url, lambda body: unfaithful(body, turn))}
    if args.llama:
        endpoints["llama"] = (args.llama, None)
    try:
        for model in [m for m in args.models if m in endpoints]:
            url, responder = endpoints[model]
            if responder is not None:
                server.respond(responder)
            total: Counter = Counter()
            for corpus in args.corpora:
                llama = model == "llama"
                counts = run(corpus, Path(args.homes.format(corpus=corpus)), url, args.timeout,
                             cache if llama else None, args.cache if llama else None, args.limit,
                             offline=llama and args.cached_only)
                total.update(counts)
                report(f"{model} model, {corpus}", counts)
            report(f"{model} model, all corpora", total)
    finally:
        server.stop()


def report(title: str, counts: Counter) -> None:
    names = ("questions", "not in the cache (skipped)", "model called", "model failed (timeout, error)",
             "kept before", "kept before, bad", "kept after", "kept after, bad")
    rows = [(name, counts[name]) for name in names]
    rows += sorted((name, n) for name, n in counts.items() if name.startswith("set aside"))
    if counts["good before"]:
        rows.append(("good replies kept (after / before)", counts["good before, kept after"] / counts["good before"]))
    table(title, rows)


if __name__ == "__main__":
    main()
