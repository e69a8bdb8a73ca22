"""Training pairs for the built-in reader (issue 24 item 3), from SQuAD 1.1 *train* only.

Provenance: the SQuAD explorer's article pages, `explore/1.0/train/*.html` of
github:rajpurkar/SQuAD-explorer at commit `SQUAD_COMMIT` (Rajpurkar et al. 2016, CC BY-SA 4.0),
read from a local mirror made with the search tool's `fetch` (`--mirror`, a bare git directory).
Each page holds an article's paragraphs, each followed by its questions and answers. SQuAD 2.0's
dev articles (the `squad` evaluation corpus, shared/corpora/squad2-wiki) are checked to be absent:
the script stops if any title overlaps, and no evaluation question is ever read.

Pairs are (question, passage, label), the passage a window of at most `WINDOW_WORDS` words with
the article title in front (the evaluation gives "title › heading path" + section text). The
negatives are the ones a handbook's unanswerable questions look like — near-topic, not random:

- `removed`: the answering window with every sentence holding the answer taken out;
- `near`: the same article's paragraph sharing most of the question's words, without the answer;
- `swap`: the question with its rarest word that the passage holds replaced by another article's
  word ("does the dental plan cover braces?" against a page that names the dental insurer);
- `other`: a paragraph of another article (a few, so the scale has both ends).

With `--adversarial`, a wh-question is also turned the way SQuAD 2.0's crowd made its unanswerable
questions (Rajpurkar et al. 2018, section 3: negation, antonym, entity swap, changed number) and
paired with its own answering window — the passage is on topic and holds a plausible answer, but
not to this question:

- `negated`: the question's auxiliary negated ("why did the police grow …" → "why didn't the
  police grow …"), where neither the window nor the question says "not", "no" or "never";
- `antonym`: a word swapped for its opposite (highest → lowest, first → last), the opposite not
  in the window;
- `number`: a number or year in the question changed to one the window does not hold;
- `entity`: a name in the question (capitalised words, not the first) swapped for another name of
  the same article that the window does not hold ("who defeated the Anglo-Norman forces" → "who
  defeated the Byzantine forces") — near-topic, unlike `swap`'s word from anywhere.

These use their own seeded generator, so a set built without the flag is the same as before.

A share of questions (positives and negatives alike) is rewritten the casual way employees type
(`training.question_sets.casual`). Everything is seeded; the output (corpus text) is written
outside git:

    python -m training.reader_data --mirror /work/.mirror/rajpurkar+SQuAD-explorer/repo \
        --out /work/kb/reader/data/pairs.jsonl --questions 8000
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from training.corpora import SHARED

SQUAD_COMMIT = "13f82e35b9a1fb9173f863b35f5675030646571e"
TRAIN_DIR = "explore/1.0/train/"
WINDOW_WORDS = 75  # ~100 word-pieces: with the question, 128 in all (training cost is linear in length)
CASUAL_SHARE = 0.3
_PARA = re.compile(r'<div class="para-wrap">(.*?)(?=<div class="para-wrap">|<nav )', re.S)
_TEXT = re.compile(r"<pre>(.*?)</pre>", re.S)
_QA = re.compile(r'<strong class="question">(.*?)</strong>.*?<span class="answer">(.*?)</span>', re.S)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"[a-z0-9]+")
_WH = re.compile(r"^(what|which|who|whom|whose|when|where|why|how)\b", re.I)
_AUX = re.compile(r"^\w+(?: \w+){0,2}? (is|are|was|were|did|does|do|can|could|will|would|should)\b", re.I)
_NOT = {"is": "isn't", "are": "aren't", "was": "wasn't", "were": "weren't", "did": "didn't", "does": "doesn't",
        "do": "don't", "can": "can't", "could": "couldn't", "will": "won't", "would": "wouldn't", "should": "shouldn't"}
_NEGATION = frozenset({"not", "no", "never", "n't", "none", "without"})
_ANTONYMS = dict(pair for a, b in (
    ("high", "low"), ("higher", "lower"), ("highest", "lowest"), ("large", "small"), ("larger", "smaller"),
    ("largest", "smallest"), ("big", "small"), ("biggest", "smallest"), ("most", "least"), ("more", "less"),
    ("first", "last"), ("before", "after"), ("early", "late"), ("earliest", "latest"), ("earlier", "later"),
    ("increase", "decrease"), ("increased", "decreased"), ("increases", "decreases"), ("rise", "fall"),
    ("maximum", "minimum"), ("long", "short"), ("longest", "shortest"), ("longer", "shorter"),
    ("old", "new"), ("oldest", "newest"), ("north", "south"), ("northern", "southern"), ("east", "west"),
    ("eastern", "western"), ("positive", "negative"), ("major", "minor"), ("success", "failure"),
    ("won", "lost"), ("win", "lose"), ("accept", "reject"), ("accepted", "rejected"), ("allowed", "banned"),
    ("include", "exclude"), ("included", "excluded"), ("start", "end"), ("began", "ended"),
    ("strong", "weak"), ("strongest", "weakest"), ("rich", "poor"), ("private", "public"), ("internal", "external"),
    ("upper", "lower"), ("male", "female"), ("inside", "outside"), ("above", "below"), ("best", "worst"),
) for pair in ((a, b), (b, a)))
_NUMBER = re.compile(r"\b\d{1,4}\b")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})*\b")
_STOP = frozenset("the a an of in on to for and or is are was were be been by with as at from that this which who whom "
                  "what when where why how did does do its it their his her they he she than then into about".split())


@dataclass(frozen=True)
class Pair:
    question: str
    passage: str
    label: int
    kind: str  # pos | removed | near | swap | other | negated | antonym | number | entity
    article: str


@dataclass(frozen=True)
class Paragraph:
    text: str
    qas: list[tuple[str, str]]  # (question, first answer)


def articles(mirror: Path) -> dict[str, list[Paragraph]]:
    """{title: paragraphs} of every training article page in the mirror at `SQUAD_COMMIT`."""
    listing = subprocess.run(["git", "-C", str(mirror), "ls-tree", "--name-only", SQUAD_COMMIT, TRAIN_DIR],
                             check=True, capture_output=True, text=True).stdout.split()
    out = {}
    for path in sorted(p for p in listing if p.endswith(".html") and not p.endswith("index.html")):
        page = subprocess.run(["git", "-C", str(mirror), "show", f"{SQUAD_COMMIT}:{path}"],
                              check=True, capture_output=True, text=True).stdout
        title = html.unescape(Path(path).stem).replace("_", " ")
        paragraphs = []
        for block in _PARA.findall(page):
            text = _TEXT.search(block)
            if not text:
                continue
            qas = [(html.unescape(q).strip(), html.unescape(a).strip()) for q, a in _QA.findall(block)]
            paragraphs.append(Paragraph(html.unescape(text.group(1)).strip(), qas))
        if paragraphs:
            out[title] = paragraphs
    return out


def evaluation_titles() -> set[str]:
    """The SQuAD 2.0 dev articles the `squad` evaluation corpus is built from."""
    folder = SHARED / "squad2-wiki"
    titles = {p.stem.replace("_", " ").lower() for p in folder.glob("*.md")}
    if not titles:
        raise SystemExit(f"{folder} holds no articles: set KB_SHARED_CORPORA, so the overlap check can run")
    return titles


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def window(sentences: list[str], centre: int) -> str:
    """Sentences around `centre` up to `WINDOW_WORDS` words (the answering sentence always in)."""
    chosen, lo, hi = [sentences[centre]], centre - 1, centre + 1
    size = len(sentences[centre].split())
    while lo >= 0 or hi < len(sentences):
        for i in (hi, lo):
            if 0 <= i < len(sentences) and size + len(sentences[i].split()) <= WINDOW_WORDS:
                size += len(sentences[i].split())
                chosen.append(sentences[i])
        lo, hi = lo - 1, hi + 1
        if size >= WINDOW_WORDS * 0.8:
            break
    order = {s: i for i, s in enumerate(sentences)}
    return " ".join(sorted(set(chosen), key=order.get))


def _clip(text: str) -> str:
    return " ".join(text.split()[:WINDOW_WORDS])


def adversarial(question: str, window_text: str, rng: random.Random, names: Sequence[str] = ()) -> tuple[str, str] | None:
    """(kind, question) for a wh-question turned unanswerable against `window_text`, or None.
    `names`: the article's names, for `entity` swaps (none given, none made)."""
    if not _WH.match(question):
        return None
    held = set(words(window_text))
    candidates = []
    asked = [m for m in _NAME.finditer(question) if m.start() > 0]
    if asked and names:
        old = asked[0].group(0)
        size = len(old.split())
        others = [n for n in names if len(n.split()) == size and n != old and not set(words(n)) & held
                  and not set(words(n)) & set(words(question))]
        if others:
            candidates.append(("entity", question[: asked[0].start()] + rng.choice(others) + question[asked[0].end():]))
    for w in re.findall(r"\w+", question)[1:]:
        opposite = _ANTONYMS.get(w)  # lower case only: "New Haven" is a name, not an opposite of "old"
        if opposite and opposite not in held:
            candidates.append(("antonym", re.sub(rf"\b{w}\b", opposite, question, count=1)))
            break
    numbers = _NUMBER.findall(question)
    if numbers:
        old = numbers[0]
        value = int(old)
        shifts = [d for d in (1, 2, 3, 5, 10, 20) if str(value + d) not in held] if value >= 100 else \
                 [d for d in (1, 2, 3, 4) if str(value + d) not in held]
        if shifts:
            step = rng.choice(shifts)
            new = str(value - step if value > 20 and rng.random() < 0.5 else value + step)
            if new not in held:
                candidates.append(("number", re.sub(rf"\b{old}\b", new, question, count=1)))
    aux = _AUX.match(question)
    if aux and not (held & _NEGATION) and not (set(words(question)) & _NEGATION) and (not candidates or rng.random() < 0.3):
        word = aux.group(1)
        negated = _NOT[word.lower()]
        candidates.append(("negated", question[: aux.start(1)] + (negated.capitalize() if word[0].isupper() else negated)
                           + question[aux.end(1):]))
    return rng.choice(candidates) if candidates else None


