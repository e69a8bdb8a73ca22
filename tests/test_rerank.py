"""The rerank stage (`indexing.search.rerank`): a tiny CrossEncoder folder trained in the test (loaded by
the real code) and a local rerank service speaking TEI's and Cohere's formats (`rerank_server`).

The handbook here is small and our own: for "how many vacation days do I get?" fusion puts *Public
holidays › Working on a holiday* (it says "vacation") above *Leave policy › Annual leave* (the 25
days); the model is trained to prefer the annual-leave section, so the order, the lead and — with
thresholds fitted for it — the gate change, and every fallback serves exactly the fused order and
today's gate."""

from __future__ import annotations

import json
import logging
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.rerank_models import tiny_cross_encoder
from tests.support.rerank_server import COHERE_PATH, TEI_PATH, FakeRerank
from test_answer_and_cli import _kb

from bot.answering.answer import answer_question
from bot.metrics import REGISTRY
from connectors.markdown import MarkdownFolder
from indexing.ingest import indexed_sources
from indexing.config import IndexConfig, RerankConfig
from indexing.search.rerank import CrossEncoderReranker, RerankStage, make_reranker, open_stage, section_text
from indexing.search.rerank_service import RerankServiceError, ServiceReranker
from indexing.search.retrieval import retrieve
from indexing.ingest.sync import sync_documents

VACATION = "how many vacation days do I get?"
PAGES = {
    "leave.md": "# Leave policy\n\nThis page covers time off for every office.\n\n## Annual leave\n\n"
                "Full-time employees get 25 days of paid annual leave per calendar year. Part-time staff get the "
                "same allowance pro rata.\n\n## Sick leave\n\nYou have 10 days of paid sick leave per year, "
                "separate from annual leave.\n",
    "holidays.md": "# Public holidays\n\nEach office follows its local public holidays.\n\n## Working on a holiday\n\n"
                   "If you work on a public holiday you get a vacation day in lieu: holiday days are not vacation "
                   "days, and how many you get depends on the office calendar.\n",
    "expenses.md": "# Expenses\n\n## Hotels\n\nThe hotel limit is $200 per night, $300 in London and New York.\n",
    "vpn.md": "# VPN\n\n## Connecting\n\nConnect to vpn.acme.example on port 51820 with WireGuard.\n",
}


@pytest.fixture(scope="module")
def handbook(index, tmp_path_factory):
    """Two sources of our own: scope `<tag>-all` holds every page, `<tag>-noleave` all but the leave
    policy (a wiki that cannot answer the vacation question)."""
    tag = f"rr{uuid.uuid4().hex[:6]}"
    made = {}
    for name, pages in ((f"{tag}-all", PAGES), (f"{tag}-noleave", {k: v for k, v in PAGES.items() if k != "leave.md"})):
        folder = tmp_path_factory.mktemp(name)
        for file, text in pages.items():
            (folder / file).write_text(text)
        sync_documents(index, MarkdownFolder(folder, source=name, access=name).documents(), name)
        made[name] = folder
    yield tag
    for name in made:
        indexed_sources.forget(index, name)


@pytest.fixture(scope="module")
def model_folder(index, handbook, tmp_path_factory) -> Path:
    """Trained on the very texts the stage sends for the handbook's sections: the annual-leave
    section liked, the others not."""
    import torch

    hits = retrieve(index, VACATION, scopes=[f"{handbook}-all"], top_k=10).hits
    liked = [section_text(h, RerankConfig().max_chars) for h in hits if h.heading == "Annual leave"]
    disliked = [section_text(h, RerankConfig().max_chars) for h in hits if h.heading != "Annual leave"]
    assert liked and len(disliked) >= 3
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread trains it faster on a busy machine
    try:
        return tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"), [VACATION, "what do I get?"], liked, disliked,
                                  steps=40)
    finally:
        torch.set_num_threads(threads)


@contextmanager
def reranking(index, config: RerankConfig, reranker=None):
    """The session's index with a rerank stage for the duration (as `Index` builds it from its config)."""
    saved = index.rerank
    index.rerank = RerankStage(reranker, config) if reranker is not None else open_stage(config)
    try:
        yield index.rerank
    finally:
        index.rerank.close()
        index.rerank = saved


