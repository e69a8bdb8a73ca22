"""Embeddings from a service over OpenAI's `/v1/embeddings` wire format, against a local server
that computes its vectors with the bundled model: the same vectors, so the same answers and the
same `kb eval` numbers as the local path; batches in flight together; 429 (with Retry-After) and
5xx retried; a model of the wrong size stopped at start in one line."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.support.corpora import SAMPLE_WIKI
from tests.support.embeddings_server import FakeEmbeddings

from bot.quality.evaluation import load_questions, run_eval
from connectors.markdown import MarkdownFolder
from indexing.ingest import indexed_sources
from indexing.config import IndexConfig
from indexing.vectors.embedding import EMBED_DIM
from indexing.vectors.embedding_service import EmbeddingDimensionError, EmbeddingServiceError, ServiceEmbedder
from indexing.index import Index
from indexing.ingest.sync import sync_documents


@pytest.fixture
def service(index):
    server = FakeEmbeddings(embedder=index.embedder).start()  # the run's one loaded model
    yield server
    server.stop()


def client(service, **options) -> ServiceEmbedder:
    return ServiceEmbedder(service.base_url, options.pop("model", "minilm-as-a-service"), options.pop("api_key", "k-123"),
                           dimensions=EMBED_DIM, backoff=options.pop("backoff", 0.05), **options)


def test_the_torch_onnx_and_service_backends_are_each_an_embedder(tmp_path):
    from indexing.vectors.embedding import Embedder, TorchEmbedder
    from indexing.vectors.onnx_embedding import OnnxEmbedder

    backends = [TorchEmbedder(), OnnxEmbedder(tmp_path),
                ServiceEmbedder("http://127.0.0.1:9", "m", dimensions=EMBED_DIM)]  # none loads or connects here
    assert all(isinstance(b, Embedder) for b in backends)


def test_service_vectors_are_the_local_models_and_go_out_in_batches_in_flight(index, service):
    texts = [f"Sentence number {n} about the Lisbon office coffee machine." for n in range(40)]
    service.delay = 0.05  # long enough for requests to overlap
    embedder = client(service, batch_size=5, in_flight=4)
    vectors = embedder.embed_texts(texts)
    local = index.embedder.embed_texts(texts)
    assert np.allclose(np.array(vectors), np.array(local), atol=1e-6)
    assert embedder.texts_embedded == 40 and len(service.requests) == 8
    assert 1 < service.peak_in_flight <= 4
    first = service.requests[0]
    assert first["body"]["model"] == "minilm-as-a-service" and first["headers"]["Authorization"] == "Bearer k-123"
    assert np.allclose(embedder.embed_query(texts[3]), index.embedder.embed_query(texts[3]), atol=1e-6)


def test_rate_limits_and_server_errors_are_retried_honouring_retry_after(service):
    service.script = [(429, {"Retry-After": "1"}), (503, {})]
    embedder = client(service)
    started = time.monotonic()
    [vector] = embedder.embed_texts(["one text"])
    assert len(vector) == EMBED_DIM and len(service.requests) == 3
    assert time.monotonic() - started >= 1.0, "waited as long as Retry-After said"


def test_a_service_that_keeps_failing_or_refuses_says_so(service):
    service.script = [(500, {})] * 3
    with pytest.raises(EmbeddingServiceError, match="failed 3 times: HTTP 500"):
        client(service, retries=2).embed_texts(["x"])
    service.script = [(401, {})]
    with pytest.raises(EmbeddingServiceError, match="answered 401: scripted 401"):
        client(service).embed_texts(["x"])
    assert len(service.requests) == 4  # a refusal is not retried


def test_a_model_of_another_size_is_a_clear_error_and_stops_kb_serve_at_start(index, kb_home, service):
    service.dimensions = 768
    with pytest.raises(EmbeddingDimensionError, match="gives 768-dimensional vectors; this index holds 384"):
        client(service).embed_query("hello")
    from bot.serve import StartupError, warm_up

    url = index.url.render_as_string(hide_password=False)
    opened = Index(IndexConfig(home=kb_home, database_url=url, embed_url=service.base_url, embed_model="wide-model"))
    try:
        with pytest.raises(StartupError, match="768-dimensional"):
            warm_up(opened)
    finally:
        opened.close()


def test_the_service_needs_a_model_name():
    with pytest.raises(ValueError, match="KB_EMBED_URL needs KB_EMBED_MODEL"):
        IndexConfig(home=Path("/tmp"), embed_url="http://127.0.0.1:9/v1")


def test_an_index_embedded_by_the_service_answers_and_evaluates_as_the_local_one(index, kb_home, service):
    """Two copies of the sample wiki, one embedded locally and one through the service under
    another model name (so no vector comes from the local path's cache): the same ranking, the
    same scores, the same `kb eval` numbers."""
    tag = uuid.uuid4().hex[:6]
    local_name, service_name = f"emb-local-{tag}", f"emb-service-{tag}"
    url = index.url.render_as_string(hide_password=False)
    remote = Index(IndexConfig(home=kb_home, database_url=url, embed_url=service.base_url,
                               embed_model=f"minilm-service-{tag}", embed_in_flight=4))
    try:
        for idx, name in ((index, local_name), (remote, service_name)):
            sync_documents(idx, MarkdownFolder(SAMPLE_WIKI, source=name, exclude=["*.jsonl"], access=name).documents(), name)
        assert remote.embedder.texts_embedded > 100 and service.texts_seen() == remote.embedder.texts_embedded
        questions = load_questions(SAMPLE_WIKI / "QUESTIONS.jsonl")
        by_local = run_eval(index, questions, scopes=[local_name])
        by_service = run_eval(remote, questions, scopes=[service_name])
        for key in ("hit@1", "hit@3", "hit@5", "mrr@10", "keyword_coverage", "not_found_precision", "not_found_recall"):
            assert by_service["metrics"]["overall"][key] == by_local["metrics"]["overall"][key], key
        for mine, theirs in zip(by_service["questions"], by_local["questions"]):
            assert mine["hit_rank"] == theirs["hit_rank"] and mine["found"] == theirs["found"], mine["id"]
    finally:
        indexed_sources.forget(index, local_name)
        indexed_sources.forget(index, service_name)
        remote.close()
