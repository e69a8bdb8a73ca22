"""The help-channel question detector (`bot.slack.question_detector`) held at its targets on the
labelled messages of tests/data/channel_messages.jsonl: precision ≥ 0.95 and recall ≥ 0.8, on
the half it was tuned on and on the held-out half it never was."""

from __future__ import annotations

import pytest

from training.question_detection import labelled, score
from bot.slack.question_detector import is_question


def test_the_labelled_set_is_large_and_mixed():
    rows = labelled()
    assert len(rows) >= 300 and 0.4 < sum(r["question"] for r in rows) / len(rows) < 0.6
    assert {r["split"] for r in rows} == {"tune", "held_out"}


@pytest.mark.parametrize("split", ["tune", "held_out"])
def test_precision_and_recall_meet_the_targets(split):
    s = score(split)
    assert s.precision >= 0.95 and s.recall >= 0.8, (s.false_positives, s.false_negatives)


@pytest.mark.parametrize("text, expected", [
    ("anyone know how to book a meeting room", True),
    ("hw do I submit a reimbursment", True),
    ("thanks, that worked", False),
    ("can you review my PR when you get a chance", False),
    ("lunch anyone?", False),
])
def test_typical_messages(text, expected):
    assert is_question(text) is expected


@pytest.mark.parametrize("text", [
    "question about q " * 15 + "zzz",  # n = 10 took 0.6 s, ×3.3 per repeat: n = 15 held kb serve for minutes
    "hey, question about q " * 400 + "zzz",
    "so " * 20_000 + "how do I reset my password",
    ":" + "a" * 40_000,
])
def test_adversarial_text_is_judged_in_bounded_time(text):
    """Measured in a child process with a time limit, so that a regression fails instead of
    hanging the run (Python's `re` holds the GIL). The bound is generous: the bug costs minutes."""
    import subprocess
    import sys

    code = ("import sys, time; from bot.slack.question_detector import is_question; text = sys.stdin.read(); "
            "started = time.perf_counter(); is_question(text); print(time.perf_counter() - started)")
    try:
        done = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True,
                              timeout=60, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail("is_question ran for over 60 s")
    assert float(done.stdout) < 1.0


def test_lead_ins_are_still_looked_past():
    assert is_question("hey, quick q - where is the expense policy")
    assert is_question("question about the VPN: how do I connect")
    assert is_question("so also how do I book leave")
    assert not is_question("hey hey hey")