@contextmanager
def without_stage(index):
    """The session's index with no rerank stage (it runs the shipped reader, as `kb serve` does)."""
    saved, index.rerank = index.rerank, None
    try:
        yield
    finally:
        index.rerank = saved


def counted(backend: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("docent_rerank_calls_total", {"backend": backend, "outcome": outcome}) or 0.0


@pytest.fixture
def service(model_folder):
    server = FakeRerank(CrossEncoderReranker(str(model_folder))).start()
    yield server
    server.stop()


# -- the CrossEncoder folder -------------------------------------------------------------------


def test_a_cross_encoder_folder_reorders_the_sections_and_the_lead_follows(index, handbook, model_folder):
    scopes = [f"{handbook}-all"]
    with without_stage(index):  # the fused order and the gate alone
        fused = answer_question(index, VACATION, scopes=scopes)
        fused_hits = retrieve(index, VACATION, scopes=scopes).hits
    assert fused_hits[0].heading == "Working on a holiday"  # the problem the stage is for
    assert fused.signals["rerank_best"] is None and fused.signals["rerank_outcome"] is None
    before = counted(f"cross-encoder:{model_folder.name}", "ok")
    with reranking(index, RerankConfig(backend=str(model_folder))):
        answer = answer_question(index, VACATION, scopes=scopes)
        retrieval = retrieve(index, VACATION, scopes=scopes)
    assert retrieval.hits[0].heading == "Annual leave"
    every = retrieve(index, VACATION, scopes=scopes, top_k=10).hits  # the stage scores the top 10, however many are shown
    assert retrieval.rerank.outcome == "ok" and retrieval.rerank.pairs == len(every) > len(retrieval.hits) == 5
    assert all(h.rerank is not None for h in retrieval.hits)
    assert [h.rerank for h in retrieval.hits] == sorted((h.rerank for h in retrieval.hits), reverse=True)
    assert answer.sources[0].path == "leave.md" and answer.sources[0].rerank == retrieval.hits[0].rerank
    assert "25 days" in answer.lead and f"[{answer.sources[0].n}]" in answer.lead
    assert answer.signals["rerank_best"] == retrieval.hits[0].rerank > 0.5
    assert answer.signals["rerank_outcome"] == "ok" and "rerank" in answer.timings_ms
    # no thresholds fitted for this backend: the order changed, the gate is today's
    assert answer.outcome == fused.outcome
    assert counted(f"cross-encoder:{model_folder.name}", "ok") == before + 1  # answer_question counts; retrieve alone not


def test_sections_past_top_n_keep_their_fused_order_after_the_reranked_ones(index, handbook, model_folder):
    scopes = [f"{handbook}-all"]
    fused = [h.parent_id for h in retrieve(index, VACATION, scopes=scopes, top_k=10).hits]
    with reranking(index, RerankConfig(backend=str(model_folder), top_n=2)):
        reranked = retrieve(index, VACATION, scopes=scopes, top_k=10).hits
    assert {h.parent_id for h in reranked[:2]} == set(fused[:2])
    assert [h.parent_id for h in reranked[2:]] == fused[2:]
    assert all(h.rerank is None for h in reranked[2:]) and all(h.rerank is not None for h in reranked[:2])


def test_thresholds_fitted_for_the_backend_make_the_best_rerank_score_the_gate(index, handbook, model_folder):
    everything, no_leave = [f"{handbook}-all"], [f"{handbook}-noleave"]
    today = {name: answer_question(index, VACATION, scopes=s).outcome for name, s in (("all", everything),
                                                                                     ("noleave", no_leave))}
    assert today["noleave"] != "not_found"  # today's gate trusts "vacation" in the holidays page
    with reranking(index, RerankConfig(backend=str(model_folder), refuse_below=0.5, answer_from=0.8)):
        gated = {name: answer_question(index, VACATION, scopes=s) for name, s in (("all", everything),
                                                                                  ("noleave", no_leave))}
    assert gated["all"].outcome == "answered" and gated["all"].sources[0].path == "leave.md"
    assert gated["noleave"].outcome == "not_found" and gated["noleave"].signals["rerank_best"] < 0.5


def test_a_local_model_over_its_budget_falls_back_without_holding_the_answer(index, handbook, model_folder, caplog):
    scopes = [f"{handbook}-all"]
    fused = retrieve(index, VACATION, scopes=scopes)
    backend = f"cross-encoder:{model_folder.name}"
    before = counted(backend, "timeout")
    reranker = CrossEncoderReranker(str(model_folder), batch=1)
    reranker.load()
    with reranking(index, RerankConfig(backend=str(model_folder), timeout_ms=0.001), reranker) as stage:
        with caplog.at_level(logging.WARNING, logger="indexing.search.rerank"):
            answer = answer_question(index, VACATION, scopes=scopes)
            late = retrieve(index, VACATION, scopes=scopes)
        assert [s.path for s in answer.sources] == list(dict.fromkeys(h.path for h in fused.hits))
        assert answer.outcome == fused.outcome and answer.signals["rerank_outcome"] == "timeout"
        assert answer.signals["rerank_best"] is None and all(h.rerank is None for h in late.hits)
        assert counted(backend, "timeout") == before + 1  # answer_question counts; retrieve alone does not
        warnings = [r for r in caplog.records if r.name == "indexing.search.rerank"]
        assert len(warnings) == 2 and "budget" in warnings[0].getMessage()
        assert VACATION not in warnings[0].getMessage()
        # the worker stopped at its deadline: with a normal budget the next question is reranked
        stage.config = RerankConfig(backend=str(model_folder), timeout_ms=60_000)
        assert retrieve(index, VACATION, scopes=scopes).rerank.outcome == "ok"


# -- the service -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [TEI_PATH, COHERE_PATH])
def test_a_service_in_either_format_gives_the_local_models_scores(index, handbook, model_folder, service, path):
    scopes = [f"{handbook}-all"]
    with reranking(index, RerankConfig(backend=str(model_folder))):
        local = retrieve(index, VACATION, scopes=scopes)
    with reranking(index, RerankConfig(url=service.url(path), model="tiny-ce", api_key="rk-123", batch=2,
                                       timeout_ms=60_000)) as stage:
        remote = retrieve(index, VACATION, scopes=scopes)
        assert stage.reranker.format == ("tei" if path == TEI_PATH else "cohere")  # learnt from the replies
    assert remote.hits[0].heading == local.hits[0].heading == "Annual leave"
    by_section = {h.parent_id: h.rerank for h in local.hits}
    assert [h.rerank for h in remote.hits] == pytest.approx([by_section[h.parent_id] for h in remote.hits], abs=1e-5)
    assert remote.rerank.outcome == "ok" and remote.rerank.backend == "service:tiny-ce"
    sent = [r for r in service.requests if ("texts" if path == TEI_PATH else "documents") in r["body"]]
    assert all(r["headers"]["Authorization"] == "Bearer rk-123" for r in service.requests)
    assert len(sent) == (remote.rerank.pairs + 1) // 2  # batches of two texts
    if path == COHERE_PATH:
        assert sent[0]["body"]["model"] == "tiny-ce" and sent[0]["body"]["top_n"] == len(sent[0]["body"]["documents"])
    else:  # a model name set: the Cohere body was tried first, refused with 422, then TEI's kept
        assert service.requests[0]["body"].get("documents") and "texts" in service.requests[1]["body"]


def test_rate_limits_and_server_errors_are_retried_honouring_retry_after(service):
    service.script = [(429, {"Retry-After": "1"}), (503, {})]
    reranker = ServiceReranker(service.url(TEI_PATH), wire_format="tei")
    import time

    started = time.monotonic()
    scores = reranker.score(VACATION, ["Annual leave: 25 days.", "VPN port 51820."])
    assert len(scores) == 2 and len(service.requests) == 3
    assert time.monotonic() - started >= 1.0, "waited as long as Retry-After said"
    service.script = [(401, {})]
    with pytest.raises(RerankServiceError, match="answered 401: scripted 401"):
        reranker.score(VACATION, ["x"])
    assert len(service.requests) == 4  # a refusal is not retried


def test_a_retry_that_fits_the_budget_is_made_and_one_that_does_not_is_not(index, handbook, model_folder, service):
    scopes = [f"{handbook}-all"]
    fused = retrieve(index, VACATION, scopes=scopes)
    config = RerankConfig(url=service.url(TEI_PATH), wire_format="tei", timeout_ms=20_000)
    with reranking(index, config):
        service.script = [(500, {})]
        assert retrieve(index, VACATION, scopes=scopes).rerank.outcome == "ok" and len(service.requests) == 2
    with reranking(index, RerankConfig(url=service.url(TEI_PATH), wire_format="tei", timeout_ms=300)):
        service.script = [(429, {"Retry-After": "5"})]
        run = retrieve(index, VACATION, scopes=scopes)
    assert run.rerank.outcome == "timeout" and len(service.requests) == 3  # the 5 s wait was not started
    assert [h.parent_id for h in run.hits] == [h.parent_id for h in fused.hits]


def test_a_slow_or_failing_service_serves_the_fused_order_and_todays_gate(index, handbook, model_folder, service,
                                                                         caplog):
    scopes = [f"{handbook}-noleave"]
    fused = answer_question(index, VACATION, scopes=scopes)
    thresholds = {"refuse_below": 0.5, "answer_from": 0.8}  # would refuse this question, if the service answered
    for setup, outcome in (({"delay": 2.0}, "timeout"), ({"script": [(401, {})]}, "error"),
                           ({"script": [(500, {})] * 5}, "error")):
        for key, value in setup.items():
            setattr(service, key, value)
        backend = "service:tiny-ce"
        before = counted(backend, outcome)
        with reranking(index, RerankConfig(url=service.url(TEI_PATH), model="tiny-ce", wire_format="tei",
                                           timeout_ms=400 if outcome == "timeout" else 20_000, **thresholds)):
            with caplog.at_level(logging.WARNING, logger="indexing.search.rerank"):
                caplog.clear()
                answer = answer_question(index, VACATION, scopes=scopes)
        service.delay, service.script = 0.0, []
        assert answer.outcome == fused.outcome != "not_found", setup
        assert [s.path for s in answer.sources] == [s.path for s in fused.sources]
        assert answer.lead == fused.lead and answer.signals["rerank_outcome"] == outcome
        assert counted(backend, outcome) == before + 1
        [warning] = [r for r in caplog.records if r.name == "indexing.search.rerank"]
        assert warning.levelno == logging.WARNING and VACATION not in warning.getMessage()


# -- settings and calibration ------------------------------------------------------------------


def test_settings_choose_the_backend_once_and_refuse_what_cannot_work(tmp_path, model_folder, monkeypatch):
    from bot.settings import Settings

    monkeypatch.setenv("KB_RERANK", str(model_folder))
    monkeypatch.setenv("KB_RERANK_TOP_N", "7")
    monkeypatch.setenv("KB_RERANK_TIMEOUT_MS", "150")
    monkeypatch.setenv("KB_RERANK_MAX_CHARS", "600")
    config = Settings(kb_home=tmp_path).index_config().rerank
    assert (config.backend, config.top_n, config.timeout_ms, config.max_chars, config.thresholds) == \
        (str(model_folder), 7, 150, 600, None)
    assert isinstance(make_reranker(config), CrossEncoderReranker)
    monkeypatch.setenv("KB_RERANK_URL", "http://127.0.0.1:9/rerank")
    monkeypatch.setenv("KB_RERANK_API_KEY", "rk-1")
    reranker = make_reranker(Settings(kb_home=tmp_path).index_config().rerank)
    assert isinstance(reranker, ServiceReranker) and reranker.api_key == "rk-1"
    from indexing.search.reader import BuiltinReader

    assert isinstance(make_reranker(RerankConfig()), BuiltinReader)  # what `kb serve` ships, defined once
    assert make_reranker(RerankConfig(backend="off")) is None and open_stage(RerankConfig(backend="off")) is None
    with pytest.raises(ValueError, match="is neither off.* nor a sentence-transformers CrossEncoder folder"):
        make_reranker(RerankConfig(backend=str(tmp_path / "no-such-model")))
    with pytest.raises(ValueError, match="go together"):
        IndexConfig(home=tmp_path, rerank=RerankConfig(refuse_below=0.3))


def test_eval_calibrate_fits_and_writes_the_rerank_thresholds(index, kb_home, handbook, model_folder, tmp_path):
    questions = tmp_path / "questions.jsonl"
    rows = [("q1", VACATION, ["leave.md"], "fact"), ("q2", "how many days of annual leave do I get?", ["leave.md"], "fact"),
            ("q3", "what is the hotel limit per night?", ["expenses.md"], "fact"),
            ("q4", "which port does the vpn use?", ["vpn.md"], "fact"),
            ("q5", "can I bring my dog to the office?", [], "not_found"),
            ("q6", "is there a gym discount?", [], "not_found")]
    questions.write_text("".join(json.dumps({"id": i, "question": q, "expected_sources": e, "answer_keywords": [],
                                             "kind": k}) + "\n" for i, q, e, k in rows))
    env_file = tmp_path / ".env"
    result = _kb("eval", str(questions), "--scope", f"{handbook}-all", "--calibrate", "--json", "--write-env",
                 str(env_file), env={"KB_HOME": str(kb_home), "KB_RERANK": str(model_folder)}, timeout=600)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    fitted = out["calibration"]["rerank"]
    assert fitted["backend"] == f"cross-encoder:{model_folder.name}"
    assert all(r["signals"]["rerank_outcome"] == "ok" for r in out["questions"])
    best = {r["id"]: r["signals"]["rerank_best"] for r in out["questions"]}
    assert fitted["refuse_below"] == min(best[i] for i in ("q1", "q2", "q3", "q4"))  # no answerable question refused
    lines = env_file.read_text().splitlines()
    assert f"KB_RERANK_REFUSE_BELOW={fitted['refuse_below']:.6g}" in lines
    assert f"KB_RERANK_ANSWER_FROM={fitted['answer_from']:.6g}" in lines


def test_a_pair_holds_where_the_section_is_and_a_long_one_its_matched_chunks_cut_at_a_word():
    from indexing.values.hits import Hit

    def hit(text, matched):
        return Hit(parent_id="p", doc_id="d", source="s", path="leave.md", title="Leave policy",
                   heading_path=["Annual leave", "Carrying days over"], url="", text=text, matched=matched,
                   updated_at=None, score=1.0, cosine=0.5, bm25=1.0)

    assert section_text(hit("You may carry over 5 days.", []), 1500) == \
        "Leave policy › Annual leave › Carrying days over\nYou may carry over 5 days."
    long = hit("intro words " * 300, ["the matched chunk about carrying days over", "a second chunk"])
    assert section_text(long, 1500) == ("Leave policy › Annual leave › Carrying days over\n"
                                        "the matched chunk about carrying days over\na second chunk")
    cut = section_text(hit("word " * 1000, []), 300)
    assert len(cut) <= 300 and cut.endswith("word") and cut.startswith("Leave policy › ")


# -- a service's reply is checked, and its time is one deadline (issue 33 item 6) ----------------

TWO = ["Full-time employees get 25 days of paid annual leave.", "Connect to the VPN with WireGuard."]


@pytest.mark.parametrize("reply", [
    b'[{"index": 0, "score": NaN}, {"index": 1, "score": 0.1}]',
    b'[{"index": 0, "score": Infinity}, {"index": 1, "score": 0.1}]',
    b'[{"index": 0, "score": "nan"}, {"index": 1, "score": 0.1}]',
    b'[{"index": 0, "score": "0.9"}, {"index": 1, "score": 0.1}]',
    b'[{"index": 0, "score": 0.9}, {"index": 0, "score": 0.1}]',  # a duplicate, and index 1 missing
    b'[{"index": 0, "score": 0.9}, {"index": 1, "score": 0.1}, {"index": 1, "score": 0.2}]',
    b'[{"index": 0.0, "score": 0.9}, {"index": 1, "score": 0.1}]',
    b'[{"index": false, "score": 0.9}, {"index": true, "score": 0.1}]',
    b'[{"index": 0, "score": true}, {"index": 1, "score": 0.1}]',
    b'{"results": [{"index": 0, "relevance_score": -Infinity}, {"index": 1, "relevance_score": 0.1}]}',
    b'[{"index": 0, "score": 0.9}, {"index": 1, "score": 0.1, "pad": "' + b"x" * (2 << 20) + b'"}]',
], ids=["nan", "infinity", "nan-text", "number-text", "duplicate", "extra", "float-index", "bool-index",
        "bool-score", "cohere-infinity", "over-1MiB"])
def test_a_reply_that_is_not_one_finite_score_per_text_is_refused(service, reply):
    service.reply = reply
    reranker = ServiceReranker(service.url(TEI_PATH), wire_format="tei")
    try:
        with pytest.raises(RerankServiceError):
            reranker.score(VACATION, TWO)
        service.reply = b'[{"index": 1, "score": 0.25}, {"index": 0, "score": 3}]'
        assert reranker.score(VACATION, TWO) == [3.0, 0.25]  # a good reply, ints and floats, best first
    finally:
        reranker.close()


def test_nan_scores_fall_back_and_kb_ask_prints_strict_json(index, handbook, model_folder, service, monkeypatch):
    """NaN scores were taken: `kb ask --json` printed `"rerank": NaN` (not JSON), and Postgres
    refused the query log's row. Now the stage falls back, and every `kb` JSON is strict."""
    import bot.cli
    import bot.wiring
    from typer.testing import CliRunner

    def strict(text: str):
        return json.loads(text, parse_constant=lambda constant: pytest.fail(f"{constant} in kb's JSON"))

    monkeypatch.setattr(bot.wiring, "open_index", lambda settings: index)
    for name in ("SLACK_BOT_TOKEN", "KB_WIKI", "KB_LLM_BASE_URL", "KB_SOURCES"):
        monkeypatch.delenv(name, raising=False)
    service.reply = (b'[' + b", ".join(b'{"index": %d, "score": NaN}' % i for i in range(10)) + b']')
    with reranking(index, RerankConfig(url=service.url(TEI_PATH), wire_format="tei", timeout_ms=20_000, top_n=10)):
        result = CliRunner().invoke(bot.cli.app, ["ask", "--json", VACATION])
    assert result.exit_code == 0, result.output
    answer = strict(result.stdout)
    assert answer["signals"]["rerank_outcome"] == "error" and service.requests
    assert all(s.get("rerank") is None for s in answer["sources"])


def test_a_dripping_service_is_cut_off_at_the_questions_deadline_and_its_connection_closed(index, handbook,
                                                                                            model_folder, service):
    """One byte per 100 ms: httpx's timeout is per read, so each question held a worker for the
    whole reply (~6 s) and, with all four held, later questions never reached the service. Now
    each question's reply is cut off at its deadline and its connection closed."""
    import time

    scopes = [f"{handbook}-all"]
    service.reply = b'[' + b", ".join(b'{"index": %d, "score": 0.5}' % i for i in range(10)) + b']'
    service.drip = 0.1
    questions = 6  # more than the service backend's four workers
    with reranking(index, RerankConfig(url=service.url(TEI_PATH), wire_format="tei", timeout_ms=600)):
        for _ in range(questions):
            started = time.monotonic()
            run = retrieve(index, VACATION, scopes=scopes)
            assert run.rerank.outcome == "timeout" and time.monotonic() - started < 5
        deadline = time.monotonic() + 10
        while len(service.cut_off) < questions and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(service.requests) == questions  # every question reached the service: no worker was held
    assert len(service.cut_off) == questions and max(service.cut_off) < 3, service.cut_off


def test_an_error_body_echoing_the_api_key_is_logged_redacted(index, handbook, model_folder, service, caplog):
    key = f"sk-test-{uuid.uuid4().hex}"
    service.echo = True
    service.script = [(401, {})]
    with reranking(index, RerankConfig(url=service.url(TEI_PATH), wire_format="tei", api_key=key, timeout_ms=20_000)):
        with caplog.at_level(logging.WARNING):
            run = retrieve(index, VACATION, scopes=[f"{handbook}-all"])
    assert run.rerank.outcome == "error"
    assert service.requests[-1]["headers"]["Authorization"] == f"Bearer {key}"  # the key was sent, and echoed
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "401" in logged and "[redacted]" in logged and key not in logged