def build(mirror: Path, n_questions: int, seed: int, adversarial_share: float = 0.0, skip: int = 0,
          entity_swaps: bool = False) -> list[Pair]:
    from training.question_sets import casual

    rng = random.Random(seed)
    turn = random.Random(seed + 1)  # the adversarial negatives' own generator: without them, nothing changes
    data = articles(mirror)
    overlap = {t.lower() for t in data} & evaluation_titles()
    if overlap:
        raise SystemExit(f"training articles overlap the evaluation corpus: {sorted(overlap)[:5]}")
    titles = sorted(data)
    names = {t: sorted({m.group(0) for p in data[t] for m in _NAME.finditer(p.text) if m.start() > 0}) for t in titles}
    vocab = sorted({w for t in titles for p in data[t] for q, _ in p.qas for w in words(q)
                    if len(w) >= 5 and w not in _STOP and not w.isdigit()})
    items = [(t, i, q, a) for t in titles for i, p in enumerate(data[t]) for q, a in p.qas if a]
    rng.shuffle(items)
    pairs: list[Pair] = []
    for title, i, question, answer in items[skip: skip + n_questions]:
        para = data[title][i]
        sentences = _SENTENCE.split(para.text)
        holding = [k for k, s in enumerate(sentences) if answer.lower() in s.lower()]
        if not holding:
            continue
        asked = casual(question, f"{title}:{question}") if rng.random() < CASUAL_SHARE else question
        pos = window(sentences, holding[0])
        head = f"{title}: "
        pairs.append(Pair(asked, head + pos, 1, "pos", title))
        rest = " ".join(s for k, s in enumerate(sentences) if k not in holding)
        if rest and answer.lower() not in rest.lower():
            pairs.append(Pair(asked, head + _clip(rest), 0, "removed", title))
        q_words = {w for w in words(question) if w not in _STOP}
        near = [(len(q_words & set(words(p.text))), k) for k, p in enumerate(data[title])
                if k != i and answer.lower() not in p.text.lower()]
        if near:
            _, k = max(near)
            other = _SENTENCE.split(data[title][k].text)
            pairs.append(Pair(asked, head + window(other, rng.randrange(len(other))), 0, "near", title))
        passage_words = set(words(pos))
        swappable = [w for w in words(question) if w in q_words and w in passage_words and len(w) >= 4]
        if swappable and rng.random() < 0.6:
            target = min(swappable, key=lambda w: (sum(w in words(p.text) for p in data[title]), w))
            new = rng.choice(vocab)
            if new not in passage_words:
                swapped = re.sub(rf"\b{re.escape(target)}\b", new, question, count=1, flags=re.IGNORECASE)
                if swapped != question:
                    pairs.append(Pair(swapped.lower() if asked != question else swapped, head + pos, 0, "swap", title))
        if adversarial_share and turn.random() < adversarial_share:
            made = adversarial(question, pos, turn, names.get(title, ()) if entity_swaps else ())
            if made:
                kind, changed = made
                changed = casual(changed, f"{title}:{changed}") if asked != question else changed
                pairs.append(Pair(changed, head + pos, 0, kind, title))
        if rng.random() < 0.3:
            other_title = rng.choice([t for t in titles if t != title])
            para_o = rng.choice(data[other_title])
            s_o = _SENTENCE.split(para_o.text)
            pairs.append(Pair(asked, f"{other_title}: " + window(s_o, rng.randrange(len(s_o))), 0, "other", other_title))
    rng.shuffle(pairs)
    return pairs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--adversarial", type=float, default=0.0, metavar="SHARE",
                        help="share of wh-questions also turned into a SQuAD 2.0-like unanswerable negative")
    parser.add_argument("--entities", action="store_true", help="with --adversarial: also swap a name for another of the article")
    parser.add_argument("--skip", type=int, default=0,
                        help="questions of the seeded order to pass over (fresh ones for a fine-tune)")
    args = parser.parse_args(argv)
    pairs = build(args.mirror, args.questions, args.seed, args.adversarial, args.skip, args.entities)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")  # a stopped run leaves no file a resume would trust
    partial.write_text("".join(json.dumps(asdict(p)) + "\n" for p in pairs))
    partial.replace(args.out)
    kinds = {k: sum(p.kind == k for p in pairs)
             for k in ("pos", "removed", "near", "swap", "other", "negated", "antonym", "number", "entity")}
    print(f"{len(pairs)} pairs from {len({p.article for p in pairs})} articles: {kinds} → {args.out}")


if __name__ == "__main__":
    main()
