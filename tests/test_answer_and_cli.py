"""Answers from the real index (extractive, not found, LLM over HTTP with fallback) and the `kb` CLI."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.corpora import SAMPLE_WIKI
from tests.support.openai_server import FakeOpenAI

from bot.slack import blocks
from bot.answering.answer import EmptyQuestion, answer_question
from bot.messages import NOT_FOUND_REPLY
from bot.answering.llm import LLMClient

REPO = Path(__file__).resolve().parents[1]


def test_extractive_answer_quotes_and_cites(index, sample_synced):
    answer = answer_question(index, "how many weeks of parental leave for the primary caregiver?", scopes=["sample"])
    assert answer.found and not answer.llm_used
    assert answer.outcome == "answered"
    assert "16 weeks" in answer.text and "[1]" in answer.text
    assert "16 weeks" in answer.lead and answer.text.startswith(answer.lead)  # the fact first, then the passages
    first = answer.sources[0]
    assert first.path == "people/leave.md" and "#" in first.url and first.n == 1
    assert len({s.doc_id for s in answer.sources}) == len(answer.sources) <= 5
    assert {"embed", "vector", "bm25", "fuse", "lead", "answer", "total"} <= set(answer.timings_ms)


def test_not_found_answer_says_so_and_lists_nearest_pages(index, sample_synced):
    answer = answer_question(index, "who ruled cyprus in 1191?", scopes=["sample"])
    assert not answer.found and answer.outcome == "not_found" and answer.lead == ""
    assert answer.text.startswith(NOT_FOUND_REPLY) and answer.sources


@pytest.fixture
def gate(index):
    """Set the English gate's thresholds for one test, then put them back."""
    saved = index.config.gate_refuse_below, index.config.gate_answer_from

    def set_thresholds(refuse_below: float, answer_from: float) -> None:
        index.config.gate_refuse_below, index.config.gate_answer_from = refuse_below, answer_from

    yield set_thresholds
    index.config.gate_refuse_below, index.config.gate_answer_from = saved


def test_between_the_thresholds_the_answer_is_uncertain_and_says_so(index, sample_synced, gate):
    question = "how many weeks of parental leave for the primary caregiver?"
    score = answer_question(index, question, scopes=["sample"]).signals["best_cosine"]
    gate(score - 0.01, score + 0.2)  # the question's score falls between the two thresholds
    answer = answer_question(index, question, scopes=["sample"])
    assert answer.outcome == "uncertain" and answer.found
    n = answer.sources[0].n
    assert answer.text.startswith(f"I'm not sure this answers it — check [{n}].\n\n")
    assert "16 weeks" in answer.lead and answer.lead in answer.text
    rendered = blocks.answer_blocks(answer)
    assert rendered[0]["block_id"] == blocks.UNCERTAIN_BLOCK and ":warning:" in json.dumps(rendered[0])
    assert "not sure" not in json.dumps(rendered[1]) and "*Sources*" in json.dumps(rendered)
    gate(score + 0.1, score + 0.2)  # now below both
    refused = answer_question(index, question, scopes=["sample"])
    assert refused.outcome == "not_found" and refused.text.startswith(NOT_FOUND_REPLY)
    gate(score - 0.2, score - 0.1)
    assert answer_question(index, question, scopes=["sample"]).outcome == "answered"


def test_empty_question_is_refused(index):
    with pytest.raises(EmptyQuestion):
        answer_question(index, "  \n\t ")


@pytest.fixture
def openai_server():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def test_llm_answer_keeps_only_backed_citations(index, sample_synced, openai_server):
    openai_server.reply("Annual leave is 25 days a year [1], see also [9].")
    llm = LLMClient(openai_server.base_url, "local", timeout=5)
    answer = answer_question(index, "how many days of annual leave do I get?", scopes=["sample"], llm=llm)
    assert answer.llm_used and answer.note is None
    assert "[1]" in answer.text and "[9]" not in answer.text
    sent = openai_server.requests[-1]["messages"][-1]["content"]
    assert "annual leave" in sent.lower() and '<excerpt n="1"' in sent
    assert sent.index("seem to answer the question") < sent.index("<excerpt")  # the lead goes first
    assert "not sure these excerpts answer" not in sent


def test_an_uncertain_answer_from_the_llm_keeps_the_uncertain_line(index, sample_synced, openai_server, gate):
    question = "how many days of annual leave do I get?"
    score = answer_question(index, question, scopes=["sample"]).signals["best_cosine"]
    gate(score - 0.01, score + 0.2)
    openai_server.reply("The excerpts give annual leave as 25 days [1].")
    answer = answer_question(index, question, scopes=["sample"], llm=LLMClient(openai_server.base_url, "local", timeout=5))
    assert answer.llm_used and answer.outcome == "uncertain"
    assert answer.text.startswith("I'm not sure this answers it — check [") and answer.text.endswith("25 days [1].")
    assert "not sure these excerpts answer" in openai_server.requests[-1]["messages"][-1]["content"]


