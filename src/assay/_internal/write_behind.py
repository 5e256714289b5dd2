"""Writing a large file from a thread while its next pieces are made.

Writing a 50,000-case results file (1.4 GB) took 7 s on two cores: half of it making the pieces
(decompressing and indenting each case's JSON, which holds the GIL), half the ``write`` calls
themselves (copying into the page cache, which lets go of the GIL). :func:`write_behind` does
the two at once: the pieces are joined into blocks of :data:`BLOCK` bytes and handed to a
thread that writes them, at most :data:`DEPTH` blocks ahead, so memory stays a few megabytes
whatever the file's size.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable
from typing import BinaryIO

BLOCK = 1 << 20
"""Bytes of pieces joined into one write."""

DEPTH = 4
"""Blocks made and not yet written, at most."""


def write_behind(
    out: BinaryIO, pieces: Iterable[bytes], *, block: int = BLOCK, depth: int = DEPTH
) -> None:
    """Write ``pieces`` to ``out`` in order, from a thread, while the next ones are made here.
    An error writing (an ``OSError``: the disk is full) is raised here once the thread has
    stopped, and the pieces left are not made; an error making them is raised as it is, once
    the thread has written the blocks it had (the file is then cut short)."""
    blocks: queue.Queue[bytes | None] = queue.Queue(maxsize=depth)
    failed: list[BaseException] = []

    def write() -> None:
        try:
            while (data := blocks.get()) is not None:
                out.write(data)
        except BaseException as exc:  # handed to the making thread, which raises it
            failed.append(exc)
            while blocks.get() is not None:  # the maker must never wait on a full queue
                pass

    writer = threading.Thread(target=write, name="assay-write-behind", daemon=True)
    writer.start()
    try:
        held: list[bytes] = []
        size = 0
        for piece in pieces:
            held.append(piece)
            size += len(piece)
            if size >= block:
                if failed:
                    break
                blocks.put(b"".join(held))
                held, size = [], 0
        if held and not failed:
            blocks.put(b"".join(held))
    finally:
        blocks.put(None)
        writer.join()
    if failed:
        raise failed[0]
