"""The bundled model under ONNX Runtime (`KB_EMBED_BACKEND=onnx`, the default, or `onnx-int8`):
torch's vectors on real text (int8 close to them), exported once per model cache — by one process
when several start together — and loaded without torch afterwards, a `kb ask` that never imports
torch, an index built with torch kept by `onnx` and re-embedded by `onnx-int8`, and clear errors
for a missing onnxruntime, a cache that cannot be written or an unknown backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.support.corpora import REPO, SAMPLE_WIKI

from bot.quality.evaluation import load_questions, run_eval
from connectors.markdown import MarkdownFolder
from indexing.ingest import indexed_sources
from indexing.ingest.chunking import chunk_document
from indexing.config import IndexConfig
from indexing.index import Index
from indexing.vectors.onnx_embedding import OnnxBackendError, OnnxEmbedder, export_key
from indexing.ingest.sync import sync_documents


@pytest.fixture(scope="module")
def onnx_home():
    """One model cache for this module's exports (the export takes ~10 s; later embedders reuse it),
    apart from the run's shared one, so the tests see exports made here."""
    home = Path(tempfile.mkdtemp(prefix="docent-onnx-"))
    yield home
    import shutil

    shutil.rmtree(home, ignore_errors=True)


def sample_texts() -> list[str]:
    """Real chunk texts of the sample wiki (English and Chinese pages, tables, lists) and questions."""
    docs = MarkdownFolder(SAMPLE_WIKI, source="sample", exclude=["*.jsonl"]).documents()
    texts = [c.embed_text for d in docs for p in chunk_document(d) for c in p.children]
    return texts + [q.question for q in load_questions(SAMPLE_WIKI / "QUESTIONS.jsonl")]


def cosines(a, b) -> np.ndarray:
    return (np.asarray(a, dtype=np.float32) * np.asarray(b, dtype=np.float32)).sum(axis=1)


def test_onnx_vectors_are_torchs_and_int8_vectors_are_close(onnx_home):
    from indexing.vectors.embedding import TorchEmbedder

    texts = sample_texts()
    assert len(texts) > 100
    torch = TorchEmbedder()
    torch_vectors = torch.embed_texts(texts)
    onnx = OnnxEmbedder(onnx_home)
    same = cosines(onnx.embed_texts(texts), torch_vectors)
    assert same.min() > 0.99999, same.min()
    assert onnx.texts_embedded == len(texts) and onnx.name == torch.name  # one vector cache for both
    assert np.allclose(onnx.embed_query(texts[-1]), torch.embed_query(texts[-1]), atol=1e-5)
    int8 = cosines(OnnxEmbedder(onnx_home, quantized=True).embed_texts(texts), torch_vectors)
    # quantised weights: close, not equal (benchmarks/onnx_embedding.py measures the handbook; kb eval the effect)
    assert int8.mean() > 0.985 and int8.min() > 0.95, (int8.mean(), int8.min())
    assert int8.min() < 0.9999  # really another model's vectors, so it must not share torch's cache key


@pytest.mark.integration
def test_the_export_is_made_once_and_a_second_start_loads_it_without_torch(onnx_home):
    first = OnnxEmbedder(onnx_home)
    first.embed_query("warm-up")
    files = sorted(onnx_home.glob("onnx/*/model.onnx"))
    assert len(files) == 1 and files[0].parent.name == export_key(first.model_dir)
    stamp = files[0].stat().st_mtime_ns
    script = ("import sys, json; from pathlib import Path; from indexing.vectors.onnx_embedding import OnnxEmbedder\n"
              f"e = OnnxEmbedder(Path({str(onnx_home)!r})); v = e.embed_query('how much parental leave do we get?')\n"
              "print(json.dumps({'exported': e.exported, 'torch': 'torch' in sys.modules, 'dims': len(v)}))")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"exported": False, "torch": False, "dims": 384}
    assert files[0].stat().st_mtime_ns == stamp and sorted(onnx_home.glob("onnx/*/model.onnx")) == files


