"""Issue 45's serving items, each failing closed on a real `kb serve` (this checkout's code,
`python -m bot.cli serve` on 127.0.0.1; Slack is the local Web API, tests/support/slack_api_server.py):

- an unsigned or oversized POST to /slack/events is refused before its body is read, and a body is
  never read past the cap: the server's memory does not grow (item 2);
- malformed requests get 400/401, never 500 and a traceback (item 10);
- a signed `/kb` or Share click sent again (a replay within its five minutes) is handled once (item 16);
- a killed embedded Postgres is started again, and one that cannot be fails `/livez` (item 13).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier

from tests.support.slack_api_server import BOT_TOKEN, TEAM, FakeSlack
from tests.support.slack_harness import SECRET, button, click, posts_in

from bot import messages
from bot.slack import blocks
from bot.serve import EVENTS_PATH, HEALTH_PATH, LIVE_PATH
from bot.signed_requests import MAX_BODY_BYTES

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
FORGED = "v0=" + "ab" * 32  # the form of a signature, signing nothing
CHANNEL = "CFAILCLOSED"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@dataclass
class Served:
    url: str
    process: subprocess.Popen
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def rss_kb(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def kb_environment(kb_home: Path, slack: FakeSlack, folder: Path, name: str) -> dict[str, str]:
    """`kb`'s environment: this KB_HOME, the local Slack, a one-page wiki in `folder` as source `name`."""
    wiki = folder / "wiki"
    wiki.mkdir(parents=True, exist_ok=True)
    (wiki / "leave.md").write_text("# Parental leave\n\nThe primary caregiver gets sixteen weeks of parental leave.\n")
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("DATABASE_URL", "KB_SOURCES", "SLACK_APP_TOKEN", "KB_METRICS_TOKEN")}
    environment.update(KB_HOME=str(kb_home), SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_SIGNING_SECRET=SECRET,
                       SLACK_API_URL=slack.api_url, KB_WIKI=str(wiki), KB_SOURCE_NAME=name,
                       KB_LOG_LEVEL="WARNING", PYTHONPATH=str(REPO))
    return environment


@contextmanager
def kb_serve(kb_home: Path, slack: FakeSlack, folder: Path, name: str) -> Iterator[Served]:
    """A real `kb serve` on a free port, once `/healthz` answers; SIGTERM afterwards."""
    environment = kb_environment(kb_home, slack, folder, name)
    port = free_port()
    log = folder / f"serve-{port}.log"
    with log.open("w") as out:
        child = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--host", HOST, "--port", str(port)],
                                 env=environment, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    served = Served(f"http://{HOST}:{port}", child, log)
    try:
        deadline = time.monotonic() + 300
        while True:
            assert child.poll() is None, f"kb serve exited: {served.log_text()[-3000:]}"
            assert time.monotonic() < deadline, f"kb serve did not start: {served.log_text()[-3000:]}"
            try:
                if httpx.get(served.url + HEALTH_PATH, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield served
    finally:
        child.terminate()
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=10)


def kb_sync(kb_home: Path, slack: FakeSlack, folder: Path, name: str) -> None:
    synced = subprocess.run([sys.executable, "-m", "bot.cli", "sync"], cwd=REPO, capture_output=True, text=True,
                            env=kb_environment(kb_home, slack, folder, name), timeout=300)
    assert synced.returncode == 0, synced.stderr[-2000:]


@pytest.fixture(scope="module")
def served(index, kb_home, slack, tmp_path_factory) -> Iterator[Served]:
    """One `kb serve` on the session's embedded Postgres for the request tests, its one-page wiki synced."""
    folder = tmp_path_factory.mktemp("fail_closed_serve")
    kb_sync(kb_home, slack, folder, "fail_closed_serve")
    with kb_serve(kb_home, slack, folder, "fail_closed_serve") as running:
        yield running


# -- what is sent ---------------------------------------------------------------------------------


