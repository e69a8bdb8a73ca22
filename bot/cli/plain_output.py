"""Nothing `kb` prints can drive the terminal: C0 and C1 control characters are taken out.

Page titles, file names, questions, a service's error text — any of them can hold an escape
sequence (ESC [ 2 J clears the screen, OSC 0 sets the window title, OSC 8 hides a link's target),
and `kb` prints all of them. Rather than trust every print to clean its text, the command's
stdout and stderr are wrapped while it runs: tab and newline pass, every other C0 character,
DEL and the C1 range (U+0080–U+009F, which some terminals read as CSI/OSC) are dropped. Rich
draws its own colours (`kb ask`'s yellow "not sure" line) on the stream beneath, `raw(stream)`:
what it is given is cleaned first (`clean`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    return _CONTROL.sub("", text)


class PlainStream:
    """A text stream that writes `clean(text)` to the stream it wraps."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(clean(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, buffer…: whatever the inner stream has
        return getattr(self.inner, name)


def raw(stream: TextIO) -> TextIO:
    """The stream beneath a `PlainStream` (for Rich, given only cleaned text)."""
    return stream.inner if isinstance(stream, PlainStream) else stream


@contextmanager
def plain_output() -> Iterator[None]:
    """stdout and stderr cleaned for the duration (as they are at entry: a test runner's too)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = PlainStream(saved[0]) if not isinstance(saved[0], PlainStream) else saved[0]
    sys.stderr = PlainStream(saved[1]) if not isinstance(saved[1], PlainStream) else saved[1]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
