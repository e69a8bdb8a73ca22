"""The facade every caller asks through (`bot.knowledge.KnowledgeBase`), on the real index:
answering and status read only, and an audience limits what both show."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/ is not a package

from bot.knowledge import KnowledgeBase  # noqa: E402
from connectors.access import CHANNEL, Audience  # noqa: E402

READS = ("SELECT", "WITH", "SET", "SHOW", "BEGIN", "COMMIT", "ROLLBACK")


@contextmanager
def statements(index) -> Iterator[list[str]]:
    """Every SQL statement sent on the index's engines (ours and the vector store's) in the block."""
    seen: list[str] = []

    def record(conn, cursor, statement, *_):
        seen.append(" ".join(statement.split()))

    engines = {id(e): e for e in (index.engine, getattr(index.store.vector_store, "_engine", None)) if e is not None}
    for engine in engines.values():
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        for engine in engines.values():
            event.remove(engine, "before_cursor_execute", record)


def test_asking_and_status_write_nothing(index, sample_synced):
    kb = KnowledgeBase(index)
    kb.ask("who ruled cyprus in 1191?")  # the model and the keyword index loaded before counting
    with statements(index) as sent:
        for question in ("how many weeks of parental leave for the primary caregiver?", "报销流程是什么", "who ruled cyprus in 1191?"):
            kb.ask(question)
            kb.ask(question, Audience.limited(["sample"]))
        kb.status()
        kb.status(Audience.limited(["sample"]))
        kb.sources()
    assert sent, "the listener saw the queries"
    assert [s for s in sent if not s.upper().startswith(READS)] == []


def test_an_audience_that_sees_nothing_gets_no_pages_and_no_counts(index, sample_synced):
    kb = KnowledgeBase(index)
    nobody = Audience(kind=CHANNEL, scopes=())
    answer = kb.ask("how many weeks of parental leave for the primary caregiver?", nobody)
    assert not answer.found and answer.sources == []
    status = kb.status(nobody)
    assert (status.chunks, status.documents, status.last_runs, status.failed) == (0, {}, [], [])
    assert kb.status().chunks > 0
