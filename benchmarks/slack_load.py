"""Load: signed Slack events at a steady rate and in bursts while a sync runs (issue 6, "Load").

    .venv/bin/python -m benchmarks.slack_load [--rates 2,4,8,16] [--seconds 20] [--burst 30] [--soak 0]

Set-up as in `benchmarks.slack_concurrency`: a fresh index with the sample wiki, the bot as
`kb serve` runs it (uvicorn on 127.0.0.1, Bolt's default listener pool) against a local Slack Web
API. A second source is kept busy the whole time: a temporary copy of the Clef handbook
(`../shared/corpora/clef-handbook`, else of the sample wiki) is synced in a background thread
through `SyncRunner`, over and over, two pages edited before each sync — so every sync re-embeds
changed chunks, swaps documents and rebuilds BM25 while questions are being answered.

For each rate: `rate × seconds` `app_mention` events (the sample wiki's questions, each in its own
channel) sent on schedule without waiting for earlier ones (open loop), then, once those are
answered, `--burst` events at once. A `/kb help` slash command is sent every 2 s of the steady
phase and once 0.3 s into the burst. Checked: every question answered exactly once (one reply,
one 👀), every ack (events and commands) under 3 s, no errors (no apology, no failed or non-200
request). Reported per rate: sent, answered, duplicates, errors, ack p95/max, end-to-end
(event → chat.postMessage) p50/p95 of the steady phase and p95 of the burst, `/kb help` acks,
syncs completed meanwhile, RSS — and the highest rate whose steady end-to-end p95 stays under
1 s with every mention check passing. Baseline in the same process:
`KnowledgeBase.ask` called directly, one at a time, before and after the load; ratios use the lower
of the two medians (other work on a shared machine only adds).

`--soak SECONDS` then runs one steady rate (`--soak-rate`, default the highest sustained rate
found) for that long with the sync still churning, and prints RSS every `--soak-sample` seconds
(30) so memory flatness can be judged (issue 6 asks for 10 minutes: `--soak 600`).

The load generator runs in the bot's own process (as the tests do), so it competes with the bot
for CPU and the GIL: the numbers are conservative. Loopback only; bounded: at most
Σ(rate × seconds + burst) + soak × soak-rate requests, and a timeout for every wait.
Exit status 1 if a check fails at any rate.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks._common import CORPUS_EXCLUDES, fresh_index, peak_rss_mb, pct, table
from training.corpora import REPO, SHARED
from benchmarks._slack import (Outcome, RecordingSlack, direct_answers, grid, load_questions, ms, new_question,
                               outcome, rss_mb, serving, sync_sample)

CHURN = "churn"
TARGET_P95_S = 1.0
ACK_LIMIT_S = 3.0


class Churn(threading.Thread):
    """A real sync, again and again: two pages of a temporary wiki copy edited before each one."""

    def __init__(self, runner, folder: Path, pause: float) -> None:
        super().__init__(name="churn-sync", daemon=True)
        self.runner, self.pause = runner, pause
        self.pages = sorted(folder.rglob("*.md"))
        self.original = {p: p.read_text(encoding="utf-8") for p in self.pages}
        self.stop = threading.Event()
        self.done: list[float] = []  # seconds per completed sync
        self.errors: list[str] = []
        self.embedded = 0
        self._n = 0

    def run(self) -> None:
        while not self.stop.is_set():
            for _ in range(2):
                page = self.pages[self._n % len(self.pages)]
                self._n += 1
                page.write_text(self.original[page] + f"\n\n## Revision {self._n}\n\nReviewed by the "
                                f"operations team, revision {self._n}: nothing else changed.\n", encoding="utf-8")
            started = time.perf_counter()
            try:
                report = self.runner.sync(CHURN, trigger="benchmark")
                self.embedded += report.embedded if report else 0
                self.done.append(time.perf_counter() - started)
            except Exception as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.stop.wait(self.pause)


def churn_source(workdir: Path):
    """A temporary copy of the Clef handbook (or of the sample wiki) as a Markdown source."""
    from sources import SourceConfig

    clef = SHARED / "clef-handbook"
    origin = clef if clef.is_dir() else REPO / "sample-wiki"
    folder = workdir / "churn"
    shutil.copytree(origin, folder, ignore=shutil.ignore_patterns("*.jsonl", "SOURCE.md", "LICENSE*"))
    source = SourceConfig(name=CHURN, location=folder, kind="markdown", exclude=CORPUS_EXCLUDES, access="public")
    return source, origin.name


def plan(questions: list[str], n: int, phase: str) -> list:
    return [new_question(questions[i % len(questions)], phase) for i in range(n)]


def steady(bot, batch: list, rate: float, sender: ThreadPoolExecutor, on_tick=None) -> float:
    """Send `batch` at `rate` per second on schedule, not waiting for earlier acks (open loop);
    returns the rate achieved."""
    futures = []
    t0 = time.monotonic()
    for i, sent in enumerate(batch):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        futures.append(sender.submit(bot.mention, sent))
        if on_tick is not None:
            on_tick(i + 1)
    for f in futures:
        f.result()
    span = max(s.sent_at for s in batch) - min(s.sent_at for s in batch)
    return (len(batch) - 1) / span if len(batch) > 1 and span > 0 else float("nan")


class Probes:
    """`/kb help` sent now and then during a phase: a slash command must be acknowledged (by the
    listener itself: Bolt does not ack commands for it) within 3 s, however busy the bot is."""

    def __init__(self, bot, slack, sender: ThreadPoolExecutor) -> None:
        self.bot, self.url, self.sender = bot, slack.response_url("probe"), sender
        self.futures, self._last = [], float("-inf")

    def every(self, seconds: float) -> None:
        if time.monotonic() - self._last >= seconds:
            self._last = time.monotonic()
            self.futures.append(self.sender.submit(self.bot.command, "help", self.url))

    def later(self, delay: float) -> None:
        def send():
            time.sleep(delay)
            return self.bot.command("help", self.url)

        self.futures.append(self.sender.submit(send))

    def wait(self) -> None:
        for f in self.futures:
            f.result()

    @property
    def results(self) -> list[tuple[int | None, float]]:
        return [f.result() for f in self.futures]

    def problems(self) -> list[str]:
        bad = [(status, took) for status, took in self.results if status != 200 or took >= ACK_LIMIT_S]
        if not bad:
            return []
        worst = max(took for _, took in bad)
        return [f"{len(bad)}/{len(self.results)} `/kb help` acks failed or ≥ {ACK_LIMIT_S:.0f} s "
                f"(statuses {sorted({str(s) for s, _ in bad})}, slowest {worst:.2f} s)"]


def checks(out: Outcome) -> list[str]:
    problems = []
    if out.answered != out.sent:
        problems.append(f"{out.sent - out.answered} unanswered")
    if out.duplicates:
        problems.append(f"{out.duplicates} duplicate replies")
    if out.errors:
        problems.append(f"{out.errors} errors ({out.apologies} apologies, {out.request_errors} failed requests)")
    if max(out.ack, default=0) >= ACK_LIMIT_S:
        problems.append(f"{sum(a >= ACK_LIMIT_S for a in out.ack)} acks ≥ {ACK_LIMIT_S:.0f} s (max {max(out.ack):.2f} s)")
    if out.eyes_not_once:
        problems.append(f"{out.eyes_not_once} questions without exactly one 👀")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rates", default="2,4,8,16", help="questions per second, comma-separated (default 2,4,8,16)")
    parser.add_argument("--seconds", type=float, default=20, help="length of each steady phase (default 20)")
    parser.add_argument("--burst", type=int, default=30, help="events sent at once after each steady phase (default 30)")
    parser.add_argument("--soak", type=float, default=0, help="seconds of steady load to watch memory (default 0: skip)")
    parser.add_argument("--soak-rate", type=float, help="questions per second in the soak (default: best sustained rate)")
    parser.add_argument("--soak-sample", type=float, default=30, help="seconds between RSS samples in the soak")
    parser.add_argument("--sync-pause", type=float, default=0.5, help="seconds between background syncs (default 0.5)")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for the answers of a phase")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds to wait for late duplicates")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",") if r.strip()]

    from bot.knowledge import KnowledgeBase
    from indexing.ingest.runner import SyncRunner

    questions = load_questions()
    say("setting up: fresh index, sample wiki, a copy of the churn wiki (a first full sync: embedding), model")
    workdir = Path(tempfile.mkdtemp(prefix="docent-load-"))
    started = time.perf_counter()
    index = fresh_index(workdir / "home")
    sync_sample(index)
    source, churn_name = churn_source(workdir)
    runner = SyncRunner(index, [source])
    first = runner.sync(CHURN, trigger="benchmark")
    index.embedder.embed_query("warm-up")
    KnowledgeBase(index).ask("warm-up question about the wiki")
    setup_s = time.perf_counter() - started

    direct_answers(index, questions)  # warm: the first queries after a large sync are slower
    before = direct_answers(index, questions)

    churn = Churn(runner, source.location, args.sync_pause)
    slack = RecordingSlack().start()
    results, soak_rows, soak_out, soak_rate, soak_probes = [], [], None, None, None
    rss_start = None
    try:
        with serving(index, slack) as bot, ThreadPoolExecutor(max_workers=128, thread_name_prefix="sender") as sender:
            warm = bot.mention(new_question(questions[0], "warm-up"))  # the server's first request: not measured
            slack.wait_answered([warm.key], 60)
            rss_start = rss_mb()
            churn.start()
            say(f"load: rates {args.rates} q/s, {args.seconds:g} s each, then a burst of {args.burst}")
            for rate in rates:
                syncs_before = len(churn.done)
                batch = plan(questions, max(1, round(rate * args.seconds)), f"steady-{rate:g}")
                probes = Probes(bot, slack, sender)
                achieved = steady(bot, batch, rate, sender, on_tick=lambda n, probes=probes: probes.every(2.0))
                steady_in = slack.wait_answered([s.key for s in batch], args.timeout)
                burst = []
                if args.burst:
                    probes.later(0.3)  # while the burst's answers are queued
                    burst = bot.burst(plan(questions, args.burst, f"burst-{rate:g}"))
                burst_in = slack.wait_answered([s.key for s in burst], args.timeout)
                probes.wait()
                time.sleep(args.grace)
                out_steady, out_burst, out_all = outcome(slack, batch), outcome(slack, burst), outcome(slack, batch + burst)
                results.append(dict(rate=rate, achieved=achieved, steady=out_steady, burst=out_burst, all=out_all,
                                    complete=steady_in and burst_in, syncs=len(churn.done) - syncs_before,
                                    rss=rss_mb(), commands=probes.results, mention_problems=checks(out_all),
                                    problems=checks(out_all) + probes.problems()))
                _progress(results[-1])
            sustained = [r["rate"] for r in results
                         if not r["mention_problems"] and ms(r["steady"].answer, 95) < TARGET_P95_S * 1000]
            if args.soak > 0:
                soak_rate = args.soak_rate or (max(sustained) if sustained else min(rates))
                say(f"soak: {soak_rate:g} q/s for {args.soak:g} s, RSS every {args.soak_sample:g} s")
                soak_out, soak_rows, soak_probes = soak(bot, slack, churn, questions, soak_rate, args, sender)
    finally:
        churn.stop.set()
        slack.stop()
        churn.join(timeout=120)
    after = direct_answers(index, questions)  # quiet again: the machine may be busier or quieter by now
    direct_p50 = min(pct(before, 50), pct(after, 50))  # the floor: noise on a shared machine only adds

    best = max(sustained) if sustained else None
    rows = []
    for r in results:
        s, b, a = r["steady"], r["burst"], r["all"]
        rows.append([
            f"{r['rate']:g}", f"{r['achieved']:.1f}", f"{s.sent}+{b.sent}", a.answered, a.duplicates, a.errors,
            f"{ms(a.ack, 95):.0f} / {max(a.ack, default=float('nan')) * 1000:.0f}",
            f"{ms(s.answer, 50):.0f} / {ms(s.answer, 95):.0f}", f"{ms(b.answer, 95):.0f}", _commands(r["commands"]),
            f"{ms(s.answer, 95) / (direct_p50 * 1000):.1f}", r["syncs"], f"{r['rss']:.0f}",
            "OK" if not r["problems"] else "; ".join(r["problems"]),
        ])
    grid(f"Slack load over HTTP while `{churn_name}` syncs in the background, extractive "
         f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end)",
         ["rate q/s", "achieved", "sent steady+burst", "answered", "dupes", "errors", "ack p95 / max ms",
          "steady e2e p50 / p95 ms", "burst e2e p95 ms", "/kb help acks ok/sent, max ms", "steady p95 / direct p50",
          "syncs", "RSS MB", "checks"], rows)
    verdict = (f"{best:g} q/s" + (" (the highest rate tried: not saturated)" if best == max(rates) else "")
               if best is not None else f"none of the rates tried ({args.rates})")
    summary = [
        (f"highest sustained rate: steady e2e p95 < {TARGET_P95_S:.0f} s, every mention answered once, "
         f"acks < {ACK_LIMIT_S:.0f} s, no errors", verdict),
        ("baseline: KnowledgeBase.ask direct, one at a time, no load: p50 before / after, ms",
         f"{pct(before, 50) * 1000:.1f} / {pct(after, 50) * 1000:.1f}"),
        ("baseline for the ratios: the lower of the two p50s, ms", direct_p50 * 1000),
        (f"background syncs of `{churn_name}`: completed / failed", f"{len(churn.done)} / {len(churn.errors)}"),
        ("background sync p50 / max, s", f"{pct(churn.done, 50):.2f} / {max(churn.done):.2f}" if churn.done else "none"),
        ("texts embedded by background syncs", churn.embedded),
        (f"set-up: fresh index, sample wiki, `{churn_name}` ({first.added} pages), model, s", setup_s),
        ("RSS at start of load / now / peak, MB", f"{rss_start or float('nan'):.0f} / {rss_mb():.0f} / {peak_rss_mb():.0f}"),
    ]
    table("Load summary", summary)
    if churn.errors:
        print("background sync errors:", *sorted(set(churn.errors))[:5], sep="\n  ")
    failures = [f"{r['rate']:g} q/s: " + "; ".join(r["problems"]) for r in results if r["problems"]]
    if soak_out is not None:
        grid(f"Soak: {soak_rate:g} q/s for {args.soak:.0f} s while `{churn_name}` syncs",
             ["elapsed s", "sent", "answered", "syncs", "RSS MB"], soak_rows)
        rss = [row[-1] for row in soak_rows]
        warm_rss = rss[1:] or rss
        table("Soak summary", [
            ("sent / answered / dupes / errors",
             f"{soak_out.sent} / {soak_out.answered} / {soak_out.duplicates} / {soak_out.errors}"),
            ("ack p95 / max, ms", f"{ms(soak_out.ack, 95):.0f} / {max(soak_out.ack, default=float('nan')) * 1000:.0f}"),
            ("e2e p50 / p95, ms", f"{ms(soak_out.answer, 50):.0f} / {ms(soak_out.answer, 95):.0f}"),
            ("/kb help acks: ok / sent, max ms", _commands(soak_probes.results)),
            ("RSS first / last / max sample, MB", f"{rss[0]:.0f} / {rss[-1]:.0f} / {max(rss):.0f}"),
            ("RSS growth after the first sample, MB per minute",
             (warm_rss[-1] - warm_rss[0]) / max((soak_rows[-1][0] - soak_rows[1][0]) / 60, 1e-9) if len(rss) > 2 else "n/a"),
        ])
        failures += [f"soak: {p}" for p in checks(soak_out) + soak_probes.problems()]
    print("FAIL: " + " | ".join(failures) if failures else
          "OK: every question answered exactly once, acks < 3 s, no errors, at every rate")
    raise SystemExit(1 if failures else 0)


def soak(bot, slack, churn, questions, rate, args, sender):
    """Steady load for `args.soak` seconds; RSS sampled every `args.soak_sample` seconds."""
    batch = plan(questions, max(1, round(rate * args.soak)), "soak")
    keys = [s.key for s in batch]
    rows, t0, next_at = [], time.monotonic(), [0.0]
    probes = Probes(bot, slack, sender)

    def sample(sent: int) -> None:
        probes.every(2.0)
        elapsed = time.monotonic() - t0
        if elapsed >= next_at[0]:
            next_at[0] += args.soak_sample
            rows.append([round(elapsed), sent, slack.answered(keys), len(churn.done), round(rss_mb(), 1)])

    steady(bot, batch, rate, sender, on_tick=sample)
    slack.wait_answered(keys, args.timeout)
    time.sleep(args.grace)
    probes.wait()
    rows.append([round(time.monotonic() - t0), len(batch), slack.answered(keys), len(churn.done), round(rss_mb(), 1)])
    return outcome(slack, batch), rows, probes


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _commands(results: list) -> str:
    ok = sum(1 for status, took in results if status == 200 and took < ACK_LIMIT_S)
    slowest = max((took for _, took in results), default=float("nan"))
    return f"{ok} / {len(results)}, {slowest * 1000:.0f}"


def _progress(r: dict) -> None:
    a, s = r["all"], r["steady"]
    say(f"  {r['rate']:g} q/s: {a.answered}/{a.sent} answered, steady e2e p95 {ms(s.answer, 95):.0f} ms, "
          f"ack max {max(a.ack, default=0) * 1000:.0f} ms, {r['syncs']} syncs, RSS {r['rss']:.0f} MB")


if __name__ == "__main__":
    main()
