"""What checking the ONNX export at start costs: `model_cache.damaged` (owner, mode, and the SHA-256
of the file against the one recorded when it was exported), which every `kb` start and every
replica pays once (`OnnxEmbedder.__init__`, via `check_export`).

    .venv/bin/python -m benchmarks.model_cache_check [--cache DIR] [--rounds 7]

Exports the bundled model into DIR (default: a temporary folder) if it is not there, then times the
check `--rounds` times with the file in the page cache (as right after a start that read it, and as
ONNX Runtime reads it next anyway), the per-process memo cleared each time. The load average is
printed: on this shared machine compare against it, not across runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._common import table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    from indexing.vectors import model_cache
    from indexing.vectors.onnx_embedding import bundled_model_path, exported_model

    cache = args.cache or Path(tempfile.mkdtemp(prefix="docent-cache-check-")) / "cache"
    export, _ = exported_model(bundled_model_path(), cache, False)
    seconds = []
    try:
        for _ in range(args.rounds):
            model_cache._verified.clear()  # the memo a process keeps while the file is unchanged
            started = time.perf_counter()
            assert model_cache.damaged(export) is None
            seconds.append(time.perf_counter() - started)
        size = export.stat().st_size
    finally:
        if args.cache is None:
            shutil.rmtree(cache.parent, ignore_errors=True)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    table(f"export check at start ({args.rounds} rounds, load {load})", [
        ("export", str(export)),
        ("size (MB)", size / 1e6),
        ("p50 (s)", statistics.median(seconds)),
        ("min (s)", min(seconds)),
        ("max (s)", max(seconds)),
    ])


if __name__ == "__main__":
    main()
