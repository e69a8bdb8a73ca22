"""`/kb` acknowledgements while a burst of votes waits on a rate-limited Slack (issue 23, item 8).

    .venv/bin/python -m benchmarks.feedback_acks [--votes 20] [--retry-after 3] [--commands 20]

Set-up as in `benchmarks.slack_load`: a fresh index with the sample wiki, the bot as `kb serve`
runs it (uvicorn on 127.0.0.1, Bolt's listener pool and the answers pool) against the tests' local
Slack Web API. One answer is posted; then:

- *quiet* (the baseline, same process): `--commands` signed `/kb help` commands, one after another;
- *votes, chat.update rate-limited*: `--votes` people click 👍 at once while `chat.update` answers
  HTTP 429 `Retry-After: --retry-after` (two rounds of it for every answer thread: within the Web
  API client's three retries), and `/kb help` is sent every 0.2 s until every vote is stored.

Reported per phase: acks sent, p50 / p95 / max (request → HTTP response), p95 against the quiet
p95; for the votes, how long until all were stored and the message showed the full tally.
Exit status 1 if an ack took 3 s or more, or a vote was lost.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

from benchmarks._common import fresh_index
from benchmarks._slack import SECRET, TEAM, FakeSlack, grid, ms, new_question, serving, sync_sample

ACK_LIMIT_S = 3.0
ANSWER_THREADS = 4  # bot.slack.workers.ANSWER_THREADS: each takes two 429s


def click(bot, answer_id: str, user: str, channel: str, message: dict, response_url: str) -> int | None:
    """A signed 👍 click on the posted answer, as Slack sends it; returns the HTTP status."""
    from slack_sdk.signature import SignatureVerifier

    from bot.slack import blocks

    payload = {"type": "block_actions", "team": {"id": TEAM, "domain": "acme"},
               "user": {"id": user, "username": user.lower(), "team_id": TEAM}, "api_app_id": "A0DOCENT",
               "token": "legacy", "trigger_id": f"{time.time()}.trigger", "response_url": response_url,
               "container": {"type": "message", "channel_id": channel, "is_ephemeral": False, "message_ts": message["ts"]},
               "channel": {"id": channel, "name": "general"}, "message": message,
               "actions": [{"action_id": blocks.ACTION_VOTE_UP, "block_id": blocks.FEEDBACK_BLOCK, "value": answer_id,
                            "type": "button", "action_ts": str(time.time())}]}
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time()))
    headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": stamp,
               "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)}
    try:
        return bot.http.post(f"{bot.url}/slack/events", content=body, headers=headers).status_code
    except Exception:
        return None


def vote_counts(index, answer_id: str) -> dict[str, int]:
    from bot.records.question_log import vote_counts as counts

    return counts(index, answer_id)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", type=int, default=20)
    parser.add_argument("--retry-after", type=int, default=3)
    parser.add_argument("--commands", type=int, default=20)
    args = parser.parse_args()

    from bot.slack import blocks

    index = fresh_index()
    sync_sample(index)
    slack = FakeSlack().start()  # every call recorded (a short run)
    failed = False
    try:
        with serving(index, slack) as bot:
            sent = bot.mention(new_question("how many weeks of parental leave does the primary caregiver get?", "setup"))
            slack.wait_for(lambda: slack.calls_to("chat.postMessage", channel=sent.channel), timeout=120)
            time.sleep(0.5)
            [(_, ts)] = [key for key in list(slack.messages) if key[0] == sent.channel]
            message = slack.message(sent.channel, ts)
            answer_id = next(e["value"] for b in message["blocks"] for e in b.get("elements", [])
                             if e.get("action_id") == blocks.ACTION_VOTE_UP)

            quiet = [bot.command("help", slack.response_url("quiet"))[1] for _ in range(args.commands)]

            slack.rate_limit("chat.update", times=2 * ANSWER_THREADS, retry_after=args.retry_after)
            users = [f"UBV{i:04d}{uuid.uuid4().hex[:4].upper()}" for i in range(args.votes)]
            stored = threading.Event()
            loaded: list[float] = []
            started = time.monotonic()
            with ThreadPoolExecutor(max_workers=args.votes, thread_name_prefix="votes") as pool:
                statuses = pool.map(lambda u: click(bot, answer_id, u, sent.channel, message,
                                                    slack.response_url(f"vote-{u}")), users)

                def all_stored() -> bool:
                    return vote_counts(index, answer_id)["up"] >= args.votes

                deadline = time.monotonic() + 120
                while not stored.is_set() and time.monotonic() < deadline:
                    loaded.append(bot.command("help", slack.response_url("loaded"))[1])
                    if all_stored():
                        stored.set()
                    time.sleep(0.2)
                statuses = list(statuses)
            landed_s = time.monotonic() - started
            tally = f"👍 {args.votes} · 👎 0"
            shown_by = None
            while time.monotonic() < deadline:
                if tally in json.dumps(slack.message(sent.channel, ts).get("blocks"), ensure_ascii=False):
                    shown_by = time.monotonic() - started
                    break
                time.sleep(0.1)
            limited = len([c for c in slack.calls_to("chat.update", channel=sent.channel) if c.status == 429])
    finally:
        slack.stop()
        index.close()

    base = ms(quiet, 95)
    grid("/kb help acknowledgements (request → HTTP response)", ["phase", "acks", "p50 ms", "p95 ms", "max ms",
                                                                 "p95 / quiet p95"],
         [["quiet (baseline)", len(quiet), f"{ms(quiet, 50):.0f}", f"{base:.0f}", f"{max(quiet) * 1000:.0f}", "1.0"],
          [f"{args.votes} votes, chat.update 429 Retry-After {args.retry_after} s", len(loaded), f"{ms(loaded, 50):.0f}",
           f"{ms(loaded, 95):.0f}", f"{max(loaded) * 1000:.0f}", f"{ms(loaded, 95) / base:.1f}"]])
    print(f"votes: {args.votes} sent ({sum(s == 200 for s in statuses)} acked 200), {limited} chat.update calls "
          f"answered 429; all stored after {landed_s:.1f} s; the message showed {tally!r} after "
          + (f"{shown_by:.1f} s" if shown_by is not None else "— never"))
    if max(quiet + loaded) >= ACK_LIMIT_S or not stored.is_set() or shown_by is None:
        failed = True
        print("FAILED: an ack took 3 s or more, or a vote was not stored or shown", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