def test_llm_failure_falls_back_to_extractive_with_a_note(index, sample_synced, openai_server):
    openai_server.fail(500)
    llm = LLMClient(openai_server.base_url, "local", timeout=5)
    answer = answer_question(index, "how many days of annual leave do I get?", scopes=["sample"], llm=llm)
    assert not answer.llm_used and answer.found
    assert "did not answer" in answer.note and "[1]" in answer.text


def test_a_reply_that_is_not_a_completion_falls_back_and_the_log_says_what_it_was(index, sample_synced, openai_server,
                                                                               caplog):
    openai_server.garbage(content_type="text/html")  # e.g. KB_LLM_BASE_URL pointing at a web page
    llm = LLMClient(openai_server.base_url, "local", timeout=5)
    question = "how many days of annual leave do I get?"
    with caplog.at_level(logging.WARNING, logger="bot.answering.answer"):
        answer = answer_question(index, question, scopes=["sample"], llm=llm)
    assert not answer.llm_used and "[1]" in answer.text
    assert answer.note == ("The language model did not answer (the endpoint's reply is not a chat completion); "
                           "showing the most relevant passages instead.")
    logged = [r.getMessage() for r in caplog.records if r.name == "bot.answering.answer"]
    assert logged == ["the language model did not answer (the endpoint's reply is not a chat completion); "
                      "the extractive answer serves"]
    assert question not in logged[0] and openai_server.base_url not in logged[0]


def test_the_models_not_found_overrides_the_gate_and_lists_nearest_pages(index, sample_synced, openai_server):
    """The gate let the question through (a near page), but the model, reading the passages,
    found no answer in them: the asker is told so, with the pages as nearest, not as sources."""
    openai_server.reply('"I could not find this in the knowledge base."')
    llm = LLMClient(openai_server.base_url, "local", timeout=5)
    answer = answer_question(index, "how many days of annual leave do I get?", scopes=["sample"], llm=llm)
    assert answer.llm_used and not answer.found and answer.outcome == "not_found"
    assert answer.text == NOT_FOUND_REPLY + " The nearest pages are listed below."
    assert answer.sources and answer.signals["llm_not_found"] is True
    assert "Nearest pages" in json.dumps(blocks.answer_blocks(answer)) and "*Sources*" not in json.dumps(
        blocks.answer_blocks(answer))

REPO = Path(__file__).resolve().parents[1]


def _kb(*args, env=None, stdin=None, timeout=120):
    """`kb ARGS` as a subprocess, running this checkout's code (the venv's `kb` script runs the code
    of whichever checkout it was installed from)."""
    full_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}  # None: unset
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], input=stdin, capture_output=True, text=True,
                          env=full_env, cwd=REPO, timeout=timeout)


@pytest.mark.slow
def test_help_is_instant_because_heavy_modules_load_lazily():
    code = ("import sys, bot.cli; heavy = [m for m in ('torch', 'sentence_transformers', 'llama_index.core') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert _kb("--help").returncode == 0


@pytest.mark.integration
def test_ask_on_an_empty_index_is_one_clear_line(tmp_path):
    result = _kb("ask", "anything?", env={"KB_HOME": str(tmp_path / "home")})
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == "error: the index is empty: run `kb sync` first"


@pytest.mark.slow
def test_unreachable_database_is_one_clear_line_without_the_password(tmp_path):
    url = "postgresql://docent:s3cret-pw@127.0.0.1:9/docent"
    result = _kb("status", env={"KB_HOME": str(tmp_path), "DATABASE_URL": url})
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: database unreachable at postgresql+psycopg2://docent:***@127.0.0.1:9/docent")
    assert "s3cret-pw" not in result.stderr + result.stdout and "Traceback" not in result.stderr


def test_ask_json_and_piped_questions(kb_home, sample_synced):
    env = {"KB_HOME": str(kb_home)}
    result = _kb("ask", "--json", "what is the nightly hotel limit in expensive cities?", env=env)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) >= {"outcome", "found", "lead", "answer", "sources", "timings_ms"}
    assert data["outcome"] == "answered" and "$300" in data["lead"]
    assert data["found"] and set(data["sources"][0]) >= {"doc_id", "path", "title", "heading_path", "url", "score"}
    assert any(s["path"] == "finance/expenses.md" for s in data["sources"])

    piped = _kb("ask", "--json", env=env, stdin="how long is an on-call shift?\n\nwhat is the vpn port?\n")
    answers = [json.loads(line) for line in piped.stdout.splitlines()]
    assert len(answers) == 2 and all(a["sources"] for a in answers)


def test_status_names_the_keyword_version_every_process_serves(kb_home, sample_synced):
    env = {"KB_HOME": str(kb_home)}
    shown = json.loads(_kb("status", "--json", env=env).stdout)
    keywords = shown["keywords"]
    assert keywords["published"] is not None and keywords["published"] == keywords["committed"]
    text = _kb("status", env=env).stdout
    assert f"keywords:  version {keywords['published']} published" in text
    assert shown["embedding"].startswith("all-MiniLM-L6-v2 (bundled) under ONNX Runtime, from ")
    assert f"embedding: {shown['embedding']}" in text


