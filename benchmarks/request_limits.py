"""What hostile requests to `/slack/events` cost a real `kb serve`, and how long a killed embedded
Postgres stays down — for this checkout, or another one (`--code`, e.g. the commit before
`bot.signed_requests`) to compare.

    .venv/bin/python -m benchmarks.request_limits [--code OLD_CHECKOUT] [--send-mb 100] [--chunked-mb 50]

A `kb serve` on a fresh KB_HOME (its own embedded Postgres), the local Slack Web API, loopback.
Each case is sent over a plain socket as an attacker would, up to `--send-mb` of body or until the
server answers; reported: the status (or what the client saw), seconds, and the server's resident
memory after it against before (VmRSS) and its peak (VmHWM). Then the embedded Postgres is killed
(SIGKILL) and the time until `/healthz` answers 200 again is measured (60 s at most).
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from training.corpora import REPO
from benchmarks._common import table
from benchmarks._slack import BOT_TOKEN, SECRET, FakeSlack

FORGED = "v0=" + "ab" * 32  # the form of a signature, signing nothing
MB = 1024 * 1024


def memory_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def post(port: int, headers: dict[str, str], body: Iterator[bytes], timeout: float = 120) -> str:
    """Send the headers and then `body` until the server answers or closes; its status, or what
    the client saw."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": "127.0.0.1", **headers}.items())
        sock.sendall(f"POST /slack/events HTTP/1.1\r\n{head}\r\n".encode())
        try:
            for chunk in body:
                if select.select([sock], [], [], 0)[0]:
                    break
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed while the body was still being sent
        try:
            reply = sock.recv(4096).decode(errors="replace")
        except ConnectionResetError:
            return "connection reset"
        except TimeoutError:
            return f"no answer in {timeout:g} s"
    return reply.split(" ", 2)[1] if reply.startswith("HTTP/") else "closed"


def plain(total: int) -> Iterator[bytes]:
    block = b"{" * (64 * 1024)
    for _ in range(total // len(block)):
        yield block


def chunked(total: int) -> Iterator[bytes]:
    block = b"x" * (64 * 1024)
    for _ in range(total // len(block)):
        yield b"%x\r\n%s\r\n" % (len(block), block)
    yield b"0\r\n\r\n"


def cases(send: int, chunked_total: int) -> list[tuple[str, int, dict[str, str], Callable[[], Iterator[bytes]]]]:
    """(name, how many at once, headers, body factory)."""
    declared = {"Content-Type": "application/json", "Content-Length": str(400 * MB)}

    def forged() -> dict[str, str]:
        return {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": FORGED}

    return [
        ("unsigned, Content-Length 400 MB", 1, declared, lambda: plain(send)),
        ("forged signature, Content-Length 400 MB", 1, {**declared, **forged()}, lambda: plain(send)),
        ("forged signature, Content-Length 400 MB, 4 at once", 4, {**declared, **forged()}, lambda: plain(send)),
        (f"forged signature, chunked {chunked_total // MB} MB", 1,
         {"Content-Type": "application/json", "Transfer-Encoding": "chunked", **forged()}, lambda: chunked(chunked_total)),
    ]


def start(code: Path, home: Path, slack: FakeSlack, log: Path) -> tuple[subprocess.Popen, int]:
    wiki = home / "wiki"
    wiki.mkdir()
    (wiki / "page.md").write_text("# A page\n\nSomething to index.\n")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "KB_SOURCES", "SLACK_APP_TOKEN")}
    env.update(KB_HOME=str(home), SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack.api_url,
               KB_WIKI=str(wiki), KB_METRICS_PORT="0", KB_LOG_LEVEL="WARNING", PYTHONPATH=str(code))
    child = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], cwd=code, env=env,
                             stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while not healthy(port):
        if child.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"kb serve did not start: {log.read_text()[-2000:]}")
        time.sleep(0.3)
    return child, port


def healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def measure(code: Path, send: int, chunked_total: int) -> None:
    slack = FakeSlack().start()
    home = Path(tempfile.mkdtemp(prefix="docent-request-limits-"))
    child, port = start(code, home, slack, home / "serve.log")
    rows: list[tuple[str, object]] = [("kb serve resident at start, MB", memory_mb(child.pid))]
    try:
        for name, many, headers, body in cases(send, chunked_total):
            before, started = memory_mb(child.pid), time.perf_counter()
            with ThreadPoolExecutor(many) as pool:
                sent = [pool.submit(post, port, headers, body()) for _ in range(many)]
                statuses = [s.result() for s in sent]
            rows.append((f"{name}: status", ", ".join(sorted(set(statuses)))))
            rows.append((f"{name}: seconds", time.perf_counter() - started))
            rows.append((f"{name}: resident after − before, MB", memory_mb(child.pid) - before))
        rows.append(("peak resident (VmHWM), MB", memory_mb(child.pid, "VmHWM")))
        rows.append(("tracebacks in the log", (home / "serve.log").read_text().count("Traceback")))

        postmaster = int((home / "pgdata" / "postmaster.pid").read_text().split("\n", 1)[0])
        os.kill(postmaster, signal.SIGKILL)
        killed = time.perf_counter()
        while not healthy(port) and time.perf_counter() - killed < 60:
            time.sleep(0.2)
        back = time.perf_counter() - killed
        rows.append(("embedded Postgres killed: /healthz 200 again after, s", back if healthy(port) else "not in 60 s"))
    finally:
        child.terminate()
        child.wait(timeout=60)
        pid_file = home / "pgdata" / "postmaster.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text().split("\n", 1)[0]), signal.SIGINT)
            except (ProcessLookupError, ValueError):
                pass
        slack.stop()
        shutil.rmtree(home, ignore_errors=True)
    table(f"kb serve at {code}: hostile requests to /slack/events", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose kb serve runs (default: this one)")
    parser.add_argument("--send-mb", type=int, default=100, help="body sent per request at most (MB)")
    parser.add_argument("--chunked-mb", type=int, default=50, help="the chunked body's size (MB)")
    args = parser.parse_args()
    measure(args.code.resolve(), args.send_mb * MB, args.chunked_mb * MB)


if __name__ == "__main__":
    main()
