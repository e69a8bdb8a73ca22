"""Faults, made to happen for real: the database lost while serving, the embedding model failing
during a sync, and `kb serve` killed with SIGKILL while votes are being written.

- The database is lost through a TCP proxy (tests/support/db_proxy.py) in front of the session's embedded
  Postgres, which other tests keep using: the bot under test opens its own `Index` through the
  proxy, and cutting the proxy closes its live connections and refuses new ones.
- The model fails because the third-party model object (LlamaIndex's `HuggingFaceEmbedding`) is
  wrapped in one that raises — Docent's own code runs unchanged.
- The kill is a real SIGKILL of a real `kb serve` subprocess, fed signed button clicks over HTTP.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlmodel import select
from typer.testing import CliRunner

from tests.support.corpora import SAMPLE_WIKI
from tests.support.slack_api_server import BOT_ID, BOT_TOKEN, BOT_USER, TEAM, FakeSlack
from tests.support.slack_harness import (
    PARENTAL, SECRET, Bot, all_text, bot_settings, button, click, mention, message, new_channel, new_ts, posts_in,
    query_rows, running_bot, wait_until)

from bot.records import question_log
from bot.slack import blocks
from bot.answering.answer import Answer
from bot.cli import app as kb_cli
from bot.records.question_log import Feedback
from bot.messages import UNAVAILABLE, UNAVAILABLE_VOTE
from connectors.markdown import MarkdownFolder
from indexing.config import IndexConfig
from indexing.storage.database import is_unreachable
from indexing.vectors.onnx_embedding import OnnxEmbedder
from indexing.index import Index
from indexing.storage.index_tables import DocumentRecord, Status
from indexing.search.retrieval import retrieve
from indexing.index import index_status
from indexing.ingest.sync import sync_documents

KB = str(Path(sys.executable).parent / "kb")


# -- the database lost while serving ---------------------------------------------------------


def _replies(slack: FakeSlack, channel: str) -> list[str]:
    return [all_text(c.params.get("blocks") or []) or c.params.get("text", "") for c in posts_in(slack, channel)]


def test_a_lost_database_gets_temporarily_unavailable_replies_and_the_same_app_recovers(
        slack, sample_synced, proxied_index, db_proxy, kb_home, caplog):
    caplog.set_level(logging.WARNING)
    thread_channel, channel, dm, ask_channel = new_channel(), new_channel(), new_channel("D"), new_channel()
    with running_bot(bot_settings(slack), proxied_index) as bot:
        first = mention(PARENTAL, thread_channel)
        bot.event(first)
        assert "16 weeks" in slack.wait_for(lambda: _replies(slack, thread_channel))[0]
        answer_id = button(posts_in(slack, thread_channel)[0].params["blocks"], blocks.ACTION_VOTE_UP)["value"]

        db_proxy.cut()
        lost = mention(PARENTAL, channel)
        follow_up = message("and what about the secondary caregiver?", thread_channel, thread_ts=first["ts"])
        direct = message("how do I connect to the VPN?", dm, channel_type="im")
        for event in (lost, follow_up, direct):
            assert bot.event(event).status_code == 200
        bot.event(message("lunch anyone?", thread_channel, thread_ts=new_ts()))  # someone else's thread
        ask_url = slack.response_url("lost-ask-" + uuid.uuid4().hex[:8])
        ack = bot.command(f"ask {PARENTAL}", channel=ask_channel, response_url=ask_url)
        assert ack.status_code == 200 and "Looking that up" in ack.text
        vote_url = slack.response_url("lost-vote-" + answer_id)
        bot.interaction(click(blocks.ACTION_VOTE_UP, answer_id, user="U5", channel=thread_channel, response_url=vote_url))
        form = bot.interaction(_reason_form(answer_id, "U5", "The page is out of date."))
        assert form.status_code == 200 and form.text == "", "the form closes at once; storing it comes after"
        told = slack.wait_for(lambda: posts_in(slack, "U5"))[0].params["text"]  # a DM: what was not saved, and what it said
        assert "could not be saved" in told and "temporarily unavailable" in told and "The page is out of date." in told

        slack.wait_for(lambda: _replies(slack, channel) and _replies(slack, dm) and _replies(slack, thread_channel)[1:]
                       and slack.calls_to("response:" + ask_url.rsplit("/", 1)[1])
                       and slack.calls_to("response:lost-vote-" + answer_id))
        bot.wait_idle()
        assert bot.http.get(f"{bot.url}/healthz").status_code == 503
        assert _replies(slack, channel) == [UNAVAILABLE]
        assert posts_in(slack, channel)[0].params["thread_ts"] == lost["ts"]
        assert _replies(slack, dm) == [UNAVAILABLE]
        assert _replies(slack, thread_channel)[1:] == [UNAVAILABLE], "the follow-up in the bot's own thread is answered"
        assert posts_in(slack, thread_channel)[1].params["thread_ts"] == first["ts"]
        assert [c.params["text"] for c in slack.calls_to("response:" + ask_url.rsplit("/", 1)[1])] == [UNAVAILABLE]
        assert [c.params["text"] for c in slack.calls_to("response:lost-vote-" + answer_id)] == [UNAVAILABLE_VOTE]
        assert not slack.calls_to("chat.update", channel=thread_channel), "no tally is shown for a vote not stored"
        problems = [r for r in caplog.records if r.name.startswith("bot.") and (r.levelno >= logging.ERROR or r.exc_info)]
        assert not problems, [r.getMessage() for r in problems]
        assert any("database cannot be reached" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)

        cli = CliRunner().invoke(kb_cli, ["ask", PARENTAL], env={"DATABASE_URL": db_proxy.url, "KB_HOME": str(kb_home)})
        assert cli.exit_code != 0 and cli.output.count("error:") == 1 and "unreachable" in cli.output

        db_proxy.restore()  # same app, same Index, no restart
        again = mention(PARENTAL, channel)
        bot.event(again)
        reply = slack.wait_for(lambda: posts_in(slack, channel)[1:])[0]
        assert "16 weeks" in all_text(reply.params["blocks"]) and reply.params["thread_ts"] == again["ts"]
        assert any(b.get("block_id") == blocks.SOURCES_BLOCK for b in reply.params["blocks"])
        assert button(reply.params["blocks"], blocks.ACTION_VOTE_UP)
        ask_url = slack.response_url("back-ask-" + uuid.uuid4().hex[:8])
        bot.command(f"ask {PARENTAL}", channel=ask_channel, response_url=ask_url)
        answered = slack.wait_for(lambda: slack.calls_to("response:" + ask_url.rsplit("/", 1)[1]))[0]
        assert "16 weeks" in all_text(answered.params["blocks"]) and button(answered.params["blocks"], blocks.ACTION_SHARE)
        assert bot.http.get(f"{bot.url}/healthz").status_code == 200
        posted = {"type": "message", "ts": new_ts(), "text": reply.params["text"], "blocks": reply.params["blocks"]}
        voted = button(reply.params["blocks"], blocks.ACTION_VOTE_UP)["value"]
        bot.interaction(click(blocks.ACTION_VOTE_UP, voted, user="U5", channel=channel, response_url=vote_url, message=posted))
        assert "👍 1" in all_text(slack.wait_for(lambda: slack.calls_to("chat.update", channel=channel))[0].params["blocks"])
        bot.wait_idle()
    assert query_rows(proxied_index, message_ts=again["ts"])[0].found, "the query log is written again"


def _reason_form(answer_id: str, user: str, reason: str) -> dict:
    """The 👎 form submitted, as Slack sends it."""
    view = {**blocks.reason_modal(answer_id), "id": "V0REASON", "state": {"values": {blocks.REASON_BLOCK: {
        blocks.REASON_INPUT: {"type": "plain_text_input", "value": reason}}}}}
    return {"type": "view_submission", "team": {"id": TEAM, "domain": "acme"}, "user": {"id": user, "team_id": TEAM},
            "api_app_id": "A0DOCENT", "token": "legacy", "trigger_id": f"{time.time()}.trigger", "view": view,
            "response_urls": []}


def test_lost_connections_count_as_unreachable_and_statement_errors_do_not(index, db_proxy, proxied_index):
    """The classification the replies rest on, on real errors from a real server."""
    def error_of(action) -> Exception:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - the point is to look at it
            return exc
        raise AssertionError("no error")

    with proxied_index.engine.connect() as conn:
        conn.execute(text("SELECT 1"))
        db_proxy.cut()
        dropped = error_of(lambda: conn.execute(text("SELECT 1")))
    refused = error_of(proxied_index.chunk_count)
    db_proxy.restore()
    assert is_unreachable(dropped) and is_unreachable(refused)

    with index.engine.connect() as conn:
        conn.execute(text("SET statement_timeout = 10"))
        cancelled = error_of(lambda: conn.execute(text("SELECT pg_sleep(1)")))
    engine = create_engine(index.url.set(database="docent_no_such_" + uuid.uuid4().hex[:6]))
    no_such_database = error_of(engine.connect)
    engine.dispose()
    assert not is_unreachable(cancelled), "a cancelled statement is an error, not a lost database"
    assert "does not exist" in str(no_such_database)
    assert not is_unreachable(no_such_database), "a wrong DATABASE_URL is a configuration error, not an outage"
    assert not is_unreachable(ValueError("x"))


# -- the embedding model failing during a sync -----------------------------------------------

DRILL_PAGES = {"leave": "people/leave.md", "vpn": "it/vpn.md", "travel": "finance/travel.md", "holidays": "people/holidays.md"}


class FailingModel:
    """The real, loaded ONNX Runtime session of the default backend, failing when a test says so:
    every run while `down`, or any batch holding a text that contains `poison` (a page the model
    chokes on: its tokens, in a row of the batch)."""

    def __init__(self, session, tokenizer) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.down = False
        self.poison: str | None = None

    def run(self, output_names, input_feed):
        if self.down:
            raise RuntimeError("the embedding model crashed: out of memory")
        if self.poison:
            marker = self.tokenizer.encode(self.poison, add_special_tokens=False).ids
            rows = input_feed["input_ids"].tolist()
            if any(row[i : i + len(marker)] == marker for row in rows for i in range(len(row))):
                raise RuntimeError("the embedding model rejected its input")
        return self.session.run(output_names, input_feed)

    def get_outputs(self):
        return self.session.get_outputs()


@pytest.fixture
def failing_model(index) -> FailingModel:
    return FailingModel(*index.embedder._load())


@pytest.fixture
def failing_index(index, kb_home, failing_model) -> Iterator[Index]:
    """The session's database and BM25 files, with an embedder around the failing model; one
    embedding batch per sync (everything changed is embedded together)."""
    embedder = OnnxEmbedder(index.embedder.cache)
    embedder._loaded = (failing_model, failing_model.tokenizer)  # the third-party session, not Docent's code
    url = index.url.render_as_string(hide_password=False)
    opened = Index(IndexConfig(home=kb_home, database_url=url, sync_batch_children=100_000), embedder=embedder)
    yield opened
    opened.close()


def _write_drill(root: Path, version: str, pages: list[str], extra: str = "") -> None:
    """The drill pages: sample-wiki pages plus a line with a token naming page and version."""
    for name in pages:
        path = root / DRILL_PAGES[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((SAMPLE_WIKI / DRILL_PAGES[name]).read_text()
                        + f"\n\n## Fault drill\n\nThe fault drill token of this page is {name}{version}. {extra}\n")


def _sync(idx: Index, root: Path, name: str):
    return sync_documents(idx, MarkdownFolder(root, source=name, access=name).documents(), name)


def _record(idx: Index, doc_id: str) -> DocumentRecord:
    with idx.session() as s:
        return s.get(DocumentRecord, doc_id)


def _indexed_versions(idx: Index, doc_id: str) -> set[str]:
    """Which drill versions the document's stored chunks hold."""
    table = idx.store.table
    with idx.session() as s:
        texts = s.execute(select(table.text).where(table.metadata_["ref_doc_id"].astext == doc_id)).scalars().all()
    return {v for v in ("vone", "vtwo") for t in texts if v in t}


