"""Giving freed memory back to the operating system after big, short-lived allocations.

A sync embeds thousands of texts and rebuilds BM25; a reader loads each new BM25 version. Python
and NumPy free that memory, but glibc's allocator keeps the freed pages mapped for reuse, so a
long-running bot's resident size creeps up sync after sync even though nothing is leaked
(measured: a process that had synced 160 times held ~200 MB it no longer used; `malloc_trim`
returned it, and what stayed grew by ~5 KB per sync — PyStemmer's bounded word cache). Trimming
after those moments keeps `kb serve` / `kb watch` near their working size (docs/benchmarks.md).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from functools import lru_cache

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    """glibc, or None where there is no `malloc_trim` (macOS, musl): then this is a no-op."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    """Return the allocator's free pages to the OS; True if the platform could."""
    libc = _libc()
    if libc is None:
        return False
    try:
        libc.malloc_trim(0)
        return True
    except Exception:  # never let housekeeping break a sync or a question
        log.debug("malloc_trim failed", exc_info=True)
        return False
