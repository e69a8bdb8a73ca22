"""Typo repair (`indexing.search.spelling`): a misspelt word is searched as the wiki word one edit away,
a correct word the wiki does not use is left alone, and only what the asker may see counts."""

from __future__ import annotations

import pytest

from bot.knowledge import KnowledgeBase
from sources import Audience
from connectors.markdown import MarkdownFolder
from indexing.search.retrieval import retrieve
from indexing.search.spelling import one_edit_away, repair_question
from indexing.ingest.sync import sync_documents

VPN = "how do I connect to the VPN?"


def test_one_edit_away_drops_adds_changes_and_swaps_one_letter():
    edits = one_edit_away("amount")
    assert {"amuont", "amont", "amounts", "amoumt"} <= edits and "amount" not in edits
    assert "muonta" not in edits  # two edits


def test_a_swapped_pair_of_letters_is_searched_as_the_wiki_word(index, sample_synced):
    typo = retrieve(index, "how do I cnonect to the VPN?", scopes=["sample"])
    right = retrieve(index, VPN, scopes=["sample"])
    assert typo.repair.corrections == [("cnonect", "connect")]
    assert typo.searched == VPN and typo.question == "how do I cnonect to the VPN?"
    assert [h.parent_id for h in typo.hits] == [h.parent_id for h in right.hits]
    assert typo.outcome == right.outcome and typo.signals == right.signals


@pytest.mark.parametrize("question", [
    "can my babysitter come to the office?",  # a dictionary word no page uses
    "my grandma passed away, how many days off can i take?",
    "my dad is sick, can i take leave",  # short words are never repaired ("dad" / "day")
    "i couldn't connect to the VPN",  # a contraction is one word
])
def test_correct_words_the_wiki_does_not_use_are_left_alone(index, sample_synced, question):
    repair = repair_question(index, question, ["sample"])
    assert repair.text == question and repair.corrections == []


@pytest.mark.parametrize(("scope", "page", "question", "repaired"), [
    ("spell-hr", "The zorblax rota is kept by the HR team.", "who keeps the zorbalx rota?", "who keeps the zorblax rota?"),
    ("spell-fac", "The hot-desking plan is kept by facilities.", "how does hotdesking work?", "how does hot-desking work?"),
])
def test_only_the_askers_scopes_decide_what_a_word_is_repaired_into(index, tmp_path, scope, page, question, repaired):
    """A word (a typo's "zorblax", a compound's "hot-desking") of two restricted pages only: asked
    with their scope, the question is searched with it; asked where they are not visible, the
    word stays as typed."""
    for name in ("one", "two"):
        (tmp_path / f"{name}.md").write_text(f"# Page {name}\n\n{page}\n")
    sync_documents(index, MarkdownFolder(tmp_path, source=scope, access=scope).documents(), scope)
    assert repair_question(index, question, [scope]).text == repaired
    assert repair_question(index, question, ["sample"]).text == question


def test_the_answer_keeps_the_askers_words_and_leads_with_the_repaired_search(index, sample_synced):
    question = "what is the nightly hotel limit in expnesive cities?"
    answer = KnowledgeBase(index, []).ask(question, Audience.limited(["sample"]))
    assert answer.question == question and answer.searched == "what is the nightly hotel limit in expensive cities?"
    assert answer.outcome == "answered" and answer.sources[0].path == "finance/travel.md"
    assert "$300" in answer.lead


def test_the_reply_says_what_was_searched_when_a_typo_was_repaired(index, sample_synced):
    import json

    from bot.slack.blocks import answer_blocks

    kb = KnowledgeBase(index, [])
    repaired = json.dumps(answer_blocks(kb.ask("what is the nightly hotel limit in expnesive cities?",
                                               Audience.limited(["sample"]))), ensure_ascii=False)
    assert "_Searched for “what is the nightly hotel limit in expensive cities?”_" in repaired
    as_typed = json.dumps(answer_blocks(kb.ask("what is the nightly hotel limit in expensive cities?",
                                               Audience.limited(["sample"]))), ensure_ascii=False)
    assert "Searched for" not in as_typed


def test_kb_typo_repair_off_searches_the_words_as_typed(index, sample_synced, monkeypatch):
    from bot.settings import Settings

    monkeypatch.setenv("KB_TYPO_REPAIR", "false")
    monkeypatch.setattr(index, "config", Settings().index_config())
    typo = retrieve(index, "how do I cnonect to the VPN?", scopes=["sample"])
    assert typo.searched == typo.question == "how do I cnonect to the VPN?"


def test_a_latin_word_inside_chinese_text_is_repaired_too(index, sample_synced):
    repair = repair_question(index, "报销需要上传receitps吗？", ["sample"])
    assert repair.text == "报销需要上传receipts吗？" and repair.corrections == [("receitps", "receipts")]


def test_a_word_too_long_to_be_a_typo_is_not_looked_at(index, sample_synced):
    """54·n + 25 candidates per word: a pasted 2,000-letter "word" must not cost 100,000 lookups."""
    question = "what is " + "x" * 2000
    assert repair_question(index, question, ["sample"]).text == question


def test_a_word_the_wiki_writes_hyphenated_is_searched_as_written(index, sample_synced):
    """"twofactor" is no typo of one wiki word: the security page writes "two-factor"."""
    joined = retrieve(index, "what are the twofactor rules?", scopes=["sample"])
    written = retrieve(index, "what are the two-factor rules?", scopes=["sample"])
    assert joined.repair.corrections == [("twofactor", "two-factor")]
    assert joined.searched == "what are the two-factor rules?"
    assert [h.parent_id for h in joined.hits] == [h.parent_id for h in written.hits]
    assert joined.hits[0].path == "it/security.md" and joined.outcome == written.outcome


def test_a_word_the_wiki_also_writes_whole_is_left_as_typed(index, sample_synced):
    """The on-call page says "on-call" and "#oncall": the asker's "oncall" is the wiki's word too."""
    assert repair_question(index, "which channel is oncall?", ["sample"]).corrections == []


def test_a_hyphenated_word_the_wiki_writes_whole_is_searched_whole(index, sample_synced):
    """The security page writes "Email", never "e-mail"; the on-call page writes "check-in"."""
    joined = retrieve(index, "can i e-mail the security team about a phishing link?", scopes=["sample"])
    assert joined.repair.corrections == [("e-mail", "email")]
    assert joined.searched == "can i email the security team about a phishing link?"
    kept = repair_question(index, "who does the check-in?", ["sample"])
    assert kept.corrections == []


def test_a_40000_character_question_costs_bounded_repair(index, sample_synced):
    """Slack allows 40,000 characters. Every random word below is a repair candidate (unknown to
    the dictionary and the wiki); with no cap per question this cost 131.6 s (2,000 characters:
    1.1–1.3 s, holding an answer worker). The bound is a hang guard for a loaded machine, not a
    speed claim: capped, it is ~40 ms (docs/benchmarks.md, "Long questions")."""
    import time

    from tests.support.hostile_inputs import gibberish

    question = gibberish(40_000)
    started = time.perf_counter()
    repair = repair_question(index, question, ["sample"])
    assert time.perf_counter() - started < 10
    assert repair.corrections[0] == ("cnonect", "connect")  # the words looked at are the first ones typed
