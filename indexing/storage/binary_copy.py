"""Read one `bytea` column straight into a buffer, over `COPY … TO STDOUT (FORMAT binary)`.

A plain SELECT sends `bytea` as text: hex, twice the bytes, encoded by the server and decoded
again by psycopg2, then copied once more into the buffer. For the keyword leg's saved base
(~0.5 GB at a million chunks) that was 6.7 s of a replica's cold start; the binary COPY of the
same rows takes 1.9 s (docs/scaling.md). The stream is written into the caller's buffer as it
arrives: only the frame around each value (a tuple's field count, a field's length) is held
aside, never a second copy of the data.

The format (PostgreSQL documentation, *COPY*, "Binary Format"): an 11-byte signature, a 32-bit
flags field, a 32-bit header-extension length and that many bytes; then per row a 16-bit field
count (-1 ends the data) and per field a 32-bit length (-1 for NULL) followed by the bytes.
"""

from __future__ import annotations

import io
import struct

from sqlalchemy.orm import Session

SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


class CopyFormatError(ValueError):
    """The server's COPY stream is not what the query asked for (one non-NULL column)."""


class _Into(io.RawIOBase):
    """A write-only stream that parses binary COPY rows of one column into `target` from `at` on."""

    def __init__(self, target: bytearray, at: int) -> None:
        self.target = target
        self.at = at
        self.rows = 0
        self.ended = False
        self._frame = bytearray()  # the frame bytes read so far of what `_want` asks for
        self._want = len(SIGNATURE) + 8  # header: signature, flags, extension length
        self._step = "header"
        self._left = 0  # bytes of the current value still to copy (step "value") or skip ("skip")

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        while view:
            if self.ended:
                raise CopyFormatError("bytes after the end of the COPY data")
            if self._step in ("value", "skip"):
                n = min(self._left, len(view))
                if self._step == "value":
                    end = self.at + n
                    if end > len(self.target):
                        raise CopyFormatError("the rows hold more bytes than the buffer was sized for")
                    self.target[self.at : end] = view[:n]
                    self.at = end
                self._left -= n
                view = view[n:]
                if not self._left:
                    self._expect("row", 2)
                continue
            n = min(self._want - len(self._frame), len(view))
            self._frame += view[:n]
            view = view[n:]
            if len(self._frame) == self._want:
                self._framed(bytes(self._frame))
        return len(data)

    def _expect(self, step: str, size: int) -> None:
        self._step, self._want, self._frame = step, size, bytearray()

    def _framed(self, frame: bytes) -> None:
        if self._step == "header":
            if not frame.startswith(SIGNATURE):
                raise CopyFormatError("not a binary COPY stream")
            (extension,) = struct.unpack("!i", frame[-4:])
            self._step, self._left = "skip", extension
            if not extension:
                self._expect("row", 2)
        elif self._step == "row":
            (fields,) = struct.unpack("!h", frame)
            if fields == -1:
                self.ended = True
            elif fields != 1:
                raise CopyFormatError(f"expected one column per row, got {fields}")
            else:
                self._expect("length", 4)
        elif self._step == "length":
            (size,) = struct.unpack("!i", frame)
            if size < 0:
                raise CopyFormatError("a NULL value")
            self.rows += 1
            self._step, self._left = "value", size
            if not size:
                self._expect("row", 2)


def copy_column_into(session: Session, select_sql: str, target: bytearray, at: int = 0) -> int:
    """Run `COPY (select_sql) TO STDOUT (FORMAT binary)` in the session's transaction (so it sees
    the same snapshot as the session's other reads) and write each row's single `bytea` value
    into `target` one after another from `at`. Returns the offset after the last byte written.
    `select_sql` is trusted SQL (COPY takes no bind parameters): callers pass integers only."""
    dbapi = session.connection().connection.dbapi_connection
    if dbapi is None:
        raise RuntimeError("the session has no database connection")
    sink = _Into(target, at)
    cursor = dbapi.cursor()
    try:
        cursor.copy_expert(f"COPY ({select_sql}) TO STDOUT WITH (FORMAT binary)", sink)
    finally:
        cursor.close()
    if not sink.ended:
        raise CopyFormatError("the COPY stream ended before its trailer")
    return sink.at
