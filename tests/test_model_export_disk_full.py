"""A disk that fills up while the ONNX export of the embedding model is written leaves no partial
file behind (issue 45, item 12: a 40 MB `.model.onnx.<pid>.<thread>.tmp` stayed in the cache).

The write really fails: the export runs in a subprocess whose files may not grow past 4 MB
(`RLIMIT_FSIZE`, with SIGXFSZ ignored, so the write fails with EFBIG as it would with ENOSPC on
a full disk, through the same `OSError` path), into a fresh model cache.
"""

from __future__ import annotations

import subprocess
import sys

from tests.support.corpora import REPO

EXPORT_WITH_A_SMALL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (4_000_000, 4_000_000))
from indexing.vectors.onnx_embedding import main
main([sys.argv[1]])
"""


def test_an_export_that_runs_out_of_disk_leaves_no_partial_file(tmp_path):
    cache = tmp_path / "cache"
    done = subprocess.run([sys.executable, "-c", EXPORT_WITH_A_SMALL_DISK, str(cache)], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "File too large" in done.stderr, done.stderr[-2000:]
    left = sorted(p.name for p in cache.rglob("*") if p.is_file())
    assert left == [".export.lock"], left  # no `.model.onnx.….tmp`, and no model.onnx either
