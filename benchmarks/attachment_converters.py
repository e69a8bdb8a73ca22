"""PDF / Word / PowerPoint to text: Docent's converters (pypdf, a streaming Word reader, python-pptx
through `connectors.attachments`) against markitdown, when it is installed, on the same files; what
converting each file in a child process under a budget costs; and the issue-45 files that cost
minutes and gigabytes, before and after.

    .venv/bin/python -m benchmarks.attachment_converters [--pages 40] [--repeat 3]
    .venv/bin/python -m benchmarks.attachment_converters --hostile [--before OLD_CHECKOUT] [--before-timeout 300]

Files are made here (tests/support/office_files.py): a PDF of `--pages` text pages, a Word file with as
many headed sections, a deck with as many slides. Times are the best of `--repeat` runs. What only
pypdf gives is also checked: page boundaries, which the citation `file.pdf#page=N` needs. The
"in-process" column is the conversion alone (`convert_here`); "budgeted" is `convert`, which forks
a child process per file with its limits: the difference is the budget's cost per file.

`--hostile` converts tests/support/hostile_inputs.py's three files (issue 45): a 585 KB .docx
declaring 180 MB of XML, an 80 KB PDF of 500 pages sharing one content stream, a 30 KB PDF of
3 slow pages. After: through `convert` here, the peak RSS being the converting child's (sampled
from /proc every 20 ms). Before: with `--before` (a folder holding an older `connectors/`, e.g.
`git archive 25328dc connectors | tar -x -C /tmp/before`), each file in a fresh interpreter,
its time and peak RSS (`wait4`), stopped after `--before-timeout` seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from training.corpora import REPO


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def _table(title: str, rows: list[tuple[object, ...]]) -> None:
    print(title)
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    print()


def converters(pages: int, repeat: int) -> None:
    from tests.support import office_files

    from connectors.attachments import FileLimits, convert, convert_here

    lines = [f"Line {k}: expenses over {k * 10} EUR need a receipt and a manager's approval." for k in range(30)]
    files = {
        "guide.pdf": office_files.pdf([lines] * pages),
        "policy.docx": office_files.docx([item for n in range(pages)
                                          for item in (("h2", f"Section {n}"), *(("p", line) for line in lines[:10]))]),
        "deck.pptx": office_files.pptx([(f"Slide {n}", lines[:6]) for n in range(pages)]),
    }
    try:
        from markitdown import MarkItDown

        markitdown = MarkItDown()
    except ImportError:
        markitdown = None
    started = time.perf_counter()
    convert("warm.pdf", office_files.pdf([["x"]]))
    first = time.perf_counter() - started
    folder = Path(tempfile.mkdtemp(prefix="docent-bench-files-"))
    rows: list[tuple[object, ...]] = [("file", "KB", "in-process (s)", "budgeted (s)", "budget's cost (ms)",
                                       "markitdown (s)", "ratio", "pages cited")]
    for name, data in files.items():
        (folder / name).write_bytes(data)
        suffix = Path(name).suffix
        here = _best(lambda suffix=suffix, data=data: convert_here(suffix, data, FileLimits()), repeat)
        ours = _best(lambda name=name, data=data: convert(name, data), repeat)
        converted = convert(name, data)
        theirs = (_best(lambda name=name: markitdown.convert(str(folder / name)), repeat)
                  if markitdown is not None else None)
        rows.append((name, f"{len(data) / 1024:.0f}", f"{here:.3f}", f"{ours:.3f}", f"{(ours - here) * 1000:.0f}",
                     f"{theirs:.3f}" if theirs else "not installed", f"{theirs / ours:.1f}x" if theirs else "-",
                     len(converted.heading_ids) or "-"))
    _table(f"Attachment converters, {pages} pages / sections / slides each (best of {repeat}); the fork "
           f"server's first start (once per process, with a 1-page PDF): {first:.2f} s", rows)


def _hostile_files() -> dict[str, bytes]:
    from tests.support import hostile_inputs

    return {"bloated.docx": hostile_inputs.bloated_docx(), "shared.pdf": hostile_inputs.shared_stream_pdf(),
            "slow.pdf": hostile_inputs.slow_pdf()}


class _PeakSampler:
    """The largest RSS of any grandchild of this process (a conversion forked by the fork server), sampled."""

    def __init__(self) -> None:
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            for pid in _grandchildren():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmRSS:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))


def _grandchildren() -> list[int]:
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    children = {pid for pid, parent in parents.items() if parent == os.getpid()}
    return [pid for pid, parent in parents.items() if parent in children]


_BEFORE = """import sys
from connectors.attachments import convert
name, path = sys.argv[1:]
try:
    converted = convert(name, open(path, "rb").read())
    print(f"converted: {len(converted.text):,} characters")
except Exception as exc:
    print(f"refused: {exc}"[:150])
"""


def _before(folder: Path, name: str, path: Path, timeout: float) -> tuple[str, str, str]:
    """(seconds, peak RSS, outcome) of the old code converting one file in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(folder)}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", _BEFORE, name, str(path)], cwd=folder, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    out = process.stdout.read() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    timer.cancel()
    seconds = time.perf_counter() - started
    outcome = out.strip() or (f"still running after {timeout:g} s: killed" if os.WIFSIGNALED(status) else "no output")
    return f"{seconds:.1f}", f"{usage.ru_maxrss / 1024:.0f} MB", outcome


def hostile(before: Path | None, before_timeout: float) -> None:
    from tests.support import office_files

    from connectors.attachments import FileRefused, convert

    files = _hostile_files()
    convert("warm.pdf", office_files.pdf([["x"]]))  # the fork server started, as in a sync after its first file
    folder = Path(tempfile.mkdtemp(prefix="docent-bench-hostile-"))
    rows: list[tuple[object, ...]] = [("file", "KB", "before (s)", "before peak RSS", "before", "after (s)",
                                       "after peak RSS (child)", "after")]
    for name, data in files.items():
        (folder / name).write_bytes(data)
        old = _before(before, name, folder / name, before_timeout) if before else ("-", "-", "not measured")
        with _PeakSampler() as sampler:
            started = time.perf_counter()
            try:
                outcome = f"converted: {len(convert(name, data).text):,} characters"
            except FileRefused as exc:
                outcome = f"refused: {exc}"
            seconds = time.perf_counter() - started
        peak = f"{sampler.peak_kb / 1024:.0f} MB" if sampler.peak_kb else "gone before a sample (20 ms)"
        rows.append((name, f"{len(data) / 1024:.0f}", *old, f"{seconds:.1f}", peak, outcome))
    _table("The issue-45 files, default limits (60 s and 1 GiB a file, 10 s of CPU a PDF page, 500,000 characters, "
           "100:1)", rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hostile", action="store_true", help="the issue-45 files instead")
    parser.add_argument("--before", type=Path, help="a folder holding an older connectors/ to compare with")
    parser.add_argument("--before-timeout", type=float, default=300.0)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    if args.hostile:
        hostile(args.before, args.before_timeout)
    else:
        converters(args.pages, args.repeat)


if __name__ == "__main__":
    main()
