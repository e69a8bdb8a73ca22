"""The hand-written near-topic unanswerable questions (benchmarks/unanswerable/, issue 34) are well
formed, point at pages that exist, repeat no public question, copy no corpus text, and reach the
evaluation harness as their own question set."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest

from training.question_sets import CORPORA, UNANSWERABLE, question_sets
from tests.support.corpora import REPO, SAMPLE_WIKI, shared_corpus

FOLDER = REPO / "benchmarks" / "unanswerable"
FILES = {"sample": "sample.jsonl", "clef": "clef.jsonl", "sg": "sourcegraph.jsonl"}  # harness name -> file
ID_PREFIX = {"sample": "sample-nf-", "clef": "clef-nf-", "sg": "sg-nf-"}
SHARED_NAME = {"clef": "clef-handbook", "sg": "sourcegraph-handbook"}  # folders under KB_SHARED_CORPORA
FIELDS = {"id": str, "question": str, "expected_sources": list, "answer_keywords": list, "kind": str,
          "near_sources": list, "checked": str}
MIN_QUESTIONS = 15  # the floor per handbook
COPIED_WORDS = 8  # this many words in a row from a near page counts as copied text


def _rows(name: str) -> list[dict]:
    lines = (FOLDER / FILES[name]).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower().replace("'", "").replace("’", "")).split())


def _corpus_root(name: str) -> Path:
    return SAMPLE_WIKI if name == "sample" else shared_corpus(SHARED_NAME[name])


@pytest.mark.parametrize("name", FILES)
def test_every_line_is_a_not_found_question_with_its_check(name):
    rows = _rows(name)
    assert len(rows) >= MIN_QUESTIONS
    for row in rows:
        assert set(row) == set(FIELDS), row.get("id")
        assert all(isinstance(row[f], t) for f, t in FIELDS.items()), row["id"]
        assert row["id"].startswith(ID_PREFIX[name])
        assert row["kind"] == "not_found" and row["expected_sources"] == [] and row["answer_keywords"] == []
        assert row["question"].strip() and row["checked"].strip() and row["near_sources"], row["id"]


def test_ids_are_unique_across_the_sets():
    ids = [row["id"] for name in FILES for row in _rows(name)]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", FILES)
def test_near_sources_are_pages_of_the_corpus(name):
    root = _corpus_root(name)
    missing = [(row["id"], p) for row in _rows(name) for p in row["near_sources"] if not (root / p).is_file()]
    assert missing == []


@pytest.mark.parametrize("name", FILES)
def test_no_corpus_text_is_copied_into_a_question_or_its_check(name):
    root = _corpus_root(name)
    copied = []
    for row in _rows(name):
        pages = " ".join(_normal((root / p).read_text(encoding="utf-8")) for p in row["near_sources"])
        for field in ("question", "checked"):
            words = _normal(row[field]).split()
            runs = {" ".join(words[i:i + COPIED_WORDS]) for i in range(len(words) - COPIED_WORDS + 1)}
            copied += [(row["id"], field, run) for run in runs if f" {run} " in f" {pages} "]
    assert copied == []


def _public_questions() -> list[str]:
    """Every public labelled question that is on this machine (the shared ones may be absent)."""
    paths = [path for _folder, path, _domain in CORPORA.values() if path.exists()]
    assert SAMPLE_WIKI / "QUESTIONS.jsonl" in paths
    return [json.loads(line)["question"] for path in paths
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.slow
def test_no_question_repeats_a_public_one_or_another_new_one():
    public = {_normal(q): q for q in _public_questions()}
    new = [row["question"] for name in FILES for row in _rows(name)]
    assert len({_normal(q) for q in new}) == len(new), "a new question is written twice"
    close = [(q, p) for q in new for key, p in public.items()
             if difflib.SequenceMatcher(None, _normal(q), key).ratio() >= 0.85]
    assert close == []


def test_the_harness_asks_them_as_their_own_set():
    assert {name: path.name for name, path in UNANSWERABLE.items()} == FILES
    sets = question_sets("sample")
    assert [q["id"] for q in sets["unanswerable"]] == [row["id"] for row in _rows("sample")]
    assert not {q["id"] for q in sets["unanswerable"]} & {q["id"] for name in ("public", "casual", "foreign")
                                                          for q in sets[name]}
    assert question_sets("zhh")["unanswerable"] == [], "a corpus without written questions gets an empty set"


@pytest.mark.parametrize("name", ["clef", "sg"])
def test_the_harness_asks_the_shared_handbooks_theirs(name):
    shared_corpus(SHARED_NAME[name])
    assert [q["id"] for q in question_sets(name)["unanswerable"]] == [row["id"] for row in _rows(name)]
