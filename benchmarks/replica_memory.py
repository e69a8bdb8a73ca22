"""Memory of one serving replica: a fresh process opens an existing index, loads the embedding
model and answers the handbook's eval questions — per embedding backend, one process each.

    .venv/bin/python -m benchmarks.replica_memory KB_HOME [KB_HOME ...] [--backends torch,onnx,onnx-int8] [--rounds 2]

What a `kb serve` replica holds, without Slack: the index opened (`Index`), the model loaded
(`warm_up`'s one query), then `--rounds` × 40 questions through `answer_question` (the keyword
index loaded from Postgres, the lead's sentence vectors cached as they are met). Reported per
process: RSS after opening, after the model, after the questions, the peak (VmHWM), and how long
the model took to load (the first query: imports, and for ONNX loading the cached export). The
embedded Postgres is a process of its own and not counted (with `DATABASE_URL` it is elsewhere).
The index must exist (built by `kb sync` or `benchmarks.scale --keep`); it is only read, apart
from the query log. Answers on an index embedded by another backend are still real answers; this
measures memory, not quality.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from training.corpora import REPO
from benchmarks._common import eval_questions, table

CHILD = """
import json, sys, time
from pathlib import Path
from benchmarks._common import eval_questions

def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024

from indexing.config import IndexConfig, RerankConfig
from indexing.index import Index
from bot.answering.answer import answer_question
home, backend, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = {"base": status("VmRSS")}
index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=Path(home), embed_backend=backend))
chunks = index.chunk_count()
out["opened"] = status("VmRSS")
started = time.perf_counter()
index.embedder.embed_query("warm-up")
out["model_seconds"] = time.perf_counter() - started
out["model"] = status("VmRSS")
questions = [q["question"] for q in eval_questions()]
for _ in range(rounds):
    for q in questions:
        answer_question(index, q)
out["answered"] = status("VmRSS")
out["peak"] = status("VmHWM")
out["chunks"] = chunks
out["torch_loaded"] = "torch" in sys.modules
index.close()
print(json.dumps(out))
"""


def measure(home: str, backend: str, rounds: int) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, home, backend, str(rounds)], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "KB_LOG_LEVEL": "ERROR"})
    if done.returncode != 0:
        raise SystemExit(f"{backend} on {home} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("homes", nargs="+")
    parser.add_argument("--backends", default="torch,onnx,onnx-int8")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    eval_questions()  # fail early without the corpus
    load = lambda: " ".join(Path("/proc/loadavg").read_text().split()[:3])  # noqa: E731
    for home in args.homes:
        rows = []
        for backend in args.backends.split(","):
            before = load()
            m = measure(home, backend, args.rounds)
            rows += [(f"{backend}: RSS opened / model loaded / after questions",
                      f"{m['opened']:,.0f} / {m['model']:,.0f} / {m['answered']:,.0f} MB"),
                     (f"{backend}: peak RSS", f"{m['peak']:,.0f} MB"),
                     (f"{backend}: model load (first query)", f"{m['model_seconds']:.1f} s"),
                     (f"{backend}: torch imported", str(m["torch_loaded"])),
                     (f"{backend}: load before / after", f"{before} / {load()}")]
            chunks = m["chunks"]
        table(f"one replica on {home} ({chunks:,} chunks), {args.rounds} × 40 questions", rows)


if __name__ == "__main__":
    main()