def test_kb_ask_answers_without_importing_torch(kb_home, sample_synced):
    """The default backend's point: a process that answers (`kb ask`, `kb serve`, a replica) loads
    the exported file and neither torch nor sentence-transformers (~5.5 s of a cold start)."""
    script = ("import atexit, sys\n"
              "atexit.register(lambda: print('heavy:', [m for m in ('torch', 'sentence_transformers') if m in sys.modules], "
              "file=sys.stderr))\n"
              "from bot.cli import main\n"
              "sys.argv = ['kb', 'ask', '--json', 'what is the nightly hotel limit in expensive cities?']; main()")
    env = {k: v for k, v in os.environ.items() if k != "KB_EMBED_BACKEND"}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env={**env, "KB_HOME": str(kb_home)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "$300" in json.loads(done.stdout)["lead"]
    assert done.stderr.strip().splitlines()[-1] == "heavy: []"


def test_status_says_how_text_becomes_vectors_and_which_export_is_loaded(index, tmp_path):
    from indexing.index import describe_embedding, make_embedder
    from indexing.index import index_status
    from indexing.vectors.onnx_embedding import export_path

    index.embedder.embed_query("warm-up")  # the run's export exists from here on
    made = export_path(index.embedder.model_dir, index.embedder.cache, False)
    assert made.is_file()
    assert index_status(index).embedding == f"all-MiniLM-L6-v2 (bundled) under ONNX Runtime, from {made}"
    fresh = IndexConfig(home=tmp_path, model_cache=tmp_path / "cache", embed_backend="onnx-int8")
    key = export_key(index.embedder.model_dir)
    assert describe_embedding(make_embedder(fresh)) == (
        "all-MiniLM-L6-v2 (bundled) under ONNX Runtime, int8, not exported yet: the first "
        f"embedding exports it to {tmp_path}/cache/onnx/{key}/model-int8.onnx (~10 s, once)")
    assert describe_embedding(make_embedder(IndexConfig(home=tmp_path, embed_backend="torch"))) == (
        "all-MiniLM-L6-v2 (bundled) under torch (sentence-transformers)")
    served = IndexConfig(home=tmp_path, embed_url="http://tei:8080/v1", embed_model="bge-small")
    assert describe_embedding(make_embedder(served)) == "bge-small from the embedding service at http://tei:8080/v1/embeddings"


def test_the_export_key_follows_the_model(tmp_path):
    bundled = OnnxEmbedder(tmp_path).model_dir
    copy = tmp_path / "model"
    copy.mkdir()
    for item in bundled.iterdir():
        (copy / item.name).symlink_to(item)
    assert export_key(copy) == export_key(bundled)
    (copy / "config.json").unlink()
    config = json.loads((bundled / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-6}))
    assert export_key(copy) != export_key(bundled)


def test_switching_backends_keeps_an_index_between_onnx_and_torch_and_re_embeds_it_for_int8(index, onnx_home):
    """`onnx` (the test index's, as `kb serve`'s) gives torch's vectors, so they share a cache key:
    an index synced by one stays as it is under the other (nothing re-embedded) and answers the
    same. `onnx-int8` does not: its first sync re-embeds every page, and going back finds the float
    vectors still in the cache."""
    name = f"switch-{uuid.uuid4().hex[:6]}"
    url = index.url.render_as_string(hide_password=False)

    def sync_with(backend: str, idx=None):
        idx = idx or Index(IndexConfig(home=index.config.home, database_url=url, embed_backend=backend, model_cache=onnx_home))
        before = idx.embedder.texts_embedded
        report = sync_documents(idx, MarkdownFolder(SAMPLE_WIKI, source=name, exclude=["*.jsonl"], access=name).documents(), name)
        return idx, report, idx.embedder.texts_embedded - before

    try:
        assert index.config.embed_backend == "onnx"
        _, first, _ = sync_with("onnx", index)  # embeds, or finds the run's other sample-wiki syncs' vectors cached
        assert first.added > 10 and first.chunks > 100
        torch, report, again = sync_with("torch")
        assert (report.added, report.updated, again) == (0, 0, 0) and report.unchanged == first.added
        questions = load_questions(SAMPLE_WIKI / "QUESTIONS.jsonl")
        by_onnx, by_torch = run_eval(index, questions, scopes=[name]), run_eval(torch, questions, scopes=[name])
        for field in ("hit_rank", "outcome", "sources", "lead"):
            assert [q[field] for q in by_torch["questions"]] == [q[field] for q in by_onnx["questions"]], field
        torch.close()
        int8, report, int8_embedded = sync_with("onnx-int8")
        assert report.updated == first.added and int8_embedded > 100 and report.embedded == int8_embedded
        int8.close()
        _, report, back = sync_with("onnx", index)
        assert report.updated == first.added and back == 0
    finally:
        indexed_sources.forget(index, name)


