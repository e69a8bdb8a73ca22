"""Concurrency: N questions in flight at once through the bot's HTTP endpoint (issue 5).

    .venv/bin/python -m benchmarks.slack_concurrency [--questions 20] [--timeout 120]

A fresh index holds the sample wiki; the bot runs as `kb serve` runs it (Bolt app in Starlette
under uvicorn on 127.0.0.1, Bolt's default listener pool), its Web API client pointed at a local
Slack Web API (tests/support/slack_api_server.py). N signed `app_mention` events — the sample wiki's
questions, each in its own channel — are released at the same instant from N threads. Measured:
each acknowledgement (request → HTTP 200), each answer (event sent → `chat.postMessage`
recorded), and that every question got exactly one threaded reply, one 👀, one query-log row,
no apology, and the same answer text as a direct call. By default two bursts run one after the
other: the first meets a server that has answered nothing yet (Bolt's first dispatch, fresh
database and HTTP connections), the second a warm one. The baseline in the same process:
`KnowledgeBase.ask` called directly, one question at a time, for the same questions, before and
after the bursts; the ratios use the lower of the two medians (on a shared machine either round
may be disturbed by other work, and disturbance only adds).

Loopback only; bounded: N × rounds requests, and a timeout for the answers. Exit status 1 if a check fails.
"""

from __future__ import annotations

import argparse
import os
import time

from benchmarks._common import fresh_index, peak_rss_mb, pct, table
from benchmarks._slack import (RecordingSlack, digest, direct_answers, grid, load_questions, ms, new_question, outcome, rss_mb,
                               serving, sync_sample)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=20, help="events released at once (default 20)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="bursts, one after the other (default 2: the server's very first requests, then warm)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds to wait for every answer of a burst")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds to wait for late duplicates once all are answered")
    args = parser.parse_args()

    from bot.slack import blocks
    from bot.knowledge import KnowledgeBase
    from bot.slack.mrkdwn import neutralise

    pool = load_questions()
    questions = [pool[i % len(pool)] for i in range(args.questions)]
    started = time.perf_counter()
    index = fresh_index()
    sync_sample(index)
    index.embedder.embed_query("warm-up")
    kb = KnowledgeBase(index)
    kb.ask("warm-up question about the wiki")
    setup_s = time.perf_counter() - started

    direct, expected = [], {}
    for q in questions:
        t0 = time.perf_counter()
        answer = kb.ask(q)
        direct.append(time.perf_counter() - t0)
        expected[q] = digest(neutralise(blocks.fallback_text(answer)))

    rounds = []
    slack = RecordingSlack().start()
    try:
        with serving(index, slack) as bot:
            for _ in range(args.rounds):
                batch = [new_question(q, "burst") for q in questions]
                t0 = time.monotonic()
                bot.burst(batch)
                all_in = slack.wait_answered([s.key for s in batch], args.timeout)
                wall = time.monotonic() - t0
                time.sleep(args.grace)  # a second reply would arrive about as late as the first
                out = outcome(slack, batch)
                with slack._changed:
                    same = sum(1 for s in batch if slack.replies.get(s.key)
                               and slack.replies[s.key][0].digest == expected[s.question])
                rounds.append((out, all_in, wall, same, _query_log_rows(index, [s.channel for s in batch])))
    finally:
        slack.stop()
    after = direct_answers(index, questions)  # the machine may be busier or quieter by now
    direct_p50 = min(pct(direct, 50), pct(after, 50)) * 1000  # the floor: noise on a shared machine only adds

    def row(name, value):
        return [name, *[value(*r) for r in rounds]]

    def trio(values, unit=1000):
        return f"{ms(values, 50):.0f} / {ms(values, 95):.0f} / {max(values, default=float('nan')) * unit:.0f}"

    grid(f"Slack concurrency: {args.questions} mentions at once over HTTP, extractive "
         f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end)",
         ["measure", *[f"burst {i + 1}" + (" (server's first requests)" if i == 0 else "") for i in range(len(rounds))]],
         [
             row("answered / sent", lambda o, *_: f"{o.answered} / {o.sent}"),
             row("duplicate replies", lambda o, *_: o.duplicates),
             row("errors: apologies + failed/non-200 requests", lambda o, *_: f"{o.errors} ({o.apologies} + {o.request_errors})"),
             row("questions without exactly one 👀", lambda o, *_: o.eyes_not_once),
             row("query_log rows / questions", lambda o, a, w, same, logged: f"{logged} / {o.sent}"),
             row("answer text identical to the direct call", lambda o, a, w, same, logged: f"{same} / {o.sent}"),
             row("ack (request → 200) p50 / p95 / max, ms", lambda o, *_: trio(o.ack)),
             row("answer (event → chat.postMessage) p50 / p95 / max, ms", lambda o, *_: trio(o.answer)),
             row("last answer after, s", lambda o, all_in, wall, *_: f"{wall:.2f}" if all_in else f"> {args.timeout:.0f}"),
             row("end-to-end p50 / direct p50", lambda o, *_: ms(o.answer, 50) / direct_p50),
             row("end-to-end p95 / direct p50", lambda o, *_: ms(o.answer, 95) / direct_p50),
         ])
    table("Baseline in the same process, and the run", [
        ("KnowledgeBase.ask direct, one at a time, p50 before / after the bursts, ms",
         f"{pct(direct, 50) * 1000:.1f} / {pct(after, 50) * 1000:.1f}"),
        ("baseline for the ratios: the lower of the two p50s, ms", direct_p50),
        (f"{args.questions} × direct p50 (the last answer if served one by one), ms", args.questions * direct_p50),
        ("setup (fresh index, sample wiki, model), s", setup_s),
        ("RSS now / peak, MB", f"{rss_mb():.0f} / {peak_rss_mb():.0f}"),
    ])

    failures = []
    for i, (out, _all_in, _wall, same, logged) in enumerate(rounds, 1):
        if out.answered != out.sent:
            failures.append(f"burst {i}: {out.sent - out.answered} unanswered: "
                            + ", ".join(s.question[:40] for s in out.missing[:5]))
        if out.duplicates:
            failures.append(f"burst {i}: {out.duplicates} duplicate replies")
        if out.errors:
            failures.append(f"burst {i}: {out.errors} errors")
        if max(out.ack, default=0) >= 3.0:
            failures.append(f"burst {i}: slowest ack {max(out.ack):.2f} s ≥ 3 s")
        if out.eyes_not_once or logged != out.sent or same != out.sent:
            failures.append(f"burst {i}: 👀 / query log / answer text not one-to-one with the questions")
    print("FAIL: " + "; ".join(failures) if failures else
          "OK: every question answered exactly once, with the direct call's answer; acks < 3 s; no errors")
    raise SystemExit(1 if failures else 0)


def _query_log_rows(index, channels: list[str]) -> int:
    from sqlmodel import func, select

    from bot.records.question_log import QueryLog

    with index.session() as s:
        return s.exec(select(func.count()).select_from(QueryLog).where(QueryLog.channel_id.in_(channels))).one()


if __name__ == "__main__":
    main()
