"""One Docent replica for tests/test_replicas.py: a real process with its own data directory,
reaching the test's Postgres through DATABASE_URL, listening as `kb serve` does
(`bot.serve.start_listening`), and driven by JSON commands on stdin, one per line:

    {"op": "search", "q": "...", "scopes": [...]}   → {"docs": [doc ids of the keyword hits]}
    {"op": "sync", "path": "...", "source": "..."}  → {"added": n, "updated": n, ...} (a line
                                                       {"progress": doc_id} per document first)
    {"op": "state"}                                 → {"generation": in memory, "published": ...}
    {"op": "conversation", "channel": "C1"}         → {"shared": bool} (SlackAccess, cached)
    {"op": "forget", "channel": "C1"}               → {} (as a channel_shared event does)

Usage: python replica_worker.py HOME SLACK_API_URL; `Replica` starts and drives one from a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

WORKER = Path(__file__).resolve()


class Replica:
    """The test's side of one worker: started with its own home and DATABASE_URL, driven by the
    JSON commands above (tests/test_replicas.py; tests/test_standby.py's writer)."""

    def __init__(self, home: Path, url: str, slack_url: str) -> None:
        env = {**os.environ, "DATABASE_URL": url}
        home.mkdir(parents=True, exist_ok=True)
        self.log = home / "stderr.log"
        with self.log.open("w") as err:
            self.proc = subprocess.Popen([sys.executable, str(WORKER), str(home), slack_url], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        self.progress: list[str] = []
        assert self._read() == {"ready": True}

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"replica exited ({self.proc.poll()}): {self.log.read_text()[-3000:]}")
        return json.loads(line)

    def send(self, **command) -> None:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def result(self) -> dict:
        while True:
            reply = self._read()
            if "progress" not in reply:
                return reply
            self.progress.append(reply["progress"])

    def ask(self, **command) -> dict:
        self.send(**command)
        return self.result()

    def docs(self, question: str, source: str) -> set[str]:
        return set(self.ask(op="search", q=question, scopes=[source])["docs"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()



def main() -> None:
    warnings.filterwarnings("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from slack_sdk import WebClient

    from bot.slack.audiences import SlackAccess
    from bot.serve import start_listening
    from sources import AccessConfig
    from connectors.markdown import MarkdownFolder
    from indexing.keyword import keyword_versions
    from indexing.config import IndexConfig
    from indexing.index import Index
    from indexing.ingest.sync import sync_documents

    home, slack_url = Path(sys.argv[1]), sys.argv[2]
    index = Index(IndexConfig(home=home, database_url=os.environ["DATABASE_URL"]))
    access = SlackAccess(AccessConfig(), WebClient(token="xoxb-test", base_url=slack_url))
    listener = start_listening(index, access)
    listener.connected.wait(10)

    def reply(payload: dict) -> None:
        sys.stdout.write(json.dumps(payload) + "\n")
        sys.stdout.flush()

    reply({"ready": True})
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        if op == "search":
            hits = index.bm25.search(command["q"], command.get("scopes"), 10)
            reply({"docs": [h.metadata["doc_id"] for h in hits]})
        elif op == "sync":
            folder = MarkdownFolder(Path(command["path"]), source=command["source"], access=command["source"])
            report = sync_documents(index, folder.documents(), command["source"],
                                    progress=lambda doc: reply({"progress": doc.doc_id}))
            reply({"added": report.added, "updated": report.updated, "deleted": report.deleted})
        elif op == "state":
            with index.session() as s:
                published = keyword_versions.published(s)
            held = index.bm25._index
            reply({"generation": held.generation if held else None, "published": published})
        elif op == "conversation":
            reply({"shared": access.conversation(command["channel"]).shared})
        elif op == "forget":
            access.forget_conversation(command["channel"])
            reply({})
    listener.stop()


if __name__ == "__main__":
    main()
