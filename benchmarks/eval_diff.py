"""Which questions two `kb eval --json` runs answered differently (timings aside).

    python -m benchmarks.eval_diff before=/tmp/before-{set}.json after=/tmp/after-{set}.json \\
        --sets sample clef sg mszh squad zhh [--ignore-signal searched]

For each set: how many questions differ in outcome, ranked pages, hit rank, keyword coverage or
gate signals (latency never counts), then each differing question with what changed. A change
that is a new field rather than a new answer (the `searched` a newer version logs in `signals`)
can be left out with `--ignore-signal`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

TIMINGS = ("latency_ms", "timings_ms")


def comparable(row: dict, ignore: set[str]) -> dict:
    kept = {k: v for k, v in row.items() if k not in TIMINGS}
    kept["signals"] = {k: v for k, v in (row.get("signals") or {}).items() if k not in ignore}
    return kept


def differences(before: list[dict], after: list[dict], ignore: set[str]) -> list[tuple[str, dict]]:
    if [r["id"] for r in before] != [r["id"] for r in after]:
        raise SystemExit("the two runs asked different questions")
    out = []
    for b, a in zip(before, after):
        cb, ca = comparable(b, ignore), comparable(a, ignore)
        if cb != ca:
            out.append((b["id"], {k: (cb.get(k), ca.get(k)) for k in sorted(set(cb) | set(ca)) if cb.get(k) != ca.get(k)}))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs=2, help="NAME=PATH with {set} in PATH, before then after")
    parser.add_argument("--sets", nargs="+", required=True)
    parser.add_argument("--ignore-signal", action="append", default=[], help="a signals key not to compare")
    args = parser.parse_args(argv)
    (before_name, before), (after_name, after) = (v.split("=", 1) for v in args.versions)
    for name in args.sets:
        rows = [json.loads(Path(p.format(set=name)).read_text(encoding="utf-8"))["questions"] for p in (before, after)]
        diff = differences(*rows, set(args.ignore_signal))
        print(f"{name}: {len(rows[0])} questions, {len(diff)} differ ({before_name} → {after_name})")
        for qid, changed in diff:
            print(f"  {qid}: " + "; ".join(f"{k}: {json.dumps(v[0], ensure_ascii=False)[:160]} → "
                                           f"{json.dumps(v[1], ensure_ascii=False)[:160]}" for k, v in changed.items()))


if __name__ == "__main__":
    main()