@pytest.mark.slow
def test_a_missing_onnxruntime_stops_kb_at_start_in_one_line(tmp_path):
    """Run as a real `kb sync` whose interpreter cannot import onnxruntime (a None entry in
    sys.modules is how Python marks a module as unavailable)."""
    script = "import sys; sys.modules['onnxruntime'] = None; from bot.cli import main; sys.argv = ['kb', 'sync']; main()"
    env = {**os.environ, "KB_HOME": str(tmp_path / "home"), "KB_EMBED_BACKEND": "onnx"}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "KB_EMBED_BACKEND=onnx needs the onnxruntime package" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_processes_that_start_together_export_once(tmp_path):
    """Two replicas started at once on an empty cache: one exports, the other waits on the lock and
    loads that file (without it both would export, a minute of torch each)."""
    script = ("import json, sys; from pathlib import Path; from indexing.vectors.onnx_embedding import OnnxEmbedder\n"
              f"e = OnnxEmbedder(Path({str(tmp_path)!r})); v = e.embed_query('where is the lactation room?')\n"
              "print(json.dumps({'exported': e.exported, 'dims': len(v)}))")
    runs = [subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    outs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outs]
    results = sorted(json.loads(out.splitlines()[-1])["exported"] for out, _ in outs)
    assert results == [False, True]
    assert len(list(tmp_path.glob("onnx/*/model.onnx"))) == 1 and not list(tmp_path.glob("onnx/*/*.tmp"))


def test_a_cache_that_cannot_be_written_stops_kb_at_start_naming_the_setting(tmp_path):
    """At start, not at the first page: a sync would otherwise fail every page with this reason."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with pytest.raises(OnnxBackendError, match=f"in {blocked}/onnx .*set KB_MODEL_CACHE to a writable folder"):
        OnnxEmbedder(blocked)


def test_the_cache_is_per_user_unless_kb_model_cache_names_one(tmp_path, monkeypatch):
    from bot.settings import Settings
    from indexing.index import make_embedder
    from indexing.vectors.onnx_embedding import default_model_cache

    monkeypatch.delenv("KB_MODEL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_model_cache() == tmp_path / "xdg" / "docent"
    config = Settings(_env_file=None, kb_home=tmp_path / "home").index_config()
    assert config.embed_backend == "onnx" and config.model_cache is None
    assert make_embedder(config).cache == tmp_path / "xdg" / "docent"
    monkeypatch.setenv("KB_MODEL_CACHE", "~/models")
    config = Settings(_env_file=None, kb_home=tmp_path / "home").index_config()
    assert config.model_cache == Path("~/models").expanduser() and make_embedder(config).cache == config.model_cache


def test_an_unknown_backend_is_refused():
    from pydantic import ValidationError

    from bot.settings import Settings

    with pytest.raises(ValidationError, match="onnx-int8"):
        Settings(kb_embed_backend="onnx-fp16")
    assert Settings(kb_embed_backend="onnx-int8").index_config().embed_backend == "onnx-int8"
    with pytest.raises(ValueError, match="KB_EMBED_BACKEND must be one of torch, onnx, onnx-int8"):
        IndexConfig(home=Path("/tmp/unused"), embed_backend="gpu")


def test_a_model_the_export_cannot_reproduce_is_refused(tmp_path):
    bundled = OnnxEmbedder(tmp_path).model_dir
    model = tmp_path / "cls-pooled"
    model.mkdir()
    for item in bundled.iterdir():
        if item.name != "1_Pooling":
            (model / item.name).symlink_to(item)
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 384,
                                                                 "pooling_mode_cls_token": True,
                                                                 "pooling_mode_mean_tokens": False}))
    with pytest.raises(OnnxBackendError, match="mean-pooled"):
        OnnxEmbedder(tmp_path, model_path=str(model))