def test_the_keyword_line_says_what_is_not_yet_published_or_saved():
    from bot.cli.asking import keyword_line
    from indexing.storage.status import KeywordState

    assert keyword_line(KeywordState(None, 0, None, 0)) == "nothing published yet (the next sync publishes it)"
    assert keyword_line(KeywordState(7, 9, 5, 2)) == (
        "version 7 published, 2 newer change(s) not yet; saved base at 5, 2 page(s) changed since")
    assert keyword_line(KeywordState(7, 7, None, 3)).endswith("no saved base yet (a cold start builds it from the chunks)")


@pytest.mark.slow
def test_eval_llm_without_an_endpoint_is_one_clear_line(tmp_path):
    result = _kb("eval", str(SAMPLE_WIKI / "QUESTIONS.jsonl"), "--llm",
                 env={"KB_HOME": str(tmp_path), "KB_LLM_BASE_URL": ""})
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].endswith("--llm needs an LLM endpoint: set KB_LLM_BASE_URL (and KB_LLM_MODEL)")


# -- kb run: a quiet terminal, and everything it opens closed -----------------------------------


@pytest.fixture
def tiny_wiki_database(index, tmp_path):
    """A small wiki (fewer chunks than any retrieval depth) and a database of its own on the test
    server: (environment for `kb`, database name)."""
    import uuid

    from sqlalchemy import text

    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "parking.md").write_text("# Parking\n\nStaff park in the blue garage on Dock Street; the code is on your badge.\n")
    (wiki / "lunch.md").write_text("# Lunch\n\nLunch is served in the canteen from noon to two.\n")
    name = "docent_run_" + uuid.uuid4().hex[:8]
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    env = {"KB_HOME": str(tmp_path / "home"), "KB_WIKI": str(wiki), "KB_SOURCE_NAME": "tiny",
           "DATABASE_URL": index.url.set(database=name).render_as_string(hide_password=False),
           "KB_LOG_LEVEL": None, "SLACK_BOT_TOKEN": None, "KB_SOURCES": None, "KB_LLM_BASE_URL": None}
    yield env, name
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))


def test_kb_run_on_a_small_wiki_prints_no_library_chatter(tiny_wiki_database):
    """`make run` is `kb run`: the sync (bm25s logs "Building index from IDs objects" at DEBUG) and a
    question on a wiki with fewer chunks than the BM25 depth (LlamaIndex warns "requires k less
    than or equal to number of nodes") — at the default log level, neither reaches the terminal."""
    env, _ = tiny_wiki_database
    done = _kb("run", env=env, stdin="where do staff park?\n", timeout=300)
    assert done.returncode == 0, done.stderr
    assert "blue garage" in done.stdout
    noise = [line for line in done.stderr.splitlines()
             if any(word in line for word in ("DEBUG", "INFO", "WARNING", "Building index", "requires k", "Loading weights"))]
    assert noise == [], done.stderr
    summary = " ".join(done.stderr.split())  # the sync's one summary line (rich wraps it), and nothing else
    assert re.fullmatch(r"tiny: 2 added, 0 updated, 0 unchanged, 0 deleted, 0 failed — 2 chunks, \d+ sentences, \d+ embedded, "
                        r"[\d.]+s", summary), done.stderr


def test_kb_run_closes_every_connection_it_opened(tiny_wiki_database, monkeypatch):
    """In-process, so the database can be asked what is still connected once `kb run` returns:
    nothing (the index, the vector store's psycopg2 and asyncpg engines, all disposed)."""
    from sqlalchemy import create_engine, text
    from typer.testing import CliRunner

    from bot.cli import app

    env, name = tiny_wiki_database
    result = CliRunner().invoke(app, ["run"], input="when is lunch?\n", env=env)
    assert result.exit_code == 0, result.output
    assert "canteen" in result.output
    probe = create_engine(env["DATABASE_URL"])
    try:
        with probe.connect() as conn:
            others = conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = :d AND pid <> pg_backend_pid()"),
                                  {"d": name}).scalar_one()
    finally:
        probe.dispose()
    assert others == 0


def test_eval_calibrate_fits_the_two_thresholds_and_writes_them(kb_home, sample_synced, tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("KB_GATE_REFUSE_BELOW=0.9\nOTHER=1\n")
    result = _kb("eval", str(SAMPLE_WIKI / "QUESTIONS.jsonl"), "--scope", "sample", "--calibrate", "--json",
                 "--write-env", str(env_file), env={"KB_HOME": str(kb_home)}, timeout=600)
    assert result.returncode == 0, result.stderr
    gate = json.loads(result.stdout)["calibration"]["gate"]
    assert 0 < gate["en"]["refuse_below"] <= gate["en"]["answer_from"]
    lines = env_file.read_text().splitlines()
    assert "OTHER=1" in lines and f"KB_GATE_REFUSE_BELOW={gate['en']['refuse_below']}" in lines
    assert f"KB_GATE_ANSWER_FROM={gate['en']['answer_from']}" in lines and "KB_GATE_REFUSE_BELOW=0.9" not in lines
    rows = json.loads(result.stdout)["questions"]
    assert all(r["outcome"] in ("answered", "uncertain", "not_found") for r in rows)
