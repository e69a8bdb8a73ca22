"""PDF / Word / PowerPoint to text: Docent's converters (pypdf, python-docx, python-pptx through
`connectors.attachments`) against markitdown, when it is installed, on the same files.

    .venv/bin/python -m benchmarks.attachment_converters [--pages 40] [--repeat 3]

Files are made here (tests/support/office_files.py): a PDF of `--pages` text pages, a Word file with as
many headed sections, a deck with as many slides. Times are the best of `--repeat` runs. What only
pypdf gives is also checked: page boundaries, which the citation `file.pdf#page=N` needs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from training.corpora import REPO


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from tests.support import office_files

    from connectors.attachments import convert

    lines = [f"Line {k}: expenses over {k * 10} EUR need a receipt and a manager's approval." for k in range(30)]
    files = {
        "guide.pdf": office_files.pdf([lines] * args.pages),
        "policy.docx": office_files.docx([item for n in range(args.pages)
                                          for item in (("h2", f"Section {n}"), *(("p", line) for line in lines[:10]))]),
        "deck.pptx": office_files.pptx([(f"Slide {n}", lines[:6]) for n in range(args.pages)]),
    }
    try:
        from markitdown import MarkItDown

        markitdown = MarkItDown()
    except ImportError:
        markitdown = None
    folder = Path(tempfile.mkdtemp(prefix="docent-bench-files-"))
    rows = [("file", "KB", "ours (s)", "markitdown (s)", "ratio", "pages cited")]
    for name, data in files.items():
        (folder / name).write_bytes(data)
        ours = _best(lambda name=name, data=data: convert(name, data), args.repeat)
        converted = convert(name, data)
        theirs = (_best(lambda name=name: markitdown.convert(str(folder / name)), args.repeat)
                  if markitdown is not None else None)
        rows.append((name, f"{len(data) / 1024:.0f}", f"{ours:.3f}", f"{theirs:.3f}" if theirs else "not installed",
                     f"{theirs / ours:.1f}x" if theirs else "-", len(converted.heading_ids) or "-"))
    print(f"Attachment converters, {args.pages} pages / sections / slides each (best of {args.repeat})")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


if __name__ == "__main__":
    main()
