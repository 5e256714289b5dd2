"""The spill file: items kept on disk by kind, key and index, and removed with the process that
made them, or by the next one when that process was killed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from assay._internal.spill import Spill, remove_orphans


def test_items_are_kept_by_kind_key_and_index_and_read_back_in_order(tmp_path: Path) -> None:
    spill = Spill(tmp_path)
    try:
        key = spill.new_key("k")
        spill.put_many("a", [(key, 2, b"two"), (key, 0, b"zero"), (key, 1, b"one")])
        spill.put_many("b", [(key, 0, b"other kind")])

        assert list(spill.scan("a", key)) == [b"zero", b"one", b"two"]
        assert spill.get("b", key, 0) == b"other kind" and spill.get("a", key, 9) is None
    finally:
        spill.close()
    assert not spill.path.exists()


def test_a_spill_file_whose_process_was_killed_is_removed_by_the_next_one(tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from assay._internal.spill import Spill\n"
        "spill = Spill(Path(sys.argv[1]))\n"
        "print(spill.path, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=False
    )
    orphan = Path(done.stdout.strip())
    assert done.returncode == -9 and orphan.exists()
    mine = Spill(tmp_path)  # a live process's own file is kept
    try:
        assert not orphan.exists()
        assert remove_orphans(tmp_path) == [] and mine.path.exists()
        assert mine.path.name.startswith(f"assay-spill-{os.getpid()}-")
    finally:
        mine.close()
