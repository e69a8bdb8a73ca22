"""Shared bits of the benchmark scripts: a throwaway index, corpus lookup, table printing."""

from __future__ import annotations

import json
import os
import resource
import statistics
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
warnings.filterwarnings("ignore")

from training.corpora import SHARED  # noqa: E402 — after the environment above, like every import here

HANDBOOK = SHARED / "sourcegraph-handbook"
CORPUS_EXCLUDES = ["SOURCE.md", "LICENSE*", "*.jsonl"]


def support_module(name: str):
    """tests/support/<name>.py loaded from its file, once per process (benchmarks do not import the
    tests: whatever PYTHONPATH points at, the module beside these benchmarks is the one read)."""
    import importlib.util
    import sys

    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "tests" / "support" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look the module up while the class is created
        spec.loader.exec_module(module)
    return sys.modules[name]


def fresh_index(home: Path | None = None):
    """An index in a new temporary data directory (or `home`), with its own embedded Postgres."""
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index

    home = home or Path(tempfile.mkdtemp(prefix="docent-bench-"))
    return Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))


def require(path: Path) -> Path:
    if not path.exists():
        raise SystemExit(f"{path} not found (set KB_SHARED_CORPORA to the folder holding the corpora)")
    return path


def eval_questions() -> list[dict]:
    """The handbook's labelled questions (`eval_public.jsonl`), one dict per line."""
    lines = require(HANDBOOK / "eval_public.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float], p: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


def table(title: str, rows: list[tuple]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    t.add_column("measure")
    t.add_column("value", justify="right")
    for name, value in rows:
        t.add_row(name, f"{value:,.2f}" if isinstance(value, float) else str(value))
    Console(width=120).print(t)
