"""Chinese questions on a real Chinese handbook (MindSpore community, 103 pages): the right page in
the top 5. A module of its own: it embeds ~1,800 chunks, the suite's longest test, and pytest-xdist
places a module's tests on one worker (`--dist loadfile`), so beside test_retrieval's it kept one
worker busy for minutes after the other had finished. Its name sorts early: pytest-xdist hands out
modules in collection order, and the longest one is best started first."""

from __future__ import annotations

import pytest

from tests.support.corpora import eval_questions, page_rank, shared_corpus, synced_corpus
from tests.support.databases import own_index


@pytest.fixture(scope="module")
def mszh_index(index, tmp_path_factory):
    """An index of its own: the ranks are measured on the handbook's pages alone (as test_retrieval's
    `corpora`), whatever other modules synced into the session's index."""
    with own_index(index, tmp_path_factory.mktemp("mszh"), "docent_mszh") as own:
        yield own


@pytest.mark.timeout(1800)  # embeds ~1,800 chunks: ~1.5 min on a quiet 2-core machine, far more when busy
def test_mindspore_chinese_questions_top_5(mszh_index):
    corpus = synced_corpus(mszh_index, shared_corpus("mindspore-community-zh"), "mszh")
    answerable = [q for q in eval_questions(corpus / "eval_public.jsonl") if q["kind"] != "not_found"]
    hits = [q for q in answerable if (page_rank(mszh_index, q["question"], "mszh", q["expected_sources"]) or 99) <= 5]
    assert len(hits) >= 0.9 * len(answerable), f"{len(hits)}/{len(answerable)}"


