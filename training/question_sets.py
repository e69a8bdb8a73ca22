"""Extra labelled questions for calibrating the not-found gate (none copied from a corpus).

Three sources of data the public sets lack (issues 14 and 34):

- **casual rewrites** of every public question — no capitals, no punctuation, dropped
  apostrophes, chat abbreviations, one typo — which must keep the original's outcome;
- **foreign questions**: a corpus's questions asked of another corpus's index, labelled
  `not_found` there. Only pairs from different domains are used (company handbooks vs Wikipedia
  articles vs an open-source community's Chinese handbook): a Clef question asked of the
  Sourcegraph handbook is often answerable ("how many vacation days"), a SQuAD question about the
  Normans never is. A sample was checked by hand (docs/history.md, tuning log §8);
- **near-topic unanswerable questions** written by hand for the English handbooks, each checked
  against the whole corpus (`benchmarks/unanswerable/README.md`): the page retrieval finds talks
  about the topic but does not answer. They are their own set, "unanswerable", so results can be
  reported with and without them; fit thresholds on them leave-one-corpus-out, never train on them.

The first two are derived at run time from the `eval_public.jsonl` files; the third is read from
`benchmarks/unanswerable/<file>.jsonl`.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from training.corpora import REPO, SHARED

CORPORA = {  # name -> (folder, questions file, domain)
    "sample": (REPO / "sample-wiki", REPO / "sample-wiki" / "QUESTIONS.jsonl", "handbook"),
    "clef": (SHARED / "clef-handbook", SHARED / "clef-handbook" / "eval_public.jsonl", "handbook"),
    "sg": (SHARED / "sourcegraph-handbook", SHARED / "sourcegraph-handbook" / "eval_public.jsonl", "handbook"),
    "mszh": (SHARED / "mindspore-community-zh", SHARED / "mindspore-community-zh" / "eval_public.jsonl", "community-zh"),
    "squad": (SHARED / "squad2-wiki", SHARED / "squad2-wiki" / "eval_public.jsonl", "wikipedia"),
    # Our own Chinese handbook (benchmarks/zh-handbook/README.md): Chinese fit data that is not MindSpore's
    "zhh": (REPO / "benchmarks" / "zh-handbook" / "pages", REPO / "benchmarks" / "zh-handbook" / "QUESTIONS.jsonl", "handbook"),
}
# Hand-written near-topic unanswerable questions (benchmarks/unanswerable/README.md), by corpus.
UNANSWERABLE_DIR = REPO / "benchmarks" / "unanswerable"
UNANSWERABLE = {"sample": UNANSWERABLE_DIR / "sample.jsonl", "clef": UNANSWERABLE_DIR / "clef.jsonl",
                "sg": UNANSWERABLE_DIR / "sourcegraph.jsonl"}
FOREIGN_PER_CORPUS = 40  # at most this many questions from each foreign corpus (answerable ones)

# Common chat spellings, applied word by word (not chosen per question).
CHAT = {"you": "u", "your": "ur", "youre": "ur", "are": "r", "please": "pls", "because": "cuz",
        "with": "w/", "about": "abt", "people": "ppl", "thanks": "thx",
        "really": "rly", "before": "b4", "tomorrow": "tmrw", "message": "msg", "to": "2", "for": "4"}
_APOSTROPHE = re.compile(r"['’]")
_PUNCT = re.compile(r"[^\w\s/$%€£.-]|(?<!\d)[.](?!\d)|[？！，。、；：“”（）]")


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def casual(question: str, seed: str) -> str:
    """A chat-style rewrite: lower case, no apostrophes or punctuation, chat spellings for some
    common words, and one typo (two adjacent letters swapped) in one longer word."""
    rng = random.Random(seed)
    words = []
    for word in _PUNCT.sub(" ", _APOSTROPHE.sub("", question.lower())).split():
        if word in CHAT and rng.random() < 0.7:
            word = CHAT[word]
        words.append(word)
    long_words = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha() and w.isascii()]
    if long_words:
        i = rng.choice(long_words)
        w = words[i]
        j = rng.randrange(1, len(w) - 2)
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    return " ".join(words)


def question_sets(corpus: str) -> dict[str, list[dict]]:
    """The labelled question sets to ask of `corpus`'s index: its own public questions, their
    casual rewrites, foreign questions (other domains' answerable questions, as not_found) and
    its hand-written near-topic unanswerable ones (empty where none were written)."""
    _folder, path, domain = CORPORA[corpus]
    own = load(path)
    rewrites = [{**q, "id": q["id"] + "~casual", "question": casual(q["question"], q["id"])} for q in own]
    foreign = []
    for name, (_f, other_path, other_domain) in CORPORA.items():
        if other_domain == domain or not other_path.exists():
            continue
        answerable = [q for q in load(other_path) if q.get("kind") != "not_found"]
        for q in random.Random(name + corpus).sample(answerable, min(FOREIGN_PER_CORPUS, len(answerable))):
            foreign.append({"id": f"{q['id']}@{corpus}", "question": q["question"], "expected_sources": [],
                            "answer_keywords": [], "kind": "not_found"})
    extra = UNANSWERABLE.get(corpus)
    unanswerable = load(extra) if extra else []
    return {"public": own, "casual": rewrites, "foreign": foreign, "unanswerable": unanswerable}


if __name__ == "__main__":  # print a sample to check by hand
    import sys

    for corpus in sys.argv[1:] or ["sg"]:
        sets = question_sets(corpus)
        for name, rows in sets.items():
            for q in random.Random(1).sample(rows, min(6, len(rows))):
                print(f"{corpus:6} {name:8} {q['kind']:12} {q['question']}")
