"""Embedding under CPU contention: OpenMP's default wait policy against PASSIVE (sleeping).

    .venv/bin/python -m benchmarks.contention [--seconds 5] [--rounds 2] [--chunks 200]
        [--policies unset,PASSIVE] [--neighbour-policy docent|ACTIVE|PASSIVE|unset]

Why: `indexing/vectors/embedding.py` sets `OMP_WAIT_POLICY=PASSIVE` (by `setdefault`, before torch
loads). Without it (`unset`, what Docent ran before), libgomp's threads spin ~300,000 iterations
before sleeping; under ACTIVE they spin without limit. A thread that finishes its share of an
encode keeps its core busy waiting for the next one; when another process wants that core, a thread gets descheduled
mid-encode and the whole encode waits for it. On a 2-core machine that gave the question
embedding a 300-500 ms p95 instead of ~50 ms. This script re-measures the choice, so it can be
checked again on another machine or after a torch upgrade.

What is measured, for each policy, in a child process of its own (the policy must be in the
environment before torch loads: the child sets `os.environ["OMP_WAIT_POLICY"]` explicitly
before importing `indexing.vectors.embedding`, whose `setdefault` then leaves it alone):

* question embedding (`TorchEmbedder.embed_query`): p50 / p95 / max, in ms, over the 40 questions
  of the Sourcegraph eval file, `--rounds` rounds per run;
* batch embedding (`TorchEmbedder.embed_texts`): texts/s over `--chunks` real handbook texts (the
  first prose paragraphs of the first Markdown pages, cut to ~600 characters), the whole batch
  at least once and repeated until it has run `--seconds`.

Both in two conditions, one after the other in the same child (the model loads once):

1. **idle**: nothing else of ours runs (the machine may still be shared: see the load averages);
2. **busy neighbour**: a second Python process loops `embed_texts` with the same model in
   sync-sized batches, the way a second Docent process (a `kb sync`) would. Its policy is
   `--neighbour-policy`: by default `docent`, i.e. not set by us, so `indexing.vectors.embedding` gives
   it Docent's default (PASSIVE). It loads once at the start and is frozen (SIGSTOP) whenever it
   is not wanted, resumed (SIGCONT) for each busy measurement.

Only one measuring child is alive at a time: under ACTIVE, an idle process's OpenMP threads keep
spinning, so two children at once would be neighbours to each other. The policies run in A-B-B-A
order (unset, PASSIVE, PASSIVE, unset), so slow drifts in machine load hit both alike; a
policy's two runs are pooled (latencies together, rate = all texts / all seconds). The ratio
column divides by the first policy: below 1 is better for latencies, above 1 for rates.

`--policies unset,PASSIVE,ACTIVE` adds unbounded spinning. About 3-5 minutes with the defaults
on 2 otherwise quiet cores, longer when the machine is shared (child start-up, which loads torch and the model, is a large part).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import IO

from benchmarks._common import HANDBOOK, eval_questions, pct
from training.corpora import REPO

POLICY_CHOICES = ("ACTIVE", "PASSIVE", "unset")
EVAL_FILE = HANDBOOK / "eval_public.jsonl"
CHUNK_CHARS = 600
SKIPPED_PAGES = {"SOURCE.md", "LICENSE.md"}
NEIGHBOUR_BATCH = 32  # a sync embeds in batches of this size (TorchEmbedder's default batch_size)


# -- inputs (read by the children; the parent only checks they exist) -----------------------

def load_questions() -> list[str]:
    return [q["question"] for q in eval_questions()]


def load_chunks(count: int) -> list[str]:
    """The first prose paragraphs of the first `count` Markdown pages (path order), ~600 chars each."""
    chunks = []
    for path in sorted(HANDBOOK.rglob("*.md")):
        if path.name in SKIPPED_PAGES:
            continue
        text = first_paragraphs(path.read_text(errors="replace"))
        if text:
            chunks.append(text)
        if len(chunks) == count:
            break
    return chunks


def first_paragraphs(markdown: str, limit: int = CHUNK_CHARS) -> str:
    """Paragraphs from the top of a page (no headings, front matter, HTML comments or code
    fences), joined until `limit` characters, then cut there."""
    paragraphs, size = [], 0
    for block in markdown.split("\n\n"):
        block = block.strip()
        if not block or block.startswith(("#", "---", "<!--", "```")):
            continue
        paragraphs.append(block)
        size += len(block)
        if size >= limit:
            break
    return "\n\n".join(paragraphs)[:limit]


# -- child processes: a measuring worker, and the neighbour -----------------------------------

def load_embedder(policy: str):
    """A TorchEmbedder with its model loaded, torch having started under `policy`: ACTIVE or PASSIVE
    (set explicitly), `unset` (no variable at all) or `docent` (whatever indexing.vectors.embedding sets)."""
    if policy in ("ACTIVE", "PASSIVE"):
        os.environ["OMP_WAIT_POLICY"] = policy
    from indexing.vectors.embedding import TorchEmbedder

    if policy == "unset":
        os.environ.pop("OMP_WAIT_POLICY", None)  # undo indexing.vectors.embedding's setdefault; torch is not loaded yet
    embedder = TorchEmbedder()
    embedder.embed_query("load the model before the clock starts")
    return embedder


def worker(policy: str, rounds: int, seconds: float, chunk_count: int) -> None:
    """Measure one policy idle, then (once the parent says "go" on stdin) next to the busy
    neighbour: one JSON line on stdout for each."""
    embedder = load_embedder(policy)
    questions, chunks = load_questions(), load_chunks(chunk_count)
    embedder.embed_texts(chunks[:NEIGHBOUR_BATCH])  # warm-up of the batch path
    for condition in ("idle", "busy"):
        if condition == "busy":
            sys.stdin.readline()
        latencies = question_latencies_ms(embedder, questions, rounds)
        texts, elapsed = batch_rate(embedder, chunks, seconds)
        print(json.dumps({
            "condition": condition, "policy": os.environ.get("OMP_WAIT_POLICY", "unset"),
            "torch_threads": torch_threads(), "latencies_ms": latencies, "texts": texts,
            "seconds": elapsed, "load_1min": os.getloadavg()[0],
        }), flush=True)


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def question_latencies_ms(embedder, questions: list[str], rounds: int) -> list[float]:
    latencies = []
    for _ in range(rounds):
        for question in questions:
            started = time.perf_counter()
            embedder.embed_query(question)
            latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def batch_rate(embedder, chunks: list[str], seconds: float) -> tuple[int, float]:
    """(texts embedded, seconds taken): the whole batch, at least once, again until `seconds`."""
    texts, started = 0, time.perf_counter()
    while texts == 0 or time.perf_counter() - started < seconds:
        embedder.embed_texts(chunks)
        texts += len(chunks)
    return texts, time.perf_counter() - started


def neighbour(policy: str, chunk_count: int) -> None:
    """Keep the CPU busy like a second Docent process embedding a sync, until killed."""
    embedder = load_embedder(policy)
    chunks = load_chunks(chunk_count)
    embedder.embed_texts(chunks[:NEIGHBOUR_BATCH])
    print(f"ready {os.environ.get('OMP_WAIT_POLICY', 'unset')}", flush=True)
    while True:
        for start in range(0, len(chunks), NEIGHBOUR_BATCH):
            embedder.embed_texts(chunks[start : start + NEIGHBOUR_BATCH])


# -- the parent: orchestration ------------------------------------------------------------------

class Neighbour:
    """The neighbour process: started (model loaded, looping), then frozen until `resume`."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.errors = tempfile.TemporaryFile("w+")  # its stderr: model-loading chatter, or why it failed
        self.proc = subprocess.Popen(child_command("neighbour", args, args.neighbour_policy), cwd=REPO,
                                     env=child_env(), stdout=subprocess.PIPE, stderr=self.errors, text=True)
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ready":
            self.stop()
            self.errors.seek(0)
            raise SystemExit(f"the neighbour process failed to start:\n{self.errors.read()[-3000:]}")
        self.policy = line[1]
        self.pause()

    def pause(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.proc.kill()  # SIGKILL: works on a frozen process too
        self.proc.wait()
        self.errors.close()


def child_command(role: str, args: argparse.Namespace, policy: str) -> list[str]:
    return [sys.executable, "-m", "benchmarks.contention", "--role", role, "--policy", policy,
            "--rounds", str(args.rounds), "--seconds", str(args.seconds), "--chunks", str(args.chunks)]


def child_env() -> dict[str, str]:
    """Our environment without OMP_WAIT_POLICY: each child decides its own."""
    return {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}


def run_worker(policy: str, args: argparse.Namespace, neighbour: Neighbour) -> list[dict]:
    """One worker: its idle result, then its result with the neighbour running."""
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(child_command("worker", args, policy), cwd=REPO, env=child_env(),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True)
        idle = read_result(proc, errors)
        neighbour.resume()
        try:
            time.sleep(1)  # let the neighbour get going
            proc.stdin.write("go\n")
            proc.stdin.flush()
            busy = read_result(proc, errors)
        finally:
            neighbour.pause()
        proc.wait()
    return [idle, busy]


def read_result(proc: subprocess.Popen, errors: IO[str]) -> dict:
    line = proc.stdout.readline()
    if not line:
        proc.wait()
        errors.seek(0)
        raise SystemExit(f"a worker failed (exit {proc.returncode}):\n{errors.read()[-3000:]}")
    return json.loads(line)


def run_all(args: argparse.Namespace, policies: list[str], neighbour: Neighbour) -> dict[str, dict[str, list[dict]]]:
    """{condition: {policy: its runs' results}}, the policies in A-B-B-A order."""
    results: dict[str, dict[str, list[dict]]] = {c: {p: [] for p in policies} for c in ("idle", "busy")}
    for policy in policies + policies[::-1]:
        started = time.perf_counter()
        for result in run_worker(policy, args, neighbour):
            results[result["condition"]][policy].append(result)
        print(f"  {policy} run done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return results


# -- report -------------------------------------------------------------------------------------

def summary(runs: list[dict]) -> dict[str, float | int | str]:
    """A policy's runs in one condition: pooled latencies, total rate, per-run details."""
    latencies = [ms for run in runs for ms in run["latencies_ms"]]
    return {
        "question p50, ms": pct(latencies, 50),
        "question p95, ms": pct(latencies, 95),
        "question max, ms": max(latencies),
        "batch, texts/s": sum(r["texts"] for r in runs) / sum(r["seconds"] for r in runs),
        "batch per run, texts/s": " / ".join(f"{r['texts'] / r['seconds']:.1f}" for r in runs),
        "questions timed": len(latencies),
        "load avg (1 min) after each run": " / ".join(f"{r['load_1min']:.2f}" for r in runs),
    }


def report(results: dict[str, dict[str, list[dict]]], title: str, neighbour_policy: str) -> None:
    from rich.console import Console
    from rich.table import Table

    policies = list(results["idle"])
    base = policies[0]
    t = Table(title=title)
    t.add_column("measure")
    for column in policies + [f"{p} / {base}" for p in policies[1:]]:
        t.add_column(column, justify="right")
    headings = {"idle": "idle (no neighbour)",
                "busy": f"busy neighbour (embedding in a loop, its policy {neighbour_policy})"}
    for condition, by_policy in results.items():
        t.add_row(f"[bold]{headings[condition]}[/bold]")
        columns = [summary(by_policy[p]) for p in policies]
        for name in columns[0]:
            values = [c[name] for c in columns]
            ratios = [f"{v / values[0]:.2f}" if isinstance(v, float) and values[0] else "" for v in values[1:]]
            t.add_row(f"  {name}", *[fmt(v) for v in values], *ratios)
        t.add_section()
    Console(width=140).print(t)


def fmt(value: float | int | str) -> str:
    return f"{value:,.1f}" if isinstance(value, float) else str(value)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def parse_policies(text: str) -> list[str]:
    policies = [p.strip() for p in text.split(",") if p.strip()]
    if len(policies) < 2 or len(set(policies)) != len(policies) or not set(policies) <= set(POLICY_CHOICES):
        raise argparse.ArgumentTypeError(f"two or more distinct policies among {', '.join(POLICY_CHOICES)}")
    return policies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="batch embedding: repeat the whole batch until this many seconds (default 5; at least once)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds of the 40 eval questions per run; each policy runs twice (default 2)")
    parser.add_argument("--chunks", type=int, default=200, help="handbook texts in the batch (default 200)")
    parser.add_argument("--policies", type=parse_policies, default=["unset", "PASSIVE"],
                        help="comma-separated, compared with the first (default unset,PASSIVE; also: ACTIVE)")
    parser.add_argument("--neighbour-policy", choices=("docent", *POLICY_CHOICES), default="docent",
                        help="the neighbour's OMP_WAIT_POLICY; docent: left to indexing.vectors.embedding (default)")
    parser.add_argument("--role", choices=("main", "worker", "neighbour"), default="main", help=argparse.SUPPRESS)
    parser.add_argument("--policy", choices=("docent", *POLICY_CHOICES), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.role == "worker":
        return worker(args.policy, args.rounds, args.seconds, args.chunks)
    if args.role == "neighbour":
        return neighbour(args.policy, args.chunks)

    if not EVAL_FILE.exists():
        print(f"skipped: {EVAL_FILE} not found (set KB_SHARED_CORPORA to the folder holding the corpora)")
        return
    run_started = time.perf_counter()
    print(f"start: {uptime()}")
    neighbour_process = Neighbour(args)
    try:
        results = run_all(args, args.policies, neighbour_process)
    finally:
        neighbour_process.stop()
    print(f"end:   {uptime()}")
    threads = results["idle"][args.policies[0]][0]["torch_threads"]
    report(results, f"Embedding under contention by OMP_WAIT_POLICY ({threads} torch threads, {os.cpu_count()} CPUs, "
                    f"{args.rounds}×40 questions and ≥{args.chunks} texts per run, A-B-B-A)", neighbour_process.policy)
    print(f"whole run: {(time.perf_counter() - run_started) / 60:.1f} min")


if __name__ == "__main__":
    main()
