"""Reading `bytea` values over binary COPY (indexing.storage.binary_copy): the keyword base's path."""

from __future__ import annotations

import os
import struct

import pytest
from sqlalchemy import text

from indexing.storage.binary_copy import SIGNATURE, CopyFormatError, _Into, copy_column_into


def _stream(values: list[bytes | None], fields: int = 1, extension: bytes = b"") -> bytes:
    """A binary COPY stream as the PostgreSQL documentation defines it."""
    out = SIGNATURE + struct.pack("!ii", 0, len(extension)) + extension
    for value in values:
        out += struct.pack("!h", fields)
        for _ in range(fields):
            out += struct.pack("!i", -1) if value is None else struct.pack("!i", len(value)) + value
    return out + struct.pack("!h", -1)


def _feed(stream: bytes, size: int, step: int) -> _Into:
    sink = _Into(bytearray(size), 0)
    for start in range(0, len(stream), step):
        sink.write(stream[start : start + step])
    return sink


@pytest.mark.parametrize("step", [1, 2, 3, 5, 7, 64, 1 << 20])
def test_values_are_written_back_to_back_whatever_the_write_boundaries(step):
    values = [b"abc", b"", os.urandom(300), b"\xff" * 9]
    sink = _feed(_stream(values, extension=b"ext!"), 312, step)
    assert sink.ended and sink.rows == 4 and sink.at == 312
    assert bytes(sink.target) == b"".join(values)


@pytest.mark.parametrize(("stream", "reason"), [
    (_stream([None]), "NULL"),
    (_stream([b"ab"], fields=2), "one column"),
    (b"COPY" + bytes(30), "not a binary COPY"),
    (_stream([b"abcd"]), "more bytes than the buffer"),
    (_stream([b"ab"]) + b"x", "after the end"),
])
def test_a_stream_that_is_not_one_column_of_values_that_fit_is_refused(stream, reason):
    with pytest.raises(CopyFormatError, match=reason):
        _feed(stream, 3, 4)


def test_rows_read_from_postgres_land_in_the_buffer_in_order(index):
    """Through the real server, values larger than psycopg2's copy buffer (8 KB) and an empty one,
    in the session's own transaction."""
    values = [os.urandom(20_000), b"", os.urandom(70_001), bytes(range(256))]
    with index.session() as s:
        s.execute(text("CREATE TEMPORARY TABLE copy_probe (n INTEGER, v BYTEA NOT NULL) ON COMMIT DROP"))
        for n, value in enumerate(values):
            s.execute(text("INSERT INTO copy_probe VALUES (:n, :v)"), {"n": n, "v": value})
        target = bytearray(b"-" * 5 + bytes(sum(map(len, values))))
        end = copy_column_into(s, "SELECT v FROM copy_probe ORDER BY n DESC", target, at=5)
    assert end == len(target)
    assert bytes(target) == b"-" * 5 + b"".join(reversed(values))
