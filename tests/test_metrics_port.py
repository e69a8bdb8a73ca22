"""`/metrics` off the public events port, on a real `kb serve` subprocess (this checkout's code,
`python -m bot.cli serve`, on the session's embedded Postgres; Slack is the local Web API).

- Prometheus' `GET /metrics` is served on `KB_METRICS_PORT`, bound to the `--host` address only;
- the events port (the one Slack, and so the internet, reaches) has no `/metrics` (404) unless
  `KB_METRICS_TOKEN` is set, and then answers only a scrape sending it as a bearer token (401);
- Socket Mode has no events port: `/metrics` is on the metrics port only, token or not.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.slack_api_server import APP_TOKEN, BOT_TOKEN, FakeSlack
from tests.support.socket_mode_peer import SocketModePeer
from tests.support.slack_harness import SECRET

from bot.serve import HEALTH_PATH, METRICS_PATH

REPO = Path(__file__).resolve().parents[1]
TOKEN = "metrics-" + uuid.uuid4().hex
HOST = "127.0.0.2"  # a loopback address other than 127.0.0.1: where the metrics port must, and must not, answer


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@contextmanager
def kb_serve(kb_home: Path, slack: FakeSlack, tmp_path: Path, **env: str) -> Iterator[tuple[str, str]]:
    """A `kb serve --host HOST` with its metrics on a port of its own; yields (events URL, metrics URL)
    once the health check answers, and stops it (SIGTERM) afterwards."""
    wiki = tmp_path / "wiki"
    wiki.mkdir(exist_ok=True)
    (wiki / "metrics.md").write_text("# Metrics page\n\nA page for the metrics port test.\n")
    port, metrics_port = free_port(HOST), free_port(HOST)
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("DATABASE_URL", "KB_SOURCES", "SLACK_APP_TOKEN", "KB_METRICS_TOKEN")}
    environment.update(KB_HOME=str(kb_home), SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_SIGNING_SECRET=SECRET,
                       SLACK_API_URL=slack.api_url, KB_WIKI=str(wiki), KB_SOURCE_NAME="metrics_port",
                       KB_METRICS_PORT=str(metrics_port), KB_LOG_LEVEL="WARNING", PYTHONPATH=str(REPO), **env)
    log = tmp_path / f"serve-{port}.log"
    with log.open("w") as out:
        child = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--host", HOST, "--port", str(port)],
                                 env=environment, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    url, metrics_url = f"http://{HOST}:{port}", f"http://{HOST}:{metrics_port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert child.poll() is None, f"kb serve exited: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"kb serve did not start: {log.read_text()[-2000:]}"
            try:
                if httpx.get(url + HEALTH_PATH, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield url, metrics_url
    finally:
        child.terminate()
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=10)


def scraped(response: httpx.Response) -> bool:
    """A Prometheus text scrape with Docent's own series and the index's."""
    return (response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
            and "# TYPE docent_questions_total counter" in response.text and "docent_index_readable 1.0" in response.text)


def test_metrics_are_on_their_own_port_bound_to_the_host_and_not_on_the_events_port(index, kb_home, slack, tmp_path):
    with kb_serve(kb_home, slack, tmp_path) as (url, metrics_url):
        assert scraped(httpx.get(metrics_url + METRICS_PATH, timeout=10))
        port = int(metrics_url.rsplit(":", 1)[1])
        with pytest.raises(httpx.ConnectError):  # bound to --host (127.0.0.2), not every address
            httpx.get(f"http://127.0.0.1:{port}{METRICS_PATH}", timeout=5)

        assert httpx.get(url + METRICS_PATH, timeout=10).status_code == 404, "no token set: no /metrics here"
        sent = httpx.get(url + METRICS_PATH, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
        assert sent.status_code == 404 and "docent_" not in sent.text
        assert httpx.get(metrics_url + HEALTH_PATH, timeout=10).status_code == 404, "the metrics port serves metrics only"


def test_with_a_token_the_events_port_serves_metrics_only_to_a_scrape_that_sends_it(index, kb_home, slack, tmp_path):
    with kb_serve(kb_home, slack, tmp_path, KB_METRICS_TOKEN=TOKEN) as (url, metrics_url):
        for headers in ({}, {"Authorization": "Bearer wrong-" + TOKEN}, {"Authorization": f"Bearer {TOKEN[:-1]}"},
                        {"Authorization": f"Basic {TOKEN}"}, {"Authorization": TOKEN}):
            refused = httpx.get(url + METRICS_PATH, headers=headers, timeout=10)
            assert refused.status_code == 401 and "docent_" not in refused.text, headers
            assert refused.headers["www-authenticate"].startswith("Bearer")
        assert scraped(httpx.get(url + METRICS_PATH, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10))
        assert scraped(httpx.get(metrics_url + METRICS_PATH, timeout=10)), "the metrics port needs no token"


def test_socket_mode_serves_metrics_on_the_metrics_port_only(index, kb_home, slack, tmp_path):
    peer = SocketModePeer().start()
    slack.socket_mode_url = lambda: peer.url
    try:
        with kb_serve(kb_home, slack, tmp_path, SLACK_APP_TOKEN=APP_TOKEN, KB_METRICS_TOKEN=TOKEN) as (url, metrics_url):
            assert scraped(httpx.get(metrics_url + METRICS_PATH, timeout=10))
            sent = httpx.get(url + METRICS_PATH, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
            assert sent.status_code == 404, "Socket Mode's port is the health check's alone"
    finally:
        slack.socket_mode_url = None
        peer.stop()


def test_a_metrics_port_in_use_stops_kb_serve_at_start_in_one_line(index, kb_home, slack, tmp_path):
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        busy = taken.getsockname()[1]
        environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "KB_SOURCES", "SLACK_APP_TOKEN")}
        environment.update(KB_HOME=str(kb_home), SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_SIGNING_SECRET=SECRET,
                           SLACK_API_URL=slack.api_url, KB_WIKI=str(tmp_path), KB_METRICS_PORT=str(busy),
                           PYTHONPATH=str(REPO))
        run = subprocess.run([sys.executable, "-m", "bot.cli", "serve", "--host", HOST, "--port", str(free_port(HOST))],
                             env=environment, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert [line for line in run.stderr.splitlines() if line.startswith("error:")] == [
        f"error: cannot listen on {HOST}:{busy} (KB_METRICS_PORT): Address already in use"]