def _finds(idx: Index, name: str, token: str) -> set[str]:
    """Documents whose text holds `token` among the top hits, by BM25 and by full hybrid retrieval."""
    keyword = {h.metadata["doc_id"] for h in idx.bm25.search(token, [name], 3)}
    hybrid = {h.doc_id for h in retrieve(idx, f"what is the fault drill token {token}?", scopes=[name]).hits
              if token in h.text}
    return keyword | hybrid


def test_model_down_during_a_sync_keeps_previous_versions_searchable_until_it_recovers(
        index, failing_index, failing_model, tmp_path):
    name = "faults_model_down"
    root = tmp_path / name
    _write_drill(root, "vone", list(DRILL_PAGES))
    assert _sync(failing_index, root, name).added == 4
    leave, vpn = f"{name}:people/leave.md", f"{name}:it/vpn.md"
    before = {doc_id: _record(index, doc_id) for doc_id in (leave, vpn)}

    _write_drill(root, "vtwo", ["leave", "vpn"])
    failing_model.down = True
    report = _sync(failing_index, root, name)

    assert (report.failed, report.updated, report.unchanged) == (2, 0, 2)
    for doc_id in (leave, vpn):
        record = _record(index, doc_id)
        assert record.status == Status.FAILED
        assert "embedding failed" in record.error and "out of memory" in record.error
        assert (record.content_hash, record.chunk_count) == (before[doc_id].content_hash, before[doc_id].chunk_count)
        assert _indexed_versions(index, doc_id) == {"vone"}
    assert _finds(index, name, "leavevone") == {leave} and _finds(index, name, "vpnvone") == {vpn}
    assert _finds(index, name, "leavevtwo") == set()
    assert {doc_id for doc_id, _ in index_status(index).failed} >= {leave, vpn}

    failing_model.down = False
    report = _sync(failing_index, root, name)

    assert (report.failed, report.updated, report.unchanged) == (0, 2, 2)
    for doc_id in (leave, vpn):
        assert _record(index, doc_id).status == Status.SUCCESS and _record(index, doc_id).error is None
        assert _indexed_versions(index, doc_id) == {"vtwo"}
    assert _finds(index, name, "leavevtwo") == {leave} and _finds(index, name, "leavevone") == set()


