"""Before/after tables from `kb eval --json` outputs (one file per set and version).

    python -m benchmarks.eval_tables before=/tmp/before-{set}.json after=/tmp/after-{set}.json \\
        --sets sample clef sg mszh squad

Prints, per set: hit@1 / hit@5 / MRR@10, key-fact coverage of the lead and of the reply (share
of answerable questions ranked in the top 3 whose text holds an answer keyword, and mean keyword
share), and outcome shares of answerable and unanswerable questions. Rows from before the lead
existed have no lead (shown as —). Everything is recomputed from the per-question rows with
`bot.quality.evaluation.score`, so both versions are scored by the same arithmetic.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bot.quality.evaluation import score


def _fmt(value, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def row_cells(metrics: dict) -> list[str]:
    m = metrics
    has_lead = m.get("lead_keyword_coverage") is not None
    return [
        f"{_fmt(m.get('hit@1'))} / {_fmt(m.get('hit@5'))} / {_fmt(m.get('mrr@10'), 3)}",
        _fmt(m.get("lead_shows_fact@3")) if has_lead else "—",
        _fmt(m.get("reply_shows_fact@3")),
        f"{_fmt(m.get('lead_keyword_coverage'))} / {_fmt(m.get('keyword_coverage'))}"
        if has_lead else f"— / {_fmt(m.get('keyword_coverage'))}",
        f"{_fmt(m.get('answerable_answered'))} / {_fmt(m.get('answerable_uncertain'))} / {_fmt(m.get('answerable_not_found'))}",
        f"{_fmt(m.get('unanswerable_answered'))} / {_fmt(m.get('unanswerable_uncertain'))} "
        f"/ {_fmt(m.get('unanswerable_not_found'))}"
        if m.get("unanswerable_answered") is not None else "—",
    ]


def load_rows(path: Path) -> list[dict]:
    rows = json.loads(Path(path).read_text())["questions"]
    for r in rows:  # before the lead: no lead_keywords; keep the field absent so coverage shows —
        if "lead_keywords" not in r:
            r.pop("lead_keywords", None)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="+", help="name=path template with {set}")
    parser.add_argument("--sets", nargs="+", required=True)
    parser.add_argument("--kinds", action="store_true", help="also one row per question kind")
    args = parser.parse_args()
    print("| set | version | hit@1 / hit@5 / MRR@10 | lead shows fact (top 3) | reply shows fact (top 3) "
          "| keyword share lead / reply | answerable: answered / uncertain / not found "
          "| unanswerable: answered / uncertain / not found |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.sets:
        for version in args.versions:
            label, template = version.split("=", 1)
            path = Path(template.format(set=name))
            if not path.exists():
                continue
            rows = load_rows(path)
            groups = {"": rows}
            if args.kinds:
                groups.update({f" {k}": [r for r in rows if r["kind"] == k] for k in sorted({r["kind"] for r in rows})})
            for suffix, group in groups.items():
                print(f"| {name}{suffix} (n={len(group)}) | {label} | " + " | ".join(row_cells(score(group))) + " |")


if __name__ == "__main__":
    main()
