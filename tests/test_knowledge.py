"""The facade every caller asks through (`bot.knowledge.KnowledgeBase`), on the real index:
answering and status read only, and an audience limits what both show."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event

from bot.knowledge import KnowledgeBase
from sources import CHANNEL, Audience

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
        for question in ("how many weeks of parental leave for the primary caregiver?", "报销流程是什么",
                         "who ruled cyprus in 1191?"):
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


def test_audience_for_names_its_kind_and_keeps_who_asked():
    from sources import DIRECT, SHARED, SHARED_NONE, AccessConfig, ScopeRule, audience_for

    config = AccessConfig(scopes={"hr": ScopeRule(channels=frozenset({"C1"}), usergroups=frozenset({"S1"}))})
    channel = audience_for(config, "C1", "U9", [], is_dm=False, is_shared=False)
    assert (channel.kind, channel.scopes, channel.channel, channel.user) == (CHANNEL, ("hr", "public"), "C1", "U9")
    direct = audience_for(config, "D1", "U1", ["S1"], is_dm=True, is_shared=False)
    assert (direct.kind, direct.scopes, direct.groups) == (DIRECT, ("hr", "public"), frozenset({"S1"}))
    shared = audience_for(config, "C1", "U1", ["S1"], is_dm=False, is_shared=True)
    assert (shared.kind, shared.scopes) == (SHARED, ("public",))
    closed = audience_for(AccessConfig(config.scopes, SHARED_NONE), "C1", "U1", [], is_dm=False, is_shared=True)
    assert closed.sees_nothing and closed.search_scopes == []
    assert Audience.operator().search_scopes is None and Audience.operator().sees_all({"hr", "anything"})
    assert direct.sees_all({"hr"}) and not channel.sees_all({"hr", "eng"})


def test_slack_access_without_a_client_looks_nothing_up():
    """`kb ask --as-channel/--as-user` with no bot token: the same SlackAccess, offline — a
    conversation is shared only when the caller says so, and user groups grant nothing."""
    from bot.slack.audiences import SlackAccess
    from sources import AccessConfig, ScopeRule

    config = AccessConfig(scopes={"hr": ScopeRule(channels=frozenset({"C1"}), users=frozenset({"U1"}),
                                                  usergroups=frozenset({"S1"}))})
    offline = SlackAccess(config, None)
    assert offline.audience("C1", "U2").scopes == ("hr", "public")
    assert offline.audience("C1", "U2", said_shared=True).scopes == ("public",)
    assert offline.audience(None, "U1", is_dm=True).scopes == ("hr", "public")
    assert offline.audience(None, "U2", is_dm=True).scopes == ("public",), "groups cannot be read offline"