def test_a_page_the_model_rejects_fails_alone_and_its_batch_mates_are_updated(
        index, failing_index, failing_model, tmp_path):
    name = "faults_model_rejects"
    root = tmp_path / name
    _write_drill(root, "vone", list(DRILL_PAGES))
    assert _sync(failing_index, root, name).added == 4
    leave, vpn, travel = (f"{name}:{DRILL_PAGES[p]}" for p in ("leave", "vpn", "travel"))

    _write_drill(root, "vtwo", ["leave"], extra="Zqx-poison-marker.")
    _write_drill(root, "vtwo", ["vpn", "travel"])
    failing_model.poison = "Zqx-poison-marker"
    report = _sync(failing_index, root, name)  # the three changed pages are one embedding batch

    assert (report.failed, report.updated, report.unchanged) == (1, 2, 1)
    record = _record(index, leave)
    assert record.status == Status.FAILED and "rejected its input" in record.error
    assert _indexed_versions(index, leave) == {"vone"} and _finds(index, name, "leavevone") == {leave}
    for doc_id, token in ((vpn, "vpnvtwo"), (travel, "travelvtwo")):
        assert _record(index, doc_id).status == Status.SUCCESS
        assert _indexed_versions(index, doc_id) == {"vtwo"} and _finds(index, name, token) == {doc_id}

    failing_model.poison = None
    report = _sync(failing_index, root, name)

    assert (report.failed, report.updated, report.unchanged) == (0, 1, 3)
    assert _record(index, leave).status == Status.SUCCESS
    assert _indexed_versions(index, leave) == {"vtwo"} and _finds(index, name, "leavevtwo") == {leave}


