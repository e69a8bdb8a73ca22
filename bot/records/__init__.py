"""What Docent keeps of its questions: the query log and votes, and the gaps report (and its drafts
of missing pages). What is past its retention is deleted by `bot.housekeeping`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexing.faces import load

if TYPE_CHECKING:  # the face: where each public name lives, loaded on first use (indexing.faces)
    from bot.records import question_log
    from bot.records.gap_drafts import write_drafts
    from bot.records.gap_listing import Listing
    from bot.records.gaps import GapsReport, answered_by_people, gaps_report, normalised
    from bot.records.gaps_text import candidate_outcomes, print_gaps, summary_lines
    from bot.records.question_log import AnsweredGap, ChannelKind, Database, QueryLog, feedback_report

__all__ = ["AnsweredGap", "ChannelKind", "Database", "GapsReport", "Listing", "QueryLog", "answered_by_people",
           "candidate_outcomes", "feedback_report", "gaps_report", "normalised", "print_gaps", "question_log",
           "summary_lines", "write_drafts"]


def __getattr__(name: str) -> object:
    return load(__name__, name)
