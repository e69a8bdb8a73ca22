"""The gaps report as text: `kb gaps` in a terminal, and the lines the weekly digest and the App
Home share (`summary_lines`, `candidate_outcomes`). The report itself is `bot.records.gaps`."""

from __future__ import annotations

from collections.abc import Callable

from bot.records.gaps import GapsReport, SynonymCandidate, gaps_report
from indexing.index import Index

__all__ = ["as_text", "candidate_outcomes", "change", "print_gaps", "summary_lines"]



def change(now: int, before: int) -> str:
    """"12 (+3)" — a count with its change against the previous period."""
    delta = now - before
    return f"{now} ({'+' if delta >= 0 else ''}{delta})"


def summary_lines(report: GapsReport) -> list[str]:
    """This period against the previous one, a line each, as plain text."""
    c, p = report.current, report.previous
    return [
        f"Questions: {change(c.questions, p.questions)}",
        f"Answered: {change(c.answered, p.answered)} · uncertain: {change(c.uncertain, p.uncertain)} · "
        f"not found: {change(c.not_found, p.not_found)} · failed: {change(c.failed, p.failed)}",
        f"Votes: 👍 {change(c.up, p.up)} · 👎 {change(c.down, p.down)}",
    ]


def as_text(report: GapsReport) -> str:
    """The report for a terminal (`kb gaps`)."""
    lines = [f"Gaps report — last {report.days} days (to {report.generated_at:%Y-%m-%d %H:%M} UTC), "
             f"against the {report.days} before", *summary_lines(report), "", "Top unanswered questions:"]
    lines += [f"  {g.count:>4}× {g.example}" + (f"  (+{g.wordings - 1} similar wordings)" if g.wordings > 1 else "")
              for g in report.unanswered] or ["  none"]
    lines += ["", "Most down-voted answers:"]
    for d in report.down_voted:
        lines.append(f"  👎 {d.down} 👍 {d.up}  {d.question}")
        lines += [f"       – {reason}" for reason in d.reasons[:5]]
    if not report.down_voted:
        lines.append("  none")
    lines += ["", f"Pages cited often, unchanged for {report.stale_days}+ days:"]
    lines += [f"  {p.citations:>4}× {p.title} ({p.age_days} days) {p.url}" for p in report.stale_pages] or ["  none"]
    lines += ["", "Words the wiki never uses, in questions it failed (synonym candidates for [synonyms]):"]
    for c in report.synonym_candidates:
        lines.append(f"  {c.questions:>4}× {c.word}  ({candidate_outcomes(c)})")
        lines += [f"       – {q}" for q in c.examples]
    if not report.synonym_candidates:
        lines.append("  none")
    lines += ["", "Answered by people, missing from the wiki (`kb gaps --drafts DIR` writes draft pages):"]
    for a in report.answered_by_people:
        lines.append(f"  {a.added_at:%Y-%m-%d} {' '.join(a.question.split())}")
        lines.append(f"       – {a.answered_by} in {a.channel}: {_clip(a.answer, 200)}")
        if a.permalink:
            lines.append(f"       {a.permalink}")
    if not report.answered_by_people:
        lines.append("  none")
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def candidate_outcomes(candidate: SynonymCandidate) -> str:
    """"2 not found, 1 uncertain, 1 👎" — what became of the questions holding the word."""
    parts = [(candidate.not_found, "not found"), (candidate.uncertain, "uncertain"), (candidate.down_voted, "👎")]
    return ", ".join(f"{n} {what}" for n, what in parts if n)


def print_gaps(index: Index, days: int, as_json: bool, echo: Callable[[str], object] = print) -> None:
    """`kb gaps`: the report as text or JSON (the CLI's one call into this module)."""
    import json

    report = gaps_report(index, days)
    echo(json.dumps(report.to_json(), ensure_ascii=False, allow_nan=False) if as_json else as_text(report))