# -- kill -9 while votes are written -----------------------------------------------------------

VOTERS = [f"UVOTER{i}" for i in range(5)]
ANSWERS = 12  # the first half posted in a channel (confirmed by chat.update), the rest private (response URL)
KILL_AFTER = 40  # confirmed votes before the SIGKILL


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_serve(env: dict, cwd: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """A real `kb serve` on a free loopback port, once its health check answers."""
    port = _free_port()
    with log.open("a") as out:
        child = subprocess.Popen([KB, "serve", "--host", "127.0.0.1", "--port", str(port)], env=env, cwd=cwd,
                                 stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert child.poll() is None, f"kb serve exited: {log.read_text()[-2000:]}"
        assert time.monotonic() < deadline, "kb serve did not start"
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return child, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)


class Click:
    """One vote click, named by its number: a posted answer's message ts, or the response URL."""

    def __init__(self, n: int, answer_id: str, user: str, vote: str, posted: bool) -> None:
        self.n, self.answer_id, self.user, self.vote, self.posted = n, answer_id, user, vote, posted
        self.sent = False

    @property
    def ts(self) -> str:
        return f"{1_800_000_000 + self.n}.000100"

    @property
    def response(self) -> str:
        return f"vote-{self.n}"

    def payload(self, slack: FakeSlack, channel: str, answer: Answer) -> dict:
        action = blocks.ACTION_VOTE_UP if self.vote == question_log.UP else blocks.ACTION_VOTE_DOWN
        shown = blocks.answer_blocks(answer, share=not self.posted)
        posted = {"type": "message", "ts": self.ts, "text": answer.text, "blocks": shown, "bot_id": BOT_ID, "user": BOT_USER}
        return click(action, self.answer_id, user=self.user, channel=channel, response_url=slack.response_url(self.response),
                     message=posted, ephemeral=not self.posted)

    def confirmed(self, slack: FakeSlack) -> bool:
        """Whether the user was shown that this vote counts: the tally on the message, or the thanks."""
        if self.posted:
            return bool(slack.calls_to("chat.update", ts=self.ts))
        return any(any(b.get("block_id") == blocks.VOTES_BLOCK for b in c.params.get("blocks") or [])
                   or "your vote was recorded" in (c.params.get("text") or "")
                   for c in slack.calls_to("response:" + self.response))


def _vote_plan(answers: list[Answer]) -> dict[tuple[str, str], list[Click]]:
    """Per (answer, user): one to four clicks, later ones changing the vote."""
    plan, n = {}, 0
    for i, answer in enumerate(answers):
        for j, user in enumerate(VOTERS):
            first = question_log.UP if (i + j) % 2 == 0 else question_log.DOWN
            other = ({question_log.UP, question_log.DOWN} - {first}).pop()
            votes = [first if k % 2 == 0 else other for k in range(1 + (i + j) % 4)]
            plan[(answer.id, user)] = []
            for vote in votes:
                n += 1
                plan[(answer.id, user)].append(Click(n, answer.id, user, vote, posted=i < ANSWERS // 2))
    return plan


def _logged_answers(index: Index, channel: str) -> list[Answer]:
    """Answers the bot "gave" (rows in its query log), for the votes to be about."""
    answers = []
    for i in range(ANSWERS):
        answer = Answer(question=f"fault drill question {i}", text=f"Fault drill answer {i}.", sources=[],
                        timings_ms={})
        question_log.log_query(index, surface="mention", user_id="UASKER", question=answer.question, answer=answer,
                          channel_id=channel, message_ts=new_ts())
        answers.append(answer)
    return answers


def _clicker(sender: Bot, slack: FakeSlack, channel: str, answers: dict[str, Answer], pairs: list[list[Click]],
             stop: threading.Event) -> None:
    """One user's clicks on one answer go one after another, each after the last was confirmed
    (as a person clicks); different (answer, user) pairs run in other threads at the same time."""
    for clicks in pairs:
        for c in clicks:
            if stop.is_set():
                return
            c.sent = True
            try:
                sender.interaction(c.payload(slack, channel, answers[c.answer_id]))
            except httpx.HTTPError:
                return  # the server is gone
            try:
                slack.wait_for(lambda c=c: c.confirmed(slack) or stop.is_set(), timeout=30)
            except AssertionError:
                return


def _backends(index, application_name: str) -> int:
    """Connections (server processes) of one client program still open on the session's Postgres."""
    with index.engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name"),
                            {"name": application_name}).scalar_one()


def test_kill_9_while_votes_are_written_loses_no_confirmed_vote_and_leaves_no_half_rows(
        index, kb_home, slack, tmp_path):
    channel = new_channel()
    answers = _logged_answers(index, channel)
    plan = _vote_plan(answers)
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "drill.md").write_text("# Drill\n\nA page for the vote drill.\n")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "KB_SOURCES", "SLACK_APP_TOKEN")}
    env.update(KB_HOME=str(kb_home), SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack.api_url,
               KB_WIKI=str(wiki), KB_SOURCE_NAME="faults_serve", KB_LOG_LEVEL="WARNING",
               PGAPPNAME=f"docent-kill9-{uuid.uuid4().hex[:8]}")  # libpq's: the child's connections, by name
    log = tmp_path / "serve.log"
    child, url = _start_serve(env, tmp_path, log)
    stop = threading.Event()
    by_id = {a.id: a for a in answers}
    pairs = list(plan.values())
    try:
        with httpx.Client(timeout=10) as http:
            sender = Bot(url=url, workers=None, http=http)
            workers = [threading.Thread(target=_clicker, args=(sender, slack, channel, by_id, pairs[w::8], stop), daemon=True)
                       for w in range(8)]
            for worker in workers:
                worker.start()
            clicks = [c for cs in pairs for c in cs]
            slack.wait_for(lambda: sum(c.confirmed(slack) for c in clicks) >= KILL_AFTER, timeout=60)
            assert _backends(index, env["PGAPPNAME"]), "the server's connections are seen in pg_stat_activity"
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
            stop.set()
            for worker in workers:
                worker.join(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
    # A COMMIT Postgres already received is applied by its backend, which then sees the client gone and ends.
    wait_until(lambda: not _backends(index, env["PGAPPNAME"]), timeout=30)

    confirmed = {c.n for c in clicks if c.confirmed(slack)}
    assert KILL_AFTER <= len(confirmed) < len(clicks), "the kill landed while votes were still being written"
    assert any(c.sent and c.n not in confirmed for c in clicks), "some votes were in flight when it landed"
    with index.session() as s:
        rows = s.exec(select(Feedback).where(Feedback.answer_id.in_(list(by_id)))).all()
    stored: dict[tuple[str, str], list[Feedback]] = {}
    for row in rows:
        stored.setdefault((row.answer_id, row.user_id), []).append(row)
    assert all(len(found) == 1 for found in stored.values()), "one row per (answer, user)"
    assert all(r.vote in (question_log.UP, question_log.DOWN) and r.reason is None and r.created_at and r.updated_at
               for r in rows)
    assert set(stored) <= {pair for pair, cs in plan.items() if any(c.sent for c in cs)}, "only votes that were sent"
    for pair, cs in plan.items():
        done = [i for i, c in enumerate(cs) if c.n in confirmed]
        if not done:  # never confirmed: no row, or the first click's vote (committed, then killed)
            assert pair not in stored or stored[pair][0].vote == cs[0].vote
            continue
        last = done[-1]
        assert pair in stored, f"a confirmed vote was lost: {pair}"
        # the confirmed vote, or the pair's next click if it was sent and committed but not yet confirmed
        allowed = {cs[last].vote} | {c.vote for c in cs[last + 1:last + 2] if c.sent}
        assert stored[pair][0].vote in allowed, (pair, stored[pair][0].vote, [(c.vote, c.sent, c.n in confirmed) for c in cs])

    # Restarted: the app as `kb serve` builds it, over real HTTP, on the database the kill left
    # (in this process: a second model load in a subprocess would double the test's time).
    with running_bot(bot_settings(slack), index) as restarted:
        again = Click(10**6, answers[0].id, "UAFTER", question_log.DOWN, posted=True)
        assert restarted.interaction(again.payload(slack, channel, answers[0])).status_code == 200
        update = slack.wait_for(lambda: slack.calls_to("chat.update", ts=again.ts))[0]
    with index.session() as s:
        votes = {r.user_id: r.vote for r in s.exec(select(Feedback).where(Feedback.answer_id == answers[0].id))}
    assert votes["UAFTER"] == question_log.DOWN and len(votes) == len([p for p in stored if p[0] == answers[0].id]) + 1
    up = sum(v == question_log.UP for v in votes.values())
    assert f"👍 {up} · 👎 {len(votes) - up}" in all_text(update.params["blocks"])
