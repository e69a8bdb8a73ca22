"""Question by question: did two `kb eval --json` runs give the same lead, outcome and sources?

    python -m benchmarks.eval_diff BEFORE_DIR AFTER_DIR sample clef sg mszh squad zhh

Each directory holds `{set}.json` files. Prints, per set, how many questions are identical in
lead text, outcome and sources, each difference (both leads), and any overall quality metric
that changed. For changes meant to leave answers alone (the lead's sentence vectors stored at
sync time, docs/benchmarks.md) this is the check; `benchmarks.eval_tables` is for changes meant
to move the numbers.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("sets", nargs="+")
    args = parser.parse_args()
    for name in args.sets:
        before = json.loads((args.before / f"{name}.json").read_text())
        after = json.loads((args.after / f"{name}.json").read_text())
        old = {q["id"]: q for q in before["questions"]}
        new = {q["id"]: q for q in after["questions"]}
        if old.keys() != new.keys():
            raise SystemExit(f"{name}: the two runs asked different questions")
        differ = [i for i in old if any(old[i].get(k) != new[i].get(k) for k in ("lead", "outcome", "sources"))]
        print(f"{name}: {len(old) - len(differ)} of {len(old)} identical (lead, outcome, sources)")
        for i in differ:
            print(f"  {i}: outcome {old[i]['outcome']} -> {new[i]['outcome']}, sources same: {old[i]['sources'] == new[i]['sources']}")
            print(f"    before: {old[i].get('lead', '')[:300]}\n    after:  {new[i].get('lead', '')[:300]}")
        m0, m1 = before["metrics"]["overall"], after["metrics"]["overall"]
        changed = {k: (m0[k], m1.get(k)) for k in m0 if not k.endswith("_ms") and m0[k] != m1.get(k)}
        print(f"  quality metrics changed: {changed or 'none'}")


if __name__ == "__main__":
    main()
