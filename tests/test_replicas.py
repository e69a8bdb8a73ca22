"""Several Docent processes on one Postgres, as several `kb serve` containers run: three real
replica processes (tests/support/replica_worker.py), each with its own data directory, reaching the
session's embedded Postgres through DATABASE_URL, listening as `kb serve` does.

- a page synced through one is found by its new words from the other two, and they caught up on
  their own (LISTEN/NOTIFY) before anyone asked;
- questions publish nothing: after many questions in each and one sync, exactly one new version;
- two overlapping syncs of different sources leave the newer state published (forward only);
- a process SIGKILLed in the middle of a sync leaves the published version intact and searchable
  from the others, and the next sync publishes everything;
- a Slack access event reaching one replica drops the cached details in the others.
"""

from __future__ import annotations

import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.support.corpora import SAMPLE_WIKI
from tests.support.replica_worker import Replica

from indexing.keyword import keyword_versions

@pytest.fixture(scope="module")
def replicas(index, tmp_path_factory, slack) -> Iterator[list[Replica]]:
    url = index.url.render_as_string(hide_password=False)
    started = [Replica(tmp_path_factory.mktemp(f"replica-{n}"), url, slack.api_url) for n in range(3)]
    yield started
    for replica in started:
        replica.stop()
    # This module's syncs are many; `kb status` (Index.status) looks for each source's last sync
    # among the 50 newest runs only, and later modules assert the sample source's is shown.
    with index.engine.begin() as conn:
        conn.execute(text("DELETE FROM sync_runs WHERE source LIKE 'rep-%'"))


def _published(index) -> list[int]:
    with index.session() as s:
        return keyword_versions.published_versions(s)


def _wiki(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(SAMPLE_WIKI, root, ignore=shutil.ignore_patterns("*.jsonl"))
    return root


def _wait_for(condition, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)
    return value


def test_a_page_synced_through_one_replica_is_found_from_the_others(replicas, tmp_path, index):
    a, b, c = replicas
    wiki = _wiki(tmp_path, "wiki")
    assert a.ask(op="sync", path=str(wiki), source="rep-edit")["added"] > 0
    for replica in (b, c):
        assert "rep-edit:it/vpn.md" in replica.docs("vpn gateway", "rep-edit")

    page = wiki / "it" / "vpn.md"
    page.write_text(page.read_text() + "\n\n## Kestrel relay\n\nThe kestrel relay answers on port 7741.\n")
    assert a.ask(op="sync", path=str(wiki), source="rep-edit")["updated"] == 1
    version = _published(index)[-1]
    for replica in (b, c):  # caught up on the notice, before anyone asked them anything
        _wait_for(lambda replica=replica: replica.ask(op="state")["generation"] == version)
        assert replica.docs("kestrel relay", "rep-edit") == {"rep-edit:it/vpn.md"}


def test_questions_publish_nothing_and_one_sync_publishes_one_version(replicas, tmp_path, index):
    a, b, c = replicas
    wiki = _wiki(tmp_path, "wiki")
    a.ask(op="sync", path=str(wiki), source="rep-count")
    before = _published(index)
    for replica in replicas:
        for question in ("vpn gateway", "parental leave", "expense receipts", "报销", "laptop encryption"):
            replica.docs(question, "rep-count")
    assert _published(index) == before
    (wiki / "it" / "printers.md").write_text("# Printers\n\nThe heron printer is on floor three.\n")
    assert a.ask(op="sync", path=str(wiki), source="rep-count")["added"] == 1
    after = _published(index)
    assert after[:-1] == before and len(after) == len(before) + 1
    for replica in replicas:
        assert replica.docs("heron printer", "rep-count") == {"rep-count:it/printers.md"}
    assert _published(index) == after


def test_two_overlapping_syncs_leave_the_newer_state_published(replicas, tmp_path, index):
    a, b, c = replicas
    folders = []
    for name, word in (("rep-one", "albatross"), ("rep-two", "pelican")):
        root = tmp_path / name
        root.mkdir()
        for n in range(40):
            (root / f"page-{n:02d}.md").write_text(f"# {word.title()} page {n}\n\nThe {word} note number {n}.\n")
        folders.append((name, root, word))
    a.send(op="sync", path=str(folders[0][1]), source=folders[0][0])
    b.send(op="sync", path=str(folders[1][1]), source=folders[1][0])
    assert a.result()["added"] == 40 and b.result()["added"] == 40

    with index.session() as s:
        current, published = keyword_versions.generation(s), keyword_versions.published(s)
        history = list(s.execute(text(
            "SELECT generation FROM keyword_versions ORDER BY published_at, generation")).scalars())
    assert published == current, "the last publication is of everything committed"
    assert history == sorted(history), "no publication went backwards"
    for name, _, word in folders:
        assert len(c.docs(f"{word} note", name)) == 10  # found from the third replica (k = 10)


def test_a_replica_killed_mid_sync_leaves_the_published_version_searchable(replicas, tmp_path, index):
    a, b, c = replicas
    root = tmp_path / "rep-kill"
    root.mkdir()
    (root / "first.md").write_text("# Osprey\n\nThe osprey gate opens at nine.\n")
    a.ask(op="sync", path=str(root), source="rep-kill")
    published = _published(index)[-1]
    for n in range(300):  # a sync writes its first batch of pages after 256 children
        (root / f"page-{n:03d}.md").write_text(f"# Cormorant {n}\n\nThe cormorant shelf {n} holds binders.\n")
    with index.session() as s:
        before = keyword_versions.generation(s)

    def committed() -> bool:
        with index.session() as s:
            return keyword_versions.generation(s) > before

    url = index.url.render_as_string(hide_password=False)
    victim = Replica(tmp_path / "victim", url, "http://127.0.0.1:9/api/")
    try:
        victim.send(op="sync", path=str(root), source="rep-kill")
        try:
            _wait_for(committed, timeout=300)  # some of its pages are in: kill it mid-update
        except AssertionError:
            raise AssertionError(f"the victim committed nothing: {victim.log.read_text()[-3000:]}") from None
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
    finally:
        victim.stop()

    assert _published(index)[-1] == published  # the killed sync published nothing
    with index.session() as s:
        assert keyword_versions.generation(s) > published  # though some of its pages were committed
    for replica in (b, c):
        assert replica.docs("osprey gate", "rep-kill") == {"rep-kill:first.md"}
        assert replica.docs("cormorant shelf", "rep-kill") == set()  # not published: not searched

    report = a.ask(op="sync", path=str(root), source="rep-kill")  # the killer's lock died with it
    assert report["added"] + report["updated"] > 0
    for replica in (b, c):
        assert len(replica.docs("cormorant shelf binders", "rep-kill")) == 10


def test_an_access_event_in_one_replica_drops_the_cached_details_in_the_others(replicas, slack):
    a, b, c = replicas
    channel = "C0REPLICA1"
    assert c.ask(op="conversation", channel=channel) == {"shared": False}
    slack.share_channel(channel, is_ext_shared=True)
    assert c.ask(op="conversation", channel=channel) == {"shared": False}  # cached
    calls = len(slack.calls_to("conversations.info", channel=channel))
    a.ask(op="forget", channel=channel)  # a channel_shared event reached replica a
    assert _wait_for(lambda: c.ask(op="conversation", channel=channel) == {"shared": True}, timeout=10)
    assert len(slack.calls_to("conversations.info", channel=channel)) > calls
