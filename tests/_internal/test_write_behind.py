"""write_behind: a large file written from a thread while its next pieces are made."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import pytest

from assay._internal.write_behind import write_behind


def _pieces(count: int, made: list[int] | None = None) -> Iterator[bytes]:
    for n in range(count):
        if made is not None:
            made.append(n)
        yield f"piece {n};".encode() * (n % 7 + 1)


def _writers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "assay-write-behind"]


def test_every_piece_is_written_in_order_across_many_blocks() -> None:
    out = io.BytesIO()

    write_behind(out, _pieces(5000), block=1000, depth=2)

    assert out.getvalue() == b"".join(_pieces(5000))
    assert not _writers()


def test_nothing_to_write_writes_nothing() -> None:
    out = io.BytesIO()
    write_behind(out, iter(()))
    assert out.getvalue() == b""


class _FullDisk(io.BytesIO):
    """A file that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if self.tell() + len(data) > self.room:
            raise OSError(28, "No space left on device")
        return super().write(data)


def test_an_error_writing_is_raised_and_the_pieces_left_are_not_made() -> None:
    out = _FullDisk(room=5000)
    made: list[int] = []

    with pytest.raises(OSError, match="No space left"):
        write_behind(out, _pieces(100_000, made), block=1000, depth=2)

    assert len(made) < 1000  # stopped soon after, not at the end of 100,000
    assert out.getvalue() == b"".join(_pieces(100_000))[: len(out.getvalue())]
    assert not _writers()


def test_an_error_making_the_pieces_is_raised_once_the_writer_has_stopped() -> None:
    def broken() -> Iterator[bytes]:
        yield from _pieces(300)
        raise ValueError("a spilled result is unreadable")

    out = io.BytesIO()
    with pytest.raises(ValueError, match="unreadable"):
        write_behind(out, broken(), block=1000, depth=2)

    written = out.getvalue()
    assert written and b"".join(_pieces(300)).startswith(written)  # whole blocks, in order
    assert not _writers()
