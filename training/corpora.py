"""Where the evaluation corpora are: `../shared/corpora` beside the checkout, or `KB_SHARED_CORPORA`
(the benchmarks read the same two names through `benchmarks._common`)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KB_SHARED_CORPORA", REPO.parent / "shared" / "corpora"))