def signed(body: bytes, stamp: str | None = None) -> dict[str, str]:
    stamp = stamp or str(int(time.time()))
    return {"X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body) or ""}


def command_form(text: str, response_url: str) -> bytes:
    form = {"token": "legacy", "team_id": TEAM, "team_domain": "acme", "channel_id": CHANNEL,
            "channel_name": "general", "user_id": "U1", "user_name": "u1", "command": "/kb", "text": text,
            "api_app_id": "A0DOCENT", "response_url": response_url, "trigger_id": f"{time.time()}.trigger"}
    return urlencode(form).encode()


def raw_post(url: str, headers: dict[str, str], chunks: Iterator[bytes], timeout: float = 30) -> int:
    """POST over a plain socket, sending `chunks` until the server answers or closes (a client
    would keep sending a 400 MB body); the response's status."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": host, **headers}.items())
        sock.sendall(f"POST {EVENTS_PATH} HTTP/1.1\r\n{head}\r\n".encode())
        for chunk in chunks:
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered before the body was sent
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        reply = sock.recv(65536).decode(errors="replace")
    return int(reply.split(" ", 2)[1])


def chunked(total: int, size: int = 1 << 16) -> Iterator[bytes]:
    """`total` bytes as HTTP/1.1 chunks (and the last chunk)."""
    block = b"x" * size
    for _ in range(total // size):
        yield b"%x\r\n%s\r\n" % (size, block)
    yield b"0\r\n\r\n"


# -- item 2: the body is capped, and read only after the headers are checked ----------------------


def test_a_400_mb_post_is_refused_before_its_body_is_read(served):
    declared = {"Content-Type": "application/json", "Content-Length": str(400 * 1024 * 1024)}
    started = time.monotonic()
    assert raw_post(served.url, declared, iter([b"{" * 65536] * 64)) == 401, "unsigned: refused on its headers"
    assert raw_post(served.url, {**declared, "X-Slack-Request-Timestamp": str(int(time.time())),
                                 "X-Slack-Signature": FORGED}, iter([b"{" * 65536] * 64)) == 413
    assert time.monotonic() - started < 20


def test_a_chunked_body_is_read_no_further_than_the_cap_and_memory_stays_flat(served):
    headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked",
               "X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": FORGED}
    before = served.rss_kb()
    assert raw_post(served.url, headers, chunked(50 * 1024 * 1024)) == 413
    grown = served.rss_kb() - before
    assert grown < 20 * 1024, f"kb serve grew by {grown / 1024:.0f} MB reading a 50 MB body"
    assert 50 * 1024 * 1024 > 20 * MAX_BODY_BYTES  # the cap is what the test measures, far under the body


def test_a_signed_request_under_the_cap_is_still_answered(served, slack):
    body = command_form("help", slack.response_url("fail-closed-help"))
    reply = httpx.post(served.url + EVENTS_PATH, content=body, timeout=30,
                       headers={**FORM, **signed(body)})
    assert reply.status_code == 200 and reply.json()["text"] == messages.HELP


# -- item 10: malformed requests are refused with a 4xx and no traceback --------------------------


def _fresh() -> str:
    return str(int(time.time()))


MALFORMED = {
    "timestamp abc": ({"X-Slack-Request-Timestamp": "abc", "X-Slack-Signature": FORGED,
                       "Content-Type": "application/json"}, b'{"type": "event_callback"}'),
    "timestamp 1e10": ({"X-Slack-Request-Timestamp": "1e10", "X-Slack-Signature": FORGED,
                        "Content-Type": "application/json"}, b'{"type": "event_callback"}'),
    "not JSON": ({"Content-Type": "application/json"}, b"{this is not json"),
    "not UTF-8": ({"Content-Type": "application/json"}, b'{"text": "\xff\xfe\xfa"}'),
    "bad form": ({"Content-Type": "application/x-www-form-urlencoded"}, b"payload=%7Bnot%20json&%%%=="),
    "chunked": ({"Content-Type": "application/json", "Transfer-Encoding": "chunked"}, None),
}


# each kind with a signature of the right form (signing nothing) and, where the body is what is
# wrong, with no signature at all
CASES = [(kind, "forged") for kind in sorted(MALFORMED)] + [
    (kind, "none") for kind in sorted(MALFORMED) if not kind.startswith("timestamp")]


@pytest.mark.parametrize(("kind", "signature"), CASES)
def test_a_malformed_request_gets_a_4xx_and_no_traceback(served, kind, signature):
    headers, body = MALFORMED[kind]
    if signature == "forged":
        headers = {"X-Slack-Request-Timestamp": _fresh(), "X-Slack-Signature": FORGED, **headers}
    seen = len(served.log_text())
    if body is None:
        status = raw_post(served.url, headers, iter([b'5\r\n{"a":\r\n', b"0\r\n\r\n"]))
    else:
        status = raw_post(served.url, {**headers, "Content-Length": str(len(body))}, iter([body]))
    assert status in (400, 401), status
    time.sleep(0.5)  # a traceback would be written as the response goes out
    assert "Traceback" not in served.log_text()[seen:]


# -- item 16: a replayed slash command is answered once ------------------------------------------


def test_a_replayed_slash_command_is_answered_once(served, slack):
    url = slack.response_url("fail-closed-replayed")
    body = command_form("ask how many weeks of parental leave does the primary caregiver get?", url)
    headers = {**FORM, **signed(body)}
    first = httpx.post(served.url + EVENTS_PATH, content=body, headers=headers, timeout=30)
    again = httpx.post(served.url + EVENTS_PATH, content=body, headers=headers, timeout=30)

    assert first.status_code == 200 and first.json()["text"] == messages.LOOKING_IT_UP
    assert again.status_code == 200, "a replay is acknowledged (Slack's rule for a signed request), not answered"
    slack.wait_for(lambda: slack.calls_to("response:fail-closed-replayed"), timeout=120)
    marker = command_form("ask how many weeks of parental leave?", slack.response_url("fail-closed-after"))
    httpx.post(served.url + EVENTS_PATH, content=marker, timeout=30,
               headers={**FORM, **signed(marker)})
    slack.wait_for(lambda: slack.calls_to("response:fail-closed-after"), timeout=120)
    assert len(slack.calls_to("response:fail-closed-replayed")) == 1


def _answered(served: Served, slack: FakeSlack, question: str, name: str):
    """`/kb ask` sent once; its answer through the response URL `name`."""
    body = command_form(f"ask {question}", slack.response_url(name))
    httpx.post(served.url + EVENTS_PATH, content=body, headers={**FORM, **signed(body)}, timeout=30)
    return slack.wait_for(lambda: slack.calls_to(f"response:{name}"), timeout=120)[0]


def test_a_replayed_share_click_posts_the_answer_once(served, slack):
    answer = _answered(served, slack, "how many weeks of parental leave does the primary caregiver get?",
                       "fail-closed-share-ask")
    share = button(answer.params["blocks"], blocks.ACTION_SHARE)
    assert share is not None and "sixteen weeks" in json.dumps(answer.params["blocks"])
    payload = click(blocks.ACTION_SHARE, share["value"], user="U1", channel=CHANNEL,
                    response_url=slack.response_url("fail-closed-share"), ephemeral=True)
    body = urlencode({"payload": json.dumps(payload)}).encode()
    headers = {**FORM, **signed(body)}
    for _ in range(2):  # the click, then the same signed request again
        assert httpx.post(served.url + EVENTS_PATH, content=body, headers=headers, timeout=30).status_code == 200

    slack.wait_for(lambda: slack.calls_to("response:fail-closed-share"))  # the private copy deleted: shared
    _answered(served, slack, "how many weeks of parental leave?", "fail-closed-share-after")
    assert len(posts_in(slack, CHANNEL)) == 1


# -- item 13: the embedded Postgres of a kb serve of its own --------------------------------------


@pytest.fixture
def own_home():
    """A KB_HOME of its own (its embedded Postgres is killed on purpose), outside pytest's tmp dirs
    as the session's is (tests/conftest.py); whatever server is left in it is stopped afterwards."""
    home = Path(tempfile.mkdtemp(prefix="docent-livez-"))
    yield home
    postmaster = _postmaster_pid(home)
    if postmaster:
        try:
            os.kill(postmaster, signal.SIGINT)  # Postgres's fast shutdown
        except ProcessLookupError:
            pass
    shutil.rmtree(home, ignore_errors=True)


def _postmaster_pid(home: Path) -> int | None:
    pid_file = home / "pgdata" / "postmaster.pid"
    return int(pid_file.read_text().split("\n", 1)[0]) if pid_file.exists() else None


def _kill_postgres(home: Path) -> int:
    pid = _postmaster_pid(home)
    assert pid
    os.kill(pid, signal.SIGKILL)
    return pid


def _status(url: str) -> int:
    try:
        return httpx.get(url, timeout=5).status_code
    except httpx.HTTPError:
        return 0


def _wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


def test_a_killed_embedded_postgres_is_started_again_and_questions_are_answered(own_home, slack, tmp_path):
    kb_sync(own_home, slack, tmp_path, "fail_closed_livez")
    with kb_serve(own_home, slack, tmp_path, "fail_closed_livez") as running:
        killed = _kill_postgres(own_home)
        _wait(lambda: (_postmaster_pid(own_home) or killed) != killed, 60, "the embedded Postgres was not started again")
        _wait(lambda: _status(running.url + HEALTH_PATH) == 200, 60, "the index did not become readable again")
        assert _status(running.url + LIVE_PATH) == 200

        body = command_form("ask how many weeks of parental leave?", slack.response_url("fail-closed-revived"))
        httpx.post(running.url + EVENTS_PATH, content=body, timeout=30,
                   headers={**FORM, **signed(body)})
        [answer] = slack.wait_for(lambda: slack.calls_to("response:fail-closed-revived"), timeout=120)
        assert answer.params.get("replace_original") and "sixteen weeks" in json.dumps(answer.params["blocks"])
        assert "started again" in running.log_text() or "runs again" in running.log_text()


def test_an_embedded_postgres_that_cannot_start_again_fails_liveness(own_home, slack, tmp_path):
    with kb_serve(own_home, slack, tmp_path, "fail_closed_dead") as running:
        with (own_home / "pgdata" / "postgresql.conf").open("a") as conf:
            conf.write("\nshared_buffers = 'not a size'\n")  # the next start fails
        _kill_postgres(own_home)
        _wait(lambda: _status(running.url + LIVE_PATH) == 503, 60, "/livez still answers 200")
        reply = httpx.get(running.url + LIVE_PATH, timeout=5)
        assert json.loads(reply.text)["ok"] is False and "embedded database" in reply.json()["error"]
        assert _status(running.url + HEALTH_PATH) == 503
