"""Verified answers: does the matcher give a verified answer to its paraphrases and never to its near misses?

    python -m benchmarks.verified_matching [--show PART] [--swaps]

The labelled set `benchmarks/verified/answers.jsonl` (64 verified answers for the sample wiki's
company, written in four parts; its README says how) and the sample wiki's own 20 questions
(`sample-wiki/QUESTIONS.jsonl`, which no verified answer answers). Every variant of every answer
is the candidate pool, embedded by the index's default embedder (the bundled all-MiniLM-L6-v2
under ONNX Runtime), as `bot.verified.lookup` does; each question is embedded the same way, its
10 nearest variants by cosine are the candidates, and:

- **cosine only**: the nearest candidate is given when its cosine reaches a threshold (a sweep,
  and the lowest threshold that keeps near misses ≤ 0.05 on the dev half),
- **the rule**: `bot.verified.matching.best_match` with the sample wiki's `[synonyms]`;
- **the rule, given or offered**: what the asker reaches in one click — the answer given, or else
  the one offered (`bot.verified.matching.decide`): paraphrases given or offered their own answer,
  near misses and sample questions given or offered any (an offer shows its verified question).

Printed per part of the set (dev: the rule was designed on it; held-out and held-out-2: each
scored once with the rule of its day, then used to improve it; held-out-3: written before the
third round, scored once at its end; held-out-4, with `--blind`: written by a helper who never saw
the matcher, scored once at the end of the fourth round — benchmarks/verified/README.md): the share of paraphrases
given their own answer, of near misses given any answer, the count of the sample's questions
given one, and the matcher's time per question over 10 candidates. `--show` lists every question
of a part the rule gets wrong, with the verdict of its own answer's candidate (or the nearest one).

`--swaps` measures an idea the rule does not use: telling a synonym swapped in place ("visitor"
for "guest") from a near miss ("staff" for "guest") by the bundled model's cosine of the two
words. For every question the rule refuses as one thing swapped in place (paraphrases: against
their own answer's variant; near misses: against any), the highest word cosine of its swaps, and
how many of each kind a word-cosine threshold would let through.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import support_module

REPO = Path(__file__).resolve().parents[1]
NEAR_MISS_TARGET = 0.05
SWEEP = (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)

_set = support_module("verified_set")
Asked, CANDIDATES, by_cosine, by_rule, by_offer = _set.Asked, _set.CANDIDATES, _set.by_cosine, _set.by_rule, _set.by_offer
candidate_lists, load_set, score = _set.candidate_lists, _set.load_set, _set.score


def fitted_cosine(asked: Sequence[Asked], candidates: dict[str, list]) -> float | None:
    """The lowest threshold (in steps of 0.01) at which cosine alone gives ≤ 5% of near misses
    (None: not even 1.00 does — Chinese near misses reach 1.00, the model reads no Chinese)."""
    for step in range(30, 101):
        if score(asked, by_cosine(candidates, step / 100)).near_misses <= NEAR_MISS_TARGET:
            return step / 100
    return None


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    from bot.settings import SAMPLE_SOURCES
    from benchmarks._common import pct
    from bot.verified.matching import best_match, judge
    from bot.verified.question_words import variant_terms as _variant_terms
    from sources import load_synonyms

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", choices=("dev", "held-out", "held-out-2", "held-out-3", "held-out-4", "held-out-5"),
                        help="list the rule's mistakes on this part")
    parser.add_argument("--swaps", action="store_true", help="the word cosines of swaps in place, by kind")
    parser.add_argument("--blind", action="store_true",
                        help="with the blind parts (held-out-4, -5): score each once, at the end of a round")
    args = parser.parse_args()
    labelled = load_set(blind=args.blind)
    synonyms = load_synonyms(SAMPLE_SOURCES)
    candidates = candidate_lists(labelled)
    halves = {s: [a for a in labelled.asked if a.split == s] for s in dict.fromkeys(a.split for a in labelled.asked)}
    fitted = fitted_cosine(halves["dev"], candidates)

    table = Table(title="Verified answers: share of paraphrases given their answer · of near misses given one · "
                        "sample questions given one")
    table.add_column("matcher")
    for split in halves:
        table.add_column(f"{split}: paraphrases", justify="right")
        table.add_column("near misses", justify="right")
        table.add_column("sample", justify="right")
    rows = [(f"cosine ≥ {t:.2f}", by_cosine(candidates, t)) for t in SWEEP]
    if fitted is None:
        print(f"cosine only: no threshold keeps near misses ≤ {NEAR_MISS_TARGET} on dev")
    else:
        rows.append((f"cosine ≥ {fitted:.2f} (fitted on dev)", by_cosine(candidates, fitted)))
    rows.append(("rule (bot.verified.matching)", by_rule(candidates, synonyms)))
    rows.append(("rule, given or offered", by_offer(candidates, synonyms)))
    for name, given in rows:
        cells: list[str] = []
        for asked in halves.values():
            s = score(asked, given)
            cells += [f"{s.paraphrases:.2f}", f"{s.near_misses:.2f}", str(s.samples)]
        table.add_row(name, *cells)
    Console(width=150).print(table)
    rule = by_rule(candidates, synonyms)
    print("the rule's paraphrases given another answer than theirs (a wrong answer, counted as not given above): "
          + ", ".join(f"{split} {score(asked, rule).others}" for split, asked in halves.items()))

    texts = list(candidates)
    for cold in (False, True):
        times = []
        for _ in range(20):
            for text in texts:
                if cold:  # nothing analysed before: the variants' words too
                    _variant_terms.cache_clear()
                start = time.perf_counter()
                best_match(text + " ", candidates[text], synonyms)  # a new text: its analysis is not cached
                times.append((time.perf_counter() - start) * 1000)
        print(f"best_match over {CANDIDATES} candidates, variants' words {'not ' if cold else ''}cached: "
              f"p50 {pct(times, 50):.3f} ms, p95 {pct(times, 95):.3f} ms ({len(times)} calls)")

    if args.show:
        for a in halves[args.show]:
            got = rule(a.text)
            if got == a.expected:
                continue
            mine = [c for c in candidates[a.text] if a.expected is not None and c.answer_id == a.expected]
            shown = mine[0] if mine else candidates[a.text][0]
            verdict = judge(a.text, shown, synonyms)
            got_id = labelled.ids[got] if got is not None else "none"
            print(f"{a.kind:10} got {got_id:22} {a.text!r}\n{'':10} vs {shown.variant!r} "
                  f"({shown.similarity:.2f}): {verdict.reason}")

    if args.swaps:
        swap_cosines(labelled, candidates, synonyms)


def swap_cosines(labelled, candidates: dict[str, list], synonyms) -> None:
    """The `--swaps` table (see the module's docstring)."""
    import re
    import tempfile

    import numpy as np

    from bot.verified.matching import judge
    from indexing.config import IndexConfig
    from indexing.index import make_embedder

    swaps: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (kind, question) → its (added, left out) runs
    for a in labelled.asked:
        if a.kind == "sample":
            continue
        for c in candidates[a.text]:
            if a.kind == "paraphrase" and c.answer_id != a.expected:
                continue
            found = re.fullmatch(r"'(.+)' in place of '(.+)'", judge(a.text, c, synonyms).reason)
            if found:
                swaps.setdefault((a.kind, a.text), []).append((found.group(1), found.group(2)))
    embedder = make_embedder(IndexConfig(home=Path(tempfile.mkdtemp(prefix="docent-verified-"))))
    words = sorted({w for pairs in swaps.values() for pair in pairs for w in pair})
    vectors = np.asarray(embedder.embed_unindexed(words), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    at = {w: vectors[i] for i, w in enumerate(words)}
    best = {key: max((float(at[x] @ at[y]), x, y) for x, y in pairs) for key, pairs in swaps.items()}
    for kind in ("paraphrase", "near miss"):
        print(f"{kind}s refused as a swap in place, by the highest word cosine of their swaps:")
        for (cos, x, y), (_, text) in sorted(((v, k) for k, v in best.items() if k[0] == kind), reverse=True):
            print(f"  {cos:.2f}  {x!r} for {y!r}  ({text!r})")
    for threshold in (0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75):
        let = {kind: sum(v[0] >= threshold for k, v in best.items() if k[0] == kind) for kind in ("paraphrase", "near miss")}
        total = {kind: sum(k[0] == kind for k in best) for kind in ("paraphrase", "near miss")}
        print(f"word cosine ≥ {threshold:.2f} lets through {let['paraphrase']}/{total['paraphrase']} of these paraphrases "
              f"and {let['near miss']}/{total['near miss']} of these near misses")


if __name__ == "__main__":
    main()
